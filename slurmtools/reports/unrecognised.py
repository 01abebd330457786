"""Unrecognised messages (section 9): the findings the subsystem fallback made (`details.unrecognised`), a
hardware subsystem's error line that no rule knows, by subsystem: how many, on which nodes, first and last seen,
one example line and the distinct message families (`slurmtools diagnose --suggest-rules` turns those into rule
skeletons)."""

from __future__ import annotations

import json
from typing import Any

from slurmtools.reports.scope import Scope, Sql, iso

#: Findings read for the section at most (the newest are dropped past it; the section says so).
MAX_ROWS = 200_000
#: Nodes and families listed per subsystem at most.
MAX_LISTED = 20


def _details(value: dict[str, Any] | str | bytes | None) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        loaded = json.loads(value) if value else {}
    except (TypeError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def unrecognised(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    rows = sql.rows(f"""
        SELECT node, time, kind, message, details FROM findings
        WHERE cluster = :cluster AND time >= :t0 AND time < :t1 AND severity = 'warning' AND action = 'investigate'
          AND CAST(details AS TEXT) LIKE '%unrecognised%'
        ORDER BY time LIMIT {MAX_ROWS + 1}""", params)
    truncated = len(rows) > MAX_ROWS
    groups: dict[str, dict[str, Any]] = {}
    total = 0
    for row in rows[:MAX_ROWS]:
        details = _details(row["details"])
        if details.get("unrecognised") is not True:
            continue
        count = int(details.get("count") or 1)
        total += count
        name = str(details.get("subsystem") or row["kind"])
        g = groups.get(name)
        if g is None:
            g = groups[name] = {"subsystem": name, "kind": row["kind"], "count": 0, "nodes": set(), "families": {},
                                "first_seen": row["time"], "last_seen": row["time"], "example": row["message"]}
        g["count"] += count
        if row["node"]:
            g["nodes"].add(row["node"])
        family = str(details.get("family") or row["message"])
        g["families"][family] = g["families"].get(family, 0) + count
        g["last_seen"] = row["time"]
    out = []
    for g in sorted(groups.values(), key=lambda g: (-g["count"], g["subsystem"])):
        nodes = sorted(g["nodes"])
        families = sorted(g["families"].items(), key=lambda kv: (-kv[1], kv[0]))
        out.append({"subsystem": g["subsystem"], "kind": g["kind"], "count": g["count"], "nodes": len(nodes),
                    "node_list": nodes[:MAX_LISTED], "first_seen": iso(g["first_seen"]),
                    "last_seen": iso(g["last_seen"]), "example": str(g["example"])[:500],
                    "families": len(families),
                    "top_families": [{"family": f, "count": n} for f, n in families[:MAX_LISTED]]})
    return {"total": total, "subsystems": out, "truncated": truncated}


def is_empty(s: dict[str, Any]) -> bool:
    return bool(s["total"] == 0)
