"""Bench on a real NVIDIA GPU (issue 33): the fail-slow probe's figures, run time per GPU and repeatability; the
deep profile's stress; the prolog gate's time with the real NVML; a snapshot recorded on the GPU.

    python bench/gpu_probe.py [--runs 10] [--stress 10] [--prolog-runs 20] --out DIR

Everything goes through the landed code: `checks/perf.py:probe_all` (all GPUs at once, NVML sampling), the
runner's deep profile for the `perf` and `stress` checks, `slurmtools-hook prolog_slurmd` as Slurm runs it, and
`checks/snapshot.record`. It changes no GPU setting. Writes DIR/gpu_probe.json (every figure) and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slurmtools import config  # noqa: E402
from slurmtools.checks import perf, perfprobe, runner, snapshot  # noqa: E402
from slurmtools.checks import system as sysmod  # noqa: E402


def _cfg(tmp: str, extra: str = "", node: str = "") -> config.Config:
    path = Path(tmp, "cfg.toml")
    path.write_text(f'[node]\nstate_dir = "{tmp}/state"\nkernel_log = "file:{tmp}/kern.log"\n{node}'
                    f'[ledger]\nspool_dir = "{tmp}/spool"\n'
                    f'[checks]\nrequire_persistence_mode = false\nperf_baseline_file = ""\n{extra}')
    Path(tmp, "kern.log").touch()
    return config.load(path, env={})


def device_info(system: sysmod.System) -> list[dict[str, Any]]:
    nvml = system.nvml
    out = []
    for i in range(int(nvml.nvmlDeviceGetCount())):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        row: dict[str, Any] = {"index": i}
        for key, call, args in (("name", "nvmlDeviceGetName", ()), ("driver", "nvmlSystemGetDriverVersion", None),
                                ("cuda", "nvmlSystemGetCudaDriverVersion_v2", None),
                                ("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", ()),
                                ("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", ()),
                                ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
                                ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", ()),
                                ("sm_max_mhz", "nvmlDeviceGetMaxClockInfo", (sysmod.CLOCK_SM,)),
                                ("power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit", ()),
                                ("memory_total", "nvmlDeviceGetMemoryInfo", ())):
            try:
                value = getattr(nvml, call)() if args is None else getattr(nvml, call)(h, *args)
                row[key] = value.total if key == "memory_total" else (
                    value.decode() if isinstance(value, bytes) else value)
            except Exception as exc:  # noqa: BLE001 - a reading NVML does not give: recorded as such
                row[key] = f"error: {type(exc).__name__}"
        out.append(row)
    return out


def probe_runs(system: sysmod.System, runs: int) -> dict[str, Any]:
    targets, busy = perf.gpus(system)
    if busy:
        raise SystemExit(f"GPUs in use, not probed: {busy}")
    drv = system.cuda()
    limits = perfprobe.Limits()
    rows = []
    for _ in range(runs):
        t0 = time.monotonic()
        figures = perf.probe_all(system, drv, targets, limits)
        rows.append({"wall_s": round(time.monotonic() - t0, 3),
                     "gpus": {str(i): dict(f) for i, f in figures.items()}})
    summary: dict[str, Any] = {}
    for i in targets:
        per: dict[str, Any] = {}
        for metric in (*perfprobe.METRICS, "seconds"):
            values = [r["gpus"][str(i)].get(metric) for r in rows]
            values = [float(v) for v in values if v is not None]
            if values:
                med = statistics.median(values)
                per[metric] = {"median": round(med, 3), "min": min(values), "max": max(values),
                               "spread_pct": round(100 * (max(values) - min(values)) / med, 2) if med else None}
        per["model"] = targets[i]["model"]
        summary[str(i)] = per
    return {"runs": rows, "summary": summary}


def check_profile(tmp: str, stress: int) -> dict[str, Any]:
    cfg = _cfg(tmp, f"perf_stress_seconds = {stress}\n")
    t0 = time.monotonic()
    report = runner.run(cfg, "deep", node="gpu", system=sysmod.System.real(), persist=False)
    return {"wall_s": round(time.monotonic() - t0, 2), "verdict": report.verdict,
            "results": [r.to_dict() for r in report.results]}


def nvlink_expected(tmp: str) -> dict[str, Any]:
    """The health profile where the hardware profile expects 18 NVLinks per GPU (an SXM H100/H200's): what the
    nvlink check says of a GPU whose NVML knows no NVLink (a VM's GPU)."""
    cfg = _cfg(tmp, '[hardware.sxm]\nnvlinks_per_gpu = 18\n', node='hardware = "sxm"\n')
    report = runner.run(cfg, "health", node="gpu", system=sysmod.System.real(), persist=False)
    return {"verdict": report.verdict, "nvlink": [r.to_dict() for r in report.results if r.check == "nvlink"]}


def prolog_times(tmp: str, runs: int) -> dict[str, Any]:
    _cfg(tmp)
    hook = str(ROOT / "bin/slurmtools-hook")
    env = {**os.environ, "SLURMTOOLS_CONFIG": f"{tmp}/cfg.toml", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
           "SLURM_JOB_ID": "1234", "SLURMD_NODENAME": "gpu", "SLURM_JOB_GPUS": "0",
           "SLURMTOOLS_CACHE_DIR": f"{tmp}/cache", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get(
               "PYTHONPATH", "")}
    os.makedirs(f"{tmp}/cache", exist_ok=True)
    wall, checks, codes = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, hook], env=env, capture_output=True, text=True, timeout=60)
        wall.append((time.perf_counter() - t0) * 1000)
        codes.append(proc.returncode)
        try:
            status = json.loads(Path(tmp, "state/gate-status.json").read_text())
            checks.append(float(status["duration_ms"]))
        except (OSError, ValueError, KeyError):
            pass
    last = {}
    try:
        last = json.loads(Path(tmp, "state/gate-status.json").read_text())
    except (OSError, ValueError):
        pass
    return {"process_ms_median": round(statistics.median(wall), 1), "process_ms": [round(w, 1) for w in wall],
            "checks_ms_median": round(statistics.median(checks), 1) if checks else None, "exit_codes": codes,
            "verdict": last.get("verdict"), "stderr_tail": proc.stderr[-800:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--stress", type=int, default=10)
    ap.add_argument("--prolog-runs", type=int, default=20)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    system = sysmod.System.real()
    err = system.nvml_init()
    if err is not None:
        raise SystemExit(f"NVML: {err}")
    result["devices"] = device_info(system)
    print(json.dumps(result["devices"]), flush=True)
    steps = [("probe", lambda tmp: probe_runs(system, args.runs)),
             ("deep_profile", lambda tmp: check_profile(tmp, args.stress)),
             ("nvlink_expected", nvlink_expected),
             ("prolog", lambda tmp: prolog_times(tmp, args.prolog_runs)),
             ("snapshot", lambda tmp: snapshot.record(interval=0.5))]
    for name, step in steps:
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                value = step(tmp)
            except BaseException as exc:  # noqa: BLE001 - each step's failure recorded, the next one still runs
                import traceback

                value = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
        if name == "snapshot" and "error" not in value:
            (out_dir / "snapshot.json").write_text(json.dumps(value, indent=1, default=str))
            value = {"written": "snapshot.json"}
        result[name] = value
        print(f"== {name} ({time.monotonic() - t0:.1f} s)", flush=True)
        print(json.dumps(value.get("summary", value), default=str)[:3000], flush=True)
        (out_dir / "gpu_probe.json").write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
