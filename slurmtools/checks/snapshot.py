"""`slurmtools snapshot record`: save what the probes read on this node, for replay anywhere.

The snapshot holds NVML's answers to exactly the calls the checks make (null where the GPU does not
support one, the error name where one fails), the sysfs/procfs files they read, and optionally an
earlier reading of the error counters (``--interval``), so a replay can judge counter increases.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from slurmtools.checks import system as sysmod

#: Snapshot device field -> (pynvml call, extra args). Mirrors FakeNvml.
DEVICE_FIELDS: dict[str, tuple[str, tuple[int, ...]]] = {
    "minor_number": ("nvmlDeviceGetMinorNumber", ()),
    "name": ("nvmlDeviceGetName", ()),
    "uuid": ("nvmlDeviceGetUUID", ()),
    "ecc_uncorrected_volatile": ("nvmlDeviceGetTotalEccErrors",
                                 (sysmod.MEMORY_ERROR_TYPE_UNCORRECTED, sysmod.VOLATILE_ECC)),
    "retired_pages_pending": ("nvmlDeviceGetRetiredPagesPendingStatus", ()),
    "remapped_rows": ("nvmlDeviceGetRemappedRows", ()),
    "temperature": ("nvmlDeviceGetTemperature", (sysmod.TEMPERATURE_GPU,)),
    "clocks_event_reasons": ("nvmlDeviceGetCurrentClocksEventReasons", ()),
    "persistence_mode": ("nvmlDeviceGetPersistenceMode", ()),
    "mig_mode": ("nvmlDeviceGetMigMode", ()),
    "pcie_gen": ("nvmlDeviceGetCurrPcieLinkGeneration", ()),
    "pcie_width": ("nvmlDeviceGetCurrPcieLinkWidth", ()),
    "pcie_max_gen": ("nvmlDeviceGetMaxPcieLinkGeneration", ()),
    "pcie_max_width": ("nvmlDeviceGetMaxPcieLinkWidth", ()),
    "pcie_gpu_max_gen": ("nvmlDeviceGetGpuMaxPcieLinkGeneration", ()),
    "clock_sm_mhz": ("nvmlDeviceGetClockInfo", (sysmod.CLOCK_SM,)),
    "clock_sm_max_mhz": ("nvmlDeviceGetMaxClockInfo", (sysmod.CLOCK_SM,)),
    "power_mw": ("nvmlDeviceGetPowerUsage", ()),
}


def _error_name(exc: BaseException) -> str:
    return type(exc).__name__.removeprefix("NVMLError_")


def collect_nvml(nvml: sysmod.Nvml) -> dict[str, Any]:
    """NVML's answers, in the shape FakeNvml replays."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return {"errors": {"nvmlInit": _error_name(exc)}}
    try:
        out: dict[str, Any] = {"driver_version": nvml.nvmlSystemGetDriverVersion(),
                               "cuda_driver_version": nvml.nvmlSystemGetCudaDriverVersion(), "devices": []}
        for index in range(nvml.nvmlDeviceGetCount()):
            out["devices"].append(_device(nvml, index))
        return out
    finally:
        nvml.nvmlShutdown()


def _device(nvml: sysmod.Nvml, index: int) -> dict[str, Any]:
    dev: dict[str, Any] = {"index": index, "errors": {}}
    try:
        h = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as exc:
        dev["errors"]["nvmlDeviceGetHandleByIndex"] = _error_name(exc)
        return dev

    def get(key: str, call: str, *args: object, convert: Callable[[Any], object] | None = None) -> None:
        try:
            value = getattr(nvml, call)(h, *args)
            dev[key] = convert(value) if convert else value
        except nvml.NVMLError as exc:
            dev[key] = None
            if _error_name(exc) not in ("NotSupported", "FunctionNotFound"):
                dev["errors"][call] = _error_name(exc)

    for key, (call, args) in DEVICE_FIELDS.items():
        get(key, call, *args, convert=lambda v: list(v) if isinstance(v, tuple | list) else v)
    get("pci_bus_id", "nvmlDeviceGetPciInfo", convert=lambda p: p.busId.decode() if isinstance(p.busId, bytes)
        else p.busId)
    get("memory_used_mib", "nvmlDeviceGetMemoryInfo", convert=lambda m: int(m.used) >> 20)
    get("processes", "nvmlDeviceGetComputeRunningProcesses",
        convert=lambda ps: [{"pid": p.pid, "used_mib": int(p.usedGpuMemory or 0) >> 20} for p in ps])
    try:
        fv = nvml.nvmlDeviceGetFieldValues(h, [sysmod.FI_DEV_GET_GPU_RECOVERY_ACTION])[0]
        dev["recovery_action"] = int(fv.value.uiVal) if fv.nvmlReturn == sysmod.SUCCESS else None
    except nvml.NVMLError:
        dev["recovery_action"] = None
    states, counters = [], []
    for link in range(sysmod.NVLINK_MAX_LINKS):
        try:
            states.append(int(nvml.nvmlDeviceGetNvLinkState(h, link)))
        except nvml.NVMLError:
            break
        row = []
        for counter in sysmod.NVLINK_COUNTERS.values():
            try:
                row.append(int(nvml.nvmlDeviceGetNvLinkErrorCounter(h, link, counter)))
            except nvml.NVMLError:
                row.append(0)
        counters.append(row)
    dev["nvlink_state"], dev["nvlink_counters"] = (states, counters) if states else (None, None)
    if not dev["errors"]:
        del dev["errors"]
    return dev


