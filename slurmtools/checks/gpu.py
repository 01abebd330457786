"""GPU check (NVML): count, ECC, retired pages, row remapping, thermals/clocks, persistence, driver and
CUDA versions, NVML's recovery action, memory held by processes no job owns. MIG-aware."""

from __future__ import annotations

from slurmtools.checks import Context, Result, fail, ok, unknown, warn
from slurmtools.checks import system as sysmod

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

NAME = "gpu"

#: Clock event reasons that mean the hardware is protecting itself (fail), and the softer ones (warn).
HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 0x8, 0x20, 0x40, 0x80
FAIL_REASONS = {HW_SLOWDOWN: "HW slowdown", HW_THERMAL: "HW thermal slowdown", HW_POWER_BRAKE: "HW power brake"}
WARN_REASONS = {SW_THERMAL: "SW thermal slowdown"}
RECOVERY_ACTIONS = {1: "GPU reset", 2: "node reboot", 3: "drain P2P", 4: "drain and reset", 5: "recover IMEX domain",
                    6: "bus reset", 7: "system reboot"}
NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")     # VGA and 3D controllers (NVSwitches are 0x0680: not GPUs)


def bus_id(raw: object) -> str:
    """NVML's 00000000:3B:00.0 and sysfs's 0000:3b:00.0 both become 0000:3b:00.0 (as the kernel log writes it)."""
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return text.lower()[-12:]


def pci_gpus(fs: sysmod.Fs) -> list[str]:
    """NVIDIA GPUs on the PCI bus, as the OS sees them (whatever NVML says)."""
    found = []
    for dev in fs.listdir("sys/bus/pci/devices"):
        vendor = (fs.read(f"sys/bus/pci/devices/{dev}/vendor") or "").strip()
        if vendor != NVIDIA_VENDOR:
            continue
        cls = (fs.read(f"sys/bus/pci/devices/{dev}/class") or "").strip()
        if cls.startswith(GPU_CLASSES):
            found.append(bus_id(dev))
    return found


def cuda_version(raw: int) -> str:
    return f"{raw // 1000}.{raw % 1000 // 10}"


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    hw = ctx.hardware
    expected = hw.gpus
    pci = pci_gpus(system.fs)
    err = system.nvml_init()
    if err is not None:
        if expected == 0 or (expected < 0 and not pci):
            return [ok(NAME, "no GPUs expected; NVML not available", pci_gpus=len(pci))]
        return [fail(NAME, f"NVML unavailable ({err}); {len(pci)} NVIDIA GPUs on the PCI bus",
                     pci_gpus=len(pci), error=type(err).__name__)]
    if expected == 0 and not pci:
        return [ok(NAME, "no GPUs expected")]
    nvml = system.nvml
    results: list[Result] = []
    driver = str(nvml.nvmlSystemGetDriverVersion())
    cuda = cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion()))
    if hw.driver_version and driver != hw.driver_version:
        results.append(fail(NAME, f"driver {driver}, expected {hw.driver_version}", driver=driver))
    if hw.cuda_version and cuda != hw.cuda_version:
        results.append(fail(NAME, f"CUDA {cuda}, expected {hw.cuda_version}", cuda=cuda))
    count = int(nvml.nvmlDeviceGetCount())
    seen_bus: set[str] = set()
    for index in range(count):
        results.extend(_device(system, ctx, index, seen_bus))
    problems = []
    if expected >= 0 and count != expected:
        problems.append(f"{count} GPUs visible to NVML, expected {expected}")
    # A GPU that fell off the bus is still on the PCI bus (or comes back there after a rescan), not in NVML.
    missing = sorted(set(pci) - seen_bus) if len(seen_bus) == count else []
    if missing:
        problems.append(f"{len(missing)} of {len(pci)} GPUs on the PCI bus missing from NVML ({', '.join(missing)})")
    elif pci and count < len(pci):
        problems.append(f"{len(pci) - count} of {len(pci)} GPUs on the PCI bus missing from NVML")
    if problems:
        results.insert(0, fail(NAME, "; ".join(problems), nvml_gpus=count, pci_gpus=len(pci), missing=missing))
    if not any(r.status != "ok" for r in results):
        results.append(ok(NAME, f"{count} GPUs healthy", gpus=count, driver=driver, cuda=cuda))
    return results


def _query(system: sysmod.System, call: Callable[..., Any], *args: object) -> Any:
    """NVML value, or None where the GPU or driver does not support the query."""
    try:
        return call(*args)
    except system.NVMLError as exc:
        if type(exc).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
            return None
        raise


