"""Stalls (section 9): running jobs the stall detector found hung (docs/stalls.md): how many, what was done, the
GPU-hours they held between their last progress and the action (the requeue; the detection where nothing was
done), the time to detect (last progress to the finding), and their suspects' deep checks (confirmed: a check
failed; refuted: it passed). One row per stalled attempt (its `stall` finding); at most MAX_ROWS are read."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from slurmtools.reports.scope import Sql

MAX_ROWS = 20000


def _details(value: object) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _epoch(value: datetime | str | None) -> float | None:
    from slurmtools.reports.scope import column_time

    return None if value is None else column_time(value).timestamp()


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def stalls(sql: Sql, params: dict[str, Any]) -> dict[str, Any]:
    found = sql.rows(f"""SELECT f.job_id, f.restart_count, f.node, f.time, f.details FROM findings f
                         WHERE f.cluster = :cluster AND f.kind = 'stall' AND f.time >= :t0 AND f.time < :t1
                         ORDER BY f.time, f.id LIMIT {MAX_ROWS}""", params)
    decisions = {(int(r["job_id"]), int(r["restart_count"])): r for r in sql.rows(
        """SELECT d.job_id, d.restart_count, d.decision, d.status, d.t_requeued, d.t_decided
           FROM controller_decisions d WHERE d.cluster = :cluster AND d.classification = 'stall'
           AND d.t_decided >= :t0""", params)}
    checks = sql.rows("""SELECT n.node, n.details FROM node_state_changes n WHERE n.cluster = :cluster
                         AND n.action = 'deep_check' AND n.actor = 'stalls' AND n.time >= :t0 AND n.time < :t1""",
                      params)
    gpn = int(params.get("gpn") or 8)
    outcomes: dict[str, int] = {}
    lost: list[float] = []
    detect: list[float] = []
    worst: list[dict[str, Any]] = []
    for f in found:
        det = _details(f["details"])
        verdict = det.get("verdict") or {}
        d = decisions.get((int(f["job_id"]), int(f["restart_count"] or 0)))
        what = "observed" if d is None else ("requeued" if d["decision"] == "retry" else "gave_up")
        outcomes[what] = outcomes.get(what, 0) + 1
        found_at = _epoch(f["time"]) or 0.0
        quiet = float(verdict.get("quiet_s") or 0.0)
        last = found_at - quiet
        acted = _epoch(d["t_requeued"] or d["t_decided"]) if d is not None else None
        end = acted if acted is not None else found_at
        gpus = len(verdict.get("nodes") or []) * gpn
        hours = max(0.0, end - last) * gpus / 3600.0
        lost.append(hours)
        detect.append(quiet)
        worst.append({"job_id": int(f["job_id"]), "restart_count": int(f["restart_count"] or 0),
                      "suspect": f["node"], "outcome": what, "gpus": gpus, "gpu_hours_lost": round(hours, 2),
                      "time_to_detect_s": round(quiet, 1)})
    verdicts = [(_details(c["details"]).get("verdict"), c["node"]) for c in checks]
    worst.sort(key=lambda w: -w["gpu_hours_lost"])
    return {"stalls": len(found), "by_outcome": dict(sorted(outcomes.items())),
            "with_suspect": sum(1 for f in found if f["node"]),
            "gpu_hours_lost": round(sum(lost), 2), "time_to_detect_median_s": _median(detect),
            "suspects_checked": len(verdicts), "suspects_confirmed": sum(1 for v, _ in verdicts if v == "fail"),
            "suspects_refuted": sum(1 for v, _ in verdicts if v == "ok"), "worst": worst[:10]}


def is_empty(s: dict[str, Any]) -> bool:
    return bool(s["stalls"] == 0 and s["suspects_checked"] == 0)
