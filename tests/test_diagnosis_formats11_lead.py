"""Families read from their printers after the rules halves of round 11's four collections (round11a-d.tsv) showed
them (their test halves only scored): each line is found in other values than the corpus's, its benign twin stays
below warning, job and tool output never drains, and the kernel's lines are only investigated."""

from __future__ import annotations

from .rule_cases import below_warning, found_as, table_tests

# ---- what daemons, tools and jobs print (trust syslog or job: recorded, never a drain)
FOUND = [
    # md arrays with a failed member, as mdadm --detail prints them
    ("Failed Devices : 2", "disk", "warning"),
    ("       3       8       49        -      faulty   /dev/sdd1", "disk", "warning"),
    # a health check naming XIDs
    ("check_gpu: Found XID errors: 48", "xid", "critical"),   # the catalog's verdict for XID 48
    # slurmd without a GPU's device file
    ("Mar 02 07:11:40 gpu-n12 slurmd[2211]: slurmd: fatal: can't stat gres.conf file /dev/nvidia3: No such file or "
     "directory", "gpu_init", "error"),
    # iSCSI initiators' daemons and the tcmu-runner backstore
    ("Feb 14 02:10:05 node7 iscsid[913]: iscsid: Kernel reported iSCSI connection 1:0 error (1011 - "
     "ISCSI_ERR_CONN_FAILED: iSCSI connection failed) state (3)", "nfs", "warning"),
    ("Feb 14 02:10:07 node7 iscsid[913]: iscsid: can't bind conn 1:0 to session 1, retcode -107 (115)", "nfs",
     "warning"),
    ("tcmu-runner: tcmu_notify_conn_lost:201 rbd/rbd.disk2: Handler connection lost (lock state 0)", "nfs", "warning"),
    # GlusterFS's client
    ("[2024-02-01 10:11:12.000123 +0000] E [MSGID: 114058] [client-handshake.c:1455:client_query_portmap_cbk] "
     "0-gv0-client-2: failed to get the port number for remote subvolume.", "nfs", "warning"),
    ("[2024-02-01 10:11:12.000456] W [MSGID: 114031] [client-rpc-fops_v2.c:2634:client4_0_lookup_cbk] 0-gv0-client-1: "
     "remote operation failed. Path: /data [Transport endpoint is not connected]", "nfs", "warning"),
    # mount(8) and the kubelet on a network filesystem
    ("mount: wrong fs type, bad option, bad superblock on nas02:/vol/home,", "nfs", "warning"),
    ("mount: mounting 10.0.0.5:/export on /mnt/data failed: Connection refused", "nfs", "warning"),
    ('Unable to mount volumes for pod "trainer-0_ml": exit status 32', "nfs", "warning"),
    # Ceph's OSD aborting on its disk's I/O error
    ('/usr/src/ceph/src/os/bluestore/KernelDevice.cc: 612: FAILED ceph_assert(0 == "unexpected aio error")', "disk",
     "warning"),
    # Ceph's health about the data path (cluster log, `ceph health detail`, `ceph -s`, an OSD's log)
    ("2024-01-02T10:00:00.000+0000 mon.a (mon.0) 123 : cluster [WRN] Health check failed: 2 osds down (OSD_DOWN)",
     "nfs", "warning"),
    ("[ERR] PG_AVAILABILITY: Reduced data availability: 4 pgs inactive", "nfs", "warning"),
    ("    health: HEALTH_ERR", "nfs", "warning"),
    ("2024-01-02 10:00:00.000 7f00 0 log_channel(cluster) log [WRN] : 3 slow requests, 1 included below; oldest "
     "blocked for > 32.1 secs", "nfs", "warning"),
    # more disk tools: btrfs scrub, smartctl, zpool
    ("Error summary:    read=3 csum=0", "disk", "warning"),
    ("ATA Error Count: 4", "disk", "warning"),
    ("status: One or more devices is faulted in response to persistent errors.", "disk", "warning"),
    ("tank   21.8T  12.1T  9.70T        -         -     4%    55%  1.00x  FAULTED  -", "disk", "warning"),
    # Open MPI's report of a rank's crash
    ("[gpu-n03:40211] Signal code: Invalid permissions (2)", "segfault", "error"),
    ("[gpu-n03:40211] Failing at address: 0x7f3a2c000010", "segfault", "error"),
    # c10d's older wording of a store no address of which connects (sweep 6's note)
    ("RuntimeError: The client socket has failed to connect to any network address of (node12, 29500). The client "
     "socket has failed to connect to [node12]:29500 (errno: 113 - No route to host).", "nccl", "error"),
    # round11c: c10d's desync report, the shell's SIGKILL, the GPU container hook, ggml's CUDA backend
    ("[rank3]: - [3] Timeout at collective: BROADCAST, #112", "nccl", "error"),
    ("/var/spool/slurmd/job4411/slurm_script: line 9: 80211 Killed                  torchrun train.py", "oom",
     "warning"),
    ("Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
     "failed: unable to start container process: error during container init: error running createContainer hook #1: "
     "exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded",
     "gpu_init", "error"),   # the driver not loaded: gpu_driver_mismatch's verdict
    ("/opt/llama.cpp/ggml/src/ggml-cuda/mmq.cuh:3027: fatal error", "cuda", "error"),
    # round11d: GPFS's recovery, GlusterFS's disconnected brick, a QP that cannot be created, SRP, Ceph's MDS heartbeat,
    # Dell's UEFI0078
    ("Tue Mar  4 10:11:12.123 2025: [N] Recovering nodes: 10.20.0.7 10.20.0.8", "nfs", "warning"),
    ("[2023-01-01 00:00:00.000001] D [MSGID: 0] [client.c:256:client_submit_request] 0-scratch-client-0: connection "
     "in disconnected state", "nfs", "warning"),
    ("Failed to create queue pair: Cannot allocate memory", "ib", "warning"),
    ("echo id_ext=0x1,ioc_guid=0x1,dgid=fe80000000000000f452140300a1b2c3,pkey=ffff,service_id=0x1 "
     ">/sys/class/infiniband_srp/srp-mlx5_2-1/add_target failed: Invalid argument", "ib", "warning"),
    ("2024-03-01 10:00:00.100 7f1 1 heartbeat_map is_healthy 'MDSRank' had timed out after 15", "nfs", "warning"),
    ("UEFI0078: One or more Machine Check errors occurred in the previous boot.", "mce", "warning"),
    # round11e: Ceph's health texts, GlusterFS's lost brick, NFS-Ganesha, NFSv4 state errors, autofs, volume mounts,
    # JuiceFS, a shell's EIO, the iSCSI initiator's connects, the RDMA device plugin, libfabric's provider errors
    ("2017-04-13 07:32:22.204123 7f9757687700  0 log_channel(cluster) log [ERR] : HEALTH_ERR; 3 pgs inconsistent",
     "nfs", "warning"),
    ("            1 mons down, quorum 0,2 a,c", "nfs", "warning"),
    ("[2021-02-01 10:00:00.000001] I [MSGID: 114018] [client.c:2331:client_rpc_notify] 0-home-client-3: "
     "disconnected from home-client-3. Client process will keep trying to connect to glusterd until brick's port is "
     "available", "nfs", "warning"),
    ("01/02/2024 10:00:00 : epoch 65930000 : nfs1 : ganesha.nfsd-77[svc_12] nfs4_op_open :STATE :CRIT :Failed to "
     "create state", "nfs", "warning"),
    ("12 Jan 2024 10:00:00 [OncRpcSvc (3)] [] Lost client state: op: READ : NFS4ERR_EXPIRED", "nfs", "warning"),
    ("automount[812]: lookup(ldap): query failed for (&(objectclass=automount)(automountKey=/home))", "nfs",
     "warning"),
    ("Warning  FailedMount  3s  kubelet  MountVolume.SetUp failed for volume \"pvc-9\" : rpc error: code = Internal "
     "desc = mount failed: exit status 32", "nfs", "warning"),
    ("mount error(112): Host is down", "nfs", "warning"),
    ("2022/01/01 10:00:00.000000 juicefs[812] <ERROR>: request 17 (40) timeout after 5.000106s [redis.go:1017]", "nfs",
     "warning"),
    ("cp: error reading '/scratch/u1/ckpt.pt': Input/output error", "nfs", "warning"),
    ("iscsiadm: initiator reported error (8 - connection timed out)", "nfs", "warning"),
    ("I1001 10:00:00.000000 1 main.go:80] exposing \"0\" devices", "ib", "warning"),
    ("fi_cq_readerr: err: Input/output error (5) prov_errno: Unknown error -5 (-5) prov/efa/src/efa_cq.c:201", "ib",
     "error"),
    # round11f: a torchelastic worker's crash signal, PyTorch without a driver, ROCm's memory fault, modprobe anywhere,
    # the GPU stack absent (containers, nvidia-powerd, the device plugin), cuda-gdb's device exception
    ("[E1119 08:26:02.715000 28705 api.py:882] failed (exitcode: -7) local_rank: 3 (pid: 28773) of binary: /usr/bin/"
     "python3", "segfault", "error"),
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver", "gpu_init", "error"),
    ("Memory access fault by GPU node-2 (Agent handle: 0x55d0c0a0) on address 0x7f0000001000. Reason: Write access to "
     "a read-only page.", "cuda", "error"),
    ("+ modprobe nvidia; modprobe: FATAL: could not insert 'nvidia_uvm': No such device", "gpu_init", "error"),
    ("WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.", "gpu_init", "warning"),
    ("Mar 01 10:00:00 gpu7 nvidia-persistenced[812]: Failed to initialize RM client", "gpu_init", "warning"),
    ("CUDA_EXCEPTION_14, Warp Illegal Address.", "cuda", "error"),
    # round11h: GKE's XidCriticalError node condition (the XID in its JSON; the catalog's verdict)
    ("  XidCriticalError   True   Tue, 01 Jul 2025 10:00:00 +0000   Tue, 01 Jul 2025 09:59:00 +0000   {\"48\":true}   "
     "node-condition", "xid", "critical"),
    # round11g: ESXi's vmkernel storage failures, monitoring plugins' disk verdicts, nvidia-smi's CSV [Unknown Error],
    # BMC power faults and ipmitool's sensor rows past a threshold
    ("2024-01-01T10:00:00.000Z cpu5:2097)ScsiDeviceIO: 4325: Cmd(0x45d8c1234) 0x2a, CmdSN 0x1 from world 0 to dev "
     "\"naa.600a0b80\" failed H:0x8 D:0x0 P:0x0", "disk", "warning"),
    ("RAID CRITICAL: 2 arrays not ok - Array \"md0\" is in state \"clean, degraded\"", "disk", "warning"),
    ("NVIDIA A100-SXM4-80GB, 00000000:07:00.0, [Unknown Error], 81920 MiB", "gpu_init", "warning"),
    ("DIMM C1 PMIC Error: SWBout_OV", "thermal", "warning"),
    ("FAN3             | 0.000      | RPM        | cr    | na        | 300.000   | 500.000   | na        | na        "
     "| na", "thermal", "warning"),
    # MLNX_OFED's experimental verbs and SPDK's NVMe-oF RDMA transport
    ("ibv_exp_create_qp: invalid comp_mask !!! (comp_mask = 0x3 valid_mask = 0x1)", "ib", "warning"),
    ("[2023-05-02 11:00:01.000001] nvme_rdma.c: 812:nvme_rdma_resolve_route: *ERROR*: RDMA route resolution error",
     "ib", "warning"),
]


