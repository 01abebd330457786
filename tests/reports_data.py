"""Ledger contents with known report figures (worked out by hand in test_reports.py), and the independent
computation of the InfiniteHBD trace's figures, in plain Python over the trace file."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict, deque
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from slurmtools.ledger import models, schema, ship
from slurmtools.ledger.spool import Event, make_key

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
CLUSTER = "rep"
TRACE = Path(__file__).parent / "data" / "traces" / "infinitehbd_fault_trace.json"


def _t(delta: timedelta | float) -> datetime:
    return T0 + (delta if isinstance(delta, timedelta) else timedelta(seconds=delta))


def _ev(etype: str, when: datetime, **data: Any) -> Event:
    return Event(etype, data, cluster=CLUSTER, time=when,
                 key=make_key("t", etype, when.isoformat(), sorted(data.items())))


def finding(node: str, when: datetime, *, kind: str = "xid", xid: int | None = 79, category: str = "hardware",
            severity: str = "critical", trust: str = "kernel", job_id: int | None = None,
            restart_count: int | None = None) -> Event:
    return _ev("finding", when, node=node, time=when.isoformat(), job_id=job_id, restart_count=restart_count,
               source="kernel", kind=kind, xid=xid, category=category, severity=severity, action="drain_node",
               trust=trust, message=f"{kind} on {node}")


def exclusion(node: str, start: datetime, end: datetime | None, reason: str, source: str,
              outcome: str | None = None) -> Event:
    return _ev("exclusion", start, node=node, scope="drain", reason=reason, source=source, start=start.isoformat(),
               end=end.isoformat() if end else None, outcome=outcome, expires=None)


def drain(node: str, when: datetime, actor: str, applied: bool) -> Event:
    return _ev("node_state", when, node=node, action="drain", actor=actor, reason=f"slurmtools: x: {node}",
               applied=applied, time=when.isoformat())


def node_event(node: str, start: datetime, end: datetime | None, reason: str) -> Event:
    return _ev("node_event", start, node=node, start=start.isoformat(), end=end.isoformat() if end else None,
               state="FAULT", category="hardware", reason=reason, source="trace:test")


def attempt(job: int, restart: int, sub: datetime, start: datetime, end: datetime, state: str, nodes: str,
            user: str = "alice", name: str = "pretrain") -> Event:
    return _ev("attempt", end, job_id=job, restart_count=restart, submit_time=sub.isoformat(),
               start_time=start.isoformat(), end_time=end.isoformat(), state=state, nodes=nodes, user=user,
               name=name, partition="gpu", source="sacct")


def checkpoint(node: str, job: int, start: datetime, seconds: float | None, *, kind: str = "save",
               source: str = "marks", gbps: float | None = None, queue: float | None = None,
               rtt: float | None = None, nominal: float = 250.0) -> Event:
    nbytes = int(gbps * 1e9 * seconds) if gbps is not None and seconds else None
    return _ev("checkpoint", start, node=node, job_id=job, restart_count=0, kind=kind, time=start.isoformat(),
               seconds=seconds, source=source, nbytes=nbytes, bytes_source="mountstats" if nbytes else None,
               gbytes_per_s=gbps, utilisation=gbps / nominal if gbps is not None else None,
               mountpoint="/ckpt" if source == "marks" else None, rpcs=1000 if queue is not None else None,
               queue_ms_per_op=queue, rtt_ms_per_op=rtt, details={})


def checkpoint_events() -> list[Event]:
    """Job 500 saves on 2 nodes at once (0.5 ms queued, 2 ms round trip per WRITE, 2 GB/s each), job 510 on 8
    nodes at once (6 ms queued, 2.5 ms round trip, 0.8 GB/s each): the study's saturating RPC slots. A load, a
    Megatron save from its log (timed, no bytes) and a Lightning save (untimed) on other days."""
    s1, s2 = _t(6 * DAY + timedelta(hours=2)), _t(6 * DAY + timedelta(hours=5))
    return [
        *(checkpoint(f"a{i}", 500, s1 + timedelta(seconds=i), 10.0, gbps=2.0, queue=0.5, rtt=2.0) for i in (1, 2)),
        *(checkpoint(f"a{i}", 510, s2 + timedelta(seconds=i), 30.0 + i, gbps=0.8, queue=6.0, rtt=2.5)
          for i in range(1, 9)),
        checkpoint("a1", 510, s2 - timedelta(minutes=10), 20.0, kind="load", gbps=5.0, nominal=700.0),
        checkpoint("a9", 520, _t(8 * DAY), 21.03, source="megatron"),
        checkpoint("a9", 530, _t(8 * DAY + timedelta(hours=1)), None, source="lightning"),
    ]


def scenario_events() -> list[Event]:
    d1, d6 = _t(DAY), _t(6 * DAY)
    hw = "slurmtools: hardware: XID 79 GPU fell off the bus [job 1]"
    ev = [
        # a1, incident 1: an XID 79, three follow-on lines, the epilog's drain, a lemon exclusion on top
        finding("a1", d1), *(finding("a1", d1 + timedelta(seconds=5 + i)) for i in range(3)),
        drain("a1", d1 + timedelta(seconds=2), "epilog", True),
        exclusion("a1", d1 + timedelta(seconds=2), d1 + timedelta(hours=2), hw, "epilog", "confirmed"),
        exclusion("a1", d1 + timedelta(minutes=5), d1 + timedelta(hours=3), "slurmtools: lemon: lemon node: 3 faults",
                  "controller", "expired"),
        # a2: an admin's maintenance exclusion: out of service, not a failure
        exclusion("a2", _t(2 * DAY), _t(2 * DAY + timedelta(hours=1)), "slurmtools: admin: maintenance",
                  "admin:root", "removed"),
        # a3: two overlapping imported fault periods (one incident), then one still open
        node_event("a3", _t(3 * DAY), _t(3 * DAY + timedelta(minutes=30)), "GPU lost"),
        node_event("a3", _t(3 * DAY + timedelta(minutes=20)), _t(3 * DAY + timedelta(minutes=40)), "NIC lost"),
        node_event("a3", _t(8 * DAY), None, "PSU failure"),
        # a4: observe mode: the drain was recorded, not applied (a failure with no repair time)
        finding("a4", _t(4 * DAY - timedelta(seconds=10)), kind="ib", xid=None, category="network", severity="error"),
        drain("a4", _t(4 * DAY), "epilog", False),
        # a5: an automatic hardware drain whose finding is outside the ledger
        exclusion("a5", _t(5 * DAY), _t(5 * DAY + timedelta(hours=1)), "slurmtools: hardware: gpu: lost", "epilog",
                  "confirmed"),
        # a1, incident 2: the prolog gate, refuted later by the deep check
        finding("a1", d6, xid=48),
        drain("a1", d6 + timedelta(seconds=1), "prolog", True),
        exclusion("a1", d6 + timedelta(seconds=1), d6 + timedelta(hours=1, seconds=0), "slurmtools: hardware: gpu",
                  "prolog", "refuted"),
        # a job's own NCCL complaint: trust job, never an incident's cause
        finding("a6", _t(9 * DAY), kind="nccl", xid=None, category="network", severity="error", trust="job"),
    ]
    c = _t(7 * DAY)
    ev += [  # chain 1 (job 100): a node failure, then the retry completes; chain 2 (job 300) fails once
        attempt(100, 0, c, c + timedelta(seconds=60), c + timedelta(seconds=3660), "NODE_FAIL", "a[6-7]"),
        attempt(100, 1, c + timedelta(seconds=3700), c + timedelta(seconds=3720), c + timedelta(seconds=7320),
                "COMPLETED", "a[8-9]"),
        attempt(300, 0, c + timedelta(minutes=10), c + timedelta(minutes=11), c + timedelta(minutes=20), "FAILED",
                "a10"),
    ]
    m = _t(5 * DAY)
    ev += [  # manual: bob resubmits "train" 600 s after it failed; "eval" fails and is left alone
        attempt(200, 0, m, m + timedelta(seconds=10), m + timedelta(seconds=1000), "FAILED", "a8", "bob", "train"),
        attempt(201, 0, m + timedelta(seconds=1600), m + timedelta(seconds=1660), m + timedelta(seconds=5000),
                "COMPLETED", "a8", "bob", "train"),
        attempt(210, 0, m, m + timedelta(seconds=5), m + timedelta(seconds=50), "FAILED", "a9", "bob", "eval"),
    ]
    return ev


def fill(engine: Engine) -> None:
    """The scenario into ENGINE's ledger: events through the shipper, chains and decisions as the controller
    writes them."""
    schema.upgrade(engine)
    with engine.begin() as conn:
        ship.store(conn, scenario_events() + checkpoint_events())
    c = _t(7 * DAY)
    with Session(engine) as s:
        ch1 = models.RetryChain(idempotency_key="c1", cluster=CLUSTER, root_job_id=100, user="alice", created=c,
                                max_retries=2, status="completed", retries_used=1)
        ch2 = models.RetryChain(idempotency_key="c2", cluster=CLUSTER, root_job_id=300, user="alice",
                                created=c + timedelta(minutes=10), max_retries=0, status="failed")
        s.add_all([ch1, ch2])
        s.flush()
        end = c + timedelta(seconds=3660)
        s.add(models.ControllerDecision(
            idempotency_key="d1", cluster=CLUSTER, job_id=100, restart_count=0, chain_id=ch1.id,
            classification="node_fault", decision="retry", reason="test", status="done", t_ended=end,
            t_detected=end + timedelta(seconds=1), t_decided=end + timedelta(seconds=2),
            t_requeued=end + timedelta(seconds=3), t_released=end + timedelta(seconds=4),
            t_running=end + timedelta(seconds=60)))
        s.commit()


# ------------------------------------------------------------------- the trace, computed independently
def trace_figures(nodes: int = 400, gap_s: float = 600.0) -> dict[str, Any]:
    """Node-fault MTTR median, incident concentration and per-node MTBF of the InfiniteHBD trace, straight
    from the file: fault_start/fault_end paired per node and fault type (first in, first out), periods of a
    node merged when they overlap or lie within GAP_S seconds, MTBF = (nodes x span - time out of service) /
    incidents over [trace start, last event]."""
    base = datetime(2024, 3, 30, tzinfo=UTC).timestamp()
    events = json.loads(TRACE.read_text())
    events.sort(key=lambda r: (r["event_time"], r["event_type"] != "fault_end"))
    opened: dict[tuple[str, str, str, str], deque[list[float | None]]] = defaultdict(deque)
    periods: dict[str, list[list[float | None]]] = defaultdict(list)
    for r in events:
        ft = r["fault_type"]
        key = (r["node_id"], ft["Level"], ft["Class"], ft["Desc"])
        t = base + r["event_time"] * 86400.0
        if r["event_type"] == "fault_start":
            p: list[float | None] = [t, None]
            periods[r["node_id"]].append(p)
            opened[key].append(p)
        elif opened[key]:
            opened[key].popleft()[1] = t
    until = base + math.ceil(max(r["event_time"] for r in events)) * 86400.0
    incidents: list[tuple[str, float, float, bool]] = []
    for node, ps in periods.items():
        spans = sorted((s, until if e is None else e, e is None) for s, e in ps)  # type: ignore[misc]
        cur = list(spans[0])
        for s, e, op in spans[1:]:
            if s <= cur[1] + gap_s:
                cur[1], cur[2] = max(cur[1], e), cur[2] or op
            else:
                incidents.append((node, cur[0], cur[1], cur[2]))
                cur = [s, e, op]
        incidents.append((node, cur[0], cur[1], cur[2]))
    repairs = [e - s for _, s, e, op in incidents if not op]
    per_node = sorted((sum(1 for i in incidents if i[0] == n) for n in periods), reverse=True)
    total = len(incidents)
    down_h = sum(min(e, until) - s for _, s, e, _ in incidents) / 3600.0
    span_h = (until - base) / 3600.0
    return {"until": datetime.fromtimestamp(until, UTC), "incidents": total, "open": sum(1 for i in incidents if i[3]),
            "mttr_median_s": statistics.median(repairs),
            "top10pct_share": sum(per_node[:math.ceil(nodes * 0.10)]) / total,
            "top5pct_share": sum(per_node[:math.ceil(nodes * 0.05)]) / total,
            "mtbf_node_hours": (nodes * span_h - down_h) / total}
