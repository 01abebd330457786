"""The one way slurmtools takes a node out of service: reason protocol, observe mode, circuit breaker.

Every drain, from the prolog, the epilog or the controller, goes through `request_drain`:

* the reason is ours: `<prefix> <category>: <cause> [job <id>]` (prefix `slurmtools:` by default),
  cut to Slurm-friendly length; we never resume or re-reason a node whose reason is not ours;
* observe mode (or the global kill switch) records the decision and changes nothing;
* a circuit breaker refuses to drain when too many nodes already carry our reason (default: more
  than 10 % of the cluster, at least 2 nodes), so a bad check or config cannot drain the cluster;
* every decision, applied or not, is recorded in the ledger (node_state events through the spool).

It costs one Slurm read (`sinfo --json`) and at most one write, on the unhealthy path only.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from slurmtools.ledger.spool import Event

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


def breaker_limit(total_nodes: int, fraction: float, minimum: int) -> int:
    """How many nodes may carry our drain reason at once."""
    return max(minimum, math.floor(total_nodes * fraction))


def request_drain(node: str, category: str, cause: str, *, job_id: str | int | None, actor: str, cfg: Any,
                  slurm: Any = None, evidence: dict[str, Any] | None = None) -> tuple[DrainDecision, Event]:
    """Drain NODE with our reason unless a safety rail says no. Returns the decision and its ledger event
    (the caller spools it with its other events)."""
    prefix = cfg.get("general.reason_prefix")
    reason = make_reason(prefix, category, cause, job_id)
    decision = _decide(node, reason, prefix, cfg, slurm)
    event = Event("node_state", {"node": node, "action": "drain", "actor": actor, "reason": reason,
                                 "applied": decision.applied,
                                 "details": {"outcome": decision.outcome, "detail": decision.detail,
                                             "job_id": job_id, **(evidence or {})}},
                  cluster=cfg.cluster)
    level = logging.WARNING if decision.outcome in {"breaker_open", "error"} else logging.INFO
    log.log(level, "drain %s: %s (%s) %s", node, decision.outcome, reason, decision.detail)
    return decision, event


def _decide(node: str, reason: str, prefix: str, cfg: Any, slurm: Any) -> DrainDecision:
    if not cfg.get("general.enabled"):
        return DrainDecision(node, reason, False, "disabled", "general.enabled = false")
    if cfg.get("general.observe"):
        return DrainDecision(node, reason, False, "observe", "observe mode: recorded, not drained")
    if slurm is None:
        from slurmtools.slurm import get_client

        slurm = get_client(cfg)
    from slurmtools.slurm import SlurmError

    try:
        nodes = slurm.nodes()
    except SlurmError as exc:
        return DrainDecision(node, reason, False, "error", f"cannot read node states: {exc}")
    me = next((n for n in nodes if n.name == node), None)
    if me is None:
        return DrainDecision(node, reason, False, "error", "Slurm does not know this node")
    if me.drain or me.state == "down":
        if is_ours(me.reason, prefix):
            return DrainDecision(node, reason, False, "already_ours", f"already drained: {me.reason}")
        return DrainDecision(node, reason, False, "not_ours", f"drained by someone else: {me.reason!r}")
    ours = sum(1 for n in nodes if (n.drain or n.state == "down") and is_ours(n.reason, prefix))
    limit = breaker_limit(len(nodes), cfg.get("safety.max_drain_fraction"), cfg.get("safety.min_drain_nodes"))
    if ours + 1 > limit:
        return DrainDecision(node, reason, False, "breaker_open",
                             f"circuit breaker: {ours} of {len(nodes)} nodes already drained by slurmtools "
                             f"(limit {limit}); not draining more")
    try:
        slurm.drain([node], reason)
    except SlurmError as exc:
        return DrainDecision(node, reason, False, "error", str(exc))
    return DrainDecision(node, reason, True, "drained")
