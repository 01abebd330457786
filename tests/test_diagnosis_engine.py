"""The diagnosis engine: every rule pattern runs on RE2 (linear time; a pattern RE2 cannot take is refused with
the rule's name), lines are cut to MAX_LINE before matching, the hostile shapes of job output complete with every
line scanned and every finding kept."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmtools.cli import main
from slurmtools.diagnosis import diagnose, joblog, kernel, prefilter, rules, subsystems
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.lines import MAX_LINE, normalise
from slurmtools.diagnosis.subsystems import subsystem_of
from tests.test_security import HOSTILE, TASK_FIRST_FORMATS

DATA = Path(__file__).parent / "data" / "kernel"
SITE = {"name": "site_gpfs", "kind": "nfs", "category": "filesystem", "action": "investigate",
        "severity": "error", "literals": ["mmfs:"], "pattern": r"^mmfs: .*(?:Lost membership|Unmounting)",
        "examples": ["mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems."]}


def test_every_packaged_pattern_is_compiled_by_re2() -> None:
    import re2

    for rule in rules.RuleSet.build(rules.merge(None)).rules:   # check=True: compiled and run on the examples
        assert isinstance(rule.pattern, re2._Regexp), rule.name


@pytest.mark.parametrize("pattern, why", [
    (r"^mmfs: (?!ok).*Unmounting", "cannot run in linear time"),        # lookahead
    (r"^mmfs: (?<=: )\[E\].*Unmounting", "cannot run in linear time"),  # lookbehind
    (r"^mmfs: (\[E\]) \1.*Unmounting", "cannot run in linear time"),    # backreference
    (r"^mmfs: (unclosed", "is not a valid regular expression"),
])
def test_a_site_rule_re2_cannot_take_is_refused_by_config_check(tmp_path: Path, pattern: str, why: str) -> None:
    with pytest.raises(rules.RuleError, match=f"rule 'site_gpfs': pattern {why}"):
        rules.validate([{**SITE, "pattern": pattern}])
    path = tmp_path / "site.toml"
    path.write_text("[[diagnosis.rules]]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                                      for k, v in {**SITE, "pattern": pattern}.items()))
    result = CliRunner().invoke(main, ["config", "check", str(path)])
    assert result.exit_code == 1 and "site_gpfs" in result.output and why in result.output
    assert "Traceback" not in result.output


def test_a_site_rule_in_re2_syntax_is_taken() -> None:
    rs = rules.ruleset([SITE])
    found = diagnose(b"[ 1.0] mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems.\n",
                     rules=[SITE])
    assert rs.rules[0].name == "site_gpfs" and [f.kind for f in found] == ["nfs"]



def test_a_sites_own_rules_are_bounded_and_the_packaged_set_is_not_counted() -> None:
    many = [{**SITE, "name": f"site_{i}"} for i in range(rules.MAX_SITE_RULES + 1)]
    with pytest.raises(rules.RuleError, match=f"more than {rules.MAX_SITE_RULES} rules of the site's own"):
        rules.merge(many)
    merged = rules.merge(many[:rules.MAX_SITE_RULES])        # the packaged rules (998 in round 15) and 500 of a site's
    assert sum(r["name"].startswith("site_") for r in merged) == rules.MAX_SITE_RULES and len(merged) > 1400

# The hostile job output of issue 30 F3: `NCCL WARN NCCL WARN ...` (a Python pattern backtracked ~27 ms a line
# on it and the epilog's budget expired, dropping every finding of the window).
NCCL = "NCCL WARN " * (MAX_LINE // 10 + 1)


@pytest.mark.parametrize("lines", [
    [NCCL[:4096]],                                      # 4 KiB: one line
    [NCCL[:4096]] * 1024,                               # 4 MiB: 1,024 lines of 4 KiB
    ["NCCL WARN " * (400 << 10)],                       # 4 MiB: one line, cut to MAX_LINE
    ["x" * MAX_LINE + " NCCL WARN"] * 1024,             # the literal past the cut
], ids=["4KiB", "4MiB-lines", "4MiB-one-line", "literal-last"])
def test_hostile_job_output_is_scanned_whole(lines: list[str]) -> None:
    found = joblog.scan(lines)
    if lines[0].startswith("x"):
        assert found == []                              # cut at MAX_LINE: the literal is past the cut
        return
    assert [f.line for f in found] == list(range(1, len(lines) + 1))      # every line scanned, every finding kept
    assert all(f.kind == "nccl" and f.trust == "job" and len(f.message) <= MAX_LINE for f in found)
    folded = [f for f in diagnose(b"", job_lines=lines) if f.kind == "nccl"]
    assert sum(f.count for f in folded) == len(lines)


def test_a_kernel_line_is_cut_before_matching() -> None:
    """A message longer than MAX_LINE is cut in every path (the `[ stamp]` fast path included): a literal past the
    cut is not seen, a fault before it is."""
    late = b"[ 1.000000] " + b"y" * MAX_LINE + b" NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, fallen off\n"
    early = b"[ 2.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus." + b"z" * (1 << 20)
    assert diagnose(late) == []
    found = diagnose(early + b"\n")
    assert [f.xid for f in found] == [79] and len(found[0].message) <= MAX_LINE
    assert all(len(kernel.normalise(x.decode()).message) <= MAX_LINE for x in (late, early))


# ------------------------------------------------------------------ the envelope parser
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus."
ENVELOPES = [   # (line, stamp, mono, host): every way the same kernel message reaches us
    ("{m}", None, None, None),
    ("[  123.456789] {m}", "123.456789", 123.456789, None),
    ("<4>[  123.456789] {m}", "123.456789", 123.456789, None),
    ("4,1234,123456789,-;{m}", "123.456789", 123.456789, None),
    ("[    5.123456][    T1] {m}", "5.123456", 5.123456, None),
    ("[  +0.000844] {m}", None, None, None),
    ("[Jan11 09:52] {m}", "Jan11 09:52", None, None),
    ("[Sun Jan 11 09:52:01 2026] {m}", "Sun Jan 11 09:52:01 2026", None, None),
    ("[mar. janv. 11 09:52:01 2026] {m}", "mar. janv. 11 09:52:01 2026", None, None),
    ("[Di Mär 11 09:52:01 2026] {m}", "Di Mär 11 09:52:01 2026", None, None),
    ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 {m}", "2025-01-21T04:41:44,283302+00:00", None, None),
    ("Jan 11 09:52:01 gpu017 kernel: {m}", "Jan 11 09:52:01", None, "gpu017"),
    ("Jan 11 09:52:01.123456 gpu017 kernel: [ 4567.000001] {m}", "Jan 11 09:52:01.123456", 4567.000001, "gpu017"),
    ("janv. 11 09:52:01 gpu017 kernel: {m}", "janv. 11 09:52:01", None, "gpu017"),
    ("Jan 11 09:52:01 nvme01 kernel: {m}", "Jan 11 09:52:01", None, "nvme01"),        # a host that spells a tag
    ("11月 11 09:52:01 gpu017 kernel: {m}", "11月 11 09:52:01", None, "gpu017"),
    ("Okt 11 09:52:01 gpu017 kernel: {m}", "Okt 11 09:52:01", None, "gpu017"),
    ("2026-01-11T09:52:01.123456+00:00 gpu017 kernel: {m}", "2026-01-11T09:52:01.123456+00:00", None, "gpu017"),
    ("2026-01-11 09:52:01 CET gpu017 kernel: {m}", "2026-01-11 09:52:01 CET", None, "gpu017"),
    ("<4>1 2026-01-11T09:52:01Z gpu017 kernel - - - {m}", "2026-01-11T09:52:01Z", None, "gpu017"),
    ("Tue Aug 12 16:40:43 2025 kern.crit kernel: {m}", "Tue Aug 12 16:40:43 2025", None, None),
    ("2020/08/10 19:09:42 {m}", "2020/08/10 19:09:42", None, None),
    ("2026-01-11T09:52:01.123456789Z stderr F {m}", "2026-01-11T09:52:01.123456789Z", None, None),
    ("[pod/nvidia-driver-daemonset-x7k2p/nvidia-driver-ctr] [  123.456789] {m}", "123.456789", 123.456789, None),
    ("gpu017: [  123.456789] {m}", "123.456789", 123.456789, "gpu017"),
    ("gpu017: {m}", None, None, "gpu017"),
    ("     12 [  123.456789] {m}", "123.456789", 123.456789, None),
    ("   3 Jan 11 09:52:01 gpu017 kernel: {m}", "3 Jan 11 09:52:01", None, "gpu017"),
    ("/var/log/kern.log.1:Jan 11 09:52:01 gpu017 kernel: {m}", "Jan 11 09:52:01", None, "gpu017"),
    ("kern.log.2.gz:812:Jan 11 09:52:01 gpu017 kernel: {m}", "Jan 11 09:52:01", None, "gpu017"),
    ("messages-20260111:Jan 11 09:52:01 gpu017 kernel: {m}", "Jan 11 09:52:01", None, "gpu017"),
    ("/ # [  123.456789] {m}", "123.456789", 123.456789, None),
    ("[  123.456789,5] {m}", "123.456789", 123.456789, None),      # OPAL/skiboot console
    ("0: [  123.456789] {m}", "123.456789", 123.456789, None),     # srun --label
    ("[1,0]<stderr>: {m}", None, None, None),                      # Open MPI --tag-output
    ("1768125121.123456 gpu017 kernel: {m}", "1768125121.123456", None, "gpu017"),   # journalctl -o short-unix
    ("Sun 2026-01-11 09:52:01 UTC gpu017 kernel: {m}", "Sun 2026-01-11 09:52:01 UTC", None, "gpu017"),  # short-full
    ("<134>Jan  1 09:52:01 gpu017 kernel: {m}", "Jan  1 09:52:01", None, "gpu017"),
    ("[  123.456789 <    0.000023>] {m}", "123.456789", 123.456789, None),                # dmesg -d
    ('2026-01-11T09:52:01Z {{host="gpu017", job="kernel"}} {m}', "2026-01-11T09:52:01Z", None, None),  # logcli
    ('{{"_TRANSPORT":"kernel","MESSAGE":"{m}","_HOSTNAME":"gpu017","_SOURCE_MONOTONIC_TIMESTAMP":"123456789",'
     '"__REALTIME_TIMESTAMP":"1768125121000000"}}', "1768125121000000", 123.456789, "gpu017"),
    ('{{"log":"Jan 11 09:52:01 gpu017 kernel: {m}\\n","stream":"stdout","time":"2026-01-11T09:52:01Z"}}',
     "Jan 11 09:52:01", None, "gpu017"),
    ('{{"line":"[  123.456789] {m}","timestamp":"2026-01-11T09:52:01Z"}}', "123.456789", 123.456789, None),
    ('{{"message":"{m}","kubernetes":{{"host":"gpu017"}},"@timestamp":"2026-01-11T09:52:01Z"}}',
     "2026-01-11T09:52:01Z", None, "gpu017"),
    ("> > Jan 11 09:52:01 gpu017 kernel: {m}", "Jan 11 09:52:01", None, "gpu017"),      # a quoted mail or post
    ("> kernel: {m}", None, None, None),
    ("gpu017 login: [  123.456789] {m}", "123.456789", 123.456789, None),                  # a serial console
    ("[  123.456789]  EMERG: {m}", "123.456789", 123.456789, None),                       # a level word
    ("10.1.2.3: kern: warning: [2026-01-11T09:52:01.288830314Z]: {m}", "2026-01-11T09:52:01.288830314Z", None,
     "10.1.2.3"),                                                                           # pdsh over dmesg -x
    ("  Warning  KernelOops  4m55s (x7 over 35m)  kernel-monitor, gpu017  {m}", None, None, None),   # kubectl events
    ('{{"short_message":"{m}","host":"gpu017"}}', None, None, "gpu017"),                 # GELF
    ('{{"message":"{m}","host":{{"name":"gpu017"}},"@timestamp":"2026-01-11T09:52:01Z"}}',  # Elastic's ECS
     "2026-01-11T09:52:01Z", None, "gpu017"),
]


@pytest.mark.parametrize("fmt, stamp, mono, host", ENVELOPES, ids=lambda v: str(v)[:40])
def test_every_envelope_gives_the_message(fmt: str, stamp: str | None, mono: float | None, host: str | None) -> None:
    line = normalise(fmt.format(m=XID))
    assert (line.message, line.stamp, line.host) == (XID, stamp, host)
    assert line.mono == pytest.approx(mono) if mono is not None else line.mono is None
    found = diagnose(fmt.format(m=XID).encode())
    assert [(f.kind, f.xid, f.trust, f.message) for f in found] == [("xid", 79, "kernel", XID)]


@pytest.mark.parametrize("line", [
    "Jan 11 09:52:01 gpu017 " + XID,                     # logger -t NVRM: a program's tag, not kernel:
    "2026-01-11T09:52:01+00:00 gpu017 " + XID,
    "Jan 11 09:52:01 gpu017 python3[4242]: " + XID,      # a program's syslog line
    '{"_TRANSPORT":"syslog","SYSLOG_IDENTIFIER":"kernel","MESSAGE":"' + XID + '","_PID":"77"}',  # logger -t kernel
    '{"_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"NVRM","MESSAGE":"' + XID + '"}',
])
def test_a_forged_kernel_line_is_never_a_kernel_finding(line: str) -> None:
    """What logger(1) or a job can write into the system log is never read as the kernel's own message."""
    assert [f for f in diagnose(line.encode()) if f.trust == "kernel" or is_node_fault(f, None)] == []


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("fmt", TASK_FIRST_FORMATS)
@pytest.mark.parametrize("envelope", ["Jan 11 09:52:01 gpu017 kernel: {}", "[Sun Jan 11 09:52:01 2026] {}",
                                      "2026-01-11T09:52:01Z stderr F {}", "gpu017: [ 1.0] {}", "{}",
                                      '{{"_TRANSPORT":"kernel","MESSAGE":"{}"}}'])
