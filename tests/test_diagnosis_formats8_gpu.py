"""Round 8's GPU-stack printers (rules8-gpu): what tests/data/kernel/printers/gpu.tsv cannot say about the rules it
needed. The frameworks' CUDA failures no rule read (PyTorch's NVRTC check, XLA's BFC allocator and cuBLAS handle, the
CUDA samples' deviceQuery), c10d's blocking-wait timeout and exit-time GIL hang, and DCGM's dcgm_errors.h messages for
memory, PCIe replays, NVML and CUDA.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's or a tool's text never
drains; the same printers' healthy lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # the frameworks' and samples' CUDA failures (job output: cuda, error)
    ("RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)", "cuda", "error"),
    ("W1126 10:11:12.123456  48213 bfc_allocator.cc:501] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
     "16.00GiB (rounded to 17179869184)requested by op ", "cuda", "error"),
    ("E1126 10:11:12.123456  48213 cuda_blas.cc:190] failed to create cublas handle: the resource allocation failed",
     "cuda", "error"),
    ("cudaGetDeviceCount returned 100", "cuda", "error"),
    # c10d's ProcessGroupNCCL (job output: nccl, error)
    ("torch.distributed.DistBackendError: [Rank 3] Work WorkNCCL(SeqNum=12345, OpType=ALLREDUCE, NumelIn=1, "
     "NumelOut=1, Timeout(ms)=600000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).", "nccl", "error"),
    ("[rank3]:[E1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1267] [PG ID 0 PG GUID "
     "0(default_pg) Rank 3] Could not acquire GIL within 300 ms on exit, possible GIL induced hang", "nccl", "error"),
    # other GPU libraries' macros (job output: cuda, error)
    ("[11/26/2026-10:11:12] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::127] Error Code 2: OutOfMemory "
     "(Requested size was 8589934592 bytes.)", "cuda", "error"),
    ("terminate called after throwing an instance of 'thrust::system::system_error'", "cuda", "error"),
    ("MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/conda/include/rmm/mr/device/"
     "cuda_memory_resource.hpp:60: cudaErrorMemoryAllocation out of memory", "cuda", "error"),
    ("mxnet.base.MXNetError: [10:11:12] src/storage/./pooled_storage_manager.h:161: cudaMalloc retry failed: out of "
     "memory", "cuda", "error"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
     "the engine.", "cuda", "error"),
    ("RuntimeError: /workspace/TransformerEngine/transformer_engine/common/gemm/cublaslt_gemm.cu:258 in function "
     "cublas_gemm: cuBLAS Error: the requested functionality is not supported", "cuda", "error"),
    # XLA's coordination agent (job output: nccl, warning)
    ("E1126 10:11:12.123456  48213 coordination_service_agent.cc:332] Polled an error from coordination service (this "
     "can be an error from this or another task).", "nccl", "warning"),
    # DCGM's messages (tool output: warning)
    ("More than 100 single-bit ECC error(s) detected in GPU 3 Volatile SBEs: 1042", "xid", "warning"),
    ("Detected 12 ecc_sbe_volatile_total for GPU 3", "xid", "warning"),
    ("Detected 120 ecc_sbe_volatile_total for GPU 3 which is above the threshold 100", "xid", "warning"),
    ("Detected 1 ecc_dbe_volatile_total for GPU 3", "xid", "warning"),
    ("Detected a miscompare failure in the L1 cache.", "xid", "warning"),
    ("60 or more retired pages have been detected in GPU 3. ", "xid", "warning"),
    ("Detected 9 pcie_replay_counter for GPU 3", "pcie", "warning"),
    ("Error calling NVML API nvmlDeviceGetHandleByIndex: Unknown Error", "gpu_init", "warning"),
    ("The number of devices NVML returns is different than the number of devices in /dev.", "gpu_init", "warning"),
    ("Cuda GPU 3 is no longer bound to a CUDA context...Aborting", "cuda", "warning"),
]


BENIGN_TWINS = [
    # DCGM's skips and its healthy result (dcgm_errors.h, dcgmi's tables)
    "The operation completed successfully.",
    "The memtest test is skipped for this GPU.",
    "Skipping test Memory because ECC is not enabled on GPU 3",
    "ECC Memory is not turned on or is unsupported. Skipping test.",
    "| Overall Health            | Healthy                                          |",
    # dcgmi diag's Warning row with DCGM_FR_CUDA_API_MSG (rules7-sel's reading: a Warning row, below warning)
    "| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |",
    # the frameworks' healthy banners around the same printers
    "W1126 10:11:12.123456  48213 nvptx_compiler.cc:930] The NVIDIA driver's CUDA version is 12.2 which is older than "
    "the PTX compiler version 12.6.77. Because the driver is older than the PTX compiler version, XLA is disabling "
    "parallel compilation, which may slow down compilation.",
    "[rank0]:[I1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:852] [PG ID 0 PG GUID 0 "
    "Rank 0] ProcessGroupNCCL initialization options: size: 16, global rank: 0, TIMEOUT(ms): 600000",
    "gpu01:48213:48213 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    # TensorRT's warning and info levels
    "[11/26/2026-10:11:12] [TRT] [W] CUDA lazy loading is not enabled. Enabling it can significantly reduce device "
    "memory usage and speed up TensorRT initialization.",
    "[11/26/2026-10:11:12] [TRT] [I] [MemUsageChange] Init CUDA: CPU +2, GPU +0, now: CPU 21, GPU 1213 (MiB)",
    # the driver's load banners and the Xid report's header (osapi.c, kernel_rc.c)
    "[    5.112345] nvidia-nvlink: Nvlink Core is being initialized, major device number 511",
    "[ 8812.004100] NVRM: GPU Board Serial Number: 1654123456789",
    "[ 8812.004113] NVRM: GPU at PCI:0000:3b:00: GPU-5e3f1c2a-1111-2222-3333-444455556666",
]


globals().update(table_tests(other=FAULTS, twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


def test_a_blocking_wait_on_another_collective_is_not_read_as_nccl_timeout() -> None:
    """The blocking-wait rule needs the WorkNCCL record: a job that prints the phrase about something else is not a
    collective's timeout."""
    findings = diagnose(b"my queue timed out in blocking wait")
    assert not [f for f in findings if f.kind == "nccl"]


