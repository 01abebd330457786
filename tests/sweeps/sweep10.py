"""Benign lines of whole public logs that once raised a warning or worse: the tenth sweep (whole public logs none of
the earlier sweeps used: MLPerf inference v4.1's loadgen detail logs, power logs and harness output (AMD MI300X,
NVIDIA, Dell, Google, Intel, Red Hat OpenShift, Neural Magic's vLLM and other submissions, ConnectTech's Jetson AGX
Orin), MLPerf inference v6.0's run output (AMD's 94xMI355X, Google's Dynamo + vLLM, Lambda's Slurm jobs, Supermicro,
QCT), MLPerf HPC v0.7's and training v1.0's Slurm output, nccl-tests and NCCL debug logs, vLLM and llama.cpp servers
on ROCm and CUDA, an SGLang run on Ascend NPUs, rocminfo, lspci and nvidia-smi output; docs/diagnosis.md).
Each family's benign line, verbatim with its source, stays below warning, in the kernel scan and in the job scan (the
epilog reads a job's output through diagnose_job_output), and its fault twin (the same printer reporting a failure)
is still found."""

from __future__ import annotations

GH = "https://github.com"
DYNAMO = (f"{GH}/gbeezybez/inference_results_v6.0/blob/232fbf90fceb1d55b633030556fb02deddb4517b/closed/Google/src/"
          "qwen3-vl-235b-a22b/vllm/output/mlperf_log_dynamo.vllm.stderr.rank{}.txt")
ORIN = (f"{GH}/mlcommons/inference_results_v4.1/blob/198fc46799b3328b36ee4bcbdebfa2db5a8e6183/closed/ConnectTechInc/"
        "mlperf.log")
SHM = ("No available shared memory broadcast block found in 60 seconds. This typically happens when some processes "
       "are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).")
NUMA = "nvidia-smi command exists but failed to execute - Ignoring NUMA detection."
CAPTURE = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):"
BAR = "\u2588" * 8 + "\u2589"
TAIL = "\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mshm_broadcast.acquire_read\x1b[0m\x1b[2m:\x1b[0m " + SHM

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep10_*`)
BENIGN = [
    # vLLM's shared-memory broadcast reader (shm_broadcast.py MessageQueue.acquire_read(), INFO every 60 s of waiting)
    # written into the worker's tqdm bar of CUDA graph capture: the reader waited while the workers captured graphs,
    # and the capture goes on to 157/157 (sweep10_vllm_shm_broadcast_wait_in_graph_capture, before
    # rules13_vllm_rank_stall); the ANSI colours of Dynamo's tracing formatter as the file has them, the segment after
    # tqdm's last carriage return (the file's line holds the bar's earlier redraws, each ending in \r)
    (DYNAMO.format(0),
     f"{CAPTURE}  89%|{BAR} | 140/157 [00:58<00:06,  2.68it/s]\x1b[2m2026-02-12T23:08:32.780151Z{TAIL}"),
    (DYNAMO.format(1),
     f"{CAPTURE}  90%|{BAR} | 141/157 [00:58<00:06,  2.63it/s]\x1b[2m2026-02-12T23:08:33.261381Z{TAIL}"),
    # NVIDIA's MLPerf inference harness (code/common/systems/systems.py get_numa_info()): `nvidia-smi topo -m` fails
    # on a Jetson AGX Orin's integrated GPU, the harness runs unpinned and the runs complete
    # (sweep10_mlperf_harness_numa_probe_skipped, before unrecognised)
    (ORIN, f"[2024-07-25 21:46:47,784 systems.py:174 WARNING] {NUMA}"),
    (ORIN, f"[2024-07-26 09:24:06,938 systems.py:174 WARNING] {NUMA}"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule (the broadcast wait on its own line or
# after another progress bar: a hung rank, a dead worker; the RPC timeout of a real stall; nvidia-smi's own failure)
FAULTS = [
    (f"(EngineCore_DP0 pid=481282) INFO 03-16 00:51:10 [shm_broadcast.py:542] {SHM}", "nccl", "warning"),
    ("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:30<00:30, 30.0s/it](EngineCore_DP0 pid=336) "
     f"INFO 12-29 13:12:50 [shm_broadcast.py:542] {SHM}", "nccl", "warning"),
    ("(EngineCore_DP0 pid=287050) ERROR 02-27 15:59:56 [core.py:1080] TimeoutError: RPC call to sample_tokens timed "
     "out.", "nccl", "warning"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", "gpu_init", "error"),
]

# failures of the claimed family that no rule names: the subsystem fallback still reports them (the same harness's
# GPU and accelerator detection failing: `nvidia-smi --query-gpu` and `nvidia-smi -L`, what a dGPU node with a broken
# driver prints; the NUMA line with more text after it)
UNCLAIMED = [
    ("[2024-07-25 21:46:47,784 accelerator.py:284 WARNING] nvidia-smi command exists but failed to execute - Ignoring "
     "GPU detection.", "gpu_init"),
    ("[2024-07-25 21:46:47,784 accelerator.py:114 WARNING] nvidia-smi command exists but failed to execute - Ignoring "
     "accelerator detection.", "gpu_init"),
    (f"[2024-07-25 21:46:47,784 systems.py:174 WARNING] {NUMA} rc=255", "gpu_init"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [(FAULTS[0][0], "nccl", False), (FAULTS[2][0], "nccl", False), (UNCLAIMED[0][0], "gpu_init", True)]