def test_a_process_name_never_makes_a_kernel_finding_in_any_envelope(envelope: str, fmt: str, name: str) -> None:
    line = envelope.format(fmt.format(name=name[:15]).replace('"', "'"))
    # the line's own finding (an OOM kill, a page allocation failure: oom, never a node action) is allowed
    own = {"oom"} if "invoked oom-killer" in fmt or "page allocation failure" in fmt else set()
    findings = diagnose(line.encode())
    assert {f.kind for f in findings if f.trust == "kernel"} <= own
    assert not [f for f in findings if is_node_fault(f, None)]


def test_journald_export_records_are_decoded(tmp_path: Path) -> None:
    binary = XID.encode() + b"\x00"
    export = (b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1768125121000000\n__MONOTONIC_TIMESTAMP=123456789\n"
              b"_TRANSPORT=kernel\n_HOSTNAME=gpu017\nMESSAGE=" + XID.encode() + b"\n\n"
              b"__CURSOR=s=2\n_TRANSPORT=kernel\nMESSAGE\n" + len(binary).to_bytes(8, "little") + binary + b"\n\n"
              b"__CURSOR=s=3\n_TRANSPORT=syslog\nSYSLOG_IDENTIFIER=kernel\nMESSAGE=" + XID.encode() + b"\n")
    found = diagnose(export)
    assert [(f.kind, f.xid, f.line, f.count) for f in found if f.trust == "kernel"] == [("xid", 79, 1, 2)]
    assert [f.line for f in found if f.trust != "kernel"] == [3] and not [f for f in found if f.line == 3 and
                                                                          is_node_fault(f, None)]


