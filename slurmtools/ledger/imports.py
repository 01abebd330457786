"""Importing history into the ledger: Slurm's accounting, Slurm's node events, fault traces.

Every import goes through the same spool and shipper as the hooks, with deterministic
idempotency keys, so importing twice adds nothing.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from slurmtools.ledger.spool import Event, make_key
from slurmtools.slurm import JobRecord, NodeEvent, Slurm, collect
from slurmtools.timeutil import aware


def attempt_event(rec: JobRecord, cluster: str) -> Event:
    data: dict[str, Any] = {
        "job_id": rec.job_id_raw, "restart_count": rec.attempt, "submit_time": rec.submit_time,
        "start_time": rec.start_time, "end_time": rec.end_time, "state": rec.state,
        "exit_code": rec.exit.code, "exit_signal": rec.exit.signal, "nodes": collect(rec.nodes) or None,
        "user": rec.user or None, "name": rec.name or None, "partition": rec.partition or None,
        "source": "sacct",
        "details": {"job_id_text": rec.job_id, "comment": rec.comment, "reason": rec.reason,
                    "derived_exit": str(rec.derived_exit), "work_dir": rec.work_dir,
                    "elapsed_s": rec.elapsed_s, "node_list": list(rec.nodes)},
    }
    if rec.sluid:       # 25.11+: the run's own id, matched to its epilogs' row exactly (ledger/store.py)
        data["sluid"] = rec.sluid
    key = make_key("sacct", cluster, rec.job_id_raw, rec.attempt, rec.submit_time, rec.state, rec.end_time)
    return Event("attempt", data, cluster=cluster, time=rec.end_time or rec.start_time or rec.submit_time
                 or datetime.now(UTC), key=key)


def sacct_events(slurm: Slurm, cluster: str, since: datetime | None) -> list[Event]:
    """Every attempt of every job seen since SINCE. Jobs in the window are re-read whole, so a
    job whose first attempts precede the window still numbers its attempts right."""
    window = slurm.job_history(since=since)
    ids = sorted({r.job_id_raw for r in window})
    records: list[JobRecord] = []
    for i in range(0, len(ids), 500):
        records += slurm.job_history(job_ids=ids[i:i + 500])
    return [attempt_event(r, cluster) for r in records]


def node_event_events(events: list[NodeEvent], cluster: str) -> list[Event]:
    out = []
    for ev in events:
        data = {"node": ev.node, "start": ev.start, "end": ev.end, "state": ev.state, "reason": ev.reason,
                "source": "sacctmgr", "category": None, "details": {"user": ev.user}}
        out.append(Event("node_event", data, cluster=cluster, time=ev.start,
                         key=make_key("sacctmgr", cluster, ev.node, ev.start, ev.state)))
    return out


# ------------------------------------------------------------------------------ fault traces
TRACE_CATEGORY = {
    ("hardware failure", "nic"): "network", ("hardware failure", "parameter plane cable"): "network",
    ("hardware failure", "switch"): "network", ("software failure", "file system"): "filesystem",
    ("software failure", "firmware"): "driver", ("software failure", "operating system"): "driver",
}


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file and the line or record."""


def _trace_time(value: object, base: datetime | None, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and _is_number(value)):
        number = float(value)
        if base is not None:  # days since the trace's start
            return base + timedelta(days=number)
        return datetime.fromtimestamp(number, tz=UTC)
    try:
        return aware(str(value))
    except ValueError:
        raise TraceError(f"{where}: not a time: {value!r}") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    stripped = text.lstrip()
    if path.suffix.lower() == ".csv":
        for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            yield f"{path}:{i}", dict(row)
        return
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{path}: not valid JSON: {exc}") from None
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise TraceError(f"{path}: record {i} is not an object")
            yield f"{path}[{i}]", item
        return
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{path}:{i}: not valid JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise TraceError(f"{path}:{i}: not a JSON object")
        yield f"{path}:{i}", item


def trace_events(path: Path, cluster: str, *, base: datetime | None = None,
                 progress: Callable[[int], None] | None = None) -> list[Event]:
    """A node-fault trace -> node_event events.

    Two shapes: periods (`node, start, end, category, description`; JSON array, JSONL or CSV) and
    start/end pairs (`node_id, event_time, event_type fault_start|fault_end, fault_type{Level,Class,Desc}`,
    as in the InfiniteHBD trace, where event_time is days since BASE).
    """
    records = list(_records(path))
    source = f"trace:{path.name}"
    if records and "event_type" in records[0][1]:
        periods = _pair_trace(records, base or datetime(2024, 3, 30, tzinfo=UTC))
    else:
        periods = []
        for where, rec in records:
            node = rec.get("node") or rec.get("node_id")
            start = _trace_time(rec.get("start"), None, where)
            if not node or start is None:
                raise TraceError(f"{where}: needs at least node and start")
            periods.append({"node": str(node), "start": start, "end": _trace_time(rec.get("end"), None, where),
                            "category": rec.get("category") or None, "reason": str(rec.get("description") or ""),
                            "state": str(rec.get("state") or "FAULT"), "details": {}})
    out = []
    for i, p in enumerate(periods):
        p["source"] = source
        out.append(Event("node_event", p, cluster=cluster, time=p["start"],
                         key=make_key(source, cluster, p["node"], p["start"], p["reason"])))
        if progress and (i + 1) % 100 == 0:
            progress(i + 1)
    return out


def _pair_trace(records: list[tuple[str, dict[str, Any]]], base: datetime) -> list[dict[str, Any]]:
    opened: dict[tuple[str, str, str, str], deque[dict[str, Any]]] = defaultdict(deque)
    periods: list[dict[str, Any]] = []
    ordered = sorted(records, key=lambda r: (float(r[1].get("event_time", 0)), r[1].get("event_type") != "fault_end"))
    for where, rec in ordered:
        ft = rec.get("fault_type") or {}
        level, klass, desc = str(ft.get("Level", "")), str(ft.get("Class", "")), str(ft.get("Desc", ""))
        node = str(rec.get("node_id") or rec.get("node") or "")
        when = _trace_time(rec.get("event_time"), base, where)
        if not node or when is None:
            raise TraceError(f"{where}: needs node_id and event_time")
        key = (node, level, klass, desc)
        if rec.get("event_type") == "fault_start":
            period = {"node": node, "start": when, "end": None, "state": "FAULT",
                      "category": _trace_category(level, klass), "reason": desc,
                      "details": {"level": level, "class": klass}}
            periods.append(period)
            opened[key].append(period)
        elif rec.get("event_type") == "fault_end":
            if opened[key]:
                opened[key].popleft()["end"] = when
        else:
            raise TraceError(f"{where}: event_type must be fault_start or fault_end")
    return periods


def _trace_category(level: str, klass: str) -> str:
    key = (level.lower(), klass.lower())
    if key in TRACE_CATEGORY:
        return TRACE_CATEGORY[key]
    if key[0].startswith("hardware"):
        return "hardware"
    if key[0].startswith("software"):
        return "software"
    return "unknown"
