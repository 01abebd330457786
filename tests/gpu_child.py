"""A user program on a real GPU, for tests/test_gpu_real.py (run as a child process, through the CUDA driver API):

    python -m tests.gpu_child hold MIB   allocate MIB of GPU memory, print "ready", hold it until killed
    python -m tests.gpu_child fault      launch a one-instruction kernel that stores to address 0 (a user bug:
                                         the driver logs an MMU fault, Xid 31), print the error, exit 1
"""

from __future__ import annotations

import sys
import time

from slurmtools.checks.cudadrv import CudaError, Driver

#: st.global.u32 [0], 1: an illegal address, as a buggy kernel writes it.
FAULT_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry store_null()
{
    .reg .u64 %rd<2>;
    .reg .u32 %r<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def main(argv: list[str]) -> int:
    drv = Driver()
    dev = drv.cuDeviceGet(0)
    drv.cuCtxSetCurrent(drv.cuDevicePrimaryCtxRetain(dev))
    if argv[0] == "hold":
        ptr = drv.cuMemAlloc(int(argv[1]) << 20)
        drv.cuMemsetD32Async(ptr, 0, (int(argv[1]) << 20) // 4, 0)
        drv.cuCtxSynchronize()
        print("ready", flush=True)
        time.sleep(600)
        return 0
    stream = drv.cuStreamCreate()
    fn = drv.cuModuleGetFunction(drv.cuModuleLoadData(FAULT_PTX), "store_null")
    drv.cuLaunchKernel(fn, 1, 1, [], stream)
    try:
        drv.cuStreamSynchronize(stream)
    except CudaError as exc:
        print(f"RuntimeError: CUDA error: an illegal memory access was encountered ({exc.name})", flush=True)
        return 1
    print("the kernel did not fault", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