def collect_files(fs: sysmod.RootFs) -> dict[str, str]:
    """The sysfs/procfs files the checks read (D-state processes only, not the whole process table)."""
    files: dict[str, str] = {}

    def take(path: str) -> None:
        text = fs.read(path)
        if text is not None:
            files[path] = text

    for dev in fs.listdir("sys/bus/pci/devices"):
        if (fs.read(f"sys/bus/pci/devices/{dev}/vendor") or "").strip() == "0x10de":
            take(f"sys/bus/pci/devices/{dev}/vendor")
            take(f"sys/bus/pci/devices/{dev}/class")
    root = "sys/class/infiniband"
    for dev in fs.listdir(root):
        for port in fs.listdir(f"{root}/{dev}/ports"):
            base = f"{root}/{dev}/ports/{port}"
            for name in ("state", "phys_state", "rate", "link_layer"):
                take(f"{base}/{name}")
            for name in ("link_downed", "symbol_error", "link_error_recovery", "port_rcv_errors"):
                take(f"{base}/counters/{name}")
        for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
            take(f"{root}/{dev}/device/{name}")
        for ifname in fs.listdir(f"{root}/{dev}/device/net"):
            take(f"{root}/{dev}/device/net/{ifname}/operstate")
            take(f"{root}/{dev}/device/net/{ifname}/carrier")
    take("proc/meminfo")
    take("proc/mounts")
    for pid in fs.listdir("proc"):
        stat = fs.read(f"proc/{pid}/stat") if pid.isdigit() else None
        if stat and stat[stat.rfind(")") + 2:stat.rfind(")") + 3] == "D":
            files[f"proc/{pid}/stat"] = stat
    return files


def counter_readings(snapshot: dict[str, Any]) -> dict[str, int]:
    """The counter values the checks would record from SNAPSHOT (keys as in the counters file)."""
    from slurmtools import config
    from slurmtools.checks import Context, infiniband, nvlink
    from slurmtools.checks.counters import Counters

    cfg = config.load(env={})
    system = sysmod.System.from_snapshot({**snapshot, "previous": None})
    counters = Counters(None, 1e9)
    ctx = Context(node="", profile="health", settings=cfg.checks, hardware=cfg.hardware_for(None),
                  counters=counters)
    nvlink.run(system, ctx)
    infiniband.run(system, ctx)
    return {k: int(v["v"]) for k, v in counters.state.items()}


def record(*, root: str = "/", interval: float = 0.0, nvml: sysmod.Nvml | None = None) -> dict[str, Any]:
    """A snapshot of this machine. With INTERVAL, counters are read twice that many seconds apart."""
    if nvml is None:
        try:
            nvml = sysmod.import_pynvml()
        except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
            nvml = None
    fs = sysmod.RootFs(root)

    def once() -> dict[str, Any]:
        return {"format": sysmod.SNAPSHOT_FORMAT, "host": socket.gethostname(),
                "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "nvml": collect_nvml(nvml) if nvml is not None else {"errors": {"nvmlInit": "LibraryNotFound"}},
                "files": collect_files(fs)}

    if interval <= 0:
        return once()
    first = counter_readings(once())
    time.sleep(interval)
    snap = once()
    snap["previous"] = {"age_s": interval, "counters": first}
    return snap
