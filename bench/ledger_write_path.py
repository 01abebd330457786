"""Bench: the ledger's write path for attempts and findings, as the shipper stores them (store.store() in batches
of 100): 3,000 attempts, a tenth of them failed, and 3,000 findings, half of them hardware ones naming an
attempt. It measures what the data the ledger derives as it writes (ledger/derived.py) costs the writers.

    python bench/ledger_write_path.py --url postgresql+psycopg://postgres@127.0.0.1:55999/scratch

The database's public schema is dropped and recreated first: give it a scratch database.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

from sqlalchemy import text

from slurmtools.ledger import db, schema, store
from slurmtools.ledger.spool import Event


def events(n: int) -> list[Event]:
    rng = random.Random(1)
    out = []
    for i in range(n):
        out.append(Event("attempt", {"job_id": i, "restart_count": 0, "user": f"u{rng.randrange(50)}",
                                     "name": f"n{rng.randrange(200)}",
                                     "state": rng.choice(["COMPLETED"] * 9 + ["FAILED"]),
                                     "submit_time": "2026-03-01T00:00:00+00:00", "nodes": "g[0001-0004]",
                                     "source": "sacct"}, cluster="c", key=f"a{i}"))
        out.append(Event("finding", {"node": "g0001", "job_id": rng.randrange(n), "restart_count": 0,
                                     "source": "kernel", "kind": "xid", "xid": 79,
                                     "category": rng.choice(["hardware", "application"]), "severity": "critical",
                                     "action": "drain_node", "trust": "kernel", "message": "x"},
                         cluster="c", key=f"f{i}"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="a scratch PostgreSQL database (its public schema is recreated)")
    ap.add_argument("--n", type=int, default=3000)
    args = ap.parse_args()
    engine = db.make_engine(args.url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    schema.upgrade(engine)
    evs = events(args.n)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    for k in range(0, len(evs), 100):
        with engine.begin() as conn:
            store.store(conn, evs[k:k + 100])
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"events": len(evs), "wall_s": round(time.monotonic() - t0, 2),
                      "client_cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
