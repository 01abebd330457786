"""Fail-slow probe (`perf` check; health and deep profiles, never the prolog by default): how fast each GPU is.

The other checks see a GPU that is broken; this one sees a GPU that is *slow*: one that throttles, an HBM stack
that lost bandwidth, a link that trained at x8 or Gen4. Per GPU, through the CUDA driver API (checks/cudadrv.py,
`slurmtools[gpu]`), all GPUs in parallel, each within ``perf_seconds`` (2 s) and ``perf_memory_mib`` (2 GiB):

* ``d2d_gbps``: device-to-device copy, bytes read + written per second (HBM bandwidth);
* ``h2d_gbps`` / ``d2h_gbps``: pinned host-to-device / device-to-host copies (the PCIe link, under load);
* ``fp32_tflops``: a PTX kernel of independent FP32 FMA chains on every SM (2 FLOP per FMA);
* sampled by NVML while it runs: SM clock (lowest), power (highest), temperature, clock event reasons (any
  seen), PCIe generation and width (highest: the link under load).

A GPU with processes on it is never probed (a job's GPU is the job's). Judgement is relative (absolute figures
vary by SKU, clocks and firmware): against the fleet median of the same GPU model (`fleet baseline`, published by
`slurmtools perf scan` from the ledger, where every probe result is recorded) once the fleet has
``perf_min_fleet`` results of that model, else against the model's defaults (the hardware profile's ``perf_*``
keys, else the packaged figures measured on real GPUs). Below the reference by more than ``perf_bandwidth_margin``
(10 %) on a bandwidth or ``perf_compute_margin`` (8 %) on compute: a fail-slow `warn`. What the fleet does with
it (a soft exclusion, a drain when repeated) is `controller/perf.py`'s, through the safety rails.
"""

from __future__ import annotations

import threading

from slurmtools.checks import Context, Result, ok, unknown, warn
from slurmtools.checks import system as sysmod
from slurmtools.checks.cudadrv import CudaUnavailable
from slurmtools.checks.gpu import bus_id
from slurmtools.checks.perfprobe import GPU_IDLE, METRICS, Limits, Sampler, measure

__all__ = ["GPU_IDLE", "METRICS", "Limits", "measure", "run"]

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, SupportsInt

    from slurmtools.checks.cudadrv import Driver
    from slurmtools.settings import Checks, HardwareProfile

NAME = "perf"
# ------------------------------------------------------------------------------------------------ judgement
def margins(settings: Checks) -> dict[str, float]:
    return {"bandwidth": settings.perf_bandwidth_margin, "compute": settings.perf_compute_margin}


def shortfalls(figures: dict[str, Any], reference: dict[str, float], margin: dict[str, float]) -> list[dict[str, Any]]:
    """Each metric below its reference by more than its kind's margin: metric, value, reference, shortfall."""
    out = []
    for metric, (kind, _what, _unit) in METRICS.items():
        value, ref = figures.get(metric), reference.get(metric)
        if value is None or not ref:
            continue
        short = 1.0 - float(value) / float(ref)
        if short > margin[kind]:
            out.append({"metric": metric, "value": value, "reference": ref, "shortfall": round(short, 4)})
    return out


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def baseline(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per GPU model, the median of each metric over ROWS (one result per GPU: its latest) and how many."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_model.setdefault(str(row["model"]), []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for model, items in by_model.items():
        entry: dict[str, Any] = {"n": len(items)}
        for metric in (*METRICS, "sm_mhz_min"):      # the SM clock under the probe's load: the stress's reference
            values = [float(r[metric]) for r in items if r.get(metric) is not None]
            if values:
                entry[metric] = round(median(values), 3)
        out[model] = entry
    return out


def packaged_defaults() -> dict[str, dict[str, float]]:
    """Per-model figures measured on real GPUs (slurmtools/data/gpu_perf.toml)."""
    import tomllib
    from importlib import resources

    data = tomllib.loads(resources.files("slurmtools").joinpath("data/gpu_perf.toml").read_text())
    return {str(m): {k: float(v) for k, v in figs.items() if k in METRICS} for m, figs in data["models"].items()}


def reference_for(model: str, fleet: dict[str, dict[str, Any]], hardware: HardwareProfile,
                  settings: Checks) -> tuple[str, dict[str, float], int]:
    """(basis, reference figures, fleet size): the fleet's median for MODEL once it has perf_min_fleet results,
    else the hardware profile's perf_* figures, else the packaged ones; ("none", {}, n) where none is known."""
    entry = fleet.get(model) or {}
    n = int(entry.get("n") or 0)
    if n >= settings.perf_min_fleet:
        return "fleet", {m: float(entry[m]) for m in METRICS if entry.get(m)}, n
    profile = {m: float(getattr(hardware, f"perf_{m}")) for m in METRICS if getattr(hardware, f"perf_{m}") > 0}
    if profile:
        return "profile", profile, n
    packaged = packaged_defaults().get(model)
    if packaged:
        return "default", packaged, n
    return "none", {}, n


def read_fleet(path: str) -> dict[str, dict[str, Any]]:
    """The published fleet baseline (controller/perf.py), or {} when there is none or it is unreadable."""
    import json

    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, dict) else {}


