"""Round 20's shipper fields: OpenTelemetry's `body`, Splunk HEC's `event`, Azure Monitor's container tables, CloudWatch
Logs Insights' `@message`, Rust tracing's `fields`, and a structured logger's cause (`error`/`err`, JSON or logfmt)
read after its message. Each is built from the format's own documentation; the message is read as it would be bare."""

from __future__ import annotations

import json

import pytest

from slurmtools.diagnosis import diagnose, diagnose_job_output
from slurmtools.diagnosis.lines import MAX_LINE, normalise

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus."
OOM = "Out of memory: Killed process 1234 (python) total-vm:1kB"
BENIGN = "mlx5_core 0000:17:00.0: firmware version: 28.39.1002"
SYSLOG = "Jan 11 09:52:01 gpu017 kernel: "
SEVERE = {"warning", "error", "critical"}


def _j(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


# (record builder, host, stamp): the kernel's line inside each
SHIPPED = [
    # OpenTelemetry's log data model: `body` a string (the collector's file exporter) or OTLP JSON's AnyValue
    (lambda m: _j({"timeUnixNano": "1736589121000000000", "body": SYSLOG + m}), "gpu017", "Jan 11 09:52:01"),
    (lambda m: _j({"observedTimeUnixNano": "1", "severityText": "ERROR", "body": {"stringValue": SYSLOG + m}}),
     "gpu017", "Jan 11 09:52:01"),
    # Splunk HTTP Event Collector: `event` a string, or an object (the event one level down)
    (lambda m: _j({"time": 1736589121.123, "host": "gpu017", "sourcetype": "syslog", "event": SYSLOG + m}), "gpu017",
     "Jan 11 09:52:01"),
    (lambda m: _j({"time": 1736589121.123, "host": "gpu017", "event": {"message": m, "ident": "kernel"}}), "gpu017",
     "1736589121.123"),
    # CloudWatch Logs Insights' results as JSON (`@timestamp`, `@message`)
    (lambda m: _j({"@timestamp": "2026-01-11 09:52:01.123", "@message": SYSLOG + m}), "gpu017", "Jan 11 09:52:01"),
]


@pytest.mark.parametrize("build, host, stamp", SHIPPED, ids=lambda v: repr(v)[:40])
def test_a_shipped_kernel_line_is_read_as_bare(build, host: str | None, stamp: str | None) -> None:
    for message in (XID, OOM, BENIGN):
        raw = build(message)
        line = normalise(raw)
        assert (line.message, line.host, line.stamp) == (message, host, stamp), raw
        bare = [(f.kind, f.severity) for f in diagnose(message.encode())]
        assert [(f.kind, f.severity) for f in diagnose(raw.encode())] == bare, raw
    assert not [f for f in diagnose(build(BENIGN).encode()) if f.severity in SEVERE]


CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"

# a container's or a program's own line: the job's text, found as the job's
JOB = [
    _j({"TimeGenerated": "2026-01-11T09:52:01Z", "Computer": "aks-gpu-1", "ContainerID": "ab12", "LogEntry": CUDA}),
    _j({"TimeGenerated": "2026-01-11T09:52:01Z", "PodName": "train-0", "LogSource": "stderr", "LogMessage": CUDA}),
    _j({"timestamp": "2026-01-11T09:52:01.1Z", "level": "ERROR", "fields": {"message": CUDA}, "target": "train"}),
]


@pytest.mark.parametrize("raw", JOB, ids=lambda v: v[:40])
def test_a_container_table_or_tracing_record_gives_its_message(raw: str) -> None:
    assert normalise(raw).message == CUDA
    assert [(f.kind, f.trust) for f in diagnose_job_output([raw])] == [("cuda", "job")]


def test_a_structured_logger_cause_is_read_after_its_message() -> None:
    zap = _j({"level": "error", "ts": 1.5, "msg": "failed to start container",
              "error": "nvidia-container-cli: initialization error: nvml error: driver not loaded"})
    assert normalise(zap).message == ("failed to start container: nvidia-container-cli: initialization error: "
                                      "nvml error: driver not loaded")
    logrus = ('time="2026-01-11T09:52:01Z" level=error msg="failed to start container" '
              'error="nvidia-container-cli: initialization error: nvml error: driver not loaded"')
    assert normalise(logrus).message == normalise(zap).message
    bare = 'time="2026-01-11T09:52:01Z" level=warning msg="retrying" err=timeout'
    assert normalise(bare).message == "retrying: timeout"
    # a cause the message already carries is not repeated; an empty one is not read
    same = _j({"msg": "open /dev/nvidia0: no such file", "error": "open /dev/nvidia0: no such file"})
    assert normalise(same).message == "open /dev/nvidia0: no such file"
    assert normalise(_j({"msg": "done", "error": ""})).message == "done"


def test_a_cause_never_makes_a_kernel_record_or_hides_the_message() -> None:
    # the cause is a program's text: it follows the message, so it can never become the envelope the message is read in
    hostile = _j({"msg": "x", "error": SYSLOG + XID})
    line = normalise(hostile)
    assert line.message.startswith("x: ") and line.host is None
    assert {f.trust for f in diagnose(hostile.encode())} <= {"job", "syslog"}
    logfmt = f'level=error msg="x" err="{SYSLOG}{XID}"'
    assert normalise(logfmt).message.startswith("x: ") and normalise(logfmt).host is None
    # a cause longer than a line is cut; the message keeps its start
    long = _j({"msg": OOM, "err": "e" * (4 * MAX_LINE)})
    assert normalise(long).message.startswith(OOM) and len(normalise(long).message) <= MAX_LINE


def test_a_one_word_event_is_a_record_type_not_its_text() -> None:
    # `{"event": "line", "data": ...}` (a benchmark runner's stream records): not a HEC event
    raw = _j({"event": "line", "data": CUDA + "\n", "pipe": "stderr"})
    assert [f.kind for f in diagnose_job_output([raw])] == ["cuda"]


def test_node_exporter_collector_failure_is_no_finding() -> None:
    raw = ('time=2025-03-03T19:11:05.508Z level=ERROR source=collector.go:168 msg="collector failed" name=infiniband '
           'duration_seconds=0.11 err="error obtaining InfiniBand class info: failed to read file '
           '\\"/sys/class/infiniband/mlx5_0/ports/1/counters/VL15_dropped\\": invalid argument"')
    assert diagnose(raw.encode()) == []
    older = b"ERROR: infiniband collector failed after 0.000063s: error obtaining InfiniBand class info: x"
    assert diagnose(older) == []


def test_a_meridiem_glued_to_the_message_ends_the_stamp() -> None:
    # a web console's stamp column copied with its row (Rancher's log view): "5/11/2016 9:46:04 PMmount.nfs: ..."
    line = normalise("5/11/2016 9:46:04 PMmount.nfs: rpc.statd is not running but is required for remote locking.")
    assert (line.message, line.stamp) == ("mount.nfs: rpc.statd is not running but is required for remote locking.",
                                          "5/11/2016 9:46:04 PM")
    # a message that begins with capitals is left as it is
    assert normalise("5/11/2016 9:46:04 PMU: x").message == "PMU: x"


def test_logrus_terminal_levels_are_an_envelope() -> None:
    # logrus's text formatter on a terminal: `ERRO[0006] ` (seconds since start) or the full stamp
    cli = "nvidia-container-cli: initialization error: nvml error: driver not loaded"
    assert normalise("ERRO[0006] " + cli).message == cli
    assert normalise("WARN[2024-01-02T10:00:00Z] " + OOM).message == OOM
    # a message's own bracket is not one: a level word must be one of logrus's four letters
    assert normalise("ERROR[0006] x").message == "ERROR[0006] x"
