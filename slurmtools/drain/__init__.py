"""The drain path: the one way slurmtools takes a node out of service (and puts it back), with its rails:
reason protocol, observe mode, circuit breaker. A stage of its own below the hooks, the controller, detect,
stalls and the reports, which all import it; it imports only `ledger.spool` at module level (the hooks' budget).

Every drain, from the prolog, the epilog, the controller, detect or stalls, goes through `request_drain`:

* the reason is ours: `<prefix> <category>: <cause> [job <id>]` (prefix `slurmtools:` by default),
  cut to Slurm-friendly length; we never resume or re-reason a node whose reason is not ours;
* observe mode (or the global kill switch) records the decision and changes nothing;
* a circuit breaker refuses to drain when too many nodes already carry our reason (default: more
  than 10 % of the cluster, at least 2 nodes), so a bad check or config cannot drain the cluster;
  drains made at the same moment on many nodes are read back after `safety.settle` seconds, and
  those past the limit undo themselves;
* every decision, applied or not, is recorded in the ledger (node_state events through the spool).

It costs two Slurm reads (`sinfo --json`), at most one write and the settle time, on the unhealthy
path only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from slurmtools.ledger.spool import Event, make_key

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm
    from slurmtools.slurm.types import NodeInfo

log = logging.getLogger(__name__)

MAX_REASON = 200


@dataclass
class DrainDecision:
    node: str
    reason: str
    applied: bool
    outcome: str      # drained, already_ours, not_ours, observe, disabled, breaker_open, error
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "reason": self.reason, "applied": self.applied, "outcome": self.outcome,
                "detail": self.detail}


def make_reason(prefix: str, category: str, cause: str, job_id: str | int | None = None) -> str:
    """`slurmtools: hardware: GPU 0000:3b:00 fell off the bus (XID 79) [job 42]`, one line, bounded."""
    tail = f" [job {job_id}]" if job_id not in (None, "") else ""
    cause = " ".join(str(cause).split())
    head = f"{prefix} {category}: "
    room = MAX_REASON - len(head) - len(tail)
    if len(cause) > room:
        cause = cause[:max(0, room - 3)] + "..."
    return head + cause + tail


def is_ours(reason: str | None, prefix: str) -> bool:
    return bool(reason) and str(reason).startswith(prefix)


def drained_by_us(nodes: list[NodeInfo], prefix: str) -> list[NodeInfo]:
    """The nodes drained (or down) with our reason: what the circuit breaker counts."""
    return [n for n in nodes if (n.drain or n.state == "down") and is_ours(n.reason, prefix)]


def breaker_status(cfg: Config, slurm: Slurm) -> dict[str, Any]:
    """How close the circuit breaker is: nodes drained with our reason now, the limit, and whether it is
    open (no further drain will be made). `slurmtools nodes` and the controller report it."""
    prefix = cfg.reason_prefix
    nodes = slurm.nodes()
    ours = sorted(n.name for n in drained_by_us(nodes, prefix))
    limit = cfg.drain_limit(len(nodes))
    is_open = len(ours) >= limit
    detail = (f"{len(ours)} of {len(nodes)} nodes drained by slurmtools (limit {limit})" +
              ("; no further drains until some are resumed" if is_open else ""))
    return {"open": is_open, "drained_by_us": ours, "total": len(nodes), "limit": limit, "detail": detail}


#: Actors that run on the node they drain (its hooks): they can say which boot the drain happened in.
NODE_ACTORS = frozenset({"prolog", "epilog"})


def request_drain(node: str, category: str, cause: str, *, job_id: str | int | None, actor: str, cfg: Config,
                  slurm: Slurm | None = None, evidence: dict[str, Any] | None = None,
                  ttl_s: float | None = None, record_exclusion: bool = True) -> tuple[DrainDecision, list[Event]]:
    """Drain NODE with our reason unless a safety rail says no. Returns the decision and its ledger events
    (the caller spools them with its other events): the node_state change, applied or not, and, when
    the node was drained, the exclusion that now keeps it out (scope drain, source ACTOR, until TTL_S
    seconds, default `exclusions.auto_ttl`), which `slurmtools exclude` lists, syncs and ends."""
    prefix = cfg.reason_prefix
    reason = make_reason(prefix, category, cause, job_id)
    decision = _decide(node, reason, prefix, cfg, slurm)
    if decision.applied and actor in NODE_ACTORS and "boot_id" not in (evidence or {}):
        from slurmtools.checks.runner import node_boot_id

        evidence = {**(evidence or {}), "boot_id": node_boot_id(cfg, node)}   # on the node itself: its boot
    event = Event("node_state", {"node": node, "action": "drain", "actor": actor, "reason": reason,
                                 "applied": decision.applied,
                                 "details": {"outcome": decision.outcome, "detail": decision.detail,
                                             "job_id": job_id, **(evidence or {})}},
                  cluster=cfg.cluster)
    level = logging.WARNING if decision.outcome in {"breaker_open", "error"} else logging.INFO
    log.log(level, "drain %s: %s (%s) %s", node, decision.outcome, reason, decision.detail)
    events = [event]
    if decision.applied and record_exclusion:
        ttl = float(cfg.exclusions.auto_ttl if ttl_s is None else ttl_s)
        events.append(exclusion_event(cfg, node, "drain", reason, actor, ttl_s=ttl, start=event.time,
                                      evidence={"job_id": job_id, "node_state_key": event.key, **(evidence or {})}))
    return decision, events


def exclusion_event(cfg: Config, node: str, scope: str, reason: str, source: str, *, ttl_s: float | None,
                    start: datetime | None = None, evidence: dict[str, Any] | None = None) -> Event:
    """The ledger event that opens an exclusion (ended later by an `exclusion_end` naming its key)."""
    start = start or datetime.now(UTC)
    expires = start + timedelta(seconds=ttl_s) if ttl_s else None
    return Event("exclusion", {"node": node, "scope": scope, "reason": reason, "source": source,
                               "start": start.isoformat(), "expires": expires.isoformat() if expires else None,
                               "details": evidence or {}},
                 cluster=cfg.cluster, time=start, key=make_key("exclusion", cfg.cluster, node, start.isoformat()))


def _decide(node: str, reason: str, prefix: str, cfg: Config, slurm: Slurm | None) -> DrainDecision:
    if not cfg.general.enabled:
        return DrainDecision(node, reason, False, "disabled", "general.enabled = false")
    if cfg.general.observe:
        return DrainDecision(node, reason, False, "observe", "observe mode: recorded, not drained")
    if slurm is None:
        from slurmtools.slurm import get_client

        slurm = get_client(cfg)
    found = _read_nodes(slurm, node, reason, None)   # all of them: the breaker counts our drains
    if isinstance(found, DrainDecision):
        return found
    nodes, me = found
    if me.drain or me.state == "down":
        if is_ours(me.reason, prefix):
            return DrainDecision(node, reason, False, "already_ours", f"already drained: {me.reason}")
        return DrainDecision(node, reason, False, "not_ours", f"drained by someone else: {me.reason!r}")
    ours = len(drained_by_us(nodes, prefix))
    limit = cfg.drain_limit(len(nodes))
    if ours + 1 > limit:
        return DrainDecision(node, reason, False, "breaker_open",
                             f"circuit breaker: {ours} of {len(nodes)} nodes already drained by slurmtools "
                             f"(limit {limit}); not draining more")
    from slurmtools.slurm import SlurmError

    try:
        slurm.drain([node], reason)
    except SlurmError as exc:
        return DrainDecision(node, reason, False, "error", str(exc))
    return _settle(node, reason, prefix, cfg, slurm, limit)


def _settle(node: str, reason: str, prefix: str, cfg: Config, slurm: Slurm, limit: int) -> DrainDecision:
    """Concurrent drains (epilogs on many nodes at once) each saw the breaker closed. Look again once they
    have landed; every node orders our drains the same way (oldest reason time first, then name) and the
    ones past the limit undo their own drain."""
    settle = float(cfg.safety.settle)
    if settle <= 0:
        return DrainDecision(node, reason, True, "drained")
    import time

    time.sleep(settle)
    found = _read_nodes(slurm, node, reason, None)
    if isinstance(found, DrainDecision):   # cannot look again: the drain stands (it passed the breaker)
        return DrainDecision(node, reason, True, "drained", f"not re-checked: {found.detail}")
    nodes, _ = found
    far = datetime.max.replace(tzinfo=UTC)
    ours = sorted(drained_by_us(nodes, prefix), key=lambda n: (n.reason_time or far, n.name))
    late = [n.name for n in ours[limit:]]
    if node not in late:
        return DrainDecision(node, reason, True, "drained")
    from slurmtools.slurm import SlurmError

    detail = (f"circuit breaker: {len(ours)} of {len(nodes)} nodes drained by slurmtools at once (limit {limit}); "
              "this drain was among the last and is undone")
    try:
        slurm.resume([node])
    except SlurmError as exc:
        return DrainDecision(node, reason, True, "drained", f"{detail}, but the resume failed: {exc}")
    return DrainDecision(node, reason, False, "breaker_open", detail)


def request_resume(node: str, *, cfg: Config, slurm: Slurm, actor: str, why: str) -> tuple[DrainDecision, Event]:
    """Resume NODE only if it carries our reason (an admin's drain is untouchable); observe mode and the
    kill switch record the decision and change nothing. Returns the decision and its node_state event."""
    prefix = cfg.reason_prefix
    decision = _decide_resume(node, prefix, cfg, slurm)
    event = Event("node_state", {"node": node, "action": "resume", "actor": actor, "reason": why,
                                 "applied": decision.applied,
                                 "details": {"outcome": decision.outcome, "detail": decision.detail,
                                             "previous_reason": decision.reason}},
                  cluster=cfg.cluster)
    log.info("resume %s: %s %s", node, decision.outcome, decision.detail)
    return decision, event


def _read_nodes(slurm: Slurm, node: str, reason: str,
                names: list[str] | None) -> tuple[list[NodeInfo], NodeInfo] | DrainDecision:
    """Slurm's view of NAMES (None: all nodes) and of NODE among them, or the error decision."""
    from slurmtools.slurm import SlurmError

    try:
        nodes = slurm.nodes(names) if names else slurm.nodes()
    except SlurmError as exc:
        return DrainDecision(node, reason, False, "error", f"cannot read node states: {exc}")
    me = next((n for n in nodes if n.name == node), None)
    if me is None:
        return DrainDecision(node, reason, False, "error", "Slurm does not know this node")
    return nodes, me


def _decide_resume(node: str, prefix: str, cfg: Config, slurm: Slurm) -> DrainDecision:
    found = _read_nodes(slurm, node, "", [node])
    if isinstance(found, DrainDecision):
        return found
    _, me = found
    if not (me.drain or me.state == "down"):
        return DrainDecision(node, me.reason or "", False, "not_drained", "")
    if not is_ours(me.reason, prefix):
        return DrainDecision(node, me.reason or "", False, "not_ours", f"drained by someone else: {me.reason!r}")
    if not cfg.general.enabled:
        return DrainDecision(node, me.reason, False, "disabled", "general.enabled = false")
    if cfg.general.observe:
        return DrainDecision(node, me.reason, False, "observe", "observe mode: recorded, not resumed")
    from slurmtools.slurm import SlurmError

    try:
        slurm.resume([node])
    except SlurmError as exc:
        return DrainDecision(node, me.reason, False, "error", str(exc))
    return DrainDecision(node, me.reason, True, "resumed")
