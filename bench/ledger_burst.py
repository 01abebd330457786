"""Bench: a burst of epilog-like events, one per GPU of the 504-GPU study (63 nodes x 8 GPUs), each
node's epilog a concurrent writer that spools its 8 findings as one batch.

Compares the ledger path (spool: write + fsync + rename per batch, then idempotent shipping) with a
plain insert of the same rows by the same writers (one INSERT + COMMIT per event, so each event is
durable on its own, as the spool makes it; and, for reference, one batched transaction per writer).

    python bench/ledger_burst.py --url sqlite:////tmp/bench.db
    python bench/ledger_burst.py --url postgresql+psycopg://postgres@127.0.0.1:15432/bench
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from slurmtools.ledger import db, models, schema
from slurmtools.ledger.ship import flush
from slurmtools.ledger.spool import Event, Spool, make_key

COLUMNS = ("idempotency_key", "cluster", "node", "time", "job_id", "source", "kind", "xid", "category",
           "severity", "action", "trust", "message", "details")


def events_for(writer: int, n: int, run: str) -> list[Event]:
    return [Event("finding", {"node": f"gpu{writer:03d}", "job_id": 7000 + writer, "source": "kernel", "kind": "xid",
                              "xid": 79, "pci": f"0000:{i:02x}:00.0", "gpu": str(i % 8), "category": "hardware",
                              "severity": "critical", "action": "drain_node", "trust": "kernel",
                              "message": f"NVRM: Xid (PCI:0000:{i:02x}:00): 79, GPU has fallen off the bus. w{writer}"},
                  cluster="bench", key=make_key(run, writer, i)) for i in range(n)]


def ledger_writer(url: str, spool_dir: str, writer: int, n: int, run: str) -> None:
    spool = Spool(spool_dir)
    spool.write_many(events_for(writer, n, run))  # as an epilog spools one job's findings
    flush(spool, db.make_engine(url))  # returns at once if another writer is shipping


def raw_writer(url: str, writer: int, n: int, run: str, batched: bool) -> None:
    rows = [(e.key, e.cluster, e.data["node"], e.time, e.data["job_id"], "kernel", "xid", 79, "hardware",
             "critical", "drain_node", "kernel", e.data["message"], "{}") for e in events_for(writer, n, run)]
    placeholders = ", ".join(["%s"] * len(COLUMNS)) if url.startswith("postgresql") else ", ".join("?" * len(COLUMNS))
    sql = f"INSERT INTO findings ({', '.join(COLUMNS)}) VALUES ({placeholders})"
    if url.startswith("postgresql"):
        import psycopg

        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=not batched) as conn:
            if batched:
                with conn.transaction():
                    conn.cursor().executemany(sql, rows)
            else:
                for row in rows:
                    conn.execute(sql, row)
    else:
        import sqlite3

        conn = sqlite3.connect(db.sqlite_path(url), timeout=60, isolation_level=None)  # type: ignore[arg-type]
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        rows = [tuple(r[i].isoformat() if i == 3 else r[i] for i in range(len(r))) for r in rows]
        if batched:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
        else:
            for row in rows:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(sql, row)
                conn.execute("COMMIT")
        conn.close()


def burst(target: Callable[..., None], args_for: Callable[[int], tuple[Any, ...]], writers: int) -> float:
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=target, args=args_for(w)) for w in range(writers)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a writer failed (exit {p.exitcode})")
    return time.perf_counter() - t0


def count(engine: Any) -> int:
    with Session(engine) as s:
        return int(s.scalar(select(func.count()).select_from(models.Finding)) or 0)


def reset(engine: Any) -> None:
    with engine.begin() as conn:
        conn.execute(delete(models.Finding))
        conn.execute(delete(models.Node))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--events", type=int, default=504)
    ap.add_argument("--writers", type=int, default=63, help="63 nodes x 8 GPUs = 504, as in the study")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    per = args.events // args.writers
    total = per * args.writers
    engine = db.make_engine(args.url)
    schema.ensure(engine)
    times: dict[str, list[float]] = {"ledger": [], "raw_per_event": [], "raw_batched": []}
    lost = 0
    for rep in range(args.repeat):
        for name in times:
            reset(engine)
            engine.dispose()
            run = f"{name}-{rep}-{time.time_ns()}"
            if name == "ledger":
                spool_dir = tempfile.mkdtemp(prefix="bench-spool-")
                t0 = time.perf_counter()
                burst(ledger_writer, lambda w, s=spool_dir, r=run: (args.url, s, w, per, r), args.writers)
                flush(Spool(spool_dir), engine, wait_lock=True)  # whatever a late writer left
                elapsed = time.perf_counter() - t0
                shutil.rmtree(spool_dir)
            else:
                elapsed = burst(raw_writer, lambda w, r=run, b=(name == "raw_batched"): (args.url, w, per, r, b),
                                args.writers)
            got = count(engine)
            if got != total:
                lost += abs(total - got)
            times[name].append(elapsed)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {"url": engine.url.render_as_string(hide_password=True), "events": total, "writers": args.writers,
              "repeat": args.repeat, "median_s": med,
              "events_per_s": {k: total / v for k, v in med.items()},
              "ledger_vs_raw_per_event": med["raw_per_event"] / med["ledger"],
              "ledger_vs_raw_batched": med["raw_batched"] / med["ledger"], "lost": lost,
              "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['url']}: {total} events, {args.writers} writers, median of {args.repeat}")
        for k, v in med.items():
            print(f"  {k:<14} {v * 1000:8.1f} ms  {total / v:8.0f} events/s")
        print(f"  ledger speed / raw per-event insert: {result['ledger_vs_raw_per_event']:.2f}; "
              f"/ raw batched: {result['ledger_vs_raw_batched']:.2f}; lost: {lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
