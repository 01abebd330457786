"""Benign lines of whole public logs that once raised a warning or worse: the sixth sweep (whole public logs none of
the earlier sweeps used: the Slurm output of MLPerf training v4.1, v5.0 and v5.1 runs on H100, H200, B200, GB200 and
GB300 systems of NVIDIA, Dell, Oracle, Azure, Lenovo, Supermicro, HPE, Lambda and other vendors, MI300X, MI325X and
MI350X runs over RCCL, TPU and workstation runs; docs/diagnosis.md). Each family's benign line, verbatim with its
source, stays below warning, in the kernel scan and in the job scan (the epilog reads a job's output through
diagnose_job_output), and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
MLPERF = f"{GH}/mlcommons"
V41 = f"{MLPERF}/training_results_v4.1/blob/b87b9e396f771345d4ef122ba33456304f15228d"
V50 = f"{MLPERF}/training_results_v5.0/blob/0fdc28f013256aea84fa36fdaf1e0fa46094b18c"
V51 = f"{MLPERF}/training_results_v5.1/blob/441d65f4445cd59687466533fd9f55399136e7a4"
ORACLE_H100 = f"{V41}/Oracle/results/128xBM.GPU.H100.8/llama2_70b_lora/result_0.txt"
ORACLE_H200 = f"{V50}/Oracle/results/8xBM.GPU.H200.8/retinanet/result_0.txt"
DELL_H200 = f"{V50}/Dell/results/2xXE9680Lx8H200-SXM-141GB/rgat/result_0.txt"
DELL_H200_1X = f"{V50}/Dell/results/1xXE9680Lx8H200-SXM-141GB/retinanet/result_3.txt"
ORACLE_H200_1X = f"{V50}/Oracle/results/1xBM.GPU.H200.8/llama2_70b_lora/result_2.txt"
MANGO_4N = f"{V50}/MangoBoost/results/MI300X-LLMBoost-GPUBoost-4node/llama2_70b_lora/result_0.txt"
MANGO_2N = f"{V51}/MangoBoost/results/MI300X-LLMBoost-GPUBoost-2node/llama2_70b_lora/result_0.txt"
RCCL_PATH = ("/longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_profiles/src/out/"
             "ubuntu-22.04/22.04/build/rccl/hipify/src/init.cc:1954")

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep6_*`)
BENIGN = [
    # NCCL's proxy service thread seeing its communicator's abort flag as the communicators are aborted at the
    # process's exit, after run_stop with "status": "success" (sweep6_nccl_proxy_abort_teardown, before nccl_error)
    (ORACLE_H100, "  0: GPU-94:2767293:2769466 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource"
                  " temporarily unavailable"),
    (ORACLE_H100, "  0: GPU-94:2767293:2769466 [0] proxy.cc:1497 NCCL WARN [Service thread] Could not receive type from"
                  " localRank 0, res=3, closed=0"),
    (ORACLE_H100, "  0: GPU-94:2767293:2769466 [0] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute"
                  " operation Close from rank 0, retcode 3"),
    (ORACLE_H200, "GPU-790:2765667:2766131 [3] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource"
                  " temporarily unavailable"),
    (ORACLE_H200, "GPU-761:88622:88986 [3] proxy.cc:1521 NCCL WARN [Proxy Service 51] Failed to execute operation Close"
                  " from rank 53, retcode 3"),
    (DELL_H200, "tnasnt5:2773519:2775242 [4] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Success"),
    (DELL_H200_1X, "tnasnt5:565699:566248 [7] proxy.cc:1497 NCCL WARN [Service thread] Could not receive type from"
                   " localRank 7, res=3, closed=0"),
    (ORACLE_H200_1X, "4: GPU-644:183015:188181 [4] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute"
                     " operation Close from rank 0, retcode 3"),
    # RCCL's MSCCL++ start-up check refusing the communicator, which goes on with RCCL's own algorithms
    # (sweep6_rccl_mscclpp_unavailable, before nccl_error)
    (MANGO_4N, f"ai1:152:1465 [6] {RCCL_PATH} NCCL WARN MSCCL++: Cannot enable MSCCL++; environment is not MSCCL"
               " compatible"),
    (MANGO_2N, f"mi300x-01:406:1404 [7] {RCCL_PATH} NCCL WARN MSCCL++: Cannot enable MSCCL++; environment is not MSCCL"
               " compatible"),
    # c10d unable to create a socket for an IPv6 address of the store's host (EAFNOSUPPORT), then the next address
    # (sweep6_c10d_socket_init_address_family, before nccl_error and the library fallback)
    (MANGO_4N, "[W501 04:31:23.777279412 socket.cpp:757] [c10d] The client socket cannot be initialized to connect to"
               " [ai1.mbk.ifra]:23456 (errno: 97 - Address family not supported by protocol)."),
    (MANGO_2N, "[W1008 17:14:10.176433920 socket.cpp:759] [c10d] The client socket cannot be initialized to connect to"
               " [::ffff:10.32.1.1]:23456 (errno: 97 - Address family not supported by protocol)."),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    # NCCL's proxy service: a real accept error, a peer's reset (ncclRemoteError), another operation or retcode, the
    # progress and poll failures
    ("gpu01:48213:48301 [0] NCCL WARN [Service thread] Accept failed Too many open files", "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Service thread] Could not receive type from localRank 2, res=6,"
     " closed=0", "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Service thread] Could not receive type from localRank 2, res=3,"
     " closed=1", "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank 3, retcode 3",
     "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Proxy Service 3] Failed to execute operation Close from rank 3, retcode 2",
     "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing"
     " connection", "nccl", "error"),
    ("gpu01:48213:48301 [0] NCCL WARN [Proxy Service] Poll failed: Interrupted system call", "nccl", "error"),
    # RCCL: a CUDA/HIP failure at init, MSCCL++ asked for in a build without it
    (f"ai1:152:1465 [6] {RCCL_PATH} NCCL WARN Cuda failure 'invalid device ordinal'", "nccl", "error"),
    (f"ai1:152:1465 [6] {RCCL_PATH} NCCL WARN MSCCL++: Feature not enabled. ENABLE_MSCCLPP must be defined at"
     " compile-time to enable this feature.", "nccl", "error"),
    # c10d: no address of the store's host connects
    ("torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of"
     " (localhost, 29400). The client socket cannot be initialized to connect to [localhost]:29400 (errno: 97 - Address"
     " family not supported by protocol).", "nccl", "error"),
]

# failures of the claimed families that no rule names: the library fallback still reports them
UNCLAIMED = [
    ("[W304 19:44:40.795037897 socket.cpp:767] [c10d] The client socket cannot be initialized to connect to"
     " [localhost]:29400 (errno: 1 - Operation not permitted).", "nccl"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [("gpu01:48213:48301 [0] NCCL WARN [Service thread] Could not receive type from localRank 2, res=6,"
               " closed=0", "nccl", False)]
