"""Round 8's RDMA printers (rules8-rdma): the lines of tests/data/kernel/printers/rdma.tsv that no rule and no subsystem
fallback read before (they hold no failure word, or stand behind a tag the fallback does not know), and what the printer
table cannot say: which rule reads them, their trust, that the job's and the daemons' lines never drain, and that the
mlx5 driver's info lines (which carry the same `function:line:(pid N): ` prefix as its error and warning lines) stay
silent.

Every line below is a format string of the public source named in the comment above it, with its conversions filled
in by hand: no line is copied from a log or from the field corpus.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose, joblog
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import found_as, table_tests

FAULTS = [
    # ---- linux v6.12 drivers/net/ethernet/mellanox/mlx5/core/health.c mlx5_health_try_recover(): mlx5_core_err(dev,
    # "starting health recovery flow\n")
    ("mlx5_core 0000:3b:00.0: mlx5_health_try_recover:348:(pid 2190): starting health recovery flow", "ib", "warning"),
    # ---- fw_reset.c mlx5_sync_reset_request_event(): mlx5_core_warn(dev, "PCI Sync FW Update Reset Ack. Device reset
    # is expected.\n"); mlx5_fw_reset_complete_reload(): "reset reload flow aborted, PCI reads still not working"
    ("mlx5_core 0000:3b:00.0: mlx5_sync_reset_request_event:417:(pid 0): PCI Sync FW Update Reset Ack. Device reset "
     "is expected.", "ib", "warning"),
    # ---- pagealloc.c give_pages(): mlx5_core_warn(dev, "func_id 0x%x, npages %d, err %d\n") (rdma7_mlx5_errno,
    # extended)
    ("mlx5_core 0000:3b:00.0: give_pages:366:(pid 0): func_id 0x0, npages 4096, err -12", "ib", "warning"),
    # ---- drivers/infiniband/hw/mlx5/qp.c mlx5_ib_qp_event(): pr_warn("mlx5_ib: Unexpected event type %d on QP %06x\n")
    ("mlx5_ib: Unexpected event type 5 on QP 0001a3", "ib", "warning"),
    # ---- drivers/infiniband/core/sa_query.c update_sm_ah(): pr_warn("Couldn't create new SM AH\n")
    ("Couldn't create new SM AH", "ib", "warning"),
    ("Couldn't find index for default PKey", "ib", "warning"),
    # ---- drivers/infiniband/ulp/ipoib/ipoib_main.c ipoib_timeout(): ipoib_warn(priv, "transmit timeout: latency %d
    # msecs\n"), "queue stopped %d, tx_head %u, tx_tail %u, global_tx_head %u, global_tx_tail %u\n"
    ("ib0: queue stopped 1, tx_head 1024, tx_tail 512, global_tx_head 1024, global_tx_tail 512", "ib", "warning"),
    ("ib0: transmit timeout: latency 10424 msecs", "ib", "warning"),
    # ---- drivers/infiniband/hw/irdma/hw.c irdma_process_aeq(): ibdev_err(..., "abnormal ae_id = 0x%x bool qp=%d
    # qp_id = %d, ae_src=%d\n")
    ("infiniband irdma0: abnormal ae_id = 0x503 bool qp=1 qp_id = 12, ae_src=5", "ib", "warning"),
    # ---- drivers/infiniband/ulp/ipoib/ipoib_main.c ipoib_dev_init(): pr_warn("%s failed to open device\n");
    # ipoib_add_port(): pr_warn("%s, %d: ipoib_intf_alloc failed %ld\n"); ipoib_get_net_dev_by_params():
    # dev_warn_ratelimited(&dev->dev, "duplicate IP address detected\n")
    ("ib0 failed to open device", "ib", "warning"),
    ("mlx5_0, 1: ipoib_intf_alloc failed -12", "ib", "warning"),
    ("infiniband mlx5_0: duplicate IP address detected", "ib", "warning"),
    # ---- mlx5 health.c reset_fw_if_needed(): mlx5_core_warn(dev, "Issuing FW Reset\n"); fw_reset.c poll_sync_reset():
    # mlx5_core_warn(dev, "Got Device Reset\n")
    ("mlx5_core 0000:3b:00.0: reset_fw_if_needed:205:(pid 2190): Issuing FW Reset", "ib", "warning"),
    ("mlx5_core 0000:3b:00.0: poll_sync_reset:178:(pid 0): Got Device Reset", "ib", "warning"),
    # ---- drivers/infiniband/hw/bnxt_re/qplib_rcfw.c __wait_for_resp(): dev_err(&rcfw->pdev->dev, "cmdq[%#x]=%#x
    # timedout (%d)msec\n")
    ("bnxt_en 0000:41:00.0: cmdq[0x4f]=0x15 timedout (30000)msec", "ib", "warning"),
    # ---- drivers/infiniband/ulp/rtrs/rtrs-clt.c post_recv_path(): rtrs_err(clt_path->clt, "post_recv_io(), err: %d\n")
    # behind pr_fmt's "rtrs_client L%d: " and rtrs-log.h's "<%s>: " (the session name)
    ("rtrs_client L1612: <rnbd-sess-01>: post_recv_io(), err: -12", "ib", "warning"),
    # ---- rdma-core v64.0 libibverbs/init.c, dynamic_driver.c: PFX "Warning: couldn't allocate driver for %s\n", PFX
    # "Fatal: couldn't allocate device for %s\n"
    ("libibverbs: Warning: couldn't allocate driver for mlx5_0", "ib", "warning"),
    ("libibverbs: Fatal: couldn't allocate device for mlx5_0", "ib", "warning"),
    # ---- opensm 3.3.24 osm_log(OSM_LOG_SYS, "Errors during initialization\n"), "Found duplicated node GUID.\n"
    # (to syslog)
    ("Nov 26 09:52:01 sm-node-01 opensm[2345]: Errors during initialization", "ib", "warning"),
    ("Nov 26 09:52:01 sm-node-01 opensm[2345]: Found duplicated node GUID.", "ib", "warning"),
]


BENIGN = [
    # mlx5_core_info() prints the same "%s:%d:(pid %d): " prefix as mlx5_core_err/warn (events.c mlx5_pcie_event(),
    # main.c mlx5_function_setup()): the prefix says nothing of the level, so no rule reads it alone
    "mlx5_core 0000:3b:00.0: mlx5_pcie_event:294:(pid 812): PCIe slot advertised sufficient power (75W).",
    "mlx5_core 0000:3b:00.0: mlx5_function_setup:1120:(pid 812): firmware version: 28.39.1002",
    # health.c mlx5_health_try_recover() and fw_reset.c mlx5_pci_link_toggle(): mlx5_core_info, the recovery's success
    "mlx5_core 0000:3b:00.0: mlx5_health_try_recover:356:(pid 2190): health recovery succeeded",
    "mlx5_core 0000:3b:00.0: mlx5_pci_link_toggle:286:(pid 1234): PCI Link up",
    # IPoIB's netdev_info_once about a program reading dev_id (ipoib_main.c dev_id_show())
    'mlx5_core 0000:3b:00.0 ib0: "udevadm" wants to know my dev_id. Should it look at dev_port instead? See '
    'Documentation/ABI/testing/sysfs-class-net for more info.',
    # an mlx5 step that reports success (err 0) is not rdma7_mlx5_errno's
    "mlx5_core 0000:3b:00.0: give_pages:366:(pid 0): func_id 0x0, npages 4096, err 0",
    # opensm's healthy sweep (OSM_LOG_SYS) and its INFO-level trap log
    "Nov 26 09:52:01 sm-node-01 opensm[2345]: SUBNET UP",
    "Nov 26 09:52:01 sm-node-01 opensm[2345]: Entering MASTER state",
    # the verbs library's ABI note without the kernel module (rdma7's info) and a provider library that is not
    # installed (libibverbs_warning's info) are not rules8's driver warning
    "libibverbs: Fatal: couldn't read uverbs ABI version.",
    "libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so': libmlx5-rdmav34.so: cannot open shared object "
    "file: No such file or directory",
    # mlxlink's healthy port (the same row, state Active) and its troubleshooting opcode 0
    "State                              : Active",
    "Status Opcode                      : 0",
    # IPoIB's notes on its own configuration
    "ib0: mtu > 2044 will cause multicast packet drops.",
    "ib0: enabling connected mode will cause multicast packet drops",
]


NEVER_DRAINS = [
    # mstflint mlxlink operatingInfoPage(): the "State" row (the key padded to 37 columns before ": ") with a phy
    # manager state other than Active (mlxlink_maps.cpp _pmFsmState): tool output an admin pastes
    "State                              : Port PLL Down",
    "State                              : Negotiation",
    "libibverbs: Warning: couldn't allocate driver for mlx5_0",
    "Nov 26 09:52:01 sm-node-01 opensm[2345]: Errors during initialization",
    "Nov 26 09:52:01 sm-node-01 opensm[2345]: Errors on subnet. Duplicate GUID found by link from a port to itself. "
    "See verbose opensm.log for more details",
]


globals().update(table_tests(found=FAULTS, no_drain=NEVER_DRAINS, twins=BENIGN,
                             kernel_lines=[line for line, _, _ in FAULTS
                                           if not line.startswith(("libibverbs", "Nov 26"))]))


def test_mlxlink_states_are_found_as_ib_warnings() -> None:
    """A port's phy manager state other than Active (mlxlink) is an ib warning from rdma8_mlxlink_state."""
    for state in ("Port PLL Down", "Close port", "Negotiation", "Training"):
        found_as(f"State{' ' * 30}: {state}", "ib", "warning")
    assert diagnose(b"State                              : Training")[0].details.get("rule") == "rdma8_mlxlink_state"


def test_the_libibverbs_driver_warning_is_read_in_a_jobs_output() -> None:
    """joblog.scan: the verbs library's missing provider, behind srun's rank tag, is a job-trust ib warning."""
    found = joblog.scan(["0: libibverbs: Warning: couldn't allocate driver for mlx5_0"])
    assert [(f.kind, f.severity, f.trust, f.details.get("rule")) for f in found] == [
        ("ib", "warning", "job", "rdma8_libibverbs_driver")]


def test_the_kernels_bare_sa_line_is_evidence_not_a_drain() -> None:
    """The SA client's bare line (no prefix: ib_sa has no pr_fmt) is a kernel warning to investigate, never a node
    fault: a line without a driver's prefix is weaker evidence than a prefixed one."""
    findings = diagnose(b"[ 2001.000401] Couldn't create new SM AH")
    assert findings[0].details.get("rule") == "rdma8_sa_sm_ah"
    assert (findings[0].trust, findings[0].action) == ("kernel", "investigate")
    assert not any(is_node_fault(f, None) for f in findings)
