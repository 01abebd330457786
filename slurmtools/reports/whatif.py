"""What-if (section 9): per job size, where the wall time of finished retry chains went (useful work, work lost
since the last checkpoint, recovery, checkpoint overhead) and the goodput had (a) every chain used the advised
checkpoint interval, (b) every recovery taken the configured target time, (c) the top lemon nodes been excluded a
week before their lemon exclusion began. Each figure carries the assumption it rests on (docs/reports.md).

Reads st_chain_attempts (chains.prepare); what it needs from st_failures (incidents.prepare), the top lemon nodes
and the fleet's failure gaps, is read by `inputs` first, which a report may run on another connection."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slurmtools.reports import model
from slurmtools.reports.advice import MIN_GAPS, fleet_shape, mtti_from_rate
from slurmtools.reports.scope import Scope, Sql, iso, ratio

#: Job sizes (nodes, lower bounds).
BUCKETS = (1, 2, 8, 32, 128)
#: Lemon nodes taken for (c): those with a lemon exclusion, most failure incidents first.
TOP_LEMONS = 5
WEEK = 7 * 86400.0

ASSUMES = {
    "today": "finished retry chains only; wall = every attempt's run time + the gaps between attempts (the queue "
             "before the first attempt is left out); an attempt other than a completed chain's last was "
             "interrupted and lost the work since the end of its last recorded save (all of it without one); "
             "checkpoint overhead = the recorded saves' durations",
    "advised": "Daly's model (Weibull gaps of the shape fitted to the fleet's failures, exponential below "
               f"{MIN_GAPS} gaps) at the interval that maximises it, with M from section 2's rate scaled to the "
               "size's mean GPUs, the size's mean save and recovery times (else the cluster's: every recorded save "
               "in the window, every chain's recoveries; R = the save's time when none); a model figure, not a "
               "replay",
    "recovery_at_target": "the same attempts, lost work and saves; each gap between attempts takes "
                          "reports.recovery_target seconds instead",
    "lemons_excluded": "each interrupted attempt on a top lemon node in the week before that node's lemon "
                       "exclusion began would have run undisturbed elsewhere: its lost work and the recovery after "
                       "it are taken out of the wall time; the capacity the excluded nodes gave is not",
}


def _bucket_sql(col: str) -> str:
    return "CASE " + " ".join(f"WHEN {col} >= {b} THEN {b}" for b in reversed(BUCKETS[1:])) + " ELSE 1 END"


def prepare(sql: Sql, params: dict[str, Any]) -> None:
    """st_whatif: one row per attempt of a finished chain, with its chain's size bucket, lost work, recovery,
    checkpoint time and the time the next attempt started."""
    ep = sql.epoch
    sql.temp("st_whatif", f"""
        WITH t AS (   -- the chain's size and its next attempt's start: computed with st_chain_attempts' order
            SELECT t.*, c.status FROM st_chain_attempts t JOIN retry_chains c ON c.id = t.chain_id
            WHERE c.status IN ('completed', 'failed', 'ended')),
        ck AS (
            SELECT t.chain_id, t.job_id, t.restart_count, SUM(k.seconds) AS ckpt, COUNT(*) AS saves,
                   MAX({ep('k.time')} + k.seconds) AS last_end
            FROM t JOIN checkpoint_events k ON k.cluster = :cluster AND k.job_id = t.job_id AND k.kind = 'save'
                                           AND k.seconds IS NOT NULL AND k.seconds >= 0
                                           AND {ep('k.time')} >= t.s AND {ep('k.time')} + k.seconds <= t.e
            GROUP BY t.chain_id, t.job_id, t.restart_count)
        SELECT t.chain_id, t.job_id, t.nodes, t.s, t.e, t.size, {_bucket_sql('t.size')} AS bucket,
               CASE WHEN t.from_last = 1 AND t.status = 'completed' THEN 0 ELSE 1 END AS interrupted,
               CASE WHEN t.from_last = 1 AND t.status = 'completed' THEN 0
                    ELSE t.e - COALESCE(ck.last_end, t.s) END AS lost,
               CASE WHEN t.prev_e IS NOT NULL AND t.s > t.prev_e THEN t.s - t.prev_e ELSE 0 END AS recovery,
               CASE WHEN t.prev_e IS NOT NULL THEN 1 ELSE 0 END AS recovered,
               CASE WHEN t.next_s IS NOT NULL AND t.next_s > t.e THEN t.next_s - t.e ELSE 0 END AS recovery_after,
               COALESCE(ck.ckpt, 0) AS ckpt, COALESCE(ck.saves, 0) AS saves
        FROM t LEFT JOIN ck ON ck.chain_id = t.chain_id AND ck.job_id = t.job_id
                           AND ck.restart_count = t.restart_count""", params)


@dataclass
class Inputs:
    """What section 9 reads from the incidents (st_failures): `inputs` gathers it."""
    #: The top lemon nodes, (node, epoch of its first lemon exclusion in play).
    lemons: list[tuple[str, float]]
    #: The fleet's failure gaps (advice.fleet_shape), or None where no advised figure can need them (no recorded
    #: checkpoint save from an hour before the window on: every figure's save time is then unknown).
    gaps: list[float] | None


def inputs(sql: Sql, params: dict[str, Any]) -> Inputs:
    """Section 9's inputs from the incidents' temporary tables (incidents.prepare) on SQL's connection."""
    saved = sql.one(f"""SELECT 1 AS x FROM checkpoint_events WHERE cluster = :cluster AND kind = 'save'
                        AND seconds IS NOT NULL AND seconds >= 0 AND time >= {sql.shift(':t0', '-3600')} LIMIT 1""",
                    params)
    # a save counts for a chain's attempt (which starts at most an hour before its chain, created in the window)
    # or for the window's saves: none since an hour before the window means no advised figure, so no fitted shape
    return Inputs(_lemons(sql, params), fleet_shape(sql, params) if saved else None)


