"""Lemon nodes and return to service: a node with repeated node faults gets a lemon exclusion (its TTL doubling
each time); nodes under an automatic drain are deep-checked and resumed after enough passes in a row, their
exclusions closed as `confirmed` or `refuted`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools.controller import exclusions, safety
from slurmtools.controller.base import AUTO_SOURCES, ControllerBase, utcnow
from slurmtools.diagnosis.findings import NODE_TRUST
from slurmtools.ledger import models
from slurmtools.ledger.spool import Event


class Recovering(ControllerBase):
    def lemons(self, nodes: list[str]) -> list[dict[str, Any]]:
        """A node with `lemon_findings` node faults (distinct attempts) within `lemon_window` gets a lemon
        exclusion, `lemon_ttl` long, doubled for each earlier lemon exclusion (up to `lemon_ttl_max`)."""
        cfg = self.cfg
        need = int(cfg.get("controller.lemon_findings"))
        if not nodes or need <= 0:
            return []
        window = float(cfg.get("controller.lemon_window"))
        since = utcnow() - timedelta(seconds=window)
        F, X = models.Finding, models.Exclusion
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        with Session(self.engine) as s:
            for node in sorted(set(nodes)):
                rows = s.execute(select(F.job_id, F.restart_count, F.action, F.trust, F.details).where(
                    F.cluster == self.cluster, F.node == node, F.time >= since)).all()
                faults = {(r.job_id, r.restart_count) for r in rows if r.trust in NODE_TRUST
                          and r.action in self.rules.node_fault_actions and not (r.details or {}).get("superseded_by")}
                if len(faults) < need:
                    continue
                lemon_xs = [x for x in s.scalars(select(X).where(X.cluster == self.cluster, X.node == node))
                            if (x.details or {}).get("lemon")]
                if lemon_xs and any((x.details or {}).get("lemon")
                                    for x in exclusions.active(s, self.cluster, nodes=[node])):
                    continue
                ttl = min(float(cfg.get("controller.lemon_ttl")) * 2 ** len(lemon_xs),
                          float(cfg.get("controller.lemon_ttl_max")))
                cause = f"lemon node: {len(faults)} node faults within {window / 86400:g} days"
                evidence = {"lemon": True, "faults": len(faults), "earlier_lemon_exclusions": len(lemon_xs)}
                decision, evs = safety.request_drain(node, "lemon", cause, job_id=None, actor="controller",
                                                     cfg=cfg, slurm=self.slurm, evidence=evidence, ttl_s=ttl)
                events += evs
                if decision.outcome == "already_ours":  # drained for the fault itself: the lemon TTL still holds
                    events.append(safety.exclusion_event(cfg, node, "drain", decision.reason, "controller",
                                                         ttl_s=ttl, evidence=evidence))
                out.append({"node": node, "faults": len(faults), "ttl_s": ttl, "outcome": decision.outcome})
        self._record(events)
        return out

    def _state_path(self) -> str:
        return os.path.join(self.queue_dir, "state", "recovery.json")

    def _load_state(self) -> dict[str, Any]:
        try:
            with open(self._state_path(), encoding="utf-8") as fh:
                data = json.load(fh)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_state(self, state: dict[str, Any]) -> None:
        from slurmtools.fsutil import write_atomic

        os.makedirs(os.path.dirname(self._state_path()), exist_ok=True)
        write_atomic(self._state_path(), json.dumps(state, sort_keys=True))

    def _deep_check_command(self, node: str) -> tuple[str, dict[str, Any]]:
        return run_deep_check(self.cfg, node)

    def recover(self, force: bool = False) -> list[dict[str, Any]]:
        """Deep-check nodes under an automatic drain exclusion; resume them after `recovery_passes` passes
        in a row and close their exclusions as `confirmed` (a deep check failed, or the node had node
        faults after it was drained) or `refuted` (nothing found since)."""
        interval = float(self.cfg.get("controller.recovery_interval"))
        now_m = time.monotonic()
        if not force and now_m - self._last_recovery < min(interval, 10.0):
            return []
        self._last_recovery = now_m
        prefix = self.cfg.get("general.reason_prefix")
        need = int(self.cfg.get("controller.recovery_passes"))
        state = self._load_state()
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        F = models.Finding
        with Session(self.engine) as s:
            by_node: dict[str, list[models.Exclusion]] = {}
            for x in exclusions.active(s, self.cluster):
                by_node.setdefault(x.node, []).append(x)
            candidates = {n: xs for n, xs in by_node.items()
                          if all(x.scope == "drain" and x.source in AUTO_SOURCES and not (x.details or {}).get("lemon")
                                 for x in xs)}
            for node in list(state):
                if node not in candidates:
                    del state[node]
            if not candidates:
                self._save_state(state)
                return out
            infos = {n.name: n for n in self.slurm.nodes(sorted(candidates))}
            for node, xs in sorted(candidates.items()):
                info = infos.get(node)
                if info is None or not info.drained or not safety.is_ours(info.reason, prefix):
                    continue   # busy (draining), resumed behind our back (sync's job), or an admin's drain
                keys = sorted(x.idempotency_key for x in xs)
                st = state.get(node)
                if not st or st.get("exclusions") != keys:
                    st = state[node] = {"exclusions": keys, "passes": 0, "failed": False, "last": 0.0}
                if time.time() - float(st["last"]) < interval and not force:
                    continue
                verdict, info_ = (self.deep_check_override or self._deep_check_command)(node)
                st["last"] = time.time()
                if verdict == "ok":
                    st["passes"] += 1
                elif verdict == "fail":
                    st["passes"], st["failed"] = 0, True
                events.append(Event("node_state", {"node": node, "action": "deep_check", "actor": "controller",
                                                   "reason": f"deep check: {verdict}", "applied": True,
                                                   "details": {"verdict": verdict, "passes": st["passes"],
                                                               **info_}}, cluster=self.cluster))
                row = {"node": node, "verdict": verdict, "passes": st["passes"]}
                if st["passes"] >= need:
                    start = min(x.start for x in xs)
                    later = s.scalar(select(func.count()).select_from(F).where(
                        F.cluster == self.cluster, F.node == node, F.time > start, F.trust.in_(NODE_TRUST),
                        F.action.in_(self.rules.node_fault_actions))) or 0
                    outcome = "confirmed" if st["failed"] or later else "refuted"
                    decision, ev = safety.request_resume(node, cfg=self.cfg, slurm=self.slurm, actor="controller",
                                                         why=f"passed {need} deep checks ({outcome})")
                    events.append(ev)
                    if decision.applied or decision.outcome == "not_drained":
                        events += [exclusions.end_event(self.cfg, x, outcome, f"passed {need} deep checks")
                                   for x in xs]
                        del state[node]
                    row.update({"resumed": decision.outcome, "outcome": outcome, "later_faults": later})
                out.append(row)
        self._save_state(state)
        self._record(events)
        return out


def run_deep_check(cfg: Any, node: str) -> tuple[str, dict[str, Any]]:
    """`controller.deep_check_command` for NODE: (ok | fail | unknown, what it said). Also what the stall detector
    schedules on a stalled job's suspect (stalls/act.py)."""
    argv = [str(a).replace("{node}", node) for a in cfg.get("controller.deep_check_command")]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=float(cfg.get("controller.deep_check_timeout")))
    except subprocess.TimeoutExpired:
        return "unknown", {"error": "deep check timed out"}
    except OSError as exc:
        return "unknown", {"error": f"cannot run {argv[0]}: {exc}"}
    verdict = {0: "ok", 1: "fail"}.get(proc.returncode, "unknown")
    try:
        results = json.loads(proc.stdout)
        failed = [r.get("check") for r in results if r.get("status") == "fail"]
    except (ValueError, AttributeError, TypeError):
        failed = []
    return verdict, {"rc": proc.returncode, "failed": failed, "stderr": proc.stderr[-500:]}
