"""Round 13's printers (rules13-frameworks), from their format strings: the training and serving frameworks a GPU
cluster's jobs run, where they report a GPU, communication, memory or node failure in words rounds 8 and 9 did not
enumerate: vLLM's V1 engine core, its executors and memory checks, V0's dead engine loop; SGLang's process
exceptions and watchdog; TensorRT-LLM's executor; Triton's Python stub; Ray's lost actors, workers and nodes and its
memory monitor; torchelastic's failure table, agent and rendezvous; ProcessGroupNCCL's flight-recorder signal;
DeepSpeed's pdsh runner; NVIDIA Resiliency Extension's rank monitor and straggler callback; Megatron-LM's rerun state
machine; XLA's coordination service and rendezvous; TensorFlow's collectives; JAX's CUDA plugin.

Every line is a format string of the public source named in the comment above it (vllm-project/vllm v0.6-v0.11,
sgl-project/sglang v0.4.9, NVIDIA/TensorRT-LLM v0.20.0, triton-inference-server r25.01, ray-project/ray 2.40.0,
pytorch/pytorch v2.5.0, deepspeedai/DeepSpeed v0.16.4, NVIDIA/nvidia-resiliency-ext v0.3.0, NVIDIA/Megatron-LM
core_r0.12, openxla/xla, tensorflow/tensorflow v2.17.0, jax-ml/jax v0.4.35) with its conversions filled in by hand,
not a line copied from a log or from the field corpus. tests/data/kernel/printers/frameworks.tsv checks the kind; this
file checks the severity, that a job's line never drains, the twins that must stay quiet, and linear time on hostile
lines.
"""

from __future__ import annotations

from .rule_cases import found_as, job_scan_below_warning, job_scan_finds, table_tests

# vLLM's engine core or a worker dying: the consequence of a cause on an earlier line (a CUDA error, GPU memory, NCCL)
# that other rules report, so the death itself is cuda at info (one collection's rules half holds one of these lines
# as a benign line of its log; see rules13_vllm_engine_dead)
ENGINE_DEATH = [
    # vllm/v1/engine/core.py run_engine_core: logger.exception("EngineCore failed to start." / "EngineCore encountered a
    # fatal error."); utils.py wait_for_engine_startup RuntimeError("Engine core initialization failed. See root cause
    # above. Failed core proc(s): %s"); core_client.py "Engine core proc %s died unexpectedly, shutting down client.";
    # exceptions.py EngineDeadError; async_llm.py "AsyncLLM output_handler failed."
    ("(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [core.py:708] EngineCore failed to start.", "cuda", "info"),
    ("(EngineCore_DP0 pid=413) ERROR 11-26 10:11:12 [core.py:710] EngineCore encountered a fatal error.", "cuda",
     "info"),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}", "cuda",
     "info"),
    ("ERROR 11-26 10:11:12 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down "
     "client.", "cuda", "info"),
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root "
     "cause.", "cuda", "info"),
    ("ERROR 11-26 10:11:12 [async_llm.py:480] AsyncLLM output_handler failed.", "cuda", "info"),
    # vllm/v1/executor/multiproc_executor.py: "Worker proc %s died unexpectedly, shutting down executor.", "WorkerProc
    # failed to start.", "WorkerProc hit an exception."; ray_executor_v2.py "RayWorkerProc rank=%s died unexpectedly,
    # ..."
    ("(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [multiproc_executor.py:154] Worker proc VllmWorker-3 died "
     "unexpectedly, shutting down executor.", "cuda", "info"),
    ("(Worker_TP3 pid=391) ERROR 11-26 10:11:12 [multiproc_executor.py:597] WorkerProc failed to start.", "cuda",
     "info"),
    ("(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [ray_executor_v2.py:464] RayWorkerProc rank=[3] died "
     "unexpectedly, shutting down executor.", "cuda", "info"),
    # v0.6 vllm/engine/async_llm_engine.py AsyncEngineDeadError, multiproc_worker_utils.py "Worker %s pid %s died, exit
    # code: %s", "Exception in worker %s while processing method %s."
    ("vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.", "cuda", "info"),
    ("ERROR 11-26 10:11:12 multiproc_worker_utils.py:116] Worker VllmWorkerProcess pid 48215 died, exit code: -9",
     "cuda", "info"),
    ("(VllmWorkerProcess pid=48215) ERROR 11-26 10:11:12 multiproc_worker_utils.py:233] Exception in worker "
     "VllmWorkerProcess while processing method init_device.", "cuda", "info"),
]


