"""The CUDA driver API, for the fail-slow probe (checks/perf.py) and the tests that need a real GPU.

Through NVIDIA's `cuda-bindings` (the optional extra: ``pip install slurmtools[gpu]``), imported only here and
only when a probe runs. `Driver` keeps the driver's own call names and arguments and returns each call's value
(raising `CudaError` for anything but CUDA_SUCCESS), so that a test can put a fake with the same calls in its
place (tests/fakes.py `FakeCuda`): that is the lowest boundary of the probe, the CUDA calls themselves.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    #: A driver handle (CUdevice, CUcontext, CUstream, CUevent, CUdeviceptr, CUmodule, CUfunction) is opaque to
    #: the probe: a cuda-bindings object from `Driver`, a plain value from `SimulatedDriver` or the tests' fake.
    #: Only the driver that made one reads it; the caller passes it back unchanged.
    Handle = object


class CudaError(RuntimeError):
    """A CUDA driver call that did not return CUDA_SUCCESS: NAME is the driver's (CUDA_ERROR_ILLEGAL_ADDRESS)."""

    def __init__(self, call: str, name: str, code: int = -1) -> None:
        super().__init__(f"{call}: {name}")
        self.call, self.name, self.code = call, name, code


class CudaUnavailable(RuntimeError):
    """No usable CUDA here: cuda-bindings not installed, or no driver library, or no device."""


#: Kernel argument kinds -> numpy dtypes (the kernel reads each argument from its own little buffer).
ARG_TYPES = {"u64": "uint64", "u32": "uint32", "f32": "float32"}


class Driver:
    """The real driver (cuda.bindings.driver), initialised."""

    def __init__(self) -> None:
        try:
            from cuda.bindings import driver
        except ImportError as exc:
            raise CudaUnavailable("cuda-bindings is not installed (pip install 'slurmtools[gpu]')") from exc
        self.d = driver
        try:
            self._call("cuInit", 0)
        except CudaError as exc:
            raise CudaUnavailable(f"CUDA driver: {exc.name}") from exc
        except Exception as exc:  # cuda-pathfinder raises its own errors for a missing libcuda
            raise CudaUnavailable(f"CUDA driver library not found ({type(exc).__name__})") from exc

    def _call(self, name: str, *args: object) -> Any:  # cuda-bindings is untyped
        out = getattr(self.d, name)(*args)
        err, rest = out[0], out[1:]
        if err != self.d.CUresult.CUDA_SUCCESS:
            raise CudaError(name, getattr(err, "name", str(err)), int(err))
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    # Devices and contexts
    def cuDeviceGetCount(self) -> int:
        return int(self._call("cuDeviceGetCount"))

    def cuDeviceGet(self, ordinal: int) -> Handle:
        return self._call("cuDeviceGet", ordinal)

    def cuDeviceGetPCIBusId(self, dev: Handle) -> str:
        raw = self._call("cuDeviceGetPCIBusId", 32, dev)
        # cuda-bindings 13.3 answers the whole buffer: b'0000:00:06.0\x00' and spaces (seen on an H200)
        return (raw.decode() if isinstance(raw, bytes) else str(raw)).split("\x00", 1)[0].strip()

    def cuDeviceGetAttribute(self, attribute: str, dev: Handle) -> int:
        return int(self._call("cuDeviceGetAttribute", getattr(self.d.CUdevice_attribute, attribute), dev))

    def cuDevicePrimaryCtxRetain(self, dev: Handle) -> Handle:
        return self._call("cuDevicePrimaryCtxRetain", dev)

    def cuDevicePrimaryCtxRelease(self, dev: Handle) -> None:
        self._call("cuDevicePrimaryCtxRelease", dev)

    def cuCtxSetCurrent(self, ctx: Handle) -> None:
        self._call("cuCtxSetCurrent", ctx)

    def cuCtxSynchronize(self) -> None:
        self._call("cuCtxSynchronize")

    # Streams and events
    def cuStreamCreate(self) -> Handle:
        return self._call("cuStreamCreate", 0)

    def cuStreamSynchronize(self, stream: Handle) -> None:
        self._call("cuStreamSynchronize", stream)

    def cuStreamDestroy(self, stream: Handle) -> None:
        self._call("cuStreamDestroy", stream)

    def cuEventCreate(self) -> Handle:
        return self._call("cuEventCreate", 0)

    def cuEventRecord(self, event: Handle, stream: Handle) -> None:
        self._call("cuEventRecord", event, stream)

    def cuEventSynchronize(self, event: Handle) -> None:
        self._call("cuEventSynchronize", event)

    def cuEventElapsedTime(self, start: Handle, end: Handle) -> float:
        """Milliseconds between two recorded events."""
        return float(self._call("cuEventElapsedTime", start, end))

    def cuEventDestroy(self, event: Handle) -> None:
        self._call("cuEventDestroy", event)

    # Memory
    def cuMemAlloc(self, nbytes: int) -> Handle:
        return self._call("cuMemAlloc", nbytes)

    def cuMemFree(self, ptr: Handle) -> None:
        self._call("cuMemFree", ptr)

    def cuMemAllocHost(self, nbytes: int) -> Handle:
        return self._call("cuMemAllocHost", nbytes)

    def cuMemFreeHost(self, ptr: Handle) -> None:
        self._call("cuMemFreeHost", ptr)

    def cuMemsetD32Async(self, ptr: Handle, value: int, count: int, stream: Handle) -> None:
        self._call("cuMemsetD32Async", ptr, value, count, stream)

    def cuMemcpyDtoDAsync(self, dst: Handle, src: Handle, nbytes: int, stream: Handle) -> None:
        self._call("cuMemcpyDtoDAsync", dst, src, nbytes, stream)

    def cuMemcpyHtoDAsync(self, dst: Handle, src: Handle, nbytes: int, stream: Handle) -> None:
        self._call("cuMemcpyHtoDAsync", dst, src, nbytes, stream)

    def cuMemcpyDtoHAsync(self, dst: Handle, src: Handle, nbytes: int, stream: Handle) -> None:
        self._call("cuMemcpyDtoHAsync", dst, src, nbytes, stream)

    # Kernels (PTX, JIT-compiled by the driver for the GPU at hand)
    def cuModuleLoadData(self, ptx: bytes) -> Handle:
        return self._call("cuModuleLoadData", ptx)

    def cuModuleGetFunction(self, module: Handle, name: str) -> Handle:
        return self._call("cuModuleGetFunction", module, name.encode())

    def cuModuleUnload(self, module: Handle) -> None:
        self._call("cuModuleUnload", module)

    def cuLaunchKernel(self, fn: Handle, grid: int, block: int, args: list[tuple[str, Any]], stream: Handle) -> None:
        """Launch FN on GRID x BLOCK threads; ARGS: (kind, value) with kind u64 (a pointer), u32 or f32."""
        import numpy as np

        values = [np.array([int(v) if kind != "f32" else float(v)], dtype=ARG_TYPES[kind]) for kind, v in args]
        params = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        self._call("cuLaunchKernel", fn, grid, 1, 1, block, 1, 1, 0, stream, params.ctypes.data, 0)


