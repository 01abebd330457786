"""Checkpoints (section 8): saves and loads the jobs marked or their frameworks printed, their durations, achieved
bandwidth and utilisation of the filesystem's nominal bandwidth, and the study's scale effect: how each save's
wait for an RPC slot (queue time per WRITE) grew with the number of nodes saving at the same moment."""

from __future__ import annotations

from typing import Any, SupportsFloat

from slurmtools.reports.scope import Scope, Sql, ratio

#: Nodes saving at once, grouped (lower bounds): the study saw the client's slots saturate at about 60 nodes.
BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _where(scope: Scope, alias: str = "c") -> str:
    part = (f" AND EXISTS (SELECT 1 FROM job_attempts a WHERE a.cluster = {alias}.cluster AND a.job_id = "
            f"{alias}.job_id AND a.partition = :partition)") if scope.partition else ""
    return f"{alias}.cluster = :cluster AND {alias}.time >= :t0 AND {alias}.time < :t1{part}"


def checkpoints(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    where = _where(scope)
    out: dict[str, Any] = {}
    for kind in ("save", "load"):
        p = {**params, "kind": kind}
        base = f"FROM checkpoint_events c WHERE {where} AND c.kind = :kind"
        row = sql.one(f"""SELECT COUNT(*) AS n, SUM(CASE WHEN c.seconds IS NOT NULL THEN 1 ELSE 0 END) AS timed,
                                 SUM(c.nbytes) AS nbytes, COUNT(DISTINCT c.job_id) AS jobs {base}""", p)
        sources = sql.rows(f"SELECT c.source AS source, COUNT(*) AS n {base} GROUP BY c.source ORDER BY c.source", p)
        out[kind] = {
            "events": int(row.get("n") or 0), "timed": int(row.get("timed") or 0), "jobs": int(row.get("jobs") or 0),
            "bytes": int(row["nbytes"]) if row.get("nbytes") is not None else None,
            "by_source": {r["source"]: int(r["n"]) for r in sources},
            "seconds": _stats(sql, f"SELECT c.seconds AS v {base}", p),
            "gbytes_per_s": _stats(sql, f"SELECT c.gbytes_per_s AS v {base}", p, 3),
            "utilisation": _stats(sql, f"SELECT c.utilisation AS v {base}", p, 4),
        }
    out["scale"] = _scale(sql, scope, params)
    out["slowest"] = [
        {"job_id": int(r["job_id"]), "node": r["node"], "kind": r["kind"], "source": r["source"],
         "seconds": round(float(r["seconds"]), 3), "gbytes_per_s": _r(r["gbytes_per_s"], 3),
         "utilisation": _r(r["utilisation"], 4), "mountpoint": r["mountpoint"]}
        for r in sql.rows(f"""SELECT c.job_id, c.node, c.kind, c.source, c.seconds, c.gbytes_per_s, c.utilisation,
                                     c.mountpoint FROM checkpoint_events c WHERE {where} AND c.seconds IS NOT NULL
                              ORDER BY c.seconds DESC, c.id LIMIT 10""", params)]
    return out


def _scale(sql: Sql, scope: Scope, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Per group of 'nodes saving at once' (distinct nodes whose timed saves overlap this one, itself included):
    the saves' median queue time and RTT per WRITE RPC, the queue's share of the two, and the median GB/s."""
    ep = sql.epoch
    bucket = "CASE " + " ".join(f"WHEN k >= {b} THEN {b}" for b in reversed(BUCKETS[1:])) + " ELSE 1 END"
    sql.temp("st_ckpt_scale", f"""
        SELECT {bucket} AS bucket, q, r, g FROM (
            SELECT c.queue_ms_per_op AS q, c.rtt_ms_per_op AS r, c.gbytes_per_s AS g,
                   (SELECT COUNT(DISTINCT o.node) FROM checkpoint_events o
                    WHERE o.cluster = c.cluster AND o.kind = 'save' AND o.seconds IS NOT NULL
                      AND {ep('o.time')} < {ep('c.time')} + c.seconds
                      AND {ep('o.time')} + o.seconds > {ep('c.time')}) AS k
            FROM checkpoint_events c
            WHERE {_where(scope)} AND c.kind = 'save' AND c.seconds IS NOT NULL
              AND (c.queue_ms_per_op IS NOT NULL OR c.gbytes_per_s IS NOT NULL)) s""", params)
    rows = []
    for b in (int(r["bucket"]) for r in sql.rows("SELECT DISTINCT bucket FROM st_ckpt_scale ORDER BY bucket", {})):
        p = {"b": b}
        q = sql.stats("SELECT q AS v FROM st_ckpt_scale WHERE bucket = :b", p)
        r = sql.stats("SELECT r AS v FROM st_ckpt_scale WHERE bucket = :b", p)
        g = sql.stats("SELECT g AS v FROM st_ckpt_scale WHERE bucket = :b", p)
        n = int(sql.one("SELECT COUNT(*) AS n FROM st_ckpt_scale WHERE bucket = :b", p)["n"])
        nxt = next((x for x in BUCKETS if x > b), None)
        rows.append({"nodes_from": b, "nodes_to": (nxt - 1) if nxt else None, "saves": n,
                     "queue_ms_per_op_median": _r(q["median"], 3), "rtt_ms_per_op_median": _r(r["median"], 3),
                     "queue_share": _r(ratio(q["median"], (q["median"] or 0) + (r["median"] or 0))
                                       if q["median"] is not None and r["median"] is not None else None, 4),
                     "gbytes_per_s_median": _r(g["median"], 3), "with_rpc_times": q["n"]})
    return rows


def _stats(sql: Sql, values_sql: str, params: dict[str, Any], digits: int = 1) -> dict[str, Any]:
    st = sql.stats(values_sql, params)
    return {"n": st["n"], "median": _r(st["median"], digits), "p90": _r(st["p90"], digits),
            "max": _r(st["max"], digits)}


def _r(value: SupportsFloat | None, digits: int = 1) -> Any:
    return None if value is None else round(float(value), digits)


def is_empty(s: dict[str, Any]) -> bool:
    return bool(s["save"]["events"] == 0 and s["load"]["events"] == 0)