# ---- the kernel's own lines (warning or error, investigated; never a node fault of ours)
KERNEL_FOUND = [
    # OpenVZ's OOM report for a container (the task's pid and name first: the job's)
    ("[ 8101.100200] 4411 (java) invoked oom-killer in ub 2001 generation 0 gfp 0x201da", "oom", "error"),
    # a disk whose capacity fell to 0
    ("[51234.000100] nvme1n1: detected capacity change from 3840755982336 to 0", "disk", "warning"),
    ("[51234.000100] sd 4:0:0:0: [sde] sde: detected capacity change from 1000204886016 to 0", "disk", "warning"),
    # md arrays started degraded
    ("[    9.870001] md/raid10:md1: active with 3 out of 4 devices", "disk", "warning"),
    ("[    9.870001] md/raid:md0: raid level 6 active with 10 out of 12 devices, algorithm 2", "disk", "warning"),
    # sb_edac's older header (the MCE event's header: its details say how bad)
    ("Aug  3 01:02:03 n17 kernel: sbridge: HANDLING MCE MEMORY ERROR", "mce", "info"),
    # Fibre Channel's remote port gone
    ("[ 9120.000300]  rport-7:0-3: blocked FC remote port time out: removing target and saving binding", "disk",
     "warning"),
    # IPoIB's send ring full and the older netdev watchdog
    ("[ 1200.004000] ib0: TX ring full, stopping kernel net queue", "ib", "warning"),
    ("NETDEV WATCHDOG: ib0: transmit timed out", "ib", "warning"),
    # the iSCSI initiator's kernel side
    ("[ 3011.220010]  connection2:0: ping timeout of 5 secs expired, recv timeout 5, last rx 4295412, last ping "
     "4295162, now 4295668", "nfs", "warning"),
    ("[ 3131.220010]  session2: session recovery timed out after 120 secs", "nfs", "warning"),
    # nvidia-peermem refused (GPUDirect RDMA)
    ("[Mon Jun  3 10:00:00 2024] nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client",
     "ib", "warning"),
    ("modprobe: FATAL: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter", "ib",
     "warning"),
    # the BSD NFS client and FreeBSD's disk stack
    ("nfs server fs02:/home: not responding", "nfs", "warning"),
    ("(da3:mpr0:0:12:0): CAM status: SCSI Status Error", "disk", "warning"),
    ("(da3:mpr0:0:12:0): Error 5, Unretryable error", "disk", "warning"),
    ("ahcich3: Timeout on slot 12 port 0", "disk", "warning"),
    # the SMB client's older prefix on a mount it cannot do
    ("[  451.500000] CIFS VFS: Connecting to DFS root not implemented yet", "nfs", "warning"),
]


