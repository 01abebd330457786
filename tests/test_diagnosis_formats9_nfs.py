"""Round 9's NFS printers (rules9-NFS), from their format strings: the lines of the Linux NFS client, the Sun RPC stack
and nfs-utils' daemons that tests/data/kernel/printers/nfs.tsv holds and no rule read before (an RPC client the kernel
cannot set up, an NFS server's RPC sockets in trouble, an NLM status the lock client cannot map, mount.nfs's parse and
address errors, rpc.idmapd's, sm-notify's, nfsidmap's, rpc.gssd's and nfsdcld's failures in words of their own), and the
notes beside them that must stay quiet (a session-trunking test, rpc.idmapd on a host without nfsd).

Every line is a format string of the public source named in the comment above it (Linux 6.12 and nfs-utils 7acc8b94
unless said otherwise) with its conversions filled in by hand, not a line copied from a log or from the field corpus.
The printer file checks the kind; this file checks what it cannot: the severity, the trust (a daemon's or a tool's line
never drains; the kernel's own is trust kernel), that no NFS client line drains a node, and the benign twins.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import found_as, table_tests

KERNEL_FAULTS = [
    # net/sunrpc/clnt.c rpc_new_client() (2.6) "RPC: Couldn't create auth handle (flavor %u)", "RPC: Couldn't create
    # pipefs entry %s"; xprt.c xprt_create_transport() (5.4) "RPC: transport (%d) not supported"
    ("RPC: Couldn't create auth handle (flavor 390004)", "nfs", "warning"),
    ("RPC: Couldn't create pipefs entry /nfs/clnt1a", "nfs", "warning"),
    ("RPC: transport (256) not supported", "nfs", "warning"),
    # net/sunrpc/svcsock.c svc_tcp_read_marker() "svc: %s %s RPC fragment too large: %d", svc_tcp_accept() (5.15)
    # "%s: no more sockets!", svc_setup_socket() "svc: only UDP and TCP sockets supported", receive_cb_reply() (6.6)
    # "%s: Got unrecognized reply: calldir 0x%x xpt_bc_xprt %p xid %08x"
    ("svc: svc_tcp_read_marker nfsd RPC fragment too large: 1048620", "nfs", "warning"),
    ("svc: svc_tcp_read_marker lockd RPC fragment too large: 1195725856", "nfs", "warning"),
    ("nfsd: no more sockets!", "nfs", "warning"),
    ("svc: only UDP and TCP sockets supported", "nfs", "warning"),
    ("receive_cb_reply: Got unrecognized reply: calldir 0x1 xpt_bc_xprt 00000000432042d3 xid c369f54d", "nfs",
     "warning"),
    # fs/lockd/clntproc.c nlm_stat_to_errno() "lockd: unexpected status NLM_BLOCKED"; fs/nfs/nfs4state.c
    # nfs4_schedule_state_manager() "%s: kthread_run: %ld"
    ("lockd: unexpected status NLM_BLOCKED", "nfs", "warning"),
    ("nfs4_schedule_state_manager: kthread_run: -4", "nfs", "warning"),
    # net/sunrpc/clnt.c rpc_setup_pipedir_sb() "RPC: Couldn't create pipefs entry %s/%s, error %ld" (6.x form)
    ("RPC: Couldn't create pipefs entry nfs/clnt1a, error -17", "nfs", "warning"),
]

# the NFS client's lines the older rules already read, in the forms the printers make: none of them drains a node
CLIENT_LINES = [
    "nfs: server nfs01 not responding, still trying",
    "nfs: server 10.0.0.5 not responding, timed out",
    "nfsacl: server nfs01 not responding, timed out",
    "lockd: server 10.0.0.5 not responding, timed out",
    "NFS4: Couldn't follow remote path",
    "NFS: Couldn't getattr on root",
    "NFS: state manager: lease expired failed on NFSv4 server nfs01 with error 10022",
    "NFS: nfs4_reclaim_locks: unhandled error -5",
    "NFS: volatile file handles not supported (server nfs01)",
    "xs_local_setup_socket: unhandled error (13) connecting to /var/run/rpcbind.sock",
    "RPC: Couldn't create auth handle (flavor 390004)",
    "receive_cb_reply: Got unrecognized reply: calldir 0x1 xpt_bc_xprt 00000000432042d3 xid c369f54d",
    "lockd: unexpected status NLM_BLOCKED",
]

TOOL_FAULTS = [
    # nfs-utils utils/mount parse_dev.c nfs_pdn_bad_format_err() "%s: remote share not in 'host:dir' format",
    # nfs_pdn_missing_brace_err() "%s: closing bracket missing from server address"; stropts.c
    # nfs_fix_mounthost_option() "%s: unable to determine mount server's address"; nfsumount.c "%s: You are not
    # permitted to unmount %s"; mount.c add_mtab() "Can't write mount entry to mtab: %s"
    ("mount.nfs: remote share not in 'host:dir' format", "nfs", "warning"),
    ("mount.nfs: closing bracket missing from server address", "nfs", "warning"),
    ("mount.nfs4: unable to determine mount server's address", "nfs", "warning"),
    ("umount.nfs: You are not permitted to unmount /mnt/data", "nfs", "warning"),
    ("Can't write mount entry to mtab: Read-only file system", "nfs", "warning"),
    # network.c get_socket() "%s: Unable to connect to %s:%d, errno %d (%s)", nfs_nfs_version() "%s: parsing error on
    # 'vers=' option"
    ("mount.nfs: Unable to connect to 10.0.0.5:2049, errno 111 (Connection refused)", "nfs", "warning"),
    ("mount.nfs: parsing error on 'vers=' option", "nfs", "warning"),
    # mount_libmount.c umount_main() "%s: %s: is not an NFS filesystem"
    ("umount.nfs4: /mnt/data: is not an NFS filesystem", "nfs", "warning"),
]

DAEMON_FAULTS = [
    # utils/statd/svc_run.c my_svc_run() "my_svc_run() - select: %m"; sm-notify.c smn_get_hostname() "my_name '%s' is
    # unusable: %s"
    ("rpc.statd[733]: my_svc_run() - select: Bad file descriptor", "nfs", "warning"),
    ("sm-notify[734]: my_name 'node01.example' is unusable: Name or service not known", "nfs", "warning"),
    # utils/idmapd/idmapd.c main() "main: Neither NFS client nor NFSd found", "main: event_dispatch returns errno %d
    # (%s)", nfscb() "nfscb: read(%s): %s", nfsdcb() "nfsdcb: id '%s' too big!"
    ("rpc.idmapd[700]: main: Neither NFS client nor NFSd found", "nfs", "warning"),
    ("rpc.idmapd[700]: main: event_dispatch returns errno 9 (Bad file descriptor)", "nfs", "warning"),
    ("rpc.idmapd[700]: nfscb: read(/var/lib/nfs/rpc_pipefs/nfs/clnt1a/idmap): Connection reset by peer", "nfs",
     "warning"),
    ("rpc.idmapd[700]: nfsdcb: id '4294967296' too big!", "nfs", "warning"),
    # utils/nfsidmap/nfsidmap.c "'%s' keyring was not found.", "Unparsable keyring entry in %s"
    ("nfsidmap[9312]: '.id_resolver' keyring was not found.", "nfs", "warning"),
    ("nfsidmap[9312]: Unparsable keyring entry in /proc/keys", "nfs", "warning"),
    # utils/gssd/gssd.c scan_active_thread_list() "watchdog: thread id 0x%lx running for %lld seconds"
    ("rpc.gssd[812]: watchdog: thread id 0x7f3a2b1c0700 running for 45 seconds", "nfs", "warning"),
    # utils/statd/monitor.c caller_is_localhost() "SM_MON/SM_UNMON call from non-local host %s"; idmapd.c imconv()
    # "imconv: Invalid conversion type (%d) in message"
    ("rpc.statd[733]: SM_MON/SM_UNMON call from non-local host 10.0.0.99", "nfs", "warning"),
    ("rpc.idmapd[700]: imconv: Invalid conversion type (3) in message", "nfs", "warning"),
    # utils/nfsdcld/nfsdcld.c cld_create() "%s: problem writing to cld pipe (%zd): %m"
    ("nfsdcld[512]: cld_create: problem writing to cld pipe (-1): Broken pipe", "nfs", "warning"),
    # autofs daemon/indirect.c do_mount_autofs_indirect() crit("failed to create ioctl fd for autofs path %s")
    ("automount[2231]: do_mount_autofs_indirect: failed to create ioctl fd for autofs path /home", "nfs", "warning"),
    # rpc.idmapd's nfsdopenone() with another errno than ENOENT is still the daemon's failure
    ("rpc.idmapd[700]: nfsdopenone: Opening /proc/net/rpc/nfs4.nametoid/channel failed: errno 13 (Permission denied)",
     "nfs", "warning"),
    # autofs unable to unmount a directory in use at shutdown or a map re-read (indirect.c/direct.c error(..., "ask
    # umount returned busy [for] %s")): benign twins here until round 13 (lead13_autofs_umount_busy): autofs logs them
    # as errors and the mount stays until someone frees it
    ("automount[2231]: umount_autofs_indirect: ask umount returned busy /home", "nfs", "warning"),
    ("automount[2231]: do_umount_autofs_direct: ask umount returned busy for /data/proj01", "nfs", "warning"),
]


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_an_nfs_client_line_never_drains_a_node(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings and findings[0].kind == "nfs", line
    assert not [f for f in findings if is_node_fault(f, None)]


BENIGN_TWINS = [
    # fs/nfs/nfs4client.c nfs4_detect_session_trunking(): both outcomes of the trunking test are pr_info notes
    "NFS:  10.0.0.5: Session trunking succeeded for 10.0.0.6",
    "NFS:  10.0.0.5: Session trunking failed for 10.0.0.7",
    # net/sunrpc/clnt.c: an extra transport of a trunked or nconnect mount not added (the mount runs on the others),
    # rpc_setup_pipedir_sb()'s note that rpc_pipefs is not mounted
    "RPC:   rpc_clnt_test_xprt failed: -110 addr 10.0.0.7 not added",
    "SUNRPC: reached max allowed number (16) did not add transport to server: 10.0.0.6",
    "RPC: pipefs directory doesn't exist: nfs",
    # net/sunrpc/clnt.c call_decode() "%s: server %s OK" for the other RPC programs
    "lockd: server nfs01 OK",
    "nfsacl: server nfs01 OK",
    # the layout drivers registering; rpcrdma's connect banner (4.9)
    "nfs4flexfilelayout_init: NFSv4 Flexfile Layout Driver Registering...",
    "nfs4filelayout_exit: NFSv4 File Layout Driver Unregistering...",
    "rpcrdma: connection to 10.0.0.5:20049 on mlx5_0, memreg 'frwr', 128 credits, 16 responders",
    # rpc.idmapd on a host without nfsd, its client notes and exit; sm-notify's progress; nfsidmap's verbose key note
    "rpc.idmapd[700]: nfsdopenone: Opening /proc/net/rpc/nfs4.nametoid/channel failed: errno 2 (No such file or "
    "directory)",
    "rpc.idmapd[700]: New client: 1a",
    "rpc.idmapd[700]: exiting on signal 15",
    "sm-notify[734]: Already notifying clients; Exiting!",
    "rpc.statd[733]: SM_NOTIFY from nfs01 while not monitoring any hosts",
    "nfsidmap[9312]: key: 0x2f3a1b type: uid value: alice@example.org timeout 600",
    "nfsidmap[9312]: libnfsidmap: using domain: example.org",
    # mount.nfs's verbose notes
    "mount.nfs: trying text-based options 'vers=4.2,addr=10.0.0.5,clientaddr=10.0.0.57'",
    "mount.nfs: timeout set for Thu Nov 26 11:40:00 2026",
    # blkmapd's pipe notes; a program map's key that is not there
    "blkmapd[611]: blocklayout pipe file created",
    "automount[2231]: lookup(program): lookup for alice failed",
]


globals().update(table_tests(kernel=KERNEL_FAULTS, other=TOOL_FAULTS + DAEMON_FAULTS, twins=BENIGN_TWINS))


def test_the_trunking_note_does_not_hide_the_state_managers_failure() -> None:
    # the claim reads only nfs4_detect_session_trunking()'s form; another NFS "failed" line is still the warning
    found_as("NFS: state manager: reset session failed on NFSv4 server nfs01 with error 10052", "nfs", "warning")


@pytest.mark.parametrize("line", [
    "mount.nfs: parsing error on '" + "v" * 100_000 + " option",
    "rpc.idmapd[700]: nfscb: read(" + "/x" * 50_000 + ": gone",
    "nfsidmap[1]: '" + "k" * 100_000 + " keyring was not found.",
])
def test_a_long_hostile_line_is_read_in_linear_time(line: str) -> None:
    # bounded quantifiers: a long line of near-matches is decided (and is not the new rules' finding)
    rules = {f.details.get("rule") for f in diagnose(line.encode())}
    assert not rules & {"mount_nfs_more", "nfs_utils_daemon_more"}