def test_envelope_parsing_is_bounded() -> None:
    """A line of a thousand stamps, or a deep JSON, costs a bounded parse and never raises."""
    line = normalise("[ 1.0] " * 10_000 + XID)
    assert len(line.message) <= MAX_LINE
    deep = normalise("{" * 100_000)
    assert deep.message.startswith("{")
    nested = normalise(json.dumps({"log": json.dumps({"log": json.dumps({"MESSAGE": XID})})}))
    assert XID not in nested.message or nested.message != XID   # one level of shipping is decoded, not more


# ------------------------------------------------------------------ subsystems
@pytest.mark.parametrize("message, name", [
    ("NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.", "nvidia-driver"),
    ("nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress", "nvidia-driver"),
    ("nvidia 0000:3b:00.0: enabling device (0000 -> 0003)", "nvidia-driver"),
    ("nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 12028, Non-fatal", "nvidia-nvswitch"),
    ("nvidia-fabricmanager[2211]: NVSwitch fatal error detected", "nvidia-fabricmanager"),
    ("mlx5_core 0000:17:00.0: mlx5_cmd_check:810: ENABLE_HCA(0x104) op_mod(0x0) failed", "rdma"),
    ("ib_srp: failed to connect", "rdma"),
    ("pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received", "pcie"),
    ("pciehp 0000:80:02.0:pcie004: Slot(2): Link Down", "pcie"),
    ("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0", "machine-check"),
    ("{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0", "machine-check"),
    ("mce: [Hardware Error]: Machine check events logged", "machine-check"),
    ("nvme nvme0: I/O 123 QID 4 timeout, aborting", "local-storage"),
    ("blk_update_request: I/O error, dev nvme0n1, sector 2048 op 0x0:(READ)", "local-storage"),
    ("EXT4-fs error (device nvme0n1p1): ext4_find_entry:1463: inode #2: comm ls: reading directory", "local-storage"),
    ("XFS (md0): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x2", "local-storage"),
    ("Buffer I/O error on dev sda1, logical block 0, async page read", "local-storage"),
    ("LustreError: 11-0: scratch-OST0003-osc: operation ost_connect failed", "shared-filesystem"),
    ("nfs: server fs01 not responding, still trying", "shared-filesystem"),
    ("CPU12: Core temperature above threshold, cpu clock throttled", "thermal"),
    ("xhci_hcd 0000:00:14.0: HC died; cleaning up", "usb"),
    ("NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 3 timed out", "net"),
    ("systemd[1]: Started Session 3 of user root.", None),
    ("Out of memory: Killed process 4242 (python3)", None),
    ("mlx5_core[4242]: segfault at 0 ip 00007f sp 00007ffc error 4", None),     # a task named mlx5_core
    ("EDAC x: 1 UE : potentially unexpected fatal signal 11.", None),           # a task named `EDAC x: 1 UE `
    ("NVRM: Xid (P (4242): drop_caches: 3", None),
    ("nv-fabricmanag[4242]: segfault at 0 ip 0 sp 0 error 4", None),             # 15 bytes: a task, not the daemon
])
def test_subsystem_of(message: str, name: str | None) -> None:
    sub = subsystem_of(message)
    assert (sub.name if sub else None) == name
    if sub is not None:   # the prefilter passes the line: it holds one of its subsystem's literals
        assert any(lit in message for lit in sub.literals), message
        if sub.kind is not None:
            assert any(lit in message for lit in subsystems.TAG_LITERALS), message