KERNEL_FOUND_11F = [
    # amdgpu's RAS (the machine checks' kind) and FreeBSD's amdgpu ring timeout
    ("[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_SMN_INTERRUPT) "
     "detected!", "mce", "error"),
    ("[drm ERROR :amdgpu_job_timedout] ring sdma0 timeout, signaled seq=77, emitted seq=79", "gpu_init", "warning"),
]


KERNEL_FOUND_11D = [
    # an oops whose older `IP:` line names an RDMA or a shared filesystem's module
    ("Oct 16 13:17:50 n4 kernel: IP: [<ffffffffa01e3c44>] ib_free_recv_mad+0x44/0xa0 [ib_core]", "ib", "warning"),
    ("IP: nfs_updatepage+0x1c/0x90 [nfs]", "nfs", "warning"),
    # the RCU stall's summary, another spelling of the soft lockup
    ("[ 900.000100] All QSes seen, last rcu_preempt kthread activity 21003 (4295020000-4294998997), "
     "jiffies_till_next_fqs=3, root ->qsmask 0x0", "soft_lockup", "error"),
    ("May 16 00:01:29 n2 kernel: [19099.025631] ^I3-...: (5 GPs behind) idle=1a2/1/0 softirq=1/2 fqs=100",
     "soft_lockup", "error"),
    ("Soft lockup CPU#7 stuck for 41s", "soft_lockup", "warning"),
    # a PCIe host controller that failed to probe
    ("[    2.100000] tegra194-pcie: probe of 14160000.pcie failed with error -110", "pcie", "warning"),
]