class SimulatedDriver:
    """The same calls as `Driver`, answered from per-GPU figures instead of a GPU: what a snapshot's ``cuda``
    section (replays, the lab), the tests and bench/failslow_fleet.py use. Work enqueued on a stream takes
    virtual time (bytes / bandwidth, FLOPs / throughput); events stamp that time, so `cuEventElapsedTime`
    measures it like the real driver would. Allocations are counted per device (``peak_bytes``).

    DEVICES: ``{"pci_bus_id", "sms", "d2d_gbps", "h2d_gbps", "d2h_gbps", "fp32_tflops"}`` per CUDA ordinal;
    JITTER: relative noise per operation (seeded: reproducible); ERRORS: call name -> CUDA error name.
    """

    def __init__(self, devices: list[dict[str, Any]], jitter: float = 0.0, seed: int = 0,
                 errors: dict[str, str] | None = None, fmas_per_thread_iter: int = 32) -> None:
        import random
        import threading

        self.devices = devices
        self.jitter = jitter
        self.rng = random.Random(seed)
        self.errors = dict(errors or {})
        self.fmas = fmas_per_thread_iter
        self.local = threading.local()
        self.lock = threading.Lock()
        self.live_bytes: dict[int, int] = {}
        self.peak_bytes: dict[int, int] = {}
        self.allocs: dict[int, tuple[int, int]] = {}
        self.next_ptr = 0x10000
        self.released: list[int] = []
        self.calls: list[str] = []

    def _enter(self, name: str) -> None:
        with self.lock:
            self.calls.append(name)
        if name in self.errors:
            raise CudaError(name, self.errors[name])

    def _dev(self) -> dict[str, Any]:
        return dict(self.devices[self.local.ordinal])

    def _work(self, seconds: float) -> None:
        noise = 1.0 + (self.rng.gauss(0.0, self.jitter) if self.jitter else 0.0)
        self.local.clock = getattr(self.local, "clock", 0.0) + seconds * max(noise, 0.01)

    def cuDeviceGetCount(self) -> int:
        self._enter("cuDeviceGetCount")
        return len(self.devices)

    def cuDeviceGet(self, ordinal: int) -> int:
        self._enter("cuDeviceGet")
        if not 0 <= ordinal < len(self.devices):
            raise CudaError("cuDeviceGet", "CUDA_ERROR_INVALID_DEVICE")
        return ordinal

    def cuDeviceGetPCIBusId(self, dev: int) -> str:
        self._enter("cuDeviceGetPCIBusId")
        return str(self.devices[dev]["pci_bus_id"])

    def cuDeviceGetAttribute(self, attribute: str, dev: int) -> int:
        self._enter("cuDeviceGetAttribute")
        return int(self.devices[dev].get("sms", 132))

    def cuDevicePrimaryCtxRetain(self, dev: int) -> int:
        self._enter("cuDevicePrimaryCtxRetain")
        return dev

    def cuDevicePrimaryCtxRelease(self, dev: int) -> None:
        self._enter("cuDevicePrimaryCtxRelease")
        with self.lock:
            self.released.append(dev)

    def cuCtxSetCurrent(self, ctx: int) -> None:
        self._enter("cuCtxSetCurrent")
        self.local.ordinal = ctx

    def cuCtxSynchronize(self) -> None:
        self._enter("cuCtxSynchronize")

    def cuStreamCreate(self) -> str:
        self._enter("cuStreamCreate")
        return "stream"

    def cuStreamSynchronize(self, stream: Handle) -> None:
        self._enter("cuStreamSynchronize")

    def cuStreamDestroy(self, stream: Handle) -> None:
        self._enter("cuStreamDestroy")

    def cuEventCreate(self) -> dict[str, float]:
        self._enter("cuEventCreate")
        return {"t": 0.0}

    def cuEventRecord(self, event: dict[str, float], stream: Handle) -> None:
        self._enter("cuEventRecord")
        event["t"] = getattr(self.local, "clock", 0.0)

    def cuEventSynchronize(self, event: Handle) -> None:
        self._enter("cuEventSynchronize")

    def cuEventElapsedTime(self, start: dict[str, float], end: dict[str, float]) -> float:
        self._enter("cuEventElapsedTime")
        return (end["t"] - start["t"]) * 1000.0

    def cuEventDestroy(self, event: Handle) -> None:
        self._enter("cuEventDestroy")

    def cuMemAlloc(self, nbytes: int) -> int:
        self._enter("cuMemAlloc")
        ordinal = self.local.ordinal
        with self.lock:
            ptr = self.next_ptr
            self.next_ptr += nbytes + 0x1000
            self.allocs[ptr] = (ordinal, nbytes)
            self.live_bytes[ordinal] = self.live_bytes.get(ordinal, 0) + nbytes
            self.peak_bytes[ordinal] = max(self.peak_bytes.get(ordinal, 0), self.live_bytes[ordinal])
        return ptr

    def cuMemFree(self, ptr: int) -> None:
        self._enter("cuMemFree")
        with self.lock:
            ordinal, nbytes = self.allocs.pop(ptr)
            self.live_bytes[ordinal] -= nbytes

    def cuMemAllocHost(self, nbytes: int) -> int:
        self._enter("cuMemAllocHost")
        return 0x7F0000000000 + nbytes

    def cuMemFreeHost(self, ptr: int) -> None:
        self._enter("cuMemFreeHost")

    def cuMemsetD32Async(self, ptr: int, value: int, count: int, stream: Handle) -> None:
        self._enter("cuMemsetD32Async")
        self._work(count * 4 / (float(self._dev()["d2d_gbps"]) * 1e9))

    def cuMemcpyDtoDAsync(self, dst: int, src: int, nbytes: int, stream: Handle) -> None:
        self._enter("cuMemcpyDtoDAsync")
        self._work(2 * nbytes / (float(self._dev()["d2d_gbps"]) * 1e9))   # read + write

    def cuMemcpyHtoDAsync(self, dst: int, src: int, nbytes: int, stream: Handle) -> None:
        self._enter("cuMemcpyHtoDAsync")
        self._work(nbytes / (float(self._dev()["h2d_gbps"]) * 1e9))

    def cuMemcpyDtoHAsync(self, dst: int, src: int, nbytes: int, stream: Handle) -> None:
        self._enter("cuMemcpyDtoHAsync")
        self._work(nbytes / (float(self._dev()["d2h_gbps"]) * 1e9))

    def cuModuleLoadData(self, ptx: bytes) -> bytes:
        self._enter("cuModuleLoadData")
        return ptx

    def cuModuleGetFunction(self, module: bytes, name: str) -> str:
        self._enter("cuModuleGetFunction")
        if f".entry {name}(".encode() not in module:
            raise CudaError("cuModuleGetFunction", "CUDA_ERROR_NOT_FOUND")
        return name

    def cuModuleUnload(self, module: Handle) -> None:
        self._enter("cuModuleUnload")

    def cuLaunchKernel(self, fn: Handle, grid: int, block: int, args: list[tuple[str, Any]], stream: Handle) -> None:
        self._enter("cuLaunchKernel")
        iters = int(args[1][1])
        flops = 2.0 * self.fmas * iters * grid * block
        self._work(flops / (float(self._dev()["fp32_tflops"]) * 1e12) + 5e-6)   # + launch latency