def _device(system: sysmod.System, ctx: Context, index: int, seen_bus: set[str]) -> list[Result]:
    nvml, s = system.nvml, ctx.settings
    label = f"GPU {index}"
    try:
        h = nvml.nvmlDeviceGetHandleByIndex(index)
        pci = _query(system, nvml.nvmlDeviceGetPciInfo, h)
        if pci is not None:
            seen_bus.add(bus_id(pci.busId))
            label = f"GPU {index} ({bus_id(pci.busId)})"
        out: list[Result] = []
        gpus = [index]
        ecc = _query(system, nvml.nvmlDeviceGetTotalEccErrors, h, sysmod.MEMORY_ERROR_TYPE_UNCORRECTED,
                     sysmod.VOLATILE_ECC)
        if ecc:
            out.append(fail(NAME, f"{label}: {ecc} uncorrected ECC errors since driver load", gpus,
                            ecc_uncorrected_volatile=ecc))
        pending_pages = _query(system, nvml.nvmlDeviceGetRetiredPagesPendingStatus, h)
        if pending_pages:
            out.append(fail(NAME, f"{label}: page retirement pending (reset needed)", gpus))
        rows = _query(system, nvml.nvmlDeviceGetRemappedRows, h)
        if rows is not None:
            corr, unc, pending, failure = rows
            if failure:
                out.append(fail(NAME, f"{label}: row remapping failed ({unc} uncorrectable rows)", gpus,
                                remapped_rows={"correctable": corr, "uncorrectable": unc}))
            elif pending:
                out.append(fail(NAME, f"{label}: row remapping pending (GPU reset needed)", gpus,
                                remapped_rows={"correctable": corr, "uncorrectable": unc}))
        reasons = _query(system, nvml.nvmlDeviceGetCurrentClocksEventReasons, h) or 0
        hard = [text for bit, text in FAIL_REASONS.items() if reasons & bit]
        soft = [text for bit, text in WARN_REASONS.items() if reasons & bit]
        temp = _query(system, nvml.nvmlDeviceGetTemperature, h, sysmod.TEMPERATURE_GPU)
        if hard:
            out.append(fail(NAME, f"{label}: clocks held down: {', '.join(hard)} ({temp} C)", gpus,
                            clocks_event_reasons=reasons, temperature=temp))
        elif temp is not None and temp >= s.max_gpu_temp_c:
            out.append(fail(NAME, f"{label}: {temp} C, limit {s.max_gpu_temp_c} C", gpus, temperature=temp))
        elif soft:
            out.append(warn(NAME, f"{label}: {', '.join(soft)} ({temp} C)", gpus, clocks_event_reasons=reasons))
        action = _recovery_action(system, h)
        if action:
            out.append(fail(NAME, f"{label}: NVML asks for {RECOVERY_ACTIONS.get(action, f'action {action}')}", gpus,
                            recovery_action=action))
        if s.require_persistence_mode and _query(system, nvml.nvmlDeviceGetPersistenceMode, h) == 0:
            out.append(warn(NAME, f"{label}: persistence mode off (slow, flaky job starts)", gpus))
        if ctx.profile == "prolog":
            out.extend(_stray(system, ctx, h, label, gpus))
        minor = _query(system, nvml.nvmlDeviceGetMinorNumber, h)
        for r in out:
            if minor is not None:
                r.evidence["minors"] = [minor]
        return out
    except system.NVMLError as exc:
        if type(exc).__name__ == "NVMLError_GpuIsLost":
            return [fail(NAME, f"{label}: GPU is lost (fallen off the bus)", [index], error="GpuIsLost")]
        return [unknown(NAME, f"{label}: NVML query failed: {exc}", error=type(exc).__name__)]


def _recovery_action(system: sysmod.System, h: object) -> int:
    values = _query(system, system.nvml.nvmlDeviceGetFieldValues, h, [sysmod.FI_DEV_GET_GPU_RECOVERY_ACTION])
    if not values or values[0].nvmlReturn != sysmod.SUCCESS:
        return 0
    return int(values[0].value.uiVal)


def _stray(system: sysmod.System, ctx: Context, h: object, label: str, gpus: list[int]) -> list[Result]:
    """At job start nothing should be running on the GPU (MIG: per-instance memory is not judged here)."""
    nvml = system.nvml
    mig = _query(system, nvml.nvmlDeviceGetMigMode, h)
    if mig and mig[0]:
        return []
    procs = _query(system, nvml.nvmlDeviceGetComputeRunningProcesses, h) or []
    used = sum(int(p.usedGpuMemory or 0) for p in procs) >> 20
    if procs and used > ctx.settings.stray_memory_mib:
        return [fail(NAME, f"{label}: {len(procs)} leftover processes hold {used} MiB", gpus,
                     pids=[p.pid for p in procs][:16], used_mib=used)]
    if procs:
        return [warn(NAME, f"{label}: {len(procs)} leftover processes ({used} MiB)", gpus,
                     pids=[p.pid for p in procs][:16])]
    return []
