"""Bench: a cluster-wide job killed at once. 5,000 nodes' epilogs end within the same minute, each spooling its
attempt and 8 findings as one batch (the epilog's real write: write + fsync + rename) and asking for a flush,
which returns at once when another process holds the spool's shipping lock: the events reach the database
through the lock's holder in batches, not through 5,000 connections. Measured: from the first epilog's write
until the last event is in the database, and that every event is stored exactly once.

One machine stands in for the cluster: one spool (a node's own spool ships the same way; here one spool takes
every node's batch, the worst case for its lock) and WRITERS processes playing the epilogs as fast as they can.

    python bench/epilog_storm.py --url postgresql+psycopg://postgres@127.0.0.1:15432/storm [--nodes 5000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import secrets
import shutil
import tempfile
import time
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools.ledger import db, models, schema
from slurmtools.ledger.ship import flush
from slurmtools.ledger.spool import Event, Spool, make_key

FINDINGS = 8


def epilog_events(node: int, run: str) -> list[Event]:
    name = f"gpu{node:04d}"
    job = 900000
    att = Event("attempt", {"job_id": job, "restart_count": 0, "nodes": f"gpu[0000-{node:04d}]", "source": "epilog",
                            "state": "FAILED", "details": {"epilog": {name: {"findings": FINDINGS}}}},
                cluster="storm", key=make_key(run, "att", node))
    finds = [Event("finding", {"node": name, "job_id": job, "restart_count": 0, "source": "kernel", "kind": "xid",
                               "xid": 79, "pci": f"0000:{0x18 + 0x10 * g:02x}:00.0", "gpu": str(g),
                               "category": "hardware", "severity": "critical", "action": "drain_node",
                               "trust": "kernel", "message": f"NVRM: Xid (PCI:0000:{0x18 + 0x10 * g:02x}:00): 79, "
                                                             f"GPU has fallen off the bus. ({name})"},
                   cluster="storm", key=make_key(run, "f", node, g)) for g in range(FINDINGS)]
    return [att, *finds]


def writer(url: str, spool_dir: str, nodes: list[int], run: str) -> None:
    spool = Spool(spool_dir)
    engine = db.make_engine(url)
    for n in nodes:
        spool.write_many(epilog_events(n, run))
        flush(spool, engine)                  # the hook's background flush: at once if another holds the lock


def count(engine: Any, model: Any) -> int:
    with Session(engine) as s:
        return int(s.scalar(select(func.count()).select_from(model).where(model.cluster == "storm")) or 0)


def epilogs_merged(engine: Any) -> int:
    """The one attempt of the killed job holds each node's epilog once (the attempt events merge by key)."""
    with Session(engine) as s:
        row = s.scalar(select(models.JobAttempt).where(models.JobAttempt.cluster == "storm"))
        return len((row.details or {}).get("epilog") or {}) if row is not None else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--writers", type=int, default=16)
    a = ap.parse_args()
    engine = db.make_engine(a.url)
    schema.ensure(engine)
    with engine.begin() as conn:                           # a clean slate for the counts
        for m in (models.Finding, models.JobAttempt):
            conn.execute(m.__table__.delete().where(m.__table__.c.cluster == "storm"))
    base = "/var/tmp/slurmtools-bench"             # a spool must sit in a directory only root can write
    os.makedirs(base, mode=0o700, exist_ok=True)
    spool_dir = tempfile.mkdtemp(prefix="storm-spool-", dir=base)
    run = secrets.token_hex(4)
    ctx = mp.get_context("fork")
    share = [list(range(w, a.nodes, a.writers)) for w in range(a.writers)]
    t0 = time.monotonic()
    procs = [ctx.Process(target=writer, args=(a.url, spool_dir, share[w], run)) for w in range(a.writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    written = time.monotonic() - t0
    flush(Spool(spool_dir), engine, wait_lock=True)        # what the last lock holder had not yet shipped
    shipped = time.monotonic() - t0
    findings, attempts = count(engine, models.Finding), count(engine, models.JobAttempt)
    left = Spool(spool_dir).counts()
    shutil.rmtree(spool_dir, ignore_errors=True)
    print(json.dumps({"nodes": a.nodes, "writers": a.writers, "events": a.nodes * (FINDINGS + 1),
                      "all_written_s": round(written, 1), "last_event_in_db_s": round(shipped, 1),
                      "findings_stored": findings, "findings_expected": a.nodes * FINDINGS,
                      "attempt_rows": attempts, "epilogs_in_the_attempt": epilogs_merged(engine),
                      "spool_left": left, "target_s": 60,
                      "backend": engine.dialect.name}, indent=1))


if __name__ == "__main__":
    main()
