"""Families read from their printers after the rules halves of round 12's collections (round12a-k.tsv) showed them
(their test halves only scored): each line is found in other values than the corpus's, its benign twin stays below
warning, job and tool output never drains, and the kernel's lines are only investigated."""

from __future__ import annotations

from .rule_cases import table_tests

# ---- what daemons, tools and jobs print (trust syslog or job: recorded, never a drain)
FOUND = [
    # mdadm's monitor (a daemon's line)
    ("Mar  3 04:05:06 fs07 mdadm[1312]: A DegradedArray event had been detected on md device /dev/md/scratch.",
     "disk", "warning"),
    # zpool status: a device with read/write/checksum errors, permanent errors; fmadm; smartctl; a media check; fio
    ("          nvme2n1  ONLINE       0     0    17", "disk", "warning"),
    ("    ata-WDC_WD80EFAX-68KNBN0_VAGJ1  DEGRADED  4  0  0  too many errors", "disk", "warning"),
    ("errors: Permanent errors have been detected in the following files:", "disk", "warning"),
    ("    Fault class : fault.io.scsi.cmd.disk.dev.rqs.derr", "disk", "warning"),
    ("   Status     : faulted and taken out of service", "disk", "warning"),
    ("See vendor-specific Attribute list for failed Attributes.", "disk", "warning"),
    ("Drive 2I:1:4: Media check is complete, the result is: FAIL", "disk", "warning"),
    ("fio: io_u error on file /lustre/scratch/fio.0.0: Input/output error: write offset=1048576, buflen=131072",
     "disk", "warning"),
    ("fio: pid=90210, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error", "disk", "warning"),
    # ESXi's multipathing with a host status, Cisco nfnic's FC link down
    ('2024-05-01T10:11:12.345Z cpu7:2097781)NMP: nmp_CompleteCommandForPath: Command 0x8a (0x45b8c1) to NMP device '
     '"naa.624a9370" failed on physical path "vmhba64:C0:T3:L12" H:0x2 D:0x0 P:0x0 ', "disk", "warning"),
    ("2024-05-01T10:11:12.345Z In(182) vmkernel: cpu3:2097700)nfnic: <2>: INFO: fnic_fdls_link_status_change: 117: "
     "fnic3: FDLS link status change link up:0, usefip:1", "disk", "warning"),
    # Ascend's collectives and RoCE (the job's output)
    ("[rank5]: EI0006: [PID: 88123] 2025-01-09-03:04:05.678.901 Getting socket times out. Reason: Remote Rank did "
     "not send the data in time.", "nccl", "error"),
    ("EJ0001: 2025-01-09-03:04:05.678.901 Failed to initialize the HCCP process. Reason: Maybe the last training "
     "process is running.", "nccl", "error"),
    ("RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:1185", "nccl", "error"),
    ("RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:209 OPS function error: HcclBroadcast, "
     "error code is 9", "nccl", "error"),
    ("[ERROR] DISTRIBUTED(4401,ffff9e2c7120,python):2024-03-01-02:03:04.567.890 "
     "[mindspore/ccsrc/distributed/collective/collective_manager.cc:412] Finalize] Failed to finalize the comm group",
     "nccl", "error"),
    ("[PID: 7710] 2025-02-03-04:05:06.789.012 Execution Error ROCE CQE(EI0013): An error CQE occurred during operator "
     "execution.", "ib", "error"),
    ("[ERROR] ROCE(551,hccl_test):2025-02-03-04:05:06.789.012 [hns_roce_lite.c:702]hns_roce_lite_handle_error_cqe(702)"
     " : error cqe status: 0x5", "ib", "error"),
    # a CUDA device assert whose page dropped the backticks
    ("/opt/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [12,0,0], thread: "
     "[7,0,0] Assertion idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\" failed.", "cuda", "error"),
    # /proc/vmstat
    ("oom_kill 12", "oom", "warning"),
    # GPU tools' thermal guards and missing platforms (round12h's rules half)
    ("Temperature limit on GPU #7 reached, aborting...", "thermal", "warning"),
    ("Driver temperature threshold met on GPU #5. Expect reduced performance.", "thermal", "warning"),
    ("[09:10:11][0x00001a2b][warning] core | Device #2 Memory temp: 104 C", "thermal", "warning"),
    ("ATTENTION! No OpenCL, HIP or CUDA compatible platform found.", "cuda", "warning"),
    ("cuda GetDeviceCount returned error 3", "cuda", "warning"),
    ("W0101 01:02:03.456789 4242 init.cc:180] Compiled with WITH_GPU, but no GPU found in runtime.", "cuda", "warning"),
    ("RuntimeError: Not compiled with CUDA support", "cuda", "warning"),
    # network filesystems' clients in variants the printers left (MooseFS 2, SeaweedFS at info level, go-fuse,
    # gcsfuse's garbage collection, knfsd, a Lustre target in recovery)
    ("Jul  4 01:02:03 gpu09 mfsmount[771]: file: 120, index: 3 - fs_readchunk returns status: No such chunk", "nfs",
     "warning"),
    ("Jul  4 01:02:03 gpu09 mfsmount[771]: writeworker got inode with no data to write !!!", "nfs", "warning"),
    ("W0501 12:00:00.123456 volume_grpc_client_to_master.go:80 heartbeat to 10.1.2.3:9333 error: rpc error: code = "
     "DeadlineExceeded", "nfs", "warning"),
    ("I0501 12:00:00 4242 filehandle.go:99] failed to locate 7,0a1b2c3d", "nfs", "warning"),
    ("writer: Write/Writev failed, err: 5=input/output error. opcode: READ", "nfs", "warning"),
    ("Garbage collection failed after deleting 12 objects in 1m2.5s, with error: context deadline exceeded", "nfs",
     "warning"),
    ("May 02 03:04:05 nfs1 sh[900]: rpc.nfsd: knfsd is currently down", "nfs", "warning"),
    # a page that cut the line (the whole one is lustre_connection's, trust kernel)
    ("Lustre: scratch-MDT0001: Denying connection for new client", "nfs", "warning"),
    # round12j's rules half: a Ceph OSD's silent peer, Talos's OOM controller, zpool events' error classes
    ("2025-06-07T08:09:10.111+0000 7fa1 -1 osd.4 8812 heartbeat_check: no reply from 172.16.1.9:6811 osd.19 since back "
     "2025-06-07T08:08:50.000+0000", "nfs", "warning"),
    ('user: warning: [2026-03-04T05:06:07.1Z]: [talos] Sending SIGKILL to cgroup {"component": "controller-runtime", '
     '"controller": "runtime.OOMController", "cgroup": "/sys/fs/cgroup/podruntime"}', "oom", "warning"),
    ('        class = "ereport.fs.zfs.io"', "disk", "warning"),
    # round12i's and round12k's rules halves: HPC centres' job output (Slingshot, HIP) and Ascend's collective library
    # in CANN's own log format
    ("srun: error: task 3 launch failed: Error configuring interconnect", "ib", "error"),
    ("libfabric:9911:1700000123::cxi:core:cxip_cq_eq_progress():540<warn> x1000c0s0b0n1: Cassini Event Queue overflow "
     "detected.", "ib", "error"),
    ("MPIDI_CRAY_ofi_get_nic_index(1799)....: OFI invalid value for environment variable", "ib", "error"),
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "cuda", "error"),
    ("[GPU Memory Error] Addr: 0x7ffe00020000 Reason: Write access to a read-only page.", "cuda", "error"),
    ("[ERROR] HCCL(4411,python):2024-05-06-07:08:09.123.456 [hccl_comm.cc:120][hccl-4411-0-1715000000-world][1]"
     "[HcclComm][Init]errNo[0x0000000005000004] hccl initialize failed", "nccl", "error"),
    ("[CRITICAL] HCCL_ADPT(4411,ffff8a2b,python):2024-05-06-07:08:09.123.999 [hccl_adapter.cc:410] "
     "InitKernelInfoStore] Init hccl graph adapter failed.", "nccl", "error"),
    ("    serverId[10.2.3.4], deviceId[3], Heartbeat Lost Occurred, Possible Reason: 1. Process has exited", "nccl",
     "error"),
    ("RuntimeError: Ascend collective communication initialization failed.", "nccl", "error"),
]


