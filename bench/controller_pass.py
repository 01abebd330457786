"""Bench: one controller pass over 10,000 ended attempts in its queue (a large cluster's bad hour, or a controller
that was down for a while), against a recorded scheduler (tests/fakes.FakeSlurm: 5,000 nodes) and a real ledger
(SQLite file, or PostgreSQL with --url). Every attempt has its epilogs' records in the ledger and its queue file;
a tenth have an XID 79 on one node (node faults: requeued away), six tenths failed on their own (application
faults: not retried), the rest completed. Measured: the pass's time (wall, and the process's CPU time: the one
to compare on a shared machine), and that every attempt got its decision.

    python bench/controller_pass.py [--attempts 10000] [--url postgresql+psycopg://postgres@127.0.0.1:15432/cpass]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.controller import queue
from slurmtools.controller.engine import Controller
from slurmtools.ledger import api, models
from slurmtools.ledger.spool import Event
from slurmtools.slurm.types import ExitStatus
from tests.fakes import FakeSlurm


def build(n: int, url: str | None, tmp: Path) -> tuple[object, FakeSlurm]:
    cfg_file = tmp / "slurmtools.toml"
    cfg_file.write_text(f"""
[general]
cluster = "cpass"
[ledger]
url = "{url or f'sqlite:///{tmp}/ledger.db'}"
spool_dir = "{tmp}/spool"
[safety]
settle = 0.0
max_drain_fraction = 0.5
[exclusions]
data_file = "{tmp}/exclusions.json"
plugin_file = "{tmp}/exclusions.txt"
[controller]
queue_dir = "{tmp}/queue"
submit_dir = "{tmp}/submissions"
evidence_wait = 0.0
""")
    cfg = config.load(cfg_file, env={})
    api.flush(cfg)
    slurm = FakeSlurm(nodes=5000)
    rng = random.Random(1)
    events: list[Event] = []
    now = datetime.now(UTC).timestamp()
    for j in range(n):
        job_id = 100000 + j
        a, b = f"n{2 * (j % 2500) + 1}", f"n{2 * (j % 2500) + 2}"
        kind = rng.random()
        comment = "slurmtools=retry:2"
        if kind < 0.1:
            slurm.add_job(job_id, nodes=(a, b), comment=comment)
            events.append(Event("finding", {"node": b, "job_id": job_id, "restart_count": 0, "source": "kernel",
                                            "kind": "xid", "xid": 79, "category": "hardware", "severity": "critical",
                                            "action": "drain_node", "trust": "kernel",
                                            "message": "GPU has fallen off the bus"}, cluster=cfg.cluster))
            exit_raw = 9
        elif kind < 0.7:
            slurm.add_job(job_id, nodes=(a, b), comment=comment, exit_=ExitStatus(1, 0))
            exit_raw = 256
        else:
            slurm.add_job(job_id, state="COMPLETED", nodes=(a, b), comment=comment, exit_=ExitStatus(0, 0))
            exit_raw = 0
        events += [Event("attempt", {"job_id": job_id, "restart_count": 0, "nodes": f"{a},{b}", "source": "epilog",
                                     "details": {"epilog": {x: {"findings": 0}}}}, cluster=cfg.cluster,
                         key=f"att-{job_id}-{x}") for x in (a, b)]
        queue.enqueue(cfg.controller.queue_dir, {"job_id": job_id, "restart_count": 0, "exit_raw": exit_raw,
                                                        "nodes": f"{a},{b}", "comment": comment, "user": "alice",
                                                        "enqueued": now - 60})
    for i in range(0, len(events), 5000):
        api.record(events[i:i + 5000], cfg)
    api.flush(cfg, wait_lock=True)
    return cfg, slurm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attempts", type=int, default=10000)
    ap.add_argument("--url", help="A PostgreSQL ledger (an empty database); default: an SQLite file.")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cpass-"))
    t = time.monotonic()
    cfg, slurm = build(a.attempts, a.url, tmp)
    setup_s = time.monotonic() - t
    ctl = Controller(cfg, slurm=slurm, rng=random.Random(0), recovery=False)
    t, cpu = time.monotonic(), time.process_time()
    report = ctl.once()
    pass_s, pass_cpu_s = time.monotonic() - t, time.process_time() - cpu
    with Session(api.engine_for(cfg)) as s:
        decided = int(s.scalar(select(func.count()).select_from(models.ControllerDecision)) or 0)
        kinds = Counter(s.scalars(select(models.ControllerDecision.classification)))
    print(json.dumps({"attempts": a.attempts, "backend": api.engine_for(cfg).dialect.name,
                      "setup_s": round(setup_s, 1), "pass_s": round(pass_s, 1),
                      "pass_cpu_s": round(pass_cpu_s, 2), "target_s": 60,
                      "decisions": decided, "by_class": dict(kinds), "errors": len(report["errors"]),
                      "alerts": len(report["alerts"]), "left_in_queue": len(list(Path(tmp / "queue").glob("*.json")))},
                     indent=1))


if __name__ == "__main__":
    main()
