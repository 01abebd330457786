"""Bench: the whole prolog gate (a new process, as Slurm runs it) on the replayed healthy 8x H100 node,
against `python3 -c pass` and the same interpreter's bare start.

    python bench/prolog_gate.py [--runs 41] [--json]

Runs `slurmtools-hook prolog_slurmd` with SLURM_SCRIPT_CONTEXT=prolog_slurmd, a job id and GPUs, and
a config that replays tests/data/snapshots/healthy-8xh100.json against a matching hardware profile
(GPU, NVLink, InfiniBand, host and filesystem checks, a write probe of /tmp in a child process, the
kernel-log marker, the status cache and the spooled gate event: everything the real prolog does except
NVML's own driver calls). Prints medians and quartiles in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests/data/snapshots/healthy-8xh100.json"
PROFILE = ROOT / "tests/data/snapshots/dgx-h100.profile.toml"
CONFIG = """
[ledger]
spool_dir = "{tmp}/spool"
[node]
replay = "{snapshot}"
state_dir = "{tmp}/state"
kernel_log = "file:{tmp}/kern.log"
hardware = "dgx-h100"
[hardware.dgx-h100]
{profile}
mounts = ["/", "/raid", "/home"]
writable = ["{tmp}"]
disk_paths = ["{tmp}"]
"""


def timed(cmd: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall time and CPU time (user + system of the process and the children it waited for), ms per run.
    The CPU time moves far less than the wall time on a machine shared with other work."""
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        wall.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[0]} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return wall, cpu


def summary(xs: list[float]) -> dict[str, float]:
    q = statistics.quantiles(xs, n=4)
    return {"median": round(statistics.median(xs), 1), "p25": round(q[0], 1), "p75": round(q[2], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    hook = shutil.which("slurmtools-hook", path=os.path.dirname(sys.executable)) or shutil.which("slurmtools-hook")
    if not hook:
        raise SystemExit("slurmtools-hook not found: pip install -e . first")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "kern.log").touch()
        Path(tmp, "cfg.toml").write_text(CONFIG.format(tmp=tmp, snapshot=SNAPSHOT, profile=PROFILE.read_text()))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURMTOOLS_CONFIG": f"{tmp}/cfg.toml",
               "SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "1234", "SLURMD_NODENAME": "gpu001",
               "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7", "SLURMTOOLS_CACHE_DIR": f"{tmp}/cache"}
        os.mkdir(f"{tmp}/cache", 0o755)   # the hooks' config cache, this bench's own (not /run/slurmtools)
        if os.environ.get("PYTHONPATH"):  # a work tree measured without installing it
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        timed([hook], env, 3)   # warm the page cache
        # interleaved, one of each per round: this VM's speed drifts (other tenants), and drift then
        # moves the gate and its baselines alike
        cmds = {"/usr/bin/python3 -c pass": ["/usr/bin/python3", "-c", "pass"],
                "venv python -c pass": [sys.executable, "-c", "pass"], "prolog gate (slurmtools-hook)": [hook]}
        times: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                wall, used = timed(cmd, env, 1)
                times[name] += wall
                cpu[name] += used
        results = {name: summary(xs) for name, xs in times.items()}
        results.update({f"{name}, CPU": summary(xs) for name, xs in cpu.items()})
        diffs = [g - b for g, b in zip(times["prolog gate (slurmtools-hook)"], times["venv python -c pass"],
                                       strict=True)]
        status = json.loads(Path(tmp, "state/gate-status.json").read_text())
        assert status["verdict"] == "ok", status
        results["in-process checks (from the status file)"] = {"median": status["duration_ms"]}
    results["gate minus the venv python start (per round)"] = summary(diffs)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, r in results.items():
        print(f"{name:<42} " + "  ".join(f"{k} {v:7.1f} ms" for k, v in r.items()))


if __name__ == "__main__":
    main()