# ------------------------------------------------------------------ the prefilter and its engines
def _mixed_log() -> bytes:
    corpus = [row.split("\t", 2)[2] for row in (DATA / "corpus.tsv").read_text().splitlines()
              if row.strip() and not row.startswith("#") and "Linux version" not in row]
    extra = ["nvme nvme0: I/O 9 QID 2 timeout, aborting",           # a tag and a failure word, no rule's literal
             "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode",   # a tag, no failure word
             "something failed without a subsystem",                 # a failure word, no tag
             "systemd[1]: Started Session 3 of user root."]
    lines = [f"[{i:6d}.000000] {m}" for i, m in enumerate((corpus + extra) * 3)]
    return ("\n".join(lines) + "\n" + "[999999.000000] " + XID).encode()   # the last line has no newline


@pytest.mark.parametrize("engine", ["hyperscan", "grep", "python", "no-hyperscan-module"])
def test_every_prefilter_engine_passes_the_same_lines(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _mixed_log()
    rows = data.split(b"\n")
    pf = prefilter.Prefilter(rules.ruleset().keywords)
    expected = [(i + 1, row) for i, row in enumerate(rows) if pf.wanted(row)]
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0 if engine != "python" else None)
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", 0 if engine == "grep" else 1 << 40)
    if engine == "grep":
        monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", None)
    if engine == "no-hyperscan-module":          # a machine without the wheel (ARM): the Python path
        monkeypatch.setitem(sys.modules, "hyperscan", None)
    got = [(number, data[start:stop]) for number, start, stop in pf.spans(data)]
    assert got == expected
    assert (pf._hs not in (None, False)) == (engine == "hyperscan")
    numbers = {n for n, _ in got}
    texts = [row.decode() for _, row in got]
    assert any("nvme nvme0: I/O 9 QID 2 timeout" in t for t in texts)
    assert not any("mounted filesystem" in t or "failed without a subsystem" in t or "Started Session" in t
                   for t in texts)
    assert len(rows) in numbers                                           # the last line, without its newline


