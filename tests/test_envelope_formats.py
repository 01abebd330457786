"""Envelope elements built from the formats' own specifications (each source named above its line): the message
behind the envelope is read as it would be bare, a benign message stays benign, and no envelope changes trust."""

from __future__ import annotations

import json

import pytest

from slurmtools.diagnosis import diagnose, diagnose_job_output
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.lines import MAX_LINE, normalise
from tests.test_security import HOSTILE, TASK_FIRST_FORMATS

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus."
OOM = "Out of memory: Killed process 1234 (python) total-vm:1kB"
BENIGN = "mlx5_core 0000:17:00.0: firmware version: 28.39.1002"
SEVERE = {"warning", "error", "critical"}
ESC = "\x1b"

# (envelope with {m} for the message, host): the kernel's own message in each
KERNEL_ENVELOPES = [
    # RFC 5424 6.3: STRUCTURED-DATA is one or more SD-ELEMENTs; 6.4: a UTF-8 MSG starts with the BOM
    ('<4>1 2026-01-11T09:52:01Z gpu017 kernel - - [timeQuality tzKnown="1" isSynced="1"][origin ip="10.0.0.1"] {m}',
     "gpu017"),
    ("<4>1 2026-01-11T09:52:01.123456+01:00 gpu017 kernel - - - \ufeff{m}", "gpu017"),
    # dmesg --color=always (util-linux dmesg.c: the time, the subsystem prefix and the level in SGR colours)
    (f"{ESC}[32m[  123.456789]{ESC}[0m {{m}}", None),
    (f"{ESC}[0;32m[Jan11 09:52]{ESC}[0m {ESC}[33m{{m}}{ESC}[0m", None),
    # grep --color=always wraps each match in SGR and erase-line (`ESC[01;31mESC[K...ESC[mESC[K`)
    (f"/var/log/kern.log:Jan 11 09:52:01 gpu017 kernel: {ESC}[01;31m{ESC}[K{{m}}{ESC}[m{ESC}[K", "gpu017"),
    # a serial console capture: the terminal's carriage return before the kernel's line
    ("gpu017 login: \r[  123.456789] {m}", None),
    # Documentation/ABI/testing/dev-kmsg: `pri,seq,usec,flags[,more];message`, more fields such as caller=T1
    ("6,339,5140900,-,caller=T1;{m}", None),
    # journalctl -o json-pretty (systemd src/shared/logs-show.c: `"FIELD" : "value",`), dmesg --json's `"msg": "..."`
    ('        "MESSAGE" : "{m}",', None),
    ('         "msg": "{m}"', None),
    # journalctl -o json-sse (`data: ` and one JSON record)
    ('data: {{"_TRANSPORT":"kernel","MESSAGE":"{m}","_HOSTNAME":"gpu017"}}', "gpu017"),
    # an Elasticsearch/OpenSearch search hit: the shipped document is `_source`
    ('{{"_index":"logs","_id":"1","_source":{{"message":"{m}","host":{{"name":"gpu017"}}}}}}', "gpu017"),
    # Fluent Bit's stdout output plugin (msgpack printed as `[N] TAG: [STAMP, {{"key"=>"value", ...}}]`; v2's
    # `[[STAMP, {{metadata}}], {{...}}]`)
    ('[0] kern.log: [1704966721.123456789, {{"log"=>"Jan 11 09:52:01 gpu017 kernel: {m}", "file"=>"/var/log/x"}}]',
     "gpu017"),
    ('[3] tail.0: [[1704966721.123456789, {{}}], {{"log"=>"{m}"}}]', None),
    # ipmitool sel list: the record id is printed `%4x | ` (hexadecimal), a pre-init stamp `Pre-Init  |%010d|`
    ("  1a | 01/02/2024 | 10:11:12 | {m}", None),
    ("   1 | Pre-Init  |0000000012| {m}", None),
    # racadm getsel's `Description:` and racadm lclog view's `Message         = ` fields
    ("Description: {m}", None),
    ("Message         = {m}", None),
    # kube-eventer / kubectl describe's `Message:` with the event recorder's aggregation note
    ("Message:(combined from similar events): {m}", None),
    # a JSON record cut by a paste or longer than the decoded size (MAX_JSON): its message field so far
    ('{{"stream":"stderr","log":"{m}', None),
    ('{{"log":"Jan 11 09:52:01 gpu017 kernel: {m}\\n","stream":"stdout","time":"2026-01-11T09:5', "gpu017"),
    # FreeIPMI ipmi-sel's rows: `ID | Date | Time | Name | Type | Event`, the date as `Jan-11-2024`
    ("1   | Jan-11-2024 | 09:52:01 | {m}", None),
    # grep -n's line number before the stamp (`-` on a context line of grep -C), and grep -rn's file and number
    ("1234:Jan 11 09:52:01 gpu017 kernel: {m}", "gpu017"),
    ("1235-Jan 11 09:52:01 gpu017 kernel: {m}", "gpu017"),
    ("88:[ 1234.567890] {m}", None),
    ("/var/log/syslog.1:1234:Jan 11 09:52:01 gpu017 kernel: {m}", "gpu017"),
    # a host name redacted before a paste (`n4.c1.***`) is still a host
    ("Sep 13 13:13:42 n4.c1.*** kernel: {m}", "n4.c1.***"),
]


