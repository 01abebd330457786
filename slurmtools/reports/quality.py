"""Detection quality (section 7): drains later confirmed or refuted by the return-to-service deep check (our
own false-positive rate), faults caught by the prolog gate before a job started against those found by the
epilog after it failed, and how long the controller took to notice, decide and act."""

from __future__ import annotations

from typing import Any, SupportsFloat

from slurmtools.reports.scope import Scope, Sql, ratio

#: Which actor caught a fault before a job ran on the node, and which after.
BEFORE = ("prolog", "healthcheck")
AFTER = ("epilog",)


def quality(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    out = sql.one("""
        SELECT SUM(CASE WHEN outcome = 'confirmed' THEN 1 ELSE 0 END) AS confirmed,
               SUM(CASE WHEN outcome = 'refuted' THEN 1 ELSE 0 END) AS refuted,
               SUM(CASE WHEN outcome = 'expired' THEN 1 ELSE 0 END) AS expired,
               SUM(CASE WHEN outcome = 'removed' THEN 1 ELSE 0 END) AS removed
        FROM exclusions WHERE cluster = :cluster AND source NOT LIKE 'admin:%' AND "end" >= :t0 AND "end" < :t1""",
                  params)
    confirmed, refuted = int(out.get("confirmed") or 0), int(out.get("refuted") or 0)
    drains = sql.rows("""
        SELECT actor, COUNT(*) AS n, SUM(CASE WHEN applied THEN 1 ELSE 0 END) AS applied
        FROM node_state_changes WHERE cluster = :cluster AND action = 'drain' AND time >= :t0 AND time < :t1
        GROUP BY actor ORDER BY actor""", params)
    by_actor = {r["actor"]: {"drains": int(r["n"]), "applied": int(r["applied"] or 0)} for r in drains}
    before = sum(v["drains"] for k, v in by_actor.items() if k in BEFORE)
    after = sum(v["drains"] for k, v in by_actor.items() if k in AFTER)
    ep = sql.epoch
    base = """FROM controller_decisions WHERE cluster = :cluster AND t_ended >= :t0 AND t_ended < :t1"""
    cols = {"detect": "t_detected", "decide": "t_decided", "requeue": "t_requeued", "release": "t_released",
            "running": "t_running"}
    # one pass over the decisions for the five delays (a delay is NULL where its time is: left out of its figures)
    many = sql.stats_many({name: f"{ep(col)} - {ep('t_ended')}" for name, col in cols.items()}, base, params)
    timing = {name: {"n": st["n"], "median_s": _r(st["median"]), "p90_s": _r(st["p90"]), "max_s": _r(st["max"])}
              for name, st in many.items()}
    decisions = sql.rows(f"SELECT classification, decision, COUNT(*) AS n {base} GROUP BY classification, decision "
                         "ORDER BY classification, decision", params)
    return {
        "confirmed": confirmed, "refuted": refuted, "expired": int(out.get("expired") or 0),
        "removed": int(out.get("removed") or 0),
        "false_positive_rate": _r(ratio(refuted, confirmed + refuted), 4),
        "drains_by_actor": by_actor, "caught_before_job": before, "found_after_job": after,
        "caught_before_share": _r(ratio(before, before + after), 4),
        "time_from_job_end_s": timing,
        "decisions": [{"classification": r["classification"], "decision": r["decision"], "count": int(r["n"])}
                      for r in decisions],
    }


def _r(value: SupportsFloat | None, digits: int = 1) -> Any:
    return None if value is None else round(float(value), digits)
