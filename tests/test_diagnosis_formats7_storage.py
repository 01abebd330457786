"""Round 7's storage printers, from their format strings: the shared filesystems' clients (the Sun RPC programs beside
nfs and lockd, the NFS client's and lockd's workarounds, Root-NFS, Lustre/LNet console warnings without an error word,
the Ceph kernel client's messenger/OSD/MDS faults, the BeeGFS client module, the SMB client), the local disks (NVMe
controllers and admin commands, the block layer's other status names, md RAID, ext4/XFS/btrfs shutdowns and log
faults, SCSI results and aborts, smartd's critical reports) and PCIe ports outside AER (pciehp, DPC/EDR, the PCI core's
resets and bridges).

Every fault line below is a format string of the public source named in the comment above it (Linux 6.12 unless said
otherwise), with its conversions filled in by hand: no line is copied from a log or from the field corpus. Each family
has benign twins (the same printer's healthy or informational lines) that must stay below warning; the lines a job, a
daemon or a tool prints are checked for their trust, and the kernel's own for trust kernel.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import found_as, never_drains, table_tests

FAULTS = [
    # ---- net/sunrpc/clnt.c call_timeout(): "%s: server %s not responding, timed out|still trying" with the RPC
    # program's name: nfsacl (fs/nfs/nfs3client.c), mount (fs/nfs/mount_clnt.c)
    ("nfsacl: server fs01 not responding, still trying", "nfs", "error"),
    ("mount: server 10.1.2.3 not responding, timed out", "nfs", "error"),
    # ---- fs/nfs nfs4state.c "NFS: %s: lost %d locks", "NFS: volatile file handles not supported (server %s)";
    # nfs4proc.c "NFS: Broken NFSv4 server %s is returning a delegation for OPEN(CLAIM_DELEGATE_CUR)", "NFSv4: server
    # %s is incorrectly applying open mode checks to a SETATTR that is not associated with an open"; filelayout "NFS:
    # %s: No data server for offset index %d"; blocklayout/dev.c "pNFS: no device found for volume %*phN"; nfs4getroot.c
    ("NFS: nfs4_reclaim_locks: lost 3 locks", "nfs", "warning"),
    ("NFS: volatile file handles not supported (server fs01)", "nfs", "warning"),
    ("NFS: Broken NFSv4 server fs01 is returning a delegation for OPEN(CLAIM_DELEGATE_CUR)", "nfs", "warning"),
    ("NFSv4: server fs01 is incorrectly applying open mode checks to a SETATTR that is not associated with an open",
     "nfs", "warning"),
    ("NFS: nfs4_fl_select_ds_fh: No data server for offset index 3", "nfs", "warning"),
    ("pNFS: no device found for volume 6000c29a3b11", "nfs", "warning"),
    ("nfs4_get_rootfh: getroot encountered non-directory", "nfs", "warning"),
    # ---- fs/lockd clntproc.c ("lockd: unexpected unlock status: %d", "lockd: unexpected server status %d", "lockd:
    # weird return %d for CANCEL call", "lockd: spurious grace period reject?!", "nlm_alloc_call: failed, waiting for
    # memory", "%s: VFS is out of sync with lock manager!"), svcproc.c "lockd: rejected NSM callback from %08x"
    ("lockd: unexpected unlock status: 4", "nfs", "warning"),
    ("lockd: unexpected server status 5", "nfs", "warning"),
    ("lockd: weird return 5 for CANCEL call", "nfs", "warning"),
    ("lockd: spurious grace period reject?!", "nfs", "warning"),
    ("lockd: rejected NSM callback from 0a000001", "nfs", "warning"),
    ("nlm_alloc_call: failed, waiting for memory", "nfs", "warning"),
    ("do_vfs_lock: VFS is out of sync with lock manager!", "nfs", "warning"),
    # ---- net/sunrpc: sched.c "RPC: Inactive task (%p) being woken up!", svc_xprt.c "RPC request reserved %d but used
    # %d", svcsock.c "rpc-srv/tcp: %s: %s %d when sending %d bytes - shutting down socket", svc.c "svc: failed to
    # register %sv%u RPC service (errno %d).", backchannel_rqst.c "Failed to create bc rpc_rqst", xprt.c
    # "xprt_adjust_timeout: rq_timeout = 0!", xprtsock.c "Callback slot table overflowed", xprtrdma backchannel.c
    # "RPC/RDMA backchannel overflow", frwr_ops.c "rpcrdma: 'frwr' mode is not supported by device %s"
    ("RPC: Inactive task (00000000deadbeef) being woken up!", "nfs", "warning"),
    ("RPC request reserved 116 but used 244", "nfs", "warning"),
    ("rpc-srv/tcp: nfsd: sent 65536 when sending 1048576 bytes - shutting down socket", "nfs", "warning"),
    ("svc: failed to register nfsdv3 RPC service (errno 111).", "nfs", "warning"),
    ("Failed to create bc rpc_rqst", "nfs", "warning"),
    ("xprt_adjust_timeout: rq_timeout = 0!", "nfs", "warning"),
    ("Callback slot table overflowed", "nfs", "warning"),
    ("RPC/RDMA backchannel overflow", "nfs", "warning"),
    ("rpcrdma: 'frwr' mode is not supported by device mlx5_0", "nfs", "warning"),
    # ---- fs/nfs/nfsroot.c "Root-NFS: no NFS server address", "Root-NFS: mount options string too long"
    ("Root-NFS: no NFS server address", "nfs", "error"),
    ("Root-NFS: mount options string too long", "nfs", "error"),
    # ---- lustre-release: libcfs tracefile.c prints D_WARNING as "Lustre: "/"LNet: " (with "%d:%d:(%s:%d:%s()) "
    # outside the console mask): ptlrpc client.c "This client was banned by administrative request for file system
    # %s. ...", import.c "%s: connection denied by %s: rc = %d", lov_obd.c "%s: unexpected disconnect #%d",
    # socklnd_cb.c "Host %pISc reset our connection while we were sending data; it may have rebooted: rc = %d",
    # o2iblnd_cb.c "Conn stale %s version %x/%x incarnation %llu/%llu", "PUT_NACK from %s", "Bad completion: %swaiting,
    # type %x (wanted %x)",
    # "Stale connection request", lib-move.c "No peer NI for gateway %s. Attempting to find an alternative route."
    ("Lustre: This client was banned by administrative request for file system scratch. All requests will get "
     "Operation not permitted.", "nfs", "warning"),
    ("Lustre: scratch-MDT0000-mdc-ffff9b2c: connection denied by scratch-MDT0000: rc = -13", "nfs", "warning"),
    ("Lustre: scratch-clilov-ffff9b2c: unexpected disconnect #3", "nfs", "warning"),
    ("LNet: Host 10.0.0.5 reset our connection while we were sending data; it may have rebooted: rc = -104", "nfs",
     "warning"),
    ("LNet: 4567:0:(o2iblnd_cb.c:2711:kiblnd_passive_connect()) Conn stale 10.0.0.5@o2ib version 12/12 incarnation "
     "1700000000/1700000001", "nfs", "warning"),
    ("LNet: 4567:0:(o2iblnd_cb.c:392:kiblnd_handle_rx()) PUT_NACK from 10.0.0.5@o2ib", "nfs", "warning"),
    ("LNet: 4567:0:(o2iblnd_cb.c:227:kiblnd_wait_rx()) Bad completion: waiting, type 3 (wanted 2)", "nfs", "warning"),
    ("LNet: 4567:0:(o2iblnd_cb.c:2619:kiblnd_passive_connect()) Stale connection request", "nfs", "warning"),
    ("LNet: 4567:0:(lib-move.c:2083:lnet_handle_find_routed_path()) No peer NI for gateway 10.0.0.9@o2ib. Attempting "
     "to find an alternative route.", "nfs", "warning"),
    # ---- net/ceph messenger.c con_fault() "%s%lld %s %s" with con->error_msg ("bad crc/signature", "wrong peer at
    # address", "missing required protocol features"), messenger_v1.c "%s%lld %s feature set mismatch, my %llx <
    # server's %llx, missing %llx", osd_client.c ("tid %llu on osd%d timeout", "cluster is full (osdmap FULL)", "pool
    # %lld is full or reached quota", "osdc handle_map corrupt msg"), ceph_common.c "bad fsid, had %pU got %pU"; fs/ceph
    # mds_client.c ("mds%d rejected session", "mds%d peer reset in unexpected state %s"), caps.c (" dropping dirty %s
    # state for %p %llx.%llx"), addr.c ("%llx.%llx %lld forced umount"), inode.c ("%p %llx.%llx is shut down"), file.c
    # ("async create failure path=(%llx)%s result=%d!"), super.c ("umount was killed, %ld")
    ("libceph: osd12 (1)10.0.0.5:6801 bad crc/signature", "nfs", "warning"),
    ("libceph: osd12 (1)10.0.0.5:6801 wrong peer at address", "nfs", "warning"),
    ("libceph: osd12 (1)10.0.0.5:6801 missing required protocol features", "nfs", "warning"),
    ("libceph: mon0 (1)10.0.0.1:6789 feature set mismatch, my 107b84a842aca < server's 40107b84a842aca, missing "
     "400000000000000", "nfs", "warning"),
    ("libceph: tid 12345 on osd3 timeout", "nfs", "warning"),
    ("libceph: cluster is full (osdmap FULL)", "nfs", "warning"),
    ("libceph: pool 3 is full or reached quota", "nfs", "warning"),
    ("libceph: osdc handle_map corrupt msg", "nfs", "warning"),
    ("libceph: bad fsid, had 9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b got 1a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b", "nfs",
     "warning"),
    ("ceph: mds0 rejected session", "nfs", "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: mds1 peer reset in unexpected state up:replay", "nfs",
     "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]:  dropping dirty Fw state for 00000000deadbeef "
     "10000000abc.fffffffffffffffe", "nfs", "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: 10000000abc.fffffffffffffffe 4096 forced umount", "nfs",
     "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: 00000000deadbeef 10000000abc.fffffffffffffffe is shut down",
     "nfs", "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: async create failure path=(1)dir/file result=-116!", "nfs",
     "warning"),
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: umount was killed, -512", "nfs", "warning"),
    # ---- ThinkParQ/beegfs client_module: printk_fhgfs's "beegfs: %s(%u): " (comm, pid) and the Logger's "%s: %s":
    # FhgfsOpsCommKit.c "Communication error in SENDDATA|RECVDATA stage. Node: %s", MessagingTk.c "Retrying
    # communication with node: %s", InternodeSyncer.c "Node registration failed. Management node offline? ...", "%s
    # state sync failed. All %s set to offline.", FhgfsOpsCommKit.c "Skipping communication with offline targetID: %hu",
    # "Unable to proceed without a working root metadata node", "Mount sanity check failed. Canceling mount."
    ("beegfs: dd(4321): 5F2A-65432-node01: Remoting (write file): Communication error in SENDDATA stage. Node: "
     "storage01 [ID: 1]", "nfs", "warning"),
    ("beegfs: dd(4321): Remoting (read file): Communication error in RECVDATA stage. Node: storage01 [ID: 1] (recv "
     "result: -110)", "nfs", "warning"),
    ("beegfs: python3(4321): Messaging (RPC): Retrying communication with node: meta01 [ID: 2]", "nfs", "warning"),
    ("beegfs: beegfs_XNodeSyn(812): InternodeSyncer: Node registration failed. Management node offline? Will keep on "
     "trying...", "nfs", "warning"),
    ("beegfs: dd(4321): Remoting (write file): Skipping communication with offline targetID: 101", "nfs", "warning"),
    ("beegfs: mount(4321): App (mount): Unable to proceed without a working root metadata node", "nfs", "warning"),
    # ---- fs/smb/client: smb2maperror.c "Status code returned 0x%08x %s"; transport.c "Cancelling wait for mid %llu
    # cmd: %d"; file.c "No writable handle in writepages rc=%d"; connect.c "SMB response too long (%u bytes)"
    ("CIFS: Status code returned 0xc000006d STATUS_LOGON_FAILURE", "nfs", "warning"),
    ("CIFS: Status code returned 0xc0000203 STATUS_USER_SESSION_DELETED", "nfs", "warning"),
    ("CIFS: VFS: \\\\fs01 Cancelling wait for mid 1234 cmd: 5", "nfs", "warning"),
    ("CIFS: VFS: No writable handle in writepages rc=-9", "nfs", "warning"),
    ("CIFS: VFS: \\\\fs01 SMB response too long (16777216 bytes)", "nfs", "warning"),
    # ---- nfs-utils utils/mount/error.c mount_error() (strerror after "%s: ", "%s: mount point %s does not exist", "%s:
    # %s is busy or already mounted or sharecache fail"), rpc_mount_errors() "mount to NFS server '%s' failed: " (a
    # background mount, to syslog), umount_error() "%s: %s: device is busy"; network.c "rpc.statd is not running but
    # is required for remote locking."
    ("mount.nfs: Network is unreachable", "nfs", "warning"),
    ("mount.nfs: mount point /mnt/x does not exist", "nfs", "warning"),
    ("mount.nfs: /mnt/x is busy or already mounted or sharecache fail", "nfs", "warning"),
    ("mount[1234]: mount to NFS server 'fs01' failed: timed out, retrying", "nfs", "warning"),
    ("umount.nfs: /mnt/x: device is busy", "nfs", "warning"),
    ("mount.nfs: rpc.statd is not running but is required for remote locking.", "nfs", "warning"),
    # ---- fs/nfs/fs_context.c: the mount's parse errors (nfs_invalf(): "NFS: Bad mount option value specified", "NFS:
    # Unsupported NFS version", "NFS: sec=%s option not recognized", "NFS: Value for '%s' out of range", "NFS: Mount
    # option vers=%u does not support minorversion=%u"); callback_xdr.c "NFS: NFSv4 callback contains invalid cred"
    ("NFS: Bad mount option value specified", "nfs", "warning"),
    ("NFS: Unsupported NFS version", "nfs", "warning"),
    ("NFS: sec=krb6 option not recognized", "nfs", "warning"),
    ("NFS: Value for 'timeo' out of range", "nfs", "warning"),
    ("NFS: Mount option vers=3 does not support minorversion=1", "nfs", "warning"),
    ("NFS: NFSv4 callback contains invalid cred", "nfs", "warning"),
    # ---- lustre-release utils/liblustreapi.c llapi_target_check_cb() (`lfs check servers`): "%s inactive.", and
    # llapi_error(..., "error: check '%s'") after "%s %s: " (program, command) with ": %s (%d)" appended
    ("scratch-OST0001-osc-ffff9b2c00000000 inactive.", "nfs", "warning"),
    ("lfs check: error: check 'scratch-OST0002-osc-ffff9b2c00000000': Resource temporarily unavailable (11)", "nfs",
     "warning"),
    # ---- Kubernetes: the kubelet's "MountVolume.MountDevice failed for volume %q : %v" with ceph-csi's "an error (exit
    # status 32) occurred while running mount args: [-t ceph ...]"; a CSI node plugin's "rpc error: code = Internal
    # desc = mount failed: exit status 32 Mounting command: mount Mounting arguments: -t nfs4 ..." (mount-utils);
    # ceph-csi's "rados: ret=%d, %s"; the event body's "Output: mount error(%d): %s" (mount.cifs) and "Mounting
    # arguments: %s"
    ('Warning  FailedMount  2m  kubelet  MountVolume.MountDevice failed for volume "pvc-1234" : rpc error: code = '
     'Internal desc = an error (exit status 32) occurred while running mount args: [-t ceph 10.0.0.1:6789:/volumes/csi '
     '/var/lib/kubelet/plugins/kubernetes.io/csi/cephfs.csi.ceph.com/abc/globalmount -o name=admin]', "nfs", "warning"),
    ("E0111 09:52:01.123456    1234 nodeserver.go:123] rpc error: code = Internal desc = mount failed: exit status 32 "
     "Mounting command: mount Mounting arguments: -t nfs4 -o vers=4.1 fs01:/export /var/lib/kubelet/pods/x Output: "
     "mount.nfs4: Connection timed out", "nfs", "warning"),
    ("E0111 09:52:01.123456    1234 utils.go:240] ID: 12 Req-ID: 0001 GRPC error: rpc error: code = Internal desc = "
     "failed to get connection: connecting failed: rados: ret=-110, Connection timed out", "nfs", "warning"),
    ("Output: mount error(13): Permission denied", "nfs", "warning"),
    ("Mounting arguments: -t nfs 10.0.0.1:/export /var/lib/kubelet/pods/abc/volumes/kubernetes.io~nfs/pv-nfs", "nfs",
     "warning"),
    # ---- IBM Storage Scale's `mmhealth node show`: a component row at DEGRADED or FAILED with its events
    ("FILESYSTEM     FAILED        2 min. ago     fs_unmounted(gpfs1)", "nfs", "warning"),
    ("NETWORK        DEGRADED      5 min. ago     ib_rdma_port_down(mlx5_0/1)", "nfs", "warning"),
    # ---- drivers/nvme/host: pci.c "IO queues lost", "IO queues not created"; multipath.c "no usable path - requeuing
    # I/O", "no available path - failing I/O"; core.c "Duplicate cntlid %u with %s, subsys %s, rejecting", "use of
    # /dev/disk/by-id/ may cause data corruption", "identifiers changed for nsid %d", "Could not set queue count (%d)";
    # nvme_log_err() for an admin command the drive failed ("%s: %s(0x%x), %s (sct 0x%x / sc 0x%x) %s%s")
    ("nvme nvme0: IO queues lost", "disk", "warning"),
    ("nvme nvme0: IO queues not created", "disk", "warning"),
    ("nvme nvme1: no usable path - requeuing I/O", "disk", "warning"),
    ("nvme nvme1: no available path - failing I/O", "disk", "warning"),
    ("nvme nvme2: Duplicate cntlid 1 with nvme1, subsys nqn.2014-08.org.nvmexpress:uuid:1234, rejecting", "disk",
     "warning"),
    ("nvme nvme0: use of /dev/disk/by-id/ may cause data corruption", "disk", "warning"),
    ("nvme nvme0: identifiers changed for nsid 1", "disk", "warning"),
    ("nvme nvme0: Could not set queue count (16385)", "disk", "warning"),
    ("nvme0: Admin Cmd(0x6), Internal Error (sct 0x0 / sc 0x6) DNR ", "disk", "warning"),
    ("nvme0: Admin Cmd(0x2), Data Transfer Error (sct 0x0 / sc 0x4) ", "disk", "warning"),
    # ---- block/blk-core.c blk_print_req_error(): "%s error, dev %s, sector %llu op 0x%x:(%s) flags 0x%x phys_seg %u
    # prio class %u" with blk_errors[]'s "protection", "reservation conflict", "device offline"
    ("protection error, dev sde, sector 4096 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "disk", "warning"),
    ("reservation conflict error, dev sdf, sector 0 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0", "disk",
     "warning"),
    ("device offline error, dev sdg, sector 2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "disk", "warning"),
    # ---- drivers/scsi/megaraid/megaraid_sas_base.c megasas_decode_evt(): "%d (%s/0x%04x/%s) - %s" with
    # format_timestamp() and format_class() ("WARN", "CRIT", "FATAL", "DEAD") before the controller's event text
    ("megaraid_sas 0000:03:00.0: 1234 (boot + 27s/0x0004/CRIT) - VD 00/0 is now DEGRADED", "disk", "warning"),
    ("megaraid_sas 0000:03:00.0: 1236 (686400000s/0x0002/CRIT) - State change on PD 05(e0x20/s5) from ONLINE(18) to "
     "FAILED(11)", "disk", "warning"),
    ("megaraid_sas 0000:03:00.0: 1237 (686400000s/0x0002/WARN) - Predictive failure: PD 05(e0x20/s5)", "disk",
     "warning"),
    # ---- drivers/md: dm-thin.c "%s: switching pool to %s%s mode" ("out-of-data-space (queue IO)", "read-only",
    # "fail"), "%s: metadata operation '%s' failed: error = %d"; dm-integrity.c "%pg: Checksum failed at sector
    # 0x%llx"; dm-verity-target.c "%s: %s block %llu is corrupted"; dm-crypt.c "%pg: INTEGRITY AEAD ERROR, sector %llu"
    ("device-mapper: thin: 253:2: switching pool to out-of-data-space (queue IO) mode", "disk", "error"),
    ("device-mapper: thin: 253:2: switching pool to fail mode", "disk", "error"),
    ("device-mapper: thin: 253:2: metadata operation 'dm_pool_commit_metadata' failed: error = -5", "disk", "error"),
    ("device-mapper: integrity: dm-3: Checksum failed at sector 0x1234", "disk", "error"),
    ("device-mapper: verity: 253:0: data block 1234 is corrupted", "disk", "error"),
    ("device-mapper: crypt: dm-4: INTEGRITY AEAD ERROR, sector 4096", "disk", "error"),
    # ---- drivers/md raid0.c "md/raid0%s: Disk failure on %pg detected, failing array.", raid1.c/raid10.c
    # "md/raid1:%s: %pg: unrecoverable I/O read error for block %llu"
    ("md/raid0md0: Disk failure on sdb detected, failing array.", "disk", "error"),
    ("md/raid1:md0: sdb1: unrecoverable I/O read error for block 4096", "disk", "error"),
    ("md/raid10:md2: sdd: unrecoverable I/O read error for block 123456", "disk", "error"),
    # ---- fs/ext4 ("EXT4-fs (%s): shut down requested (%d)", "Delayed block allocation failed for inode %lu at logical
    # offset %llu with max blocks %u with error %d"); fs/xfs xfs_do_force_shutdown() "%s (0x%x) detected at %pS (%s:%d).
    # Shutting down filesystem." (every cause), xfs_log_recover.c "log record CRC mismatch: found 0x%x, expected 0x%x.",
    # "Failed to recover intents", xfs_log.c "ran out of log space ...", xfs_buf.c "Please run xfs_repair to determine
    # the extent of the problem.", xfs_error.c "First %d bytes of corrupted metadata buffer:", xfs_message.c "Assertion
    # failed: %s, file: %s, line: %d"; fs/btrfs "devid %llu uuid %pU is missing", "Skipping commit of aborted
    # transaction.", "Transaction aborted (error %d)", "unable to fixup (regular) error at logical %llu on dev %s"
    ("EXT4-fs (sda1): shut down requested (2)", "disk", "error"),
    ("EXT4-fs (sda1): Delayed block allocation failed for inode 1234 at logical offset 0 with max blocks 8 with "
     "error 5", "disk", "error"),
    ("XFS (nvme0n1): Block device removal (0x20) detected at fs_bdev_mark_dead+0x5a/0x70 (fs/xfs/xfs_super.c:1183).  "
     "Shutting down filesystem.", "disk", "error"),
    ("XFS (nvme0n1): log record CRC mismatch: found 0x1234, expected 0x5678.", "disk", "error"),
    ("XFS (nvme0n1): Failed to recover intents", "disk", "error"),
    ("XFS (nvme0n1): ran out of log space tail 0x1/0x2, head lsn 0x3, head 0x4/0x5, prev head 0x6/0x7", "disk",
     "error"),
    ("XFS (nvme0n1): Please run xfs_repair to determine the extent of the problem.", "disk", "error"),
    ("XFS (nvme0n1): First 128 bytes of corrupted metadata buffer:", "disk", "error"),
    ("XFS: Assertion failed: 0, file: fs/xfs/xfs_inode.c, line: 123", "disk", "error"),
    ("BTRFS error (device nvme0n1p2): devid 2 uuid 3a1b2c3d-0000-4e5f-8a9b-0c1d2e3f4a5b is missing", "disk", "error"),
    ("BTRFS warning (device nvme0n1p2 state E): Skipping commit of aborted transaction.", "disk", "error"),
    ("BTRFS: Transaction aborted (error -28)", "disk", "error"),
    # ---- the older kernels' words of the same events: XFS 4.x-5.x ("Corruption of on-disk metadata detected.  Shutting
    # down filesystem", "log mount finish failed", "Please umount the filesystem and rectify the problem(s)"), 2.6's XFS
    # ("Filesystem \"%s\": Corruption of in-memory data detected.  Shutting down filesystem: %s", "I/O Error Detected",
    # "XFS internal error %s at line %d of file %s.  Caller 0x%p", "xfs_force_shutdown(%s,0x%x) called from line %d of
    # file %s.  Return address = 0x%p"), ext3's JBD ("JBD: I/O error detected when updating journal superblock for
    # %s."), ReiserFS's "%s: warning: %s" with an I/O error
    ("XFS (dm-0): Corruption of on-disk metadata detected.  Shutting down filesystem", "disk", "error"),
    ("XFS (dm-1): log mount finish failed", "disk", "error"),
    ("XFS (dm-0): Please umount the filesystem and rectify the problem(s)", "disk", "error"),
    ('Filesystem "dm-0": Corruption of in-memory data detected.  Shutting down filesystem: dm-0', "disk", "error"),
    ('Filesystem "dm-0": I/O Error Detected.  Shutting down filesystem: dm-0', "disk", "error"),
    ('Filesystem "sda1": XFS internal error xfs_trans_cancel at line 1150 of file fs/xfs/xfs_trans.c.  Caller '
     "0xffffffff80123456", "disk", "error"),
    ("xfs_force_shutdown(dm-0,0x8) called from line 1151 of file fs/xfs/xfs_trans.c.  Return address = 0xc0348379",
     "disk", "error"),
    ("JBD: I/O error detected when updating journal superblock for sda1.", "disk", "error"),
    ("JBD: Detected IO errors while flushing file data on sda1", "disk", "error"),
    ("ReiserFS: sda1: warning: zam-7001: io error in reiserfs_find_entry", "disk", "error"),
    # ---- drivers/ide/ide-lib.c ide_dump_ata_status()/ide_dump_ata_error() ("%s: %s: status=0x%02x { ... }", "%s: %s:
    # error=0x%02x { ... }, LBAsect=%llu, sector=%llu"), libata-scsi.c ata_dump_status() ("ata%u: error=0x%02x { ... }")
    ("hda: dma_intr: status=0x51 { DriveReady SeekComplete Error }", "disk", "warning"),
    ("hda: dma_intr: error=0x40 { UncorrectableError }, LBAsect=123456, sector=123456", "disk", "warning"),
    ("ata1: error=0x40 { UncorrectableError }", "disk", "warning"),
    # ---- drivers/scsi: scsi_print_result()'s unnamed host byte in hex, scsi_logging.c "Unit Not Ready", the sense
    # table's ASC 0x04 "Logical unit not ready, ...", scsi_error.c's "abort" of a timed-out command, mpt3sas's
    # "attempting task abort!scmd(%p), outstanding for %u ms & timeout %u ms"
    ("sd 0:0:0:0: [sda] tag#12 UNKNOWN(0x2003) Result: hostbyte=0x07 driverbyte=DRIVER_OK cmd_age=30s", "disk",
     "warning"),
    ("sd 0:0:0:0: [sda] Unit Not Ready", "disk", "warning"),
    ("sd 0:0:0:0: [sda] Add. Sense: Logical unit not ready, cause not reportable", "disk", "warning"),
    ("sd 0:0:0:0: [sda] tag#12 abort", "disk", "warning"),
    ("sd 0:0:0:0: attempting task abort!scmd(0x00000000a1b2c3d4), outstanding for 30120 ms & timeout 30000 ms", "disk",
     "warning"),
    # ---- smartmontools src/smartd.cpp PrintOut(LOG_CRIT, ...): "Device: %s, Failed SMART usage Attribute: %d %s.",
    # "Self-Test Log error count increased from %d to %d", "new Self-Test Log error at hour timestamp %u", "Temperature
    # %u Celsius reached critical limit of %u Celsius (Min/Max %s%s/%u%s)", "failed to read SMART Attribute Data",
    # log_nvme_smart_change()'s "SMART/Health value: Media and Data Integrity Errors changed from %llu to %llu", "NVMe
    # error count increased from %llu to %llu (%d new, %d ignored, %llu unknown)"
    ("smartd[1234]: Device: /dev/sda [SAT], Failed SMART usage Attribute: 5 Reallocated_Sector_Ct.", "disk", "warning"),
    ("smartd[1234]: Device: /dev/sda [SAT], Self-Test Log error count increased from 0 to 1", "disk", "warning"),
    ("smartd[1234]: Device: /dev/sda [SAT], new Self-Test Log error at hour timestamp 12345", "disk", "warning"),
    ("smartd[1234]: Device: /dev/sda [SAT], Temperature 65 Celsius reached critical limit of 60 Celsius (Min/Max "
     "25/65!)", "disk", "warning"),
    ("smartd[1234]: Device: /dev/sda [SAT], failed to read SMART Attribute Data", "disk", "warning"),
    ("smartd[1234]: Device: /dev/nvme0, SMART/Health value: Media and Data Integrity Errors changed from 0 to 2",
     "disk", "warning"),
    ("smartd[1234]: Device: /dev/nvme0, NVMe error count increased from 10 to 12 (2 new, 0 ignored, 0 unknown)",
     "disk", "warning"),
    ("smartd[1234]: Device: /dev/sda [SAT], 8 Total unreadable (pending) sectors", "disk", "warning"),
    # ---- the node's local disk as a job sees it: strerror(EIO) next to a node-local path (Python's OSError "[Errno %d]
    # %s: %r", coreutils' "error writing %s: %s"), strerror(EROFS) on a node-local scratch path (tar's "%s: Cannot
    # write: %s")
    ("OSError: [Errno 5] Input/output error: '/local/scratch/job123/data.bin'", "disk", "warning"),
    ("cp: error writing '/lscratch/x.bin': Input/output error", "disk", "warning"),
    ("tar: /localscratch/x: Cannot write: Read-only file system", "disk", "warning"),
    ("OSError: [Errno 30] Read-only file system: '/mnt/nvme0/ckpt'", "disk", "warning"),
    # ---- mdadm/Monitor.c alert(): "%s event detected on md device %s" (Fail, FailSpare, DegradedArray,
    # DeviceDisappeared, SparesMissing) under mdadm's syslog tag
    ("mdadm[1234]: Fail event detected on md device /dev/md0, component device /dev/sdb1", "disk", "error"),
    ("mdadm[1234]: DegradedArray event detected on md device /dev/md127", "disk", "error"),
    ("mdadm[1234]: DeviceDisappeared event detected on md device /dev/md0", "disk", "error"),
    # ---- systemd src/core/mount.c ("Mount process exited, code=%s, status=%i/%s", "Mounting timed out. Terminating."),
    # unit.c ("Failed with result '%s'.", "Dependency failed for %s."), job.c ("Failed to mount %s.") for a shared
    # filesystem's mount unit
    ("systemd[1]: mnt-nfs\\x2ddata.mount: Mount process exited, code=exited, status=32/n/a", "nfs", "warning"),
    ("systemd[1]: home.mount: Mounting timed out. Terminating.", "nfs", "warning"),
    ("systemd[1]: lustre.mount: Failed with result 'exit-code'.", "nfs", "warning"),
    ("systemd[1]: Failed to mount /scratch.", "nfs", "warning"),
    ("systemd[1]: Dependency failed for Remote File Systems.", "nfs", "warning"),
    # ---- drivers/pci/hotplug pciehp_hpc.c "Timeout on hotplug command %#06x (issued %u msec ago)", "%s: Can not enable
    # the link!"; pciehp_ctrl.c "Slot(%s): Invalid state %#x"; pciehp_pci.c "No new device found"; pcie/dpc.c "Data Link
    # Layer Link Active not cleared in 1000 msec", "root port still busy"; pcie/edr.c "Firmware failed to locate DPC
    # port"; pci.c "timed out waiting for pending transaction; performing function level reset anyway", "Error enabling
    # bridge (%d), continuing"; probe.c "No bus number available for hot-added bridge"
    ("pcieport 0000:00:1c.0: pciehp: Timeout on hotplug command 0x12f1 (issued 2000 msec ago)", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: pciehp: pcie_enable_notification: Can not enable the link!", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: pciehp: Slot(3): Invalid state 0x3", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: pciehp: No new device found", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: DPC: Data Link Layer Link Active not cleared in 1000 msec", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: DPC: root port still busy", "pcie", "warning"),
    ("pcieport 0000:00:1c.0: EDR: Firmware failed to locate DPC port", "pcie", "warning"),
    ("pcieport 0000:40:01.1: timed out waiting for pending transaction; performing function level reset anyway", "pcie",
     "warning"),
    ("pcieport 0000:40:01.1: Error enabling bridge (-22), continuing", "pcie", "warning"),
    ("pci 0000:41:00.0: No bus number available for hot-added bridge", "pcie", "warning"),
    # ---- DCGM's diagnostic table (`dcgmi diag -r 2`): the PCIe plugin's row with "Fail" or "Warn"
    ("|  PCIe + NVLink             | Fail - All                                     |", "pcie", "warning"),
    ("| PCIe                      | Fail - GPU: 0                                  |", "pcie", "warning"),
]


BENIGN_TWINS = [
    # the RPC programs' server that answered again, the NFS client's and sunrpc's healthy notes
    "nfsacl: server fs01 OK",
    "mount: server 10.1.2.3 OK",
    "NFS:  nfs4_try_trunking: Session trunking succeeded for fs02",
    "RPC: Registered tcp transport module.",
    "NFS: Registering the id_resolver key type",
    "NFSD: starting 90-second grace period (net f0000000)",
    # Lustre's rate-limit note at error level, a recovery that evicted nobody, mounts, LNet's interfaces, idle
    # disconnects
    "LustreError: Skipped 3 previous similar messages",
    "LNetError: 4567:0:(o2iblnd_cb.c:3356:kiblnd_check_txs_locked()) Skipped 12 previous similar messages",
    "Lustre: scratch-MDT0000: Recovery over after 0:45, of 12 clients 12 recovered and 0 were evicted.",
    "Lustre: Mounted scratch-client",
    "Lustre: Unmounted scratch-client",
    "LNet: Added LNI 10.0.0.1@o2ib [8/256/0/180]",
    "Lustre: scratch-OST0001-osc-ffff9b2c: disconnect after 20s idle",
    # the Ceph client's sessions coming up and back
    "libceph: mon1 (1)10.0.0.2:6789 session established",
    "libceph: client4171 fsid 9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b",
    "ceph: mds0 came back",
    "ceph: mds0 reconnect success",
    "ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: mds0 recovery completed",
    "ceph: mds0 caps renewed",
    "ceph: loaded (mds proto 32)",
    # NFS mount notes, `lfs check`'s reachable targets
    "NFS: attempt to write to active swap file!",
    "scratch-OST0001-osc-ffff9b2c00000000 active.",
    "foo: error: check 'config'",
    # a local filesystem's mount under Kubernetes, ceph-csi's missing object, mmhealth's healthy components
    'Warning  FailedMount  2m  kubelet  MountVolume.SetUp failed for volume "ebs" : mount failed: exit status 32 '
    "Mounting arguments: -t ext4 /dev/xvdf /var/lib/kubelet/x",
    "E0111 09:52:01.123456    1234 utils.go:240] rados: ret=-2, No such file or directory",
    "GPFS           HEALTHY       1 day ago      -",
    "NODE           TIPS          1 day ago      gpfs_maxstatcache_low",
    # a read-only /tmp (a container's by design), a full disk (the job's own doing); EIO on a shared filesystem's path
    # is no local disk's either, but since round 10 it is the shared filesystem's warning (lead10_job_eio, below)
    "OSError: [Errno 30] Read-only file system: '/tmp/ray/session_1/logs'",
    "cp: error reading '/tmp/x': Input/output error",
    "torch.save failed: [Errno 28] No space left on device: '/tmp/ckpt.pt'",
    # mdadm's healthy events, systemd's mounts that worked
    "mdadm[1234]: RebuildFinished event detected on md device /dev/md0, component device mismatches found: 0",
    "mdadm[1234]: NewArray event detected on md device /dev/md0",
    "systemd[1]: Mounted /scratch.",
    "systemd[1]: Reached target Remote File Systems.",
    # MegaRAID's events below WARN, device-mapper's healthy thin-pool notes, DCGM's passed or skipped PCIe plugin
    "megaraid_sas 0000:03:00.0: 1238 (686400000s/0x0002/info) - Patrol Read complete",
    "device-mapper: thin: 253:2: switching pool to write mode",
    "device-mapper: thin: 253:2: reached low water mark for data device: sending event.",
    "|  PCIe + NVLink             | Pass                                           |",
    "| PCIe                      | Skip                                           |",
    # mount.nfs's progress notes
    "mount.nfs: timeout set for Thu Jan 11 09:52:01 2024",
    "mount.nfs: trying text-based options 'vers=4.2,addr=10.0.0.1,clientaddr=10.0.0.5'",
    "mount.nfs: prog 100003, trying vers=3, prot=6",
    # BeeGFS's new connections and mounts, SMB's mount notes
    "beegfs: beegfs_DGramLis(811): NodeConn (acquire stream): Established new RDMA connection to: beegfs-meta meta01 "
    "[ID: 2]@10.0.0.2:8005 (protocol: RDMA)",
    "beegfs: mount(4321): App (mount): Mounted",
    "CIFS: Attempting to mount \\\\fs01\\share",
    "CIFS: VFS: RDMA transport established",
    # NVMe's bring-up lines, an admin command the drive does not support, a discard it lacks
    "nvme nvme0: 8/0/0 default/read/poll queues",
    "nvme nvme0: allocated 64 MiB host memory buffer.",
    "nvme nvme0: restart after slot reset",
    "nvme0: Admin Cmd(0x6), Invalid Field in Command (sct 0x0 / sc 0x2) DNR ",
    "operation not supported error, dev sdf, sector 0 op 0x9:(WRITE_ZEROES) flags 0x0 phys_seg 0 prio class 0",
    # md's corrected and redirected reads, arrays coming up; btrfs's corrected reads
    "md/raid1:md0: read error corrected (8 sectors at 123456 on sdb1)",
    "md/raid:md1: read error corrected (8 sectors at 123456 on sdc)",
    "md/raid1:md0: redirecting sector 123456 to other mirror: sdc1",
    "md/raid10:md2: sdd: redirecting sector 123456 to another mirror",
    "md/raid:md1: raid level 6 active with 6 out of 6 devices, algorithm 2",
    "BTRFS info (device nvme0n1p2): read error corrected: ino 1234 off 0 (dev /dev/sdb sector 5678)",
    "BTRFS error (device nvme0n1p2): fixed up error at logical 1234 on dev /dev/sdb",
    # local filesystems mounting cleanly
    "EXT4-fs (sda1): mounted filesystem 3a1b2c3d-0000-4e5f-8a9b-0c1d2e3f4a5b r/w with ordered data mode. Quota mode: "
    "none.",
    "XFS (nvme0n1): Ending clean mount",
    "XFS (nvme0n1): Starting recovery (logdev: internal)",
    "BTRFS info (device nvme0n1p2): disk space caching is enabled",
    # an IDE drive's status without an error bit
    "hda: status=0x50 { DriveReady SeekComplete }",
    # SCSI's attach and power lines
    "sd 0:0:0:0: [sda] Attached SCSI disk",
    "sd 0:0:0:0: [sda] Starting disk",
    "sd 0:0:0:0: Power-on or device reset occurred",
    # smartd's routine reports
    "smartd[1234]: Device: /dev/sda [SAT], Temperature changed +2 Celsius to 40 Celsius (Min/Max 25/42)",
    "smartd[1234]: Device: /dev/sda [SAT], SMART Usage Attribute: 194 Temperature_Celsius changed from 70 to 69",
    "smartd[1234]: Device: /dev/nvme0, NVMe error count increased from 10 to 12 (0 new, 2 ignored, 0 unknown)",
    "smartd[1234]: Device: /dev/sda [SAT], previous self-test completed without error",
    # pciehp's routine slot events, a link change DPC recovered from, DPC's and EDR's setup, a full-speed link
    "pcieport 0000:00:1c.0: pciehp: Slot(3): Link Down/Up ignored (recovered by DPC)",
    "pcieport 0000:00:1c.0: pciehp: Slot(3): Button press: will power off in 5 sec",
    "pcieport 0000:00:1c.0: pciehp: Slot(3): Card present",
    "pcieport 0000:00:1c.0: DPC: enabled with IRQ 26",
    "pcieport 0000:00:1c.0: EDR: EDR event received",
    "pcieport 0000:00:1c.0: removing 2.5GT/s downstream link speed restriction",
    "pci 0000:41:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
]


NEVER_DRAIN = [
    "smartd[1234]: Device: /dev/sda [SAT], Failed SMART usage Attribute: 5 Reallocated_Sector_Ct.",
    "smartd[1234]: Device: /dev/nvme0, NVMe error count increased from 10 to 12 (2 new, 0 ignored, 0 unknown)",
    "mount.nfs: Network is unreachable",
    "lfs check: error: check 'scratch-OST0002-osc-ffff9b2c00000000': Resource temporarily unavailable (11)",
    "|  PCIe + NVLink             | Fail - All                                     |",
    "FILESYSTEM     FAILED        2 min. ago     fs_unmounted(gpfs1)",
    "Output: mount error(13): Permission denied",
    "mdadm[1234]: Fail event detected on md device /dev/md0, component device /dev/sdb1",
    "systemd[1]: Dependency failed for Remote File Systems.",
    "OSError: [Errno 5] Input/output error: '/local/scratch/job123/data.bin'",
    "mount[1234]: mount to NFS server 'fs01' failed: timed out, retrying",
    # the smartd line as a job would print it (no syslog tag) is the same trust
    "Device: /dev/sda [SAT], Temperature 65 Celsius reached critical limit of 60 Celsius (Min/Max 25/65!)",
]


KERNEL_LINES = [
    "nfsacl: server fs01 not responding, still trying",
    "NFS: nfs4_reclaim_locks: lost 3 locks",
    "LNet: Host 10.0.0.5 reset our connection while we were sending data; it may have rebooted: rc = -104",
    "libceph: tid 12345 on osd3 timeout",
    "beegfs: dd(4321): Remoting (write file): Communication error in SENDDATA stage. Node: storage01 [ID: 1]",
    "nvme nvme0: IO queues lost",
    "XFS (nvme0n1): log record CRC mismatch: found 0x1234, expected 0x5678.",
    "pcieport 0000:00:1c.0: pciehp: Timeout on hotplug command 0x12f1 (issued 2000 msec ago)",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS))


def test_no_shared_filesystem_line_drains_the_node() -> None:
    """A shared filesystem's outage must not drain the cluster: every client family here stays investigate."""
    for line, kind, _ in FAULTS:
        if kind == "nfs":
            findings = diagnose(line.encode())
            assert not any(is_node_fault(f, None) for f in findings), line