@pytest.mark.parametrize("fmt, host", KERNEL_ENVELOPES, ids=lambda v: str(v)[:40])
def test_kernel_message_read_as_bare(fmt: str, host: str | None) -> None:
    for message, kind in ((XID, "xid"), (OOM, "oom")):
        raw = fmt.format(m=message)
        line = normalise(raw)
        assert (line.message, line.host) == (message, host), raw
        bare = [(f.kind, f.severity, f.trust) for f in diagnose(message.encode())]
        assert [(f.kind, f.severity, f.trust) for f in diagnose(raw.encode())] == bare and bare[0][0] == kind


@pytest.mark.parametrize("fmt, host", KERNEL_ENVELOPES, ids=lambda v: str(v)[:40])
def test_a_benign_line_stays_benign_in_its_envelope(fmt: str, host: str | None) -> None:
    raw = fmt.format(m=BENIGN)
    assert normalise(raw).message == BENIGN
    assert not [f for f in diagnose(raw.encode()) if f.severity in SEVERE]


CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
# the job's own output: launchers' rank tags and Python loggers' headers
JOB_ENVELOPES = [
    "[0] {m}",                                           # MPICH/Intel MPI -prepend-rank, -l
    "[0]<stderr>: {m}",                                  # horovodrun (gloo)
    "[prterun-gpu017-12345@1,0]<stderr>: {m}",           # Open MPI 5 / PRRTE --output tag
    "(RayTrainWorker pid=1234, ip=10.0.0.1) {m}",        # Ray's worker log prefix
    "(pid=1234) {m}",
    "ERROR:root:{m}",                                    # logging.basicConfig's `%(levelname)s:%(name)s:%(message)s`
    "2024-01-11 09:52:01,123 - torch.distributed - ERROR - {m}",   # the logging cookbook's format
    "2024-01-11 09:52:01,123 - ERROR - {m}",
    "[2024-01-11 09:52:01,123] [ERROR] [engine.py:12:step] {m}",   # DeepSpeed's logger
    "ERROR 01-11 09:52:01 [worker.py:12] {m}",           # vLLM's `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]`
    # Ray's `%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s`
    "2024-01-11 09:52:01,123\tERROR worker.py:123 -- {m}",
]


@pytest.mark.parametrize("fmt", JOB_ENVELOPES)
def test_job_output_envelopes_give_the_message_and_stay_job(fmt: str) -> None:
    raw = fmt.format(m=CUDA)
    assert normalise(raw).message == CUDA
    found = diagnose_job_output([raw])
    assert [(f.kind, f.trust) for f in found] == [("cuda", "job")]
    assert not [f for f in found if is_node_fault(f, None)]
    # the same envelope around a kernel message in the job's output is still the job's text
    assert {f.trust for f in diagnose_job_output([fmt.format(m=XID)])} <= {"job"}