INFO_LINES = [
    # a report's detail lines carry their kind at info: the report's first line is the finding
    ("kernel: #2:  99% system,   1% softirq,   0% hardirq,   0% idle", "soft_lockup"),
    ("kworker/u8:2    D ffff88003fc13a80     0   123      2 0x00000000", "hung_task"),
    ("mlx5_core 0000:3b:00.0: print_health_info:437:(pid 0): hw_id 0x0000020d", "ib"),
]


def test_a_source_files_location_in_front_is_part_of_the_message() -> None:
    """`path.cu:579: fatal error` is the program's own location, not a grep's file name: the message keeps it (a log
    file's name in front is still the envelope's)."""
    from slurmtools.diagnosis.lines import normalise

    assert normalise("/src/ggml/ggml-cuda/fattn.cu:579: fatal error").message.startswith("/src/ggml/ggml-cuda/")
    assert normalise("src/os/bluestore/KernelDevice.cc:397: FAILED assert").message.startswith("src/os/")
    assert normalise("/var/log/kern.log.1:Mar  5 10:11:12 n1 kernel: EDAC MC0: 1 CE").message == "EDAC MC0: 1 CE"
    assert normalise("logs/kern.log:Mar  5 10:11:12 n1 kernel: EDAC MC0: 1 CE").message == "EDAC MC0: 1 CE"