def test_the_findings_are_the_same_with_and_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _mixed_log()
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0)
    rules._SETS.clear()
    fast = [(f.kind, f.xid, f.line, f.count, f.severity) for f in diagnose(data)]
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    rules._SETS.clear()
    slow = [(f.kind, f.xid, f.line, f.count, f.severity) for f in diagnose(data)]
    rules._SETS.clear()
    assert fast == slow and len(fast) > 30


def test_only_a_tag_with_a_failure_word_or_a_literal_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    real = kernel._plan

    def spy(key: bytes | str, *a: object) -> object:
        seen.append(key)
        return real(key, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(kernel, "_plan", spy)
    diagnose(b"[1.0] nvme nvme0: I/O 9 QID 2 timeout, aborting\n"
             b"[2.0] EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode\n"
             b"[3.0] something failed without a subsystem\n")
    assert seen == [b"nvme nvme0: I/O 9 QID 2 timeout, aborting"]


@pytest.mark.parametrize("size", [1 << 10, prefilter.GREP_MIN_BYTES])
def test_a_tag_is_looked_for_only_as_far_as_a_line_is_read(size: int) -> None:
    """A failure word with a subsystem's tag makes a candidate; a tag further into the line than any line is read
    (prefilter.TAG_SPAN, lines.MAX_JSON) does not, so a long line of failure words costs a bounded tag search. The
    same in the Python engine (short buffers) and the grep engine (from GREP_MIN_BYTES)."""
    filler = b"lost 0 0 " * (size // 9)
    near = b"nvme0: failed " + filler + b"\n"
    far = b"lost " + b"0" * prefilter.TAG_SPAN + b" nvme0: failed " + filler + b"\n"
    pf = rules.ruleset().prefilter
    assert prefilter.tagged(near, 0, len(near)) and not prefilter.tagged(far, 0, len(far))
    assert pf.candidates(near)[0] == [len(near) - 1]
    assert pf.candidates(far)[0] == []


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4),
                     max_leaves=12)