def whatif(sql: Sql, scope: Scope, params: dict[str, Any], mttf: dict[str, Any], got: Inputs) -> dict[str, Any]:
    """Section 9, from st_chain_attempts on SQL's connection, MTTF (section 2's result: its rate gives M for each
    size) and GOT (`inputs`)."""
    prepare(sql, params)
    rows = sql.rows("""
        SELECT bucket, COUNT(DISTINCT chain_id) AS chains, COUNT(*) AS attempts, SUM(interrupted) AS interruptions,
               SUM(e - s) AS run, SUM(lost) AS lost, SUM(recovery) AS recovery, SUM(recovered) AS recoveries,
               SUM(ckpt) AS ckpt, SUM(saves) AS saves FROM st_whatif GROUP BY bucket ORDER BY bucket""", params)
    sizes = {int(r["bucket"]): float(r["v"]) for r in sql.rows(
        "SELECT bucket, AVG(size) AS v FROM (SELECT DISTINCT chain_id, bucket, size FROM st_whatif) q "
        "GROUP BY bucket", params)}
    target = float(scope.extra.get("recovery_target_s", 60.0))
    lemons = got.lemons
    avoided = _avoided(sql, params, lemons)
    total = {k: sum(float(r[k] or 0) for r in rows) for k in ("ckpt", "saves", "recovery", "recoveries")}
    if not total["saves"]:      # no save inside a chain's attempts: the cluster's recorded saves in the window
        row = sql.one("""SELECT SUM(seconds) AS ckpt, COUNT(*) AS saves FROM checkpoint_events WHERE cluster = :cluster
                         AND kind = 'save' AND seconds IS NOT NULL AND seconds >= 0 AND time >= :t0 AND time < :t1""",
                      params)
        total["ckpt"], total["saves"] = float(row.get("ckpt") or 0), float(row.get("saves") or 0)
    k: list[float] = []        # the fleet's Weibull shape, fitted once, only when an advised figure needs it

    def shape() -> float:
        if not k:
            if got.gaps is None:   # inputs() found no save an advised figure could use
                raise RuntimeError("internal: the what-if needs the failure shape its inputs left out")
            k.append(model.fit_weibull_shape(got.gaps) if got.gaps else 1.0)
        return k[0]

    out = []
    for r in rows:
        b = int(r["bucket"])
        run, lost, rec, ck = (float(r[x] or 0) for x in ("run", "lost", "recovery", "ckpt"))
        wall = run + rec
        useful = max(run - lost - ck, 0.0)
        nxt = next((x for x in BUCKETS if x > b), None)
        size: dict[str, Any] = {"nodes_from": b, "nodes_to": (nxt - 1) if nxt else None, "chains": int(r["chains"]),
                "attempts": int(r["attempts"]), "interruptions": int(r["interruptions"] or 0),
                "mean_nodes": round(sizes.get(b, b), 2), "wall_s": round(wall, 1), "useful_s": round(useful, 1),
                "goodput": _r(ratio(useful, wall)), "lost_work_s": round(lost, 1),
                "lost_work_share": _r(ratio(lost, wall)), "recovery_s": round(rec, 1),
                "recovery_share": _r(ratio(rec, wall)), "checkpoint_s": round(ck, 1),
                "checkpoint_share": _r(ratio(ck, wall))}
        gone_lost, gone_rec, n_av = avoided.get(b, (0.0, 0.0, 0))
        size["recovery_at_target"] = {
            "goodput": _r(ratio(useful, run + int(r["recoveries"] or 0) * target)), "target_s": target}
        size["lemons_excluded"] = {"goodput": _r(ratio(useful, wall - gone_lost - gone_rec)),
                                   "interruptions_avoided": n_av, "lost_work_avoided_s": round(gone_lost, 1),
                                   "recovery_avoided_s": round(gone_rec, 1)}
        size["advised"] = _advised(r, total, sizes.get(b, b) * scope.gpus_per_node, mttf, shape)
        out.append(size)
    return {"sizes": out, "assumes": ASSUMES, "recovery_target_s": target,
            "failure_shape": round(k[0], 3) if k else None,
            "lemons": [{"node": n, "lemon_since": iso(s)} for n, s in lemons]}