def describe(short: dict[str, Any], basis: str) -> str:
    _kind, what, unit = METRICS[short["metric"]]
    of = {"fleet": "the fleet's median", "profile": "the profile's", "default": "the model's default"}[basis]
    return f"{what} {short['value']:.4g} {unit}, {short['shortfall'] * 100:.0f}% below {of} {short['reference']:.4g}"


# ------------------------------------------------------------------------------------------------ the check
def run(system: sysmod.System, ctx: Context) -> list[Result]:
    s = ctx.settings
    if ctx.hardware.gpus == 0:
        return [ok(NAME, "no GPUs expected")]
    if system.nvml_init() is not None:
        return [unknown(NAME, "NVML unavailable: no probe")] if ctx.hardware.gpus > 0 else \
            [ok(NAME, "no NVML on this node: no probe")]
    due = _due(ctx)
    if not due:
        return [ok(NAME, f"probed less than {s.perf_interval:g}s ago (perf_interval)")]
    steps = slurm_steps(system.fs)
    if steps:
        # A job holds the node (its GPUs may be idle between steps, or before its first CUDA call): never probe.
        status = unknown if ctx.profile == "deep" else ok
        return [status(NAME, f"not probed: a Slurm job is on the node ({steps} slurmstepd processes)")]
    try:
        targets, busy = gpus(system)
    except system.NVMLError as exc:
        return [unknown(NAME, f"NVML query failed: {exc}")]
    if busy:
        # A GPU in use is never probed, and neither are its neighbours: they share power, cooling and the host.
        status = unknown if ctx.profile == "deep" else ok
        return [status(NAME, f"not probed: GPUs in use: {', '.join(busy[:8])}", busy=busy[:16])]
    try:
        drv = system.cuda()
    except CudaUnavailable as exc:   # not installed here: said, and no reason to hold a node back
        return [ok(NAME, f"no probe: {exc}")]
    except Exception as exc:  # noqa: BLE001 - the driver failed to start: the deep check cannot vouch
        status = unknown if ctx.profile == "deep" else ok
        return [status(NAME, f"no probe: {type(exc).__name__}: {exc}")]
    limits = Limits(s.perf_seconds, s.perf_memory_mib)
    figures = probe_all(system, drv, targets, limits)
    ctx.counters.observe("perf/last_probe", int(ctx.counters.now), 0)
    fleet = read_fleet(s.perf_baseline_file)
    margin = margins(s)
    results: list[Result] = []
    for index, info in targets.items():
        results.append(_judge(index, info, figures.get(index) or {}, fleet, ctx, margin, limits))
    return results


def slurm_steps(fs: sysmod.Fs) -> int:
    """How many slurmstepd processes run here: one per step of every job on the node (with PrologFlags=Contain
    the `extern` step exists from allocation on, before the job's first CUDA call)."""
    return sum(1 for pid in fs.listdir("proc")
               if pid.isdigit() and (fs.read(f"proc/{pid}/comm") or "").strip() == "slurmstepd")


def gpus(system: sysmod.System) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Every GPU NVML sees (handle, bus id, model, UUID, PCIe maxima) and those with processes on them."""
    nvml = system.nvml
    targets: dict[int, dict[str, Any]] = {}
    busy: list[str] = []
    for index in range(int(nvml.nvmlDeviceGetCount())):
        h = nvml.nvmlDeviceGetHandleByIndex(index)
        procs = _supported(system, nvml.nvmlDeviceGetComputeRunningProcesses, h) or []
        mig = _supported(system, nvml.nvmlDeviceGetMigMode, h)
        if mig and mig[0]:
            continue            # MIG: CUDA sees the instances, not the GPU; their users own them
        targets[index] = {"handle": h, "bus": bus_id(nvml.nvmlDeviceGetPciInfo(h).busId),
                          "model": str(nvml.nvmlDeviceGetName(h)), "uuid": str(nvml.nvmlDeviceGetUUID(h)),
                          "max_gen": _maybe(system, nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                          "max_width": _maybe(system, nvml.nvmlDeviceGetMaxPcieLinkWidth, h)}
        if procs:
            busy.append(f"GPU {index} ({len(procs)} processes)")
    return targets, busy


def _due(ctx: Context) -> bool:
    """Whether the node's last probe is older than perf_interval (the deep profile always probes)."""
    if ctx.profile == "deep":
        return True
    last = (ctx.counters.state.get("perf/last_probe") or {}).get("v")
    return last is None or ctx.counters.now - float(last) >= ctx.settings.perf_interval


