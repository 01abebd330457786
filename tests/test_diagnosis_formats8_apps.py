"""Round 8's application printers (rules8-apps): what tests/data/kernel/printers/apps.tsv cannot say about the rules it
needed. How applications and the layers around them report a GPU failure in their own words: serving stacks (vLLM,
SGLang, TensorRT-LLM, Triton), training layers (Horovod, Ray, DeepSpeed, accelerate, bitsandbytes), frameworks' CUDA
layers (JAX, PaddlePaddle, ONNX Runtime, OpenCV), HPC codes (GROMACS, LAMMPS, AMBER, NAMD, RELION), offload runtimes
(libomptarget, OpenACC, Kokkos), CUDA-aware MPI (Open MPI, UCX), container runtimes and Kubernetes, pynvml, llama.cpp
and ollama.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's or a tool's text never
drains (trust job or syslog); the same printers' healthy lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # an application's CUDA failure (job output: cuda, error)
    ("ValueError: Free memory on device (10.52/79.19 GiB) on startup is less than desired GPU memory utilization "
     "(0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
     "cuda", "error"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "cuda", "error"),
    ("RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of "
     "memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)", "cuda", "error"),
    ("RuntimeError: No executable batch size found, reached zero.", "cuda", "error"),
    ("ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 1.000000GB memory on GPU 0, 78.500000GB "
     "memory has been allocated and available memory is only 256.000000MB.", "cuda", "error"),
    ("cv2.error: OpenCV(4.8.0) /io/opencv/modules/core/src/cuda/gpu_mat.cu:116: error: (-217:Gpu API call) out of "
     "memory in function 'allocate'", "cuda", "error"),
    ("ERROR: Insufficient memory on accelerator (src/GPU/gpu_extra.h:40)", "cuda", "error"),
    ("Cuda driver error 700 in call at file 'geryon/nvd_timer.h' in line 76.", "cuda", "error"),
    ("FATAL ERROR: CUDA error cudaStreamSynchronize(stream) in file src/CudaComputeNonbonded.C, function "
     "finishReductions, line 1321", "cuda", "error"),
    ("ERROR: CudaCustomAllocator out of memory", "cuda", "error"),
    ("call to cuMemAlloc returned error 2: Out of memory", "cuda", "error"),
    ("Failing in Thread:1", "cuda", "error"),
    ("Accelerator Fatal Error: call to cuStreamSynchronize returned error 700 (CUDA_ERROR_ILLEGAL_ADDRESS): Illegal "
     "address during kernel execution", "cuda", "error"),
    ("PreconditionNotMetError: The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured "
     "correctly. (error code is libcudnn.so: cannot open shared object file: No such file or directory)",
     "cuda", "error"),
    ("FATAL ERROR: No usable CUDA devices found.", "cuda", "error"),
    ("lightning_fabric.utilities.exceptions.MisconfigurationException: `CUDAAccelerator` can not run on your system "
     "since the accelerator is not available.", "cuda", "error"),
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "cuda", "error"),
    ("Libomptarget fatal error 1: failure of target construct while offloading is mandatory", "cuda", "error"),
    ("The call to cuIpcOpenMemHandle failed. This is an unrecoverable error and will cause the program to abort.",
     "cuda", "error"),
    ("[1700000000.123456] [gpu01:48213:0]    cuda_ipc_md.c:224  UCX  ERROR cuIpcOpenMemHandle() failed: invalid "
     "argument", "cuda", "error"),
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1610612736", "cuda", "error"),
    ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::_RayTrainWorker__execute.get_next() (pid=48213, "
     "ip=10.1.0.5)", "cuda", "error"),
    # the GPU not used (job output: cuda, warning)
    ("[2026-11-26 10:11:12,123] [WARNING] [real_accelerator.py:162:get_accelerator] Setting accelerator to CPU. If "
     "you have GPU or other accelerator, we were unable to detect it.", "cuda", "warning"),
    ("2026-11-26 10:11:12.123456789 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 "
     "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider.", "cuda", "warning"),
    # collectives in a wrapper's words (job output: nccl, error)
    ("horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: unhandled cuda error", "nccl", "error"),
    ("Failed, NCCL error /src/tensorrt_llm/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:445 'unhandled "
     "cuda error (run with NCCL_DEBUG=INFO for details)'", "nccl", "error"),
    ("ExternalError: Nccl error(1), unhandled cuda error.", "nccl", "error"),
    # NVML's "Driver Not Loaded" (the existing gpu_driver_mismatch rule: gpu_init, error, trust syslog)
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "gpu_init", "error"),
    ("slurmstepd: error: _nvml_init: Failed to initialize NVML: Driver Not Loaded", "gpu_init", "error"),
    # NVML, the driver or the container layer under a job (job output: gpu_init, warning)
    ("pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.", "gpu_init", "warning"),
    ("/opt/conda/lib/python3.11/site-packages/torch/cuda/__init__.py:654: UserWarning: Can't initialize NVML",
     "gpu_init", "warning"),
    ("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all", "gpu_init", "warning"),
    ("[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1", "gpu_init", "warning"),
    # a GPU found unhealthy by a checker (tool/daemon output: xid, warning)
    ("\tGPU 3: FAULTY", "xid", "warning"),
    ("pynvml.NVMLError_CorruptedInforom: Corrupted infoROM", "xid", "warning"),
]


BENIGN_TWINS = [
    "INFO 11-26 10:11:12 gpu_executor.py:122] # GPU blocks: 27845, # CPU blocks: 2048",
    "WARNING 11-26 10:11:12 custom_all_reduce.py:143] Custom allreduce is disabled because your platform lacks GPU P2P "
    "capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
    "[TensorRT-LLM][WARNING] Device 0 peer access Device 1 is not available.",
    "[2026-11-26 10:11:12,123] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto "
    "detect)",
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    "pynvml.NVMLError_NotSupported: Not Supported",
    "\tGPU 0: OK",
    "Result = PASS",
    "ggml_cuda_init: found 1 CUDA devices:",
    "Pe 0 physical rank 0 binding to CUDA device 0 on gpu01: 'NVIDIA A100-SXM4-80GB'  Mem: 81050MB  Rev: 8.0  "
    "PCI: 0:3b:0",
    "INFO:    Setting 'NVIDIA_VISIBLE_DEVICES=all' to emulate legacy GPU binding.",
    "GPU available: True (cuda), used: True",
    "2026-11-26 10:11:12.123456: I tensorflow/tsl/cuda/cudart_stub.cc:28] Ignore above cudart dlerror if you do not "
    "have a GPU set up on your machine.",
    "time=2026-11-26T10:11:12.123Z level=INFO source=gpu.go:347 msg=\"no compatible GPUs were discovered\"",
]


globals().update(table_tests(other=FAULTS, twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


def test_a_ucx_error_of_an_rdma_transport_stays_ib() -> None:
    """rules8_apps_ucx_cuda reads UCX's CUDA transports only: an rc/ud/ib transport's UCX ERROR stays an RDMA fault."""
    cuda = b"[1700000000.123456] [gpu01:48213:0]    cuda_copy_md.c:375  UCX  ERROR cuMemGetAddressRange(0x7f12) error: "
    assert diagnose(cuda + b"invalid device context")[0].kind == "cuda"
    rdma = (b"[1540086123.483352] [gpu01:14692:0]       rc_iface.c:1081 UCX  ERROR error modifying QP to RTR: Resource "
            b"temporarily unavailable")
    assert diagnose(rdma)[0].kind == "ib"


def test_the_accelerator_words_need_the_printers_sentence() -> None:
    """LAMMPS's accelerator errors are read with its "ERROR: ... " sentence; the words alone in a job's chatter are
    not a CUDA failure, and a gpu-burn row with another verdict is not FAULTY."""
    assert not [f for f in diagnose(b"loading accelerator for use in step 3") if f.kind == "cuda"]
    assert not [f for f in diagnose(b"GPU 3: FAULTY handling of input ignored") if f.kind == "xid"]


def test_a_paddle_library_that_is_not_cudas_is_not_a_cuda_failure() -> None:
    """Paddle's dynamic loader is read for the CUDA libraries only: a missing MKL is not a GPU failure."""
    line = (b"PreconditionNotMetError: The third-party dynamic library (libmklml_intel.so) that Paddle depends on is "
            b"not configured correctly. (error code is libmklml_intel.so: cannot open shared object file)")
    assert not [f for f in diagnose(line) if f.kind == "cuda"]


def test_the_new_rules_never_drain_even_as_the_kernels_lines() -> None:
    """An application's words are never a node fault, whatever envelope carries them."""
    for line in (b"Nov 26 10:11:12 gpu01 kernel: pynvml.NVMLError_GpuIsLost: GPU is lost",
                 b"[ 812.1] call to cuMemAlloc returned error 2: Out of memory",
                 b"[ 812.1] \tGPU 3: FAULTY"):
        assert not any(is_node_fault(f, None) for f in diagnose(line)), line