JOB_FAULTS = [
    # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: GPU memory too small for one request (error)
    ("ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (2.31 GiB). Try increasing `gpu_memory_utilization` or "
     "decreasing `max_model_len` when initializing the engine.", "cuda", "error"),
    # multiproc_executor.py collective_rpc TimeoutError("RPC call to %s timed out."); shm_broadcast.py MessageQueue
    ("TimeoutError: RPC call to execute_model timed out.", "nccl", "warning"),
    ("(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [shm_broadcast.py:466] No available shared memory broadcast block "
     "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work "
     "(e.g. compilation).", "nccl", "warning"),
    ("WARNING 11-26 10:11:12 shm_broadcast.py:396] No available block found in 60 second.", "nccl", "warning"),
    # vllm/platforms/__init__.py RuntimeError("Failed to infer device type"); pynccl_wrapper.py's library load
    ("RuntimeError: Failed to infer device type", "gpu_init", "warning"),
    ("ERROR 11-26 10:11:12 [pynccl_wrapper.py:306] Failed to load NCCL library from libnccl.so.2. It is "
     "expected if you "
     "are not running on NVIDIA/AMD GPUs. Otherwise, the nccl library might not exist, be corrupted or it does not "
     "support the current platform Linux-5.15.0-105-generic-x86_64-with-glibc2.35.", "nccl", "warning"),
    # sglang python/sglang/srt/managers: "Scheduler hit an exception: %s", "TpModelWorkerClient hit an exception: %s",
    # the SIGQUIT handler, engine.py "Rank %d scheduler is dead. ...", "Initialization failed. ..."; the watchdog
    ("[2026-11-26 10:11:12 TP3] Scheduler hit an exception: Traceback (most recent call last):", "cuda", "warning"),
    ("[2026-11-26 10:11:12 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):", "cuda",
     "warning"),
    ("[2026-11-26 10:11:12] Received sigquit from a child process. It usually means the child failed.", "cuda",
     "warning"),
    ("RuntimeError: Rank 0 scheduler is dead. Please check if there are relevant logs.", "cuda", "warning"),
    ("RuntimeError: Initialization failed. Please see the error messages above.", "cuda", "warning"),
    ("[2026-11-26 10:11:12 TP0] Watchdog timeout (self.watchdog_timeout=300)", "nccl", "warning"),
    ("[2026-11-26 10:11:12 TP2] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "nccl",
     "warning"),
    # TensorRT-LLM: batch_manager TLLM_CHECK, executor/proxy.py, mpiUtils.cpp MPICHECK; Triton python_backend's stub
    ("RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed to allocate memory for KV cache "
     "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:1421)", "cuda", "error"),
    ("RuntimeError: Executor worker returned error", "cuda", "warning"),
    ("[11/26/2026-10:11:12] [TRT-LLM] [E] Executor worker initialization error: Traceback (most recent call last):",
     "cuda", "warning"),
    ("[TensorRT-LLM][ERROR] Failed, MPI error /src/tensorrt_llm/cpp/tensorrt_llm/runtime/utils/mpiUtils.cpp:296 "
     "'MPI_ERR_OTHER: known error not in list'", "nccl", "warning"),
    ("E1126 10:11:12.123456 1 model_lifecycle.cc:654] \"failed to load 'vllm_model' version 1: Internal: Stub process "
     "'vllm_model_0_0' is not healthy.\"", "cuda", "warning"),
    # ray python/ray/exceptions.py, gcs_node_manager.cc, the raylet's worker-death error, Ray Train
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", "nccl", "warning"),
    ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
     "unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The "
     "process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The "
     "worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.", "nccl", "warning"),
    ("The actor is dead because its node has died. Node Id: 5ad7fa5dd64fc1fec7a82cceecabed8e5eb247ec97064bb50a1c2a11",
     "nccl", "warning"),
    ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the "
     "problem, check the logs for the dead worker.", "nccl", "warning"),
    ("ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task. Check "
     "python-core-worker-*.log files for more information.", "nccl", "warning"),
    ("2026-11-26 10:11:12,123 WARNING worker.py:1829 -- The node with node id: 5ad7 and address: 10.1.0.5 and node "
     "name: 10.1.0.5 has been marked dead because the detector has missed too many heartbeats from it.", "nccl",
     "warning"),
    ("ray.train.v2.api.exceptions.WorkerGroupError: Training failed due to worker errors:", "nccl", "warning"),
    # Ray's memory monitor: host memory (docs/diagnosis.md's oom row names Ray's 'running low on memory')
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "oom", "error"),
    ("Memory on the node (IP: 10.1.0.5, ID: 5ad7) where the task (task ID: c8ef, name=f, pid=48213, memory "
     "used=118.20GB) was running was 120.50GB / 125.80GB (0.957862), which exceeds the memory usage threshold of 0.95. "
     "Ray killed this worker (ID: 3c2f) because it was the most recently scheduled task.", "oom", "error"),
    # torchelastic: the agent, the rendezvous, the failure table (info: the ChildFailedError line is the warning)
    ("[2026-11-26 10:11:12,123] torch.distributed.elastic.agent.server.api: [ERROR] [default] Worker group failed",
     "nccl", "warning"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousStateError: The rendezvous state is corrupt. See inner "
     "exception for details.", "nccl", "warning"),
    ("train.py FAILED", "nccl", "info"),
    ("Root Cause (first observed failure):", "nccl", "info"),
    # ProcessGroupNCCL.cpp heartbeatMonitor; DeepSpeed's pdsh runner; NVRx's rank monitor and straggler callback
    ("[rank3]:[E1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1385] [PG ID 0 PG GUID "
     "0(default_pg) Rank 3] Observed flight recorder dump signal from another rank via TCPStore.", "nccl", "warning"),
    ("pdsh@gpu01: gpu02: ssh exited with exit code 1", "nccl", "warning"),
    ("[WARNING] [RankMonitorServer:34] Did not get subsequent heartbeat. Waited 171.92 seconds.", "nccl", "warning"),
    ("[WARNING] [RankMonitorServer:12] Did not get initial heartbeat. Waited 1800.00 seconds.", "nccl", "warning"),
    ("[NeMo W 2026-11-26 10:11:12 straggler_det_callback:195] STRAGGLER DETECTION WARNING: Some GPUs have worse "
     "relative performance. Affected ranks: [76, 13, 45]", "cuda", "warning"),
    ("[NeMo E 2026-11-26 10:11:12 straggler_det_callback:214] Detected stragglers. Terminating training...", "cuda",
     "warning"),
    # megatron/core/rerun_state_machine.py log_failure "Rank %d, node %s, device %d, iteration %d: %s"
    ("[rank3]: RuntimeError: Rank 3, node gpu02, device 3, iteration 1234: Unexpected result nan "
     "(message='found NaN in "
     "local grad norm for bucket #0 in backward pass before data-parallel communication collective')", "cuda",
     "warning"),
    ("[rank5]: Rank 5, node gpu03, device 5, iteration 1234: Possible persistent error!", "cuda", "warning"),
    ("Second rerun: unexpected result is not reproducible on a different GPU, therefore was likely incorrect", "cuda",
     "warning"),
    ("AssertionError: Rank 3: found NaN in local grad norm in backward pass before data-parallel communication "
     "collective. Device: 3, node: gpu02", "cuda", "warning"),
    # xla coordination_service.cc heartbeat timeout, rendezvous.cc (both generations); TensorFlow's collectives
    ("jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: Task /job:jax_worker/replica:0/task:3 heartbeat timeout. This "
     "indicates that the remote task has failed, got preempted, or crashed unexpectedly.", "nccl", "warning"),
    ("E1126 10:11:12.123456   48213 rendezvous.cc:100] [id=1] This thread has been waiting for `acquire "
     "clique for rank "
     "3; clique=devices=[4,5,6,7]; is_p2p=0; run_id=-1558191007` for 10 seconds and may be stuck. Expected 4 "
     "threads to join the rendezvous, but not all of them arrived on time.", "nccl", "warning"),
    ("E1126 10:11:12.123456   48213 rendezvous.cc:31] This thread has been waiting for 10 seconds and may be stuck:",
     "nccl", "warning"),
    ("E1126 10:11:12.123456   48213 rendezvous.cc:42] Termination timeout of 40 seconds exceeded. Exiting to ensure a "
     "consistent program state.", "nccl", "warning"),
    ("tensorflow.python.framework.errors_impl.CancelledError: Collective ops is aborted by: Cancelled: "
     "Collective op is "
     "aborted by another collective op. The error could be from a previous operation. Restart your program to reset.",
     "nccl", "warning"),
    ("2026-11-26 10:11:12.123456: E tensorflow/core/common_runtime/base_collective_executor.cc:249] "
     "BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Collective has timed out during execution.", "nccl",
     "warning"),
    ("tensorflow.python.framework.errors_impl.DeadlineExceededError: Barrier timed out. Barrier_id: "
     "CollectiveOpsBarrier::8. This usually happens because a task triggered the barrier too early or too slowly.",
     "nccl", "warning"),
    ("E1126 10:11:12.123456   48213 pjrt_stream_executor_client.cc:3067] Execution of replica 0 failed: "
     "RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB (2147483648B) on device ordinal 0", "cuda", "error"),
    ("RuntimeError: Unable to load cuDNN. Is it installed?", "cuda", "warning"),
]

