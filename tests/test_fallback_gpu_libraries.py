"""The library fallback for the GPU stack (data/subsystems.toml, round 8): a line of a job's output that names NCCL,
CUDA (its runtime, driver and math libraries) or NVML (and the tools and container hooks on it) with a failure word
it does not deny, and that no rule claims, is a warning of that kind, trust job (never a drain); the same libraries'
healthy chatter, found in public logs of healthy machines (sweep 3's files), stays silent."""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog
from slurmtools.diagnosis.faults import is_node_fault

SEVERE = {"warning", "error", "critical"}

FOUND = [
    ("cudaMemcpyAsync returned error 719 on stream 0x7f3a", "cuda"),
    ("[rank5]: cuMemAlloc_v2 failed with status 2 while growing the KV cache", "cuda"),
    ("0: CUBLAS_STATUS_EXECUTION_FAILED in matmul fallback path at step 1200", "cuda"),
    ("RuntimeError: NCCL communicator hit an unexpected failure during init", "nccl"),
    ("[1,3]<stderr>:ncclGroupEnd aborted after a peer disconnected", "nccl"),
    ("nvidia-container-cli: initialization error: nvml error: driver not loaded", "gpu_init"),
    ("pynvml.NVMLError_Unknown: Unknown Error while reading GPU 3's clocks", "gpu_init"),
    ("systemd-udevd[427]: Process '/usr/bin/nvidia-smi' failed with exit code 12.", "gpu_init"),
]

BENIGN = [
    # XLA registering its CUDA plugins twice in one process (TensorFlow and JAX both loaded): famous and harmless
    "2025-08-17 00:40:44.197201: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register "
    "cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
    # apt failing to reach NVIDIA's package repository: the URL names the library, the failure is the network's
    "Jan 25 12:17:40 IAS-1275 packagekitd[2557]: Failed to fetch "
    "https://nvidia.github.io/libnvidia-container/stable/deb/amd64/InRelease",
    # a program that recovers in its next words
    "[2026-08-01 23:37:38] Failed to get GPU memory capacity from nvidia-smi. Falling back to "
    "torch.cuda.mem_get_info(). Reported total GPU memory per device (MiB): [124546], using min: 124546 MiB.",
    "[W CUDAGuardImpl.h:118] Warning: CUDA warning: driver shutting down (function destroyEvent)",
    "[rank0]:[I1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:852] [PG ID 0 PG GUID 0 "
    "Rank 0] ProcessGroupNCCL initialization options: size: 16, global rank: 0, TIMEOUT(ms): 600000",
    "                          Whether to print warnings when CUDA registration fails",
    "CUDA Error: no error",
    "-> Unable to access previously installed symlink '/usr/lib/x86_64-linux-gnu/libnvidia-ml.so' (No such file or "
    "directory).",
    "gpu01:48213:48290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM, fallback failed, using SHM",
    "Okay, let's break down this NCCL test result for the `all_reduce_perf` benchmark.",
    "W1126 10:11:12.123456  48213 nvptx_compiler.cc:930] The NVIDIA driver's CUDA version is 12.2 which is older "
    "than the PTX compiler version 12.6.77, which may slow down compilation.",
]


@pytest.mark.parametrize(("line", "kind"), FOUND)
def test_a_gpu_librarys_failure_no_rule_claims_is_a_job_warning(line: str, kind: str) -> None:
    found = [f for f in diagnose(line.encode()) if f.severity in SEVERE]
    assert found and found[0].kind == kind, (line, found)
    assert all(f.trust in ("job", "syslog") and not is_node_fault(f, None) for f in found)
    assert [f.kind for f in joblog.scan([line]) if f.severity in SEVERE][:1] == [kind]


@pytest.mark.parametrize("line", BENIGN)
def test_a_gpu_librarys_healthy_line_stays_silent(line: str) -> None:
    assert not [f for f in diagnose(line.encode()) if f.severity in SEVERE], line
    assert not [f for f in joblog.scan([line]) if f.severity in SEVERE], line
