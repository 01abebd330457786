"""Retry chains (sections 4 and 6): goodput / ETTR per chain with where the rest of the wall time went, and
automatic retries (the controller's chains) against manual ones (a user resubmitting the same job by hand).

A chain's jobs are its root job and every job id that continued it (`chain_jobs`); its attempts are those
jobs' attempts with start and end times (`ledger import-sacct` fills them in). Only chains that are over
(status completed, failed or ended) are measured; active ones are counted. `prepare` computes the chains'
attempts once per report, into temporary tables the sections read."""

from __future__ import annotations

from typing import Any, SupportsFloat

from slurmtools.ledger import derived
from slurmtools.reports.scope import Scope, Sql, iso, ratio

FAILED_STATES = "(" + ", ".join(f"'{s}'" for s in derived.FAILED_STATES) + ")"


def _attempts(sql: Sql, scope: Scope) -> str:
    """Every measured attempt of every chain created in the window, numbered within its chain from the first and
    from the last (one order: the count less the number), with the start of the chain's next attempt and the
    chain's size in nodes (the what-if's), all from one sort."""
    ep = sql.epoch
    part = " AND a.partition = :partition" if scope.partition else ""
    return f"""
        WITH att AS (SELECT jobs.chain_id, a.job_id, a.restart_count, a.state, a.node_count, a.nodes,
                            {ep('a.start_time')} AS s,
                            {ep('a.end_time')} AS e, {ep('jobs.created')} AS created_e,
                            {ep('a.submit_time')} AS sub
                     FROM st_chain_jobs jobs JOIN job_attempts a ON a.cluster = :cluster AND a.job_id = jobs.job_id
                     WHERE a.start_time IS NOT NULL AND a.end_time IS NOT NULL AND a.end_time >= a.start_time
                       AND a.start_time >= {sql.shift('jobs.created', '-3600')}{part})
        SELECT att.*, LAG(e) OVER w AS prev_e,
               COUNT(*) OVER (PARTITION BY chain_id) - ROW_NUMBER() OVER w + 1 AS from_last,
               ROW_NUMBER() OVER w AS nth,
               LEAD(s) OVER w AS next_s, MAX(COALESCE(node_count, 1)) OVER (PARTITION BY chain_id) AS size
        FROM att WINDOW w AS (PARTITION BY chain_id ORDER BY s, job_id, restart_count)"""


def prepare(sql: Sql, scope: Scope, params: dict[str, Any]) -> None:
    """Create the temporary tables st_chain_attempts (every measured attempt of every chain in the window) and
    st_chains (one row per chain that is over, with its buckets), read by goodput, retries and the timeline."""
    # the chains' jobs first, with their statistics: the planner then probes the attempts' (cluster, job_id) index
    # per job instead of hashing every attempt of the ledger (1M rows spilling to disk on the bench)
    sql.temp("st_chain_jobs", """
        WITH ch AS (SELECT c.id, c.root_job_id, c.created FROM retry_chains c
                    WHERE c.cluster = :cluster AND c.created >= :t0 AND c.created < :t1)
        SELECT ch.id AS chain_id, ch.root_job_id AS job_id, ch.created FROM ch
        UNION SELECT j.chain_id, j.job_id, ch.created FROM chain_jobs j JOIN ch ON ch.id = j.chain_id
        WHERE j.cluster = :cluster""", params, analyze=True)
    jobs = int(sql.one("SELECT COUNT(*) AS n FROM st_chain_jobs", {}).get("n") or 0)
    with sql.probing("job_attempts", jobs):   # few chain jobs: their attempts by index (0.43 s against 0.59 s on
        sql.temp("st_chain_attempts", _attempts(sql, scope), params)   # the bench) rather than hashing all
    sql.temp("st_chains", f"""
                SELECT p.*, last_end - first_submit AS wall,
                       CASE WHEN first_start > first_submit THEN first_start - first_submit ELSE 0 END AS queue
                FROM ({_per_chain()}) p""", params)