def test_a_kernel_warning_is_no_python_level_word() -> None:
    # the kernel's own `WARNING: CPU: 0 PID: 1 at ...` and `INFO: task ... blocked` have a blank after the colon
    for message in ("WARNING: CPU: 0 PID: 1 at drivers/pci/pci.c:12 pci_foo+0x1/0x2",
                    "INFO: task python3:1234 blocked for more than 120 seconds."):
        assert normalise(message).message == message


def test_a_tool_or_program_line_never_becomes_kernel() -> None:
    # a program's syslog tag stays in the message whatever the envelope around it
    for fmt in ('        "MESSAGE" : "{m}",', f"{ESC}[32mJan 11 09:52:01 gpu017{ESC}[0m {{m}}", "Description: {m}",
                "[0] {m}", "  1a | 01/02/2024 | 10:11:12 | {m}"):
        raw = fmt.format(m="python3[4242]: " + XID)
        assert not [f for f in diagnose(raw.encode()) if f.trust == "kernel" or is_node_fault(f, None)], raw


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("fmt", TASK_FIRST_FORMATS)
@pytest.mark.parametrize("envelope", ['        "MESSAGE" : "{}",', "[0] {}", f"{ESC}[32m[ 1.0]{ESC}[0m {{}}",
                                      '[0] t: [1.5, {{"log"=>"{}"}}]', "Message = {}", "6,1,2,-;{}"])
def test_a_process_name_never_makes_a_kernel_finding_in_new_envelopes(envelope: str, fmt: str, name: str) -> None:
    line = envelope.format(fmt.format(name=name[:15]).replace('"', "'").replace("\\", "/"))
    own = {"oom"} if "invoked oom-killer" in fmt or "page allocation failure" in fmt else set()
    findings = diagnose(line.encode())
    assert {f.kind for f in findings if f.trust == "kernel"} <= own
    assert not [f for f in findings if is_node_fault(f, None)]


def test_a_cut_journald_record_gives_nothing() -> None:
    """A journald record that does not decode (logger's message padded past MAX_JSON) is never read as the kernel's:
    which transport wrote it may be past the cut."""
    pad = "x" * (70 << 10)
    raw = '{"__CURSOR":"s=1","MESSAGE":"' + XID + pad + '","_TRANSPORT":"syslog","SYSLOG_IDENTIFIER":"NVRM"}'
    assert not [f for f in diagnose(raw.encode()) if f.trust == "kernel" or is_node_fault(f, None)]


@pytest.mark.parametrize("fmt", TASK_FIRST_FORMATS)
def test_a_name_with_colour_escapes_is_still_a_name(fmt: str) -> None:
    """Escapes are removed before parsing: a task named with SGR sequences around a tag is a shorter name, read
    by the same rules as any task's (the kernel's record, as journald stores it unescaped)."""
    for name in (f"{ESC}[mNVRM: Xid", f"{ESC}[0mmlx5_core", "\rEDAC MC0: 1 UE"):
        message = fmt.format(name=name[:15])
        raw = json.dumps({"_TRANSPORT": "kernel", "MESSAGE": message})
        own = {"oom"} if "invoked oom-killer" in fmt or "page allocation failure" in fmt else set()
        findings = diagnose(raw.encode())
        assert {f.kind for f in findings if f.trust == "kernel"} <= own, (message, findings)
        assert not [f for f in findings if is_node_fault(f, None)]


def test_new_envelopes_are_bounded() -> None:
    """Hostile sizes: a huge JSON field, a Fluent Bit record without its end, a line of escapes, cost a bounded
    parse and a message no longer than MAX_LINE."""
    for raw in ('"MESSAGE" : ' + json.dumps("x" * 1_000_000) + ",",
                '[0] t: [1.5, {"log"=>"' + "y" * 1_000_000,
                f"{ESC}[1m" * 200_000 + XID,
                "\r" * 100_000 + XID,
                "[0] " * 10_000 + XID):
        assert len(normalise(raw).message) <= MAX_LINE


