"""Bench: the whole `slurmtools report` on a large ledger: 1,000,000 job attempts, 1,000,000 findings and
100,000 node events (plus 50,000 retry chains, 50,000 exclusions, 50,000 drains and 100,000 controller
decisions) over a 5,000-node, 40,000-GPU cluster and 30 days. PostgreSQL is filled with COPY, SQLite with
executemany in one transaction; then the report is built (every section, the HTML charts' series too)
--runs times and the median is printed with each section's share.

    python bench/report_scale.py --url postgresql+psycopg://postgres@127.0.0.1:15432/report_bench
    python bench/report_scale.py --url sqlite:////var/tmp/report_bench.db
    python bench/report_scale.py --url ... --explain     # also EXPLAIN ANALYZE of the incident query (PostgreSQL)
    python bench/report_scale.py --url ... --no-fill --connections 2 --json-out /tmp/r2.json   # sections in parallel

On PostgreSQL running on this machine it also prints the CPU seconds of the report (its backends + this client):
on a shared machine the wall time measures the neighbours too. With --connections N the report runs its sections on
N connections that share one snapshot: the wall time drops, the CPU (all N backends counted) does not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, create_engine, event, text

from slurmtools.ledger import db, models, schema
from slurmtools.reports.build import MAX_CONNECTIONS, build_report
from slurmtools.reports.scope import Scope

CLUSTER = "big"
START = datetime(2026, 10, 1, tzinfo=UTC)
DAYS = 30
NODES = [f"g{i:04d}" for i in range(1, 5001)]
CATEGORIES = ["application"] * 8 + ["hardware"] * 4 + ["network"] * 3 + ["driver"] * 2 + ["filesystem", "unknown"]
STATES = ["COMPLETED"] * 90 + ["FAILED"] * 7 + ["NODE_FAIL"] * 2 + ["TIMEOUT"]


def _t(rng: random.Random) -> datetime:
    return START + timedelta(seconds=rng.uniform(0, DAYS * 86400))


def attempts(rng: random.Random, n: int, chains: int) -> Iterator[tuple[Any, ...]]:
    job = 0
    i = 0
    while i < n:
        job += 1
        restarts = 2 if job <= chains else (2 if rng.random() < 0.03 else 1)
        sub = _t(rng)
        size = rng.choice([1, 1, 1, 2, 4, 8, 16, 64])
        user, name = f"u{rng.randrange(500)}", f"job{rng.randrange(3000)}"
        for r in range(restarts):
            start = sub + timedelta(seconds=rng.expovariate(1 / 600))
            end = start + timedelta(seconds=rng.expovariate(1 / 14400))
            state = ("NODE_FAIL" if r == 0 else "COMPLETED") if job <= chains else (
                rng.choice(STATES) if r == restarts - 1 else "NODE_FAIL")
            first = rng.randrange(len(NODES) - size)
            nodes = f"g[{first + 1:04d}-{first + size:04d}]" if size > 1 else NODES[first]
            yield (f"a{i}", CLUSTER, job, r, sub, start, end, state, 0, 0, nodes, size, user, name, "gpu", "sacct",
                   job if job <= chains else None, "{}")
            sub = end + timedelta(seconds=rng.expovariate(1 / 120))
            i += 1
            if i >= n:
                return


def findings(rng: random.Random, n: int, jobs: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        cat = rng.choice(CATEGORIES)
        xid = rng.choice([79, 48, 94, 13, 31, 43]) if cat in ("hardware", "application") and rng.random() < .5 else None
        sev = rng.choice(["error", "critical"]) if cat != "application" else rng.choice(["warning", "error"])
        yield (f"f{i}", CLUSTER, rng.choice(NODES), _t(rng), rng.randrange(1, jobs), 0, "kernel",
               "xid" if xid else cat[:8], xid, cat, sev, "drain_node" if cat == "hardware" else "none",
               "job" if rng.random() < .1 else "kernel", f"synthetic {cat} line {i}", "{}")


def node_events(rng: random.Random, n: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        start = _t(rng)
        end = None if rng.random() < .01 else start + timedelta(seconds=rng.lognormvariate(8, 1.5))
        yield (f"e{i}", CLUSTER, rng.choice(NODES), start, end, "DOWN", rng.choice(CATEGORIES[8:]),
               "synthetic", "trace:bench", "{}")


def exclusions(rng: random.Random, n: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        start = _t(rng)
        end = None if rng.random() < .02 else start + timedelta(seconds=rng.lognormvariate(9, 1))
        cat = rng.choice(["hardware", "network", "driver", "lemon", "admin"])
        yield (f"x{i}", CLUSTER, rng.choice(NODES), "drain", f"slurmtools: {cat}: synthetic",
               "admin:root" if cat == "admin" else rng.choice(["epilog", "prolog", "controller"]), start, None, end,
               rng.choice(["confirmed", "refuted", "expired", "removed"]) if end else None, "{}")


def drains(rng: random.Random, n: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        yield (f"s{i}", CLUSTER, rng.choice(NODES), _t(rng), "drain", rng.choice(["epilog", "prolog", "controller"]),
               "slurmtools: hardware: synthetic", rng.random() < .9, "{}")


def decisions(rng: random.Random, n: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        end = _t(rng)
        yield (f"d{i}", CLUSTER, i + 1, 0, rng.choice(["node_fault", "app_fault", "success"]),
               rng.choice(["retry", "no_retry"]), "synthetic", "", "done", end, end + timedelta(seconds=1),
               end + timedelta(seconds=2), end + timedelta(seconds=3), end + timedelta(seconds=4), None,
               end + timedelta(seconds=rng.expovariate(1 / 60)), "{}")


TABLES: list[tuple[str, tuple[str, ...]]] = [
    ("job_attempts", ("idempotency_key", "cluster", "job_id", "restart_count", "submit_time", "start_time", "end_time",
                      "state", "exit_code", "exit_signal", "nodes", "node_count", "user", "name", "partition",
                      "source", "chain_id", "details")),
    ("findings", ("idempotency_key", "cluster", "node", "time", "job_id", "restart_count", "source", "kind", "xid",
                  "category", "severity", "action", "trust", "message", "details")),
    ("node_events", ("idempotency_key", "cluster", "node", "start", "end", "state", "category", "reason", "source",
                     "details")),
    ("exclusions", ("idempotency_key", "cluster", "node", "scope", "reason", "source", "start", "expires", "end",
                    "outcome", "details")),
    ("node_state_changes", ("idempotency_key", "cluster", "node", "time", "action", "actor", "reason", "applied",
                            "details")),
    ("controller_decisions", ("idempotency_key", "cluster", "job_id", "restart_count", "classification", "decision",
                              "reason", "excluded_nodes", "status", "t_ended", "t_detected", "t_decided", "t_requeued",
                              "t_released", "t_verified", "t_running", "details")),
]


def fill(engine: Engine, scale: float) -> dict[str, float]:
    rng = random.Random(42)
    n_att, n_find, n_ev = int(1_000_000 * scale), int(1_000_000 * scale), int(100_000 * scale)
    n_chain = int(50_000 * scale)
    sources = {"job_attempts": attempts(rng, n_att, n_chain), "findings": findings(rng, n_find, n_att // 2),
               "node_events": node_events(rng, n_ev), "exclusions": exclusions(rng, int(50_000 * scale)),
               "node_state_changes": drains(rng, int(50_000 * scale)),
               "controller_decisions": decisions(rng, int(100_000 * scale))}
    took: dict[str, float] = {}
    # the raw tables at revision 0007, as an existing ledger holds them; the upgrade below then fills what the
    # ledger keeps as it writes (ledger/derived.py) from them, through migration 0008's own backfill
    from alembic import command

    with engine.begin() as conn:
        command.downgrade(schema.alembic_config(conn), "0007")  # type: ignore[arg-type]
    with engine.begin() as conn:
        for table in ("controller_decisions", "node_state_changes", "exclusions", "node_events", "findings",
                      "job_attempts", "chain_jobs", "retry_chains", "nodes"):
            # TRUNCATE on PostgreSQL: a DELETE of a filled ledger checks findings' foreign key per attempt (minutes)
            conn.execute(text(f"TRUNCATE {table} CASCADE" if engine.dialect.name == "postgresql"
                              else f"DELETE FROM {table}"))
        now = START
        conn.execute(models.Node.__table__.insert(), [{"cluster": CLUSTER, "name": n, "first_seen": now,
                                                       "last_seen": now} for n in NODES])
        conn.execute(models.RetryChain.__table__.insert(), [
            {"id": j, "idempotency_key": f"c{j}", "cluster": CLUSTER, "root_job_id": j, "user": "u1",
             "created": START, "max_retries": 2, "retry_on": "node", "status": "completed", "retries_used": 1,
             "details": {}} for j in range(1, n_chain + 1)])
    for table, cols in TABLES:
        t0 = time.monotonic()
        rows = sources[table]
        if engine.dialect.name == "postgresql":
            raw = engine.raw_connection()
            try:
                cur = raw.cursor()
                quoted = ", ".join(f'"{c}"' for c in cols)
                with cur.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:  # type: ignore[attr-defined]
                    for row in rows:
                        copy.write_row(row)
                raw.commit()
            finally:
                raw.close()
        else:
            marks = ", ".join("?" for _ in cols)
            raw = engine.raw_connection()
            try:
                raw.execute("BEGIN")
                raw.executemany(f"INSERT INTO {table} ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
                                f"VALUES ({marks})", ([_lite(v) for v in r] for r in rows))
                raw.execute("COMMIT")
            finally:
                raw.close()
        took[table] = time.monotonic() - t0
    t0 = time.monotonic()
    schema.upgrade(engine)
    took["upgrade"] = time.monotonic() - t0
    if engine.dialect.name == "postgresql":
        # the migration's UPDATE of the flags leaves a dead copy of a third of job_attempts' rows; compacted, the
        # table is what the ledger's write path gives (the flags written with each row). Then VACUUM ANALYZE: the
        # statistics, and the visibility map that autovacuum keeps for an insert-only table written over weeks
        # (an index-only scan, such as the incidents' probe of ix_findings_infra, reads the table without it)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM FULL job_attempts")
            conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
    return took


def _serial_plans(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.execute("SET max_parallel_workers_per_gather = 0")
    dbapi_conn.commit()


def _lite(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return v


def _backends(engine: Engine, connections: int) -> list[int] | None:
    """The PostgreSQL backends the next report will use: the pool's, after CONNECTIONS of them were opened at once
    (the pool keeps them); None on SQLite."""
    if engine.dialect.name != "postgresql":
        return None
    held = [engine.connect() for _ in range(connections)]
    try:
        return sorted(int(c.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()) for c in held)
    finally:
        for c in held:
            c.close()


def _servers_cpu(pids: list[int] | None) -> float | None:
    """The CPU seconds of the backends PIDS so far; None when one of them is not on this machine (or gone)."""
    if pids is None:
        return None
    each = [_server_cpu(p) for p in pids]
    return None if None in each else sum(c for c in each if c is not None)


def _server_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of process PID so far, from /proc; None when it is not on this machine."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full size (1.0 = 1M attempts)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-fill", action="store_true", help="reuse the data of an earlier run")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--connections", type=int, default=1,
                    help="connections the report may use (PostgreSQL: sections in parallel on one snapshot)")
    ap.add_argument("--json-out", metavar="FILE",
                    help="write the last report's JSON less its timings and generation time (to diff two versions)")
    args = ap.parse_args()
    engine = db.make_engine(args.url)
    if engine.dialect.name == "postgresql":
        # the report's engine keeps as many connections as it may use (make_engine's pool keeps 2 and closes the
        # others after each use), so that cpu_s can read the same backends before and after a report
        engine = create_engine(args.url, pool_pre_ping=True, pool_size=MAX_CONNECTIONS, max_overflow=0)
        # cpu_s counts the report's backends: a parallel plan's workers would spend CPU it does not see (committed:
        # a SET in a transaction that is rolled back is undone)
        event.listen(engine, "connect", _serial_plans)
    schema.upgrade(engine)
    fill_s = {} if args.no_fill else fill(engine, args.scale)
    scope = Scope(CLUSTER, START, START + timedelta(days=DAYS), nodes=len(NODES), gpus_per_node=8)
    times, cpu, last = [], [], {}
    for _ in range(args.runs):
        pids = _backends(engine, args.connections)
        c0, r0, t0 = _servers_cpu(pids), resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        last = build_report(engine, scope, charts=True, connections=args.connections)
        times.append(time.monotonic() - t0)
        r1, c1 = resource.getrusage(resource.RUSAGE_SELF), _servers_cpu(pids)
        if _backends(engine, args.connections) != pids:   # a backend was replaced: its CPU is not all counted
            c1 = None
        client = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        cpu.append(None if c0 is None or c1 is None else c1 - c0 + client)
    out = {"database": engine.dialect.name, "scale": args.scale, "fill_s": {k: round(v, 1) for k, v in fill_s.items()},
           "report_s": {"median": round(statistics.median(times), 2), "runs": [round(t, 2) for t in times]},
           # CPU seconds of the report's PostgreSQL backend and this client: what the report costs, whatever else
           # the machine runs (a shared machine's wall time says as much about the others); null when the
           # server's /proc is not this machine's
           "cpu_s": None if None in cpu else {"median": round(statistics.median(c for c in cpu if c is not None), 2),
                                              "runs": [round(c, 2) for c in cpu if c is not None]},
           "sections_s": last["report"]["timings_s"], "failures": last["failures"]["failures"],
           "attempts_in_mttf": last["mttf"]["attempts"], "chains": last["goodput"]["chains"],
           "manual_chains": last["retries"]["manual"]["chains"],
           "whatif_sizes": len(last.get("whatif", {}).get("sizes", [])),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    print(json.dumps(out, indent=2))
    if args.json_out:
        from slurmtools.textsafe import dumps

        same = {**last, "report": {k: v for k, v in last["report"].items()
                                   if k not in ("seconds", "timings_s", "generated")}}
        with open(args.json_out, "w", encoding="utf-8") as fh:
            fh.write(dumps(same, indent=2) + "\n")
    if args.explain and engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            plan = conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) SELECT COUNT(*) FROM findings f WHERE f.cluster = :c "
                                     "AND f.node = 'g0001' AND f.time >= :t AND f.category IN ('hardware')"),
                                {"c": CLUSTER, "t": START}).scalars().all()
            print("\n".join(plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
