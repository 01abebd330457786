"""Round 10's printers (rules10-mpifs), from their format strings: MVAPICH2's own verbs-layer errors, hydra's cascade
after a lost proxy, Intel MPI's launcher and error-stack lines, and the Linux 6.12 NFS client's, lockd's, rpcsec_gss's,
nfsd's, FUSE's and CacheFiles' kernel prints that tests/data/kernel/printers/mpifs.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (MVAPICH2 2.3.7-1 as the mirror
kumattau/mvapich2 holds it, pmodels/mpich v3.4.3, Intel MPI's Developer Guide, Linux 6.12) with its conversions filled
in by hand, not a line copied from a log or from the field corpus. The printer file checks the kind; this file checks
what it cannot: the severity, the trust (an MPI library's line is the job's and never drains; the kernel's own is trust
kernel), that no NFS or cache line drains a node, the notes that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import not_the_kernels, table_tests

MV = "[gpu-node07:mpi_rank_3]"

JOB_FAULTS = [
    # mrail/src/gen2/ibv_channel_manager.c async_thread(): ibv_va_error_abort(GEN_EXIT_ERR, "Got FATAL event %s on QP
    # 0x%x\n", ibv_event_type_str(...), ...) behind PRINT_ERROR's "[%s][%s] " and "%s:%d: "
    (MV + "[async_thread] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:1347: Got FATAL event local work "
     "queue catastrophic error on QP 0x1a2b", "ib", "error"),
    (MV + "[async_thread] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:1376: Got FATAL event port error "
     "on port 1", "ib", "error"),
    # handle_cqe(): "Send desc error in msg to %d, wc_opcode=%d", "Msg from %d: wc.status=%d (%s), ...", "[] Got
    # completion with error %d, vendor code=0x%x, dest rank=%d"; mv2_print_wc_status_error()
    (MV + "[handle_cqe] Send desc error in msg to 12, wc_opcode=0", "ib", "error"),
    (MV + "[handle_cqe] Msg from 12: wc.status=12 (transport retry counter exceeded), wc.wr_id=0x55d0c9a40c40, "
     "wc.opcode=0, vbuf->phead->type=0 = MPIDI_CH3_PKT_EAGER_SEND", "ib", "error"),
    (MV + "[mv2_print_wc_status_error] IBV_WC_RETRY_EXC_ERR: This event is generated when a sender is unable to "
     "receive feedback from the receiver.", "ib", "error"),
    (MV + "[handle_cqe] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:498: [] Got completion with error "
     "12, vendor code=0x81, dest rank=12", "ib", "error"),
    # rdma_iba_priv.c cm_qp_move_to_rtr() ibv_error_abort(GEN_EXIT_ERR, "Failed to modify QP to RTR\n"); common/src/cm
    # MPICM_Init_UD_CM()'s MPIR_ERR "**fail %s" "Failed to modify QP to RTR" as an error-stack line
    ("[gpu-node07:mpi_rank_0][cm_qp_move_to_rtr] src/mpid/ch3/channels/mrail/src/gen2/rdma_iba_priv.c:3088: Failed to "
     "modify QP to RTR", "ib", "error"),
    ("MPICM_Init_UD_CM(2231)...................: Failed to modify QP to RTR", "ib", "error"),
    # vbuf.c reregister_vbuf_pool() fprintf(stderr, "[%s %d] Cannot register vbuf region\n", __FILE__, __LINE__)
    ("[src/mpid/ch3/channels/mrail/src/gen2/vbuf.c 380] Cannot register vbuf region", "ib", "error"),
    # rdma_open_hca(): "**fail %s" "No IB device found" / "Requested IB device not found", "**fail %s %d" (errnames
    # "%s (errno %d)") "No active HCAs found on the system!!!"; errnames.txt "**activeports %d"
    ("rdma_open_hca(1092)..............: No IB device found", "ib", "error"),
    ("rdma_open_hca(1211)..............: Requested IB device not found", "ib", "error"),
    ("rdma_open_hca(1365)..............: No active HCAs found on the system!!! (errno 0)", "ib", "error"),
    ("rdma_iba_hca_init(1803)...........: Insufficient ports in active state, need 1.", "ib", "error"),
    # common/src/rdma_cm/rdma_cm.c ib_cma_event_handler() "RDMA CM Connect error: rdma cma event %d, error %d"
    (MV + "[ib_cma_event_handler] src/mpid/ch3/channels/common/src/rdma_cm/rdma_cm.c:482: RDMA CM Connect error: rdma "
     "cma event 8, error -111", "ib", "error"),
    # common/src/cm/cm.c MPICM_Init_UD_CM() "**fail %s" "Couldn't create UD QP"
    ("MPICM_Init_UD_CM(2201)...................: Couldn't create UD QP", "ib", "error"),
    # mrail/src/gen2/ibv_cuda_event.c process_cuda_event_op() ibv_error_abort(IBV_STATUS_ERR, "cudaEventRecord failed");
    # ibv_cuda_util.h CUDA_CHECK(): PRINT_ERROR("[%s:%d] cuda failed with %d \n", __FILE__, __LINE__, result): cuda, not
    # the fabric the path's "mrail" names
    (MV + "[process_cuda_event_op] src/mpid/ch3/channels/mrail/src/gen2/ibv_cuda_event.c:334: cudaEventRecord failed",
     "cuda", "error"),
    (MV + "[allocate_cuda_rndv_streams] [src/mpid/ch3/channels/mrail/src/gen2/ibv_cuda_event.c:39] cuda failed with 2 ",
     "cuda", "error"),
    # common/src/qos/rdma_3dtorus.c mv2_get_path_rec_sl() fprintf(stderr, "No response from SA\n")
    ("No response from SA", "ib", "error"),
    # MPICH 3.4 hydra's cascade (HYDU_ERR_POP): pmiserv_pmci.c ui_cmd_cb, tools/demux/demux_poll.c
    ("[mpiexec@gpu-node07] ui_cmd_cb (pm/pmiserv/pmiserv_pmci.c:42): unable to send signal downstream", "ib",
     "warning"),
    ("[mpiexec@gpu-node07] HYDT_dmxu_poll_wait_for_event (tools/demux/demux_poll.c:76): callback returned error status",
     "ib", "warning"),
    ("[proxy:0:1@gpu-node08] main (pm/pmiserv/pmip.c:169): demux engine error waiting for event", "ib", "warning"),
    # Intel MPI 2021's i_hydra bootstrap (widely quoted; not read in a source here)
    ("[mpiexec@gpu-node07] Error: Unable to run bstrap_proxy on gpu-node08 (pid 41234, exit code 65280)", "ib",
     "error"),
    ("[mpiexec@gpu-node07] Error setting up the bootstrap proxies", "ib", "error"),
    # Intel MPI Developer Guide, 'Error Message: Fatal Error' case 2: the netmod's errno detail on a line of its own
    ("(ofi_impl.h:704:MPIDI_OFI_send_handler:Transport endpoint is not connected)", "ib", "error"),
    # Intel MPI Developer Guide, 'Error Message: Bad Termination': SIGKILL is filed as hydra's "Killed (signal 9)"
    ("=   KILLED BY SIGNAL: 9 (Killed)", "oom", "warning"),
]

JOB_NOTES = [
    # ch3_init.c MPIDI_CH3_Init(): MPL_error_printf(...) of fallbacks the library takes; async_thread()'s unknown event
    "WARNING: Error in initializing MVAPICH2 ptmalloc library.Continuing without InfiniBand registration cache "
    "support.",
    "Warning: RDMA CM Initialization failed. Continuing without RDMA CM support. Please set MV2_USE_RDMA_CM=0 to "
    "disable RDMA CM.",
    MV + "[async_thread] Got unknown event 19 ... continuing ...",
    MV + "[mv2_ud_zcopy_poll_cq] [Performance Impact Warning]: Out-of-order Packets detected. Can you please try to "
    "set MV2_UD_ZCOPY_NUM_RETRY to larger value(current value: 7) to get better performance,",
    # rdma_iba_priv.c rdma_open_hca()'s PRINT_INFO and PRINT_ERROR notes on what it disables
    "[gpu-node07:mpi_rank_0][rdma_open_hca] Unknown HCA type: this build of MVAPICH2 does not fully support the HCA "
    "found on the system (try with other build options)",
    "[gpu-node07:mpi_rank_0][rdma_open_hca] No IP enabled device found. Disabling rdma_cm multicast",
    # MPICH errnames.txt **ofi_provider_mismatch's detail is a provider list, not an errno text
    "MPIDI_OFI_init_hints(411)...............: OFI Provider name does not match configure-time provider name "
    "(ofi_init.c:411:MPIDI_OFI_init_hints:verbs;ofi_rxm)",
    # Intel MPI's BAD TERMINATION banner's other lines, its start-up lines (I_MPI_DEBUG)
    "=   RANK 3 PID 41234 RUNNING AT gpu-node08",
    "[0] MPI startup(): libfabric provider: mlx",
    "[mpiexec@gpu-node07] Possible reasons:",
]

KERNEL_FAULTS = [
    # net/sunrpc/auth_gss/auth_gss.c gss_pipe_downcall() printk(KERN_CRIT "%s: bad return from gss_fill_context: %zd\n")
    ("gss_pipe_downcall: bad return from gss_fill_context: -22", "nfs", "warning"),
    ("RPCSEC/GSS credential too large - please use gssproxy", "nfs", "warning"),
    # fs/nfs/fscache.c nfs_fscache_get_super_cookie() pr_err("NFS: Cache volume key already in use (%s)\n")
    ("NFS: Cache volume key already in use (nfs,4.2,2,1c0a,fa00000a,1,,,100000,100000,927c0,927c0,927c0,927c0,1)",
     "nfs", "warning"),
    # fs/nfs/nfs4xdr.c decode_chan_attrs(), fs/nfs/blocklayout/rpc_pipefs.c bl_resolve_deviceid()
    ("NFS: decode_chan_attrs: Invalid rdma channel attrs count 2", "nfs", "warning"),
    ("bl_resolve_deviceid failed to decode device: -22", "nfs", "warning"),
    # fs/lockd/mon.c nsm_get_handle(), svc.c lockd_get()
    ('Invalid hostname "node 01" in NFS lock request', "nfs", "warning"),
    ("lockd_up: no pid, 2 users??", "nfs", "warning"),
    # fs/nfsd/nfs4idmap.c warn_no_idmapd(), vfs.c nfserrno(), nfs4recover.c nfsd4_client_tracking_init()
    ("nfsd: nfsv4 idmapping failing: has idmapd not been started?", "nfs", "warning"),
    ("nfsd: non-standard errno: -117", "nfs", "warning"),
    ("NFSD: Is nfsdcld running? If not, enable CONFIG_NFSD_LEGACY_CLIENT_TRACKING.", "nfs", "warning"),
    # fs/fuse/virtio_fs.c virtio_fs_send_req() pr_err("virtio-fs: virtio_fs_enqueue_req() failed %d\n") behind pr_fmt
    # "fuse: "; dax.c reclaim_one_dmap_locked()
    ("fuse: virtio-fs: virtio_fs_enqueue_req() failed -28", "nfs", "warning"),
    ("fuse: Failed to remove mapping. offset=0x200000 len=0x200000 ret=-5", "nfs", "warning"),
    # fs/netfs/fscache_cookie.c fscache_hash_cookie() pr_err("Duplicate cookie detected\n") behind "FS-Cache: "
    ("FS-Cache: Duplicate cookie detected", "nfs", "warning"),
    # fs/cachefiles internal.h cachefiles_io_error(): pr_err("I/O Error: " FMT "\n") behind "CacheFiles: ";
    # fs/netfs/fscache_cache.c fscache_io_error() "Cache '%s' stopped due to I/O error"
    ("CacheFiles: I/O Error: Lookup failed [o=000001a2]", "disk", "warning"),
    ("CacheFiles: I/O Error: Trunc-to-size failed -5 [o=0000002a]", "disk", "warning"),
    ("CacheFiles: mkdir cache failed with error -28", "disk", "warning"),
    ("FS-Cache: Cache 'mycache' stopped due to I/O error", "disk", "warning"),
    # net/sunrpc rpc_pipe.c rpc_mkpipe_dentry() pr_warn("%s() failed to create pipe %pd/%s (errno = %d)\n"), svc_xprt.c
    # svc_delete_xprt() pr_warn("failed to unregister %s with rpcbind\n")
    ("rpc_mkpipe_dentry() failed to create pipe nfs/clnt1a/idmap (errno = -17)", "nfs", "warning"),
    ("failed to unregister nfsd with rpcbind", "nfs", "warning"),
    # fs/nfsd/nfscache.c nfsd_cache_update() printk("nfsd: RC_REPLSTAT/reply len %d!\n")
    ("nfsd: RC_REPLSTAT/reply len 8192!", "nfs", "warning"),
]

DAEMON_FAULTS = [
    # Slurm 24.11 slurmstepd io.c _init_task_stdio_fds() error("Could not open stderr file %s: %m"), mgr.c
    # _pre_task_child_privileged() error("couldn't chdir to `%s': %m: going to /tmp instead"), slurmctld job_mgr.c
    # _write_data_array_to_file() error("Error writing file %s, %m"), controller.c set_slurmctld_state_loc()
    # fatal("Unable to stat state save loc: %s: %m")
    ("slurmstepd: error: Could not open stderr file /lustre/alice/err-4411.log: Input/output error", "nfs", "warning"),
    ("Nov 26 10:00:01 gpu-node07 slurmstepd[48213]: error: couldn't chdir to `/scratch/alice': Transport endpoint is "
     "not connected: going to /tmp instead", "nfs", "warning"),
    ("slurmctld: error: Error writing file /nfs/slurm/state/hash.1/job.4411/script, Input/output error", "nfs",
     "warning"),
    ("slurmctld: fatal: Unable to stat state save loc: /nfs/slurm/state: Stale file handle", "nfs", "warning"),
]

KERNEL_TWINS = [
    # fs/cachefiles and fs/netfs's registration, withdrawal and notes; fs/nfsd's grace period and tracking notes;
    # fs/fuse's banner; fs/nfs/nfs4xdr.c's and nfs42xdr.c's KERN_INFO/pr_warn capability notes
    "CacheFiles: File cache on sdb1 registered",
    "CacheFiles: File cache on sdb1 unregistering",
    "CacheFiles: Dirty object in cache",
    'FS-Cache: Cache "mycache" added (type cachefiles)',
    'FS-Cache: Withdrawing cache "mycache" (12 objs)',
    "NFSD: starting 90-second grace period (net f0000000)",
    "NFSD: all clients done reclaiming, ending NFSv4 grace period (net f0000000)",
    "NFSD: Using nfsdcld client tracking operations.",
    "fuse: init (API version 7.41)",
    "fuse: virtio-fs: tag <hostshare> not found",
    "NFS: decode_pnfs_layout_types: Warning: Too many (9) pNFS layout types",
    "NFS: decode_copy_notify: nsvr 3 > Supported. Use first servers",
    "RPC: Registered rdma transport module.",
    "RPC:   addr 10.0.0.6 already in xprt switch",
    # the same Slurm printers with a user's own error: no shared filesystem failed
    "slurmstepd: error: Could not open stdout file /home/alice/out/slurm-4411.out: No such file or directory",
    "slurmstepd: error: couldn't chdir to `/home/alice/typo': No such file or directory: going to /tmp instead",
    "slurmstepd: error: Could not open stdin file /home/alice/in.txt: Permission denied",
]


ENVELOPED_KERNEL = [
    "Nov 26 10:00:00 node01 kernel: CacheFiles: I/O Error: Lookup failed [o=000001a2]",
    "[ 1234.567890] nfsd: nfsv4 idmapping failing: has idmapd died?",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=JOB_FAULTS + DAEMON_FAULTS,
                             twins=JOB_NOTES + KERNEL_TWINS, enveloped_kernel=ENVELOPED_KERNEL))


def test_a_job_echoing_a_kernel_nfs_text_is_not_the_kernels() -> None:
    # the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a
    # kernel finding (and so can never drain)
    not_the_kernels("python3: saw 'nfsd: non-standard errno: -117' in the log")


@pytest.mark.parametrize("line", [
    "[h:mpi_rank_1][" + "f" * 100_000 + "] Failed to modify QP to RTR",
    "x" * 50_000 + "(" + "ofi_a.c:1:f:" + "A" * 100_000 + ")",
    "[mpiexec@" + "n" * 100_000 + "] Error: Unable to run bstrap_proxy on x",
    'Invalid hostname "' + "h" * 100_000 + '" in NFS lock request',
    "slurmstepd: error: Could not open stdout file " + "/d" * 50_000 + ": Stale file handle",
])
def test_a_long_hostile_line_is_read_in_linear_time(line: str) -> None:
    # bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
    rules = {f.details.get("rule") for f in diagnose(line.encode())}
    assert not rules & {"rules10_mvapich_verbs_error", "rules10_ofi_errno_detail", "rules10_hydra_bootstrap",
                        "rules10_nfs_kernel_more", "rules10_slurm_shared_fs_io"}
