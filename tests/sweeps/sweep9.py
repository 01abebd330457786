"""Benign lines of whole public logs that once raised a warning or worse: the ninth sweep (whole public logs none of
the earlier sweeps used: the Slurm and container output of MLPerf training v2.0 and v2.1 submissions, MLPerf HPC
v1.0's CosmoFlow, DeepCAM and OpenCatalyst runs, MLPerf Storage v1.0's DLIO and data-generation logs;
docs/diagnosis.md).
Each family's benign line, verbatim with its source, stays below warning, in the kernel scan and in the job scan (the
epilog reads a job's output through diagnose_job_output), and its fault twin (the same printer reporting a failure)
is still found."""

from __future__ import annotations

GH = "https://github.com"
AZURE_RNNT = (f"{GH}/mlcommons/training_results_v2.0/blob/8437fbb78349aa3c3054aeccb1d47d2a315a80e7/Azure/results/"
              "ND96amsr_A100_v4_n16_pytorch/rnnt/result_0.txt")
HPE_DATAGEN = (f"{GH}/mlcommons/storage_results_v1.0/blob/64c2ce48578aabb20cff572c0495564d289e4955/Closed/HPE/"
               "generation_logs/resnet50_datagen.log")
UCX = "ib_mlx5_dv.c:437  UCX  WARN  mlx5dv_devx_obj_destroy"

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep9_*`)
BENIGN = [
    # NCCL falling back from CollNet (SHARP) to its point-to-point network on a fabric with no SHARP Aggregation
    # Manager: the SHARP plugin's sharp_coll_init() fails with -11, ncclTransportCollNetCheck() warns on local rank 0,
    # init.cc sets collNetSupport = 0 and returns ncclSuccess; the run reaches its target
    # (sweep9_nccl_collnet_sharp_fallback, before nccl_net)
    (AZURE_RNNT, "ip-0A23041A:46903:47492 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot "
                 "create SHArP job(-11)"),
    (AZURE_RNNT, "ip-0A230408:7276:7878 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot create "
                 "SHArP job(-11)"),
    (AZURE_RNNT, "ip-0A23041A:46903:47490 [0] transport.cc:253 NCCL WARN Cannot initialize CollNet, using "
                 "point-to-point network instead"),
    # UCX's mlx5 memory domain closing (uct_ib_mlx5_devx_md_close() -> uct_ib_mlx5_devx_cleanup_flush_mr()): the flush
    # MR's KSM mkey destroy answers EINVAL as the domain goes away, on every rank at the run's start and end; the DLIO
    # data generation finishes (sweep9_ucx_flush_dvmr_destroy_einval, before ucx_warning)
    (HPE_DATAGEN, f"[1724264439.862373] [c-lmo1017:396712:0]      {UCX}(flush_dvmr) failed: Invalid argument"),
    (HPE_DATAGEN, f"[1724265732.632794] [c-lmo1018:105563:0]      {UCX}(flush_dvmr) failed: Invalid argument"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule (the SHARP plugin's other init errors: the
# node's sharpd down, no trees; NCCL's IB transport losing a peer; UCX's warnings other than the flush MR's EINVAL)
FAULTS = [
    ("ip-0A23041A:46903:47492 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot connect to "
     "SHArPD(-8)", "nccl", "error"),
    ("ip-0A23041A:46903:47492 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: No available SHARP "
     "trees(-13)", "nccl", "error"),
    ("ip-0A23041A:46903:47492 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot create SHArP "
     "job(-11) on mlx5_ib0", "nccl", "error"),
    ("ip-0A23041A:46903:47492 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
     "10.1.1.3<35021> with status=12 opcode=0 len=0 vendor err 129 (Recv)", "nccl", "error"),
    # UCX: the flush MR's destroy with another errno (a device gone), another object's destroy, the MR's deregistration,
    # a device the node lacks
    (f"[1724264439.862373] [c-lmo1017:396712:0]      {UCX}(flush_dvmr) failed: Input/output error", "ib", "warning"),
    (f"[1724264439.862373] [c-lmo1017:396712:0]      {UCX}(QP) failed: Invalid argument", "ib", "warning"),
    ("[1724264439.862373] [c-lmo1017:396712:0]      ib_mlx5dv_md.c:2726 UCX  WARN  uct_ib_dereg_mr(flush_mr) failed: "
     "Invalid argument", "ib", "warning"),
    ("[1652985365.018980] [mlperf-measure3:243  :0]     ucp_context.c:964  UCX  WARN  network device 'mlx5_7:1' is not "
     "available, please use one or more of: 'ens81f1'(tcp), 'lo'(tcp)", "ib", "warning"),
]

# no failure of the claimed families reaches the subsystem fallback: nccl_net and ucx_warning name them all
UNCLAIMED: list[tuple[str, str]] = []

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [(FAULTS[0][0], "nccl", False), (FAULTS[3][0], "nccl", False), (FAULTS[4][0], "ib", False)]
