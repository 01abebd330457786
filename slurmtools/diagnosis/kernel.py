"""Kernel log lines -> findings, by the rules in `rules` (data): the first rule that matches a line wins.

Big inputs are scanned by a keyword prefilter over raw bytes (keywords derived from the rules' literals; GNU grep -F
above 4 MB), so only lines that can matter are decoded. Each distinct message is decoded and matched once
(a storm of one line costs a dictionary lookup per repeat), repeats of one message are counted into one
finding, and multi-line events (an AER header and its detail lines, a GHES record, a hung-task dump, an OOM
report) become one finding with the detail lines as evidence, so counts are counts of events. Rates
(`rate = "10/1h"`) then turn frequent corrected errors on one device into a warning.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any, cast

from slurmtools.diagnosis.findings import ACTIONS, NODE_TRUST, SEVERITIES, Finding
from slurmtools.diagnosis.handlers import HANDLERS, plain
from slurmtools.diagnosis.lines import MAX_LINE, TASK_FIRST, Line, normalise
from slurmtools.diagnosis.prefilter import tagged
from slurmtools.diagnosis.records import export_to_json
from slurmtools.diagnosis.rules import Rule, RuleSet, ruleset
from slurmtools.diagnosis.subsystems import ANY_TAG

__all__ = ["MAX_LINE", "TASK_FIRST", "Line", "iter_lines", "match_line", "normalise", "scan"]

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
            if rule.literals:      # a fallback rule has none: its lines hold a subsystem's tag and an error word
                continue
        m = rule.pattern.search(text)
        if m:   # RE2's match has the group/groupdict/start/end the handlers read
            return rule, HANDLERS.get(rule.handler or "", plain)(rule, cast("re.Match[str]", m), line, ctx)
    return None


def iter_lines(data: bytes, rs: RuleSet | None = None) -> Iterator[tuple[int, bytes]]:
    """Candidate lines of a buffer with their 1-based numbers, chosen by the prefilter (`prefilter`)."""
    for number, start, stop in (rs or ruleset()).prefilter.spans(data):
        yield number, data[start:stop]


def _rank(action: str, severity: str) -> int:
    return ACTIONS.index(action) * 10 + SEVERITIES.index(severity)


def _attach(event: Finding, rule: Rule, detail: Finding | None, message: str, holds: bool = False) -> None:
    """A detail line joins its event: evidence, and the event's verdict if the detail's is worse (unless the event's
    rule HOLDS its verdict: the firmware's records of an earlier boot are evidence, not a new failure)."""
    evidence = event.details.setdefault("evidence", [])
    if message not in evidence and len(evidence) < MAX_EVIDENCE:
        evidence.append(message)
    if rule.retype and event.kind != rule.retype:
        event.kind = rule.retype
    if detail is None or holds:
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


SKIP, BOOT, PLAIN, HEADER, DETAIL = range(5)


#: Where a message may start inside an envelope the parser does not know: after a blank, `]`, `:`, `|` or `>`.
_STARTS = re.compile(r"[\s\]:|>,;=\"']+")
#: How many later starts are tried, within how many characters of the message; and the longest message they are tried
#: on: a kernel record is at most 1,024 bytes (printk's PRINTKRB_RECORD_MAX), 2,048 formatted with its prefix
#: (PRINTK_MESSAGE_MAX), so a longer line is not a kernel message behind an envelope (a compiler's command line, a
#: job's dump) and its later starts would cost 24 scans of it.
LATER_STARTS, LATER_SPAN, LATER_MAX = 24, 256, 2048


def _library_fallback(found: Finding) -> bool:
    """FOUND is the fallback's finding for a library's tag (trust job), which is searched anywhere in a message."""
    return found.trust == "job" and bool(found.details.get("unrecognised"))


def _later_start(message: str, ctx: dict[str, Any], rs: RuleSet) -> tuple[Rule, Finding | None] | None:
    """A message no rule claims, from an envelope the parser does not know (`host:: 12 [x] NVRM: Xid ...`): the first
    later start (`_STARTS`, the first LATER_STARTS within LATER_SPAN characters) where a rule finds something. The
    writer of such a line is not known, so a finding of a node-level rule is downgraded to trust `syslog` (recorded,
    never a drain: a process name that spells a kernel message stays the job's) and says `envelope: unread`."""
    for i, m in enumerate(_STARTS.finditer(message, 0, LATER_SPAN)):
        if i >= LATER_STARTS:
            break
        rest = normalise(message[m.end():]).message
        if not rest:
            continue
        hit = match_line(Line(0, rest, None, None, None), ctx, rs)
        rule, found = hit if hit is not None else (None, None)
        if rule is None or found is None or rule.handler in ("ignore", "boot"):
            if TASK_FIRST.match(rest):
                return None              # past here the text is a task's (`audit: ... comm="..."`): not read
            continue
        if _library_fallback(found):
            continue                     # a library's tag is searched anywhere: the whole message had its say
        details = {**found.details, "envelope": "unread"}
        trust = "syslog" if found.trust in NODE_TRUST else found.trust
        return rule, dataclasses.replace(found, trust=trust, details=details)
    return None


def _plan(key: bytes | str, ctx: dict[str, Any], rs: RuleSet) -> tuple[int, str, Rule | None, Finding | None]:
    """What to do with every line whose message is KEY: decided once per distinct message."""
    text = key.decode("utf-8", "replace").replace("\x00", "") if isinstance(key, bytes) else key
    message = normalise(text, after_stamp=True).message if isinstance(key, bytes) else text
    hit = match_line(Line(0, message, None, None, None), ctx, rs)
    # unclaimed: no rule, or only the fallback, with no tag here or only a library's tag found anywhere in the line
    # (a job's words): a later start may still hold a kernel message a rule reads (`...;CRITICAL;1;nfs: server ...`)
    unclaimed = hit is None or (hit[0].handler == "unrecognised" and (hit[1] is None or _library_fallback(hit[1])))
    if unclaimed and len(message) <= LATER_MAX and not ANY_TAG.match(message) and not TASK_FIRST.match(message):
        later = _later_start(message, ctx, rs)
        if later is not None and (hit is None or hit[1] is None or later[0].handler != "unrecognised"):
            hit = later          # a library's finding yields to a rule's at a later start, not to another fallback
    if hit is None or hit[0].handler == "ignore":
        return SKIP, message, None, None
    rule, template = hit
    if rule.handler == "boot":
        return BOOT, message, rule, None
    step = (DETAIL if rule.role == "detail" else HEADER) if rule.group else PLAIN
    return step, message, rule, template


def scan(data: bytes, ctx: dict[str, Any] | None = None) -> tuple[list[Finding], list[int]]:
    """All findings in a buffer of kernel log (one per distinct event message, with its count), and the line
    numbers of boot markers. CTX: `overrides` (XID catalog), `ruleset`, `window_s` (the job's window, for rates)."""
    ctx = ctx or {}
    rs: RuleSet = ctx.get("ruleset") or ruleset()
    ctx["ruleset"] = rs
    memo: dict[bytes | str, tuple[int, str, Rule | None, Finding | None, tuple[str, bytes | str]]] = {}
    aggs: dict[tuple[str, bytes | str], Finding] = {}
    rules_of: dict[int, Rule] = {}
    open_events: dict[str, list[Any]] = {}     # group -> [event, line of its last member, `once` rules seen]
    boots: list[int] = []
    last_mono: float | None = None
    first_mono: float | None = None
    mono: float | None
    key: bytes | str
    stamp: str | None = None
    if data.startswith((b"__CURSOR=", b"__REALTIME_TIMESTAMP=")):
        data = export_to_json(data)           # journalctl -o export: one JSON record per line
    find, rfind, count = data.find, data.rfind, data.count
    # line numbers are counted only where one is used (a line that is recorded, a boot): NUMBER is the number of the
    # line starting at COUNTED_TO
    number, counted_to = 1, 0
    for stop, kind in zip(*rs.prefilter.candidates(data), strict=True):
        start = rfind(b"\n", 0, stop) + 1
        if kind and not tagged(data, start, stop):
            continue                                  # a failure word without a subsystem's tag
        close = find(b"] ", start + 1, start + 24) if data[start:start + 1] == b"[" else -1
        if close > 0 and find(b"+", start + 1, close) < 0 and find(b".", start + 1, close) > 0:
            # `[  123.456789] message`: the commonest form (not a rank's `[0] ` or Fluent Bit's record index)
            key = data[close + 2:min(stop, close + 2 + MAX_LINE)]
            try:
                mono = float(data[start + 1:close])
            except ValueError:
                close = -1
        else:
            close = -1
        if close < 0:
            number += count(b"\n", counted_to, start)
            counted_to = start
            line = normalise(data[start:stop].decode("utf-8", "replace").replace("\x00", ""), number)
            mono, stamp, key = line.mono, line.stamp, line.message
        plan = memo.get(key)
        if plan is None:
            step, message, rule, template = _plan(key, ctx, rs)
            plan = (step, message, rule, template, (rule.name if rule else "", key))
            if len(memo) < MEMO_MAX:
                memo[key] = plan
        if mono is not None:
            if last_mono is not None and mono + 1.0 < last_mono:
                number += count(b"\n", counted_to, start)
                counted_to = start
                boots.append(number)  # monotonic time went backwards: the node rebooted
                aggs.clear()
                open_events.clear()
                first_mono = mono
            elif first_mono is None:
                first_mono = mono
            last_mono = mono
        step, message, rule, template, agg_key = plan
        if step == SKIP:
            continue
        number += count(b"\n", counted_to, start)
        counted_to = start
        if step == BOOT:
            boots.append(number)
            aggs.clear()
            open_events.clear()
            continue
        assert rule is not None
        if step == DETAIL:
            event = open_events.get(rule.group or "")
            if event is not None and number - event[1] <= rule.within and not (rule.once and rule.name in event[2]):
                _attach(event[0], rule, template, message, rules_of[id(event[0])].holds_verdict)
                event[1] = number
                if rule.once:
                    event[2].add(rule.name)
                continue
        if template is None:
            continue
        found = aggs.get(agg_key)
        if found is None:
            if close > 0:
                stamp = data[start + 1:close].decode().strip()
            found = aggs[agg_key] = dataclasses.replace(template, line=number, time=stamp,
                                                        details=dict(template.details))
            rules_of[id(found)] = rule
        else:
            found.count += 1
            found.details["last_line"] = number
        if step != PLAIN:
            event = open_events.get(rule.group or "")
            if event is not None and event[0] is found:
                event[1] = number
                event[2].clear()
            else:
                open_events[rule.group or ""] = [found, number, {rule.name} if rule.once else set()]
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
