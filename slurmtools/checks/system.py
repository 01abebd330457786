"""What the checks read, behind the lowest boundary there is: NVML calls, a file tree, a probe.

* ``Fs``: files under a root (``sys/class/infiniband/...``, ``proc/meminfo``). `RootFs` reads a real
  tree (``/``, or a folder a test builds); `SnapshotFs` reads the files a snapshot recorded.
* ``nvml``: the ``pynvml`` module itself, or `FakeNvml`, which answers the same calls from a snapshot
  and raises pynvml's own ``NVMLError`` subclasses for the faults it records.

The constants below are NVML's C ABI values (stable across driver releases); a test compares them with
pynvml's. Using them lets a replayed gate run without importing pynvml (~18 ms of a 100 ms budget).
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from slurmtools._plain import Plain

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Nvml(Protocol):
        """NVML as the checks call it: the pynvml module, or an object with its nvml* calls and NVMLError
        (`FakeNvml` replaying a snapshot, the tests' fake). The answers are pynvml's own (untyped) structures."""

        def __getattr__(self, name: str) -> Any: ...

TEMPERATURE_GPU = 0
CLOCK_SM = 1
MEMORY_ERROR_TYPE_UNCORRECTED = 1
VOLATILE_ECC = 0
NVLINK_ERROR_DL_REPLAY = 0
NVLINK_ERROR_DL_RECOVERY = 1
NVLINK_ERROR_DL_CRC_FLIT = 2
NVLINK_MAX_LINKS = 36
FI_DEV_GET_GPU_RECOVERY_ACTION = 230
SUCCESS = 0
NVLINK_COUNTERS = {"replay": NVLINK_ERROR_DL_REPLAY, "recovery": NVLINK_ERROR_DL_RECOVERY,
                   "crc_flit": NVLINK_ERROR_DL_CRC_FLIT}

SNAPSHOT_FORMAT = "slurmtools-snapshot/1"


if TYPE_CHECKING:
    class Fs(Protocol):
        """What the checks read files through: `RootFs` (a real tree), `SnapshotFs` (a recording)."""

        def read(self, path: str) -> str | None:
            """The file's text, or None when it does not exist or cannot be read."""

        def listdir(self, path: str) -> list[str]:
            """Names in a folder, sorted; [] when it does not exist."""


class RootFs:
    """A real file tree: the machine (root "/") or a folder a test builds."""

    def __init__(self, root: str = "/") -> None:
        self.root = root

    def _path(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path: str) -> str | None:
        try:
            with open(self._path(path), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self._path(path)))
        except OSError:
            return []


class SnapshotFs:
    """The files a snapshot recorded, as a read-only tree."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = {k.strip("/"): v for k, v in files.items()}
        self.dirs: dict[str, set[str]] = {}
        for key in self.files:
            parts = key.split("/")
            for i in range(len(parts)):
                self.dirs.setdefault("/".join(parts[:i]), set()).add(parts[i])

    def read(self, path: str) -> str | None:
        return self.files.get(path.strip("/"))

    def listdir(self, path: str) -> list[str]:
        return sorted(self.dirs.get(path.strip("/"), ()))


def import_pynvml() -> Any:
    """The pynvml module, imported without `ctypes.util`.

    nvidia-ml-py's pynvml.py does `from ctypes.util import find_library` and never calls it; importing
    ctypes.util pulls in shutil, subprocess, tempfile and signal: ~10 ms of every prolog (docs/performance.md).
    While pynvml is imported, `ctypes.util` is a stand-in whose `find_library` imports the real module and
    calls it, should any version ever call it; the stand-in is removed right after, so anything importing
    ctypes.util later gets the real one.
    """
    import sys

    if "pynvml" in sys.modules or "ctypes.util" in sys.modules:
        import pynvml

        return pynvml
    import types

    def find_library(name: str) -> str | None:
        if sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]
        import ctypes.util

        return ctypes.util.find_library(name)

    stand_in = types.ModuleType("ctypes.util", "stand-in while pynvml imports (slurmtools.checks.system)")
    stand_in.find_library = find_library  # type: ignore[attr-defined]
    sys.modules["ctypes.util"] = stand_in
    try:
        import pynvml
    finally:
        if sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]
    return pynvml


def _nvml_error(name: str) -> BaseException:
    """pynvml's own exception for an error name such as "GpuIsLost" (pynvml imported only now)."""
    pynvml = import_pynvml()

    cls = getattr(pynvml, f"NVMLError_{name}", None)
    if cls is None:
        raise ValueError(f"snapshot names an unknown NVML error {name!r}")
    return cls()  # type: ignore[no-any-return]


