"""No silent misses (issue 32): the subsystem fallback, the report's "unrecognised messages" section and
`slurmtools diagnose --suggest-rules`; and the verdicts of the new kinds (disk, pcie, segfault, thermal)."""

from __future__ import annotations

import json
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools.cli import main
from slurmtools.diagnosis import diagnose, fallback, policy, subsystems, suggest
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.findings import KINDS, NODE_TRUST
from slurmtools.diagnosis.rules import packaged, validate
from slurmtools.ledger import schema, ship
from slurmtools.ledger.db import make_engine
from slurmtools.ledger.spool import Event, make_key
from slurmtools.reports import render
from slurmtools.reports.build import build_report
from slurmtools.reports.html import render_html
from slurmtools.reports.scope import Scope

from .reports_data import CLUSTER, DAY, T0

#: One error line per subsystem that no rule claims: (line, kind, subsystem, trust).
UNKNOWN = [
    ("[ 12.5] NVRM: GPU0 the frobnicator went away and failed", "gsp", "nvidia-driver", "kernel"),
    ("[ 12.5] nvidia-nvswitch2: frobnicator lost on port 7", "sxid", "nvidia-nvswitch", "kernel"),
    ("[ 12.5] nvidia-nvlink: frobnicator is stuck", "nvlink", "nvidia-nvlink", "kernel"),
    ("[ 12.5] mlx5_core 0000:3b:00.0: mlx5_frob:12:(pid 4): frobnication failed, err(-22)", "ib", "rdma", "kernel"),
    ("[ 12.5] pcieport 0000:00:01.0: frobnication unrecoverable", "pcie", "pcie", "kernel"),
    ("[ 12.5] EDAC skx: the memory controller interface failed to respond", "mce", "machine-check", "kernel"),
    ("[ 12.5] blk_mq: frobnicating queue 3 timed out", "disk", "local-storage", "kernel"),
    ("[ 12.5] LNet: frobnication of peer halted", "nfs", "shared-filesystem", "kernel"),
    ("[ 12.5] coretemp coretemp.0: sensor frobnication error", "thermal", "thermal", "kernel"),
    ("Jan 11 09:53:01 gpu017 nvidia-fabricmanager[2201]: NVSwitch 3 port 61 is down", "fabric_manager",
     "nvidia-fabricmanager", "syslog"),
]


@pytest.mark.parametrize("line, kind, subsystem, trust", UNKNOWN)
def test_an_unrecognised_error_of_a_known_subsystem_is_a_warning_never_a_drain(line: str, kind: str, subsystem: str,
                                                                            trust: str) -> None:
    [f] = diagnose(line.encode())
    assert (f.kind, f.severity, f.action, f.trust) == (kind, "warning", "investigate", trust)
    assert f.details["unrecognised"] is True and f.details["subsystem"] == subsystem
    assert f.details["rule"] == "unrecognised" and not is_node_fault(f, None)


@pytest.mark.parametrize("line", [
    "[ 12.5] NVRM: GPU0 the frobnicator went away",           # a subsystem, no error word
    "[ 12.5] EDAC skx: ECC is disabled on imc 0",
    "[ 12.5] pcieport 0000:00:01.0: PME: Signaling with IRQ 24",
    "[ 12.5] frobnicator: this failed and timed out",          # error words, no known subsystem
    "[ 12.5] systemd[1]: nvme.service: Failed with result 'exit-code'.",
    "[ 12.5] EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
    "[ 12.5] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "[ 12.5] sd 2:0:0:0: [sdb] Asking for cache data failed",
    "[ 12.5] ata5: SATA link down (SStatus 0 SControl 300)",
])
def test_the_fallback_needs_both_a_subsystem_and_an_error_word(line: str) -> None:
    assert [f for f in diagnose(line.encode()) if f.severity != "info"] == []


def test_a_process_name_never_poses_as_a_subsystem() -> None:
    """A task-first line (the kernel's `NAME[PID]: ...`, a name a job chooses) is never read by the kernel's
    fallback; only the daemons' tags are read there, with trust syslog."""
    for name in ("NVRM: GPU0 x", "EDAC skx: x", "mlx5_core 0000"):
        found = diagnose(f"[ 1.0] {name[:15]}: page allocation failure: order:4, mode:0x40cc0".encode())
        assert {f.kind for f in found if f.trust in NODE_TRUST} <= {"oom"}, found


