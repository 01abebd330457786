"""A short stress with eyes open (check `stress`, the deep profile): the fail-slow probe's FP32 FMA kernel on every
GPU at once for ``perf_stress_seconds`` (60 s) of GPU time, NVML sampling each GPU every 0.25 s meanwhile.

It is what makes a return to service mean something for a node drained for thermal reasons: an idle GPU is
cool. Under load it fails on a HW slowdown, HW thermal slowdown or HW power brake clock event reason seen at any
sample, or on an SM clock whose median under load sags below the model's reference by more than
``perf_clock_margin`` (5 %): the fleet's median SM clock under the probe's load (the published baseline) once the
fleet has ``perf_min_fleet`` results, else the hardware profile's ``perf_sm_mhz``; with neither, the clock is
recorded, not judged. A SW thermal slowdown warns. GPUs in use, or a CUDA driver that fails to start: `unknown` (a
deep check that could not stress did not pass); no CUDA installed at all (no `slurmtools[gpu]`, no libcuda, a
replay without CUDA figures): `ok` with the reason, so a site without the extra keeps its return to service.
"""

from __future__ import annotations

import threading

from slurmtools.checks import Context, Result, fail, ok, unknown, warn
from slurmtools.checks import system as sysmod
from slurmtools.checks.cudadrv import CudaUnavailable
from slurmtools.checks.gpu import FAIL_REASONS, WARN_REASONS
from slurmtools.checks.perf import cuda_ordinals, gpus, read_fleet, slurm_steps
from slurmtools.checks.perfprobe import Sampler, load

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

NAME = "stress"


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    s = ctx.settings
    seconds = s.perf_stress_seconds
    if seconds <= 0:
        return [ok(NAME, "stress off (perf_stress_seconds = 0)")]
    if ctx.hardware.gpus == 0:
        return [ok(NAME, "no GPUs expected")]
    if system.nvml_init() is not None:
        return [unknown(NAME, "NVML unavailable: no stress")]
    steps = slurm_steps(system.fs)
    if steps:
        return [unknown(NAME, f"not stressed: a Slurm job is on the node ({steps} slurmstepd processes)")]
    try:
        targets, busy = gpus(system)
    except system.NVMLError as exc:
        return [unknown(NAME, f"NVML query failed: {exc}")]
    if busy:
        return [unknown(NAME, f"not stressed: GPUs in use: {', '.join(busy[:8])}", busy=busy[:16])]
    if not targets:
        return [ok(NAME, "no GPUs to stress")]
    try:
        drv = system.cuda()
    except CudaUnavailable as exc:   # not installed here: said, and no reason to hold a node back
        return [ok(NAME, f"no stress: {exc}")]
    except Exception as exc:  # noqa: BLE001 - the driver failed to start: the deep check cannot vouch
        return [unknown(NAME, f"no stress: {type(exc).__name__}: {exc}")]
    try:
        ordinals = cuda_ordinals(drv)
    except Exception as exc:  # noqa: BLE001 - CUDA sees no device at all: the deep check cannot vouch
        return [unknown(NAME, f"no stress: {type(exc).__name__}: {exc}")]
    done: dict[int, dict[str, Any]] = {}

    def one(index: int, bus: str) -> None:
        if bus not in ordinals:
            done[index] = {"error": f"not visible to CUDA ({bus})"}
            return
        try:
            done[index] = load(drv, ordinals[bus], seconds)
        except Exception as exc:  # noqa: BLE001 - CudaError, a GPU CUDA does not see: that GPU is unknown
            done[index] = {"error": f"{type(exc).__name__}: {exc}"[:300]}

    with Sampler(system, {i: t["handle"] for i, t in targets.items()}, interval=0.25) as sampler:
        threads = [threading.Thread(target=one, args=(i, t["bus"]), daemon=True, name=f"stress-{i}")
                   for i, t in targets.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds * 1.5 + 30)
    fleet = read_fleet(s.perf_baseline_file)
    return [_judge(index, info, done.get(index) or {"error": "did not finish"}, sampler.summary(index), fleet, ctx)
            for index, info in targets.items()]


def clock_reference(model: str, fleet: dict[str, dict[str, Any]], ctx: Context) -> tuple[str, float]:
    entry = fleet.get(model) or {}
    if int(entry.get("n") or 0) >= ctx.settings.perf_min_fleet and entry.get("sm_mhz_min"):
        return "the fleet's median", float(entry["sm_mhz_min"])
    if ctx.hardware.perf_sm_mhz > 0:
        return "the profile's", ctx.hardware.perf_sm_mhz
    return "", 0.0


def _judge(index: int, info: dict[str, Any], res: dict[str, Any], during: dict[str, Any],
           fleet: dict[str, dict[str, Any]], ctx: Context) -> Result:
    label = f"GPU {index} ({info['bus']})"
    evidence = {"stress": {**res, "during": during, "model": info["model"], "uuid": info["uuid"]}}
    if "error" in res:
        return Result(NAME, "unknown", f"{label}: stress failed: {res['error']}", evidence, gpus=[index])
    reasons = int(during.get("clocks_event_reasons") or 0)
    hard = [text for bit, text in FAIL_REASONS.items() if reasons & bit]
    soft = [text for bit, text in WARN_REASONS.items() if reasons & bit]
    where = f"under {res['seconds']:.0f}s of load"
    seen = (f"SM clock median {during.get('sm_mhz_median')} MHz, max {during.get('temperature_max')} C, "
            f"{during.get('power_w_max')} W")
    problems = [f"{', '.join(hard)} seen"] if hard else []
    basis, ref = clock_reference(info["model"], fleet, ctx)
    clock = during.get("sm_mhz_median")
    margin = ctx.settings.perf_clock_margin
    if ref and clock is not None and clock < ref * (1 - margin):
        problems.append(f"SM clock median {clock} MHz, {(1 - clock / ref) * 100:.0f}% below {basis} {ref:g}")
    evidence["clock_reference"] = {"basis": basis or None, "sm_mhz": ref or None}
    if problems:
        return fail(NAME, f"{label} {where}: {'; '.join(problems)} ({seen})", [index], **evidence)
    if soft:
        return warn(NAME, f"{label} {where}: {', '.join(soft)} ({seen})", [index], **evidence)
    note = "" if ref else "; no clock reference yet"
    return Result(NAME, "ok", f"{label} {where}: no slowdown ({seen}{note})", evidence, gpus=[index])