def test_a_task_name_after_the_beegfs_prefix_cannot_start_another_match() -> None:
    """BeeGFS prints the task's comm after its prefix: a process named like a kernel tag stays a BeeGFS line."""
    findings = diagnose(b"beegfs: NVRM: Xid (1234): App (mount): Mounted")
    assert not [f for f in findings if f.kind == "xid"]
    assert not any(is_node_fault(f, None) for f in findings)


def test_an_rpc_server_that_answered_again_is_recorded_with_its_server() -> None:
    """The RPC programs' `not responding` / `OK` pair goes through the nfs handler (server, ok), as nfs and lockd do."""
    down, up = (diagnose(line.encode())[0] for line in ("nfsacl: server fs01 not responding, still trying",
                                                         "nfsacl: server fs01 OK"))
    assert (down.details["server"], down.details["ok"], down.severity) == ("fs01", False, "error")
    assert (up.details["server"], up.details["ok"], up.severity) == ("fs01", True, "info")


def test_eio_on_a_shared_path_is_the_shared_filesystems_not_the_local_disks() -> None:
    """The local-disk rule reads EIO next to a node-local path; on a shared path (/home) it is not the node's disk, and
    round 10's lead10_job_eio files it as the shared filesystem's warning (job output, never a drain)."""
    found_as("OSError: [Errno 5] Input/output error: '/home/u/tmp/x'", "nfs", "warning")
    never_drains("OSError: [Errno 5] Input/output error: '/home/u/tmp/x'")
