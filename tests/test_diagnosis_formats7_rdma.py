"""Round 7's RDMA printers (rules7-rdma), from their format strings: the kernel's RDMA drivers and upper-layer protocols
(mlx5_core, mlx4_en, irdma, nvidia-peermem, the SRP initiator, IPoIB child interfaces, the RDMA CM), the fabric's
user-space libraries as a job prints them (rdma-core, UCX and ucx-py, libfabric and the MPI layers over it, MPICH,
MVAPICH2, Open MPI, PSM, SHARP/HCOLL, GDRCopy), the fabric's daemons (opensm, ibacm, rdma-ndd, srp_daemon, iwpmd,
sharp_am) and tools (ibstat, mlxconfig, perftest, the verbs examples).

Every fault line below is a format string of the public source named in the comment above it, with its conversions
filled in by hand (devices, addresses, numbers): no line is copied from a log or from the field corpus. The library
fallback (data/subsystems.toml, trust `job`) is checked on its own: a library's tag anywhere in a line and a failure
word the line does not deny make a warning of kind ib that never drains; the library's info and debug lines and its
denials stay silent, in the kernel-log scan and in the job-output scan alike.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog, lines, subsystems
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # ---- open-gpu-kernel-modules kernel-open/nvidia-peermem/nvidia-peermem.c peer_err(): "nvidia-peermem" " %s:%d
    # ERROR " FMT; Mellanox nv_peer_memory's peer_err(): DRV_NAME " %s:%d " FMT with DRV_NAME "nv_mem"
    ("nv_mem nv_mem_get_pages:216 error -22 while calling nvidia_p2p_get_pages()", "ib", "warning"),
    # ---- linux drivers/infiniband/ulp/srp/ib_srp.c: shost_printk(KERN_ERR, target->scsi_host, PFX "Got failed path rec
    # status %d\n"), PFX "Path record query failed: sgid %pI6, dgid %pI6, pkey %#04x, service_id %#16llx\n", "SRP abort
    # called\n", "SRP reset_device called\n" (PFX "ib_srp: ", after the SCSI host's "scsi host%d: ")
    ("scsi host5: ib_srp: Got failed path rec status -110", "ib", "warning"),
    ("scsi host5: ib_srp: Path record query failed: sgid fe80::2:c903:a:1, dgid fe80::2:c903:a:2, pkey 0xffff, "
     "service_id 0x0002c90300a0b0c0", "ib", "warning"),
    ("scsi host5: SRP abort called", "ib", "warning"),
    ("scsi host5: SRP reset_device called", "ib", "warning"),
    # ---- linux drivers/net/ethernet/mellanox/mlx5/core: main.c mlx5_init_one() mlx5_core_err(dev, "mlx5_function_setup
    # err=%d\n") (mlx5_core_err's "%s:%d:(pid %d): "); mlx5_pci_err_detected()'s "%s Device state = %d health sensors:
    # %d pci_status: %d. Exit, result = %d, %s\n"; en/health.c "EQ 0x%x: Cons = 0x%x, irqn = 0x%x\n", "Recovered %d eqes
    # on EQ 0x%x\n"
    ("mlx5_core 0000:08:00.0: mlx5_init_one:1481:(pid 1): mlx5_function_setup err=-16", "ib", "warning"),
    ("mlx5_core 0000:08:00.0: mlx5_pci_err_detected Device state = 1 health sensors: 1 pci_status: 0. Exit, "
     "result = 3, need reset", "ib", "warning"),
    ("mlx5_core 0000:08:00.0 ens1f0np0: EQ 0x4: Cons = 0x2c, irqn = 0x9a", "ib", "warning"),
    ("mlx5_core 0000:08:00.0 ens1f0np0: Recovered 3 eqes on EQ 0x4", "ib", "warning"),
    # ---- linux drivers/infiniband/hw/irdma/hw.c irdma_cqp_ce_handler(): ibdev_err(..., "cqp opcode = 0x%x maj_err_code
    # = 0x%x min_err_code = 0x%x\n")
    ("infiniband irdma0: cqp opcode = 0x1 maj_err_code = 0xffff min_err_code = 0x8003", "ib", "warning"),
    # ---- linux drivers/infiniband/ulp/ipoib/ipoib_main.c: ipoib_warn(priv, "queue length limit %d. Packet drop.\n")
    ("ib0: queue length limit 3. Packet drop.", "ib", "warning"),
    # ---- linux drivers/net/ethernet/mellanox/mlx4/en_netdev.c mlx4_en_linkstate(): en_info(priv, "Link Down\n") behind
    # en_print()'s "%s: %s: " (DRV_NAME, the netdev)
    ("mlx4_en: eth2: Link Down", "ib", "error"),
    # ---- open-mpi opal/mca/btl/openib/help-mpi-btl-openib.txt [of error event]
    ("The OpenFabrics stack has reported a network error event.  Open MPI will try to continue, but your job may end "
     "up failing.", "ib", "error"),
    # ---- ucx-py ucp/_libs/exceptions.py (UCXError and its subclasses, raised with the UCS status string)
    ("ucp._libs.exceptions.UCXError: <stream_recv>: Input/output error", "ib", "error"),
    ("ucp._libs.exceptions.UCXConnectionResetError: Endpoint 0x7f1a2b3c4d50 error: Connection reset by remote peer",
     "ib", "error"),
    # ---- MPICH's error stack ("Fatal error in %s: %s, error stack:") behind Cray MPICH's and Intel MPI's abort heads;
    # MVAPICH2 rdma_open_hca() "No IB device found", ch3 "channel initialization failed"; MPICH's MPIR_Assert_fail()
    # "Assertion failed in file %s at line %d: %s" in a network module
    ("MPICH ERROR [Rank 0] [job id 4242.0] [Thu Nov 26 08:00:00 2026] [node0001] - Abort(1091983) (rank 0 in comm 0): "
     "Fatal error in PMPI_Init: Other MPI error, error stack:", "ib", "error"),
    ("Abort(1091215) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error stack:",
     "ib", "error"),
    ("MPID_Init(1236)..............: channel initialization failed", "ib", "error"),
    ("rdma_open_hca(1112)..........: No IB device found", "ib", "error"),
    ("Assertion failed in file ../../src/mpid/ch4/netmod/ofi/ofi_events.c at line 124: 0", "ib", "error"),
    ("Fatal error in PMPI_Allreduce: Other MPI error, error stack:", "ib", "error"),
    # ---- open-mpi ompi/mca/mtl/ofi/help-mtl-ofi.txt [modex failed], [Buffer Memory Registration Failed]
    ("The OFI MTL was not able to find endpoint information for a remote", "ib", "error"),
    ("Open MPI failed to register your buffer.", "ib", "error"),
    # ---- libfabric util/info.c: fprintf(stderr, "fi_getinfo: %d (%s)\n"); open-mpi ompi/mca/mtl/ofi/mtl_ofi.h "%s:%d:
    # fi_tsend failed: %s(%zd)"
    ("fi_getinfo: -61 (No data available)", "ib", "error"),
    ("[node1:01234] mtl_ofi.h:542: fi_tsend failed: Resource temporarily unavailable(-11)", "ib", "error"),
    # ---- rdma-core libibverbs/examples/rc_pingpong.c ("Couldn't register MR\n", "Couldn't allocate parent domain\n",
    # "Couldn't create completion channel\n") and perftest src/perftest_resources.c (" Unable to create QP.\n")
    ("Couldn't register MR", "ib", "error"),
    ("Couldn't allocate parent domain", "ib", "error"),
    ("Couldn't create completion channel", "ib", "error"),
    (" Unable to create QP.", "ib", "error"),
    # ---- rdma-core libibverbs/dynamic_driver.c try_driver(): PFX "Warning: Driver %s does not support the kernel ABI
    # of %u (supports %u to %u) for device %s\n"
    ("libibverbs: Warning: Driver bnxt_re does not support the kernel ABI of 8 (supports 1 to 1) for device "
     "/sys/class/infiniband/rdma0", "ib", "warning"),
    # ---- gdrcopy src/gdrapi.c gdr_err(): "ERR:  " FMT ("error opening driver (errno=%d/%s)\n", "error %s(%d) while
    # mapping handle %x, rounded_size=%zu offset=%llx\n")
    ("ERR:  error opening driver (errno=2/No such file or directory)", "ib", "warning"),
    ("ERR:  error Invalid argument(22) while mapping handle 4000, rounded_size=65536 offset=4000000", "ib", "warning"),
    # ---- UCX src/ucs/debug/log.c ucs_log_fatal_error(): "[%s:%d:%d:%d] %18s:%-4u Fatal: %s"
    ("[node1:1234 :0:1234]      ud_iface.c:742  Fatal: transport error: Endpoint timeout", "ib", "error"),
    # ---- opensm/osm_state_mgr.c osm_log(OSM_LOG_SYS, "SM port is down") as syslog shows the daemon's line
    ("Nov 26 08:00:00 sm01 opensm[1234]: SM port is down", "ib", "warning"),
    # ---- linux drivers/nvme/target/rdma.c nvmet_rdma_qp_event(): pr_err("received IB QP event: %s (%d)\n",
    # ib_event_msg(event->event), event->event) (pr_fmt "nvmet_rdma: ")
    ("nvmet_rdma: received IB QP event: QP fatal error (1)", "ib", "error"),
]


# Lines no rule names, read by the fallback: a kernel subsystem's tag at the message's start (the RDMA tags added this
# round), a daemon's syslog tag, or a fabric library's tag anywhere in a job's line.
UNRECOGNISED = [
    # linux drivers/infiniband/ulp/ipoib/ipoib_multicast.c: ipoib_warn(priv, "multicast join failed for %pI6, status
    # %d\n") on a child interface (ipoib_printk's "%s: ", the netdev `ib0.8001`)
    ("ib0.8001: multicast join failed for ff12:401b:8001:0000:0000:0000:ffff:ffff, status -22", "rdma", "kernel"),
    # linux drivers/infiniband/core/cma.c cma_listen_on_all(): pr_warn("RDMA CMA: %s, error %d\n", __func__, ret)
    ("RDMA CMA: cma_listen_on_all, error -98", "rdma", "kernel"),
    # linux net/rds/ib_cm.c rds_ib_qp_event_handler(): rds_ib_conn_error(conn, "Fatal QP Event %u (%s) - connection
    # %pI6c->%pI6c, reconnecting\n") behind "RDS/IB: "
    ("RDS/IB: Fatal QP Event 1 (QP fatal error) - connection 10.0.0.1->10.0.0.2, reconnecting", "rdma", "kernel"),
    # rdma-core rdma-ndd/rdma-ndd.c and ibacm/src/acm.c through syslog (`NAME[PID]: `); SHARP's Aggregation Manager
    ("rdma-ndd[1234]: Failed to open /sys/class/infiniband", "rdma-daemons", "syslog"),
    ("ibacm[812]: acm_open_devices: ERROR - no devices", "rdma-daemons", "syslog"),
    ("sharp_am[720665]: Local Port validation failed. error: FabricProvider must bind to port with master SM",
     "rdma-daemons", "syslog"),
    # opa-psm2 _HFI_ERROR ("%s%s: " hfi_mylabel, function) "assign_context command failed: %s\n"; open-mpi mtl_psm2
    # "Error in psm2_ep_connect (error %s)"
    ("node01.12345hfi_userinit: assign_context command failed: Network is down", "psm", "job"),
    ("[node1:01234] Error in psm2_ep_connect (error Operation timed out)", "psm", "job"),
    # libfabric's efa provider EFA_WARN (libfabric's "libfabric:%d:%lu:%s:%s:%s():%d<%s> " header)
    ("libfabric:12345:1700000000::efa:cq:efa_rdm_cq_poll_ibv_cq():210<warn> Unable to write a cq entry for remote for "
     "RECV_RDMA operation: Resource temporarily unavailable", "libfabric", "job"),
    # aws-ofi-nccl src/nccl_ofi_rdma.c NCCL_OFI_WARN("Request %p completed with error. RC: %d. Error: %d (%s). ...")
    # behind the plugin's "NET/OFI " prefix, pasted without NCCL's own header
    ("NET/OFI Request 0x7f00 completed with error. RC: 21. Error: 4126 (Unresponsive receiver)", "nccl-net", "job"),
    # open-mpi ompi/mca/coll/hcoll: "Hcol library init failed" (HCOLL_ERROR behind its component's name)
    ("coll_hcoll_module.c:312 - mca_coll_hcoll_comm_query() Hcol library init failed", "mpi-fabric", "job"),
    # glibc's loader (elf/dl-load.c via _dl_signal_error: "%s: error while loading shared libraries: %s: %s") when the
    # job's binary needs rdma-core and the node has none
    ("./a.out: error while loading shared libraries: libibverbs.so.1: cannot open shared object file: No such file or "
     "directory", "rdma-core", "job"),
    # infiniband-diags ibstat and mstflint's mlxconfig as an admin pastes them
    ("ibstat: Can't find device mlx5_5", "rdma-tools", "job"),
    # (round 9: mstflint's own `-E- ` prefix after the tool's name is now read by ib_tool_error from a later start,
    # tested below; the tool's name before a message no rule reads is still the fallback's)
    ("mlxconfig: Failed to query device current configuration", "rdma-tools", "job"),
]


@pytest.mark.parametrize("line, subsystem, trust", UNRECOGNISED)
def test_a_line_no_rule_names_is_the_fallbacks_warning(line: str, subsystem: str, trust: str) -> None:
    findings = diagnose(line.encode())
    assert findings, line
    f = findings[0]
    assert (f.kind, f.severity, f.action, f.trust) == ("ib", "warning", "investigate", trust)
    assert f.details["unrecognised"] is True and f.details["subsystem"] == subsystem
    assert not is_node_fault(f, None)


def test_a_rule_behind_a_tools_name_wins_over_the_librarys_fallback() -> None:
    # (round 9) mlxconfig's `-E- ` error behind the tool's name: the rule's reading from a later start, never a drain
    f = diagnose(b"mlxconfig: -E- Failed to query device current configuration")[0]
    assert (f.kind, f.severity, f.details.get("rule"), f.trust) == ("ib", "warning", "ib_tool_error", "syslog")
    assert not is_node_fault(f, None)


BENIGN_TWINS = [
    # NCCL's own progress lines naming its IB transport
    "gpu01:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    "gpu01:1234:1300 [0] NCCL INFO NET/IB : No device found.",
    "gpu01:1234:1300 [0] NCCL INFO Failed to open libibverbs.so[.1]",
    # UCX's quiet levels and its note on unused variables
    "[1700000000.123456] [node1:1234 :0]      uct_iface.c:213  UCX  DEBUG failed to open iface cma/memory: Unsupported "
    "operation",
    "[1700000000.123456] [node1:1234 :0]     ucp_context.c:2127 UCX  INFO  Version 1.16.0 (loaded from /usr/lib)",
    "[1700000000.123456] [node1:1234 :0]          parser.c:2036 UCX  WARN  unused environment variable: UCX_IB_GID_IDX "
    "(maybe: UCX_IB_GID_INDEX?)",
    # libfabric's info level (src/fabric.c fi_getinfo_(): FI_LOG(..., FI_LOG_INFO, ..., "fi_getinfo: provider %s
    # returned -%d (%s)\n") for each provider that does not fit, normal at start-up)
    "libfabric:12345:1700000000::core:core:fi_getinfo_():1340<info> fi_getinfo: provider usnic returned -61 (No data "
    "available)",
    # rdma-core's and the mlx5 provider's notes on nodes or containers without RDMA
    "libibverbs: Fatal: couldn't read uverbs ABI version.",
    "librdmacm: couldn't read ABI version.",
    "mlx5: Warning: can not get local cpu set: failed to open /sys/class/infiniband/mlx5_0/device/local_cpus",
    # the same printers' healthy lines
    "mlx4_en: eth2: Link Up",
    "scsi host5: ib_srp: reconnect succeeded",
    "mlx5_core 0000:08:00.0: mlx5_pci_err_detected Device state = 1 health sensors: 1 pci_status: 0. Exit, result = 5, "
    "recovered",
    "mlx5_core 0000:08:00.0: mlx5_init_one:1481:(pid 1): firmware version: 28.39.1002",
    "Nov 26 08:00:00 sm01 opensm[1234]: /var/log/opensm.log log file opened",
    "Nov 26 08:00:00 sm01 opensm[1234]: SUBNET UP",
    "[LOG_CAT_SBGP] libnuma.so: cannot open shared object file: No such file or directory",
    "ib0: enabling connected mode will cause multicast packet drops",
    # optional components skipped at start-up: open-mpi opal/mca/base/mca_base_component_repository.c ("%s: unable to
    # open %s: %s (ignored)"), libfabric src/fabric.c ofi_reg_dl_prov() FI_WARN(..., "dlopen(%s): %s\n", lib, dlerror())
    "[node1:01234] mca_base_component_repository_open: unable to open mca_btl_openib: librdmacm.so.1: cannot open "
    "shared object file: No such file or directory (ignored)",
    "libfabric:12345:1700000000::core:core:ofi_reg_dl_prov():600<warn> dlopen(/usr/lib64/libfabric/libpsm3-fi.so): "
    "libnuma.so.1: cannot open shared object file: No such file or directory",
    # perftest's note on CPU frequency scaling
    "Conflicting CPU frequency values detected: 1200.000000 != 3000.000000. CPU Frequency is not max.",
]


NEVER_DRAIN = [
    "ucp._libs.exceptions.UCXError: <stream_recv>: Input/output error",
    "MPICH ERROR [Rank 0] [job id 4242.0] [Thu Nov 26 08:00:00 2026] [node0001] - Abort(1091983) (rank 0 in comm 0): "
    "Fatal error in PMPI_Init: Other MPI error, error stack:",
    "fi_getinfo: -61 (No data available)",
    "Couldn't register MR",
    "[node1:1234 :0:1234]      ud_iface.c:742  Fatal: transport error: Endpoint timeout",
    "Nov 26 08:00:00 sm01 opensm[1234]: SM port is down",
    "rdma-ndd[1234]: Failed to open /sys/class/infiniband",
    "node01.12345hfi_userinit: assign_context command failed: Network is down",
    "mlxconfig: -E- Failed to query device current configuration",
    # a library's tag in front of a kernel subsystem's words is still the job's text
    "[node1:01234] btl_openib.c:1234 mlx5_core 0000:08:00.0: device's health compromised - reached miss count",
]


KERNEL_LINES = [
    "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing",
    "scsi host5: ib_srp: Got failed path rec status -110",
    "mlx5_core 0000:08:00.0: mlx5_init_one:1481:(pid 1): mlx5_function_setup err=-16",
    "infiniband irdma0: cqp opcode = 0x1 maj_err_code = 0xffff min_err_code = 0x8003",
    "mlx4_en: eth2: Link Down",
    "ib0.8001: multicast join failed for ff12:401b:8001:0000:0000:0000:ffff:ffff, status -22",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS))


def test_the_library_fallback_reads_the_jobs_output() -> None:
    """joblog.scan: a line no job rule claims, with a library's tag and a failure word, is the fallback's warning (trust
    job, unrecognised); the libraries' quiet lines, NCCL's INFO lines and lines without a tag give nothing."""
    out = [
        "[1,0]<stderr>:node01.12345hfi_userinit: assign_context command failed: Network is down",
        "[1,0]<stderr>:gpu01:1234:1300 [0] NCCL INFO NET/IB : No device found.",
        "[1,0]<stderr>:libfabric:1:1700000000::core:core:fi_getinfo_():1340<info> fi_getinfo: provider usnic "
        "returned -61 (No data available)",
        "[1,0]<stderr>:something failed without a library",
        "[1,0]<stderr>:ucp._libs.exceptions.UCXError: <stream_recv>: Input/output error",
    ]
    found = joblog.scan(out)
    assert [(f.line, f.kind, f.severity, f.trust, bool(f.details.get("unrecognised"))) for f in found] == [
        (1, "ib", "warning", "job", True), (5, "ib", "error", "job", False)]
    assert found[0].details["subsystem"] == "psm"
    assert not any(is_node_fault(f, None) for f in found)


def test_a_library_line_that_denies_its_failure_word_is_silent() -> None:
    """The library fallback asks for a failure word the line does not deny: `no error`, `without failure`,
    `non-fatal`, `error: none`, `error 0` are a library's status, not a failure (the lines below are built to exercise
    the denials, not quoted from a printer)."""
    assert subsystems.reported_error_word("UCX  PRINT  completed with no error") is None
    assert subsystems.reported_error_word("fi_cq_read: error: none") is None
    assert subsystems.reported_error_word("psm2_ep_close: error 0 (Success)") is None
    assert subsystems.reported_error_word("NET/IB : Got non-fatal async event") is None
    assert subsystems.reported_error_word("NET/IB : non-fatal event, then port error(10)") == "error"
    assert subsystems.reported_error_word("fi_tsend failed: no route") == "failed"
    for line in ("[node1:01234] btl_openib.c:1234 openib: completed with no error",
                 "[node1:01234] mtl_ofi.c:812 OFI poll: error: none"):
        assert not diagnose(line.encode()), line
        assert not joblog.scan([line]), line


def test_library_tags_are_never_where_a_message_starts() -> None:
    """A library's tag (trust job) is searched in a job's line; the envelope parser never starts a message there, and
    the kernel subsystems still win at a message's start."""
    libraries = {s.name for s in subsystems.LIBRARIES}
    assert {"ucx", "rdma-core", "libfabric", "psm", "mpi-fabric", "sharp-hcoll", "nccl-net", "rdma-tools"} <= libraries
    assert all(s.trust == "job" for s in subsystems.LIBRARIES)
    gpu_stack = ("nccl-core", "cuda-stack", "nvml", "collectives")    # (round 9, rules9-nccl: collectives)
    gpu_stack += ("shared-fs-mention",)    # (round 9, the lead: a job's words naming a shared filesystem are kind nfs)
    gpu_stack += ("accel-runtimes", "accel-tools")    # (round 17: the other accelerators' runtimes and device tools)
    assert all(s.kind == "ib" for s in subsystems.LIBRARIES if s.name not in gpu_stack)
    # (round 8) the GPU stack's libraries, after the fabric's: a line naming both is the fabric's
    kinds = {s.name: s.kind for s in subsystems.LIBRARIES}
    assert (kinds["nccl-core"], kinds["cuda-stack"], kinds["nvml"]) == ("nccl", "cuda", "gpu_init")
    assert (kinds["accel-runtimes"], kinds["accel-tools"]) == ("cuda", "gpu_init")
    assert subsystems.library_of("hipMemcpy failed over NET/IB : frob").name == "nccl-net"   # the fabric's first
    assert subsystems.library_of("NCCL WARN NET/IB : frob failed").name == "nccl-net"
    assert not any(s.trust == "job" for s in subsystems.ANCHORED)
    assert subsystems.ANY_TAG.match("UCX  ERROR frob") is None
    assert lines.normalise("[  12.5] node1 UCXError: frob failed").message == "node1 UCXError: frob failed"
    sub = subsystems.subsystem_of("mlx5_core 0000:08:00.0: ibv_frob failed")
    assert sub is not None and sub.name == "rdma"
    with pytest.raises(ValueError, match="quiet"):
        subsystems.load({"errors": {"words": ["failed"]}, "subsystem": [
            {"name": "x", "tags": ["nvme"], "literals": ["nvme"], "quiet": "INFO"}]})