def cuda_ordinals(drv: Driver) -> dict[str, int]:
    """PCI bus id (0000:3b:00.0) -> CUDA device ordinal: NVML's order and CUDA's need not agree."""
    return {bus_id(drv.cuDeviceGetPCIBusId(drv.cuDeviceGet(o))): o for o in range(drv.cuDeviceGetCount())}


def probe_all(system: sysmod.System, drv: Driver, targets: dict[int, dict[str, Any]],
              limits: Limits) -> dict[int, dict[str, Any]]:
    """Probe every target GPU at once (one thread each), NVML sampling them meanwhile. A GPU whose probe
    failed gets {"error": ...}."""
    try:
        ordinals = cuda_ordinals(drv)
    except Exception as exc:  # noqa: BLE001 - CUDA sees no device at all: every GPU's probe failed
        return {index: {"error": f"{type(exc).__name__}: {exc}"[:300]} for index in targets}
    out: dict[int, dict[str, Any]] = {}

    def one(index: int, bus: str) -> None:
        if bus not in ordinals:
            out[index] = {"error": f"not visible to CUDA ({bus})"}
            return
        try:
            out[index] = measure(drv, ordinals[bus], limits)
        except Exception as exc:  # noqa: BLE001 - CudaError or a driver surprise: that GPU is unknown
            out[index] = {"error": f"{type(exc).__name__}: {exc}"[:300]}

    with Sampler(system, {i: t["handle"] for i, t in targets.items()}) as sampler:
        threads = [threading.Thread(target=one, args=(i, t["bus"]), daemon=True, name=f"perf-{i}")
                   for i, t in targets.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(limits.seconds * 3 + 10)
    for index in targets:
        out.setdefault(index, {"error": "probe did not finish"})
        out[index]["during"] = sampler.summary(index)
    return out


def _judge(index: int, info: dict[str, Any], figs: dict[str, Any], fleet: dict[str, dict[str, Any]],
           ctx: Context, margin: dict[str, float], limits: Limits) -> Result:
    label = f"GPU {index} ({info['bus']})"
    probe = {"model": info["model"], "uuid": info["uuid"], "pci_bus_id": info["bus"],
             **{k: v for k, v in figs.items() if k != "handle"}}
    if "error" in figs:
        return Result(NAME, "unknown", f"{label}: probe failed: {figs['error']}", {"probe": probe}, gpus=[index])
    basis, reference, n = reference_for(info["model"], fleet, ctx.hardware, ctx.settings)
    short = shortfalls(figs, reference, margin)
    during = figs.get("during") or {}
    notes = [describe(x, basis) for x in short]
    if figs.get("seconds", 0) > limits.seconds * 1.5:
        notes.append(f"the probe took {figs['seconds']:g}s (limit {limits.seconds:g}s)")
    max_gen, max_width = info["max_gen"], info["max_width"]
    if max_width and during.get("pcie_width") and during["pcie_width"] < max_width:
        notes.append(f"PCIe x{during['pcie_width']} under load, capable of x{max_width}")
    if max_gen and during.get("pcie_gen") and during["pcie_gen"] < max_gen:
        notes.append(f"PCIe Gen{during['pcie_gen']} under load, capable of Gen{max_gen}")
    evidence = {"probe": probe, "basis": basis, "reference": reference, "fleet_n": n, "shortfalls": short}
    figures = (f"d2d {figs['d2d_gbps']:g} GB/s, H2D {figs['h2d_gbps']:g}, D2H {figs['d2h_gbps']:g}, "
               f"FP32 {figs['fp32_tflops']:g} TFLOPS")
    if notes:
        return warn(NAME, f"{label}: fail-slow: {'; '.join(notes)}", [index], fail_slow=True, **evidence)
    return Result(NAME, "ok", f"{label}: {figures} ({basis if reference else 'no reference yet'})", evidence,
                  gpus=[index])


def _supported(system: sysmod.System, call: Callable[[object], object], h: object) -> Any:
    """An NVML answer, None where the GPU does not support the query."""
    try:
        return call(h)
    except system.NVMLError as exc:
        if type(exc).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
            return None
        raise


def _maybe(system: sysmod.System, call: Callable[[object], SupportsInt], h: object) -> int:
    """An NVML integer, 0 where the GPU does not support the query."""
    try:
        return int(call(h))
    except system.NVMLError as exc:
        if type(exc).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
            return 0
        raise
