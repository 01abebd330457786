"""Bench: what the configuration costs a hook, in CPU time of fresh processes (steadier than wall time on a
shared machine), with bench/prolog_gate.py's configuration (a replayed node, a hardware profile).

    python bench/config_load.py --runs 41 [--parse] TREE [TREE ...]
        `import slurmtools.config` + `config.load(cache=True)` + one node lookup, for each source tree (a
        checkout, or `git archive REV slurmtools | tar -x -C DIR`), interleaved, each with its own cache:
        a cache hit, as in every prolog after the first; --parse: no cache, the files parsed and validated.
    python bench/config_load.py --runs 15 --import-after-prolog msgspec dataclasses
        the CPU time of importing each module in a process that has just run a healthy prolog (this tree):
        what typing the configuration with it would add to every job start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prolog_gate import CONFIG, PROFILE, ROOT, SNAPSHOT

LOAD = ("import time\nt = time.process_time()\nfrom slurmtools import config\nc = config.load(cache=True)\n"
        "c.node_for('gpu001') if hasattr(c, 'node_for') else c.node('gpu001')\n"
        "print((time.process_time() - t) * 1000)")
AFTER_PROLOG = ("import sys, time\nfrom slurmtools.hooks.runner import main\nassert main(['prolog_slurmd']) == 0\n"
                "t = time.process_time()\nimport {module}\nprint((time.process_time() - t) * 1000)")


def line(name: str, xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4)
    return f"{name:<50} CPU ms: median {statistics.median(xs):6.2f}  p25 {q[0]:6.2f}  p75 {q[2]:6.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--parse", action="store_true", help="no cache: parse and validate the files each time")
    ap.add_argument("--import-after-prolog", nargs="+", metavar="MODULE", default=[])
    ap.add_argument("trees", nargs="*", default=[str(ROOT)])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "kern.log").touch()
        Path(tmp, "cfg.toml").write_text(CONFIG.format(tmp=tmp, snapshot=SNAPSHOT, profile=PROFILE.read_text()))
        base = {"PATH": "/usr/bin:/bin", "SLURMTOOLS_CONFIG": f"{tmp}/cfg.toml",
                "SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "1234", "SLURMD_NODENAME": "gpu001",
                "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7"}
        if args.import_after_prolog:
            os.mkdir(f"{tmp}/cache", 0o755)
            env = {**base, "PYTHONPATH": str(ROOT), "SLURMTOOLS_CACHE_DIR": f"{tmp}/cache"}
            for module in args.import_after_prolog:
                code = AFTER_PROLOG.format(module=module)
                xs = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                           check=True).stdout) for _ in range(args.runs)]
                print(line(f"import {module} after a healthy prolog", xs))
            return
        times: dict[str, list[float]] = {tree: [] for tree in args.trees}
        for i in range(len(args.trees)):   # one cache per tree: the fingerprint names the packaged defaults
            os.mkdir(f"{tmp}/cache{i}", 0o755)
        for _ in range(args.runs):
            for i, tree in enumerate(args.trees):
                env = {**base, "PYTHONPATH": tree,
                       "SLURMTOOLS_CACHE_DIR": f"{tmp}/none" if args.parse else f"{tmp}/cache{i}"}
                out = subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True,
                                     check=True)
                times[tree].append(float(out.stdout))
        for tree, xs in times.items():
            print(line(("parse " if args.parse else "cached ") + tree, xs))


if __name__ == "__main__":
    main()
