"""The fail-slow probe's measurements (checks/perf.py judges them): per GPU, through the CUDA driver's calls
(checks/cudadrv.py: the real driver, or `SimulatedDriver` in replays and tests), and NVML's readings meanwhile.

Bytes per second count what the copy moves: a device-to-device copy reads and writes each byte (2 x size), a
host copy moves it once. FLOPs: 2 per FMA.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from slurmtools.checks import system as sysmod

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from slurmtools.checks.cudadrv import Driver, Handle

    #: What a session frees on the way out: (the driver's free call, the handle it frees).
    Freed = list[tuple[Callable[[Handle], None], Handle]]

#: metric -> (kind, what, unit). Kind picks the margin.
METRICS: dict[str, tuple[str, str, str]] = {
    "d2d_gbps": ("bandwidth", "device-to-device copy", "GB/s"),
    "h2d_gbps": ("bandwidth", "host-to-device copy", "GB/s"),
    "d2h_gbps": ("bandwidth", "device-to-host copy", "GB/s"),
    "fp32_tflops": ("compute", "FP32 FMA", "TFLOPS"),
}
CLOCK_SM = sysmod.CLOCK_SM
GPU_IDLE = 0x1
#: FMA chains per thread and their unrolling in the kernel's loop: FMAs per thread per iteration.
CHAINS, UNROLL = 8, 4
FMAS_PER_ITER = CHAINS * UNROLL
BLOCK = 256
BLOCKS_PER_SM = 8


def fma_ptx() -> bytes:
    """The FP32 FMA kernel: CHAINS independent chains x = x * m + c per thread, UNROLL times per iteration,
    the sum stored (so nothing is optimised away). PTX, JIT-compiled by the driver for the GPU at hand."""
    xs = [f"%x{j}" for j in range(CHAINS)]
    init = "\n".join(f"    add.f32 %x{j}, %x0, 0f{0x3F800000 + 0x00800000 * j:08X};" for j in range(1, CHAINS))
    body = "\n".join(f"    fma.rn.f32 {x}, {x}, %m, %c;" for _ in range(UNROLL) for x in xs)
    total = "\n".join(f"    add.f32 %s, %s, {x};" for x in xs[2:])
    return f""".version 7.0
