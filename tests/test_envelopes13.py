"""Round 13's envelopes: log formats real sites use, each built from its own documentation or source (named above its
row, as in bench/envelope_matrix.py). The message behind the envelope is read as it would be bare, with the host and
stamp the envelope gives; a program's record never becomes the kernel's; the formats that cannot be claimed safely are
left to the scan's later starts (trust syslog, never a drain)."""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, diagnose_job_output
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.lines import MAX_LINE, normalise
from tests.test_security import HOSTILE, TASK_FIRST_FORMATS

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus."
OOM = "Out of memory: Killed process 1234 (python) total-vm:1kB"
BENIGN = "mlx5_core 0000:17:00.0: firmware version: 28.39.1002"
CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
SEVERE = {"warning", "error", "critical"}
ESC = "\x1b"
SYSLOG = "Jan 11 09:52:01 gpu017 kernel: "

# (envelope with {m} for the message, for JSON the message's text as a JSON string holds it), host, stamp: the kernel's
# own message in each
KERNEL = [
    # journalctl(1) -o short-full (and -o with-unit, the same for a kernel record: it has no unit)
    ("Sun 2026-01-11 09:52:01 UTC gpu017 kernel: {m}", "gpu017", "Sun 2026-01-11 09:52:01 UTC"),
    # journalctl -o short-delta (logs-show.c: `[%5llu.%06llu <%5llu.%06llu>]`)
    ("[ 1234.567890 <    0.000023>] gpu017 kernel: {m}", "gpu017", "1234.567890"),
    # journalctl -o verbose (fields indented) and -o json-pretty (`\t"MESSAGE" : "...",`)
    ("    MESSAGE={m}", None, None),
    ('\t"MESSAGE" : "{m}",', None, None),
    # busybox syslogd (syslogd.c: `%s %.64s %s %s`: stamp, host, facility.priority, message)
    ("Jan 11 09:52:01 gpu017 kern.err kernel: {m}", "gpu017", "Jan 11 09:52:01"),
    # rsyslog RSYSLOG_ForwardFormat (`<%PRI%>%TIMESTAMP:::date-rfc3339% %HOSTNAME% %syslogtag:1:32%...`)
    ("<3>2026-01-11T09:52:01.123456+00:00 gpu017 kernel: {m}", "gpu017", "2026-01-11T09:52:01.123456+00:00"),
    # util-linux dmesg -r, --time-format delta, --json (one field a line) and its records as jq -c prints them
    ("<3>[ 1234.567890] {m}", None, "1234.567890"),
    ("[<    0.000023>] {m}", None, None),
    ('         "msg": "{m}"', None, None),
    ('{{"pri":3,"time":1234.567890,"msg":"{m}"}}', None, "1234.56789"),
    # Google Cloud Logging's LogEntry: textPayload; jsonPayload (the Ops Agent's file receiver); gcloud's JSON lines
    ('{{"insertId":"1a","resource":{{"type":"gce_instance"}},"textPayload":"' + SYSLOG + '{m}",'
     '"timestamp":"2026-01-11T09:52:01.123Z"}}', "gpu017", "Jan 11 09:52:01"),
    ('{{"insertId":"1a","jsonPayload":{{"message":"{m}","hostname":"gpu017"}},"timestamp":"2026-01-11T09:52:01.1Z"}}',
     "gpu017", "2026-01-11T09:52:01.1Z"),
    ('    "textPayload": "' + SYSLOG + '{m}",', "gpu017", "Jan 11 09:52:01"),
    # CloudWatch Logs' GetLogEvents as the AWS CLI prints it
    ('            "message": "' + SYSLOG + '{m}",', "gpu017", "Jan 11 09:52:01"),
    # Azure Monitor's Syslog table (a workspace data export: JSON lines)
    ('{{"TimeGenerated":"2026-01-11T09:52:01.123Z","Computer":"gpu017","Facility":"kern","ProcessName":"kernel",'
     '"SyslogMessage":"{m}"}}', "gpu017", "2026-01-11T09:52:01.123Z"),
    # Splunk's JSON export (`{"preview":false,"result":{...}}` a line)
    ('{{"preview":false,"result":{{"_raw":"' + SYSLOG + '{m}","host":"gpu017"}}}}', "gpu017", "Jan 11 09:52:01"),
    # Graylog's GELF 1.1
    ('{{"version":"1.1","host":"gpu017","short_message":"{m}","timestamp":1704966721.123,"level":3}}', "gpu017",
     "1704966721.123"),
    # Vector's file, journald and syslog sources as its sinks write them
    ('{{"file":"/var/log/kern.log","host":"gpu017","message":"' + SYSLOG + '{m}","source_type":"file"}}', "gpu017",
     "Jan 11 09:52:01"),
    ('{{"_TRANSPORT":"kernel","host":"gpu017","message":"{m}","source_type":"journald"}}', "gpu017", None),
    ('{{"appname":"kernel","hostname":"gpu017","message":"{m}","timestamp":"2026-01-11T09:52:01Z"}}', "gpu017",
     "2026-01-11T09:52:01Z"),
    # Fluent Bit's syslog-rfc3164 parser (pri, time, host, ident, pid, message)
    ('{{"pri":"3","time":"Jan 11 09:52:01","host":"gpu017","ident":"kernel","message":"{m}"}}', "gpu017",
     "Jan 11 09:52:01"),
    # Datadog's log search API v2 (`{"attributes":{...},"id":..,"type":"log"}`)
    ('{{"attributes":{{"host":"gpu017","message":"' + SYSLOG + '{m}","service":"syslog"}},"type":"log"}}', "gpu017",
     "Jan 11 09:52:01"),
    # Elastic Common Schema: event.original (the raw line, read before a parsed message), process.name
    ('{{"event":{{"original":"' + SYSLOG + '{m}"}},"message":"{m}"}}', "gpu017", "Jan 11 09:52:01"),
    ('{{"event.original":"' + SYSLOG + '{m}"}}', "gpu017", "Jan 11 09:52:01"),
    ('{{"@timestamp":"2026-01-11T09:52:01Z","message":"{m}","process":{{"name":"kernel"}}}}', None,
     "2026-01-11T09:52:01Z"),
    # a serial-over-LAN capture (ipmitool sol activate, conserver): ECMA-48 cursor moves, colours, carriage returns
    (ESC + "[0m" + ESC + "[24;1H" + ESC + "[?25l[ 1234.567890] {m}\r", None, "1234.567890"),
    (ESC + "(B" + ESC + "[2J" + ESC + "=[ 1234.567890] {m}", None, "1234.567890"),
    # colours as `cat -v` or `less` without -R show them, and cat -v's carriage return
    ("^[[0;32m[ 1234.567890]^[[0m {m}^M", None, "1234.567890"),
    # ccze -A (raw ANSI colours)
    (ESC + "[0;37mJan 11 09:52:01" + ESC + "[0m " + ESC + "[1;36mgpu017" + ESC + "[0m " + ESC + "[0;31mkernel:"
     + ESC + "[0m {m}", "gpu017", "Jan 11 09:52:01"),
    # ClusterShell's clush -bL (a folded node set), Ansible's oneline callback, salt's indented output
    ("gpu[017-018,020]: [ 1234.567890] {m}", "gpu[017-018,020]", "1234.567890"),
    ("gpu017 | CHANGED | rc=0 | (stdout) [ 1234.567890] {m}", "gpu017", "1234.567890"),
    ("gpu017 | FAILED | rc=1 | (stdout) " + SYSLOG + "{m}", "gpu017", "Jan 11 09:52:01"),
    ("    [ 1234.567890] {m}", None, "1234.567890"),
]


