"""Round 11's printers (rules11-pfs2), from their format strings: the shared filesystems' failure vocabulary as the
client nodes, the servers and the admin tools print it, in the families rounds 7-9 left: IBM Storage Scale's mmfs.log,
its 6027- catalogue, mmgetstate/mmlsdisk and mmhealth's events; BeeGFS 7's daemons and beegfs-ctl's target states;
GlusterFS's logs and CLI; the CephFS client; autofs's lookup modules; FUSE network filesystems (sshfs, s3fs, gcsfuse,
blobfuse2, rclone mount, JuiceFS); the NFS server side and NFS-Ganesha; Lustre's admin tools. The rows are in
tests/data/kernel/printers/pfs2.tsv.

Every line is a format string of the public source or documentation named in the comment above it (IBM Storage Scale
5.2.3's docs, ThinkParQ/beegfs at 87d28c1a, gluster/glusterfs at 595745f8, nfs-ganesha at c9ff03bb, the other projects'
released versions) with its conversions filled in by hand, not a line copied from a log or from the field corpus. The
printer file checks the kind; this file checks what it cannot: the severity, the trust (a daemon's, a tool's or a job's
line never drains), the informational twins that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from .rule_cases import table_tests

GLUSTER = "[2026-11-26 13:20:02.123456 +0000] "
GANESHA = "26/11/2026 14:10:01 : epoch 6745a1b2 : nfs01 : ganesha.nfsd-3310[main] "

DAEMON_FAULTS = [
    # IBM Storage Scale mmfs.log (docs): a join refused, a connection closed for any reason, the deadlock detector
    ("2026-11-26_13:01:08.123+0100: [E] A node join was rejected. This could be due to incompatible daemon versions, "
     "failure to find the node in the configuration database, or no configuration manager found.", "nfs", "warning"),
    ("2026-11-26_13:01:10.123+0100: [N] Close connection to 10.0.0.21 nsd01 <c0n3> (Connection failed because "
     "destination is still processing previous node failure)", "nfs", "warning"),
    ("Nov 26 13:01:20 node01 mmfs[4210]: [E] mmfsd: GPFS daemon was not able to start: the node is not a member of "
     "the cluster", "nfs", "warning"),
    ("2026-11-26_13:01:22.123+0100: [E] Deadlock detected: 2026-11-26 13:01:22: waiting 301.2 seconds on node node01: "
     "SyncHandlerThread 4412: on ThCond 0x7F1A2C003C98 (InodeFlushCondVar), reason 'waiting for the flush flag'",
     "nfs", "warning"),
    # BeeGFS 7 common Logger.cpp '(%d) %s %s [%s] >> %s': InternodeSyncer, StandardSocket, buddy resync, mirror node
    ("(1) Nov26 13:10:01 Main [App] >> Node ID reservation failed. Management node offline? Will keep on trying...",
     "nfs", "warning"),
    ("(0) Nov26 13:10:06 XNodeSync [Sync target states] >> Storage targets state sync failed. All targets set to "
     "offline.", "nfs", "warning"),
    ("(2) Nov26 13:10:08 Worker3 [StandardSocket::sendto] >> Attempted to send message to unreachable network: "
     "10.0.0.31:8003; peername: storage01; (This error message will be logged only once.)", "nfs", "warning"),
    ("(1) Nov26 13:10:13 BuddyResyncJob [BuddyResyncJob] >> Modification resync failed.", "nfs", "warning"),
    ("Nov 26 13:10:18 storage01 beegfs-storage[2211]: (1) Nov26 13:10:18 XNodeSync [Publish target states] >> Pushing "
     "target state to management node failed.", "nfs", "warning"),
    # GlusterFS: rpc-clnt-ping.c's C line, glusterd's server quorum, socket.c's MSGID-less E and W, afr's client quorum,
    # glusterd's peer, fuse-bridge's failed operation
    (GLUSTER + "C [rpc-clnt-ping.c:162:rpc_clnt_ping_timer_expired] 0-vol1-client-2: server 10.0.0.33:49152 has not "
     "responded in the last 42 seconds, disconnecting.", "nfs", "warning"),
    ("Nov 26 13:20:07 node01 mnt-vol1[2301]: " + GLUSTER + "C [rpc-clnt-ping.c:162:rpc_clnt_ping_timer_expired] "
     "0-vol1-client-2: server 10.0.0.33:49152 has not responded in the last 42 seconds, disconnecting.", "nfs",
     "warning"),
    (GLUSTER + "C [MSGID: 106002] [glusterd-server-quorum.c:356:glusterd_do_volume_quorum_action] 0-management: "
     "Server quorum lost for volume vol1. Stopping local bricks.", "nfs", "warning"),
    (GLUSTER + "E [socket.c:3380:socket_connect_finish] 0-glusterfs: connection to 10.0.0.31:24007 failed "
     "(Connection refused); disconnecting socket", "nfs", "warning"),
    (GLUSTER + "W [MSGID: 108001] [afr-common.c:6411:afr_notify] 0-vol1-replicate-0: Client-quorum is not met", "nfs",
     "warning"),
    (GLUSTER + "W [socket.c:751:__socket_rwv] 0-vol1-client-0: readv on 10.0.0.31:49152 failed (No data available)",
     "nfs", "warning"),
    (GLUSTER + "W [MSGID: 106004] [glusterd-handler.c:6204:__glusterd_peer_rpc_notify] 0-management: Peer <gluster02> "
     "(<9b2f1c3d-4e5a-4b6c-8d7e-0f1a2b3c4d5e>), in state <Peer in Cluster>, has disconnected from glusterd.", "nfs",
     "warning"),
    (GLUSTER + "W [fuse-bridge.c:1966:fuse_err_cbk] 0-glusterfs-fuse: 41235: FLUSH() ERR => -1 (Transport endpoint is "
     "not connected)", "nfs", "warning"),
    # the CephFS client (src/client/Client.cc), autofs's LDAP lookup module and master map
    ("2026-11-26T13:30:04.123+0000 7f3a2c1f2640 -1 client.84211 I was blocklisted at osd epoch 4512", "nfs",
     "warning"),
    ("Nov 26 13:30:03 node01 ceph-fuse[5512]: 2026-11-26T13:30:03.123+0000 7f3a2c1f2640  1 client.84211 "
     "_handle_full_flag: FULL: cancelling outstanding operations on 3", "nfs", "warning"),
    ("Nov 26 13:40:06 node01 automount[1873]: bind_ldap_simple: lookup(ldap): Unable to bind to the LDAP server: "
     "(default), error Can't contact LDAP server", "nfs", "warning"),
    ("Nov 26 13:40:08 node01 automount[1873]: lookup_nss_read_master: can't read master map auto.master", "nfs",
     "warning"),
    # the NFS server side: exportfs's lock, NFS-Ganesha at CRIT/MAJ/FATAL (src/log/log_functions.c's line)
    ("exportfs: could not open /var/lib/nfs/.etab.lock for locking: errno 13 (Permission denied)", "nfs", "warning"),
    (GANESHA + "Bind_sockets :DISP :FATAL :Error binding to V4 interface. Cannot continue.", "nfs", "warning"),
    (GANESHA + "create_export :FSAL :CRIT :Unable to mount Ceph cluster for /cephfs.", "nfs", "warning"),
    ("Nov 26 14:10:09 nfs01 ganesha.nfsd[3310]: [main] rados_kv_connect :CLIENT ID :CRIT :Failed to connect: -110",
     "nfs", "warning"),
]

TOOL_AND_JOB_FAULTS = [
    # IBM Storage Scale's commands (6027- catalogue), mmgetstate -L, mmlsdisk, mmhealth's event log
    ("mmmount: 6027-1639 Command failed. Examine previous error messages to determine cause.", "nfs", "warning"),
    ("mmcommon: 6027-1306 Command /usr/lpp/mmfs/bin/mmremote failed with return code 1.", "nfs", "warning"),
    (" 7      node07           0        0          8       down       quorum node", "nfs", "warning"),
    ("nsd04        nsd         512          2 Yes      Yes   unrecovered   down         system", "nfs", "warning"),
    ("2026-11-26 13:05:01.123456 CET        gpfs_down                 ERROR      The Storage Scale service process "
     "not running on this node. Normal operation cannot be done", "nfs", "warning"),
    ("2026-11-26 13:05:06.123456 CET        stale_mount               ERROR      Found stale mounts for the file "
     "system fs1.", "nfs", "warning"),
    # beegfs-ctl --listtargets --state
    ("       301           Offline   Needs-resync          3", "nfs", "warning"),
    ("       302  Probably-offline           Good          3", "nfs", "warning"),
    # the gluster CLI
    ("volume start: vol1: failed: Quorum not met. Volume operation not allowed.", "nfs", "warning"),
    ("Number of entries in split-brain: 3", "nfs", "warning"),
    ("/data/train.bin - Is in split-brain", "nfs", "warning"),
    ("Brick gluster02:/bricks/b1/vol1              N/A       N/A        N       N/A", "nfs", "warning"),
    # FUSE network filesystems
    ("remote host has disconnected", "nfs", "warning"),
    ("Nov 26 13:50:01 node01 s3fs[3381]: curl.cpp:RequestPerform(2484): ### CURLE_COULDNT_CONNECT", "nfs", "warning"),
    ("Nov 26 13:50:04 node01 s3fs[3381]: curl.cpp:RequestPerform(2551): HTTP response code 301(Moved Permanently: also "
     "happens when bucket's region is incorrect), returning EIO. Body Text: <Error><Code>PermanentRedirect</Code>"
     "</Error>", "nfs", "warning"),
    ('daemonize.Run: readFromProcess: sub-process: Error while mounting gcsfuse: mountWithArgs: '
     'mountWithStorageHandle: Mount: mount: exec: "fusermount": executable file not found in $PATH', "nfs", "warning"),
    ('Nov 26 13:50:06 node01 gcsfuse[4410]: time="26/11/2026 01:50:06.123456" severity=ERROR message="ReadFile: '
     'input/output error, fh.reader.ReadAt: readFull: Read: unexpected EOF"', "nfs", "warning"),
    ("Nov 26 13:50:09 node01 blobfuse2[5521]: [/mnt/blob] LOG_ERR [block_blob.go (1112)]: BlockBlob::ReadBuffer : "
     "Failed to download blob data/shard-0001.tar [context deadline exceeded]", "nfs", "warning"),
    ("2026/11/26 13:50:14 ERROR : IO error: open file failed: dial tcp: lookup storage.googleapis.com: i/o timeout",
     "nfs", "warning"),
    ("2026/11/26 13:50:15 Fatal error: failed to mount FUSE fs: fusermount: exit status 1", "nfs", "warning"),
    ("2026/11/26 13:50:19.123456 juicefs[6612] <ERROR>: read file 81234: input/output error [reader.go:839]", "nfs",
     "warning"),
    # Lustre's admin tools
    ("fs1-OST0002_UUID                 : inactive device", "nfs", "warning"),
    ("failed to ping 10.0.0.21@o2ib: Input/output error", "nfs", "warning"),
    ("  7 IN osc fs1-OST0002-osc-ffff8f2b40000000 8b1f2e3c-4d5a-6b7c-8d9e-0f1a2b3c4d5e 4", "nfs", "warning"),
    ("device fs1-OST0002 reported unhealthy", "nfs", "warning"),
    ("NOT HEALTHY", "nfs", "warning"),
    ("    state: DISCONN", "nfs", "warning"),
]

TWINS = [
    # IBM Storage Scale's notes, healthy rows and banners
    "6027-1262 Unable to obtain the GPFS configuration file lock. Retrying ...",
    "2026-11-26_13:02:01.123+0100: [I] Recovered 1 nodes for file system fs1.",
    "2026-11-26_13:02:04.123+0100: [I] Connected to 10.0.0.21 nsd01 <c0n3>",
    " 1      nsd01            2        3          8       active     quorum node",
    "nsd01        nsd         512          1 Yes      Yes   ready         up           system",
    "2026-11-26 13:05:07.123456 CET        gpfs_up                   INFO       The Storage Scale service process is "
    "running.",
    # BeeGFS's start and reconnect lines, a healthy target
    "(1) Nov26 13:11:01 Main [App] >> BeeGFS Storage Server Version: 7.4.5",
    "(2) Nov26 13:11:04 Main [App] >> Management node found. Downloading node groups...",
    "(2) Nov26 13:11:05 XNodeSync [Register node] >> Node registration successful.",
    "(2) Nov26 13:11:07 BuddyResyncJob [BuddyResyncJob] >> Resync successful. targetID: 301",
    "       304            Online           Good          4",
    # GlusterFS's recoveries, a normal brick disconnect on volume stop, the CLI's healthy answers
    GLUSTER + "I [MSGID: 108002] [afr-common.c:6405:afr_notify] 0-vol1-replicate-0: Client-quorum is met",
    GLUSTER + "I [MSGID: 106003] [glusterd-server-quorum.c:370:glusterd_do_volume_quorum_action] 0-management: Server "
    "quorum regained for volume vol1. Starting local bricks.",
    GLUSTER + "I [MSGID: 106005] [glusterd-handler.c:6102:__glusterd_brick_rpc_notify] 0-management: Brick "
    "gluster02:/bricks/b1/vol1 has disconnected from glusterd.",
    "Number of entries in split-brain: 0",
    "Brick gluster01:/bricks/b1/vol1              49152     0          Y       2301",
    "Status: Connected",
    # autofs, FUSE daemons' banners (blobfuse2 logs its start at LOG_CRIT), NFS servers' starts and grace periods
    "Nov 26 13:41:01 node01 automount[1873]: Starting automounter version 5.1.8, master map auto.master",
    'Nov 26 13:41:04 node01 automount[1873]: key "alice" not found in map source(s).',
    "Nov 26 13:50:11 node01 blobfuse2[5521]: [/mnt/blob] LOG_CRIT [mount.go (440)]: Starting Blobfuse2 Mount : 2.3.0 "
    "on [Ubuntu 22.04.4 LTS]",
    '2026/11/26 13:50:17 NOTICE: data: Mounting on "/mnt/remote"',
    # s3fs's region probe (it retries in the right region) and JuiceFS's latency note (it fires above 1-5 ms)
    "s3fs: [CRT] s3fs.cpp:s3fs_check_service(3865): Failed to connect region 'us-east-1'(default), so retry to connect "
    "region 'us-west-2' for url(http(s)://s3-us-west-2.amazonaws.com).",
    "Nov 26 13:50:21 node01 juicefs[6612]: juicefs[6612] <WARNING>: The latency to database is too high: 14.771783ms "
    "[base.go:312]",
    "2026/11/26 13:50:22.123456 juicefs[6612] <INFO>: Mounting volume myjfs at /jfs ... [mount_unix.go:269]",
    "Nov 26 14:01:01 nfs01 rpc.mountd[2210]: authenticated mount request from 10.0.0.57:812 for /export/home "
    "(/export/home)",
    GANESHA + "nfs_start_grace :STATE :EVENT :NFS Server Now IN GRACE, duration 90",
    GANESHA + "nfs_start :NFS STARTUP :EVENT :             NFS SERVER INITIALIZED",
    # Lustre's healthy answers
    "fs1-OST0002-osc-ffff8f2b40000000 active.",
    "  7 UP osc fs1-OST0002-osc-ffff8f2b40000000 8b1f2e3c-4d5a-6b7c-8d9e-0f1a2b3c4d5e 4",
    "healthy",
    "    state: FULL",
]


# the admin tools' rows are read whole (anchored at the row's start and end): a job's sentence that quotes one is not a
# finding of these rules
QUOTING = [
    "ls -l shows state: DISCONN in the import file",
    "my table: 7 node07 down",
    "grep found 'Client-quorum is not met' in last week's archive",
    "python3 train.py --note 'NOT HEALTHY'",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "(1) Nov26 13:10:01 Main [App] >> " + "x" * 100_000 + " Management node offline",
    GLUSTER + "W [fuse-bridge.c:1:f] 0-glusterfs-fuse: 1: READ => -1 " + "(" * 100_000 + "Input/output error",
    "2026-11-26 13:05:01 " + "a_" * 50_000 + "down ERROR x",
    "time=\"" + "t" * 100_000 + "\" severity=ERROR message=\"x\"",
    "ERROR : " + "x" * 100_000 + " IO error",
    "Peer <" + "p" * 100_000 + "> has disconnected from glusterd",
    "       " + "1 " * 50_000 + " Offline   Needs-resync          3",
]


globals().update(table_tests(other=DAEMON_FAULTS + TOOL_AND_JOB_FAULTS, twins=TWINS,
                             unread=("rules11_pfs2_", [*QUOTING, *HOSTILE])))
