"""Checkpoint events from the training frameworks' own log lines in the job's output (Megatron-LM, NeMo, DeepSpeed,
torchtitan over torch.distributed.checkpoint, PyTorch Lightning, Hugging Face Trainer): no work for the researcher.

The lines are data (`slurmtools/data/checkpoint_lines.toml`, each with its source). A begin and an end line give a
duration when both carry a date and time; a "done" line (NeMo, torchtitan) or a timer line (Megatron) gives it
directly. The job's output is the job's own word: its events go to the ledger and the report, never near a drain.
Naive timestamps are read in the node's local time zone (the epilog runs where the job's first task wrote them).

The output is hostile text: every line is cut to MAX_LINE before it is looked at, the patterns run on RE2 (linear
time in the line: no backtracking, so no line costs more than its length), and every number a line gives (a start
time, a duration) is finite and bounded (`slurmtools/bounds.py`), or left out.
"""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from slurmtools import bounds

MARKS = ("begin", "end", "done", "duration", "point")
KINDS = ("save", "load")
#: A date and time near the start of a line (DeepSpeed's [2024-10-22 20:11:28,103], NeMo's [NeMo I 2025-04-11
#: 14:48:45 ...], asctime's 2025-04-01 00:25:59,616, ISO 8601's 2025-04-01T00:25:59.616).
TIME_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
#: A line is looked at only if it holds one of these (lowercased): every pattern's line does.
NEEDLES = ("checkpoint", "saving model to")
#: Timer and end lines further than this many lines from the event they belong to start their own.
NEAR = 200
#: Events of one framework and kind closer than this many seconds are one checkpoint (DeepSpeed loads per file).
MERGE_GAP_S = 5.0
MAX_EVENTS = 2000
#: Longer lines are cut to this before any pattern sees them (the diagnosis does the same).
MAX_LINE = 4096


class PatternError(ValueError):
    """The checkpoint line patterns are not valid (names the entry)."""


@dataclass(frozen=True)
class LinePattern:
    framework: str
    kind: str
    mark: str
    regex: Any          # an RE2 pattern (re2.compile): search() and groupdict() as Python's re
    source: str


@lru_cache(maxsize=1)
def load_patterns() -> tuple[LinePattern, ...]:
    data = tomllib.loads(resources.files("slurmtools.data").joinpath("checkpoint_lines.toml").read_text())
    return parse_patterns(data.get("line", []))


def parse_patterns(entries: list[dict[str, Any]]) -> tuple[LinePattern, ...]:
    out = []
    for i, e in enumerate(entries, 1):
        where = f"checkpoint line pattern {i} ({e.get('framework', '?')} {e.get('kind', '?')} {e.get('mark', '?')})"
        if e.get("kind") not in KINDS or e.get("mark") not in MARKS or not e.get("framework"):
            raise PatternError(f"{where}: needs framework, kind in {KINDS} and mark in {MARKS}")
        if "regex" not in e:
            raise PatternError(f"{where}: needs a regex")
        rx = compile_linear(str(e["regex"]), where)
        out.append(LinePattern(str(e["framework"]), e["kind"], e["mark"], rx, str(e.get("source", ""))))
    return tuple(out)


def compile_linear(pattern: str, where: str) -> Any:
    """PATTERN on RE2 (linear time); a pattern RE2 cannot take (lookaround, backreferences) is refused, naming it."""
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        msg = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"{where}: not a pattern the linear-time engine (RE2) takes: {msg}") from None


def line_time(line: str) -> float | None:
    """Epoch seconds of the date and time in the first 80 characters of LINE (local time), or None."""
    m = TIME_RE.search(line, 0, 80)
    if not m:
        return None
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    try:
        return time.mktime((y, mo, d, h, mi, s, 0, 0, -1)) + frac
    except (OverflowError, ValueError):
        return None


def _mount_for(path: str | None, filesystems: dict[str, Any]) -> str | None:
    if not path or not path.startswith("/"):
        return None
    best = None
    for point in filesystems:
        p = point.rstrip("/") or "/"
        if (path == p or path.startswith(p + "/") or p == "/") and (best is None or len(p) > len(best)):
            best = point
    return best


def _number(text: str | None, hi: float) -> float | None:
    """A number a line gave, finite and in [0, HI]; None otherwise (`Start time: 99999999999999999999s`)."""
    return bounds.finite(text, 0.0, hi) if text is not None else None


#: An epoch time a line gives (NeMo's `Start time: ...s`) lies between 2000 and 2200.
EPOCH_RANGE = (946684800.0, 7258118400.0)