def test_every_word_of_the_vocabulary_reaches_the_fallback_through_the_prefilter() -> None:
    """The fallback rule's literals are its prefilter keys: each error word of its pattern must pass them."""
    words = ["failed", "Failed", "FAILED", "failure", "error", "Error", "ERROR", "timeout", "Timeout", "timed out",
             "fatal", "Fatal", "cannot", "Cannot", "can't", "unable to", "Unable to", "halted", "down", "Down",
             "degraded", "lost", "Lost", "not responding", "aborted", "corrupted", "critical", "panic",
             "unrecoverable", "uncorrectable", "not ready", "offline", "stuck", "hung", "unreachable", "bad state",
             "crashed", "assertion"]
    for word in words:
        line = f"[ 3.0] EDAC skx: the frobnicator said {word} here\n".encode()
        found = diagnose(line + b"[ 4.0] unrelated filler line\n" * 3)
        assert [(f.kind, f.details.get("unrecognised")) for f in found] == [("mce", True)], word


def test_the_subsystem_table_is_one_table_of_data() -> None:
    """data/subsystems.toml is the one definition: the envelope parser's tags, the prefilter's tag literals and
    error words, and the fallback's subsystems and vocabulary all come from it."""
    from slurmtools.diagnosis import lines, prefilter, rules
    from slurmtools.diagnosis.findings import CATEGORIES

    table = [s for s in subsystems.SUBSYSTEMS if s.kind]
    assert {s.kind for s in table} >= {"gsp", "sxid", "nvlink", "fabric_manager", "ib", "pcie", "mce", "disk", "nfs",
                                      "thermal"}
    assert all(s.category in CATEGORIES for s in table)
    for sub in subsystems.SUBSYSTEMS:
        for example in sub.examples:     # each example is its subsystem's, and the prefilter finds its tag
            assert subsystems.subsystem_of(example) is sub, (sub.name, example)
            assert any(lit in example for lit in sub.literals), (sub.name, example)
            assert lines.normalise(f"[ 1.0] {example}").message == example
    assert set(subsystems.TAG_LITERALS) == {lit for s in table for lit in s.literals}
    assert prefilter.TAG_PATTERN.pattern.count(b"|") + 1 == len(subsystems.TAG_LITERALS)
    # the fallback's words are the prefilter's: every word of the vocabulary holds one of the prefilter's words
    assert all(any(w in word for w in subsystems.ERROR_WORDS) for word in subsystems.WORDS)
    [fb, fb_daemon] = [r for r in rules.ruleset().rules if r.handler == "unrecognised"]
    assert fb.source == fb_daemon.source == subsystems.ERROR_PATTERN and fb.literals == fb_daemon.literals == ()
    with pytest.raises(ValueError, match="start"):
        subsystems.load({"errors": {"words": ["failed"]}, "subsystem": [{"name": "x", "tags": ["^nvme"],
                                                                           "literals": ["nvme"]}]})
    with pytest.raises(ValueError, match="lower-case"):
        subsystems.load({"errors": {"words": ["Failed"]}})
    with pytest.raises(rules.RuleError, match="no literals or pattern"):
        rules.validate([{"name": "mine", "kind": "unknown", "handler": "unrecognised", "literals": ["x"],
                         "pattern": "x", "examples": ["EDAC x: failed"]}])
    names = [r["name"] for r in packaged()]
    assert names[-2:] == ["unrecognised", "unrecognised_daemon"]   # tried after every other rule


def test_a_rule_read_by_the_subsystem_path_does_not_widen_the_prefilter() -> None:
    """`prefilter = "subsystem"`: a rule's error-word literals are not keywords (the prefilter passes its lines by
    a subsystem's tag and the word); a failing line of no subsystem is never decoded."""
    from slurmtools.diagnosis import rules

    rs = rules.ruleset()
    assert not set(rs.keywords) & {b"failed", b"Failed", b"ailed", b"error", b"Error", b"rror", b"ERROR", b"fatal"}
    for line in (b"something failed without a subsystem", b"ERROR: the job's own error line",
                 b"Failed to start foo.service"):
        assert not rs.prefilter.wanted(line), line
    assert rs.prefilter.wanted(b"nvme nvme0: frobnication failed")


