"""Incidents (sections 1, 2, 3, 5): out-of-service periods on one node merged into incidents, which of them
are infrastructure failures and why, MTBF, MTTR, projected MTTF by job size, and how concentrated they are.

An out-of-service period is an exclusion (every drain slurmtools applies opens one), an imported node
fault period (`node_events`), or a drain that observe mode recorded but did not apply (a point in time).
Periods on one node that overlap or lie within `merge_gap_s` of each other are one incident, so one GPU
falling off the bus, its follow-on lines, the drain and a lemon exclusion count once."""

from __future__ import annotations

import math
from typing import Any

from slurmtools.ledger.models import infra_finding_where
from slurmtools.reports.model import poisson_interval
from slurmtools.reports.scope import INFRA, Scope, Sql, iso, ratio

#: The fewest interruptions a projected MTTF is computed from (fewer: only the interval, and a note).
MIN_INTERRUPTIONS = 3
CONFIDENCE = 0.95

CATEGORY_PARAMS = {f"pfx_{c}": c for c in INFRA}


def report_params(scope: Scope, prefix: str) -> dict[str, Any]:
    """The parameters every section's statements take: the scope's, and the drain reasons' prefixes."""
    params = scope.params()
    for key, cat in CATEGORY_PARAMS.items():
        params[key] = f"{prefix} {cat}:"
    params["pfx_lemon"], params["prefix"] = f"{prefix} lemon:", prefix
    return params


def prepare(sql: Sql, scope: Scope, prefix: str) -> dict[str, Any]:
    """Create the temporary tables st_periods, st_incidents and st_failures on this connection. Returns the
    parameters (`report_params`)."""
    params = report_params(scope, prefix)

    def starts(col: str, key: str) -> str:   # a prefix test both dialects plan the same way
        return f"substr({col}, 1, {len(params[key])}) = :{key}"

    cat_case = " ".join(f"WHEN {starts('x.reason', k)} THEN '{c}'" for k, c in CATEGORY_PARAMS.items())
    ep = sql.epoch
    sql.temp("st_periods", f"""
        SELECT x.node AS node, 'exclusion' AS src, x.source AS origin, x.reason AS reason,
               CASE {cat_case} END AS category,
               CASE WHEN x.source NOT LIKE 'admin:%' AND ({' OR '.join(starts('x.reason', k) for k in CATEGORY_PARAMS)})
                    THEN 1 ELSE 0 END AS failure,
               1 AS timed, x.start AS start_t, {ep('x.start')} AS s,
               CASE WHEN x."end" IS NULL THEN :e1 ELSE {ep('x."end"')} END AS e,
               CASE WHEN x."end" IS NULL THEN 1 ELSE 0 END AS open_
        FROM exclusions x
        WHERE x.cluster = :cluster AND x.start < :t1 AND (x."end" IS NULL OR x."end" >= :t0)
        UNION ALL
        SELECT v.node, 'node_event', v.source, v.reason, v.category,
               CASE WHEN v.source LIKE 'trace:%' OR v.category IS NOT NULL OR v.state LIKE 'DOWN%'
                    OR v.state = 'FAULT' OR {starts('v.reason', 'prefix')} THEN 1 ELSE 0 END,
               1, v.start, {ep('v.start')},
               CASE WHEN v."end" IS NULL THEN :e1 ELSE {ep('v."end"')} END,
               CASE WHEN v."end" IS NULL THEN 1 ELSE 0 END
        FROM node_events v
        WHERE v.cluster = :cluster AND v.start < :t1 AND (v."end" IS NULL OR v."end" >= :t0)
        UNION ALL
        SELECT c.node, 'observe', c.actor, c.reason, NULL, 0, 0, c.time, {ep('c.time')}, {ep('c.time')}, 0
        FROM node_state_changes c
        WHERE c.cluster = :cluster AND c.action = 'drain' AND NOT c.applied AND c.time >= :t0 AND c.time < :t1
    """, params)
    sql.temp("st_incidents", f"""
        WITH o AS (
            SELECT p.*, MAX(e) OVER (PARTITION BY node ORDER BY s, e, src, reason
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e
            FROM st_periods p),
        f AS (SELECT o.*, CASE WHEN prev_e IS NULL OR s > prev_e + :gap THEN 1 ELSE 0 END AS brk FROM o),
        g AS (SELECT f.*, SUM(brk) OVER (PARTITION BY node ORDER BY s, e, src, reason ROWS UNBOUNDED PRECEDING) AS inc
              FROM f),
        h AS (SELECT g.*, ROW_NUMBER() OVER (PARTITION BY node, inc
                                             ORDER BY failure DESC, s, src, reason) AS pick FROM g),
        i AS (SELECT node, inc, MIN(s) AS s, MAX(e) AS e, MAX(open_) AS open_, MAX(timed) AS timed,
                     MIN(start_t) AS start_t, COUNT(*) AS periods, MAX(failure) AS failure,
                     MAX(CASE WHEN pick = 1 THEN category END) AS p_category,
                     MAX(CASE WHEN pick = 1 THEN reason END) AS p_reason,
                     MAX(CASE WHEN pick = 1 THEN src END) AS p_src
              FROM h GROUP BY node, inc)
        SELECT i.*, (SELECT fi.id FROM findings fi
                     WHERE fi.cluster = :cluster AND fi.node = i.node
                       AND fi.time >= {sql.shift('i.start_t', '-:lookback')}
                       AND fi.time <= {sql.shift('i.start_t', '60')}
                       AND {infra_finding_where('fi')}
                     ORDER BY fi.time, fi.id LIMIT 1) AS finding_id
        FROM i
    """, params, analyze=("finding_id",))   # st_failures then looks up the few incidents' findings by id
    #   instead of hashing every finding (on the 1M-finding bench: 0.17 s of CPU and 0.03 s for these statistics,
    #   against 0.24 s)
    sql.temp("st_failures", FAILURES, params, analyze=True)
    return params