def _advised(r: dict[str, Any], total: dict[str, float], gpus: float, mttf: dict[str, Any],
             fitted: Callable[[], float]) -> dict[str, Any]:
    saves, recs = float(r["saves"] or 0), float(r["recoveries"] or 0)
    delta = float(r["ckpt"] or 0) / saves if saves else (total["ckpt"] / total["saves"] if total["saves"] else None)
    if delta is None:
        return {"goodput": None, "why": "no recorded checkpoint saves with a duration"}
    restart = (float(r["recovery"] or 0) / recs if recs else
               (total["recovery"] / total["recoveries"] if total["recoveries"] else delta))
    fig = mtti_from_rate(int(mttf.get("interruptions") or 0), float(mttf.get("gpu_hours") or 0), max(round(gpus), 1))
    if fig is None or fig.value is None:
        return {"goodput": None, "why": f"too few interruptions to project M ({mttf.get('interruptions', 0)} in "
                                        f"section 2; at least {mttf.get('min_interruptions', 3)})"}
    shape = fitted()
    try:
        a = model.advise(max(delta, 1e-3), restart, fig.value, shape=shape)
    except model.ModelError as exc:
        return {"goodput": None, "why": str(exc)}
    return {"goodput": _r(a.goodput), "interval_s": round(a.interval_s, 1), "mtti_s": round(fig.value, 1),
            "checkpoint_cost_s": round(delta, 3), "restart_cost_s": round(restart, 3), "failure_shape": round(shape, 3)}


def _lemons(sql: Sql, params: dict[str, Any]) -> list[tuple[str, float]]:
    """(node, epoch of its first lemon exclusion in play) for the top lemon nodes, most failure incidents first."""
    rows = sql.rows(f"""
        SELECT x.node, MIN({sql.epoch('x.start')}) AS s, MAX(COALESCE(f.n, 0)) AS n
        FROM exclusions x LEFT JOIN (SELECT node, COUNT(*) AS n FROM st_failures GROUP BY node) f ON f.node = x.node
        WHERE x.cluster = :cluster AND substr(x.reason, 1, {len(params['pfx_lemon'])}) = :pfx_lemon
          AND x.start < :t1 AND (x."end" IS NULL OR x."end" >= :t0)
        GROUP BY x.node ORDER BY MAX(COALESCE(f.n, 0)) DESC, x.node LIMIT {TOP_LEMONS}""", params)
    return [(str(r["node"]), float(r["s"])) for r in rows]


def _avoided(sql: Sql, params: dict[str, Any], lemons: list[tuple[str, float]]) -> dict[int, tuple[float, float, int]]:
    """Per bucket: (lost work, recovery after, interruptions) of interrupted attempts on a lemon node in the week
    before its lemon exclusion. The database keeps the attempts that ended in some lemon's week; each is then
    tested against the lemons whose week holds its end, without expanding its hostlist where its form says it
    cannot hold the node (`hostlist_holds`)."""
    if not lemons:
        return {}
    weeks = " OR ".join(f"(e >= :lo{i} AND e < :hi{i})" for i in range(len(lemons)))
    bounds = {k: v for i, (_, s) in enumerate(lemons) for k, v in ((f"lo{i}", s - WEEK), (f"hi{i}", s))}
    out: dict[int, tuple[float, float, int]] = {}
    for r in sql.rows(f"""SELECT bucket, nodes, e, lost, recovery_after FROM st_whatif
                          WHERE interrupted = 1 AND ({weeks}) LIMIT 100000""", {**params, **bounds}):
        e, nodes = float(r["e"]), str(r["nodes"] or "")
        if any(s - WEEK <= e < s and hostlist_holds(nodes, node) for node, s in lemons):
            b = int(r["bucket"])
            lost, rec, n = out.get(b, (0.0, 0.0, 0))
            out[b] = (lost + float(r["lost"] or 0), rec + float(r["recovery_after"] or 0), n + 1)
    return out


#: A hostlist of one bracketed range (`gpu[0001-0064]`): every name it holds is PREFIX + a number in [LOW, HIGH].
_ONE_RANGE = re.compile(r"([^\[\],]*)\[(\d+)-(\d+)\]")


def hostlist_holds(nodes: str, node: str) -> bool:
    """Whether the hostlist NODES holds NODE. A plain name is compared; a one-range hostlist whose prefix or
    range cannot hold NODE is not expanded (the usual case: a multi-node attempt elsewhere); anything else is
    expanded (python-hostlist, through slurm.parse.expand). A hostlist it cannot read holds nothing."""
    from slurmtools.slurm.parse import expand

    text = nodes.strip()
    if "[" not in text and "," not in text:
        return text == node
    m = _ONE_RANGE.fullmatch(text)
    if m is not None:
        prefix, low, high = m.groups()
        rest = node[len(prefix):]
        if not (node.startswith(prefix) and rest.isascii() and rest.isdigit() and int(low) <= int(rest) <= int(high)):
            return False
    try:
        return node in expand(text)
    except Exception:  # noqa: BLE001 - a hostlist the library cannot read: not attributed
        return False


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def is_empty(s: dict[str, Any]) -> bool:
    return not s["sizes"]