def test_a_kernel_nic_fault_still_drains_and_its_echo_in_a_jobs_output_does_not() -> None:
    """The kernel's mlx5 health line keeps its verdict (a drain); the same words in a job's output are trust job."""
    line = "mlx5_core 0000:05:00.0: poll_health:840:(pid 0): device's health compromised - reached miss count"
    [f] = diagnose(f"[ 69.8] {line}\n".encode())
    assert f.trust == "kernel" and is_node_fault(f, None)
    assert all(g.trust == "job" for g in joblog.scan([f"[1,0]<stderr>:UCX  ERROR {line}"]))


def test_a_suggested_rule_for_a_library_line_keeps_its_trust() -> None:
    """`--suggest-rules` drafts a rule for a library's or a daemon's unrecognised line with that line's trust (job,
    syslog), so a site that adds it still never drains on text a job or a daemon wrote; added, it claims the line."""
    import tomllib

    from slurmtools.diagnosis import suggest
    from slurmtools.diagnosis.rules import validate

    log = (b"node01.12345hfi_userinit: assign_context command failed: Network is down\n"
           b"rdma-ndd[1234]: Failed to open /sys/class/infiniband\n")
    found = suggest.suggest(log)
    assert sorted((s["subsystem"], s["trust"]) for s in found) == [("psm", "job"), ("rdma-daemons", "syslog")]
    site = tomllib.loads(suggest.to_toml(found))["diagnosis"]["rules"]
    validate(site)
    assert sorted(r["trust"] for r in site) == ["job", "syslog"]
    after = diagnose(log, rules=site)
    assert after and not [f for f in after if f.details.get("unrecognised")]
    assert all(f.trust in ("job", "syslog") and not is_node_fault(f, None) for f in after)