@settings(max_examples=100, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(["MESSAGE", "message", "log", "line", "_TRANSPORT", "SYSLOG_IDENTIFIER",
                                               "_PID", "_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP",
                                               "__REALTIME_TIMESTAMP", "host", "hostname", "kubernetes", "time"]),
                              _JSON | st.integers(min_value=-10**400, max_value=10**400) | st.just("9" * 5000)))
def test_any_json_line_parses_or_falls_back_without_raising(fields: dict[str, object]) -> None:
    raw = json.dumps(fields)
    line = normalise(raw)
    assert isinstance(line.message, str) and len(line.message) <= MAX_LINE
    assert line.mono is None or 0 <= line.mono < 1e14
    diagnose(raw.encode() + b"\n")
    diagnose(export_lines(fields))      # journald's export format


def export_lines(fields: dict[str, object]) -> bytes:
    return b"__CURSOR=x\n" + b"".join(f"{k}={v}\n".encode() for k, v in fields.items() if isinstance(v, str))


def _cache_kit(monkeypatch: pytest.MonkeyPatch, where: Path) -> tuple[object, list[int]]:
    """Hyperscan (skipped where the wheel is missing: the cache is Hyperscan's), the cache in WHERE, and a count of
    compilations."""
    hs = pytest.importorskip("hyperscan")
    monkeypatch.setenv(prefilter.CACHE_ENV, str(where))
    compiled: list[int] = []

    def database(*args: object, **kwargs: object) -> object:    # the prefilter makes a Database only to compile it
        compiled.append(1)
        return hs.Database(*args, **kwargs)

    monkeypatch.setitem(sys.modules, "hyperscan", types.SimpleNamespace(**{**vars(hs), "Database": database}))
    return hs, compiled