def _per_chain() -> str:
    return """
        SELECT t.chain_id, c.status, c.root_job_id, COUNT(*) AS attempts,
               LEAST_FIRST AS first_submit, MIN(t.s) AS first_start, MAX(t.e) AS last_end,
               SUM(CASE WHEN t.from_last = 1 AND c.status = 'completed' THEN t.e - t.s ELSE 0 END) AS productive,
               SUM(CASE WHEN t.from_last = 1 AND c.status = 'completed' THEN 0 ELSE t.e - t.s END) AS failed_run,
               SUM(CASE WHEN t.prev_e IS NOT NULL AND t.s > t.prev_e THEN t.s - t.prev_e ELSE 0 END) AS recovery
        FROM st_chain_attempts t JOIN retry_chains c ON c.id = t.chain_id
        WHERE c.status IN ('completed', 'failed', 'ended')
        GROUP BY t.chain_id, c.status, c.root_job_id""".replace(
        "LEAST_FIRST", "MIN(CASE WHEN t.sub IS NOT NULL AND t.sub < t.created_e THEN t.sub ELSE t.created_e END)")


def goodput(sql: Sql, params: dict[str, Any], worst: int = 10) -> dict[str, Any]:
    """Section 4: ETTR = productive run time / wall time per chain, and the buckets of the rest."""
    chains = "SELECT * FROM st_chains"
    tot = sql.one(f"""SELECT COUNT(*) AS n, SUM(wall) AS wall, SUM(productive) AS productive, SUM(failed_run) AS failed,
                             SUM(recovery) AS recovery, SUM(queue) AS queue FROM ({chains}) q WHERE wall > 0""", params)
    active = sql.one("""SELECT COUNT(*) AS n FROM retry_chains WHERE cluster = :cluster AND created >= :t0
                        AND created < :t1 AND status = 'active'""", params)
    st = sql.stats(f"SELECT productive / wall AS v FROM ({chains}) q WHERE wall > 0", params)
    rows = sql.rows(f"""SELECT chain_id, root_job_id, status, attempts, wall, productive, failed_run, recovery, queue,
                               first_submit, last_end, productive / wall AS ettr
                        FROM ({chains}) q WHERE wall > 0 ORDER BY productive / wall, wall DESC, chain_id
                        LIMIT {int(worst)}""", params)
    wall = float(tot.get("wall") or 0.0)

    def share(key: str) -> Any:
        return _r(ratio(float(tot.get(key) or 0.0), wall), 4)

    return {
        "chains": int(tot.get("n") or 0), "active_chains": int(active.get("n") or 0),
        "wall_s": _r(wall, 1), "productive_s": _r(float(tot.get("productive") or 0.0), 1),
        "failed_attempts_s": _r(float(tot.get("failed") or 0.0), 1),
        "recovery_s": _r(float(tot.get("recovery") or 0.0), 1), "queue_s": _r(float(tot.get("queue") or 0.0), 1),
        "ettr": share("productive"), "failed_attempts_share": share("failed"), "recovery_share": share("recovery"),
        "queue_share": share("queue"),
        "ettr_per_chain": {k: _r(st[k], 4) for k in ("n", "mean", "median", "p25", "p75", "min")},
        "worst": [{"chain_id": int(r["chain_id"]), "root_job_id": int(r["root_job_id"]), "status": r["status"],
                   "attempts": int(r["attempts"]), "wall_s": _r(r["wall"], 1), "productive_s": _r(r["productive"], 1),
                   "failed_attempts_s": _r(r["failed_run"], 1), "recovery_s": _r(r["recovery"], 1),
                   "queue_s": _r(r["queue"], 1), "ettr": _r(r["ettr"], 4), "first_submit": iso(r["first_submit"]),
                   "last_end": iso(r["last_end"])} for r in rows],
    }


