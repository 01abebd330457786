"""Bench: what slurmtools' job_submit.lua and cli_filter.lua add to a submission.

    slurmtools lab up && eval "$(slurmtools lab env)"
    python bench/plugin_submit.py [--jobs 200] [--rounds 2] [--json]

Part 1, on the lab: the latency of N sequential `sbatch --wrap true --hold` (a new client process each, as
users run it) with both plugins enabled, with both but a cli_filter.lua that does nothing (what Slurm's
cli_filter/lua machinery costs by itself), with job_submit only, and with neither (the lines taken out of
slurm.conf, slurmctld restarted each time), alternating for --rounds rounds; one soft exclusion is active
so the plugin does its real work (read the file, merge the exclusion). Reports medians, p95 and the ratios
to 'without'. Restores the lab's slurm.conf and cli_filter.lua.
Part 2, without Slurm: slurm_job_submit() itself under lua5.1 with 0, 10 and 1000 exclusions published,
in microseconds per call (what slurmctld spends in it while holding the job-write lock).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from slurmtools import config, plugins
from slurmtools.lab import Lab


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


def submit_batch(n: int) -> list[float]:
    times, ids = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        out = run("sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap", "true")
        times.append(time.perf_counter() - t0)
        if out.returncode != 0:
            sys.exit(f"sbatch failed: {out.stderr}")
        ids.append(out.stdout.strip())
    for i in range(0, len(ids), 100):
        run("scancel", *ids[i:i + 100])
    return times


def restart_ctld(lab: Lab) -> None:
    lab._stop_pid("slurmctld", lab.root / "run" / "slurmctld.pid")
    lab.start_slurmctld()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run("sinfo", "-h").returncode != 0:
        time.sleep(0.5)
    run("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")   # warm the plugin (script load) and caches
    run("scancel", "-u", "root", "--state=PENDING")


def summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs) * 1000, 2), "p95_ms": round(xs[int(len(xs) * 0.95) - 1] * 1000, 2),
            "mean_ms": round(statistics.fmean(xs) * 1000, 2), "n": len(xs)}


def lab_part(n: int, rounds: int) -> dict[str, Any]:
    lab = Lab(say=lambda m: None)
    conf = lab.slurm_conf.read_text()
    def without(*keys: str) -> str:
        return "".join(line for line in conf.splitlines(keepends=True) if not line.startswith(keys))

    texts = {"with": conf, "trivial_cli_filter": conf, "job_submit_only": without("CliFilterPlugins="),
             "without": without("JobSubmitPlugins=", "CliFilterPlugins=")}
    ours = (lab.etc / "cli_filter.lua").read_text()
    assert texts["without"] != conf, "the lab's slurm.conf does not enable the plugins: run `slurmtools lab up`"
    run("slurmtools", "exclude", "add", "n3", "--soft", "--reason", "bench")
    got: dict[str, list[float]] = {mode: [] for mode in texts}
    try:
        for _ in range(rounds):
            for mode, text in texts.items():
                lab.slurm_conf.write_text(text)
                (lab.etc / "cli_filter.lua").write_text(TRIVIAL_CLI_FILTER if mode == "trivial_cli_filter" else ours)
                restart_ctld(lab)
                enabled = "lua" in run("scontrol", "show", "config").stdout.split("JobSubmitPlugins")[1][:40]
                assert enabled == (mode != "without"), f"job_submit plugin enabled: {enabled} in mode {mode}"
                got[mode] += submit_batch(n)
    finally:
        lab.slurm_conf.write_text(conf)
        (lab.etc / "cli_filter.lua").write_text(ours)
        restart_ctld(lab)
        run("slurmtools", "exclude", "remove", "n3", "--reason", "bench done")
    out: dict[str, Any] = {mode: summary(xs) for mode, xs in got.items()}
    base = out["without"]
    for mode in ("with", "job_submit_only", "trivial_cli_filter"):
        out[f"ratio_median_{mode}"] = round(out[mode]["median_ms"] / base["median_ms"], 3)
        out[f"ratio_mean_{mode}"] = round(out[mode]["mean_ms"] / base["mean_ms"], 3)
    return out


# Slurm's cli_filter/lua with a script that does nothing: what the plugin machinery itself costs a client.
TRIVIAL_CLI_FILTER = """function slurm_cli_setup_defaults(options, early) return slurm.SUCCESS end
function slurm_cli_pre_submit(options, offset) return slurm.SUCCESS end
function slurm_cli_post_submit(offset, jobid, stepid) return slurm.SUCCESS end
"""

LUA_BENCH = r"""
slurm = { SUCCESS = 0, ERROR = -1, log_info = function() end, log_error = function() end }
dofile(SCRIPT)
local calls = CALLS
local t0 = os.clock()
for i = 1, calls do
  local job = { exc_nodes = "n1", partition = "gpu", requeue = 65534 }
  slurm_job_submit(job, {}, 1000)
end
io.write(string.format("%.3f", (os.clock() - t0) / calls * 1e6))
"""


def lua_part() -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path = Path(tmp) / "slurmtools.toml"
        cfg_path.write_text(f'[exclusions]\nplugin_file = "{tmp}/exclusions.txt"\n'
                            '[plugins]\ndefault_partition = "gpu"\n')
        cfg = config.load(cfg_path, env={})
        script = Path(tmp) / "job_submit.lua"
        script.write_text(plugins.render(cfg)["job_submit.lua"])
        for count in (0, 10, 1000):
            rows = [{"node": f"gpu{i:04d}", "scope": "soft" if i % 2 else "drain", "reason": "bench exclusion",
                     "expires_epoch": None} for i in range(count)]
            (Path(tmp) / "exclusions.txt").write_text(plugins.render_data(rows, time.time())[0])
            calls = 20000 if count < 1000 else 2000
            lua = LUA_BENCH.replace("SCRIPT", plugins.lua_string(script)).replace("CALLS", str(calls))
            res = subprocess.run(["lua5.1", "-"], input=lua, capture_output=True, text=True, check=True)
            out[f"{count}_exclusions_us_per_call"] = float(res.stdout)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lua-only", action="store_true", help="Part 2 only (no lab needed).")
    args = ap.parse_args()
    result: dict[str, Any] = {"lua": lua_part()}
    if not args.lua_only:
        result["lab"] = lab_part(args.jobs, args.rounds)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print("slurm_job_submit() under lua5.1: " + ", ".join(f"{k.split('_')[0]} exclusions {v:.1f} us/call"
                                                          for k, v in result["lua"].items()))
    if "lab" in result:
        lab = result["lab"]
        for mode in ("without", "job_submit_only", "trivial_cli_filter", "with"):
            s = lab[mode]
            print(f"sbatch, plugins {mode:18s}: median {s['median_ms']:.2f} ms, p95 {s['p95_ms']:.2f} ms, "
                  f"mean {s['mean_ms']:.2f} ms (n={s['n']})")
        for mode in ("job_submit_only", "trivial_cli_filter", "with"):
            print(f"ratio {mode}/without: median {lab[f'ratio_median_{mode}']:.3f}, "
                  f"mean {lab[f'ratio_mean_{mode}']:.3f}")


if __name__ == "__main__":
    main()