.target sm_70
.address_size 64
.visible .entry fma_loop(.param .u64 out, .param .u32 iters)
{{
    .reg .pred %p;
    .reg .u32 %i, %n, %t, %nt, %ct, %gid;
    .reg .u64 %ptr, %off;
    .reg .f32 %x<{CHAINS}>, %m, %c, %s;
    ld.param.u64 %ptr, [out];
    ld.param.u32 %n, [iters];
    mov.u32 %t, %tid.x;
    mov.u32 %nt, %ntid.x;
    mov.u32 %ct, %ctaid.x;
    mad.lo.u32 %gid, %ct, %nt, %t;
    cvt.rn.f32.u32 %x0, %gid;
{init}
    mov.f32 %m, 0f3F7FFFEF;
    mov.f32 %c, 0f3A83126F;
    mov.u32 %i, 0;
LOOP:
{body}
    add.u32 %i, %i, 1;
    setp.lt.u32 %p, %i, %n;
    @%p bra LOOP;
    add.f32 %s, %x0, %x1;
{total}
    cvt.u64.u32 %off, %gid;
    shl.b64 %off, %off, 2;
    add.u64 %ptr, %ptr, %off;
    st.global.f32 [%ptr], %s;
    ret;
}}
""".encode()


class Limits:
    """What one GPU's probe may take: SECONDS of measurements, MEMORY_MIB of GPU memory (copy buffers, the
    kernel's output), HOST_MIB of pinned host memory."""

    def __init__(self, seconds: float = 2.0, memory_mib: int = 2048, host_mib: int = 256) -> None:
        self.seconds = seconds
        self.memory_mib = memory_mib
        self.host_mib = host_mib

    @property
    def copy_bytes(self) -> int:
        """Each of the two device buffers: a quarter of the budget, at most 512 MiB."""
        return min(self.memory_mib // 4, 512) << 20

    @property
    def host_bytes(self) -> int:
        return min(self.host_mib, self.copy_bytes >> 20) << 20

    @property
    def per_measure(self) -> float:
        """Seconds for each of the four measurements (a fifth of the budget is left for set-up)."""
        return self.seconds * 0.8 / len(METRICS)


def _timed(drv: Driver, stream: Handle, start: Handle, end: Handle, op: Callable[[], None], nbytes: int,
           budget: float) -> tuple[float, float]:
    """Run OP once to warm up and size the run, then as often as fills BUDGET seconds: (GB/s, seconds)."""
    drv.cuEventRecord(start, stream)
    op()
    drv.cuEventRecord(end, stream)
    drv.cuEventSynchronize(end)
    once = max(drv.cuEventElapsedTime(start, end) / 1000, 1e-6)
    reps = max(1, min(1000, int(budget / once)))
    drv.cuEventRecord(start, stream)
    for _ in range(reps):
        op()
    drv.cuEventRecord(end, stream)
    drv.cuEventSynchronize(end)
    seconds = max(drv.cuEventElapsedTime(start, end) / 1000, 1e-9)
    return nbytes * reps / seconds / 1e9, once + seconds


def _fma(drv: Driver, stream: Handle, start: Handle, end: Handle, sms: int, out: Handle, budget: float) -> float:
    """FP32 TFLOPS of the FMA kernel on all SMs, sized to BUDGET seconds from a short first run."""
    module = drv.cuModuleLoadData(fma_ptx())
    try:
        fn = drv.cuModuleGetFunction(module, "fma_loop")
        grid = max(1, sms) * BLOCKS_PER_SM

        def launch(iters: int) -> float:
            drv.cuEventRecord(start, stream)
            drv.cuLaunchKernel(fn, grid, BLOCK, [("u64", out), ("u32", iters)], stream)
            drv.cuEventRecord(end, stream)
            drv.cuEventSynchronize(end)     # the real driver answers CUDA_ERROR_NOT_READY before the end event
            return max(float(drv.cuEventElapsedTime(start, end)) / 1000, 1e-9)

        # A first short launch (the module's lazy load, the clocks still idle) sizes a warm-up of a fifth of the
        # budget, which sizes the timed launch (the other four fifths): on a real H200 the probe's first FP32 figure
        # after idle was 10 % low without it (51.7 instead of 57.5 TFLOPS), the other nine identical.
        first = 256
        took = launch(first)
        iters = int(max(first, min(1 << 24, first * budget / 5 / took)))
        took = launch(iters)
        iters = int(max(first, min(1 << 24, iters * budget * 4 / 5 / took)))
        seconds = launch(iters)
        return 2.0 * FMAS_PER_ITER * iters * grid * BLOCK / seconds / 1e12
    finally:
        drv.cuModuleUnload(module)


@contextmanager
def _session(drv: Driver, ordinal: int) -> Iterator[tuple[int, Handle, Handle, Handle, Freed]]:
    """GPU ORDINAL's primary context made current, with a stream and two timing events: (SMs, stream, start, end,
    FREED). What the caller appends to FREED (allocations, modules) is freed too, in reverse, on the way out; the
    context is released whatever happened (a failure to free is swallowed: the error that matters is raised)."""
    dev = drv.cuDeviceGet(ordinal)
    ctx = drv.cuDevicePrimaryCtxRetain(dev)
    freed: Freed = []
    try:
        drv.cuCtxSetCurrent(ctx)
        sms = drv.cuDeviceGetAttribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", dev)
        stream = drv.cuStreamCreate()
        start, end = drv.cuEventCreate(), drv.cuEventCreate()
        freed += [(drv.cuStreamDestroy, stream), (drv.cuEventDestroy, start), (drv.cuEventDestroy, end)]
        yield sms, stream, start, end, freed
    finally:
        for free, what in reversed(freed):
            try:
                free(what)
            except Exception:  # noqa: BLE001 - freeing after a failed probe or load
                pass
        drv.cuDevicePrimaryCtxRelease(dev)


def measure(drv: Driver, ordinal: int, limits: Limits) -> dict[str, Any]:
    """One GPU's figures (CUDA device ORDINAL). Every allocation is freed, the primary context released."""
    t0 = time.monotonic()
    with _session(drv, ordinal) as (sms, stream, start, end, freed):
        size, hsize = limits.copy_bytes, limits.host_bytes
        a = drv.cuMemAlloc(size)
        freed.append((drv.cuMemFree, a))
        b = drv.cuMemAlloc(size)
        freed.append((drv.cuMemFree, b))
        out = drv.cuMemAlloc(max(1, sms) * BLOCKS_PER_SM * BLOCK * 4)
        freed.append((drv.cuMemFree, out))
        host = drv.cuMemAllocHost(hsize)
        freed.append((drv.cuMemFreeHost, host))
        drv.cuMemsetD32Async(a, 0x3F800000, size // 4, stream)
        budget = limits.per_measure
        d2d, _ = _timed(drv, stream, start, end, lambda: drv.cuMemcpyDtoDAsync(b, a, size, stream), 2 * size, budget)
        h2d, _ = _timed(drv, stream, start, end, lambda: drv.cuMemcpyHtoDAsync(a, host, hsize, stream), hsize, budget)
        d2h, _ = _timed(drv, stream, start, end, lambda: drv.cuMemcpyDtoHAsync(host, a, hsize, stream), hsize, budget)
        fp32 = _fma(drv, stream, start, end, sms, out, budget)
        drv.cuStreamSynchronize(stream)
        return {"d2d_gbps": round(d2d, 1), "h2d_gbps": round(h2d, 2), "d2h_gbps": round(d2h, 2),
                "fp32_tflops": round(fp32, 2), "sms": sms, "gpu_mib": (2 * size >> 20) + 1,
                "seconds": round(time.monotonic() - t0, 3)}


class Sampler:
    """NVML readings of the probed GPUs every INTERVAL seconds while the probe runs."""

    def __init__(self, system: sysmod.System, handles: dict[int, object], interval: float = 0.05) -> None:
        self.system, self.handles, self.interval = system, handles, interval
        self.samples: dict[int, list[dict[str, int]]] = {i: [] for i in handles}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="perf-sampler")

    def _read(self, h: object) -> dict[str, int]:
        nvml, out = self.system.nvml, {}
        for key, call, args in (("sm_mhz", "nvmlDeviceGetClockInfo", (CLOCK_SM,)),
                                ("power_mw", "nvmlDeviceGetPowerUsage", ()),
                                ("temperature", "nvmlDeviceGetTemperature", (sysmod.TEMPERATURE_GPU,)),
                                ("reasons", "nvmlDeviceGetCurrentClocksEventReasons", ()),
                                ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
                                ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", ())):
            try:
                out[key] = int(getattr(nvml, call)(h, *args))
            except self.system.NVMLError:
                pass
        return out

    def _loop(self) -> None:
        while True:
            for index, h in self.handles.items():
                self.samples[index].append(self._read(h))
            if self.stop.wait(self.interval):
                return

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)

    def summary(self, index: int) -> dict[str, Any]:
        rows = self.samples.get(index) or []
        busy = [r for r in rows if not r.get("reasons", 0) & GPU_IDLE] or rows

        def pick(key: str, how: Callable[[list[int]], int]) -> int | None:
            values = [r[key] for r in busy if key in r]
            return how(values) if values else None

        reasons = 0
        for r in busy:
            reasons |= r.get("reasons", 0)
        power = pick("power_mw", max)
        return {"samples": len(rows), "sm_mhz_min": pick("sm_mhz", min),
                "sm_mhz_median": pick("sm_mhz", lambda v: sorted(v)[len(v) // 2]),
                "power_w_max": power // 1000 if power else None,
                "temperature_max": pick("temperature", max), "clocks_event_reasons": reasons,
                "pcie_gen": pick("pcie_gen", max), "pcie_width": pick("pcie_width", max)}


def load(drv: Driver, ordinal: int, seconds: float, launch_s: float = 0.1) -> dict[str, Any]:
    """Keep GPU ORDINAL busy with the FMA kernel for SECONDS of GPU time (launches of about LAUNCH_S each, timed
    with events; wall time capped at 1.5 x SECONDS + 10 s), for the deep profile's stress. Frees what it took."""
    t0 = time.monotonic()
    with _session(drv, ordinal) as (sms, stream, start, end, freed):
        grid = max(1, sms) * BLOCKS_PER_SM
        out = drv.cuMemAlloc(grid * BLOCK * 4)
        freed.append((drv.cuMemFree, out))
        module = drv.cuModuleLoadData(fma_ptx())
        freed.append((drv.cuModuleUnload, module))
        fn = drv.cuModuleGetFunction(module, "fma_loop")

        def launch(iters: int) -> float:
            drv.cuEventRecord(start, stream)
            drv.cuLaunchKernel(fn, grid, BLOCK, [("u64", out), ("u32", iters)], stream)
            drv.cuEventRecord(end, stream)
            drv.cuEventSynchronize(end)
            return max(float(drv.cuEventElapsedTime(start, end)) / 1000, 1e-9)

        iters = 256
        busy = launch(iters)
        iters = int(max(256, min(1 << 24, iters * launch_s / busy)))
        launches, deadline = 1, t0 + seconds * 1.5 + 10
        while busy < seconds and time.monotonic() < deadline:
            busy += launch(iters)
            launches += 1
        return {"seconds": round(busy, 3), "launches": launches, "wall_s": round(time.monotonic() - t0, 3)}