# ---- the kernel's own lines (warning, investigated; never a node fault of ours)
KERNEL_FOUND = [
    ("[ 1201.000017] raid10: Operation continuing on 5 devices.", "disk", "warning"),
    ("[88120.411902] md: recovery thread: P corrected, sector=88812064", "disk", "warning"),
    ("mptbase: ioc0: ERROR - didn't initialize properly! (-3)", "disk", "warning"),
    ("megasas: FW in FAULT state!!", "disk", "warning"),
    ("cciss 0000:0a:00.0: cciss: c ffff8800a1b2c000 has CHECK CONDITION sense key = 0x4", "disk", "warning"),
    ("mpr1: IOC Fault 0x40009000, Resetting", "disk", "warning"),
    ("mps2: Error reading device 0x1f SATA PASSTHRU; iocstatus= 0x4b", "disk", "warning"),
    ("(ada3:ahcich5:0:0:0): ATA status: 51 (DRDY SERV ERR), error: 04 (ABRT )", "disk", "warning"),
    ("(da7:mpr0:0:12:0): Invalidating pack", "disk", "warning"),
    ("[  311.000201] attempt to access beyond end of device", "disk", "warning"),
    ('Filesystem "sdc2": corrupt inode 4412 ((a)extents = 9).  Unmount and run xfs_repair.', "disk", "warning"),
    ("[ 9001.221100] Remounting filesystem read-only", "disk", "warning"),
    ("EXT4-fs (nvme1n1p2): Journal checksum error found in nvme1n1p2", "disk", "warning"),
    ('[    3.100200] VFS: Cannot open root device "nvme0n1p3" or unknown-block(259,3): error -6', "disk", "warning"),
    ("[   12.402216] nouveau 0000:41:00.0: gsp ctor failed: -22", "gsp", "warning"),
    ("[ 7712.000301] Do you have a strange power saving mode enabled?", "mce", "warning"),
    ("MCA: Bank 9, Status 0xbe00000000800400", "mce", "warning"),
    ("+MCA: CPU 17 COR OVER DCACHE L0 DRD error", "mce", "warning"),
    ("[ 1210.118822] scsi host3:   REJ reason 0xe", "ib", "warning"),
    ("LDISKFS-fs error (device md12): ldiskfs_find_entry:1590: inode #77: comm mdt00_003: reading directory lblock 0",
     "disk", "warning"),
    ("[    2.004400] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(8,2)", "disk",
     "warning"),
    ("[ 5120.001200] BUG: spinlock lockup suspected on CPU#12, swapper/12/0", "soft_lockup", "warning"),
]


