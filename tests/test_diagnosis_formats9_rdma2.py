"""Round 9's second RDMA printers file (rules9-RDMA2): the lines of tests/data/kernel/printers/rdma2.tsv that no rule
and no subsystem fallback read before (the RDMA core's untagged init failures, iw_cxgb4's asynchronous errors,
vmw_pvrdma's probe, mlx4_ib's RoCE demux, `devlink health show`'s error state, ibping and perftest failures), and what
the printer table cannot say: which rule reads them, their trust, that tool and job lines never drain, that the kernel's
own lines are kernel evidence to investigate (never a drain), and that the same printers' routine lines stay silent.

Every line below is a format string of the public source named in the comment above it, with its conversions filled
in by hand: no line is copied from a log or from the field corpus.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import never_drains, table_tests

# ---- linux drivers/infiniband/core sa_query.c update_sm_ah()/ib_sa_init(), iwcm.c iw_cm_init() (v5.15),
# uverbs_main.c ib_uverbs_init(): untagged pr_err/pr_warn of the RDMA core's modules
CORE = [
    "Couldn't query port",
    "Couldn't register ib_sa client",
    "Couldn't initialize multicast handling",
    "iw_cm: couldn't init iwpm",
    "user_verbs: couldn't register dynamic device number",
    "user_verbs: couldn't create class infiniband_verbs",
]
# ---- drivers/infiniband/hw/cxgb4/ev.c c4iw_ev_dispatch()/dump_err_cqe(); vmw_pvrdma/pvrdma_main.c pvrdma_pci_probe();
# mlx4/mad.c mlx4_ib_demux_mad() (mlx4_ib_warn: dev_warn(parent, "mlx4_ib: " fmt))
HW = [
    "iw_cxgb4: BAD AE qpid 0x1a4 opcode 1 status 0x1 type 0 wrid.hi 0x0 wrid.lo 0x0",
    "iw_cxgb4: BAD AE cqid 0x4 qpid 0x1a4 opcode 1 status 0x1 type 0 wrid.hi 0x0 wrid.lo 0x0",
    "iw_cxgb4: AE qpid 0x1a4 opcode 1 status 0x7 type 0 len 0x0 wrid.hi 0x0 wrid.lo 0x2a",
    "vmw_pvrdma 0000:0b:00.0: failed to find paired vmxnet3 device",
    "vmw_pvrdma 0000:0b:00.0: driver needs RoCE v1 or v2 support",
    "mlx4_core 0000:04:00.0: mlx4_ib: RoCE grh not present.",
    "mlx4_core 0000:04:00.0: mlx4_ib: RoCE mgmt class is not CM",
]
# ---- iproute2 devlink/devlink.c pr_out_health(); infiniband-diags ibping.c report(); perftest perftest_parameters.c
# and perftest_resources.c
TOOLS = [
    "    state error error 2 recover 1 last_dump_date 2026-11-26 last_dump_time 09:52:01 grace_period 500 "
    "auto_recover true auto_dump true",
    "10 packets transmitted, 0 received, 100% packet loss, time 10003 ms",
    " Unable to find the Infiniband/RoCE device",
    "Problems with warm up",
]


READ_BY_RULE = [
    ("Couldn't query port", "rules9_rdma2_core_init"),
    ("[ 6021.118200] user_verbs: couldn't register device number", "rules9_rdma2_core_init"),
    ("Nov 26 09:52:01 gpu-node-07 kernel: iw_cxgb4: BAD AE qpid 0x1a4 opcode 1 status 0x1 type 0 wrid.hi 0x0 "
     "wrid.lo 0x0", "rules9_rdma2_iw_cxgb4_ae"),
    ("[ 6021.118200] vmw_pvrdma 0000:0b:00.0: failed to allocate UAR table", "rules9_rdma2_pvrdma_probe"),
    ("mlx4_core 0000:04:00.0: mlx4_ib: RoCE grh not present.", "rules9_rdma2_mlx4_ib_demux"),
    ("    state error error 1 recover 0 grace_period 60000 auto_recover true auto_dump true",
     "rules9_rdma2_devlink_health_error"),
    ("10 packets transmitted, 0 received, 100% packet loss, time 10003 ms", "rules9_rdma2_ib_tool_failure"),
]


@pytest.mark.parametrize("line", [
    *TOOLS,
    # srun --label's rank tag in front of perftest's words: still the job's
    "0:  Unable to find the Infiniband/RoCE device",
])
def test_tool_and_job_lines_never_drain(line: str) -> None:
    never_drains(line)
    assert all(f.trust == "job" for f in diagnose(line.encode()))


def test_perftest_in_a_jobs_output_is_a_job_finding() -> None:
    found = joblog.scan(["1: Problems with warm up"])
    assert [(f.kind, f.severity, f.trust, f.details.get("rule")) for f in found] == [
        ("ib", "warning", "job", "rules9_rdma2_ib_tool_failure")]


BENIGN = [
    # mlx5 core diag/fw_tracer.c mlx5_fw_tracer_handle_traces(): mlx5_core_warn(dev, "FWTracer: Events were lost\n")
    # (the trace ring overflowed: the tracer's bookkeeping, not a device fault; the fallback filed it before)
    "[ 6021.118200] mlx5_core 0000:3b:00.0: mlx5_fw_tracer_handle_traces:808:(pid 1828): FWTracer: Events were "
    "lost",
    # devlink health show: a healthy reporter; ibping: every reply back (iputils ping's own 100% loss, "time 9213ms"
    # with no space, is not an InfiniBand finding)
    "    state healthy error 0 recover 0 grace_period 500 auto_recover true auto_dump true",
    "10 packets transmitted, 10 received, 0% packet loss, time 10 ms",
    "10 packets transmitted, 0 received, 100% packet loss, time 9213ms",
    # pvrdma_pci_probe() dev_info("paired device to %s\n"); cxgb4 device.c c4iw_uld_state_change() pr_info("%s: Up\n")
    "vmw_pvrdma 0000:0b:00.0: paired device to ens192",
    "iw_cxgb4: 0000:81:00.4: Up",
    # uverbs_main.c ib_uverbs_write(): pr_err_once("uverbs_write: process %d (%s) changed security contexts ...") (a
    # process's own misuse, with its name in the line: never a node's fault)
    "uverbs_write: process 41234 (python3) changed security contexts after opening file descriptor, this is not "
    "allowed.",
]


# kernel_investigated_lines: The RDMA core's and the RDMA drivers' own lines keep the kernel's trust and ask for a look:
# an init failure or a queue pair's asynchronous error is not by itself a drain (the ib policy drains only a dead HCA).
globals().update(table_tests(found=[(line, "ib", "warning") for line in CORE + HW + TOOLS],
                             kernel_investigated_lines=CORE + HW, twins=BENIGN, rules=READ_BY_RULE))


# ---- the kernel's own words about a consumer's queue pair (the fabric writer's open judgement): linux v6.12 mlx5_ib
# cq.c mlx5_handle_error_cqe()/dump_cqe() "WC error: %d, Message: %s\n", bnxt_re ib_verbs.c "Failed to create HW QP",
# ulp/iser iser_err_comp() "%s failure: %s (%d) vend_err %#x\n", ulp/isert isert_print_wc(), ulp/ipoib
# ipoib_transport_dev_init() "%s: failed to create receive CQ\n"
KERNEL_QP = [
    "[ 5123.456789] infiniband mlx5_0: mlx5_handle_error_cqe:333:(pid 0): WC error: 10, message: remote access error",
    "[ 5123.456789] infiniband mlx5_0: dump_cqe:281:(pid 0): WC error: 12, Message: transport retry counter exceeded",
    "Nov 26 09:52:01 gpu-node-07 kernel: bnxt_re bnxt_en.rdma.1 bnxt_re1: Failed to create HW QP",
    "[ 5123.456789] iser: iser_err_comp: login failure: transport retry counter exceeded (12) vend_err 0x81",
    "[Thu Nov 26 09:52:01 2026] isert: isert_print_wc: send failure: remote access error (10) vend_err 88",
    "Nov 26 09:52:01 gpu-node-07 kernel: mlx5_1: failed to create receive CQ",
]


@pytest.mark.parametrize("line", KERNEL_QP)
def test_the_kernels_queue_pair_errors_are_kernel_findings_not_a_jobs(line: str) -> None:
    """Before, verbs_job_error read these kernel lines with a job's trust and restart_app; now the kernel's own report
    is kernel evidence (ib, warning, investigate) and never a drain."""
    findings = diagnose(line.encode())
    top = findings[0]
    assert (top.kind, top.severity, top.action, top.trust) == ("ib", "warning", "investigate", "kernel")
    assert top.details.get("rule") == "rules9_rdma2_kernel_qp_error"
    assert not any(is_node_fault(f, None) for f in findings)


def test_a_jobs_copy_of_the_kernels_words_stays_the_jobs() -> None:
    """In a job's output the same words are still the job's (verbs_job_error, trust job)."""
    found = joblog.scan(["0: infiniband mlx5_0: mlx5_handle_error_cqe:333:(pid 0): WC error: 10, message: remote "
                         "access error"])
    assert [(f.kind, f.trust, f.details.get("rule")) for f in found] == [("ib", "job", "verbs_job_error")]


@pytest.mark.parametrize("line", [
    # linux mana_ib (v6.13) main.c/qp.c ibdev_err(&mdev->ib_dev, ...) behind `mana_ib PARENT IBDEV: `; vmw_pvrdma's
    # other probe failures
    "mana_ib mana.rdma.0 mana_0: Failed to create EQs for RNIC err -5",
    "mana_ib mana.rdma.0 mana_0: Failed to create rc qp  -5",
])
def test_the_new_rdma_tags_reach_the_fallback_as_kernel_findings(line: str) -> None:
    """`mana_ib` and `vmw_pvrdma` joined the rdma table of subsystems.toml: their failures no rule names are the
    fallback's ib warnings with the kernel's trust."""
    findings = diagnose(line.encode())
    assert (findings[0].kind, findings[0].severity, findings[0].trust) == ("ib", "warning", "kernel")
    assert findings[0].details.get("unrecognised")
