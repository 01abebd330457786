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
