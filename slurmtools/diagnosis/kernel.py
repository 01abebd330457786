"""Kernel log lines -> findings, by the rules in `rules` (data): the first rule that matches a line wins.

Big inputs are scanned by a keyword prefilter over raw bytes (the union of the rules' literals, in GNU grep -F
above 4 MB), so only lines that can matter are decoded. Each distinct message is decoded and matched once
(a storm of one line costs a dictionary lookup per repeat), repeats of one message are counted into one
finding, and multi-line events (an AER header and its detail lines, a GHES record, a hung-task dump, an OOM
report) become one finding with the detail lines as evidence, so counts are counts of events. Rates
(`rate = "10/1h"`) then turn frequent corrected errors on one device into a warning.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

from slurmtools.diagnosis.findings import ACTIONS, SEVERITIES, Finding
from slurmtools.diagnosis.handlers import HANDLERS, plain
from slurmtools.diagnosis.lines import MAX_LINE, Line, normalise, stamp_split
from slurmtools.diagnosis.rules import Rule, RuleSet, ruleset

__all__ = ["GREP_MIN_BYTES", "MAX_LINE", "TASK_FIRST", "Line", "iter_lines", "match_line", "normalise", "scan"]

#: Messages that the kernel begins with a task's name (at most 15 bytes, anything a job chooses with prctl):
#: `NAME[PID]: segfault at`, `traps: NAME[PID] general protection`, `NAME invoked oom-killer`, `NAME (PID):
#: drop_caches`, `NAME: page allocation failure`, and the `CPU: N PID: N Comm: NAME` dump header. Only rules
#: that say so (`anchor = "task"`, or a syslog or job rule) read such a line, and none of them drains.
TASK_FIRST = re.compile(
    r"^(?:traps: |process '|audit: )"
    r"|^.{1,15}?(?:\[\d+\](?::| )| \(\d+\): | invoked oom-killer|: page allocation failure|: Corrupted page table)"
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: "
    r"|^[\w./-]+\[\d+\]: ", re.S)   # and a userspace program's syslog line, `TAG[PID]: ` (logger -t TAG ...)

#: Above this size the prefilter runs in GNU grep -F (about 10x the Python regex's throughput).
GREP_MIN_BYTES = 4 << 20
#: Detail lines kept as evidence on one finding.
MAX_EVIDENCE = 8
#: Distinct messages remembered per scan (a log of all-distinct lines must not grow memory without bound).
MEMO_MAX = 50_000


def match_line(line: Line, ctx: dict[str, Any] | None = None,
               rs: RuleSet | None = None) -> tuple[Rule, Finding | None] | None:
    """(rule, finding or None for markers) for the first rule that matches the line, or None."""
    ctx = ctx or {}
    rs = rs or ctx.get("ruleset") or ruleset()
    text = line.message
    candidates = rs.task_rules if TASK_FIRST.match(text) else rs.rules
    for rule in candidates:
        for lit in rule.literals:
            if lit in text:
                break
        else:
            continue
        m = rule.pattern.search(text)
        if m:
            return rule, HANDLERS.get(rule.handler or "", plain)(rule, m, line, ctx)
    return None


def iter_lines(data: bytes, rs: RuleSet | None = None) -> Iterator[tuple[int, bytes]]:
    """Candidate lines of a buffer with their 1-based numbers, chosen by the keyword prefilter."""
    rs = rs or ruleset()
    if len(data) >= GREP_MIN_BYTES:
        found = _grep_lines(data, rs)
        if found is not None:
            yield from found
            return
    number, counted_to = 1, 0
    pos, end = 0, len(data)
    search = rs.any_keyword.search
    while pos < end:
        m = search(data, pos)
        if not m:
            return
        start = data.rfind(b"\n", 0, m.start()) + 1
        stop = data.find(b"\n", m.start())
        stop = end if stop < 0 else stop
        number += data.count(b"\n", counted_to, start)
        counted_to = start
        yield number, data[start:stop]
        pos = stop + 1


def _grep_lines(data: bytes, rs: RuleSet) -> list[tuple[int, bytes]] | None:
    """The same prefilter through `grep -a -n -F` (None if grep is missing or fails: use Python)."""
    grep = shutil.which("grep") or ("/bin/grep" if os.access("/bin/grep", os.X_OK) else None)
    if grep is None:
        return None
    patterns = b"\n".join(rs.keywords)
    try:
        proc = subprocess.run([grep, "-a", "-n", "-F", "-e", patterns.decode()], input=data, capture_output=True,
                              timeout=120, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired, UnicodeDecodeError):
        return None
    if proc.returncode not in (0, 1):
        return None
    out = []
    for row in proc.stdout.split(b"\n"):
        number, sep, text = row.partition(b":")
        if sep and number.isdigit():
            out.append((int(number), text))
    return out


def _rank(action: str, severity: str) -> int:
    return ACTIONS.index(action) * 10 + SEVERITIES.index(severity)


def _attach(event: Finding, rule: Rule, detail: Finding | None, message: str) -> None:
    """A detail line joins its event: evidence, and the event's verdict if the detail's is worse."""
    evidence = event.details.setdefault("evidence", [])
    if message not in evidence and len(evidence) < MAX_EVIDENCE:
        evidence.append(message)
    if rule.retype and event.kind != rule.retype:
        event.kind = rule.retype
    if detail is None:
        return
    if _rank(detail.action, detail.severity) > _rank(event.action, event.severity):
        event.action, event.severity = detail.action, detail.severity
        if detail.category != "unknown":
            event.category = detail.category
        for key in ("level", "uncorrected"):
            if key in detail.details:
                event.details[key] = detail.details[key]
    if event.pci is None and detail.pci is not None:
        event.pci = detail.pci


def scan(data: bytes, ctx: dict[str, Any] | None = None) -> tuple[list[Finding], list[int]]:
    """All findings in a buffer of kernel log (one per distinct event message, with its count), and the line
    numbers of boot markers. CTX: `overrides` (XID catalog), `ruleset`, `window_s` (the job's window, for rates)."""
    ctx = ctx or {}
    rs: RuleSet = ctx.get("ruleset") or ruleset()
    ctx["ruleset"] = rs
    memo: dict[bytes | str, tuple[str, tuple[Rule, Finding | None] | None]] = {}
    aggs: dict[tuple[str, bytes | str], Finding] = {}
    rules_of: dict[int, Rule] = {}
    open_events: dict[str, list[Any]] = {}     # group -> [event finding, line number of its last member]
    boots: list[int] = []
    last_mono: float | None = None
    first_mono: float | None = None
    mono: float | None
    key: bytes | str
    for number, raw in iter_lines(data, rs):
        fast = stamp_split(raw)
        if fast is not None:
            mono, key = fast
            hit = memo.get(key)
            if hit is None:
                message = normalise(key.decode("utf-8", "replace").replace("\x00", "")).message
                hit = (message, match_line(Line(0, message, None, None, None), ctx, rs))
                if len(memo) < MEMO_MAX:
                    memo[key] = hit
            stamp: str | None = raw[1:raw.find(b"]")].decode().strip()
        else:
            line = normalise(raw.decode("utf-8", "replace").replace("\x00", ""), number)
            mono, stamp, key = line.mono, line.stamp, line.message
            hit = memo.get(key)
            if hit is None:
                hit = (line.message, match_line(Line(0, line.message, None, None, None), ctx, rs))
                if len(memo) < MEMO_MAX:
                    memo[key] = hit
        if mono is not None:
            if last_mono is not None and mono + 1.0 < last_mono:
                boots.append(number)  # monotonic time went backwards: the node rebooted
                aggs.clear()
                open_events.clear()
                first_mono = mono
            last_mono = mono
            first_mono = mono if first_mono is None else first_mono
        message, result = hit
        if result is None:
            continue
        rule, template = result
        if rule.handler == "ignore":
            continue
        if rule.handler == "boot":
            boots.append(number)
            aggs.clear()
            open_events.clear()
            continue
        if rule.group:
            event = open_events.get(rule.group)
            if rule.role == "detail" and event is not None and number - event[1] <= rule.within:
                _attach(event[0], rule, template, message)
                event[1] = number
                continue
        if template is None:
            continue
        agg_key = (rule.name, key)
        found = aggs.get(agg_key)
        if found is None:
            found = aggs[agg_key] = dataclasses.replace(template, line=number, time=stamp,
                                                        details=dict(template.details))
            rules_of[id(found)] = rule
        else:
            found.count += 1
            found.details["last_line"] = number
        if rule.group:
            open_events[rule.group] = [found, number]
    findings = list(aggs.values())
    window = ctx.get("window_s")
    if window is None and first_mono is not None and last_mono is not None:
        window = last_mono - first_mono
    _rates(findings, rules_of, window)
    return findings, boots


def _rates(findings: list[Finding], rules_of: dict[int, Rule], window: float | None) -> None:
    """Rate rules: events per device in the window; above the limit, info becomes a warning to look at."""
    totals: dict[tuple[str, object], int] = {}
    keyed: list[tuple[Finding, Rule, tuple[str, object]]] = []
    for f in findings:
        rule = rules_of.get(id(f))
        if rule is None or rule.rate is None:
            continue
        key = (rule.group or rule.name, f.pci or f.details.get("device") or f.details.get("dev"))
        totals[key] = totals.get(key, 0) + f.count
        keyed.append((f, rule, key))
    for f, rule, key in keyed:
        assert rule.rate is not None
        events, period = rule.rate
        limit = events * max(1.0, (window or 0.0) / period)
        over = totals[key] > limit
        f.details["rate"] = {"events": totals[key], "limit": rule.raw.get("rate"), "allowed": round(limit, 1),
                             "window_s": None if window is None else round(window, 3), "exceeded": over}
        if over and f.severity == "info":
            f.severity = "warning"
            f.action = "investigate" if f.action == "none" else f.action