def timeline(sql: Sql, params: dict[str, Any], chain_ids: list[int]) -> list[dict[str, Any]]:
    """The attempts of a few chains (the HTML timeline)."""
    if not chain_ids:
        return []
    ids = ", ".join(str(int(i)) for i in chain_ids)
    rows = sql.rows(f"SELECT * FROM st_chain_attempts t WHERE t.chain_id IN ({ids}) ORDER BY chain_id, nth", params)
    return [{"chain_id": int(r["chain_id"]), "job_id": int(r["job_id"]), "restart_count": int(r["restart_count"]),
             "state": r["state"], "start": iso(r["s"]), "end": iso(r["e"]), "s": round(float(r["s"]), 1),
             "e": round(float(r["e"]), 1)} for r in rows]


def _manual(sql: Sql, scope: Scope) -> str:
    """Jobs outside any retry chain, by (user, name), linked when a job follows a failed one within the window.

    Only (user, name) groups with a failed job can hold a link, so only they are ordered (about a fifth of the
    jobs on the bench's ledger): the ledger flags their attempts as it stores them (`name_failed`, ledger/derived.py:
    a name with a failure at any time, a superset of those with one in the window, which changes nothing since a
    group without a failed job links nothing). Two ordered passes instead of five: the first keeps each
    submission's last attempt (no later restart of the same job follows it), the second finds, with LAG and LEAD,
    the jobs that link to the one before or are linked to by the one after; only those (a few per cent) are
    numbered into chains. A job that neither links nor is linked to is a chain of one, which the report leaves
    out anyway."""
    ep = sql.epoch
    part = " AND a.partition = :partition" if scope.partition else ""
    failed = FAILED_STATES
    user, a_user = '"user"', 'a."user"'
    un = f"{sql.bytewise(user)}, {sql.bytewise('name')}"
    aun = f"{sql.bytewise(a_user)}, {sql.bytewise('a.name')}"
    return f"""
        WITH members AS (SELECT root_job_id AS job_id FROM retry_chains WHERE cluster = :cluster
                         UNION SELECT job_id FROM chain_jobs WHERE cluster = :cluster),
             a1 AS (SELECT a."user", a.name, a.job_id, a.state, a.submit_time, a.start_time, a.end_time,
                           LEAD(a.job_id) OVER w AS nx_job, LEAD(a.submit_time) OVER w AS nx_sub
                    FROM job_attempts a
                    WHERE a.cluster = :cluster AND a.chain_id IS NULL AND a."user" IS NOT NULL AND a.name IS NOT NULL
                      AND a.submit_time >= {sql.shift(':t0', '-:manual')} AND a.submit_time < :t1{part}
                      AND NOT EXISTS (SELECT 1 FROM members m WHERE m.job_id = a.job_id)
                      AND a.name_failed
                    WINDOW w AS (PARTITION BY {aun} ORDER BY a.submit_time, a.job_id, a.restart_count)),
             j AS (SELECT "user", name, job_id, state, submit_time, start_time, end_time
                   FROM a1 WHERE nx_job IS NULL OR nx_job <> job_id OR nx_sub <> submit_time),
             l AS (SELECT j.*, LAG(state) OVER w AS prev_state, LAG(end_time) OVER w AS prev_end,
                          LEAD(submit_time) OVER w AS next_submit
                   FROM j WINDOW w AS (PARTITION BY {un} ORDER BY submit_time, job_id)),
             m AS (SELECT l.*,
                          CASE WHEN prev_state IN {failed} AND prev_end IS NOT NULL AND submit_time >= prev_end
                                    AND submit_time <= {sql.shift('prev_end', ':manual')} THEN 1 ELSE 0 END AS link,
                          CASE WHEN state IN {failed} AND end_time IS NOT NULL AND next_submit IS NOT NULL
                                    AND next_submit >= end_time AND next_submit <= {sql.shift('end_time', ':manual')}
                               THEN 1 ELSE 0 END AS link_next FROM l),
             f AS (SELECT "user", name, job_id, state, link, prev_state, {ep('submit_time')} AS sub,
                          {ep('start_time')} AS s, {ep('end_time')} AS e, {ep('prev_end')} AS prev_e
                   FROM m WHERE link = 1 OR link_next = 1),
             n AS (SELECT f.*, SUM(1 - link) OVER (PARTITION BY {un} ORDER BY sub, job_id
                                                  ROWS UNBOUNDED PRECEDING) AS seq FROM f)
        SELECT n.*, ROW_NUMBER() OVER (PARTITION BY {un}, seq ORDER BY sub DESC, job_id DESC) AS from_last,
               COUNT(*) OVER (PARTITION BY {un}, seq) AS jobs FROM n"""