#: Failure incidents with their cause (computed once per report into st_failures, which INCIDENTS reads).
FAILURES = """
    SELECT i.node, i.s, i.e, i.open_, i.timed, i.periods,
           COALESCE(f.category, i.p_category, 'unknown') AS category,
           COALESCE(f.kind, CASE WHEN i.p_src = 'node_event' THEN i.p_reason END, 'drain') AS kind,
           f.xid AS xid, f.id AS finding_id, i.p_src AS src
    FROM st_incidents i LEFT JOIN findings f ON f.id = i.finding_id
    WHERE (i.finding_id IS NOT NULL OR i.failure = 1)"""
INCIDENTS = "SELECT * FROM st_failures"


def fleet(sql: Sql, scope: Scope) -> dict[str, Any]:
    seen = sql.one("SELECT COUNT(*) AS n FROM nodes WHERE cluster = :cluster", {"cluster": scope.cluster})
    known = int(seen.get("n") or 0)
    nodes = scope.nodes or known
    gpn = scope.gpus_per_node
    return {"nodes": nodes, "nodes_in_ledger": known, "gpus_per_node": int(gpn) if gpn == int(gpn) else gpn,
            "gpus": round(nodes * gpn), "window_h": round(scope.hours, 3),
            "nodes_from": "option" if scope.nodes else "ledger",
            "gpus_per_node_from": scope.extra.get("gpus_per_node_from", "scope")}


def failures(sql: Sql, scope: Scope, params: dict[str, Any], fl: dict[str, Any]) -> dict[str, Any]:
    """Section 1: infrastructure failures, MTBF, and the root-cause table."""
    inwin = f"SELECT * FROM ({INCIDENTS}) q WHERE q.s >= :e0 AND q.s < :e1"
    total = sql.one(f"SELECT COUNT(*) AS n, COUNT(DISTINCT node) AS nodes FROM ({inwin}) t", params)
    down = sql.one("""
        SELECT COALESCE(SUM(CASE WHEN e > :e1 THEN :e1 ELSE e END
                            - CASE WHEN s < :e0 THEN :e0 ELSE s END), 0) AS down_s,
               COUNT(*) AS n
        FROM st_incidents WHERE e > :e0 AND s < :e1 AND timed = 1""", params)
    by = sql.rows(f"""
        SELECT category, kind, xid, COUNT(*) AS n FROM ({inwin}) t
        GROUP BY category, kind, xid ORDER BY COUNT(*) DESC, category, kind, xid""", params)
    cats = sql.rows(f"""SELECT category, COUNT(*) AS n FROM ({inwin}) t GROUP BY category
                        ORDER BY COUNT(*) DESC, category""", params)
    n = int(total.get("n") or 0)
    down_h = float(down.get("down_s") or 0) / 3600.0
    node_h = max(fl["nodes"] * scope.hours - down_h, 0.0)
    return {
        "failures": n, "nodes_with_failures": int(total.get("nodes") or 0),
        "node_hours_in_service": round(node_h, 3), "node_hours_out_of_service": round(down_h, 3),
        "mtbf_gpu_hours": _round(ratio(node_h * scope.gpus_per_node, n)),
        "mtbf_node_hours": _round(ratio(node_h, n)),
        "mtbf_cluster_hours": _round(ratio(scope.hours, n)),
        "by_category": [{"category": r["category"], "count": int(r["n"]), "share": _round(ratio(r["n"], n), 4)}
                        for r in cats],
        "by_cause": [{"category": r["category"], "kind": r["kind"], "xid": r["xid"], "count": int(r["n"]),
                      "share": _round(ratio(r["n"], n), 4)} for r in by],
    }


