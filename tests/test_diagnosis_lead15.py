"""Round 15's rules from the rules halves of six fresh collections (round15a-f; lead15_* in
slurmtools/data/diagnosis_rules.toml): each family's lines in words the collections' rows do not quote (other devices,
codes, units and values), the benign twins of the same printers, and the trust that keeps a job's or a tool's line from
draining a node. The collections' own rows are scored by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    ("WARNING: CPU: 17 PID: 0 at kernel/watchdog_hld.c:127 watchdog_overflow_callback+0x9b/0xd0", "soft_lockup",
     "critical"),
    ("nouveau E[   PGRAPH][0000:02:00.0] TRAP_MP_EXEC - TP 0 MP 0: INVALID_OPCODE at 000000 warp 2", "gpu_init",
     "warning"),
    ("nouveau 0000:65:00.0: python3[31337]: channel 2 killed!", "gpu_init", "warning"),
    ("[drm:amdgpu_ring_test_helper [amdgpu]] *ERROR* ring gfx_0.0.0 test failed (-110)", "gpu_init", "warning"),
    ("block drbd3: PingAck did not arrive in time.", "nfs", "warning"),
    ("drbd r0/0 drbd1 peer-b: conn( Connected -> BrokenPipe ) peer( Secondary -> Unknown )", "nfs", "warning"),
    ("o2net: Connection to node web2 (num 2) at 10.0.0.12:7777 has been idle for 60.0 secs, shutting it down.", "nfs",
     "warning"),
    ("CIFS: Status code returned 0xc000020c STATUS_CONNECTION_DISCONNECTED", "nfs", "warning"),
    # (behind the kernel's own "BTRFS error" prefix the older local_fs_error reads it first, at error)
    ("BTRFS error (device nvme0n1p2): parent transid verify failed on 30408704 wanted 1125 found 1110", "disk",
     "error"),
    ("parent transid verify failed on 30408704 wanted 1125 found 1110", "disk", "warning"),
    ("XFS (nvme1n1): Bad inode block magic!", "disk", "warning"),
    ("md: invalid raid superblock magic on nvme2n1p1", "disk", "warning"),
    ("sd 4:0:0:0: [sde] tag#7 UNKNOWN(0x2003) Result: hostbyte=0x00 driverbyte=0x06 cmd_age=30s", "disk", "warning"),
    ("CIFS: VFS: \\\\fs01 Close unmatched open for MID:4f2", "nfs", "warning"),
    ("nfsd: Unknown symbol svc_create_pooled (err -22)", "nfs", "warning"),
    ("EDAC FSL_DDR MC1: Faulty ECC bit: 3", "mce", "warning"),
    ("nwl-pcie fd0e0000.pcie: Fatal Error in AER Capability", "aer", "warning"),
    ("nouveau 0000:65:00.0: gr: DATA_ERROR 0000009c", "gpu_init", "warning"),
    ("nouveau 0000:65:00.0: fifo: write fault at 00000a1000 engine 00 [PGRAPH] client 0f [GPC0/PROP_0]", "gpu_init",
     "warning"),
    ("block nvme0n1: no usable path - requeuing I/O", "disk", "warning"),
    ("EEH: Frozen PHB#0-PE#1 detected", "aer", "warning"),
    ("block nbd3: Receive control failed (result -104)", "nfs", "warning"),
    ("igb 0000:05:00.0 0000:05:00.0 (uninitialized): PCIe link lost, device now detached", "pcie", "error"),
    ("ixgbe 0000:19:00.0 eno1: initiating reset due to tx timeout", "ib", "warning"),
    ("iavf 0000:41:02.0: Reset task did not complete, VF disabled", "ib", "warning"),
]
JOB_FAULTS = [
    ("[ERROR] HCCL(5120,python3):2025-01-02-03:04:05.678.901 [transport_manager.cc:412] [5133] wait link timeout",
     "nccl", "error"),
    ("EI0006: 2025-01-02-03:04:05.678.901 The wait execution of the Notify register times out.", "nccl", "error"),
    ("EE9999 The error from device(chipId:0, dieId:1), serial number is 4, an exception occurred during AICORE task",
     "cuda", "error"),
    ("[ERROR] RUNTIME(1234,python):2025-01-02-03:04:05 Call runtime aclrtSynchronizeDevice error.", "cuda", "error"),
    ("[h264 @ 0x55d1] Failed setup for format cuda: hwaccel initialisation returned error.", "cuda", "warning"),
    ("RuntimeError: CUDA operation failed: Invalid error code (719) at kernels.cu:88", "cuda", "error"),
    ("Job 12 Missing files after 5 seconds:", "nfs", "warning"),
    ("[12,3] [btl_openib_component.c:3644:handle_wc] from node7 to: node9 status number 12 for wr_id 2049 opcode 1",
     "ib", "warning"),
]
TOOL_FAULTS = [
    ("   Active: failed (Result: oom-kill) since Mon 2025-03-03 10:00:00 UTC; 1min ago", "oom", "error"),
    ("nvidia-vgpu-mgr[4411]: error: vmiop_log: (0x0): RPC RINGs are not valid", "gpu_init", "warning"),
    ("make[2]: *** [build-sanity-checks] Error 2", "gpu_init", "warning"),
    ("NSCQError: NSCQ_RC_ERROR_NOT_FOUND", "fabric_manager", "warning"),
    ("A dependency job for nfs-mountd.service failed. See 'journalctl -xe' for details.", "nfs", "warning"),
    ("mount.nfs4: mount(2): Permission denied", "nfs", "warning"),
    ("[2024-05-01 01:02:03.456789] E [client-handshake.c:1449:client_query_portmap_cbk] 0-gv0-client-1: failed to "
     "get the port number for remote subvolume", "nfs", "warning"),
    ("[2024-05-01 01:02:03.456789] E [MSGID: 114031] [client-rpc-fops.c:2547:client3_3_lookup_cbk] 0-gv0-client-0: "
     "remote operation failed", "nfs", "warning"),
    ("mount: /data: 文件系统类型错误、选项错误、/dev/sdc1 上有坏超级块、缺少代码页或帮助程序或其他错误.", "disk",
     "warning"),
    ("mount: 文件系统类型错误、选项错误、nas01:/export/home 上有坏超级块、", "nfs", "warning"),
    ("[/dev/nvme0n1p3].corruption_errs  12", "disk", "warning"),
    ("          State : clean, degraded, recovering", "disk", "warning"),
    ("BTRFS info (device nvme1n1): balance: ended with status: -117", "disk", "warning"),
    ("   7 | 03/01/2025 | 10:00:00 | Temperature Inlet Temp | Lower Critical going low  | Asserted", "thermal",
     "warning"),
]
TWINS = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "nvidia-vgpu-mgr[4411]: notice: vmiop_log: ######## Guest NVIDIA Driver Information: ########",
    "block drbd0: conn( WFConnection -> WFReportParams )",
    "o2net: Connected to node web2 (num 2) at 10.0.0.12:7777",
    "CIFS: Status code returned 0xc0000016 STATUS_MORE_PROCESSING_REQUIRED",
    "md0 : active raid1 sdb1[1] sda1[0]",
    "[2024-05-01 01:02:03.456789] I [MSGID: 100030] [glusterfsd.c:2847:main] 0-/usr/sbin/glusterfs: Started running",
    "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered",
    "Job for nfs-server.service canceled.",
    "[/dev/nvme0n1p3].write_io_errs    0",
    "          State : clean",
    "BTRFS info (device nvme1n1): balance: ended with status: 0",
    "md: md3: data-check interrupted.",
    "CIFS: fs/smb/client/connect.c: cifs_reconnect: reconn_set_ipaddr_from_hostname: rc=0",
    "thermal_sys: Failed to find 'trips' node",
    "EEH: Recovering PHB#0-PE#1",
    "task:kworker/u16:2  state:D stack:0     pid:123   ppid:2      flags:0x00004000",
    "i40e 0000:3b:00.0: Bring down and up the VF interface to make this change effective.",
    "   7 | 03/01/2025 | 10:00:00 | Temperature Inlet Temp | Lower Critical going low  | Deasserted",
    "ixgbe 0000:19:00.0 eno1: NIC Link is Up 10 Gbps, Flow Control: RX/TX",
    "ice 0000:3b:00.0: The DDP package was successfully loaded: ICE OS Default Package version 1.3.30.0",
]


globals().update(table_tests(kernel=KERNEL_FAULTS, other=JOB_FAULTS + TOOL_FAULTS, twins=TWINS))