def scan(lines: Iterable[str], filesystems: dict[str, Any] | None = None,
         patterns: tuple[LinePattern, ...] | None = None) -> list[dict[str, Any]]:
    """The checkpoint events in LINES (the job's output), oldest first."""
    patterns = load_patterns() if patterns is None else patterns
    events: list[dict[str, Any]] = []
    open_: dict[tuple[str, str], dict[str, Any] | None] = {}
    last_end: dict[tuple[str, str], int] = {}        # (framework, kind) -> index of the event an end just closed
    for no, line in enumerate(lines):
        line = line[:MAX_LINE]
        low = line.lower()
        if not any(n in low for n in NEEDLES):
            continue
        for p in patterns:
            m = p.regex.search(line)
            if m is None:
                continue
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            t = line_time(line)
            key = (p.framework, p.kind)
            if p.mark == "begin":
                b = open_.get(key)
                if b is None:
                    open_[key] = {"start": t, "path": g.get("path"), "step": g.get("step"), "no": no, "line": line}
                else:       # a second begin line of the same checkpoint (DeepSpeed: the tag, then the path)
                    b["path"], b["step"] = b["path"] or g.get("path"), b["step"] or g.get("step")
                last_end.pop(key, None)
            elif p.mark == "end":
                b = open_.pop(key, None)
                if b is None and key in last_end and no - events[last_end[key]]["end_no"] <= NEAR:
                    ev = events[last_end[key]]          # another rank's end, or the commit after the files
                    if t is not None and ev["start"] is not None:
                        ev["end"], ev["seconds"] = t, max(0.0, t - ev["start"])
                    ev["end_no"] = no
                    ev["path"] = ev["path"] or g.get("path")
                    ev["step"] = ev["step"] or g.get("step")
                    continue
                start = b["start"] if b else None
                events.append(_event(p, start, t, (t - start) if t is not None and start is not None else None,
                                     (b or {}).get("path") or g.get("path"), (b or {}).get("step") or g.get("step"),
                                     b["no"] if b else no, no, (b or {}).get("line") or line))
                last_end[key] = len(events) - 1
            elif p.mark == "done":
                ms = _number(g.get("ms"), bounds.MAX_DURATION_S * 1000.0)
                seconds = _number(g["seconds"], bounds.MAX_DURATION_S) if "seconds" in g else (
                    ms / 1000.0 if ms is not None else None if "ms" in g else 0.0)
                start = (bounds.finite(g["start"], *EPOCH_RANGE) if "start" in g
                         else (t - seconds if t is not None and seconds is not None else None))
                if seconds is None or ("start" in g and start is None):
                    continue            # a number out of bounds: this line gives no event
                b = open_.pop(key, None)
                events.append(_event(p, start, start + seconds if start is not None else t, seconds,
                                     g.get("path") or (b or {}).get("path"), g.get("step") or (b or {}).get("step"),
                                     b["no"] if b else no, no, line))
                last_end[key] = len(events) - 1
            elif p.mark == "duration":
                ms = _number(g.get("ms"), bounds.MAX_DURATION_S * 1000.0)
                if ms is None:
                    continue
                seconds = ms / 1000.0
                target = next((e for e in reversed(events) if e["kind"] == p.kind and e["seconds"] is None
                               and no - e["end_no"] <= NEAR), None)
                if target is not None:
                    target["seconds"] = seconds
                    if target["start"] is None and target["end"] is not None:
                        target["start"] = target["end"] - seconds
                else:
                    events.append(_event(p, None, t, seconds, None, None, no, no, line))
            else:   # point
                events.append(_event(p, t, t, None, g.get("path"), g.get("step"), no, no, line))
            break
        if len(events) >= MAX_EVENTS:
            break
    return _tidy(events, filesystems or {})


def _event(p: LinePattern, start: float | None, end: float | None, seconds: float | None, path: str | None,
           step: str | None, no: int, end_no: int, line: str) -> dict[str, Any]:
    return {"kind": p.kind, "framework": p.framework, "start": start, "end": end, "seconds": seconds,
            "path": path, "step": step, "no": no, "end_no": end_no, "line": line.strip()[:500]}


def _tidy(events: list[dict[str, Any]], filesystems: dict[str, Any]) -> list[dict[str, Any]]:
    """One event per checkpoint: a 'point' line just before another framework's event of that kind is the same
    save (HF Trainer over DeepSpeed); events of one kind and step are one; one framework's events closer than
    MERGE_GAP_S are one (DeepSpeed loads, file by file)."""
    kept: list[dict[str, Any]] = []
    for i, e in enumerate(events):
        if e["seconds"] is None and e["start"] == e["end"] and any(
                o["kind"] == e["kind"] and o["framework"] != e["framework"] and 0 <= o["no"] - e["no"] <= NEAR
                for o in events[i + 1:]):
            continue
        same = next((k for k in reversed(kept) if k["kind"] == e["kind"] and e["step"] is not None
                     and _step(k["step"]) == _step(e["step"]) and e["no"] - k["end_no"] <= NEAR), None)
        if same is not None:
            if same["seconds"] is None and e["seconds"] is not None:
                same.update(start=e["start"], end=e["end"], seconds=e["seconds"], framework=e["framework"])
            same["path"] = same["path"] or e["path"]
            same["end_no"] = max(same["end_no"], e["end_no"])
            continue
        prev = kept[-1] if kept else None
        if (prev is not None and prev["kind"] == e["kind"] and prev["framework"] == e["framework"]
                and prev["end"] is not None and e["start"] is not None and prev["start"] is not None
                and 0 <= e["start"] - prev["end"] <= MERGE_GAP_S and e["end"] is not None):
            prev["end"], prev["end_no"] = e["end"], e["end_no"]
            prev["seconds"] = max(0.0, e["end"] - prev["start"])
            prev["files"] = prev.get("files", 1) + 1
            continue
        kept.append(e)
    for e in kept:
        e["mountpoint"] = _mount_for(e["path"], filesystems)
        nominal = (filesystems.get(e["mountpoint"] or "") or {}).get(
            "write_gbps" if e["kind"] == "save" else "read_gbps")
        e["nominal_gbps"] = float(nominal) if nominal else None
    return kept


def _step(step: str | None) -> str | None:
    """'global_step500', 'iter_0000500' and '500' are one step."""
    if step is None:
        return None
    digits = re.findall(r"[0-9]+", step[:MAX_LINE])
    return (digits[-1].lstrip("0") or "0") if digits else step
