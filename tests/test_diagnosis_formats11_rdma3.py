"""Round 11's printers (rules11-rdma3), from their format strings: Soft RoCE (rxe) and Soft iWARP (siw), Broadcom's
bnxt_re, AWS EFA and Intel irdma, the SRP and iSER initiators and targets, the iSCSI initiator (the kernel's transport
class, libiscsi and iscsid) and the LIO target, GDRCopy's gdrdrv and libgdrapi, UCC and SHARP, and nouveau's VBIOS init
script, which tests/data/kernel/printers/rdma3.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's
linux-source-6.1 6.1.192 holds it, rxe's v5.4 receive checks, open-iscsi 2.1.11, NVIDIA/gdrcopy v2.5.2, openucx/ucc
v1.9.0-rc1, SHARP's sharp_coll.h error texts) with its conversions filled in by hand, not a line copied from a log or
from the field corpus. The printer file checks the kind; this file checks what it cannot: the severity, the trust (a
job's or a daemon's line never drains; the kernel's own is trust kernel and, at warning, no node fault), the notes that
must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # drivers/infiniband/sw/rxe (pr_fmt 'rdma_rxe: '): v5.4 rxe_recv.c hdr_check() pr_warn_ratelimited("no qp matches
    # qpn 0x%x\n"), check_keys() "bad qkey, got 0x%x expected 0x%x for qpn 0x%x\n", rxe_rcv() "bad ICRC from %pI4\n";
    # 6.1 rxe_comp.c check_ack() "unexpected nak %x\n", rxe_mr.c rxe_invalidate_mr() "%s: No MR for key %#x\n"
    ("rdma_rxe: no qp matches qpn 0x31f5", "ib", "warning"),
    ("rdma_rxe: bad qkey, got 0x0 expected 0x80010000 for qpn 0x11", "ib", "warning"),
    ("rdma_rxe: bad ICRC from 10.0.0.7", "ib", "warning"),
    ("rdma_rxe: dst addr 10.0.0.7 != qp source addr 10.0.0.8", "ib", "warning"),
    ("rdma_rxe: unexpected nak 62", "ib", "warning"),
    ("rdma_rxe: rxe_invalidate_mr: No MR for key 0x1a2b", "ib", "warning"),
    # drivers/infiniband/sw/siw siw_qp_rx.c siw_proc_terminate() pr_warn("siw: got TERMINATE. layer %d, type %d, code
    # %d\n"), siw_get_hdr() "siw: received ddp version unsupported %d\n", the [QP %u] checks; siw_qp_tx.c
    # siw_fastreg_mr() "siw: fastreg: PD mismatch\n"; siw_main.c "SoftIWARP attach failed. Error: %d\n"
    ("siw: got TERMINATE. layer 1, type 2, code 5", "ib", "warning"),
    ("siw: received ddp version unsupported 0", "ib", "warning"),
    ("siw: [QP 12]: rresp stag: 00a1b2c3 != 00a1b2c4", "ib", "warning"),
    ("siw: [QP 12], send mo: 3 != 2", "ib", "warning"),
    ("siw: fastreg: PD mismatch", "ib", "warning"),
    ("SoftIWARP attach failed. Error: -12", "ib", "warning"),
    # drivers/infiniband/hw/bnxt_re qplib_rcfw.c bnxt_qplib_rcfw_send_message() dev_err("cmdq[%#x]=%#x send failed\n"),
    # "cmdq[%#x]=%#x status %#x\n", __send_message() "RCFW: CMDQ is full!\n"; qplib_fp.c "FP: CQ Process Terminal Error
    # status = 0x%x\n"; ib_verbs.c bnxt_re_poll_cq() ibdev_err("POLL CQ : no CQL to use\n")
    ("bnxt_en 0000:41:00.0: cmdq[0x4f]=0x15 send failed", "ib", "warning"),
    ("bnxt_en 0000:41:00.0: cmdq[0x4f]=0x15 status 0x5", "ib", "warning"),
    ("bnxt_en 0000:41:00.0: RCFW: CMDQ is full!", "ib", "warning"),
    ("bnxt_en 0000:41:00.0: FP: CQ Process Terminal Error status = 0x5", "ib", "warning"),
    ("bnxt_en 0000:41:00.0: QPLIB: FP: QP (0x12) is in the 0x6 state", "ib", "warning"),
    ("bnxt_en 0000:41:00.0 bnxt_re0: POLL CQ : no CQL to use", "ib", "warning"),
    # drivers/infiniband/hw/efa efa_com.c efa_com_wait_and_process_admin_cq_interrupts() ibdev_err_ratelimited("The
    # device didn't send any completion for admin cmd %s(%d) status %d ..."), "Admin queue is closed\n",
    # efa_com_dev_reset() "Reset indication didn't turn on\n"; efa_main.c "Completion event on non-existent CQ[%u]\n"
    ("efa 0000:00:06.0 efa_0: The device didn't send any completion for admin cmd create_qp(1) status 0 (ctx "
     "0x00000000a1b2c3d4, sq producer: 12, sq consumer: 11, cq consumer: 11)", "ib", "warning"),
    ("efa 0000:00:06.0 efa_0: Admin queue is closed", "ib", "warning"),
    ("efa 0000:00:06.0 efa_0: Reset indication didn't turn off", "ib", "warning"),
    ("efa 0000:00:06.0 efa_0: Completion event on non-existent CQ[17]", "ib", "warning"),
    # drivers/infiniband/hw/irdma hw.c irdma_process_aeq() ibdev_err("Processing an iWARP related AE for CQ misc =
    # 0x%04X\n"), irdma_ceq_handler() "expected irq = %d received irq = %d\n"
    ("irdma ice.roce.0 rocep65s0f0: Processing an iWARP related AE for CQ misc = 0x0508", "ib", "warning"),
    ("infiniband irdma0: expected irq = 45 received irq = 46", "ib", "warning"),
    # drivers/infiniband/ulp/srp/ib_srp.c srp_new_rdma_cm_id() pr_err("No route available from %pISpsc to %pISpsc
    # (%d)\n"), the CM reject handlers' shost_printk "SRP LOGIN REJECTED, reason 0x%08x\n", "  REJ reason: stale
    # connection\n", srp_rdma_cm_handler() "received DREQ\n", srp_recv_done() "Got target logout request\n"
    ("ib_srp: No route available from 10.0.0.7:0 to 10.0.0.21:5555 (-113)", "ib", "warning"),
    ("scsi host5: ib_srp: SRP LOGIN REJECTED, reason 0x00010006", "ib", "warning"),
    ("scsi host5: ib_srp: SRP LOGIN from fe80:0000:0000:0000:0002:c903:00a1:b2c3 to "
     "fe80:0000:0000:0000:0002:c903:00a1:b2d4 REJECTED, reason 0x00010006", "ib", "warning"),
    ("scsi host5: ib_srp:   REJ reason: stale connection", "ib", "warning"),
    ("scsi host5: ib_srp: received DREQ", "ib", "warning"),
    ("scsi host5: ib_srp: Got target logout request", "ib", "warning"),
    ("scsi host5: ib_srp: Out of MRs (mr_per_cmd = 2)", "ib", "warning"),
    # drivers/infiniband/ulp/srpt/ib_srpt.c (pr_fmt 'ib_srpt '): srpt_qp_event() pr_err("received unrecognized IB QP
    # event %d\n"), srpt_send_done() "IB completion has been received too late for wr_id = %u.\n"; ulp/iser
    # iser_check_remote_inv() iser_err("conn %p: unexpected remote invalidation, terminating connection\n"); ulp/isert
    # isert_recv_done() isert_err("PDU declares %u data bytes but only %u bytes were received\n")
    ("ib_srpt received unrecognized IB QP event 3", "ib", "warning"),
    ("ib_srpt IB completion has been received too late for wr_id = 17.", "ib", "warning"),
    ("iser: iser_check_remote_inv: conn 00000000a1b2c3d4: unexpected remote invalidation, terminating connection", "ib",
     "warning"),
    ("isert: isert_recv_done: PDU declares 8192 data bytes but only 4096 bytes were received", "ib", "warning"),
    # drivers/scsi/scsi_transport_iscsi.c iscsi_conn_error_event() iscsi_cls_conn_printk(KERN_INFO, "detected conn error
    # (%d)\n"), session_recovery_timedout() "session recovery timed out after %d secs\n"; libiscsi.c
    # iscsi_check_transport_timeouts() "ping timeout of %d secs expired, ...", iscsi_send_nopout() "Could not send
    # nopout\n"; the class device has no driver name, so the message starts with a space
    (" connection1:0: detected conn error (1020)", "nfs", "warning"),
    (" session1: session recovery timed out after 120 secs", "nfs", "warning"),
    (" connection1:0: ping timeout of 5 secs expired, recv timeout 5, last rx 4295123456, last ping 4295124706, now "
     "4295125956", "nfs", "warning"),
    (" connection1:0: Could not send nopout", "nfs", "warning"),
    (" connection1:0: pdu (op 0x1 itt 0x12) rejected due to DataDigest error.", "nfs", "warning"),
    # drivers/target (LIO, no pr_fmt): iscsi_target_login.c "iSCSI Login timeout on Network Portal %pISpc\n",
    # iscsi_target_util.c "Did not receive response to NOPIN on CID: %hu, failing connection for I_T Nexus ...",
    # iscsi_target_erl0.c "Time2Retain timer expired for SID: %u, cleaning up iSCSI session.\n", target_core_iblock.c
    # "IBLOCK: cache flush failed: %d\n"
    ("iSCSI Login timeout on Network Portal 10.0.0.21:3260", "nfs", "warning"),
    ("Did not receive response to NOPIN on CID: 0, failing connection for I_T Nexus iqn.1994-05.com.redhat:gpu07,i,"
     "0x00023d000001,iqn.2003-01.org.linux-iscsi.stor01:sn.1a2b3c,t,0x01", "nfs", "warning"),
    ("Time2Retain timer expired for SID: 3, cleaning up iSCSI session.", "nfs", "warning"),
    ("IBLOCK: cache flush failed: -5", "disk", "warning"),
    # drivers/gpu/drm/nouveau/nvkm/subdev/bios/init.c nvbios_exec() error("unknown opcode 0x%02x\n") behind bioslog's
    # "0x%08x[%c]: ", init_or() "script needs OR!!\n"; shadow.c "unable to locate usable image\n"; devinit/gm200.c
    # "VBIOS PMU/DEVINIT not found\n" (errors); init_table_() warn("init data not found\n") (a warning)
    ("nouveau 0000:01:00.0: devinit: 0x00008e4c[0]: unknown opcode 0x5c", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: devinit: 0x00008e4c[0]: script needs OR!!", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: bios: unable to locate usable image", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: devinit: VBIOS PMU/DEVINIT not found", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: devinit: 0x00008e4c[0]: init data not found", "gpu_init", "warning"),
    # NVIDIA/gdrcopy src/gdrdrv/gdrdrv.c __gdrdrv_pin_buffer() gdr_err("No address space left for BAR1 mapping.\n")
    ("gdrdrv:__gdrdrv_pin_buffer:No address space left for BAR1 mapping.", "ib", "warning"),
    ("gdrdrv:__gdrdrv_pin_buffer:incompatible page table version 0x00020000", "ib", "warning"),
    # NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-peermem/nvidia-peermem.c peer_err() as the open modules
    # print it now ("nvidia-peermem %s:%d " FMT, no "ERROR "): nv_mem_get_pages() "error %d while calling
    # nvidia_p2p_get_pages()\n", nv_dma_map() "nv_dma_map -- error %d while calling nvidia_p2p_dma_map_pages()\n";
    # ib as rdma7_peermem, not the gsp that nvidia_display_error (which reads "error" in any nvidia-peermem line)
    # would make of them
    ("nvidia-peermem nv_mem_get_pages:362 error -22 while calling nvidia_p2p_get_pages()", "ib", "warning"),
    ("nvidia-peermem nv_dma_map:246 nv_dma_map -- error -12 while calling nvidia_p2p_dma_map_pages()", "ib", "warning"),
    ("nvidia-peermem nv_mem_client_init:478 nv_mem_client_init -- error while registering traditional client", "ib",
     "warning"),
    ("nvidia-peermem nv_mem_param_conf_check:446 invalid peerdirect_support param value 2", "ib", "warning"),
]

UP = "[1732612345.123456] [gpu-node-07:41234:0]"

JOB_FAULTS = [
    # NVIDIA/gdrcopy src/gdrapi.c gdr_err() ("ERR:  " FMT): "ioctl error (errno=%d)\n", "error %d from get_info,
    # munmapping before exiting\n"
    ("ERR:  ioctl error (errno=22)", "ib", "warning"),
    ("ERR:  error 12 from get_info, munmapping before exiting", "ib", "warning"),
    # openucx/ucc tl/ucp tl_ucp_sendrecv.c tl_error("failure in send completion %s"), tl_ucp_sendrecv.h "tag %u; dest
    # %d; team_id %u; errmsg %s", tl_ucp_ep.c "ucp returned connect error: %s"; tl/sharp "tl sharp bcast failed"
    (UP + "  tl_ucp_sendrecv.c:25   TL_UCP ERROR failure in send completion Endpoint timeout", "ib", "error"),
    (UP + "  tl_ucp_sendrecv.h:44   TL_UCP ERROR tag 3; dest 12; team_id 32768; errmsg Input/output error", "ib",
     "error"),
    (UP + "        tl_ucp_ep.c:58   TL_UCP ERROR ucp returned connect error: Destination is unreachable", "ib",
     "error"),
    (UP + " tl_sharp_context.c:212  TL_SHARP ERROR tl sharp bcast failed", "ib", "error"),
    # cl/hier cl_hier_team.c ucc_cl_hier_team_create_test() cl_error("no tl teams were created for sbgp %s")
    (UP + "     cl_hier_team.c:231  CL_HIER ERROR no tl teams were created for sbgp NODE", "ib", "warning"),
    # SHARP's libsharp_coll context.c and HCOLL's LOG_CAT_SHARP (widely quoted; the error texts are sharp_coll.h's)
    ("[gpu-node-07:0:41234 - context.c:276] ERROR failed to open sharp session with SHARPD daemon. please check daemon "
     "status", "ib", "warning"),
    ("[LOG_CAT_SHARP] Fallback is disabled. exiting ...", "ib", "error"),
]

DAEMON_FAULTS = [
    # open-iscsi usr/initiator.c iscsi_recv_conn_error() log_warning("Kernel reported iSCSI connection %d:%d error (%d -
    # %s) state (%d)"), conn_nop_out_timeout() "Nop-out timedout after %d seconds on connection %d:%d state (%d).
    # Dropping session."
    ("Nov 26 09:52:01 gpu-node-07 iscsid[1203]: Kernel reported iSCSI connection 1:0 error (1020 - "
     "ISCSI_ERR_TCP_CONN_CLOSE: TCP connection closed) state (3)", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 iscsid[1203]: Nop-out timedout after 15 seconds on connection 1:0 state (3). "
     "Dropping session.", "nfs", "warning"),
]

KERNEL_TWINS = [
    # rxe's and siw's module and port notes, bnxt_re's MSI-X and unhandled-event notes, efa's registration, irdma's MTU
    # and OICR notes, the SRP/iSER/iSCSI notes, LIO's reinstatement, nouveau's VBIOS table notes, gdrdrv's info lines
    "rdma_rxe: loaded",
    "infiniband rxe0: set active",
    "rdma_rxe: IPv6 is not supported, can not create a UDPv6 socket",
    "SoftiWARP attached",
    "siw: sendpage threshold too small: 0",
    "bnxt_en 0000:41:00.0 bnxt_re0: Requested 9 MSI-X vectors, got 5",
    "bnxt_en 0000:41:00.0: nqe with type = 0x3e not handled",
    "efa 0000:00:06.0 efa_0: IB device registered",
    "efa 0000:00:06.0 efa_0: Feature 8 isn't supported",
    "irdma ice.roce.0 rocep65s0f0: MTU setting [500] too low for RDMA traffic. Minimum MTU is 576 for IPv4",
    "irdma ice.roce.0 rocep65s0f0: ICE OICR event notification: oicr = 0x04000000",
    "scsi host5: ib_srp: reconnect succeeded",
    "ib_srp: mlx5_0: subnet timeout 18 may cause SRP login to fail.",
    "ib_srpt mlx5_0-1: enabling device management failed (-95). Note: this is expected if SR-IOV is enabled.",
    "ib_srpt mlx5_0-1: MAD agent registration failed (-22). Note: this is expected if SR-IOV is enabled.",
    "iser: iser_conn_release: iser conn 00000000a1b2c3d4 state 3, expected state down.",
    "iser: iser_addr_handler: T10-PI requested but not supported on mlx5_0, continue without T10-PI",
    " connection1:0: detected conn login (2)",
    "Loading iSCSI transport class v2.0-870.",
    "iscsi: registered transport (tcp)",
    " connection1:0: invalid ping timeout of zero. Using 5 seconds.",
    "Connection exists with CID 0 for iqn.1994-05.com.redhat:gpu07, performing connection reinstatement.",
    "Exiting Time2Retain handler because session_reinstatement=1",
    "nouveau 0000:01:00.0: bios: version 86.04.50.00.01",
    "nouveau 0000:01:00.0: bios: DCB table not found",
    "nouveau 0000:01:00.0: bios: ICCSENSE version 0x10 unknown",
    "nouveau 0000:01:00.0: devinit: 0x00008e4c[0]: INIT_GENERIC_CONDITION: unknown 0x0a",
    "nouveau 0000:01:00.0: devinit: 00137000/540000Khz unimplemented",
    "gdrdrv:gdrdrv_get_pages_free_callback:free callback",
]

JOB_NOTES = [
    # open-iscsi's recovery notes, libgdrapi's backend choice, UCC's teardown and fallback notes, SHARP without an
    # Aggregation Manager (sweep5's info)
    "Nov 26 09:52:01 gpu-node-07 iscsid[1203]: connection1:0 is operational after recovery (3 attempts)",
    "INFO: gdrdrv is not installed or loaded; detecting if CUDA driver supports dmabuf mmap.",
    "WARN: CPU supports MOVDIR64B but the current binary is not compiled with MOVDIR64B support. Disabling MOVDIR64B "
    "usage.",
    UP + "    tl_sharp_coll.c:188  TL_SHARP WARN  ucc_tl_sharp_mem_deregister failed",
    UP + "   tl_ucp_context.c:301  TL_UCP ERROR not valid copy type: 3, using EC copy instead",
    UP + "     cl_hier_team.c:250  CL_HIER WARN  failed to get tl cuda scores",
    "[gpu-node-07:0:41234 - context.c:601] ERROR sharp_create_job failed: No Aggregation Manager (sharp_am) "
    "detected(-52)",
]


ENVELOPED_KERNEL = [
    "Nov 26 10:00:00 gpu-node-07 kernel:  connection1:0: detected conn error (1020)",
    "[ 1234.567890] rdma_rxe: no qp matches qpn 0x31f5",
    "[Thu Nov 26 09:52:01 2026] scsi host5: ib_srp: received DREQ",
    "3,20006,20006123,-;siw: got TERMINATE. layer 1, type 2, code 5",
]


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "python3: saw 'rdma_rxe: no qp matches qpn 0x31f5' in the log",
    "myjob: connection1:0: detected conn error (1020)",
    "echo iSCSI Login timeout on Network Portal 10.0.0.21:3260",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "rdma_rxe: " + "x" * 100_000 + " addr 1 != qp source addr",
    "siw: [QP 1]: " + "a" * 100_000 + ", len 1, page",
    " connection1:0: pdu (op 0x" + "1" * 100_000 + " itt",
    "iscsid[1]: Connection1:0 to [target: " + "t" * 100_000 + " through [iface: x] is shutdown.",
    "nouveau 0000:01:00.0: devinit: 0x" + "0" * 100_000 + "[0]: unknown opcode 0x5c",
    "TL_UCP ERROR " + "tag 1; " * 20_000 + "dest",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=JOB_FAULTS + DAEMON_FAULTS,
                             twins=KERNEL_TWINS + JOB_NOTES, not_kernels=ECHOED, enveloped_kernel=ENVELOPED_KERNEL,
                             unread=("rules11_", HOSTILE)))