class FakeNvml:
    """Answers pynvml's calls from a snapshot's ``nvml`` section.

    Every device field may be null (the call raises ``NVMLError_NotSupported``), and ``errors`` maps a
    call name to the NVML error it raises (globally, or per device), e.g. ``{"nvmlInit":
    "DriverNotLoaded"}`` or a device's ``{"nvmlDeviceGetRemappedRows": "GpuIsLost"}``.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.devices: list[dict[str, Any]] = list(data.get("devices") or [])
        self.errors: dict[str, str] = dict(data.get("errors") or {})

    @property
    def NVMLError(self) -> type[BaseException]:
        """pynvml's base error, so code written against pynvml can catch the fake's errors."""
        pynvml = import_pynvml()

        return pynvml.NVMLError  # type: ignore[no-any-return]

    def _raise_if(self, call: str, device: dict[str, Any] | None = None) -> None:
        name = (device or {}).get("errors", {}).get(call) or self.errors.get(call)
        if name:
            raise _nvml_error(name)

    def _field(self, call: str, h: dict[str, Any], key: str) -> Any:
        self._raise_if(call, h)
        value = h.get(key)
        if value is None:
            raise _nvml_error("NotSupported")
        return value

    def nvmlInit(self) -> None:
        self._raise_if("nvmlInit")

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self) -> str:
        self._raise_if("nvmlSystemGetDriverVersion")
        return str(self.data.get("driver_version", ""))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._raise_if("nvmlSystemGetCudaDriverVersion")
        return int(self.data.get("cuda_driver_version", 0))

    def nvmlDeviceGetCount(self) -> int:
        self._raise_if("nvmlDeviceGetCount")
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
        if not 0 <= index < len(self.devices):
            raise _nvml_error("InvalidArgument")
        device = self.devices[index]
        self._raise_if("nvmlDeviceGetHandleByIndex", device)
        return device

    def nvmlDeviceGetUUID(self, h: dict[str, Any]) -> str:
        return str(self._field("nvmlDeviceGetUUID", h, "uuid"))

    def nvmlDeviceGetName(self, h: dict[str, Any]) -> str:
        return str(self._field("nvmlDeviceGetName", h, "name"))

    def nvmlDeviceGetMinorNumber(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetMinorNumber", h, "minor_number"))

    def nvmlDeviceGetPciInfo(self, h: dict[str, Any]) -> Any:
        return SimpleNamespace(busId=self._field("nvmlDeviceGetPciInfo", h, "pci_bus_id"))

    def nvmlDeviceGetTotalEccErrors(self, h: dict[str, Any], error_type: int, counter_type: int) -> int:
        return int(self._field("nvmlDeviceGetTotalEccErrors", h, "ecc_uncorrected_volatile"))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetRetiredPagesPendingStatus", h, "retired_pages_pending"))

    def nvmlDeviceGetRemappedRows(self, h: dict[str, Any]) -> tuple[int, int, int, int]:
        corr, unc, pending, failure = self._field("nvmlDeviceGetRemappedRows", h, "remapped_rows")
        return int(corr), int(unc), int(pending), int(failure)

    def nvmlDeviceGetTemperature(self, h: dict[str, Any], sensor: int) -> int:
        return int(self._field("nvmlDeviceGetTemperature", h, "temperature"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetCurrentClocksEventReasons", h, "clocks_event_reasons"))

    def nvmlDeviceGetPersistenceMode(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetPersistenceMode", h, "persistence_mode"))

    def nvmlDeviceGetMigMode(self, h: dict[str, Any]) -> list[int]:
        return list(self._field("nvmlDeviceGetMigMode", h, "mig_mode"))

    def nvmlDeviceGetMemoryInfo(self, h: dict[str, Any]) -> Any:
        return SimpleNamespace(used=int(self._field("nvmlDeviceGetMemoryInfo", h, "memory_used_mib")) << 20)

    def nvmlDeviceGetComputeRunningProcesses(self, h: dict[str, Any]) -> list[Any]:
        procs = self._field("nvmlDeviceGetComputeRunningProcesses", h, "processes")
        return [SimpleNamespace(pid=p["pid"], usedGpuMemory=int(p.get("used_mib", 0)) << 20) for p in procs]

    def nvmlDeviceGetFieldValues(self, h: dict[str, Any], field_ids: list[int]) -> list[Any]:
        self._raise_if("nvmlDeviceGetFieldValues", h)
        out = []
        for fid in field_ids:
            value = h.get("recovery_action") if fid == FI_DEV_GET_GPU_RECOVERY_ACTION else None
            ret = SUCCESS if value is not None else 3  # NVML_ERROR_NOT_SUPPORTED
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=ret, value=SimpleNamespace(uiVal=value or 0)))
        return out

    def nvmlDeviceGetClockInfo(self, h: dict[str, Any], clock: int) -> int:
        return int(self._field("nvmlDeviceGetClockInfo", h, "clock_sm_mhz"))

    def nvmlDeviceGetMaxClockInfo(self, h: dict[str, Any], clock: int) -> int:
        return int(self._field("nvmlDeviceGetMaxClockInfo", h, "clock_sm_max_mhz"))

    def nvmlDeviceGetPowerUsage(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetPowerUsage", h, "power_mw"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetCurrPcieLinkGeneration", h, "pcie_gen"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetCurrPcieLinkWidth", h, "pcie_width"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetMaxPcieLinkGeneration", h, "pcie_max_gen"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetMaxPcieLinkWidth", h, "pcie_max_width"))

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: dict[str, Any]) -> int:
        return int(self._field("nvmlDeviceGetGpuMaxPcieLinkGeneration", h, "pcie_gpu_max_gen"))

    def nvmlDeviceGetNvLinkState(self, h: dict[str, Any], link: int) -> int:
        states = self._field("nvmlDeviceGetNvLinkState", h, "nvlink_state")
        if link >= len(states):
            raise _nvml_error("InvalidArgument")
        return int(states[link])

    def nvmlDeviceGetNvLinkErrorCounter(self, h: dict[str, Any], link: int, counter: int) -> int:
        counters = self._field("nvmlDeviceGetNvLinkErrorCounter", h, "nvlink_counters")
        if link >= len(counters):
            raise _nvml_error("InvalidArgument")
        return int(counters[link][counter])


class System(Plain):
    """The machine as the checks see it. Build with `real()` or `from_snapshot()`. ``nvml_source``: a
    FakeNvml, or None for the real pynvml (imported on first use); ``replay``: the snapshot file."""

    def __init__(self, fs: Fs, nvml_source: Nvml | FakeNvml | None = None, snapshot: dict[str, Any] | None = None,
                 replay: str = "", cuda_source: object = None) -> None:
        self.fs = fs
        self.nvml_source = nvml_source
        self.cuda_source = cuda_source
        self.snapshot = snapshot
        self.replay = replay
        self._nvml: Any = None
        self._init: tuple[bool, BaseException | None] | None = None

    @property
    def nvml(self) -> Any:
        if self._nvml is None:
            if self.nvml_source is not None:
                self._nvml = self.nvml_source
            else:
                self._nvml = import_pynvml()
        return self._nvml

    @property
    def NVMLError(self) -> type[BaseException]:
        """pynvml's base error, from the NVML in use (looked up only when an `except` clause needs it)."""
        return self.nvml.NVMLError  # type: ignore[no-any-return]

    def cuda(self) -> Any:
        """The CUDA driver the fail-slow probe calls (checks/cudadrv.py): the given one, a snapshot's simulated
        one (its ``cuda`` section), or the real driver. Raises `CudaUnavailable` where there is none."""
        from slurmtools.checks import cudadrv

        if self.cuda_source is not None:
            return self.cuda_source
        if self.snapshot is not None:
            section = self.snapshot.get("cuda")
            if not isinstance(section, dict) or not isinstance(section.get("devices"), list):
                raise cudadrv.CudaUnavailable("the replayed snapshot has no CUDA figures")
            self.cuda_source = cudadrv.SimulatedDriver(section["devices"])
            return self.cuda_source
        return cudadrv.Driver()

    def nvml_init(self) -> BaseException | None:
        """Initialise NVML once (thread-safe enough: a second init is harmless). The error, or None."""
        if self._init is None:
            try:
                self.nvml.nvmlInit()
                self._init = (True, None)
            except ImportError as exc:
                self._init = (False, exc)
            except Exception as exc:  # noqa: BLE001 - NVMLError or a missing libnvidia-ml: reported by the check
                self._init = (False, exc)
        return self._init[1]

    def close(self) -> None:
        if self._init and self._init[0]:
            try:
                self.nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down; nothing to report
                pass
            self._init = None

    @property
    def seed_counters(self) -> dict[str, Any]:
        """An earlier counter reading the snapshot carries (``previous``: age_s + counters)."""
        return dict((self.snapshot or {}).get("previous") or {})

    @classmethod
    def real(cls, root: str = "/") -> System:
        return cls(fs=RootFs(root))

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], path: str = "") -> System:
        nvml = data.get("nvml")
        fake = FakeNvml(nvml) if isinstance(nvml, dict) else FakeNvml({"errors": {"nvmlInit": "LibraryNotFound"}})
        return cls(fs=SnapshotFs(dict(data.get("files") or {})), nvml_source=fake, snapshot=data, replay=path)