def test_distinct_unknown_messages_stay_distinct_and_repeats_fold() -> None:
    log = b"".join(f"[ {i}.0] EDAC skx: channel {i % 2} frobnication failed on DIMM {i}\n".encode() for i in range(6))
    log += b"[ 9.0] EDAC skx: scrubber halted\n"
    found = [f for f in diagnose(log) if f.details.get("unrecognised")]
    assert sorted((f.details["family"], f.count) for f in found) == [
        ("EDAC skx: channel <n> frobnication failed on DIMM <n>", 6), ("EDAC skx: scrubber halted", 1)]
    assert policy.fold(found) == found


def test_normalise_message_replaces_what_varies() -> None:
    assert fallback.normalise_message(
        "mlx5_core 0000:3b:00.0: mlx5_0 port 1 at 10.1.2.3@o2ib: GPU-11111111-2222-3333-4444-555555555555 0x1f 42"
    ) == "mlx5_core <pci>: <dev> port <n> at <ip>: <uuid> <hex> <n>"
    assert fallback.normalise_message("nvme nvme3: ctrl 7 on nvme3n1 and sdab, 12:34.5") == \
        "nvme <dev>: ctrl <n> on <dev> and <dev>, <pci>"


# ------------------------------------------------------------------------------------------ --suggest-rules
LOG = (b"[ 1.0] EDAC skx: the memory controller interface failed to respond at 0x7f00\n"
       b"[ 2.0] EDAC skx: the memory controller interface failed to respond at 0x8e11\n"
       b"[ 3.0] mlx5_core 0000:3b:00.0: mlx5_frob:12:(pid 4): frobnication failed, err(-22)\n"
       b"[ 4.0] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555 went away, lost\n"
       b"[ 5.0] something else failed\n")


def test_suggested_rules_are_valid_site_rules_that_claim_their_messages() -> None:
    found = suggest.suggest(LOG)
    assert [(s["kind"], s["count"], s["subsystem"]) for s in found] == [
        ("mce", 2, "machine-check"), ("gsp", 1, "nvidia-driver"), ("ib", 1, "rdma")]
    site = tomllib.loads(suggest.to_toml(found))["diagnosis"]["rules"]
    validate(site)   # every skeleton compiles and matches its example, as `config check` wants
    assert {r["name"] for r in site} == {"site_machine_check_1", "site_nvidia_driver_1", "site_rdma_1"}
    # added to a site's rules, they claim the lines the fallback caught: nothing is unrecognised any more
    after = diagnose(LOG, rules=site)
    assert not [f for f in after if f.details.get("unrecognised")]
    assert sorted(f.details["rule"] for f in after) == ["site_machine_check_1", "site_nvidia_driver_1", "site_rdma_1"]
    # the other members of a family match too: the numbers were made holes
    assert diagnose(b"EDAC skx: the memory controller interface failed to respond at 0xabc\n",
                    rules=site)[0].details["rule"] == "site_machine_check_1"