def over_time(sql: Sql, scope: Scope, params: dict[str, Any], buckets: int = 30) -> dict[str, Any]:
    """Failures per time bucket and category (the HTML chart)."""
    width = max(scope.hours * 3600.0 / buckets, 3600.0)
    rows = sql.rows(f"""
        SELECT {sql.floor('(s - :e0) / :width')} AS b, category, COUNT(*) AS n
        FROM ({INCIDENTS}) q WHERE q.s >= :e0 AND q.s < :e1 GROUP BY {sql.floor('(s - :e0) / :width')}, category
        ORDER BY b, category""", {**params, "width": width})
    return {"bucket_s": width, "start": iso(scope.since),
            "points": [{"bucket": int(r["b"]), "category": r["category"], "count": int(r["n"])} for r in rows]}


#: The MTTR histogram's buckets: (upper bound in seconds, exclusive; None for the last, label).
MTTR_BUCKETS: list[tuple[int | None, str]] = [
    (60, "<1 min"), (600, "1-10 min"), (3600, "10 min-1 h"), (4 * 3600, "1-4 h"), (86400, "4 h-1 d"),
    (3 * 86400, "1-3 d"), (7 * 86400, "3-7 d"), (30 * 86400, "7-30 d"), (None, ">30 d")]


def mttr(sql: Sql, params: dict[str, Any]) -> dict[str, Any]:
    """Section 3: time out of service per failure incident that started in the window."""
    base = f"SELECT * FROM ({INCIDENTS}) q WHERE q.s >= :e0 AND q.s < :e1"
    st = sql.stats(f"SELECT e - s AS v FROM ({base}) t WHERE open_ = 0 AND timed = 1", params)
    counts = sql.one(f"""SELECT SUM(CASE WHEN open_ = 1 THEN 1 ELSE 0 END) AS open_n,
                                SUM(CASE WHEN timed = 0 THEN 1 ELSE 0 END) AS untimed FROM ({base}) t""", params)
    bucket = "CASE " + " ".join(f"WHEN e - s < {edge} THEN {i}" for i, (edge, _) in enumerate(MTTR_BUCKETS[:-1]))
    bucket += f" ELSE {len(MTTR_BUCKETS) - 1} END"
    hist = {int(r["b"]): int(r["n"]) for r in sql.rows(
        f"SELECT {bucket} AS b, COUNT(*) AS n FROM ({base}) t WHERE open_ = 0 AND timed = 1 GROUP BY {bucket}", params)}
    return {"n": st["n"], "open": int(counts.get("open_n") or 0), "no_repair_time": int(counts.get("untimed") or 0),
            **{f"{k}_s": _round(st[k], 1) for k in ("mean", "median", "p90", "min", "max")},
            "histogram": [{"below_s": edge, "label": label, "count": hist.get(i, 0)}
                          for i, (edge, label) in enumerate(MTTR_BUCKETS)]}