# The network filesystems' user-space daemons (FUSE clients, NFS-Ganesha, GlusterFS, MooseFS) are a subsystem
# (data/subsystems.toml `netfs-daemons`): a failure no rule names is an nfs warning, never a drain.
FALLBACK_LINES = [
    "Sep  9 09:39:05 n2 mfsmount[28930]: error writing file number 472044: ENOSPC (No space left on device)",
    "Mar  3 03:03:03 n3 s3fs[77]: s3fs.cpp:s3fs_check_service(3900): Failed to check bucket and directory for mount "
    "point : Bad Request(host=https://s3.amazonaws.com)",
]


def test_a_daemons_denied_failure_word_is_no_fallback_finding() -> None:
    """`Shutting down` at a daemon's exit holds `down` but reports nothing (as a library's line)."""
    below_warning("Aug 21 10:30:11 pc beegfs-client[58947]: Shutting down BeeGFS Client:")
    below_warning("Aug 21 10:30:11 pc rclone[58947]: vfs cache: no error while flushing")


def test_a_workers_abort_stays_the_collectives() -> None:
    """SIGABRT (-6) is how NCCL's watchdog ends a hung rank: collective_peer_failure's, not a crash."""
    found_as("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 1) of "
             "binary: /usr/bin/python3", "nccl", "warning")


def test_an_oom_killers_stack_frame_is_evidence_not_an_alarm() -> None:
    """A frame of the OOM killer's call trace read alone carries its kind at info: the report's first line is the
    finding (a whole report's frames never raise a second alarm)."""
    found_as("Apr 25 19:05:01 n1 kernel: [ 7097.005006]  oom_kill_process.cold+0x9/0x10", "oom", "info")
    found_as("[ 7097.005010]  out_of_memory+0x1b6/0x4e0", "oom", "info")