ENVELOPED = [
    # the same printers as a systemd unit's journal, rsyslog, a Kubernetes CRI log and srun --label carry them
    ("Nov 26 10:11:12 gpu01 vllm[48213]: (EngineCore_DP0 pid=48301) ERROR 11-26 10:11:12 [core.py:708] EngineCore "
     "failed to start.", "cuda", "info"),
    ("2026-11-26T10:11:12.123456789Z stderr F ERROR 11-26 10:11:12 [core_client.py:564] Engine core proc "
     "EngineCore_DP0 died unexpectedly, shutting down client.", "cuda", "info"),
    ("Nov 26 10:11:12 gpu01 tritonserver[2211]: E1126 10:11:12.123456 2211 model_lifecycle.cc:654] \"failed to load "
     "'llama' version 1: Internal: Stub process 'llama_0_0' is not healthy.\"", "cuda", "warning"),
    ("Nov 26 10:11:12 gpu01 ray[48213]: ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing "
     "this task.", "nccl", "warning"),
    ("0: [WARNING] [RankMonitorServer:58] Did not get subsequent heartbeat. Waited 171.92 seconds.", "nccl", "warning"),
]

TWINS = [
    # the same printers' informational lines: start banners, KV-cache sizes, graceful shutdown, reports
    "INFO 11-26 10:11:12 [utils.py:845] Waiting for 1 local, 0 remote core engine proc(s) to start.",
    "(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [gpu_worker.py:298] Available KV cache memory: 58.12 GiB",
    "(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [kv_cache_utils.py:1087] GPU KV cache size: 476,080 tokens",
    "(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [gpu_model_runner.py:3480] Graph capturing finished in 12 secs, took "
    "0.51 GiB",
    "(EngineCore_DP0 pid=253) DEBUG 11-26 10:11:12 [core.py:700] EngineCore exiting.",
    "(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [multiproc_executor.py:558] Parent process exited, "
    "terminating worker",
    "INFO 11-26 10:11:12 multiproc_worker_utils.py:124] Killing local vLLM worker processes",
    "INFO 11-26 10:11:12 [launcher.py:44] Shutting down FastAPI HTTP server.",
    "[2026-11-26 10:11:12 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9.21 GB",
    "[2026-11-26 10:11:12 TP0] KV Cache is allocated. #tokens: 482311, K size: 29.44 GB, V size: 29.44 GB",
    "[2026-11-26 10:11:12] The server is fired up and ready to roll!",
    "[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: total: 79.10 GiB, "
    "available: 62.54 GiB",
    "[TensorRT-LLM][WARNING] Device 0 peer access Device 1 is not available.",
    "I1126 10:11:12.123456 1 model_lifecycle.cc:849] \"successfully loaded 'llama'\"",
    "(raylet) [2026-11-26 10:11:12,123 I 48213 48213] (raylet) node_manager.cc:1486: Raylet is shutting down "
    "gracefully.",
    "2026-11-26 10:11:12,123\tINFO worker.py:1654 -- Connecting to existing Ray cluster at address: 10.1.0.5:6379...",
    "  <NO_OTHER_FAILURES>",
    "I1126 10:11:12.123000 48213 torch/distributed/elastic/agent/server/api.py:900] [default] Detected 1 new "
    "nodes from "
    "group_rank=0; will restart worker group",
    "I1126 10:11:12.123000 48213 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1262] The node "
    "'gpu01_48213_0' has closed the rendezvous 'job42'.",
    "[2026-11-26 10:11:12,123] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
    "Attempted loss scale: 4294967296, reducing to 2147483648",
    "  Rank=389 Node=h100-004-074-012 Score=1.00",
    "First rerun: unexpected result is not reproducible within the tolerance",
    "E1126 10:11:12.123456   48213 rendezvous.cc:127] Thread is unstuck! Warning above was a false-positive. Perhaps "
    "the timeout is too short.",
    "I1126 10:11:12.123456   48213 coordination_service_agent.cc:613] Coordination agent has initiated Shutdown().",
    "I1126 10:11:12.123456   48213 gpu_helpers.cc:136] XLA backend allocating 63771361280 bytes on device 0 for "
    "BFCAllocator.",
    # TensorFlow's missing-GPU-library lines print on every CPU-only node that imports a GPU build (round 8's gpu.tsv)
    "2026-11-26 10:11:12.123456: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2343] Cannot dlopen some GPU "
    "libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use "
    "GPU.",
    "Skipping registering GPU devices...",
]


