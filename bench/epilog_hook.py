"""Bench: the whole healthy epilog (a new process, as Slurm runs it) of two work trees, alternating, on a replayed
node: no finding, the attempt spooled, a background flush started into an SQLite ledger.

    python bench/epilog_hook.py --tree before=/path/to/main --tree after=. [--runs 15]

Each tree is put first on PYTHONPATH (the shared, editable venv). Prints the median and quartiles in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests/data/snapshots/healthy-8xh100.json"
CODE = "from slurmtools.hooks.runner import main; main(['epilog_slurmd'])"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH, once per tree")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "kern.log").touch()
        os.mkdir(f"{tmp}/cache", 0o755)
        Path(tmp, "cfg.toml").write_text(f'[ledger]\nspool_dir = "{tmp}/spool"\nurl = "sqlite:///{tmp}/ledger.db"\n'
                                         f'[node]\nreplay = "{SNAPSHOT}"\nstate_dir = "{tmp}/state"\n'
                                         f'kernel_log = "file:{tmp}/kern.log"\n')
        env = {"PATH": "/usr/bin:/bin", "SLURMTOOLS_CONFIG": f"{tmp}/cfg.toml", "SLURMTOOLS_CACHE_DIR": f"{tmp}/cache",
               "SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_ID": "5", "SLURMD_NODENAME": "n1",
               "SLURM_JOB_EXIT_CODE": "0", "SLURM_NODELIST": "n1", "SLURM_JOB_UID": str(os.getuid())}
        times: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                t = time.perf_counter()
                subprocess.run([sys.executable, "-c", CODE], env={**env, "PYTHONPATH": os.path.abspath(tree)},
                               check=True, capture_output=True)
                times[name].append((time.perf_counter() - t) * 1000)
    for name, xs in times.items():
        q = statistics.quantiles(xs, n=4)
        print(f"epilog {name}: median {statistics.median(xs):.1f} ms (p25 {q[0]:.1f}, p75 {q[2]:.1f}), "
              f"{len(xs)} runs")


if __name__ == "__main__":
    main()