@pytest.mark.parametrize("fmt, host, stamp", KERNEL, ids=lambda v: repr(v)[:48])
def test_a_kernel_message_is_read_as_bare(fmt: str, host: str | None, stamp: str | None) -> None:
    for message in (XID, OOM, BENIGN):
        raw = fmt.format(m=message)
        line = normalise(raw)
        assert (line.message, line.host) == (message, host), raw
        if stamp is not None:
            assert line.stamp == stamp or (line.mono is not None and abs(line.mono - float(stamp)) < 1e-6), line
        bare = [(f.kind, f.severity, f.trust) for f in diagnose(message.encode())]
        assert [(f.kind, f.severity, f.trust) for f in diagnose(raw.encode())] == bare, raw
    assert not [f for f in diagnose(fmt.format(m=BENIGN).encode()) if f.severity in SEVERE]


# the job's own output (kubectl logs --timestamps, podman logs --timestamps, docker compose, stern, slurmd.log's
# slurmstepd lines): the message, and trust job
JOB = [
    ("2026-01-11T09:52:01.123456789Z {m}", CUDA),
    ("2026-01-11T09:52:01.123456789+00:00 {m}", CUDA),
    ("train-1  | {m}", "train-1  | " + CUDA),                     # compose: a job's line behind a service is the job's
    ("[2026-01-11T09:52:01.123] [1234.batch] {m}", CUDA),
    ("[2026-01-11T09:52:01.123] [1234_7.0] {m}", CUDA),
    ("[2026-01-11T09:52:01.123] [1234+1.extern] {m}", CUDA),
]


