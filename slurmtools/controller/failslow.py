"""Deep checks of fail-slow nodes: the step after `slurmtools perf scan`'s soft exclusion (controller/perf.py).

A GPU below its model's fleet median opens a soft exclusion of its node (source ``perf``, evidence
``deep_check: true`` and the slow GPU). Each controller pass, at most ``controller.failslow_checks`` such nodes
(the oldest exclusion first) that had no conclusive deep check since their exclusion opened get the deep check
(``controller.deep_check_command``: ``slurmtools check --profile deep``, which runs the perf probe and the stress
check), the same one recovery runs on drained nodes (controller/recovery.py), recorded the same way (a
``node_state`` row, action ``deep_check``, with ``details.failslow``; every probe result in ``perf_results``).
Only on a node Slurm reports idle and not drained: never while a job is on it (the probe would refuse its GPUs
anyway), never on a drained or down node (recovery's, or an admin's).

* the check failed (exit 1: the stress saw throttling, a gate failed): a drain through `drain.request_drain`
  (actor ``perf``, like the scan's own fail-slow drains: an admin returns the node; observe mode, breaker and
  kill switch apply); once drained, the soft exclusion closes as ``confirmed``;
* it passed and the probe found the flagged GPU slow again: the GPU's ``streak`` grows by one, and at
  ``checks.perf_drain_after`` it drains the same way; below that, the exclusion stays (``still_slow``);
* it passed and the flagged GPU was probed at speed, no GPU slow: the soft exclusion closes as ``refuted``;
* it passed without a probe of the flagged GPU (no CUDA, a process appeared on it): ``inconclusive``;
* it could not run (exit 2, ssh, timeout): ``unknown``, reported in the pass, never a drain.
The last two are tried again after ``controller.recovery_interval`` seconds while the exclusion lasts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.checks import perfrecord
from slurmtools.controller import exclusions
from slurmtools.controller.base import Context, utcnow
from slurmtools.ledger import models
from slurmtools.ledger.spool import Event

log = logging.getLogger(__name__)

#: Slurm node flags under which an idle node is still not free for a deep check: a job's epilog running, power
#: saving, a reboot on its way, a reservation, or the backfill scheduler's plan for a pending job.
NOT_FREE = frozenset({"COMPLETING", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "REBOOT_REQUESTED",
                      "REBOOT_ISSUED", "RESERVED", "MAINTENANCE", "PLANNED"})
#: Verdicts after which a fail-slow exclusion has had its deep check (the others are tried again).
CONCLUSIVE = frozenset({"refuted", "still_slow", "drain"})


def flagged(x: models.Exclusion) -> bool:
    """X is a soft exclusion the fail-slow scan opened asking for a deep check."""
    return x.scope == "soft" and x.source == "perf" and bool((x.details or {}).get("deep_check"))


class FailSlow:
    """Deep checks of nodes under a fail-slow soft exclusion (inputs: the shared `Context`; the deep check,
    default `controller.deep_check_command`, the same callable recovery uses)."""

    def __init__(self, ctx: Context, deep_check: Callable[[str], tuple[str, dict[str, Any]]]) -> None:
        self.ctx = ctx
        self.cfg = ctx.cfg
        self.deep_check = deep_check

    def run(self) -> list[dict[str, Any]]:
        """One pass: which nodes are due, the deep checks (at most `failslow_checks`), what each led to."""
        per_pass = int(self.cfg.controller.failslow_checks)
        if per_pass <= 0:
            return []
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        with Session(self.ctx.engine) as s:       # closed before the checks: no transaction held for minutes
            due = self._due(s)
        if not due:
            return out
        infos = {n.name: n for n in self.ctx.slurm.nodes(sorted(due))}
        ran = 0
        for node, xs in sorted(due.items(), key=lambda kv: (min(x.start for x in kv[1]), kv[0])):
            info = infos.get(node)
            busy = ("not in Slurm" if info is None else "drained or draining" if info.drain
                    else "not responding" if not info.responding
                    else f"Slurm state {info.state}" if info.state != "idle"
                    else f"Slurm flags {'+'.join(sorted(NOT_FREE & set(info.flags)))}"
                    if NOT_FREE & set(info.flags) else None)
            if busy:
                out.append({"node": node, "skipped": busy})
                continue
            if ran >= per_pass:
                out.append({"node": node, "skipped": "per-pass limit"})
                continue
            ran += 1
            row, evs = self._check(node, xs)
            out.append(row)
            events += evs
        self.ctx.record(events)
        return out

    def _due(self, s: Session) -> dict[str, list[models.Exclusion]]:
        """Nodes with an open fail-slow soft exclusion, no other exclusion in force (a drained node is recovery's
        or an admin's), and no conclusive deep check since it opened (nor an inconclusive one within
        `recovery_interval`)."""
        by_node: dict[str, list[models.Exclusion]] = {}
        for x in exclusions.active(s, self.ctx.cluster):
            by_node.setdefault(x.node, []).append(x)
        due = {n: xs for n, xs in by_node.items() if all(flagged(x) for x in xs)}
        if not due:
            return due
        N = models.NodeStateChange
        recent = utcnow() - timedelta(seconds=float(self.cfg.controller.recovery_interval))
        since = min(x.start for xs in due.values() for x in xs)
        rows = s.execute(select(N.node, N.details, (N.time >= recent).label("recent")).where(
            N.cluster == self.ctx.cluster, N.action == "deep_check", N.node.in_(sorted(due)),
            N.time >= since)).all()
        for r in rows:
            d = r.details or {}
            keys = {x.idempotency_key for x in due.get(r.node, [])}
            if not keys & set(d.get("failslow") or []):
                continue
            if d.get("outcome") in CONCLUSIVE or r.recent:
                due.pop(r.node, None)
        return due

    def _check(self, node: str, xs: list[models.Exclusion]) -> tuple[dict[str, Any], list[Event]]:
        cfg = self.cfg
        keys = sorted(x.idempotency_key for x in xs)
        target = next(((x.details or {}).get("perf") or {} for x in xs if (x.details or {}).get("perf")), {})
        uuid, streak = target.get("uuid"), int(target.get("streak") or 1)
        try:
            verdict, info = self.deep_check(node)
        except Exception as exc:  # noqa: BLE001 - a check that breaks is reported, never a drain
            verdict, info = "unknown", {"error": f"{type(exc).__name__}: {exc}"[:300]}
        when = time.time()
        raw = info.pop("perf", None) or []
        events = perfrecord.from_dicts(cfg, node, "deep", raw, when)
        probes = [(r.get("status"), r["evidence"], list(r.get("gpus") or [])) for r in raw if isinstance(r, dict)
                  and isinstance(r.get("evidence"), dict) and isinstance(r["evidence"].get("probe"), dict)]
        uuids = {ev["probe"].get("uuid") for _, ev, _ in probes}

        def target_gpu(ev: dict[str, Any], gpus: list[Any]) -> bool:
            """The flagged GPU: by UUID; by index where that UUID is gone (the GPU was replaced)."""
            return ev["probe"].get("uuid") == uuid or (uuid not in uuids and gpus == [target.get("gpu")])

        slow = [ev for status, ev, _ in probes if status in ("warn", "fail") and ev.get("fail_slow")]
        again = [ev for status, ev, gpus in probes if ev in slow and target_gpu(ev, gpus)]
        seen = any(target_gpu(ev, gpus) and status in ("ok", "warn", "fail") for status, ev, gpus in probes)
        row: dict[str, Any] = {"node": node, "verdict": verdict}
        cause = ""
        if verdict == "fail":
            failed = ", ".join(str(c) for c in info.get("failed") or [] if c)[:200]
            cause = f"fail-slow deep check failed: {failed or 'exit 1'}"
        elif verdict == "ok" and again and streak + 1 >= int(cfg.checks.perf_drain_after):
            streak += 1
            cause = f"fail-slow GPU {target.get('gpu')}: slow again in its deep check ({streak} in a row)"
        if cause:
            outcome = "drain"
        elif verdict == "ok" and again:
            outcome, streak = "still_slow", streak + 1
        elif verdict == "ok" and seen and not slow:
            outcome = "refuted"
        elif verdict == "ok":
            outcome = "inconclusive"       # passed, but nothing measured the flagged GPU (or another one is slow)
        else:
            outcome = "unknown"            # could not run: reported, tried again later, never a drain
        row["outcome"] = outcome
        if outcome == "unknown":
            log.warning("controller: fail-slow deep check of %s could not run: %s", node,
                        info.get("error") or f"exit {info.get('rc')}")
        details = {"verdict": verdict, "outcome": outcome, "failslow": keys, "gpu": target.get("gpu"),
                   "uuid": uuid, "streak": streak, "slow_gpus": [ev["probe"].get("uuid") for ev in slow][:16],
                   **info}
        events.append(Event("node_state", {"node": node, "action": "deep_check", "actor": "controller",
                                           "reason": f"fail-slow deep check: {outcome}", "applied": True,
                                           "details": details}, cluster=self.ctx.cluster))
        if outcome == "drain":
            decision, evs = drain.request_drain(node, "hardware", cause, job_id=None, actor="perf", cfg=cfg,
                                                 slurm=self.ctx.slurm,
                                                 evidence={"perf": {**target, "streak": streak},
                                                           "failed": info.get("failed"), "failslow": keys})
            events += evs
            row["drain"] = decision.outcome
            if decision.applied or decision.outcome == "already_ours":
                events += [exclusions.end_event(cfg, x, "confirmed", "drained after its deep check") for x in xs]
        elif outcome == "refuted":
            events += [exclusions.end_event(cfg, x, "refuted", "its deep check found the GPU at speed") for x in xs]
        return row, events