def test_suggest_rules_cli(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_bytes(LOG)
    runner = CliRunner()
    out = runner.invoke(main, ["diagnose", "--suggest-rules", str(path)])
    assert out.exit_code == 0, out.output
    assert out.output.count("\n[[diagnosis.rules]]\n") == 3 and "# 2 line(s), subsystem machine-check" in out.output
    as_json = runner.invoke(main, ["diagnose", "--suggest-rules", str(path), "--json"])
    assert json.loads(as_json.output)[0]["name"] == "site_machine_check_1"
    path.write_bytes(b"[ 1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n")
    assert "nothing to suggest" in runner.invoke(main, ["diagnose", "--suggest-rules", str(path)]).output
    missing = runner.invoke(main, ["diagnose", "--suggest-rules", str(tmp_path / "nope.log")])
    assert missing.exit_code != 0 and "Traceback" not in missing.output


# ------------------------------------------------------------------------------------------ the report section
def _finding(node: str, hours: float, message: str, *, unrecognised: bool = True, count: int = 1) -> Event:
    when = T0 + timedelta(hours=hours)
    details = {"rule": "unrecognised", "unrecognised": True, "subsystem": "machine-check",
               "family": fallback.normalise_message(message), "count": count} if unrecognised else {"rule": "x"}
    data = {"node": node, "time": when.isoformat(), "job_id": 1, "restart_count": 0, "source": "kernel",
            "kind": "mce", "xid": None, "category": "hardware", "severity": "warning", "action": "investigate",
            "trust": "kernel", "message": message, "details": details}
    return Event("finding", data, cluster=CLUSTER, time=when, key=make_key("t", node, hours, message))


def test_report_lists_unrecognised_messages_by_subsystem(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    schema.upgrade(engine)
    with engine.begin() as conn:
        ship.store(conn, [_finding("n1", 1, "EDAC skx: scrubber 1 halted"),
                          _finding("n2", 5, "EDAC skx: scrubber 2 halted", count=3),
                          _finding("n1", 7, "EDAC skx: the interface failed to respond"),
                          _finding("n3", 8, "EDAC skx: recognised warning", unrecognised=False),
                          _finding("n4", 24 * 20, "EDAC skx: outside the window halted")])
    r = build_report(engine, Scope(cluster=CLUSTER, since=T0, until=T0 + 10 * DAY, nodes=10), charts=True)
    u = r["unrecognised"]
    assert u["total"] == 5 and not u["truncated"]
    [s] = u["subsystems"]
    assert (s["subsystem"], s["kind"], s["count"], s["nodes"], s["node_list"], s["families"]) == (
        "machine-check", "mce", 5, 2, ["n1", "n2"], 2)
    assert s["first_seen"].startswith("2026-01-01T01:00") and s["last_seen"].startswith("2026-01-01T07:00")
    assert s["example"] == "EDAC skx: scrubber 1 halted"
    assert s["top_families"][0] == {"family": "EDAC skx: scrubber <n> halted", "count": 4}
    text = render.text(r)
    assert "11. Unrecognised messages" in text and "machine-check" in text and "e.g. machine-check" in text
    assert "unrecognised,subsystems[0].count,5" in render.csv_text(r)
    html = render_html(r)
    assert 'id="unrecognised"' in html and "EDAC skx: scrubber 1 halted" in html
    empty = build_report(engine, Scope(cluster="other", since=T0, until=T0 + DAY, nodes=1))
    assert empty["unrecognised"] == {"total": 0, "subsystems": [], "truncated": False}
    assert "none in this window" in render_html(empty)


# ------------------------------------------------------------------------------------------ the new kinds' verdicts
def _top(line: str) -> tuple[str, str, str, str]:
    f = diagnose(line.encode())[0]
    return f.kind, f.severity, f.action, f.trust


def test_disk_a_failed_device_drains_an_io_error_is_looked_at() -> None:
    assert _top("nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10") == (
        "disk", "critical", "drain_node", "kernel")
    assert _top("sd 0:0:0:0: rejecting I/O to offline device")[:3] == ("disk", "critical", "drain_node")
    assert _top("blk_update_request: I/O error, dev nvme1n1, sector 823872 op 0x0:(READ) flags 0x80700")[:3] == (
        "disk", "warning", "investigate")
    assert _top("XFS (dm-4): I/O Error Detected. Shutting down filesystem")[:3] == ("disk", "error", "investigate")
    assert _top("nvme0: Admin Cmd(0x6), I/O Error (sct 0x0 / sc 0x2) DNR ")[:2] == ("disk", "info")


def test_pcie_link_down_is_an_error_a_narrow_link_a_warning_a_slower_slot_info() -> None:
    assert _top("pcieport 0000:00:1c.0: pciehp: Slot(0): Link Down")[:3] == ("pcie", "error", "investigate")
    assert _top("pci 0000:3b:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at "
                "0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")[:2] == ("pcie", "warning")
    assert _top("pci 0000:3b:00.0: 8.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe x4 link at "
                "0000:00:1c.0 (capable of 31.504 Gb/s with 8.0 GT/s PCIe x4 link)")[:2] == ("pcie", "warning")
    assert _top("pci 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x16 link at "
                "0000:3a:00.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)")[:2] == ("pcie", "info")


def test_a_segfault_is_recorded_and_attributed_never_a_node_action() -> None:
    for line in ("[ 5.0] python3[4242]: segfault at 0 ip 00007f3a1c2b3d4e sp 00007ffd5e6f7a80 error 4 in libc.so.6",
                 "traps: cups-browsed[1499] general protection fault ip:7e00c56ba97a sp:7ffdc57583e8 error:0 in x",
                 "srun: error: gpu017: task 3: Segmentation fault (core dumped)"):
        f = diagnose(line.encode())[0]
        assert (f.kind, f.severity, f.action, f.trust) == ("segfault", "info", "none", "job")
        assert not is_node_fault(f, None)
    [f] = diagnose(b"", job_lines=["/bin/bash: line 1:  4242 Segmentation fault      (core dumped) ./a.out"])
    assert (f.kind, f.trust) == ("segfault", "job")


def test_thermal_is_its_own_kind() -> None:
    assert _top("mce: CPU3: Package temperature above threshold, cpu clock throttled (total events = 1)")[:2] == (
        "thermal", "warning")
    assert _top("thermal thermal_zone0: critical temperature reached (105 C), shutting down")[:3] == (
        "thermal", "critical", "drain_node")
    assert _top("            HW Thermal Slowdown     : Active") == ("thermal", "warning", "investigate", "syslog")
    assert [f for f in diagnose(b"            HW Thermal Slowdown     : Not Active") if f.severity != "info"] == []
    assert [f for f in diagnose(b"mce: CPU6: Core temperature/speed normal") if f.severity != "info"] == []


def test_job_output_rdma_errors_are_job_evidence() -> None:
    [f] = diagnose(b"", job_lines=["[n1:19546:0:19546] ib_mlx5_log.c:139  Transport retry count exceeded on "
                                   "mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)"])
    assert (f.kind, f.trust, is_node_fault(f, None)) == ("ib", "job", False)


def test_dcgm_health_system_decides_the_kind() -> None:
    def kind(system: str, state: str = "WARNING") -> tuple[str, str]:
        f = diagnose(f"Detected a {state} in health system {system}: 'something'".encode())[0]
        return f.kind, f.severity

    assert kind("PCIe") == ("pcie", "warning") and kind("NVLink", "FAILURE") == ("nvlink", "error")
    assert kind("Memory") == ("xid", "warning")
    assert diagnose(b"Detected a WARNING in health system NVLink: 'x'")[0].trust == "syslog"


def test_every_kind_is_known_and_has_a_verdict_row_in_the_docs() -> None:
    """findings.KINDS, the packaged rules, the subsystem table and docs/diagnosis.md agree on the kinds."""
    rule_kinds = {r["kind"] for r in packaged()} - {"boot", "unknown"}     # markers and the fallback's own rule
    assert rule_kinds | {s.kind for s in subsystems.SUBSYSTEMS if s.kind} | {"exit"} == set(KINDS)
    doc = (Path(__file__).resolve().parent.parent / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    rows = {cell.strip(" `") for line in doc.splitlines() if line.startswith("| `")
            for cell in line.split("|")[1].split(",")}
    assert set(KINDS) <= rows, sorted(set(KINDS) - rows)


def test_the_prefilter_stays_narrow_on_the_commonest_benign_lines() -> None:
    """Lines every busy node prints by the thousand (many of them all distinct) must hold no keyword: one that does
    is decoded and matched against every rule, line by line (a bare `NVRM` literal made the 64 MB bench 10x slower)."""
    from slurmtools.diagnosis.rules import ruleset

    keywords = ruleset().keywords
    for line in ("usb 1-1: new high-speed USB device number 12345 using xhci_hcd",
                 "NVRM: GPU at PCI:0000:18:00: GPU-5e3f1c2a-1111-2222-3333-444400012345",
                 "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
                 "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
                 "kauditd_printk_skb: 12345 callbacks suppressed",
                 "systemd[1]: Started Session 12345 of user root.",
                 "audit: type=1400 audit(12345.123:456): apparmor=\"STATUS\" operation=\"profile_load\"",
                 "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
                 "perf: interrupt took too long (12345 > 2500), lowering kernel.perf_event_max_sample_rate to 79750"):
        assert not [k for k in keywords if k in line.encode()], line


def test_disk_io_errors_drain_only_above_the_rate_on_one_device() -> None:
    def log(n: int, dev: str = "nvme1n1", start: int = 1) -> bytes:
        return b"".join(f"[ {i}.0] blk_update_request: I/O error, dev {dev}, sector {i * 8} op 0x0:(READ)\n".encode()
                        for i in range(start, start + n))

    [few] = diagnose(log(5))
    assert (few.severity, few.action, few.count) == ("warning", "investigate", 5) and not is_node_fault(few, None)
    [many] = diagnose(log(60))
    assert (many.severity, many.action, many.count, is_node_fault(many, None)) == ("critical", "drain_node", 60, True)
    assert many.details["rate"]["exceeded"] is True
    spread = diagnose(log(30, "sda") + log(30, "sdb", start=31))    # 30 on each of two devices: neither is over
    assert {(f.details["device"], f.action) for f in spread} == {("sda", "investigate"), ("sdb", "investigate")}