def test_a_dead_engine_among_its_banners_is_the_job_scans_finding() -> None:
    # a vLLM start log: banners, the cause, then the engine core's death; the job scan's first warning is the cause,
    # and the death alone (no cause printed) is recorded at info, never a warning
    finding = job_scan_finds([
        "INFO 11-26 10:11:12 [api_server.py:1839] vLLM API server version 0.11.0",
        "(EngineCore_DP0 pid=253) INFO 11-26 10:11:12 [gpu_worker.py:298] Available KV cache memory: 58.12 GiB",
        "(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB",
        "(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [core.py:708] EngineCore failed to start.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ], "cuda")
    assert finding.trust == "job" and finding.details.get("rule") == "cuda_application"
    job_scan_below_warning("(EngineCore_DP0 pid=253) ERROR 11-26 10:11:12 [core.py:708] EngineCore failed to start.")


def test_rays_node_out_of_memory_exit_is_oom_not_a_lost_worker() -> None:
    # the same ActorDiedError detail with Ray's memory monitor as the exit type: oom_slurm reads it before the
    # rules13 Ray rule placed ahead of segfault
    line = ("The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit "
            "detail: Task was killed due to the node running low on memory.")
    found_as(line, "oom", "error")


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "Engine core proc " + "E" * 100_000 + " died unexpectedly",
    "Worker " + "w" * 100_000 + " pid 1 died, exit code: 1",
    "Stub process '" + "s" * 100_000 + "' is not healthy",
    "This thread has been waiting for `" + "a" * 100_000 + "` for 10 seconds and may be stuck",
    "Task " + "/job:x" * 20_000 + " heartbeat timeout. This indicates that the remote task",
    "pdsh@" + "g" * 100_000 + ": gpu02: ssh exited with exit code 1",
    "iteration 1: Unexpected result " + "n" * 100_000 + " (message=",
    "a" * 100_000 + ".py FAILED",
]


globals().update(table_tests(other=ENGINE_DEATH + JOB_FAULTS + ENVELOPED, twins=TWINS, job_twins=TWINS,
                             unread=("rules13_", HOSTILE)))
