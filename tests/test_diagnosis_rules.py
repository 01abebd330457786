"""The diagnosis rules as data: the packaged file validates, a site's rules are checked at config check with a
clear error, overrides and additions take effect, multi-line events are one finding, rates turn frequent
corrected errors into warnings, and a line no rule can match is never decoded."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools import config
from slurmtools.cli import main
from slurmtools.diagnosis import diagnose, kernel, rules

SEVERE = {"warning", "error", "critical"}


def test_packaged_rules_compile_and_the_prefilter_is_derived_from_them() -> None:
    rs = rules.ruleset()
    assert len(rs.rules) >= 60
    literals = {lit.encode() for r in rs.rules for lit in rules.keywords_of(r)}
    # every keyword is part of a literal, and every literal holds a keyword: the prefilter passes every line
    # that holds a literal (a rule's precondition), and nothing the rules could not look at; a rule read by the
    # subsystem path (`prefilter = "subsystem"`) has its error-word literals passed by a tag and the word instead
    # (compile_rule checks that the prefilter passes each of its examples)
    assert all(any(k in lit for lit in literals) for k in rs.keywords)
    assert all(any(k in lit for k in rs.keywords) for lit in literals)
    names = [r.name for r in rs.rules]
    assert len(names) == len(set(names))
    for rule in rs.rules:
        for example in rule.examples:
            hit = kernel.match_line(kernel.normalise(example), {}, rs)
            assert hit is not None, (rule.name, example)
            # its own rule, or an earlier one of the same kind (families overlap on purpose)
            assert hit[0].name == rule.name or hit[0].kind == rule.kind, (rule.name, hit[0].name, example)


def test_only_kernel_rules_at_the_prefix_can_drain() -> None:
    for rule in rules.ruleset().rules:
        if rule.anchor == "task":
            assert rule.trust != "kernel" or (rule.action not in {"reset_gpu", "reboot_node", "drain_node"}
                                              and not rule.handler), rule.name


GOOD = {"name": "site_gpfs", "kind": "nfs", "category": "filesystem", "action": "investigate",
        "severity": "error", "literals": ["mmfs:"], "pattern": r"^mmfs: .*(?:Lost membership|Unmounting)",
        "examples": ["mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems."]}


@pytest.mark.parametrize("change, message", [
    ({"pattern": "^mmfs: (unclosed"}, "not a valid regular expression"),
    ({"examples": ["GPFS is fine"]}, "holds none of the literals"),
    ({"examples": ["mmfs: all good"]}, "does not match its example"),
    ({"colour": "red"}, "unknown field 'colour'"),
    ({"severity": "fatal"}, "severity must be one of"),
    ({"action": "drain_node", "anchor": "task"}, "task's name"),
    ({"rate": "ten per hour"}, "rate must look like"),
    ({"literals": ["x"]}, "literals must be strings of 2 or more"),
    ({"kind": "Bad Kind"}, "kind must be a short lowercase word"),
    ({"examples": []}, "examples is required"),
])
def test_a_bad_site_rule_is_refused_at_config_check(tmp_path: Path, change: dict[str, object], message: str) -> None:
    rule = {**GOOD, **change}
    path = tmp_path / "site.toml"
    path.write_text(_toml_rules([rule]))
    with pytest.raises(config.ConfigError) as err:
        config.check_file(path)
    assert "site_gpfs" in str(err.value) and message in str(err.value) and str(path) in str(err.value)
    result = CliRunner().invoke(main, ["config", "check", str(path)])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_site_rules_add_change_and_disable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "site.toml"
    path.write_text(_toml_rules([GOOD, {"name": "aer_header", "rate": "2/1h"},
                                 {"name": "nfs_server", "enabled": False}]))
    cfg = config.load(path, env={})
    site = cfg.diagnosis.rules
    found = diagnose(b"[ 1.0] mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems.\n", rules=site)
    assert [(f.kind, f.category, f.trust, f.details["rule"]) for f in found] == [
        ("nfs", "filesystem", "kernel", "site_gpfs")]
    # the rule is off: what is left is the subsystem fallback's warning (no silent misses), never its verdict
    assert [(f.kind, f.severity, f.action, f.details["rule"], f.details["unrecognised"]) for f in diagnose(
        b"[ 1.0] nfs: server fs01 not responding, still trying\n", rules=site)] == [
        ("nfs", "warning", "investigate", "unrecognised", True)]
    corrected = b"".join(b"[ %d.0] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0\n" % i
                         for i in range(3))
    assert diagnose(corrected)[0].severity == "info"                 # packaged: 10 per hour
    assert diagnose(corrected, rules=site)[0].severity == "warning"  # the site's 2 per hour
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(path))
    data = tmp_path / "kern.log"
    data.write_bytes(b"[ 5.0] mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems.\n")
    result = CliRunner().invoke(main, ["diagnose", "--kernel-log", str(data), "--json"])
    assert result.exit_code == 0 and '"site_gpfs"' in result.output


def _toml_rules(items: list[dict[str, object]]) -> str:
    import json

    out = []
    for item in items:
        out.append("[[diagnosis.rules]]")
        out += [f"{k} = {json.dumps(v)}" for k, v in item.items()]
    return "\n".join(out) + "\n"


AER_SURPRISE = """\
[  100.000001] pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:03:00.0
[  100.000002] nvidia 0000:03:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)
[  100.000003] nvidia 0000:03:00.0:   device [10de:2330] error status/mask=00000020/00000000
[  100.000004] nvidia 0000:03:00.0:    [ 5] SDES                  (First)
[  100.000005] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)
"""  # noqa: E501
AER_RXERR = AER_SURPRISE.replace("[ 5] SDES", "[14] CmpltTO")


def test_an_aer_event_is_one_finding_and_its_details_decide() -> None:
    worse = diagnose(AER_SURPRISE.encode())
    assert len(worse) == 1 and worse[0].kind == "aer" and worse[0].count == 1
    assert (worse[0].action, worse[0].severity, worse[0].pci) == ("drain_node", "critical", "0000:03:00")
    assert any("SDES" in e for e in worse[0].details["evidence"]) and len(worse[0].details["evidence"]) == 4
    milder = diagnose(AER_RXERR.encode())
    assert len(milder) == 1 and (milder[0].action, milder[0].severity) == ("investigate", "error")
    two = diagnose((AER_RXERR + AER_RXERR.replace("[  100.", "[  200.")).encode())
    assert len(two) == 1 and two[0].count == 2        # events, not lines


def test_corrected_errors_are_info_below_the_rate_and_a_warning_above() -> None:
    def corrected(n: int, spacing: float) -> bytes:
        head = "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0"
        return "".join(f"[{100 + i * spacing:12.6f}] {head}\n"
                       f"[{100 + i * spacing:12.6f}] pcieport 0000:00:01.0:    [ 0] RxErr\n" for i in range(n)).encode()

    few = diagnose(corrected(5, 60))
    assert [(f.kind, f.severity, f.count) for f in few] == [("aer", "info", 5)]
    many = diagnose(corrected(30, 60))               # 30 in half an hour: past 10 per hour
    assert [(f.kind, f.severity, f.action, f.count) for f in many] == [("aer", "warning", "investigate", 30)]
    assert many[0].details["rate"]["exceeded"] is True
    spread = diagnose(corrected(30, 600), window_s=30 * 600.0)   # 30 in 5 hours: 6 per hour
    assert spread[0].severity == "info"
    edac = "".join(f"[{i:6d}.000000] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 "
                   f"(channel:0 slot:0 page:0x{i:x} offset:0x0 grain:32)\n" for i in range(1, 13)).encode()
    assert diagnose(edac)[0].severity == "warning" and diagnose(edac)[0].count == 12   # mcelog: 10 per 24 h


def test_multi_line_reports_are_one_event() -> None:
    oom = """\