def test_a_dcgm_count_of_another_field_is_not_memory() -> None:
    """DCGM's "Detected %ld %s for GPU %u" is read by the field's tag: an ECC tag is memory, the replay counter is
    PCIe, and another field (a thermal violation's) is not taken for either."""
    assert diagnose(b"Detected 1 ecc_dbe_volatile_total for GPU 3")[0].kind == "xid"
    assert diagnose(b"Detected 9 pcie_replay_counter for GPU 3")[0].kind == "pcie"
    assert not [f for f in diagnose(b"Detected 3 power_violation for GPU 3") if f.kind in ("xid", "pcie")]


def test_a_gpu_allocation_in_rmm_is_not_host_memory() -> None:
    """RMM's bad_alloc names CUDA's allocation error: the GPU's memory (cuda), read before the host-memory rule that
    takes `MemoryError` and `bad_alloc`; a host bad_alloc stays oom."""
    assert diagnose(b"MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /x/rmm.hpp:60: "
                    b"cudaErrorMemoryAllocation out of memory")[0].kind == "cuda"
    host = b"terminate called after throwing an instance of 'std::bad_alloc'  what():  std::bad_alloc"
    assert diagnose(host)[0].kind == "oom"


def test_the_new_rules_never_drain_even_as_the_kernels_lines() -> None:
    """DCGM's and the frameworks' words are never a node fault, whatever envelope carries them."""
    for line in (b"Nov 26 10:11:12 gpu01 kernel: Detected 1 ecc_dbe_volatile_total for GPU 3",
                 b"[ 812.1] cudaGetDeviceCount returned 100"):
        assert not any(is_node_fault(f, None) for f in diagnose(line)), line