def projected(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    """Section 2: interruptions per GPU-hour of multi-node attempts -> projected MTTF by job size."""
    ep = sql.epoch
    part = " AND a.partition = :partition" if scope.partition else ""
    # an attempt an infrastructure fault interrupted (a node_fault decision or an infrastructure finding names it)
    # is flagged by the ledger as it stores those rows (ledger/derived.py): one pass over the attempts, no join
    row = sql.one(f"""
        SELECT COUNT(*) AS n, SUM(h * node_count * :gpn) AS gpu_h, SUM(hit) AS hits FROM (
            SELECT a.node_count, ({ep('a.end_time')} - {ep('a.start_time')}) / 3600.0 AS h,
                   CASE WHEN a.state = 'NODE_FAIL' OR a.interrupted THEN 1 ELSE 0 END AS hit
            FROM job_attempts a
            WHERE a.cluster = :cluster AND a.end_time >= :t0 AND a.end_time < :t1 AND a.start_time IS NOT NULL
              AND a.end_time >= a.start_time AND a.node_count >= :multi{part}) t""", params)
    n, hits = int(row.get("n") or 0), int(row.get("hits") or 0)
    gpu_h = round(float(row.get("gpu_h") or 0.0), 6)
    rate = ratio(hits, gpu_h)
    # the exact (Garwood) interval of the rate; the projection itself only from enough interruptions
    lo, hi = poisson_interval(hits, CONFIDENCE) if gpu_h > 0 else (0.0, math.inf)
    enough = hits >= MIN_INTERRUPTIONS

    def mttf(r: float | None, g: int) -> float | None:
        return _round(1.0 / (r * g), 6) if r and math.isfinite(r) else None

    note = None
    if not n:
        note = "no multi-node attempts with run times"
    elif not enough:
        note = (f"{hits} interruption(s) in {gpu_h:.3g} GPU-hours: too few to project from (at least "
                f"{MIN_INTERRUPTIONS}); only the {CONFIDENCE:.0%} interval is shown")
    return {"attempts": n, "gpu_hours": round(gpu_h, 3), "interruptions": hits,
            "interruptions_per_gpu_hour": None if rate is None else float(f"{rate:.6g}"),
            "min_nodes": scope.multi_node_min, "min_interruptions": MIN_INTERRUPTIONS, "confidence": CONFIDENCE,
            "projected": [{"gpus": g, "mttf_h": mttf(rate, g) if enough else None,
                           "mttf_h_low": mttf(hi / gpu_h, g) if gpu_h > 0 else None,
                           "mttf_h_high": mttf(lo / gpu_h, g) if gpu_h > 0 else None}
                          for g in scope.projected_gpus],
            "note": note}


def concentration(sql: Sql, scope: Scope, params: dict[str, Any], fl: dict[str, Any]) -> dict[str, Any]:
    """Section 5: how concentrated exclusions and failure incidents are on a few nodes."""
    excl = """SELECT node FROM exclusions WHERE cluster = :cluster AND start >= :t0 AND start < :t1"""
    inc = f"SELECT node FROM ({INCIDENTS}) q WHERE q.s >= :e0 AND q.s < :e1"
    out: dict[str, Any] = {"exclusions": _spread(sql, excl, params, fl["nodes"]),
                           "incidents": _spread(sql, inc, params, fl["nodes"])}
    out["lemons"] = [
        {"node": r["node"], "reason": r["reason"], "source": r["source"], "since": iso(r["start"]),
         "expires": iso(r["expires"]), "lemon": bool(r["lemon"])}
        for r in sql.rows("""
            SELECT node, reason, source, start, expires,
                   CASE WHEN {lemon} THEN 1 ELSE 0 END AS lemon
            FROM exclusions WHERE cluster = :cluster AND start < :t1 AND ("end" IS NULL OR "end" > :t1)
            ORDER BY CASE WHEN {lemon} THEN 0 ELSE 1 END, start, node""".format(
                lemon=f"substr(reason, 1, {len(params['pfx_lemon'])}) = :pfx_lemon"), params)]
    return out


def _spread(sql: Sql, rows_sql: str, params: dict[str, Any], fleet_nodes: int) -> dict[str, Any]:
    per = sql.rows(f"SELECT node, COUNT(*) AS k FROM ({rows_sql}) t GROUP BY node ORDER BY COUNT(*) DESC, node",
                   params)
    k_nodes = len(per)
    n = max(fleet_nodes, k_nodes)
    top10, top5 = math.ceil(0.10 * n), math.ceil(0.05 * n)
    row = sql.one(f"""
        WITH c AS (SELECT node, COUNT(*) AS k FROM ({rows_sql}) t GROUP BY node),
             r AS (SELECT k, ROW_NUMBER() OVER (ORDER BY k DESC, node) AS rk,
                         ROW_NUMBER() OVER (ORDER BY k, node) AS ra, COUNT(*) OVER () AS kk FROM c)
        SELECT SUM(k) AS total, SUM(CASE WHEN rk <= 3 THEN k ELSE 0 END) AS top3,
               SUM(CASE WHEN rk <= :top10 THEN k ELSE 0 END) AS top10,
               SUM(CASE WHEN rk <= :top5 THEN k ELSE 0 END) AS top5,
               SUM((:n - kk + ra) * k) AS ranked FROM r""", {**params, "top10": top10, "top5": top5, "n": n})
    total = int(row.get("total") or 0)
    gini = None
    if total and n:
        gini = 2.0 * float(row["ranked"]) / (n * total) - (n + 1.0) / n
    return {"total": total, "nodes": n, "nodes_with_any": k_nodes,
            "top3_share": _round(ratio(row.get("top3"), total), 4),
            "top10pct_nodes": top10, "top10pct_share": _round(ratio(row.get("top10"), total), 4),
            "top5pct_nodes": top5, "top5pct_share": _round(ratio(row.get("top5"), total), 4),
            "gini": _round(gini, 4), "per_node": [{"node": r["node"], "count": int(r["k"])} for r in per[:1000]]}


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)
