"""Round 9's CUDA library printers (rules9-cudalib): what tests/data/kernel/printers/cudalib.tsv cannot say about the
rules it needed. The CUDA runtime's cudaGetErrorString() table behind user code's check macros (gpuErrchk's
"GPUassert: %s %s %d", CUDA by Example's "%s in %s at line %d"), the CUDA math libraries' status strings in JAX's, XLA's
and TensorFlow's words, nvJitLink's status names, and TensorRT refusing an engine built for another GPU.

Every line is a format string or status-table entry of the public source named in the rule's comment in
slurmtools/data/diagnosis_rules.toml, its conversions filled in by hand: none is copied from a log or from the field
corpus. A job's text never drains (trust job); the same printers' healthy lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # the runtime table's entries no earlier rule names, behind the check macros (cuda, error)
    ("GPUassert: invalid resource handle kernel.cu 341", "cuda", "error"),
    ("GPUassert: context is destroyed md_step.cu 411", "cuda", "error"),
    ("GPUassert: the hardware resources required to create MPS client have been exhausted lbm.cu 551", "cuda", "error"),
    ("GPUassert: operation would make the legacy stream depend on a capturing blocking stream src/solver.cu 593",
     "cuda", "error"),
    ("out of memory in ripple.cu at line 22", "cuda", "error"),
    ("invalid configuration argument in ripple.cu at line 29", "cuda", "error"),
    ("F tensorflow/core/common_runtime/gpu/gpu_util.cc:339] GPU sync failed", "cuda", "error"),
    # the math libraries' strings in the frameworks' words (cuda, error)
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: jaxlib/gpu/solver_kernels.cc:45: operation "
     "gpusolverDnCreate(&handle) failed: cuSolver internal error", "cuda", "error"),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: jaxlib/gpu/sparse_kernels.cc:55: operation "
     "gpusparseCreate(&handle) failed: the resource allocation failed", "cuda", "error"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: cuSolver allocation failed", "cuda", "error"),
    ("tensorflow.python.framework.errors_impl.InternalError: cuSolverDN call failed with status =7 [Op:Cholesky]",
     "cuda", "error"),
    ("cuda.bindings.nvjitlink.nvJitLinkError: ERROR_PTX_COMPILE (NVJITLINK_ERROR_PTX_COMPILE)", "cuda", "error"),
    ("cupy_backends.cuda.libs.cutensor.CuTensorError: CUTENSOR_STATUS_INSUFFICIENT_DRIVER", "cuda", "error"),
    ("Got cutlass error: Error Internal at: 212", "cuda", "error"),
    ("RuntimeError: Got CUTLASS error: Error Architecture Mismatch", "cuda", "error"),
    ("terminate called after throwing an instance of 'thrust::THRUST_200600_900_NS::system::system_error'",
     "cuda", "error"),
    # RMM's GPU pool: cuda, not the host memory its "MemoryError"/"bad_alloc" would say
    ("MemoryError: std::bad_alloc: out_of_memory: RMM failure at:/opt/conda/include/rmm/mr/device/"
     "pool_memory_resource.hpp:196: Maximum pool size exceeded", "cuda", "error"),
    # TensorRT's engine built elsewhere: cuda, not the GPFS lease its "please rebuild" used to read as
    ("[11/26/2026-10:11:12] [TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting "
     "compute 8.0 got compute 9.0, please rebuild.", "cuda", "error"),
]


def test_the_table_keeps_the_earlier_verdicts() -> None:
    """The check macros add a frame, not a verdict: the hardware words stay cuda_hardware's (reset the GPU) and the
    job's own faults stay application errors, as the earlier rules decide them in PyTorch's words."""
    ecc = diagnose(b"GPUassert: uncorrectable ECC error encountered main.cu 88")[0]
    assert (ecc.kind, ecc.action, ecc.details.get("rule")) == ("cuda", "reset_gpu", "cuda_hardware")
    nvlink = diagnose(b"GPUassert: uncorrectable NVLink error detected during the execution fft.cu 278")[0]
    assert nvlink.action == "reset_gpu"
    for line in (b"GPUassert: an illegal memory access was encountered kernel.cu 45",
                 b"GPUassert: device-side assert triggered kernel.cu 418",
                 b"an illegal memory access was encountered in ripple.cu at line 42"):
        top = diagnose(line)[0]
        assert (top.kind, top.category, top.action) == ("cuda", "application", "restart_app"), line


def test_the_new_rules_never_drain_even_as_the_kernels_lines() -> None:
    """A job's words are never a node fault, whatever envelope carries them."""
    for line in (b"Nov 26 10:11:12 gpu01 kernel: GPUassert: invalid resource handle kernel.cu 341",
                 b"[ 812.1] out of memory in ripple.cu at line 22",
                 b"[ 812.1] NVJITLINK_ERROR_INTERNAL"):
        assert not any(is_node_fault(f, None) for f in diagnose(line)), line


BENIGN_TWINS = [
    "cuDNN version: 90100",
    "I1126 10:11:12.123456  48213 cuda_dnn.cc:530] Loaded cuDNN version 90100",
    "CUDA available: True",
    "2026-11-26 10:11:12.123456: E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:1515] Unable to register "
    "cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered",
    "2026-11-26 10:11:12.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
    "dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file "
    "or directory",
    "Warp 1.3.0 initialized:",
    "[11/26/2026-10:11:12] [TRT] [W] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.6.0",
    # the frames' words without a failure: a .cu file named in a progress line, a cuFFT plan that was made
    "step 3 done in kernel.cu at line 20 of 40 (ok)",
    "cuFFT plan created for size 4096",
    "GPUassert",
    "CUTENSOR_STATUS_SUCCESS",
    "CUDA Driver Version         : 12040",
    "Detected 1 CUDA Capable device(s)",
]


globals().update(table_tests(other=FAULTS, twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))