@pytest.mark.parametrize("fmt, message", JOB)
def test_job_output_envelopes(fmt: str, message: str) -> None:
    raw = fmt.format(m=CUDA)
    assert normalise(raw).message == message
    found = diagnose_job_output([raw])
    assert [(f.kind, f.trust) for f in found] == [("cuda", "job")]
    assert {f.trust for f in diagnose_job_output([fmt.format(m=XID)])} <= {"job"}
    # stern's default template (pod, container, message) is two bare words: not parsed, the message is still found
    assert [(f.kind, f.trust) for f in diagnose_job_output([f"train-0 worker {CUDA}"])] == [("cuda", "job")]


# a program's record (its tag apart from its message) or a user's syslog line: never the kernel's
PROGRAM = [
    '{{"pri":"3","host":"gpu017","ident":"python3","pid":"4242","message":"{m}"}}',           # Fluent Bit
    '{{"appname":"python3","procid":"4242","hostname":"gpu017","message":"{m}"}}',            # Vector syslog
    '{{"ProcessName":"python3","ProcessID":4242,"Computer":"gpu017","SyslogMessage":"{m}"}}',  # Azure Syslog
    '{{"programname":"python3","message":"{m}"}}',                                            # rsyslog's property
    '{{"message":"{m}","process":{{"name":"python3","pid":4242}}}}',                          # ECS
    '{{"message":"{m}","log":{{"syslog":{{"appname":"python3"}}}}}}',                         # ECS log.syslog
    # ECS: the raw line keeps the program's tag that the parsed message lost
    '{{"event":{{"original":"Jan 11 09:52:01 gpu017 python3[4242]: {m}"}},"message":"{m}"}}',
    # the Ops Agent's journald receiver: the record in jsonPayload, a logger(1) line's transport
    '{{"jsonPayload":{{"_TRANSPORT":"syslog","SYSLOG_IDENTIFIER":"python3","MESSAGE":"{m}"}}}}',
    # a tagged line behind the new line-start envelopes
    "gpu[017-018]: Jan 11 09:52:01 gpu017 python3[4242]: {m}",
    "gpu017 | CHANGED | rc=0 | (stdout) Jan 11 09:52:01 gpu017 python3[4242]: {m}",
    "^[[0;32mJan 11 09:52:01 gpu017^[[0m python3[4242]: {m}",
]


@pytest.mark.parametrize("fmt", PROGRAM)
def test_a_programs_record_never_becomes_the_kernels(fmt: str) -> None:
    for message in (XID, OOM):
        raw = fmt.format(m=message)
        assert normalise(raw).message.startswith("python3[4242]: " if "4242" in fmt else "python3["), raw
        findings = diagnose(raw.encode())
        assert not [f for f in findings if f.trust == "kernel" or is_node_fault(f, None)], (raw, findings)