def automatic(sql: Sql, params: dict[str, Any]) -> dict[str, Any]:
    """Section 6, automatic retries: the controller's chains (st_chain_attempts, `prepare`)."""
    auto_chains = """
        SELECT t.chain_id, COUNT(*) AS attempts, MAX(c.status) AS status
        FROM st_chain_attempts t JOIN retry_chains c ON c.id = t.chain_id
        WHERE c.status IN ('completed', 'failed', 'ended') GROUP BY t.chain_id HAVING COUNT(*) >= 2"""
    auto = sql.one(f"""SELECT COUNT(*) AS n, SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS ok,
                              AVG(attempts) AS mean_attempts, MAX(attempts) AS max_attempts FROM ({auto_chains}) q""",
                   params)
    auto_iv = sql.stats("""SELECT t.s - t.prev_e AS v FROM st_chain_attempts t
                            JOIN retry_chains c ON c.id = t.chain_id
                            WHERE t.prev_e IS NOT NULL AND c.status IN ('completed', 'failed', 'ended')""", params)
    return _block(auto, auto_iv)


def manual(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    """Section 6, manual retries: a user resubmitting the same job by hand. Needs no other temporary table, so a
    report may compute it on a connection of its own (reports/build.py)."""
    sql.temp("st_manual", f"SELECT * FROM ({_manual(sql, scope)}) q WHERE jobs >= 2", params)   # read twice below
    man = "SELECT * FROM st_manual"
    row = sql.one(f"""SELECT COUNT(*) AS n, SUM(CASE WHEN state = 'COMPLETED' THEN 1 ELSE 0 END) AS ok,
                             AVG(jobs) AS mean_attempts, MAX(jobs) AS max_attempts
                      FROM ({man}) q WHERE from_last = 1 AND e IS NOT NULL""", params)
    iv = sql.stats(f"SELECT s - prev_e AS v FROM ({man}) q WHERE link = 1 AND s IS NOT NULL", params)
    return _block(row, iv)


def retries(scope: Scope, auto: dict[str, Any], man: dict[str, Any]) -> dict[str, Any]:
    """Section 6: automatic (`automatic`) vs manual (`manual`) retries."""
    return {"automatic": auto, "manual": man, "manual_window_s": scope.manual_window_s}


def _block(row: dict[str, Any], iv: dict[str, Any]) -> dict[str, Any]:
    n = int(row.get("n") or 0)
    return {"chains": n, "succeeded": int(row.get("ok") or 0), "success_rate": _r(ratio(row.get("ok"), n), 4),
            "mean_attempts": _r(row.get("mean_attempts"), 3),
            "max_attempts": int(row["max_attempts"]) if row.get("max_attempts") is not None else None,
            "retry_interval_s": {"n": iv["n"], "median": _r(iv["median"], 1), "p25": _r(iv["p25"], 1),
                                 "p75": _r(iv["p75"], 1),
                                 "iqr": _r(iv["p75"] - iv["p25"], 1) if iv["n"] else None}}


def _r(value: SupportsFloat | None, digits: int) -> Any:
    return None if value is None else round(float(value), digits)
