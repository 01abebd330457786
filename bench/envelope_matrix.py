"""Every message the rules know, in every envelope: does a new stamp format or wrapper cost anything?

    python bench/envelope_matrix.py [--misses] [--markdown]

The messages are the rules half's found fault lines (bench/field_corpus.py's split; never the test half), each cut
out of its envelope by the parser (`normalise(...).message`) and diagnosed bare. Each is then wrapped in every
envelope below, built from the formats' own specifications (util-linux dmesg, syslog RFC 3164/5424, journalctl's
output modes, /dev/kmsg, grep/zgrep, uniq -c, pdsh/clush, srun --label, mpirun/torchrun tags, container runtimes,
log shippers; benign messages likewise) and diagnosed again: a message whose top finding (kind, severity) changes
in an envelope is a miss of the envelope parser, never of the rules. Kernel messages go in kernel envelopes, job
output in job envelopes (the trust the bare message was read with decides which). Prints per envelope how many of
the messages kept their verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.field_corpus import load
from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.lines import normalise

SEVERE = {"warning", "error", "critical"}


def _j(message: str) -> str:
    """MESSAGE as the inside of a JSON string."""
    return json.dumps(message, ensure_ascii=False)[1:-1]


Wrap = Callable[[str], str]

# kernel messages (trust kernel): the envelopes a kernel line reaches an operator in
KERNEL: dict[str, Wrap] = {
    "dmesg": lambda m: f"[ 1234.567890] {m}",
    "dmesg-wide": lambda m: f"[1234567.890123] {m}",
    "dmesg -T": lambda m: f"[Tue Jan 11 09:52:01 2026] {m}",
    "dmesg -H": lambda m: f"[Jan11 09:52] {m}",
    "dmesg -H delta": lambda m: f"[  +0.000844] {m}",
    "dmesg -x": lambda m: f"kern  :err   : [ 1234.567890] {m}",
    "dmesg --time-format iso": lambda m: f"2026-01-11T09:52:01,123456+00:00 {m}",
    "dmesg -t": lambda m: m,
    "syslog": lambda m: f"Jan 11 09:52:01 gpu017 kernel: {m}",
    "syslog, day padded": lambda m: f"Jan  1 09:52:01 gpu017 kernel: {m}",
    "syslog + kernel stamp": lambda m: f"Jan 11 09:52:01 gpu017 kernel: [ 1234.567890] {m}",
    "syslog <PRI>": lambda m: f"<3>Jan 11 09:52:01 gpu017 kernel: {m}",
    "syslog, FQDN": lambda m: f"Jan 11 09:52:01 gpu017.cluster.example.org kernel: {m}",
    "syslog-iso (rsyslog)": lambda m: f"2026-01-11T09:52:01.123456+00:00 gpu017 kernel: {m}",
    "syslog-iso Z": lambda m: f"2026-01-11T09:52:01Z gpu017 kernel: {m}",
    "syslog-l10n (fr)": lambda m: f"janv. 11 09:52:01 gpu017 kernel: {m}",
    "syslog-l10n (de)": lambda m: f"Mär 11 09:52:01 gpu017 kernel: {m}",
    "rfc5424": lambda m: f"<3>1 2026-01-11T09:52:01.123456+00:00 gpu017 kernel - - - {m}",
    "journal short-iso": lambda m: f"2026-01-11T09:52:01+0000 gpu017 kernel: {m}",
    "journal short-precise": lambda m: f"Jan 11 09:52:01.123456 gpu017 kernel: {m}",
    "journal short-monotonic": lambda m: f"[ 1234.567890] gpu017 kernel: {m}",
    "journal short-unix": lambda m: f"1704966721.123456 gpu017 kernel: {m}",
    "journal json": lambda m: f'{{"_TRANSPORT":"kernel","PRIORITY":"3","_HOSTNAME":"gpu017","MESSAGE":"{_j(m)}"}}',
    "journal export": lambda m: f"MESSAGE={m}",
    "kmsg": lambda m: f"3,1234,5678901234,-;{m}",
    "kmsg, caller": lambda m: f"3,1234,5678901234,-,caller=T123;{m}",
    "grep -H": lambda m: f"/var/log/kern.log:Jan 11 09:52:01 gpu017 kernel: {m}",
    "zgrep rotated": lambda m: f"/var/log/messages-20260111.gz:Jan 11 09:52:01 gpu017 kernel: {m}",
    "grep -n": lambda m: f"1234:Jan 11 09:52:01 gpu017 kernel: {m}",
    "uniq -c": lambda m: f"     12 {m}",
    "pdsh dmesg": lambda m: f"gpu017: [ 1234.567890] {m}",
    "pdsh syslog": lambda m: f"gpu017: Jan 11 09:52:01 gpu017 kernel: {m}",
    "grep -n context": lambda m: f"1235-Jan 11 09:52:01 gpu017 kernel: {m}",
    "grep -rn": lambda m: f"/var/log/syslog.1:1234:Jan 11 09:52:01 gpu017 kernel: {m}",
    "ssh -T": lambda m: f"gpu017 | [ 1234.567890] {m}",
    "loki json": lambda m: f'{{"line":"Jan 11 09:52:01 gpu017 kernel: {_j(m)}","labels":{{"job":"syslog"}}}}',
    "fluent-bit json": lambda m: f'{{"date":1704966721.1,"log":"{_j(m)}","host":"gpu017"}}',
    "elastic": lambda m: f'{{"@timestamp":"2026-01-11T09:52:01Z","message":"{_j(m)}","host":{{"name":"gpu017"}}}}',
    "serial console": lambda m: f"\r[ 1234.567890] {m}",
    # round 13: formats real sites use, each from its own documentation or source
    # journalctl(1) -o short-full (the stamp as --since= takes it; -o with-unit prints the same for a kernel record,
    # which has no unit), -o short-delta (logs-show.c: `[%5llu.%06llu <%5llu.%06llu>]`), -o verbose (each field
    # indented, `MESSAGE=`), -o json-pretty (`\t"MESSAGE" : "...",`)
    "journal short-full": lambda m: f"Sun 2026-01-11 09:52:01 UTC gpu017 kernel: {m}",
    "journal short-delta": lambda m: f"[ 1234.567890 <    0.000023>] gpu017 kernel: {m}",
    "journal verbose": lambda m: f"    MESSAGE={m}",
    "journal json-pretty": lambda m: f'\t"MESSAGE" : "{_j(m)}",',
    # busybox syslogd (sysklogd/syslogd.c: `%s %.64s %s %s`: stamp, host, facility.priority, the message)
    "busybox syslogd": lambda m: f"Jan 11 09:52:01 gpu017 kern.err kernel: {m}",
    # rsyslog's RSYSLOG_ForwardFormat (`<%PRI%>%TIMESTAMP:::date-rfc3339% %HOSTNAME% %syslogtag:1:32%...`)
    "rsyslog ForwardFormat": lambda m: f"<3>2026-01-11T09:52:01.123456+00:00 gpu017 kernel: {m}",
    # util-linux dmesg -r (the raw record: `<level>` before the stamp), --time-format delta (`[<    0.000023>]`),
    # --json (ul_jsonwrt: one field a line, `"msg": "..."` last in its object) and its records as jq -c prints them
    "dmesg -r": lambda m: f"<3>[ 1234.567890] {m}",
    "dmesg --time-format delta": lambda m: f"[<    0.000023>] {m}",
    "dmesg --json": lambda m: f'         "msg": "{_j(m)}"',
    "dmesg --json | jq -c": lambda m: f'{{"pri":3,"time":1234.567890,"msg":"{_j(m)}"}}',
    # Google Cloud Logging's LogEntry (textPayload; jsonPayload, where the Ops Agent's file receiver puts the line;
    # `gcloud logging read --format=json` one field a line)
    "cloud logging textPayload": lambda m: (f'{{"insertId":"1a2b","logName":"projects/p/logs/syslog","resource":'
                                            f'{{"type":"gce_instance"}},"textPayload":"Jan 11 09:52:01 gpu017 kernel: '
                                            f'{_j(m)}","timestamp":"2026-01-11T09:52:01.123Z"}}'),
    "cloud logging jsonPayload": lambda m: (f'{{"insertId":"1a2b","jsonPayload":{{"message":"Jan 11 09:52:01 gpu017 '
                                            f'kernel: {_j(m)}"}},"timestamp":"2026-01-11T09:52:01.123Z"}}'),
    "gcloud logging read json": lambda m: f'    "textPayload": "Jan 11 09:52:01 gpu017 kernel: {_j(m)}",',
    # CloudWatch Logs' GetLogEvents as the AWS CLI prints it (`events[]`: timestamp, message, ingestionTime)
    "aws logs get-log-events": lambda m: f'            "message": "Jan 11 09:52:01 gpu017 kernel: {_j(m)}",',
    # Azure Monitor's Syslog table (ProcessName, SyslogMessage), as a workspace data export writes it (JSON lines)
    "azure syslog table": lambda m: (f'{{"TimeGenerated":"2026-01-11T09:52:01.123Z","Computer":"gpu017","Facility":'
                                     f'"kern","SeverityLevel":"err","ProcessName":"kernel","SyslogMessage":"{_j(m)}"}}'),
    # Splunk's JSON export (search/jobs export, output_mode=json: one `{"preview":..,"result":{..}}` a line)
    "splunk json export": lambda m: (f'{{"preview":false,"result":{{"_raw":"Jan 11 09:52:01 gpu017 kernel: {_j(m)}",'
                                     f'"_time":"2026-01-11T09:52:01.000+00:00","host":"gpu017"}}}}'),
    # Graylog's GELF 1.1 (short_message, host, timestamp, level, additional `_` fields)
    "graylog gelf": lambda m: (f'{{"version":"1.1","host":"gpu017","short_message":"{_j(m)}","timestamp":'
                               f'1704966721.123,"level":3,"_facility":"kern"}}'),
    # Vector's events as its console/file sinks write them: the file source, the journald source (the record's fields
    # and `message`), the syslog source (appname, hostname, message)
    "vector file": lambda m: (f'{{"file":"/var/log/kern.log","host":"gpu017","message":"Jan 11 09:52:01 gpu017 kernel: '
                              f'{_j(m)}","source_type":"file","timestamp":"2026-01-11T09:52:01.123Z"}}'),
    "vector journald": lambda m: (f'{{"_TRANSPORT":"kernel","PRIORITY":"3","SYSLOG_IDENTIFIER":"kernel","host":'
                                  f'"gpu017","message":"{_j(m)}","source_type":"journald"}}'),
    "vector syslog": lambda m: (f'{{"appname":"kernel","facility":"kern","hostname":"gpu017","message":"{_j(m)}",'
                                f'"severity":"err","source_type":"syslog","timestamp":"2026-01-11T09:52:01Z"}}'),
    # Fluent Bit's syslog-rfc3164 parser (parsers.conf: pri, time, host, ident, pid, message)
    "fluent-bit syslog parser": lambda m: (f'{{"pri":"3","time":"Jan 11 09:52:01","host":"gpu017","ident":"kernel",'
                                           f'"message":"{_j(m)}"}}'),
    # Datadog's log search API (v2: `data[]` of `{"attributes":{...},"id":..,"type":"log"}`)
    "datadog api": lambda m: (f'{{"attributes":{{"host":"gpu017","message":"Jan 11 09:52:01 gpu017 kernel: {_j(m)}",'
                              f'"service":"syslog","status":"error"}},"id":"AQAAAY","type":"log"}}'),
    # Elastic Common Schema: event.original (the raw line), process.name beside a parsed message (Filebeat's syslog)
    "ecs event.original": lambda m: (f'{{"@timestamp":"2026-01-11T09:52:01.123Z","event":{{"original":"Jan 11 09:52:01 '
                                     f'gpu017 kernel: {_j(m)}"}},"message":"{_j(m)}"}}'),
    "ecs process.name": lambda m: (f'{{"@timestamp":"2026-01-11T09:52:01.123Z","host":{{"hostname":"gpu017"}},'
                                   f'"message":"{_j(m)}","process":{{"name":"kernel"}}}}'),
    # a serial-over-LAN capture (ipmitool sol activate, conserver): cursor moves and colours, carriage returns
    "ipmitool sol": lambda m: f"\x1b[0m\x1b[24;1H[ 1234.567890] {m}\r",
    # colours shown by `cat -v` or `less` without -R (`^[[0;32m`), and by ccze -A (raw ANSI)
    "cat -v colours": lambda m: f"^[[0;32m[ 1234.567890]^[[0m {m}",
    "ccze -A": lambda m: f"\x1b[0;37mJan 11 09:52:01\x1b[0m \x1b[1;36mgpu017\x1b[0m \x1b[0;31mkernel:\x1b[0m {m}",
    # ClusterShell's clush -bL (a folded node set before each line), Ansible's oneline callback, salt's indented output
    "clush -bL": lambda m: f"gpu[017-018,020]: [ 1234.567890] {m}",
    "ansible -o": lambda m: f"gpu017 | CHANGED | rc=0 | (stdout) [ 1234.567890] {m}",
    "salt cmd.run": lambda m: f"    [ 1234.567890] {m}",
}

# envelopes the parser does not know (made up, as a site's own shipper or paste might print them): a message found
# here is found by the scan's later starts (kernel._later_start), with trust syslog
UNKNOWN: dict[str, Wrap] = {
    "csv export": lambda m: f"2026-01-11 09:52:01.123,gpu017,kern,err,{m}",
    "pipe table": lambda m: f"11.01.2026 09:52:01 | gpu017 | kern.err | {m}",
    "nagios": lambda m: f"[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;{m}",
    "angle host": lambda m: f"<gpu017> {m}",
    "double colon": lambda m: f"gpu017 :: 2026/01/11 09:52:01.123 :: {m}",
    "influx line": lambda m: f'syslog,host=gpu017,severity=err message="{m}"',
    "bracket words": lambda m: f"[kernel] [gpu017] [err] {m}",
    "arrow": lambda m: f"gpu017 => {m}",
    # Round 13, formats that are known but not claimed. A name between two stamps (`aws logs tail`'s detailed format:
    # `TIMESTAMP STREAM MESSAGE`; HPE Cray's console files: an RFC 3339 stamp, the cname, the console line) is what a
    # syslog line looks like whose tag a user chose (`STAMP host Jan 11 09:52:01 x kernel: ...`, logger -t Jan):
    # claiming it would let a user's line pass as the kernel's
    "aws logs tail": lambda m: (f"2026-01-11T09:52:01.123000+00:00 i-0123456789abcdef0 Jan 11 09:52:01 gpu017 "
                                f"kernel: {m}"),
    "cray console": lambda m: f"2026-01-11T09:52:01.123456-06:00 c0-0c0s1n2 [ 1234.567890] {m}",
    # rsyslog's RSYSLOG_DebugFormat prints the tag and the message on different lines (`syslogtag '...'`, `msg: '...'`):
    # the message line alone does not say who wrote it
    "rsyslog DebugFormat": lambda m: f"msg: '{m}'",
    # Azure Monitor's portal export of a Syslog query (CSV, the message among the columns)
    "azure portal csv": lambda m: f'"1/11/2026, 9:52:01.123 AM",gpu017,kern,err,kernel,"{m}"',
}

# the job's own output (trust job): launchers' tags and loggers' headers
JOB: dict[str, Wrap] = {
    "bare": lambda m: m,
    "srun --label": lambda m: f"0: {m}",
    "srun --label, wide": lambda m: f" 12: {m}",
    "mpirun --tag-output": lambda m: f"[1,0]<stderr>:{m}",
    "prterun tag": lambda m: f"[prterun-gpu017-12345@1,0]<stderr>: {m}",
    "torchrun rank": lambda m: f"[rank3]: {m}",
    "torchrun tee": lambda m: f"[default0]:{m}",
    "mpich -l": lambda m: f"[0] {m}",
    "ray worker": lambda m: f"(RayTrainWorker pid=1234, ip=10.0.0.1) {m}",
    "python logging": lambda m: f"2026-01-11 09:52:01,123 - ERROR - {m}",
    "container CRI": lambda m: f"2026-01-11T09:52:01.123456789Z stderr F {m}",
    "docker json-file": lambda m: f'{{"log":"{_j(m)}\\n","stream":"stderr","time":"2026-01-11T09:52:01.1Z"}}',
    "kubectl --prefix": lambda m: f"[pod/train-0/worker] {m}",
    "pdsh job": lambda m: f"gpu017: {m}",
    # round 13: kubectl logs --timestamps (RFC 3339 with nanoseconds), podman logs --timestamps (with its zone),
    # docker compose's prefix (`SERVICE-N  | `), stern's default template (pod, container, message),
    # slurmstepd's lines in slurmd.log (`[STAMP] [JOB.STEP] `)
    "kubectl logs --timestamps": lambda m: f"2026-01-11T09:52:01.123456789Z {m}",
    "podman logs --timestamps": lambda m: f"2026-01-11T09:52:01.123456789+00:00 {m}",
    "docker compose": lambda m: f"train-1  | {m}",
    "stern": lambda m: f"train-0 worker {m}",
    "slurmstepd log": lambda m: f"[2026-01-11T09:52:01.123] [1234.batch] {m}",
}


def messages(half: str = "rules") -> list[tuple[str, str, str, str]]:
    """(message, kind, severity, trust) of each distinct fault or benign message of HALF, read bare."""
    out: dict[str, tuple[str, str, str, str]] = {}
    for row in load():
        if row.half != half:
            continue
        message = normalise(row.line).message
        if not message or message in out:
            continue
        found = diagnose(message.encode())
        if row.kind == "-":
            if not [f for f in found if f.severity in SEVERE]:
                out[message] = (message, "-", "", "")
            continue
        if found and found[0].kind == row.kind:
            out[message] = (message, found[0].kind, found[0].severity, found[0].trust)
    return list(out.values())


def verdict(line: str) -> tuple[str, str]:
    found = diagnose(line.encode())
    return (found[0].kind, found[0].severity) if found else ("", "")


def run() -> tuple[dict[str, list[int]], list[dict[str, str]]]:
    """Per envelope: [kept, messages, benign kept benign, benign]; and each miss."""
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    misses: list[dict[str, str]] = []
    for message, kind, severity, trust in messages():
        wraps = JOB if trust == "job" else {**KERNEL, **UNKNOWN}
        if kind == "-":
            for name, wrap in {**KERNEL, **UNKNOWN, **JOB}.items():
                table[name][3] += 1
                loud = [f for f in diagnose(wrap(message).encode()) if f.severity in SEVERE]
                table[name][2] += not loud
                if loud:
                    misses.append({"envelope": name, "line": wrap(message), "want": "benign",
                                   "got": f"{loud[0].kind}/{loud[0].severity}"})
            continue
        for name, wrap in wraps.items():
            table[name][1] += 1
            got = verdict(wrap(message))
            table[name][0] += got == (kind, severity)
            if got != (kind, severity):
                misses.append({"envelope": name, "line": wrap(message), "want": f"{kind}/{severity}",
                               "got": "/".join(got)})
    return dict(table), misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="print each message that changed in an envelope")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    table, misses = run()
    if args.markdown:
        print("| envelope | fault messages | same verdict | benign | stayed benign |")
        print("| --- | ---: | ---: | ---: | ---: |")
    for name, (kept, total, calm, benign) in table.items():
        share = f"{kept / total:.1%}" if total else "-"
        if args.markdown:
            print(f"| {name} | {total} | {share} | {benign} | {calm} |")
        else:
            print(f"{name:26} {kept:5}/{total:<5} {share:>7}   benign {calm}/{benign}")
    kept = sum(v[0] for v in table.values())
    total = sum(v[1] for v in table.values())
    calm = sum(v[2] for v in table.values())
    benign = sum(v[3] for v in table.values())
    print(f"\nall: {kept}/{total} wrapped fault messages kept their verdict ({kept / total:.2%}); "
          f"{calm}/{benign} wrapped benign messages stayed below warning")
    if args.misses:
        for miss in misses:
            print(json.dumps(miss, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