KEYS = (b"NVRM: Xid", b"Link down", b"blocked for more than")
LOG = b"[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n[ 2.0] systemd[1]: ok\n" \
      b"[ 3.0] nvme nvme0: I/O 9 QID 2 timeout, aborting\n"


def _lines(pf: prefilter.Prefilter) -> list[int]:
    return [number for number, _, _ in pf.spans(LOG)]


def test_a_compiled_prefilter_is_kept_and_the_next_process_loads_it(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0)
    _, compiled = _cache_kit(monkeypatch, tmp_path / "cache")
    first = prefilter.Prefilter(KEYS)
    assert _lines(first) == [1, 3] and compiled == [1]
    (kept,) = (tmp_path / "cache").glob("prefilter-*.hsdb")
    assert kept.stat().st_mode & 0o777 == 0o600 and (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
    again = prefilter.Prefilter(KEYS)                 # a new process's prefilter for the same rules: no compilation
    assert _lines(again) == [1, 3] and again._hs not in (None, False) and compiled == [1]
    other = prefilter.Prefilter(KEYS[:1])             # other rules: their own database
    assert _lines(other) == [1, 3] and compiled == [1, 1]
    assert len(list((tmp_path / "cache").glob("prefilter-*.hsdb"))) == 2


@pytest.mark.parametrize("harm", ["a byte changed", "cut short", "writable by others", "a link", "not our own dir"])
def test_a_cached_database_that_is_damaged_or_not_private_is_compiled_again(harm: str, monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0)
    cache = tmp_path / "cache"
    _, compiled = _cache_kit(monkeypatch, cache)
    prefilter.Prefilter(KEYS)._database()
    (kept,) = cache.glob("prefilter-*.hsdb")
    blob = kept.read_bytes()
    if harm == "a byte changed":
        kept.write_bytes(blob[:-100] + bytes([blob[-100] ^ 1]) + blob[-99:])
    elif harm == "cut short":
        kept.write_bytes(blob[: len(blob) // 2])
    elif harm == "writable by others":
        kept.chmod(0o666)
    elif harm == "a link":
        elsewhere = tmp_path / "elsewhere.hsdb"
        kept.rename(elsewhere)
        kept.symlink_to(elsewhere)
    else:
        cache.chmod(0o777)
    pf = prefilter.Prefilter(KEYS)
    assert _lines(pf) == [1, 3] and compiled == [1, 1]     # compiled again, same lines


def test_a_cache_that_cannot_be_written_is_no_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0)
    (tmp_path / "a-file").write_text("")
    _, compiled = _cache_kit(monkeypatch, tmp_path / "a-file" / "cache")      # no directory can be made there
    assert _lines(prefilter.Prefilter(KEYS)) == [1, 3] and _lines(prefilter.Prefilter(KEYS)) == [1, 3]
    assert compiled == [1, 1] and not list(tmp_path.rglob("*.hsdb"))


def test_the_cache_defaults_to_roots_run_dir_or_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from slurmtools import config

    monkeypatch.delenv(prefilter.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/home/u/.cache")
    monkeypatch.setattr(prefilter.os, "geteuid", lambda: 1000)
    assert prefilter.cache_dir() == "/home/u/.cache/slurmtools"
    monkeypatch.setattr(prefilter.os, "geteuid", lambda: 0)
    assert prefilter.cache_dir() == config.CACHE_DIR