[ 50.1] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[ 50.2] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/slurm/uid_1000/job_42,task_memcg=/slurm/uid_1000/job_42/step_0,task=python3,pid=4242,uid=1000
[ 50.3] Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1000kB, anon-rss:900kB
[ 50.4] oom_reaper: reaped process 4242 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB
"""  # noqa: E501
    found = diagnose(oom.encode())
    assert [(f.kind, f.count, len(f.details["evidence"])) for f in found] == [("oom", 1, 3)]
    hung = """\
[ 60.0] INFO: task kworker/u16:2:123 blocked for more than 122 seconds.
[ 60.1]       Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1
[ 60.2] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[ 60.3] task:kworker/u16:2  state:D stack:0     pid:123   ppid:2      flags:0x00004000
"""
    found = diagnose(hung.encode())
    assert [(f.kind, f.count) for f in found] == [("hung_task", 1)] and len(found[0].details["evidence"]) == 2
    ghes = """\
[ 70.0] {1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0
[ 70.1] {1}[Hardware Error]: event severity: recoverable
[ 70.2] {1}[Hardware Error]:  Error 0, type: recoverable
[ 70.3] {1}[Hardware Error]:   section_type: PCIe error
[ 70.4] {1}[Hardware Error]:   aer_uncor_status: 0x00004000, aer_uncor_mask: 0x00000000
"""
    found = diagnose(ghes.encode())
    assert [(f.kind, f.severity, f.count) for f in found] == [("aer", "critical", 1)]


def test_a_line_no_rule_can_match_is_never_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    real = kernel._plan

    def spy(key: bytes | str, *a: object) -> object:
        seen.append(key)
        return real(key, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(kernel, "_plan", spy)
    noise = "".join(f"[{i:6d}.000000] systemd[1]: Started Session {i} of user root.\n" for i in range(5000))
    fault = "[ 9999.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n"
    repeats = "".join(f"[{10000 + i}.000000] mlx5_core 0000:17:00.0 ibp23s0: Link up\n" for i in range(200))
    found = diagnose((noise + fault + repeats).encode())
    assert len(seen) == 2                       # the XID line and one Link up: every repeat is a lookup
    assert {f.kind for f in found} == {"xid", "ib"} and max(f.count for f in found) == 200
