"""Round 7's GPU-stack printers (rules7-gpu), from their format strings: the NVIDIA driver's kernel-interface layer
(open-gpu-kernel-modules kernel-open/nvidia), nvidia-uvm, nvidia-drm/-modeset/-peermem, nvidia-persistenced; the CUDA
libraries' status codes and the frameworks' CUDA failures (PyTorch, CuPy, JAX/XLA, TensorFlow, Triton, pycuda,
llama.cpp); the distributed launchers and stores around NCCL (torchelastic, DeepSpeed, Horovod, Gloo, JAX's
coordination service, c10d); memory pressure as systemd and bash report it; the watchdogs' back traces; the CMCI storm;
rasdaemon's machine-check records; the GPU's power brake in nvidia-smi -q.

Every fault line below is a format string of the public source named in the comment above it (and in the rule's
comment in slurmtools/data/diagnosis_rules.toml), its conversions filled in by hand: no line is copied from a log or
from the field corpus. Each family has benign twins (the same printer's healthy or informational lines) that must stay
below warning; the job's and the daemons' lines never drain.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import never_drains, table_tests

FAULTS = [
    # ---- kernel-open/nvidia nv.c, nv-pci.c, os-interface.c: nv_printf(NV_DBG_ERRORS, "NVRM: ...") and NV_DEV_PRINTF's
    # "NVRM: GPU %04x:%02x:%02x.%x: " sentences without an RM function's name
    ("NVRM: SOC driver registration failed!", "gpu_init", "error"),
    ("NVRM: nv-cap-drv init failed.", "gpu_init", "error"),
    ("NVRM: GPU 0000:3b:00.0: Open failed as GPU is locked for unbind operation", "gpu_init", "error"),
    ("NVRM: Failed removal of device 0000:3b:00.0!", "gpu_init", "error"),
    ("NVRM: Memory add failed. base: 0x20000000000 size: 0x1780000000 ret: -22", "gpu_init", "error"),
    ("NVRM: GPU memory zone movable auto onlining failed!", "gpu_init", "error"),
    ("NVRM: Failing GPU memory onlining as the onlining zone is not movable. pa: 0x20000000000 size: 0x1780000000",
     "gpu_init", "error"),
    # ---- kernel-open/nvidia-uvm uvm_common.h: "nvidia-uvm: %s:%u %s[pid:%d] " + message; init failures (uvm.c,
    # uvm_global.c, uvm_gpu.c) and runtime errors (uvm_gpu_isr.c, uvm_channel.c, uvm_pmm_gpu.c)
    ("nvidia-uvm: uvm.c:1050 uvm_init[pid:1] uvm_gpu_init() failed: Unknown error", "gpu_init", "error"),
    ("nvidia-uvm: uvm.c:1098 uvm_init[pid:1] uvm init failed: -5", "gpu_init", "error"),
    ("nvidia-uvm: uvm_gpu.c:1290 init_gpu[pid:1234] Creating RM device failed: Timeout, GPU "
     "GPU-5e3f1c2a-1111-2222-3333-444455556666", "gpu_init", "error"),
    ("nvidia-uvm: uvm_gpu_isr.c:345 uvm_isr_top_half[pid:0] ECC error encountered, GPU "
     "GPU-5e3f1c2a-1111-2222-3333-444455556666", "gsp", "error"),
    ("nvidia-uvm: uvm_channel.c:1234 uvm_channel_check_errors[pid:99] NVLINK error encountered, GPU GPU-5e3f1c2a",
     "gsp", "error"),
    ("nvidia-uvm: uvm_channel.c:1210 uvm_channel_check_errors[pid:12] Fatal error: Unknown error (0x1d), GPU "
     "GPU-5e3f1c2a", "gsp", "error"),
    ("nvidia-uvm: uvm_pmm_gpu.c:2345 evict_root_chunk[pid:12] Stuck waiting for root chunk 0x40000000 to be unpinned, "
     "giving up", "gsp", "error"),
    # ---- kernel-open/nvidia-drm NV_DRM_DEV_LOG_ERR (DRM_ERROR "[nvidia-drm] [GPU ID 0x%08x] ..."): the device's load;
    # nvidia-modeset's "nvidia-modeset: ERROR: GPU:%d: ...", nvidia-peermem's error prints
    ("[drm:nv_drm_probe_devices [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00004100] Failed to register device",
     "gpu_init", "error"),
    ("[nvidia-drm] [GPU ID 0x00000100] Failed to allocate NvKmsKapiDevice", "gpu_init", "error"),
    ("[drm:nv_drm_atomic_commit [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to apply atomic "
     "modeset.  Error code: -22", "gsp", "warning"),
    ("nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress: 0x0000c67d:0 2:0:4048:4040", "gsp",
     "warning"),
    # (GPUDirect RDMA's bridge: read as the fabric's, kind ib, by the rdma printers' rule, which comes first; the free
    # callback's "detected invalid context" teardown race is info since round 11, its other errors stay warnings)
    ("nvidia-peermem nv_get_p2p_free_callback:127 ERROR nv_get_p2p_free_callback -- error -22 while calling "
     "nvidia_p2p_free_dma_mapping()", "ib", "warning"),
    # ---- NVIDIA/nvidia-persistenced: syslog(LOG_ERR, "Failed to open %s: %s", NVIDIA_CFG_LIB), syslog_device()'s
    # "device %04x:%02x:%02x.%x - failed to close.", "Failed to disable UVM Persistence mode: 0x%x"
    ("nvidia-persistenced[2281]: Failed to open libnvidia-cfg.so.1: libnvidia-cfg.so.1: cannot open shared object "
     "file: No such file or directory", "gpu_init", "warning"),
    ("nvidia-persistenced[2281]: device 0000:3b:00.0 - failed to close.", "gpu_init", "warning"),
    ("nvidia-persistenced[2281]: device 0000:3b:00.0 - Failed to disable UVM Persistence mode: 0x1f", "gpu_init",
     "warning"),
    # ---- the CUDA libraries' status enums and their callers' headers (PyTorch "cuDNN error: %s", "cuFFT error: %s",
    # "cusolver error: %s, when calling `%s`"; CuPy's CUBLASError/CuFFTError/CUSOLVERError/CURANDError/CuSparseError;
    # Triton's "Triton Error [CUDA]: %s"; NVRTC)
    ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", "cuda", "error"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous "
     "input.", "cuda", "error"),
    ("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR", "cuda", "error"),
    ("RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling `cusolverDnSgetrf( handle, m, n, "
     "dA, ldda, static_cast<float*>(dataPtr.get()), ipiv, info)`", "cuda", "error"),
    ("cupy.cuda.cufft.CuFFTError: CUFFT_EXEC_FAILED", "cuda", "error"),
    ("cupy_backends.cuda.libs.cusolver.CUSOLVERError: CUSOLVER_STATUS_INTERNAL_ERROR", "cuda", "error"),
    ("cupy_backends.cuda.libs.curand.CURANDError: CURAND_STATUS_LAUNCH_FAILURE", "cuda", "error"),
    ("cupy_backends.cuda.libs.cusparse.CuSparseError: CUSPARSE_STATUS_INTERNAL_ERROR", "cuda", "error"),
    ("nvrtc: error: NVRTC_ERROR_COMPILATION", "cuda", "error"),
    ("RuntimeError: Triton Error [CUDA]: invalid argument", "cuda", "error"),
    # PyTorch c10/cuda: "Unexpected error from cudaGetDeviceCount(). ... Error %d: %s", DeferredCudaCallError, the
    # caching allocator's NVML check; mmcv's "CUDA kernel failed : %s"; TensorFlow gpu_event_mgr.cc "Unexpected Event
    # status: %d"; pycuda "%s failed: %s"; llama.cpp ggml-cuda.cu "ggml_cuda_compute_forward: %s failed"
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non "
     "supported HW", "cuda", "error"),
    ("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && device < "
     "num_gpus INTERNAL ASSERT FAILED", "cuda", "error"),
    ('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":1154, please '
     "report a bug to PyTorch.", "cuda", "error"),
    ("CUDA kernel failed : no kernel image is available for execution on the device", "cuda", "error"),
    ("2019-10-01 10:00:00.123456: F tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:273] Unexpected Event "
     "status: 1", "cuda", "error"),
    ("pycuda._driver.LogicError: cuMemAlloc failed: not initialized", "cuda", "error"),
    ("ggml_cuda_compute_forward: MUL_MAT failed", "cuda", "error"),
    ("  current device: 0, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2400", "cuda", "error"),
    # a device-side assert as CUDA's device printf of assert() writes it
    ("../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: "
     "[5,0,0] Assertion `t >= 0 && t < n_classes` failed.", "cuda", "error"),
    ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [7,0,0], thread: [64,0,0] Assertion "
     '`-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.', "cuda", "error"),
    # GPU memory exhausted: CuPy memory.pyx, XLA's BFC allocator, TensorFlow, Triton's compiler
    ("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far: 0 bytes).",
     "cuda", "error"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4294967296 "
     "bytes.", "cuda", "error"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
     "shape[1024,1024,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
     "cuda", "error"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536.",
     "cuda", "error"),
    # ---- the launchers around NCCL: torchelastic api.py "failed (exitcode: %s) local_rank: %s (pid: %s) of binary:
    # %s", ChildFailedError and its "Signal %d (%s) received by PID %d"; DeepSpeed launch.py "{cmd} exits with return
    # code = {rc}"; Horovod operations.cc and stall_inspector.cc; Gloo's tcp/pair.cc; ProcessGroupGloo's
    # monitoredBarrier; XLA's coordination client; torchelastic's rendezvous errors
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "nccl", "warning"),
    ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1234) of binary: "
     "/usr/bin/python", "nccl", "warning"),
    ("  traceback : Signal 6 (SIGABRT) received by PID 1234", "nccl", "warning"),
    ("[2024-01-01 10:00:00,123] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
     "'--local_rank=0'] exits with return code = -6", "nccl", "warning"),
    ("[2021-03-11 01:54:57.532928: E /tmp/pip-install/horovod/common/operations.cc:525] Horovod background loop "
     "uncaught exception: [/tmp/pip-install/horovod/third_party/compatible_gloo/gloo/transport/tcp/pair.cc:575] "
     "Connection closed by peer [10.0.0.2]:54432", "nccl", "warning"),
    ("horovod.common.exceptions.HorovodInternalError: Broadcast is not supported with Join at this time.", "nccl",
     "warning"),
    ("[2024-01-01 10:00:00.123456: W horovod/common/stall_inspector.cc:107] One or more tensors were submitted to be "
     "reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
     "seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of "
     "ranks is submitting tensors, which will cause deadlock.", "nccl", "warning"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:12345",
     "nccl", "warning"),
    ("[E ProcessGroupGloo.cpp:138] Rank 0 successfully reached monitoredBarrier, but received errors while waiting for "
     "send/recv from rank 3. Please check rank 3 logs for faulty rank.", "nccl", "warning"),
    ("2024-01-01 10:00:00.123456: F external/xla/xla/pjrt/distributed/client.h:77] Terminating process because the "
     "coordinator detected missing heartbeats. This most likely indicates that another task died; see the other task "
     "logs for more details.", "nccl", "warning"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "nccl", "warning"),
    # NCCL's INFO lines that report a failure it works around (misc/socket.cc, net_ib's resiliency): evidence, info
    ("gpu01:1234:5678 [0] NCCL INFO Call to connect returned Connection refused, retrying", "nccl", "info"),
    ("gpu01:1234:5678 [0] NCCL INFO NET/IB: recv: Recovery for device 0 failed (recv comm=0x55d5c0a0)", "nccl", "info"),
    # torchelastic's exit barrier, the XLA coordination service's barrier; PyTorch without NCCL (distributed_c10d.py,
    # ProcessGroupNCCL.cpp)
    ("torch.distributed.elastic.agent.server.api:[ERROR] Error waiting on exit barrier. Elapsed: 300.0123 seconds",
     "nccl", "warning"),
    ("jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect", "nccl",
     "warning"),
    ("RuntimeError: Distributed package doesn't have NCCL built in", "nccl", "error"),
    ("RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "nccl", "error"),
    # c10d's store: Utils.hpp "Socket Timeout", TCPStore.cpp "Stop_waiting response is expected"
    ("RuntimeError: Socket Timeout", "nccl", "error"),
    ("torch.distributed.DistError: Socket Timeout", "nccl", "error"),
    ("RuntimeError: Stop_waiting response is expected", "nccl", "error"),
    # ---- memory: a worker killed by SIGKILL (torchelastic), systemd's unit.c/service.c/oomd words, bash's job report
    # (jobs.c "%s: line %d: %5d Killed %s"), mm/oom_kill.c out_of_memory()'s panic
    ("torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 1234) of binary: "
     "/usr/bin/python3", "oom", "warning"),
    ("  traceback : Signal 9 (SIGKILL) received by PID 1234", "oom", "warning"),
    ("systemd[1]: user@1000.service: A process of this unit has been killed by the OOM killer.", "oom", "error"),
    ("systemd[1]: slurmd.service: Failed with result 'oom-kill'.", "oom", "error"),
    ("systemd[1]: session-3.scope: systemd-oomd killed 12 process(es) in this unit.", "oom", "error"),
    ("systemd-oomd[812]: Considered 3 cgroups for killing, top candidates were:", "oom", "error"),
    ("/var/spool/slurmd/job00123/slurm_script: line 12:  1234 Killed                  python train.py", "oom",
     "warning"),
    ("Kernel panic - not syncing: System is deadlocked on memory", "oom", "error"),
    # the batch systems' memory-limit kills: Slurm's jobacct_gather (virtual memory), PBS/Torque's MOM, LSF, Grid Engine
    ("slurmstepd: error: Job 123 exceeded virtual memory limit (12582912 > 8388608), being killed", "oom", "error"),
    ("=>> PBS: job killed: mem job total 10485760 kb exceeded limit 8388608 kb", "oom", "error"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", "oom", "error"),
    ('job 1234.1 failed 100 : exceeds job hard limit "h_vmem" of queue "all.q@node01" (4.2G > limit:4.0G) - sending '
     "SIGKILL", "oom", "error"),
    # Open MPI's help-orterun.txt [orterun:proc-aborted-signal], srun's "%s: task(s) %s: Killed", ENOMEM in job output
    ("mpirun noticed that process rank 3 with PID 1234 on node gpu01 exited on signal 9 (Killed).", "oom", "warning"),
    ("srun: error: gpu01: tasks 0-3: Killed", "oom", "warning"),
    ("OSError: [Errno 12] Cannot allocate memory", "oom", "warning"),
    ("/bin/bash: fork: retry: Resource temporarily unavailable", "oom", "warning"),
    # ---- lib/nmi_backtrace.c and lockdep's held-lock list: evidence of a lockup or a hung task (info)
    ("Sending NMI from CPU 3 to CPUs 12:", "soft_lockup", "info"),
    ("NMI backtrace for cpu 12", "soft_lockup", "info"),
    ("Showing all locks held in the system:", "hung_task", "info"),
    ("Showing busy workqueues and worker pools:", "soft_lockup", "info"),
    ("Task dump for CPU 3:", "soft_lockup", "info"),
    ("rcu: blocking rcu_node structures (internal RCU debug):", "soft_lockup", "info"),
    # ---- APEI: ghes.c __ghes_panic()'s panic (a node fault), bert.c's records of the previous boot's error
    ("Kernel panic - not syncing: Fatal hardware error!", "mce", "critical"),
    ("BERT: Error records from previous boot:", "mce", "warning"),
    ("BERT: Total records found: 1", "mce", "warning"),
    # ---- arch/x86/kernel/cpu/mce: intel.c (before 6.8) and threshold.c (6.8+) CMCI storms
    ("mce: CMCI storm detected: switching to poll mode", "mce", "warning"),
    ("mce: CPU3 BANK7 CMCI storm detected", "mce", "warning"),
    # ---- rasdaemon ras-mce-handler.c report_mce_event(): "[CRIT]" for an uncorrected or deferred error, else "[ERROR]"
    ("rasdaemon[1234]: <...>-1234 [003] 1234.567890: mce_record: [CRIT] 2024-01-01 10:00:00 +0000 bank=1, status= "
     "bd80000000100134, mci=Uncorrected_error Error_enabled Processor_context_corrupt, cpu= 3", "mce", "error"),
    ("<...>-1234 [003] 1234.567890: mce_record: 2024-01-01 10:00:00 +0000 bank=4, status= be00000000800400, "
     "mci=Uncorrected_error, mca=Internal Timer error, cpu= 0", "mce", "error"),
    # ---- cuGetErrorString / cudaGetErrorString strings that name CUDA alone, in any program's check macro
    ("Cuda error in file 'kernel.cu' in line 12 : too many resources requested for launch.", "cuda", "error"),
    ("cudaCheckError() failed : invalid device function", "cuda", "error"),
    ("GPUassert: the launch timed out and was terminated main.cu 42", "cuda", "error"),
    ("error: the provided PTX was compiled with an unsupported toolchain.", "cuda", "error"),
    ("RuntimeError: system has unsupported display driver / cuda driver combination", "cuda", "error"),
    ("CUDA error: MPS client failed to connect to the MPS control daemon or the MPS server", "cuda", "error"),
    ("[ERROR] [cuda_helper.cpp:22] CUDA call failed with error 'invalid device ordinal'", "cuda", "error"),
    ("Error: CUDA error 2: out of memory", "cuda", "error"),
    # PyTorch's CUDA init warning, JAX's backend, the dynamic loader on a missing CUDA library, cuDNN's own dlopen error
    ("UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
     "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start.", "cuda", "error"),
    ("RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.", "cuda",
     "error"),
    ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", "cuda", "error"),
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file "
     "or directory", "cuda", "error"),
    # the driver API's CUDA_ERROR_OUT_OF_MEMORY is the GPU's memory (cuda), not Slurm's OUT_OF_MEMORY job state (oom)
    ("E0101 10:00:00.123 cuda_executor.cc:1234] could not allocate CUDA stream for context 0x1234: "
     "CUDA_ERROR_OUT_OF_MEMORY: out of memory", "cuda", "error"),
    ("State: OUT_OF_MEMORY (exit code 0)", "oom", "error"),
    # nvidia-smi's "WARNING: infoROM is corrupted at gpu %s" (the InfoROM fault DCGM reports, kind xid as dcgm_health)
    ("WARNING: infoROM is corrupted at gpu 0000:3B:00.0", "xid", "error"),
    # the RM's GFW boot wait with its GPU prefix (gpu_init's rule read it only without one)
    ("NVRM: GPU0 gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x0)", "gpu_init", "critical"),
    # cuBLAS/cuDNN/ptxas failures and CUDA availability in TensorFlow's, XLA's and PyTorch's own words
    ("tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(32, 784), "
     "b.shape=(784, 10), m=32, n=10, k=784", "cuda", "error"),
    ("tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution algorithm. This is probably "
     "because cuDNN failed to initialize, so try looking to see if a warning log message was printed above.", "cuda",
     "error"),
    ("InternalError: Dst tensor is not initialized.", "cuda", "error"),
    ("FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.", "cuda",
     "error"),
    ("E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.6.0 but source was "
     "compiled with: 8.9.4.  CuDNN library needs to have matching major version and equal or higher minor version.",
     "cuda", "error"),
    ("RuntimeError: GET was unable to find an engine to execute this computation", "cuda", "error"),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 9, 2) but found runtime version "
     "(8, 5, 0).", "cuda", "error"),
    ("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.", "cuda",
     "error"),
    ("AssertionError: Torch not compiled with CUDA enabled", "cuda", "error"),
    # ---- old kernels' MCE kill line (mcheck/mce.c), the x86 NMI handler's hardware reasons (arch/x86/kernel/nmi.c)
    ("MCE: Killing python3:1234 due to hardware memory corruption fault at 7f12345678", "mce", "error"),
    ("Uhhuh. NMI received for unknown reason 3d on CPU 3.", "mce", "error"),
    ("NMI: IOCK error (debug interrupt?) for reason 71 on CPU 0.", "mce", "error"),
    # ---- lib/show_mem.c: the OOM report's memory summary (evidence, info)
    ("Mem-Info:", "oom", "info"),
    # ---- rasdaemon's util/ras-mc-ctl --summary and mcelog's decode of a machine-check status
    ("\tUncorrected on DIMM Label(s): 'CPU_SrcID#0_Ha#0_Chan#0_DIMM#0' location: 0:0:0:-1 errors: 1", "mce", "error"),
    ("\tCorrected on DIMM Label(s): 'CPU_SrcID#0_Ha#0_Chan#0_DIMM#0' location: 0:0:0:-1 errors: 12", "mce", "info"),
    ("MCG status:RIPV MCIP", "mce", "info"),
    ("MCi_ADDR register valid", "mce", "info"),
    # ---- nvidia-smi's table: fields NVML could not read ("ERR!"), the header's unreadable CUDA version
    ("| N/A   ERR!  P0   ERR! / 300W |   1024MiB / 81559MiB |    ERR!      Default |", "gpu_init", "warning"),
    ("|   0  NVIDIA H100 80GB HBM3          On  | 00000000:3B:00.0 Off |                  ERR! |", "gpu_init",
     "warning"),
    ("| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: ERR!     |", "gpu_init",
     "warning"),
    # ---- nvidia-smi -q "Clocks Throttle Reasons" / "Clocks Event Reasons": the board's power brake
    ("        HW Power Brake Slowdown           : Active", "thermal", "warning"),
]


BENIGN_TWINS = [
    # the driver's everyday lines: its banners, a device it enables, persistence mode's deprecation note
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024",
    "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)  "
    "Fri Aug 16 21:39:22 UTC 2024",
    "nvidia 0000:3b:00.0: enabling device (0000 -> 0003)",
    "NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced "
    "instead.",
    "NVRM: GPU 0000:3b:00.0: UnbindLock acquired",
    "nv-caps-imex channel0 created. Make sure you are aware of the IMEX security model.",
    # nvidia-uvm's, nvidia-drm's and nvidia-modeset's banners
    "nvidia-uvm: Loaded the UVM driver, major device number 511.",
    "nvidia-uvm: Unloaded the UVM driver.",
    "[drm] [nvidia-drm] [GPU ID 0x00000100] Loading driver",
    "[drm] Initialized nvidia-drm 0.0.0 20160202 for 0000:3b:00.0 on minor 1",
    "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  550.54.14  Thu Feb 22 01:25:25 UTC "
    "2024",
    "nvidia-modeset: Allocated GPU:0 (GPU-4e7b3168-e136-eb9b-a86c-613b8e52234e) @ PCI:0000:01:00.0",
    # nvidia-persistenced at work
    "nvidia-persistenced[1234]: Started (1234)",
    "nvidia-persistenced[1234]: device 0000:3b:00.0 - persistence mode enabled.",
    "nvidia-persistenced[1234]: PID file unlocked.",
    "nvidia-persistenced[1234]: Shutdown (1234)",
    # the libraries' success codes, a clean CUDA check
    "cudnnStatus = CUDNN_STATUS_SUCCESS",
    "cublas status: CUBLAS_STATUS_SUCCESS",
    "cufft returned CUFFT_SUCCESS",
    "CUDA Error: no error",
    # the launchers at work: a worker that finished, a healthy rendezvous, DeepSpeed's clean exit
    "torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 seconds for "
    "other agents to finish.",
    "[2024-01-01 10:00:00,123] [INFO] [launch.py:351:main] Process 1234 exits successfully.",
    "[2024-01-01 10:00:00,123] [INFO] [launch.py:321:sigkill_handler] ['/usr/bin/python', 'train.py'] exits with "
    "return code = 0",
    "[2024-01-01 10:00:00.123456: I horovod/common/operations.cc:123] Horovod Initialized",
    # NCCL's INFO lines at work (a plugin it does not find, a variable it reads): no finding
    "gpu01:1234:5678 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
    "or directory No plugin found (libnccl-net.so), using internal implementation",
    "gpu01:1234:5678 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
    # a worker stopped by the job's cancellation or time limit (SIGTERM), not a failure of the collective run
    "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 0 (pid: 1234) of binary: "
    "/usr/bin/python3",
    "  traceback : Signal 15 (SIGTERM) received by PID 1234",
    # the OOM machinery's healthy notes
    "systemd-oomd[812]: Swap used (12.34%) is below threshold of 90.00%",
    "systemd[1]: user@1000.service: Deactivated successfully.",
    "/var/spool/slurmd/job00123/slurm_script: line 12:  1234 Done                    python train.py",
    # a task that ended by itself
    "srun: error: gpu01: task 3: Exited with exit code 1",
    # the watchdogs' and lockdep's setup lines
    "NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.",
    "watchdog: Disabling watchdog on nohz_full cores by default",
    # the machine-check and EDAC drivers' boot notes that hold an error word (mce/amd.c, ghes.c, skx_common.c)
    "mce: [Firmware Bug]: Your BIOS is not setting up LVT offset 0x2 for deferred error IRQs correctly.",
    "[Firmware Bug]: cpu 0, invalid threshold interrupt offset 1 for bank 4, block 0 (MSR00000413=0xd000000001000000)",
    "GHES: Generic hardware error source: 1 notified via SCI is not supported",
    "EDAC skx: Can't get tolm/tohm",
    "BERT: Total records found: 0",
    # the CMCI storm's end, rasdaemon's corrected records and its start
    "mce: CMCI storm subsided: switching to interrupt mode",
    "mce: CPU3 BANK7 CMCI storm subsided",
    "rasdaemon[1234]: <...>-1234 [003] 1234.567890: mce_record: [ERROR] 2024-01-01 10:00:00 +0000 bank=7, status= "
    "cc00008000010090, mci=Corrected_error, cpu= 3",
    "rasdaemon[1234]: rasdaemon: Listening to events for cpus 0 to 63",
    # a CUDA check that passed (error 0), the NMI watchdog's setup
    "CUDA error 0: no error",
    "CUDA failure: 0",
    # nvidia-smi's table on a healthy GPU (N/A: a field the GPU does not support)
    "| N/A   34C    P0    61W / 700W |      0MiB / 81559MiB |      0%      Default |",
    "| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: 12.4     |",
    # ras-mc-ctl on a clean host
    "No Memory errors.",
    # nvidia-smi -q's clock reasons when nothing slows the GPU
    "        HW Power Brake Slowdown           : Not Active",
    "        HW Slowdown                       : Not Active",
    "        SW Power Cap                      : Active",
]


NEVER_DRAIN = [
    "nvidia-persistenced[2281]: Failed to open libnvidia-cfg.so.1: No such file or directory",
    "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "systemd[1]: slurmd.service: Failed with result 'oom-kill'.",
    "rasdaemon[1234]: <...>-1234 [003] 1234.567890: mce_record: [CRIT] 2024-01-01 10:00:00 +0000 bank=1, status= "
    "bd80000000100134, mci=Uncorrected_error Processor_context_corrupt, cpu= 3",
    "        HW Power Brake Slowdown           : Active",
    "| N/A   ERR!  P0   ERR! / 300W |   1024MiB / 81559MiB |    ERR!      Default |",
    # a job's process that writes the driver's and the kernel's words under its own tag: never a node fault
    "Jan 11 09:52:01 gpu12 python[4242]: NVRM: SOC driver registration failed!",
    "Jan 11 09:52:01 gpu12 python[4242]: nvidia-uvm: uvm_gpu_isr.c:345 uvm_isr_top_half[pid:0] ECC error "
    "encountered, GPU GPU-5e3f1c2a",
    "Jan 11 09:52:01 gpu12 python[4242]: mce: CMCI storm detected: switching to poll mode",
]


KERNEL_LINES = [
    "NVRM: SOC driver registration failed!",
    "nvidia-uvm: uvm_gpu_isr.c:345 uvm_isr_top_half[pid:0] ECC error encountered, GPU GPU-5e3f1c2a",
    "[nvidia-drm] [GPU ID 0x00000100] Failed to allocate NvKmsKapiDevice",
    "mce: CMCI storm detected: switching to poll mode",
    "NMI backtrace for cpu 12",
    "Kernel panic - not syncing: System is deadlocked on memory",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def test_the_new_kernel_rules_investigate_and_never_drain() -> None:
    """The driver's kernel-interface, UVM and display errors say a GPU is in trouble, but not that the node must go:
    error or warning, investigate, never a node fault (the RM's XID, read by its own rule, decides that)."""
    for line in ("NVRM: GPU memory zone movable auto onlining failed!",
                 "nvidia-uvm: uvm_gpu_isr.c:345 uvm_isr_top_half[pid:0] ECC error encountered, GPU GPU-5e3f1c2a",
                 "nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress: 0x0000c67d:0 2:0:4048:4040",
                 "mce: CMCI storm detected: switching to poll mode"):
        findings = diagnose(line.encode())
        assert findings[0].action == "investigate", line
        assert not is_node_fault(findings[0], None), line


def test_the_fatal_hardware_error_panic_takes_the_node_out() -> None:
    """ghes.c panics on a fatal record from the firmware: the kernel's own line, a node fault (drain), as the fatal
    machine check; under a job's own syslog tag the same words are never one."""
    findings = diagnose(b"[  812.1] Kernel panic - not syncing: Fatal hardware error!")
    assert is_node_fault(findings[0], None)
    never_drains("Jan 11 09:52:01 gpu12 python[4242]: Kernel panic - not syncing: Fatal hardware error!")


def test_nccls_info_lines_without_a_failure_give_no_finding() -> None:
    """Only an INFO line that reports a failure is evidence; NCCL's other INFO lines stay ignored."""
    assert diagnose(b"gpu01:1234:5678 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.") == []
    assert diagnose(b"gpu01:1234:5678 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read") == []


def test_an_rm_function_print_is_not_taken_for_the_kernel_interface_layer() -> None:
    """A sentence that begins with `GPUn` is the RM's (NV_PRINTF always names its function): it stays the subsystem
    fallback's, so the kernel-interface rule reads only the kernel-interface layer's own sentences."""
    findings = diagnose(b"NVRM: GPU0 the frobnicator went away and failed")
    assert findings[0].details.get("unrecognised") is True


def test_a_worker_killed_by_sigkill_is_memory_and_its_cause_outranks_the_launchers_word() -> None:
    """A job's output with the OOM kill and torchelastic's summary: the summary says a rank is gone (a warning), the
    kernel's or the caching allocator's error says why, and that error comes first."""
    job = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"]
    findings = diagnose(b"", job_lines=job)
    assert findings[0].kind == "cuda" and findings[0].severity == "error"
    assert any(f.kind == "nccl" and f.severity == "warning" for f in findings)