@pytest.mark.parametrize("engine", ["hyperscan", "grep", "python"])
def test_every_prefilter_engine_reads_a_librarys_line(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The libraries' tag literals are the prefilter's like the kernel tags: every engine passes a library's failing
    line (found by the fallback, trust job), and its quiet twin and an untagged failing line give nothing."""
    import sys

    from slurmtools.diagnosis import prefilter, rules

    filler = [f"[{i:6d}.000000] systemd[1]: Started Session {i} of user root." for i in range(3000)]
    lines_ = [*filler, "[1,0]<stderr>:[node1:01234] Error in psm2_ep_connect (error Operation timed out)",
              "[1,0]<stderr>:gpu01:1:1 [0] NCCL INFO NET/IB : No device found.",
              "[1,0]<stderr>:something failed without a library", *filler[:10]]
    data = ("\n".join(lines_) + "\n").encode()
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0 if engine == "hyperscan" else None)
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", 0 if engine == "grep" else 1 << 40)
    if engine == "python":
        monkeypatch.setitem(sys.modules, "hyperscan", None)
    rules._SETS.clear()
    try:
        found = [(f.line, f.kind, f.severity, f.trust, f.details.get("subsystem")) for f in diagnose(data)]
    finally:
        rules._SETS.clear()
    assert found == [(3001, "ib", "warning", "job", "psm")]


def test_mlx4_en_link_downs_follow_the_link_policy() -> None:
    """mlx4_en's Link Down/Up pair like the other NICs': a link that came back is a warning, three downs of one link
    are a flapping link (a drain, the existing policy for every NIC's kernel line)."""
    came_back = diagnose(b"[ 10.0] mlx4_en: eth2: Link Down\n[ 12.0] mlx4_en: eth2: Link Up\n")
    assert [(f.severity, f.details.get("recovered")) for f in came_back if f.details.get("link") == "down"] == [
        ("warning", True)]
    flapping = diagnose(b"".join(f"[ {i}.0] mlx4_en: eth2: Link Down\n".encode() for i in (10, 20, 30)))
    down = [f for f in flapping if f.details.get("link") == "down"]
    assert down and all(f.action == "drain_node" and f.trust == "kernel" for f in down)


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_the_job_output_prefilter_drops_no_finding(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """joblog.scan reads only the lines the one-pass prefilter passes (a job rule's keyword, or a tag with a failure
    word): the findings are exactly those of reading every line, for every job rule's examples, the library lines,
    their benign twins and hostile text, through the Python and the grep engines."""
    from slurmtools.diagnosis import prefilter
    from slurmtools.diagnosis.rules import ruleset

    rs = ruleset()
    examples = [e for r in rs.rules if r.trust == "job" for e in r.examples]
    lines_ = [f"[1,{i % 4}]<stderr>:{e}" for i, e in enumerate(examples)]
    lines_ += [line for line, _, _ in UNRECOGNISED] + BENIGN_TWINS
    lines_ += ["x" * 5000 + " UCX  ERROR late", "\x00\xff NCCL WARN \ufffd", "", "plain text", "ERR:  " * 900]
    lines_ = [*lines_, *(f"step {i} loss 0.5" for i in range(3000))]
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", None)
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", 0 if engine == "grep" else 1 << 40)

    def findings(found: list) -> list:  # type: ignore[type-arg]
        return [(f.line, f.kind, f.severity, f.trust, f.details.get("rule")) for f in found]

    fast = findings(joblog.scan(lines_, rs))
    monkeypatch.setattr(joblog, "_candidates", lambda lines, rules: range(1, len(lines) + 1))
    assert fast == findings(joblog.scan(lines_, rs))
    assert len(fast) > len(examples) // 2