BENIGN = [
    # md arrays started whole, mdadm with no failed member
    "[    9.870001] md/raid1:md0: active with 2 out of 2 mirrors",
    "[    9.870001] md/raid:md0: raid level 5 active with 4 out of 4 devices, algorithm 2",
    "raid1: raid set md2 active with 2 out of 2 mirrors",
    "Failed Devices : 0",
    "       0       8        1        0      active sync   /dev/sda1",
    # capacity changes that are media, resizes or detached loop devices
    "[    5.100000] loop3: detected capacity change from 0 to 129024",
    "[ 9000.100000] loop3: detected capacity change from 129024 to 0",
    "[  100.000000] sdb: detected capacity change from 0 to 62521344",
    "[  100.000000] nvme0n1: detected capacity change from 1000 to 2000",
    # the tools when all is well
    "Error summary:    no errors found",
    "ATA Error Count: 0",
    "tank   21.8T  12.1T  9.70T        -         -     4%    55%  1.00x  ONLINE  -",
    "[gpu-n03:40211] *** Process received signal ***",
    # iSCSI's normal notes
    "[ 3011.220010] scsi host6: iSCSI Initiator over TCP/IP",
    "iscsid: Connection1:0 to [target: iqn.2003-01.org.linux-iscsi.t1:sn.1, portal: 10.0.0.9,3260] through [iface: "
    "default] is operational now",
    # Gluster's informational lines
    "[2024-02-01 10:11:12.000123 +0000] I [MSGID: 114057] [client-handshake.c:1283:select_server_supported_programs] "
    "0-gv0-client-2: Using Program GlusterFS 4.x v1, Num (1298437), Version (400)",
    # Ceph's health when the data path is fine: cleared, healthy, configuration checks
    "cluster [INF] Health check cleared: OSD_DOWN (was: 1 osds down)",
    "cluster [INF] Cluster is now healthy",
    "    health: HEALTH_OK",
    "[WRN] POOL_APP_NOT_ENABLED: 1 pool(s) do not have an application enabled",
    "cluster [WRN] Health check failed: noout flag(s) set (OSDMAP_FLAGS)",
    # a report's neutral lines and the tools' healthy output
    "cluster [INF] Health check cleared: MDS_SLOW_REQUEST (was: 1 MDSs report slow requests)",
    "[2023-01-01 00:00:00.000001] I [MSGID: 114046] [client-handshake.c:855:client_setvolume_cbk] 0-scratch-client-0: "
    "Connected to scratch-client-0, attached to remote volume '/bricks/b0'.",
    "Recovered 1 nodes for file system gpfs01.",
    "[    2.100000] tegra194-pcie 14160000.pcie: Link up, Gen4",
    "warning: Cuda API error detected: cudaDeviceEnablePeerAccess returned (0x2c0)",
    # the same printers when all is well
    "[2021-02-01 10:00:00.000001] I [MSGID: 114046] [client-handshake.c:1109:client_setvolume_cbk] 0-home-client-3: "
    "Connected to home-client-3, attached to remote volume '/bricks/home'.",
    "    osd: 12 osds: 12 up (since 3d), 12 in (since 3w)",
    "automount[812]: mounted indirect on /home with timeout 300, freq 75 seconds",
    "Aug 21 10:30:11 pc rclone[58947]: Shutting down the VFS cache",
    "cat: /proc/self/status: No such file or directory",
    # a torchelastic worker's abort stays the collective's, TensorFlow's no-driver note and peermem's teardown race are
    # info
    "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this "
    "host (c1): /proc/driver/nvidia/version does not exist",
    "[25033.266922] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further "
    "processing",
    # NCCL's vNic properties asked past the ones made (handled at init), Slurm's NVML process list too small: info
    "3: NET/IB : Requested properties for vNic 2, only 2 vNics have been created",
    "5: slurmstepd: error: NVML: Failed to get Compute running procs(12): Insufficient Size",
    # the same printers when all is well: a check condition ESXi reports for a probe, a PMIC without error, sensors ok
    "cpu0:1)ScsiDeviceIO: 1688: Command 0x85 to device \"naa.6\" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x20 "
    "0x0.",
    "DIMM A2 PMIC Error: No Error",
    "CPU Temp         | 45.000     | degrees C  | ok    | 0.000     | 0.000     | 0.000     | 85.000    | 90.000    "
    "| 90.000",
    "NVIDIA A100-SXM4-80GB, 00000000:07:00.0, [Not Supported], 81920 MiB",
    "OK - all arrays ok",
    # nvidia-peermem loaded
    "[   12.000001] nvidia_peermem: loading out-of-tree module taints kernel.",
    # mount success
    "mount: /dev/sdb1 mounted on /scratch.",
]


globals().update(table_tests(other=FOUND, kernel_evidence=KERNEL_FOUND + KERNEL_FOUND_11F + KERNEL_FOUND_11D,
                             no_drain=FALLBACK_LINES, twins=BENIGN, info=INFO_LINES,
                             fallback=[(line, "nfs") for line in FALLBACK_LINES]))