# ---- lines that say nothing alone, or a setting: their kind at info
INFO = [
    # a SCSI command's CDB alone says which command, not that it failed
    ("[ 4410.012345] sd 6:0:0:0: [sdg] tag#17 CDB: Read(16) 88 00 00 00 00 00 1d 1c 00 00 00 00 00 08 00 00", "disk"),
    ("sd 0:0:1:0: tag#2 CDB: Inquiry 12 00 00 00 24 00", "disk"),
    # ASPM the firmware keeps
    ("[    9.301100] smartpqi 0000:c1:00.0: can't disable ASPM; OS doesn't have ASPM control", "pcie"),
    # report lines that say nothing alone carry their report's kind (round12g's rules half)
    ("[ 9120.000100] Code: Unable to access opcode bytes at RIP 0x7ffd11223344.", "segfault"),
    ("Code: 0f 1f 44 00 00 48 8b 47 08 48 85 c0 74 0b <48> 8b 10 48 89 17 c3 0f 1f 00", "segfault"),
    ("[ 2210.001000]       Blocked by coredump.", "hung_task"),
    ("[  990.100000] amdgpu 0000:43:00.0: amdgpu: GPU reset begin!", "gpu_init"),
    ("[  990.900000] [drm] VRAM is lost due to GPU reset!", "gpu_init"),
    ("[cn0412:90210] *** Process received signal ***", "segfault"),    # Open MPI's banner: the Signal lines say which
]


BENIGN = [
    # the same printers on a healthy day
    "          nvme2n1  ONLINE       0     0     0",
    "errors: No known data errors",
    "SMART overall-health self-assessment test result: PASSED",
    "Drive 2I:1:4: Media check is complete, the result is: PASS",
    "fio-3.35",
    "[    1.200001] md/raid10:md0: active with 6 out of 6 devices",
    "mpr0: IOC ready",
    "(ada0:ahcich0:0:0:0): ATA status: 50 (DRDY SERV), error: 00 ()",
    "[   12.402216] nouveau 0000:41:00.0: gsp: RM version 535.113.01",
    "MCA: Bank 4, Status 0x0000000000000000",
    "oom_kill 0",
    "EI9999: the error code table of this release",
    "[ERROR] DISTRIBUTED(4401,ffff9e2c7120,python):2024-03-01-02:03:04.567.890 [mindspore/ccsrc/distributed/"
    "cluster/cluster_context.cc:88] Init] Node role is worker",
    "[INFO] HCCL(4411,python):2024-05-06-07:08:09.123.456 [hccl_comm.cc:88][hccl-4411-0-1715000000-world][1] hccl "
    "initialize success",
    "I0101 01:02:03.456789 4242 init.cc:170] Compiled with WITH_GPU, found 8 GPUs in runtime.",
    "[cn0412:90210] [ 0] /lib64/libpthread.so.0(+0x12cf0)[0x7f00aa112cf0]",
    "[09:10:11][0x00001a2b][info] core | Device #2 Memory temp: 64 C",
    "Temperature abort trigger set to 90c",
    "I0501 12:00:00.123456 volume_layout.go:300 Volume 17 becomes writable",
    "I0501 12:00:00.123456 volume_grpc_client_to_master.go:70 Heartbeat to: 10.1.2.3:9333",
    "Garbage collection succeeded after deleting 12 objects in 1m2.5s.",
    '        class = "sysevent.fs.zfs.scrub_finish"',
    "2025-06-07T08:09:10.111+0000 7fa1  1 osd.4 8812 heartbeat osd_stat(store_statfs(0x1/0x0/0x2))",
]


globals().update(table_tests(other=FOUND, kernel_evidence=KERNEL_FOUND, twins=BENIGN, info=INFO))
