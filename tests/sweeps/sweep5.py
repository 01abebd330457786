"""Benign lines of whole public logs that once raised a warning or worse: the fifth sweep (whole public logs none of
the earlier sweeps used, most of them what GPU clusters print on a healthy day: the Slurm output of MLPerf training and
HPC runs on DGX, HGX, Azure, Dell and other A100/H100 clusters, Megatron-DeepSpeed runs, an EFA nccl-tests run, a
profiled training run, MPI codes over UCX; docs/diagnosis.md). Each family's benign line, verbatim with its source,
stays below warning, in the kernel scan and in the job scan (the epilog reads a job's output through
diagnose_job_output), and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
AWS = f"{GH}/aws-samples/awsome-distributed-training/blob"
EFA_NCCL_TESTS = f"{AWS}/e4f2f810e3e7985fbe41a25c0d6d8e52d1950745/3.test_cases/0.nccl-tests/slurm-104.out"
NSYS_RUN = (f"{AWS}/6f9d171f8a5abe8184083e52fcb1ac7addc02ad7/4.validation_and_observability/5.nsight/"
            "slurm-esm1nv-train-102.out")
MLPERF = f"{GH}/mlcommons"
AZURE_BERT = (f"{MLPERF}/training_results_v1.1/blob/ebe92f81f7a69255a3b0a907595d8be623d75ec6/Azure/results/"
              "nd96amsr_a100_v4_n8_ngc21.09_pytorch/bert/result_2.txt")
AZURE_RNNT = (f"{MLPERF}/training_results_v1.1/blob/ebe92f81f7a69255a3b0a907595d8be623d75ec6/Azure/results/"
              "nd96amsr_a100_v4_n16_ngc21.09_pytorch/rnnt/result_2.txt")
DELL_SSD = (f"{MLPERF}/training_results_v3.1/blob/d06288b2bd675a9d88e0e6181f5bb5626b71ec19/Dell/results/"
            "2xXE9680x8H100-SXM-80GB/ssd/result_0.txt")
RED_HAT = (f"{MLPERF}/training_results_v4.0/blob/6fe954378efe4a1a1bd665550b18ff8f26018def/Red_Hat/results/"
           "AS-8125GS-TNHR-RHEL9.4/llama2_70b_lora/result_3.txt")
CLEMSON = (f"{MLPERF}/hpc_results_v3.0/blob/dfea490b1e7b6545eb5c8b7a4ff9b05021cba098/Clemson/results/"
           "18xR750-2xA100-PCIe-80GB/strong/openfold/result_6.txt")

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep5_*`)
BENIGN = [
    # libfabric built with CUDA dlopen finding no libgdrapi.so: it runs without GDRCopy
    # (sweep5_libfabric_gdrcopy_dl_probe, before verbs_job_error)
    (EFA_NCCL_TESTS, " 2: libfabric:77186:1690073380::core:core:cuda_gdrcopy_hmem_init():191<warn> gdrcopy_dl_hmem_init"
                     " failed!"),
    # SHARP on a fabric without an Aggregation Manager: the collectives run without in-network reduction
    # (sweep5_sharp_no_aggregation_manager, before the library fallback)
    (AZURE_BERT, " 0: [ip-0A0C042E:0:22854 - context.c:601] ERROR sharp_create_job failed: No Aggregation Manager"
                 " (sharp_am) detected(-52)"),
    (AZURE_BERT, " 0: [ip-0A0C042E:0:22854 unique id 0] ERROR No Aggregation Manager (sharp_am) detected in"
                 " sharp_create_job."),
    (AZURE_RNNT, "[ip-0A0C04DD:0:47022 - context.c:601] ERROR sharp_create_job failed: No Aggregation Manager"
                 " (sharp_am) detected(-52)"),
    # c10d trying an address of the store's host that the socket cannot use (EINVAL, EAFNOSUPPORT), then the next
    # (sweep5_c10d_connect_address_family, before nccl_error)
    (DELL_SSD, "[W socket.cpp:663] [c10d] The client socket has failed to connect to [xe9680node30]:49258 (errno: 22 -"
               " Invalid argument)."),
    # torchelastic's agents losing the rendezvous store at the run's end (sweep5_rendezvous_teardown_warning, before
    # collective_peer_failure)
    (CLEMSON, "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node"
              " 'node0406.palmetto.clemson.edu_169243_0' has failed to send a keep-alive heartbeat to the rendezvous"
              " '2094' due to an error of type RendezvousConnectionError."),
    (CLEMSON, "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node"
              " 'node0406.palmetto.clemson.edu_169243_0' has failed to shutdown the rendezvous '2094' due to an error"
              " of type RendezvousConnectionError."),
    # PyTorch's API-usage warning when a process group names two timeouts, NeMo's start-up on every rank
    # (sweep5_c10d_pg_options_timeout_note, before the library fallback)
    (RED_HAT, "[NeMo W 2024-05-19 13:43:05 nemo_logging:349] /usr/local/lib/python3.10/dist-packages/torch/distributed/"
              "distributed_c10d.py:1507: UserWarning: pg_options._timeout was specified, but timeout kwarg has a"
              " default value that will always override it. \r"),
    # a row of Nsight Systems' NVTX range summary naming NCCL's teardown call (sweep5_nsys_nvtx_table_row, before
    # benign_noise and every rule after it)
    (NSYS_RUN, "19:       3.0       1107171719          2  553585859.5  553585859.5  533453311   573718408   28471723.1"
               "  PushPop  NCCL:ncclCommAbort                                                "),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    # GDRCopy that is there but fails, libfabric's memory registration
    ("libfabric:1612790:1751035971::core:core:cuda_gdrcopy_hmem_init():201<warn> gdr_pin_buffer failed: Invalid"
     " argument", "ib", "error"),
    # c10d: a refused or unreachable store, a bind that fails, the final timeout
    ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:49258 (errno: 113 - No route to"
     " host).", "nccl", "error"),
    ("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in"
     " use).", "nccl", "error"),
    ("torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to"
     " (10.0.0.1, 29500).", "nccl", "error"),
    # torchelastic: the exception itself, a rendezvous that timed out, a worker that failed
    ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed."
     " See inner exception for details.", "nccl", "warning"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "nccl", "warning"),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "nccl", "warning"),
    # c10d's own failure at process-group creation
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key:"
     " store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)", "nccl", "error"),
    # NCCL's own abort, outside a profiler's table
    ("NCCL communicator was aborted on rank 3. Original reason for failure was: NCCL error: ncclCommAbort", "nccl",
     "error"),
]

# failures of the claimed families that no rule names: the library fallback still reports them
UNCLAIMED = [
    ("ERROR Failed to connect to Aggregation Manager (sharp_am) in sharp_create_job.", "ib"),
    ("[NeMo W 2024-05-19 13:43:05 nemo_logging:349] /usr/local/lib/python3.10/dist-packages/torch/distributed/"
     "distributed_c10d.py:1507: UserWarning: new_group() timed out after 1800 seconds", "nccl"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [("torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to"
               " connect to (10.0.0.1, 29500).", "nccl", False)]