# formats known but not claimed: a name between two stamps is what a syslog line looks like whose tag a user chose
# (`logger -t Jan`); rsyslog's DebugFormat prints the tag on another line; Azure's portal export is a CSV row
UNKNOWN = [
    "2026-01-11T09:52:01.123000+00:00 i-0123456789abcdef0 Jan 11 09:52:01 gpu017 kernel: {m}",   # aws logs tail
    "2026-01-11T09:52:01.123456-06:00 c0-0c0s1n2 [ 1234.567890] {m}",                            # HPE Cray console
    "msg: '{m}'",                                                                                 # RSYSLOG_DebugFormat
    '"1/11/2026, 9:52:01.123 AM",gpu017,kern,err,kernel,"{m}"',                                   # Azure portal CSV
    # the hostile form the first two could not be told from: a user's syslog line with the tag `Jan`
    "2026-01-11T09:52:01.123+00:00 gpu017 Jan 11 09:52:01 x kernel: {m}",
]


@pytest.mark.parametrize("fmt", UNKNOWN)
def test_an_unclaimed_format_is_found_by_later_starts_and_never_drains(fmt: str) -> None:
    for message, kind in ((XID, "xid"), (OOM, "oom")):
        raw = fmt.format(m=message)
        assert normalise(raw).message != message
        found = diagnose(raw.encode())
        assert found and found[0].kind == kind and found[0].trust == "syslog", raw
        assert not any(is_node_fault(f, None) for f in found)
    assert not [f for f in diagnose(fmt.format(m=BENIGN).encode()) if f.severity in SEVERE]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("fmt", TASK_FIRST_FORMATS)
@pytest.mark.parametrize("envelope", ["gpu[1-2]: [ 1.0] {}", "n1 | SUCCESS | rc=0 | (stdout) [ 1.0] {}",
                                      "^[[1m[ 1.0]^[[0m {}", ESC + "[24;1H[ 1.0] {}",
                                      '{{"ident":"kernel","message":"{}"}}', "[2026-01-11T09:52:01.1] [1.0] {}"])
def test_a_process_name_never_makes_a_kernel_finding_in_round13_envelopes(envelope: str, fmt: str, name: str) -> None:
    for spelled in (name[:15], "^[[m" + name[:11], ESC + "[H" + name[:12]):
        line = envelope.format(fmt.format(name=spelled).replace('"', "'").replace("\\", "/"))
        own = {"oom"} if "invoked oom-killer" in fmt or "page allocation failure" in fmt else set()
        findings = diagnose(line.encode())
        assert {f.kind for f in findings if f.trust == "kernel"} <= own, line
        assert not [f for f in findings if is_node_fault(f, None)]


@pytest.mark.parametrize("line", [
    # a syslog tag's PID is one number, never a node set: the tag stays in the message (trust syslog)
    "rpc.idmapd[700]: nfsdcb: id '4294967296' too big!",
    '        "MESSAGE" : "python3[4242]: ' + XID + '",',
    "python3[4242]: " + XID,
    # a task named like a node set before a kernel tag is still a task's line
    "x[1-2]: NVRM: X[4242]: segfault at 0 ip 00007f7487974219 sp 00007ffcc3f9d3d8 error 4 in libc.so.6[7f0+1000]",
    "x[1-2]: mlx5_c invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
])
def test_a_tag_or_task_is_no_node_set(line: str) -> None:
    findings = diagnose(line.encode())
    assert {f.kind for f in findings if f.trust == "kernel"} <= ({"oom"} if "oom-killer" in line else set()), line
    assert not [f for f in findings if is_node_fault(f, None)]


def test_round13_envelopes_are_bounded() -> None:
    """Hostile sizes cost a bounded parse and a message no longer than MAX_LINE."""
    for raw in ("^[[1m" * 200_000 + XID,
                ESC + "[24;1H" * 200_000 + XID,
                "gpu" + "[1-2]" * 100_000 + ": " + XID,
                "n1 | CHANGED | rc=0 | (stdout) " * 20_000 + XID,
                "[2026-01-11T09:52:01.1] " + "[1.batch] " * 50_000 + XID,
                '{"result":{"result":' * 10_000 + '"x"' + "}" * 20_000):
        assert len(normalise(raw).message) <= MAX_LINE
