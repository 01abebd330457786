"""Round 9's fabric printers (rules9-fabric): the lines of tests/data/kernel/printers/fabric.tsv that no rule and no
subsystem fallback read before (they hold no failure word, or stand behind a tag the fallback did not know), and what
the printer table cannot say: which rule reads them, their trust, that the job's, the subnet manager's and the tools'
lines never drain, that the kernel's own lines stay kernel evidence to investigate, and that the same printers' routine
lines stay silent.

Every line below is a format string of the public source named in the comment above it, with its conversions filled
in by hand: no line is copied from a log or from the field corpus.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog

from .rule_cases import reaches_fallback, table_tests

# ---- HewlettPackard/shs-cxi-driver drivers/net/ethernet/hpe/ss1 (cxi_core.h _cxi_log(): dev_<level>(&pdev->dev,
# "%s[%s] " fmt, cdev->name, cdev->eth_name)): cass_phy.c cass_phy_link_down() cxidev_warn("CXI_EVENT_LINK_DOWN");
# cass_sbl.c "(sbl): %d: rx degrade alert\n" and the other link alerts; cass_hni.c "Pause too long not cleared after
# timeout: %llx\n", "HSN cable is not plugged\n"; cass_pcie_mon.c "PCIe error: %s=%u\n"
CXI = [
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] CXI_EVENT_LINK_DOWN",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] (sbl): 0: rx degrade alert",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] (sbl): 0: tx degrade failure alert",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] (sbl): 0: serdes fw corruption alert",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] Pause too long not cleared after timeout: 1",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] HSN cable is not plugged",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] PCIe error: BAD_TLP=4",
]

FAULTS = [(line, "ib", "warning") for line in CXI] + [
    # ---- linux v6.12 drivers/infiniband/core/cache.c release_gid_table(): WARN(true, "GID entry ref leak for dev %s
    # index %d ref=%d\n")
    ("GID entry ref leak for dev mlx5_1 index 0 ref=1", "ib", "warning"),
    # ---- opensm osm_trap_rcv.c log_trap_info(): OSM_LOG(OSM_LOG_ERROR, "Received Generic Notice type:%u num:%u (%s)
    # Producer:%u (%s) from LID:%u%s TID:0x%016" PRIx64 "\n"), "Bad %s_Key:0x%x on SL:%d from LID1:%u QP1:0x%x to
    # LID2:%u QP2:0x%x\n"; osm_port_info_rcv.c "Got invalid base LID %u from the network. Corrected to %u\n"
    ("Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Received Generic Notice type:1 num:129 (Local Link integrity "
     "threshold reached) Producer:2 (Switch) from LID:12 Port 7 TID:0x0000000000000a3b", "ib", "warning"),
    ("Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Received Generic Notice type:1 num:131 (Flow Control Update "
     "watchdog timer expired) Producer:2 (Switch) from LID:12 Port 9 TID:0x0000000000000a3d", "ib", "warning"),
    ("Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Bad P_Key:0x7fff on SL:0 from LID1:41 QP1:0x1 to LID2:12 QP2:0x1",
     "ib", "warning"),
    ("Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Got invalid base LID 0 from the network. Corrected to 41", "ib",
     "warning"),
    # ---- libfabric src/log.c ofi_log() "%s:%d:%ld:%s:%s:%s:%s():%d<%s> %s": prov/tcp xnet_progress_hdr()
    # "Received invalid opcode\n", "Payload offset is too large\n"; prov/rxm rxm_send_credits() "Ran out of buffers
    # from TX credit buffer pool.\n", rxm_handle_comp_error() "Invalid state!\n..."; prov/shm smr_progress_connreq()
    # "Could not map peer region\n"
    ("libfabric:41234:1732612345::tcp:ep_data:xnet_progress_hdr():1055<warn> Received invalid opcode", "ib", "warning"),
    ("libfabric:41234:1732612345::tcp:ep_data:xnet_progress_hdr():1034<warn> Payload offset is too large", "ib",
     "warning"),
    ("libfabric:41234:1732612345::ofi_rxm:ep_data:rxm_send_credits():789<warn> Ran out of buffers from TX credit "
     "buffer pool.", "ib", "warning"),
    ("libfabric:41234:1732612345::ofi_rxm:cq:rxm_handle_comp_error():1857<warn> Invalid state!", "ib", "warning"),
    ("libfabric:41234:1732612345::shm:ep_ctrl:smr_progress_connreq():856<warn> Could not map peer region", "ib",
     "warning"),
    # prov/verbs vrb_eq_xrc_rej_event() VRB_WARN("CM REJ private data not valid\n"); prov/tcp xnet_rts_matched()
    # "CTS connection no longer active\n"
    ("libfabric:41234:1732612345::verbs:ep_ctrl:vrb_eq_xrc_rej_event():688<warn> CM REJ private data not valid", "ib",
     "warning"),
    ("libfabric:41234:1732612345::tcp:ep_data:xnet_rts_matched():225<warn> CTS connection no longer active", "ib",
     "warning"),
    # ---- opensm osm_node_info_rcv.c ni_rcv_get_port_info(): OSM_LOG(OSM_LOG_ERROR, "ERR OD02: Failure initiating
    # PortInfo request (%s)\n") (a letter O in the code)
    ("Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> ERR OD02: Failure initiating PortInfo request (IB_TIMEOUT)", "ib",
     "warning"),
]


BENIGN = [
    # cass_phy.c cass_phy_link_up(): cxidev_warn("CXI_EVENT_LINK_UP") (a warn-level line for a link that came up);
    # cass_uc.c cxidev_info("uC firmware version %s\n")
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] CXI_EVENT_LINK_UP",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] uC firmware version 1.5.41-ESM",
    # opensm log_trap_info(): the routine traps (64 GID in service, 128 link state change, 144 local changes), logged at
    # the same OSM_LOG_ERROR level
    "Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Received Generic Notice type:4 num:128 (Link state change) "
    "Producer:2 (Switch) from LID:12 TID:0x0000000000000a3f",
    "Nov 26 09:52:01 123456 [7F3A2C00] 0x01 -> Received Generic Notice type:4 num:64 (GID in service) Producer:4 "
    "(Class Manager) from LID:1 TID:0x0000000000000b01",
    # libfabric prov/efa efa_shm_info_create(): EFA_WARN("Disabling EFA shared memory support; failed to get shm
    # provider's info: %s\n") (it runs without shm); prov/verbs vrb_init_info() "no valid IPoIB interfaces found,
    # FI_EP_MSG endpoint type would not be available"
    "libfabric:41234:1732612345::efa:core:efa_shm_info_create():134<warn> Disabling EFA shared memory support; failed "
    "to get shm provider's info: No data available",
    "libfabric:41234:1732612345::verbs:fabric:vrb_init_info():1495<warn> no valid IPoIB interfaces found, FI_EP_MSG "
    "endpoint type would not be available",
    # rdma-core providers/mlx5/mlx5.c mlx5_local_cpu_set(): PFX "Warning: can not get local cpu set: failed to open
    # %s\n"
    "mlx5: gpu-node-07: Warning: can not get local cpu set: failed to open "
    "/sys/class/infiniband/mlx5_0/device/local_cpus",
    # linux drivers/infiniband/hw/hns/hns_roce_hw_v2.c hns_roce_irq_work_handle(): "send queue drained.\n"
    "hns3 0000:7d:00.0 hns_0: send queue drained.",
]


NEVER_DRAINS = [line for line, _, _ in FAULTS if not line.startswith(("cxi_ss1", "GID entry"))] + [
    "libfabric:41234:1732612345::efa:core:efa_shm_info_create():134<warn> Disabling EFA shared memory support; failed "
    "to get shm provider's info: No data available",
    # a job's own output that quotes the kernel's words is still the job's
    "0: libfabric:41234:1732612345::tcp:ep_data:xnet_progress_hdr():1055<warn> Received invalid opcode",
]


# The Slingshot NIC's and the RDMA core's lines are the kernel's, read as warnings to investigate: a link that went down
# or degraded is not by itself a drain (the existing ib policy drains only a dead HCA).
KERNEL_INVESTIGATED = [*CXI, "GID entry ref leak for dev mlx5_1 index 0 ref=1"]


globals().update(table_tests(found=FAULTS, kernel_investigated_lines=KERNEL_INVESTIGATED, no_drain=NEVER_DRAINS,
                             twins=BENIGN))


def test_the_cxi_rule_names_the_slingshot_family() -> None:
    """Each Slingshot link line is read by rules9_fabric_cxi_link, in a dmesg envelope as in a syslog one."""
    for line in ("[ 5123.456789] cxi_ss1 0000:41:00.0: cxi0[hsn0] CXI_EVENT_LINK_DOWN",
                 "Nov 26 09:52:01 gpu-node-07 kernel: cxi_ss1 0000:41:00.0: cxi0[hsn0] (sbl): 0: rx degrade alert"):
        assert diagnose(line.encode())[0].details.get("rule") == "rules9_fabric_cxi_link"


@pytest.mark.parametrize("line", [
    # cass_link.c cxidev_err("async down wait timed out (%s)\n"); cass_uc.c "uC failed to return the NIC ID: %d\n";
    # qedr DP_ERR (pr_err("[%s:%d(%s)]" fmt, __func__, __LINE__, DP_NAME(dev))) in verbs.c: "create qp: failed SQ shadow
    # memory allocation\n"
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] async down wait timed out (link_down)",
    "cxi_ss1 0000:41:00.0: cxi0[hsn0] uC failed to return the NIC ID: -110",
    "[qedr_create_kernel_qp:2059(qedr0)]create qp: failed SQ shadow memory allocation",
])
def test_the_new_kernel_tags_reach_the_fallback_as_kernel_findings(line: str) -> None:
    """cxi_ss1 and qedr's DP_ERR prefix are rdma tags of the subsystem table: their failures no rule names are the
    fallback's ib warnings with the kernel's trust (before, cxi_ss1's lines fell to libfabric's job-trust table)."""
    reaches_fallback(line, "ib")
    findings = diagnose(line.encode())
    assert findings[0].trust == "kernel"
    assert findings[0].details.get("unrecognised")


def test_the_libfabric_warning_is_read_in_a_jobs_output() -> None:
    """joblog.scan: a libfabric provider's warning behind srun's rank tag is a job-trust ib warning."""
    found = joblog.scan(["3: libfabric:41234:1732612345::shm:ep_ctrl:smr_progress_connreq():856<warn> Could not map "
                         "peer region"])
    assert [(f.kind, f.severity, f.trust, f.details.get("rule")) for f in found] == [
        ("ib", "warning", "job", "rules9_fabric_libfabric_warn")]