class SnapshotError(ValueError):
    pass


def load_snapshot(path: str) -> dict[str, Any]:
    """Read a snapshot file, with a clear error for anything that is not one."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read snapshot: {exc.strerror}") from None
    except ValueError as exc:
        raise SnapshotError(f"{path}: not a JSON snapshot: {exc}") from None
    except RecursionError:
        raise SnapshotError(f"{path}: not a slurmtools snapshot (nested too deeply)") from None
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{path}: not a slurmtools snapshot (expected format {SNAPSHOT_FORMAT!r})")
    if not isinstance(data.get("files", {}), dict) or not isinstance(data.get("nvml") or {}, dict):
        raise SnapshotError(f"{path}: snapshot 'files' and 'nvml' must be objects")
    nvml = data.get("nvml") or {}
    devices = nvml.get("devices") or []
    if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
        raise SnapshotError(f"{path}: snapshot 'nvml.devices' must be a list of objects")
    previous = data.get("previous")
    if previous is not None and (not isinstance(previous, dict) or not isinstance(previous.get("counters", {}), dict)
                                 or not isinstance(previous.get("age_s", 0), (int, float))):
        raise SnapshotError(f"{path}: snapshot 'previous' must be an object with 'age_s' and 'counters'")
    if not all(isinstance(k, str) and isinstance(v, (str, type(None))) for k, v in data.get("files", {}).items()):
        raise SnapshotError(f"{path}: snapshot 'files' must map paths to text")
    return data


BOOT_ID = "proc/sys/kernel/random/boot_id"


def boot_id(system: System) -> str | None:
    """The kernel's boot id (a new one at every boot): whether a node rebooted between two readings."""
    text = system.fs.read(BOOT_ID)
    return text.strip() or None if text else None


def system_for(replay: str = "") -> System:
    """The real machine, or the snapshot file REPLAY."""
    return System.from_snapshot(load_snapshot(replay), replay) if replay else System.real()
