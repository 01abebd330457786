"""Round 21's rules from the rules halves' misses (lead21_* in slurmtools/data/diagnosis_rules.toml, and the earlier
rules a family was folded into): each family's lines in words the collections' rows do not quote (other devices,
drivers, values), the benign twins of the same printers, and the trust that keeps a job's or a tool's line from
draining a node. The collections' own rows are scored by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # amdgpu's init failures in DRM's tagged form, and a GPU its compute driver does not take
    ("[drm:amdgpu_device_init [amdgpu]] *ERROR* gpu post error!", "gpu_init", "error"),
    ("amdgpu 0000:0a:00.0: kfd not supported on this ASIC", "gpu_init", "warning"),
    # the SMB client's failures in any case, an NT status
    ("CIFS: VFS: \\\\nas01 smb2_get_sign_key: Could not find session 0x1a2b", "nfs", "warning"),
    ("CIFS: Status code returned 0xc0000205 STATUS_INSUFF_SERVER_RESOURCES", "nfs", "warning"),
    ("Status code returned 0xc00000d0 STATUS_REQUEST_NOT_ACCEPTED", "nfs", "warning"),
    # NICs: a VF's malicious-driver detection, ice refusing a queue configuration, a RoCE GID table, mlx5's command
    # failure wrapped over two lines
    ("i40e 0000:5e:00.1: Malicious Driver Detection event 0x02 on TX queue 17 PF number 0x01 VF number 0x05",
     "ib", "warning"),
    ("ice 0000:af:00.0: Trying to use more Tx queues (16), than were allocated (4)!", "ib", "warning"),
    ("infiniband mlx5_3: __ib_cache_gid_add: unable to add gid fe80:0000:0000:0000:1270:fdff:fe00:0001 error=-28",
     "ib", "warning"),
    ("mlx5_core 0000:b1:00.1: mlx5_cmd_check:810:(pid 3141):", "ib", "warning"),
    ("MODIFY_QP(0x502) op_mod(0x0) failed, status bad resource state(0x9), syndrome (0x3c2f1e), err(-22)", "ib",
     "warning"),
    # other GPUs: amdgpu's coredump path, i915's GuC interface at probe
    ("amdgpu 0000:c3:00.0: amdgpu: [drm] Check your /sys/class/drm/card2/device/devcoredump/data", "gpu_init",
     "warning"),
    ("i915 0000:03:00.0: [drm] *ERROR* GT1: Failed to retrieve hwconfig table: -EIO", "gpu_init", "warning"),
    # an uncorrected memory error met by a user-space access
    ("Uncorrected hardware memory error in user-access at 7f3c00a000", "mce", "error"),
]
OTHER_FAULTS = [
    # the NVIDIA module not built for the running kernel (dkms 3.1, old dkms's make, nvidia-installer, modpost,
    # conftest): a tool's line
    ("dkms autoinstall on 6.11.4-200.fc41.x86_64/x86_64 failed for nvidia-open(10)", "gpu_init", "warning"),
    ("'make' -j16 module SYSSRC=/lib/modules/6.1.0-9-amd64/build IGNORE_XEN_PRESENCE=1....(bad exit status: 2)",
     "gpu_init", "warning"),
    ("ERROR: Failed to run `/usr/sbin/dkms install -m nvidia -v 550.54.14 -k 6.8.0-31-generic`: Error!", "gpu_init",
     "warning"),
    ("ERROR: modpost: GPL-incompatible module nvidia-uvm.ko uses GPL-only symbol 'rcu_read_unlock_strict'",
     "gpu_init", "warning"),
    # shared filesystems: IBM Storage Scale's commands, LNet's self-test
    ("mmumount: Command failed. Examine previous error messages to determine cause.", "nfs", "warning"),
    ("12345-172.16.0.9@o2ib1: [Session: 12 brw errors, 0 ping errors] [RPC: 0 errors, 0 dropped, 0 expired]", "nfs",
     "warning"),
    ("Total 3 error nodes in servers", "nfs", "warning"),
    # Open MPI's openib BTL giving up an adapter, MVAPICH's CUDA IPC
    ("[cn042][[1021,1],7][../../../../../ompi/mca/btl/openib/btl_openib_component.c:2871:btl_openib_component_init]",
     "ib", "warning"),
    ("[gpu12:mpi_rank_5][cudaipc_allocate_ipc_region] [src/mpid/ch3/channels/mrail/src/gen2/ibv_cuda_ipc.c:301] "
     "cuda failed with out of memory", "cuda", "warning"),
    # Open MPI's fabric words: help notices, MPI_Init's PML, the retry-exceeded help text, the TCP BTL, the CQ tail
    ("[gpu3:77001] 15 more processes have sent help message help-mpi-btl-openib.txt / pp rnr retry exceeded", "ib",
     "warning"),
    ("   --> Returned \"Unreachable\" (-12) instead of \"Success\" (0)", "ib", "warning"),
    ("connect() to 172.20.4.11 failed: Connection refused (111)", "ib", "warning"),
    ("status number 13 for wr_id 1122334455 opcode 128  qp_idx 2", "ib", "warning"),
    # thermal: NVSentinel's GPU temperature codes, a Pi's decoded throttle bits
    ("ErrorCode:GPU_TEMP_SW_SLOWDOWN_VIOLATION GPU:7 Recommended Action=NONE", "thermal", "warning"),
    ("Soft temperature limit active", "thermal", "warning"),
    # accelerator runtimes: torch-neuronx without its runtime, Neuron's collectives, CCOM, Ascend's HCCP, AdaptiveCpp,
    # a container runtime without the device node
    ("RuntimeError: The PyTorch Neuron Runtime could not be initialized. Neuron Driver issues are logged to your "
     "system logs.", "cuda", "warning"),
    ("2025-Jun-07 08:09:10.111111 9001:9012 ERROR  TDRV:exec_wait_cc_semaphores     [ND 3][NC 0] collectives timed "
     "out", "nccl", "warning"),
    ("2026-Feb-03 04:05:06.0001 4242:4250 [7] int nccl_net_ofi_init(void):101 CCOM WARN NET/OFI Unable to find "
     "a libfabric provider", "nccl", "warning"),
    ("[ERROR] HCCP(5120,python3):2025-03-04-05:06:07.890.123 [ra_hdc.c:410]tid:5120,ra_hdc_init(410) : hdc init "
     "failed ret(-5)", "nccl", "warning"),
    ("[AdaptiveCpp Error] from src/runtime/hip/hip_event.cpp:55 @ wait(): hip_node_event: hipEventSynchronize() "
     "failed (error code = hip:700)", "cuda", "warning"),
    ("docker: Error response from daemon: error gathering device information while adding custom device "
     "\"/dev/neuron3\": no such file or directory.", "gpu_init", "warning"),
    # dcgm-exporter's XID metric: the XID from its err_code label (the catalog decides the severity)
    ('DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-1",err_code="31",err_msg="MMU Fault"} 31', "xid", "warning"),
    # a GPU device node absent in `ls`
    ("ls: cannot access '/dev/kfd': No such file or directory", "gpu_init", "warning"),
    # lspci's status registers: an uncorrected error latched, in older pciutils' names too (aer_lspci)
    ("\t\tDevSta:\tCorrErr+ UncorrErr+ FatalErr- UnsuppReq- AuxPwr+ TransPend-", "aer", "warning"),
    # RAID tools: arcconf, mpt-status, tw_cli
    ("   Logical drives/Offline/Critical          : 2/0/1", "disk", "warning"),
    ("   Status of logical drive                  : Degraded", "disk", "warning"),
    ("ioc1 vol_id 0 type IS, 4 phy, 1117 GB, state MISSING, flags ENABLED", "disk", "warning"),
    ("u0    RAID-10   REBUILDING     42%     -       64K     1862.62   RiW    ON     ", "disk", "warning"),
    ("p1     ECC-ERROR        u0     1.82 TB     3907029168    WD-WCC4M0000000      ", "disk", "warning"),
    # a RAID enclosure's temperature sensor
    ("         Temperature Sensor Status 1     : 58 C/ 136 F (Abnormal)", "thermal", "warning"),
    # a BMC's SEL record as `ipmitool sel get` prints it
    (" Description           : Uncorrectable machine check exception", "mce", "critical"),
    # nvidia-docker 1.0's own log
    ("nvidia-docker | 2017/01/09 08:12:40 Error: Could not load UVM kernel module. Is nvidia-modprobe installed?",
     "gpu_init", "error"),
]
INFO = [
    # PSM's crash handler
    ("a.out:31337 terminated with signal 7 at PC=7f01aa02 SP=7ffe1234.  Backtrace:", "segfault"),
    # Neuron's report details at ERROR level
    ("2025-May-15 20:58:33.895937 1:1 ERROR  TDRV:print_lnc_hbm_details    LNC size is 1. Neuron Cores using this "
     "HBM: NC 2 and NC 3", "cuda"),
    # corrected PCIe errors latched in lspci's status, a drive's lifetime temperature counters
    ("\t\tDevSta:\tCorrErr+ NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-", "aer"),
    ("\t\tCESta:\tRxErr- BadTLP+ BadDLLP- Rollover- Timeout- AdvNonFatalErr-", "aer"),
    ("Under/Over Temperature Limit Count:   2/31", "thermal"),
    ("Critical Comp. Temperature Time:    14", "thermal"),
    # XFS shut down on request
    ("XFS (md0): User initiated shutdown received.", "disk"),
    # the openib BTL's rdmacm declining a port: it goes on with another connection manager
    ("[cn042:11873] openib BTL: rdmacm IP address not found on port", "ib"),
]
TWINS = [
    # the same printers' healthy lines
    "dkms autoinstall on 6.11.4-200.fc41.x86_64/x86_64 succeeded for nvidia(10)",
    "'make' -j16 module SYSSRC=/lib/modules/6.1.0-9-amd64/build IGNORE_XEN_PRESENCE=1....",
    "MODPOST /var/lib/dkms/nvidia/550.54.14/build/Module.symvers",
    "nvidia-docker | 2017/01/09 08:12:40 Loading NVIDIA unified memory",
    "[drm] amdgpu kernel modesetting enabled.",
    "CIFS: VFS: Autodisabling the use of server inode numbers on \\\\nas01\\scratch",
    "12345-172.16.0.9@o2ib1: [Session: 0 brw errors, 0 ping errors] [RPC: 0 errors, 0 dropped, 0 expired]",
    "Total 0 error nodes in servers",
    "mmgetstate: Command successfully completed",
    " Description           : Presence detected",
    "[gpu3:77001] 15 more processes have sent help message help-mpi-btl-openib.txt / default subnet prefix",
    "ixgbe 0000:21:00.0: Multiqueue Enabled: Rx Queue count = 63, Tx Queue count = 63 XDP Queue count = 0",
    "Arm frequency capped: no",
    "throttled=0x0",
    "\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr+ TransPend-",
    "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
    "   Logical devices/Failed/Degraded          : 2/0/0",
    "   Status of logical device                 : Optimal",
    "u0    RAID-1    OK             -       -       -       465.651   OFF    OFF    ",
    "p0     OK               u0     465.76 GB   976773168     9QM1SHZY             ",
    "Under/Over Temperature Limit Count:   0/0",
    "Critical Comp. Temperature Time:    0",
    "         Temperature Sensor Status 1     : 38 C/ 100 F (Normal)",
    'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-0",err_code="0",err_msg="No Error"} 0',
    "ls: cannot access '/dev/nvidia-fs0': No such file or directory",
    "2026-Feb-03 04:05:06.0001 4242:4250 [7] CCOM INFO NET/OFI Selected provider is efa, fabric is efa-direct",
    "2024-Feb-03 04:05:06.0007 77:77 INFO   NRT:nrt_init      Neuron Driver version 2.19.64.0",
]

# the subsystem fallback with round 21's tags: a failure word on a line no rule claims
FALLBACK: list[tuple[str, str]] = []

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, info=INFO, fallback=FALLBACK,
                             twins=TWINS))