@pytest.mark.parametrize("raw", [
    '{"log":"\\ud800 ' + XID + '","host":"\\udc00"}',          # a whole JSON record with lone surrogates
    '{"log":"\\ud800 ' + XID,                                  # a cut one
    '        "MESSAGE" : "\\ud800' + XID + '",',                # a pretty-printed field
])
def test_a_lone_surrogate_in_json_is_no_traceback(raw: str) -> None:
    """JSON's `\\ud800` decodes to a character no UTF-8 can hold: it is replaced, never raised on (RE2 and the ledger
    encode the message)."""
    line = normalise(raw)
    line.message.encode()
    (line.host or "").encode()
    for f in diagnose(raw.encode()):
        f.message.encode()


# envelopes the parser does not know: the scan tries the message's later starts (kernel._later_start)
UNKNOWN_ENVELOPES = [
    "2026-01-11 09:52:01.123,gpu017,kern,err,{m}",
    "11.01.2026 09:52:01 | gpu017 | kern.err | {m}",
    "[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;{m}",
    "gpu017 :: 2026/01/11 09:52:01.123 :: {m}",
    "gpu017 => {m}",
]


@pytest.mark.parametrize("fmt", UNKNOWN_ENVELOPES)
def test_an_unknown_envelope_still_finds_the_message_but_never_drains(fmt: str) -> None:
    for message, kind in ((XID, "xid"), (OOM, "oom")):
        raw = fmt.format(m=message)
        assert normalise(raw).message != message          # the parser does not know this envelope
        found = diagnose(raw.encode())
        assert found and found[0].kind == kind, raw
        bare = diagnose(message.encode())[0]
        assert (found[0].severity, found[0].action) == (bare.severity, bare.action)
        # who wrote the line is not known: recorded, marked, never a node fault
        assert found[0].trust == "syslog"
        assert kind == "xid" or found[0].details["envelope"] == "unread"   # (an XID anywhere: rule xid_text)
        assert not any(is_node_fault(f, None) for f in found)
    assert not [f for f in diagnose(fmt.format(m=BENIGN).encode()) if f.severity in SEVERE]


def test_a_known_envelope_keeps_the_kernels_trust() -> None:
    found = diagnose(f"Jan 11 09:52:01 gpu017 kernel: {XID}".encode())
    assert found[0].trust == "kernel" and "envelope" not in found[0].details


@pytest.mark.parametrize("name", ["a Out of memory: Killed process 1 (b) total-vm:1kB",
                                  "a pcieport 0000:00:00.0: AER: device recovery failed"])
def test_later_starts_stop_where_a_tasks_text_begins(name: str) -> None:
    # a kernel audit record in an unknown envelope: the process name after `audit:` is the task's, never read
    raw = f'gpu017 => audit: type=1326 audit(1.2:3): auid=1 uid=1 pid=9 comm="{name}" exe="/x" sig=31'
    assert not diagnose(raw.encode())


def test_later_starts_are_not_tried_on_a_line_no_kernel_record_can_be(monkeypatch: pytest.MonkeyPatch) -> None:
    # a kernel record is at most 1,024 bytes: a longer line (a compiler's command line in a bug report, a job's dump)
    # is scanned once, not once per later start (24 scans of 3 kB each cost 40-90 ms a line in sweep 3's logs)
    from slurmtools.diagnosis import kernel

    calls: list[int] = []
    real = kernel.match_line

    def counting(*args, **kwargs):   # type: ignore[no-untyped-def]
        calls.append(len(args[0].message))
        return real(*args, **kwargs)

    monkeypatch.setattr(kernel, "match_line", counting)
    flags = " ".join(f"-I/usr/src/nvidia-550/common/inc/dir{i}" for i in range(80))
    long_line = f"gpu017 => cc -Wall -O2 {flags} -c nvidia/nv.c -o nvidia/nv.o"
    assert len(long_line) > kernel.LATER_MAX
    assert not [f for f in diagnose(long_line.encode()) if f.severity in SEVERE]
    assert len(calls) == 1
    calls.clear()
    short = UNKNOWN_ENVELOPES[4].format(m=OOM)          # a short one still gets its later starts
    assert diagnose(short.encode())[0].kind == "oom" and len(calls) > 1
