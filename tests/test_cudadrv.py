"""checks/cudadrv.Driver over a stand-in for `cuda.bindings.driver`: what the bindings answer, read right."""

from __future__ import annotations

import enum
import types

from slurmtools.checks.cudadrv import Driver


class _Result(enum.IntEnum):
    CUDA_SUCCESS = 0


def _driver(**calls: object) -> Driver:
    drv = Driver.__new__(Driver)      # no cuInit: the bindings' calls are the stand-in's
    drv.d = types.SimpleNamespace(CUresult=_Result, **calls)
    return drv


def test_the_bus_id_ends_at_the_first_nul_of_the_buffer() -> None:
    """cuda-bindings 13.3.1 on a real H200 answered the whole 32-byte buffer, b'0000:00:06.0\\x00' and spaces:
    read as '0000:00:06.0\\x00' the GPU was 'not visible to CUDA' and never probed."""
    drv = _driver(cuDeviceGetPCIBusId=lambda n, dev: (_Result.CUDA_SUCCESS, b"0000:00:06.0\x00" + b" " * 19))
    assert drv.cuDeviceGetPCIBusId(0) == "0000:00:06.0"
    drv = _driver(cuDeviceGetPCIBusId=lambda n, dev: (_Result.CUDA_SUCCESS, b"0000:3B:00.0"))
    assert drv.cuDeviceGetPCIBusId(0) == "0000:3B:00.0"
