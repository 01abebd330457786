"""exclusions.sync against an in-memory Slurm: the grace for unshipped exclusions, expiry, re-drain."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.controller import exclusions
from slurmtools.ledger import api

from .fakes import FakeSlurm

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def drained_by_us(slurm: FakeSlurm, node: str, ago_s: float) -> None:
    slurm.node_list[node] = dataclasses.replace(slurm.node_list[node], flags=("DRAIN",),
                                                reason="slurmtools: hardware: XID 79",
                                                reason_time=NOW - timedelta(seconds=ago_s))


def sync(w: dict[str, Any], now: datetime = NOW) -> list[dict[str, Any]]:
    with Session(api.engine_for(w["cfg"])) as s:
        actions, events = exclusions.sync(w["cfg"], w["slurm"], s, now=now)
    api.record(events, w["cfg"]) if events else None
    api.flush(w["cfg"])
    return actions


def test_a_fresh_drain_without_an_exclusion_waits_for_the_grace(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    drained_by_us(slurm, "n1", ago_s=60)          # its exclusion may still sit in n1's spool
    assert sync(world) == [] and slurm.node_list["n1"].drain
    drained_by_us(slurm, "n2", ago_s=601)         # past exclusions.sync_grace (600 s)
    assert sync(world) == [{"node": "n2", "action": "resume", "outcome": "resumed"}]
    assert not slurm.node_list["n2"].drain and slurm.node_list["n1"].drain


def test_an_admin_drain_is_never_resumed_by_sync(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.node_list["n3"] = dataclasses.replace(slurm.node_list["n3"], flags=("DRAIN",), reason="PSU swap",
                                                reason_time=NOW - timedelta(days=3))
    assert sync(world) == [] and slurm.node_list["n3"].drain


def test_expired_exclusion_ends_and_resumes_its_node(world: dict[str, Any]) -> None:
    slurm, cfg = world["slurm"], world["cfg"]
    _, events = drain.request_drain("n4", "admin", "bad DIMM", job_id=None, actor="admin:root", cfg=cfg,
                                     slurm=slurm, ttl_s=3600)
    api.record(events, cfg)
    api.flush(cfg)
    later = datetime.now(UTC) + timedelta(hours=2)
    actions = sync(world, now=later)
    assert {(a["node"], a["action"], a["outcome"]) for a in actions} == {("n4", "end", "expired"),
                                                                         ("n4", "resume", "resumed")}
    assert not slurm.node_list["n4"].drain
    assert sync(world, now=later) == []            # in sync: a no-op
