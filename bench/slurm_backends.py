"""Bench: the Slurm calls the hooks and the controller make, on each backend, against the lab's real slurmctld.

    python bench/slurm_backends.py [--backend cli|pyslurm ...] [--rounds 50] [--job JOBID]

Each round: nodes() (all), nodes([one]), jobs(), job(JOBID); per call the median and 95th percentile in ms, as one
JSON document. Only slurmtools is imported (the lab's Debian root runs it with its own venv: pyslurm is built
against that root's libslurm)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from slurmtools.slurm.call import backend


def measure(fn: Callable[[], Any], rounds: int) -> dict[str, float]:
    fn()                                   # warm: imports, the first connection
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 2),
            "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", action="append", choices=["cli", "pyslurm"])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--job", type=int, default=0)
    args = ap.parse_args()
    out: dict[str, Any] = {"rounds": args.rounds}
    for name in args.backend or ["cli", "pyslurm"]:
        t0 = time.perf_counter()
        slurm = backend(name)
        made = (time.perf_counter() - t0) * 1000
        node = slurm.nodes()[0].name
        calls: dict[str, Callable[[], Any]] = {
            "nodes()": slurm.nodes,
            "nodes([one])": lambda s=slurm, n=node: s.nodes([n]),
            "jobs()": slurm.jobs,
        }
        if args.job:
            calls["job(id)"] = lambda s=slurm: s.job(args.job)
        out[name] = {"backend_ready_ms": round(made, 1),
                     **{call: measure(fn, args.rounds) for call, fn in calls.items()}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
