"""Round 14's printers (rules14-nfs), from their format strings: the NFS stack's lines rounds 9-11 left, which
tests/data/kernel/printers/nfs2.tsv holds: the Linux 6.1 Sun RPC layer's and nfsd's other prints, nfs-utils' rpc.statd
and sm-notify, rpc.gssd's unknown mechanism (and its addressless-tickets note, which stays quiet), rpc.mountd with the
export cache, exportfs and rpc.nfsd, the client-tracking daemons nfsdcld and nfsdcltrack, nfsidmap and rpc.idmapd,
mount.nfs in its other words, systemd's lines over nfs-utils' units, and NFS-Ganesha's recovery backends at EVENT level.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's
linux-source-6.1 6.1.192 holds it, linux-nfs/nfs-utils at 7acc8b94, systemd v252's unit result texts over nfs-utils'
unit files, nfs-ganesha/nfs-ganesha at c9ff03bb) with its conversions filled in by hand, not a line copied from a log or
from the field corpus. The printer file checks the kind; this file checks what it cannot: the severity, the trust (a
daemon's or a tool's line never drains; the kernel's own is trust kernel and, at warning, no node fault), the notes
that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from .rule_cases import table_tests

G = "27/11/2026 08:40:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[svc_42] "

KERNEL_FAULTS = [
    # net/sunrpc svc_xprt.c svc_alloc_arg() pr_warn_once("svc: warning: pages=%lu > RPCSVC_MAXPAGES=%lu\n"); rpc_pipe.c
    # __rpc_create_common()/rpc_populate() printk(KERN_WARNING "%s: %s failed to allocate inode for dentry %pd\n" and
    # "%s: %s failed to populate directory %pd\n", __FILE__, __func__, ...); clnt.c __rpc_clnt_handle_event()
    # "%s: unknown event: %ld\n"
    ("svc: warning: pages=260 > RPCSVC_MAXPAGES=259", "nfs", "warning"),
    ("net/sunrpc/rpc_pipe.c: __rpc_create_common failed to allocate inode for dentry clnt1b", "nfs", "warning"),
    ("net/sunrpc/rpc_pipe.c: rpc_populate failed to populate directory clnt2a", "nfs", "warning"),
    ("__rpc_clnt_handle_event: unknown event: 7", "nfs", "warning"),
    # net/sunrpc/auth_gss/gss_krb5_mech.c get_key(): "gss_kerberos_mech: unsupported encryption key algorithm %d\n",
    # "... unable to initialize crypto algorithm %s\n", "... error setting key for crypto algorithm %s\n"
    ("gss_kerberos_mech: unsupported encryption key algorithm 23", "nfs", "warning"),
    ("gss_kerberos_mech: unable to initialize crypto algorithm cbc(des3_ede)", "nfs", "warning"),
    ("gss_kerberos_mech: error setting key for crypto algorithm cts(cbc(aes))", "nfs", "warning"),
    # fs/nfsd nfscache.c nfsd_cache_update() "nfsd: cached reply too large (%zd).\n"; nfs4recover.c
    # nfsd4_remove_clid_dir() "failed to remove client recovery directory %pd\n"; nfssvc.c "Unable to start nfsd thread:
    # out of memory\n"; nfs4proc.c nfsd4_proc_compound() pr_err("unable to encode reply to nonidempotent op %u (%s)\n")
    ("nfsd: cached reply too large (4196).", "nfs", "warning"),
    ("failed to remove client recovery directory 6c1f9b2e8a4d0f37c25e1b9a0d4e8f31", "nfs", "warning"),
    ("Unable to start nfsd thread: out of memory", "nfs", "warning"),
    ("unable to encode reply to nonidempotent op 38 (OP_WRITE)", "nfs", "warning"),
    # fs/nfsd nfsfh.c fh_lock_nested() "nfsd: inode locked twice during operation.\n", fh_compose() "fh_compose: fh
    # %pd2 not initialized!\n", fh_update() "fh_update: fh not verified!\n"; vfs.c "nfsd: bad file type %o in
    # nfsd_create\n"
    ("nfsd: inode locked twice during operation.", "nfs", "warning"),
    ("fh_compose: fh data/ckpt not initialized!", "nfs", "warning"),
    ("fh_update: fh not verified!", "nfs", "warning"),
    ("nfsd: bad file type 170000 in nfsd_create", "nfs", "warning"),
]

DAEMON_FAULTS = [
    # nfs-utils utils/statd: monitor.c sm_mon_1_svc() xlog(L_ERROR, "SM_MON request for hostname containing '/' or
    # starting '.': %s"), "POSSIBLE SPOOF/ATTACK ATTEMPT!", xlog_warn("STAT_FAIL to %s for SM_MON of %s"); rmtcall.c
    # "%s: service %d not registered on localhost"; callback.c "Unrecognized sender address"; statd.c "Statd service
    # already running!\n"; sm-notify.c "Invalid bind address or port for RPC socket: %s"; support/nsm/file.c
    # "Bad monitor file %s, skipping: %m"
    ("rpc.statd[2792]: SM_MON request for hostname containing '/' or starting '.': ../etc", "nfs", "warning"),
    ("rpc.statd[2829]: POSSIBLE SPOOF/ATTACK ATTEMPT!", "nfs", "warning"),
    ("rpc.statd[2866]: STAT_FAIL to node07 for SM_MON of nfs01.example.org", "nfs", "warning"),
    ("rpc.statd[2977]: statd_call_lockd: service 100021 not registered on localhost", "nfs", "warning"),
    ("rpc.statd[3051]: Unrecognized sender address", "nfs", "warning"),
    ("rpc.statd[3088]: Statd service already running!", "nfs", "warning"),
    ("sm-notify[3199]: Invalid bind address or port for RPC socket: 10.0.0.300", "nfs", "warning"),
    ("rpc.statd[3495]: Bad monitor file node12.tmp, skipping: Permission denied", "nfs", "warning"),
    # utils/gssd/gssd_proc.c handle_gssd_upcall() printerr(0, "WARNING: handle_gssd_upcall: received unknown gss mech
    # '%s'\n")
    ("rpc.gssd[2459]: WARNING: handle_gssd_upcall: received unknown gss mech 'spkm3'", "nfs", "warning"),
    # utils/mountd/mountd.c get_rootfh() xlog(L_WARNING, "request to export an unmounted filesystem: %s"), "request to
    # export directory %s below nearest filesystem %s"; main() "mountd: No V2 or V3 listeners created!", "RPC service
    # loop terminated unexpectedly. Exiting...\n"; rmtab.c "couldn't rename %s to %s"; support/export/cache.c "%s not
    # exported as %d not a mountpoint", "%s: no root export found."; support/nfs/svc_create.c "Could not bind socket:
    # (%d) %m"
    ("rpc.mountd[3828]: request to export an unmounted filesystem: /export/scratch", "nfs", "warning"),
    ("rpc.mountd[3902]: request to export directory /export/proj below nearest filesystem /export", "nfs", "warning"),
    ("rpc.mountd[3939]: mountd: No V2 or V3 listeners created!", "nfs", "warning"),
    ("rpc.mountd[3976]: RPC service loop terminated unexpectedly. Exiting...", "nfs", "warning"),
    ("rpc.mountd[4013]: couldn't rename /var/lib/nfs/rmtab.tmp to /var/lib/nfs/rmtab", "nfs", "warning"),
    ("rpc.mountd[4161]: /export/scratch not exported as 1 not a mountpoint", "nfs", "warning"),
    ("rpc.mountd[4198]: /export/data: no root export found.", "nfs", "warning"),
    ("rpc.mountd[4272]: Could not bind socket: (98) Address already in use", "nfs", "warning"),
    # utils/exportfs/exportfs.c validate_export() "%s does not support NFS export", "%s requires fsid= for NFS export";
    # "Invalid export syntax: %s"; main() "No file systems exported!"; utils/nfsd nfsd.c "version 4 requires the TCP
    # protocol", nfssvc.c "couldn't open ports file: errno %d (%m)", nfssvc_mount_nfsdfs() "... Please try, as root,
    # 'mount -t nfsd nfsd %s' and then restart %s to correct the problem"
    ("exportfs[4457]: /export/scratch does not support NFS export", "nfs", "warning"),
    ("exportfs[4494]: /export/overlay requires fsid= for NFS export", "nfs", "warning"),
    ("exportfs[4605]: Invalid export syntax: node07(rw,no_root_squash", "nfs", "warning"),
    ("exportfs[4679]: No file systems exported!", "nfs", "warning"),
    ("rpc.nfsd[4753]: version 4 requires the TCP protocol", "nfs", "warning"),
    ("rpc.nfsd[4864]: couldn't open ports file: errno 2 (No such file or directory)", "nfs", "warning"),
    ("rpc.nfsd[5086]: Please try, as root, 'mount -t nfsd nfsd /proc/fs/nfsd' and then restart rpc.nfsd to correct "
     "the problem", "nfs", "warning"),
    # utils/nfsdcld/nfsdcld.c cld_check_grace_period() "nfsd is in grace but didn't send a gracestart upcall, please
    # update the kernel", main() "Storage directory %s is not writable. Should be owned by root and writable by owner!",
    # "Not running as root. Daemon won't be able to open the pipe after dropping capabilities!", cld_get_version() "%s
    # invalid upcall version %d"; utils/nfsdcltrack "Failed to init database: %d", "%s: unable to rmdir %s: %d";
    # utils/nfsidmap "Bad arg count. Check /etc/request-key.conf"; utils/idmapd nfsopen() "nfsopen: open(%s): %s"
    ("nfsdcld[5456]: nfsd is in grace but didn't send a gracestart upcall, please update the kernel", "nfs", "warning"),
    ("nfsdcld[5604]: Storage directory /var/lib/nfs/nfsdcld is not writable. Should be owned by root and writable by "
     "owner!", "nfs", "warning"),
    ("nfsdcld[5641]: Not running as root. Daemon won't be able to open the pipe after dropping capabilities!", "nfs",
     "warning"),
    ("nfsdcld[5715]: cld_get_version invalid upcall version 3", "nfs", "warning"),
    ("nfsdcltrack[5752]: Failed to init database: -13", "nfs", "warning"),
    ("nfsdcltrack[5789]: cltrack_legacy_rmdir: unable to rmdir /var/lib/nfs/v4recovery/6c1f9b2e: 39", "nfs", "warning"),
    ("nfsidmap[5308]: Bad arg count. Check /etc/request-key.conf", "nfs", "warning"),
    ("rpc.idmapd[5937]: nfsopen: open(/run/rpc_pipefs/nfs/clnt3/idmap): Permission denied", "nfs", "warning"),
    # systemd v252 src/core service.c "%s: Control process exited, code=%s, status=%i/%s", job.c "Job %s/%s failed with
    # result '%s'.", "Failed to mount %s - %s.", "Failed to start %s - %s.", "Dependency failed for %s - %s." over
    # nfs-utils' units (the last two were the subsystem fallback's alone before rules14_nfs_unit_failed)
    ("systemd[1]: rpc-gssd.service: Control process exited, code=exited, status=1/FAILURE", "nfs", "warning"),
    ("systemd[1]: Failed to start rpc-gssd.service - RPC security service for NFS client and server.", "nfs",
     "warning"),
    ("systemd[1]: Dependency failed for nfs-server.service - NFS server and services.", "nfs", "warning"),
    ("systemd[1]: Dependency failed for nfs-client.target - NFS client services.", "nfs", "warning"),
    ("systemd[1]: nfs-server.service: Job nfs-server.service/start failed with result 'dependency'.", "nfs", "warning"),
    ("systemd[1]: Failed to mount var-lib-nfs-rpc_pipefs.mount - RPC Pipe File System.", "nfs", "warning"),
    ("systemd[1]: Failed to mount proc-fs-nfsd.mount - NFSD configuration filesystem.", "nfs", "warning"),
    # NFS-Ganesha src/SAL/recovery (LogEvent(COMPONENT_CLIENTID, ...)): recovery_rados_kv.c rados_kv_connect() "Failed
    # to read conf: %d", "Failed to create ioctx", rados_kv_init() "Failed to connect to cluster: %d";
    # recovery_rados_cluster.c "Failed to join grace period: %d", "Attempt to lift grace failed: %d"; recovery_fs.c
    # "opendir %s failed errno: %s (%d)"
    ("27/11/2026 08:12:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] rados_kv_connect :CLIENT ID :EVENT "
     ":Failed to read conf: -2", "nfs", "warning"),
    ("27/11/2026 08:15:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] rados_kv_connect :CLIENT ID :EVENT "
     ":Failed to create ioctx", "nfs", "warning"),
    ("27/11/2026 08:16:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] rados_kv_init :CLIENT ID :EVENT "
     ":Failed to connect to cluster: -110", "nfs", "warning"),
    ("27/11/2026 08:19:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] rados_cluster_read_clids :CLIENT ID "
     ":EVENT :Failed to join grace period: -2", "nfs", "warning"),
    ("27/11/2026 08:21:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] rados_cluster_try_lift_grace :CLIENT ID "
     ":EVENT :Attempt to lift grace failed: -110", "nfs", "warning"),
    ("27/11/2026 08:23:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] fs_rm_revoked_handles :CLIENT ID :EVENT "
     ":opendir /var/lib/nfs/ganesha/v4recov/node0 failed errno: No such file or directory (2)", "nfs", "warning"),
    # NFS-Ganesha below CRIT (LogWarn/LogEvent): nfs_rpc_callback.c "connect fail errno %d (%s)", "Failed creating
    # socket" (the NFSv4.0 callback channel, the subsystem fallback's alone before); nfs_rpc_dispatcher_thread.c "Cannot
    # allocate a tcp socket for %s, error %d(%s)"; nfs4_recovery.c "Unable to start grace, grace status 0x%x";
    # Protocols/NLM nsm.c "Monitor %s nsm_connect failed", nlm_util.c "GRANTED_MSG RPC call failed with return code %d.
    # Removing the blocking lock"; FSAL_CEPH/main.c "ceph_ll_walk failed for %s : %s"; support/uid2grp.c "Could not
    # resolve principal %s to groups using nfsidmap, err: %d"
    (G + "nfs_clid_connected_socket :NFS CB :WARN :connect fail errno 113 (No route to host)", "nfs", "warning"),
    (G + "nfs_rpc_create_chan_v40 :NFS CB :WARN :Failed creating socket", "nfs", "warning"),
    (G + "Allocate_sockets_V4 :DISP :WARN :Cannot allocate a tcp socket for MNT, error 24(Too many open files)", "nfs",
     "warning"),
    (G + "nfs_start_grace :STATE :EVENT :Unable to start grace, grace status 0x3", "nfs", "warning"),
    (G + "nsm_monitor_noretry :NLM :EVENT :Monitor node07 nsm_connect failed", "nfs", "warning"),
    (G + "nlm4_send_grant_msg :NLM :EVENT :GRANTED_MSG RPC call failed with return code 5. Removing the blocking lock",
     "nfs", "warning"),
    (G + "find_cephfs_root :FSAL :WARN :ceph_ll_walk failed for /volumes/_nogroup/data : No such file or directory",
     "nfs", "warning"),
    (G + "uid2grp_allocate_by_principal :ID MAPPER :WARN :Could not resolve principal alice@EXAMPLE.ORG to groups "
     "using nfsidmap, err: -2", "nfs", "warning"),
]

TOOL_FAULTS = [
    # nfs-utils utils/mount: error.c mount_error() "%s: unknown nfs status return value: %u"; stropts.c
    # nfs_verify_clientaddr() "%s: [warning] supplied clientaddr=%s does not match any existing network addresses";
    # network.c nfs_lookup() "%s: unrecognized DNS resolution results for %s"; mount_libmount.c umount_main() "%s:
    # failed to prepare umount: %s\n"; mount.c "Can't open mtab: %s"
    ("mount.nfs: unknown nfs status return value: 10008", "nfs", "warning"),
    ("mount.nfs4: [warning] supplied clientaddr=10.0.0.31 does not match any existing network addresses", "nfs",
     "warning"),
    ("mount.nfs: unrecognized DNS resolution results for nfs01.example.org", "nfs", "warning"),
    ("umount.nfs: failed to prepare umount: Invalid argument", "nfs", "warning"),
    ("mount.nfs: Can't open mtab: Read-only file system", "nfs", "warning"),
    # nfsmount.c nfsmount() "%s: %s:%s failed, security flavor not supported" (the envelope parser takes "mount.nfs:"
    # for a host when a server name with a colon follows; it was the subsystem fallback's, as the kernel's, before)
    ("mount.nfs: nfs01:/export failed, security flavor not supported", "nfs", "warning"),
    ("mount.nfs: 10.0.0.5:/export/data failed, security flavor not supported", "nfs", "warning"),
]

BENIGN_TWINS = [
    # the same printers' notes: rpc.gssd's addressless-tickets note (krb5_util.c gssd_get_single_krb5_cred, printed on
    # every machine-credential refresh where the krb5 library lacks the option) and its shutdown clean-up
    "rpc.gssd[2496]: WARNING: Unable to set option for addressless tickets.  May have problems behind a NAT.",
    "rpc.gssd[2681]: WARNING: No credentials cache found while resolving credential cache "
    "'FILE:/tmp/krb5ccmachine_EXAMPLE.ORG' for destruction",
    "rpc.gssd[2600]: WARNING: Specifying pipefs-directory in the [gssd] section of /etc/nfs.conf is deprecated.  Use "
    "the [general] section instead.",
    # rpc.statd's notes, exportfs's operator errors and progress, mount.nfs's progress, nfsidmap's key handling
    "rpc.statd[3500]: Received SM_UNMON request from node07 for nfs01 while not monitoring any hosts",
    "rpc.statd[3510]: No canonical hostname found for 10.0.0.31",
    "exportfs[4568]: Could not find 'node07:/export/data' to unexport.",
    "exporting node07:/export/data",
    "umount.nfs: /scratch: must be superuser to umount",
    'mount.nfs: backgrounding "nfs01:/export/data"',
    "nfsidmap[5400]: invalidating 'uid:alice@example.org'",
    "rpc.idmapd[5950]: Path /run/rpc_pipefs/nfs not available. waiting...",
    # the kernel's notes: nfsdcld's old protocol, a container's umh tracking, rpc_show_tasks' header, the RDMA
    # backchannel's trace, the swap-over-NFS notes
    "NFSD: Using old nfsdcld client tracking operations.",
    "NFSD: attempt to initialize umh client tracking in a container ignored.",
    "-pid- flgs status -client- --rqstp- -timeout ---ops--",
    "RPC:       rpcrdma_bc_receive_call: callback XID 8a3f0c21, length=164",
    "NFS: attempt to write to active swap file!",
    # systemd's progress over the same units; Ganesha's grace period starting and ending
    "systemd[1]: Started rpc-statd.service - NFS status monitor for NFSv2/3 locking..",
    "systemd[1]: var-lib-nfs-rpc_pipefs.mount: Deactivated successfully.",
    "systemd[1]: Stopped nfs-server.service - NFS server and services.",
    "27/11/2026 08:25:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] nfs_start_grace :STATE :EVENT :NFS Server "
    "Now IN GRACE, duration 90",
    "27/11/2026 08:26:11 : epoch 6747c1a2 : nfs01 : ganesha.nfsd-3310[main] nfs_try_lift_grace :STATE :EVENT :NFS "
    "Server Now NOT IN GRACE",
    # Ganesha's notes below CRIT: its copy of gssd's addressless-tickets note (the subsystem fallback's warning before),
    # no IPv6 interfaces, no RDMA back channel, an address it cannot name, NLM4_SHARE refused, PR_SET_IO_FLUSHER
    G + "gssd_get_single_krb5_cred :NFS CB :WARN :WARNING: Unable to set option for addressless tickets.  May have "
    "problems behind a NAT.",
    G + "Allocate_sockets :DISP :WARN :System may not have V6 intfs configured error 97(Address family not supported "
    "by protocol)",
    G + "nfs_rpc_create_chan_v41 :NFS CB :WARN :refusing to create back channel over RDMA for now",
    G + "nfs_ip_name_add :DISP :EVENT :Cannot resolve address 10.0.0.31, error Name or service not known, using "
    "address as hostname",
    G + "nlm4_Share :NLM :EVENT :NLM4_SHARE call detected, failing it",
    G + "main :MAIN :WARN :Failed to set PR_SET_IO_FLUSHER due to EPERM, ignoring...",
]


ENVELOPED_KERNEL = [
    "Nov 27 08:10:07 node07 kernel: gss_kerberos_mech: unsupported encryption key algorithm 23",
    "[30206.345678] nfsd: cached reply too large (4196).",
    "[Fri Nov 27 08:10:14 2026] svc: warning: pages=260 > RPCSVC_MAXPAGES=259",
    "3,90693,30231728390,-;net/sunrpc/rpc_pipe.c: rpc_populate failed to populate directory clnt2a",
]


ENVELOPED_DAEMON = [
    "Nov 27 08:17:28 node07 rpc.statd[2866]: STAT_FAIL to node07 for SM_MON of nfs01.example.org",
    "2026-11-27T08:20:30.878987+00:00 nfs01 rpc.mountd[3828]: request to export an unmounted filesystem: /export/x",
    "Nov 27 08:26:41 nfs01 nfsdcltrack[5789]: cltrack_legacy_rmdir: unable to rmdir /var/lib/nfs/v4recovery/6c: 39",
    "Nov 27 08:28:19 node07 systemd[1]: rpc-gssd.service: Control process exited, code=exited, status=1/FAILURE",
]


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "python3: saw 'nfsd: cached reply too large (4196).' in the log",
    "myjob: gss_kerberos_mech: unsupported encryption key algorithm 23",
    "echo Unable to start nfsd thread: out of memory",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "net/sunrpc/rpc_pipe.c: " + "x" * 100_000 + " failed to populate directory",
    "rpc.statd[1]: STAT_FAIL to " + "h" * 100_000 + " for SM_MON",
    "rpc.mountd[1]: request to export directory " + "/d" * 50_000 + " below nearest",
    "rpc.idmapd[1]: nfsopen: open(" + "p" * 100_000,
    "ganesha.nfsd-1[" + "t" * 100_000 + "] f :CLIENT ID :EVENT :Failed to connect",
    "systemd[1]: nfs-server.service: Job " + "j" * 100_000 + " failed with result",
    "mount.nfs: nfs01:/" + "x" * 100_000 + " failed, security flavor",
    "ganesha.nfsd-1[t] f :NLM :EVENT :Monitor " + "m" * 100_000 + " nsm_connect",
    "ganesha.nfsd-1[t] f :ID MAPPER :WARN :getpwnam_r for " + "u " * 50_000 + "failed",
    "[warning] supplied clientaddr=" + "a" * 100_000 + " does not match",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=DAEMON_FAULTS + TOOL_FAULTS
                             + [(line, "nfs", "warning") for line in ENVELOPED_DAEMON],
                             twins=BENIGN_TWINS, not_kernels=ECHOED, enveloped_kernel=ENVELOPED_KERNEL,
                             unread=("rules14_", HOSTILE)))
