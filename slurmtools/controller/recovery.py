"""Lemon nodes and return to service: a node with repeated node faults gets a lemon exclusion (its TTL doubling
each time); nodes under an automatic drain are deep-checked and resumed after enough passes in a row, their
exclusions closed as `confirmed` or `refuted`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.checks import perfrecord
from slurmtools.controller import exclusions
from slurmtools.controller.base import AUTO_SOURCES, Context, utcnow
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.findings import NODE_TRUST
from slurmtools.ledger import models
from slurmtools.ledger.spool import Event

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.diagnosis.faults import FindingLike


class Recovery:
    """Lemon nodes, failed node drains asked again, and return to service (inputs: the shared `Context`; the deep
    check a node must pass, default `controller.deep_check_command`)."""

    def __init__(self, ctx: Context, deep_check: Callable[[str], tuple[str, dict[str, Any]]] | None = None) -> None:
        self.ctx = ctx
        self.cfg = ctx.cfg
        self.cluster = ctx.cluster
        self.slurm = ctx.slurm
        self.engine = ctx.engine
        self.rules = ctx.rules
        self.queue_dir = ctx.queue_dir
        self.deep_check = deep_check or (lambda node: run_deep_check(self.cfg, node))
        self._last_recovery = 0.0

    def lemons(self, nodes: list[str]) -> list[dict[str, Any]]:
        """A node with `lemon_findings` node faults (distinct attempts) within `lemon_window` gets a lemon
        exclusion, `lemon_ttl` long, doubled for each earlier lemon exclusion (up to `lemon_ttl_max`)."""
        cfg = self.cfg
        need = int(cfg.controller.lemon_findings)
        if not nodes or need <= 0:
            return []
        window = float(cfg.controller.lemon_window)
        since = utcnow() - timedelta(seconds=window)
        F, X = models.Finding, models.Exclusion
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        with Session(self.engine) as s:
            for node in sorted(set(nodes)):
                rows = s.execute(select(F.job_id, F.restart_count, F.action, F.trust, F.details).where(
                    F.cluster == self.cluster, F.node == node, F.time >= since)).all()
                faults = {(r.job_id, r.restart_count) for r in rows if self._node_fault(r)}
                if len(faults) < need:
                    continue
                lemon_xs = [x for x in s.scalars(select(X).where(X.cluster == self.cluster, X.node == node))
                            if (x.details or {}).get("lemon")]
                if lemon_xs and any((x.details or {}).get("lemon")
                                    for x in exclusions.active(s, self.cluster, nodes=[node])):
                    continue
                ttl = min(float(cfg.controller.lemon_ttl) * 2 ** len(lemon_xs),
                          float(cfg.controller.lemon_ttl_max))
                cause = f"lemon node: {len(faults)} node faults within {window / 86400:g} days"
                evidence = {"lemon": True, "faults": len(faults), "earlier_lemon_exclusions": len(lemon_xs)}
                decision, evs = drain.request_drain(node, "lemon", cause, job_id=None, actor="controller",
                                                     cfg=cfg, slurm=self.slurm, evidence=evidence, ttl_s=ttl)
                events += evs
                if decision.outcome == "already_ours":  # drained for the fault itself: the lemon TTL still holds
                    events.append(drain.exclusion_event(cfg, node, "drain", decision.reason, "controller",
                                                         ttl_s=ttl, evidence=evidence))
                out.append({"node": node, "faults": len(faults), "ttl_s": ttl, "outcome": decision.outcome})
        self.ctx.record(events)
        return out

    def redrain(self, window_s: float = 3600.0) -> list[dict[str, Any]]:
        """A node's own drain that failed for a reason of ours (outcome `error`: Slurm could not be read or written
        from the node, a slow slurmctld, a broken clock) is asked again from here, through the same rails, once its
        event reaches the ledger: whether a faulty node leaves service must not depend on one RPC from the node.
        Nothing newer on that node (a drain applied, a resume) may have happened since; each failed drain is
        retried once."""
        from datetime import UTC, datetime

        N = models.NodeStateChange
        since = datetime.now(UTC) - timedelta(seconds=window_s)
        prefix = str(self.cfg.reason_prefix)
        state = self._load_state()
        done: list[str] = list(state.get("_redrained", []))
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        with Session(self.engine) as s:
            failed = [r for r in s.scalars(select(N).where(
                N.cluster == self.cluster, N.action == "drain", N.applied.is_(False), N.time >= since,
                N.actor.in_(sorted(drain.NODE_ACTORS))).order_by(N.time))
                if (r.details or {}).get("outcome") == "error" and r.idempotency_key not in done]
            for row in failed:
                newer = s.scalar(select(func.count()).select_from(N).where(
                    N.cluster == self.cluster, N.node == row.node, N.time > row.time,
                    N.action.in_(("drain", "resume")), N.applied.is_(True))) or 0
                done.append(row.idempotency_key)
                if newer:
                    continue
                cause = row.reason[len(prefix):].strip() if row.reason.startswith(prefix) else row.reason
                cause = re.sub(r" \[job [^\]]*\]$", "", cause)
                category, _, rest = cause.partition(": ")
                job_id = (row.details or {}).get("job_id")
                decision, evs = drain.request_drain(
                    row.node, category if rest else "hardware", rest or cause, job_id=job_id, actor="controller",
                    cfg=self.cfg, slurm=self.slurm,
                    evidence={"retry_of": row.idempotency_key, "node_error": (row.details or {}).get("detail")})
                events += evs
                out.append({"node": row.node, "job_id": job_id, "outcome": decision.outcome})
        if failed:      # the state file is rewritten only when a failed drain was looked at, not on every pass
            state["_redrained"] = done[-500:]
            self._save_state(state)
        self.ctx.record(events)
        return out

    def _node_fault(self, finding: FindingLike) -> bool:
        return is_node_fault(finding, self.cfg, actions=self.rules.node_fault_actions)

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

    def _needs(self, s: Session, node: str, xs: list[models.Exclusion]) -> str | None:
        """"reboot" or "reset" when a node fault on NODE behind its drains XS (the job a drain names, or since the
        drain) is one only a reboot or a GPU reset clears (diagnosis.catalog.needs): a deep check before that
        says nothing about the fault."""
        from sqlalchemy import or_

        from slurmtools.diagnosis.catalog import needs

        F = models.Finding
        since = min(x.start for x in xs)
        jobs = sorted({int(j) for x in xs if str(j := (x.details or {}).get("job_id") or "").isdigit()})
        rows = s.execute(select(F.xid, F.action, F.trust, F.details).where(
            F.cluster == self.cluster, F.node == node, or_(F.time >= since, F.job_id.in_(jobs)),
            F.trust.in_(NODE_TRUST))).all()
        found = {needs(r.xid, r.action) for r in rows if self._node_fault(r)}
        return "reboot" if "reboot" in found else "reset" if "reset" in found else None

    def recover(self, force: bool = False) -> list[dict[str, Any]]:
        """Deep-check nodes under an automatic drain exclusion; resume them after `recovery_passes` passes
        in a row and close their exclusions as `confirmed` (a deep check failed, or the node had node
        faults after it was drained) or `refuted` (nothing found since)."""
        interval = float(self.cfg.controller.recovery_interval)
        now_m = time.monotonic()
        if not force and now_m - self._last_recovery < min(interval, 10.0):
            return []
        self._last_recovery = now_m
        prefix = self.cfg.reason_prefix
        passes_needed = int(self.cfg.controller.recovery_passes)
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
                if node not in candidates and not node.startswith("_"):
                    del state[node]
            if not candidates:
                self._save_state(state)
                return out
            infos = {n.name: n for n in self.slurm.nodes(sorted(candidates))}
            for node, xs in sorted(candidates.items()):
                info = infos.get(node)
                if info is None or not info.drained or not drain.is_ours(info.reason, prefix):
                    continue   # busy (draining), resumed behind our back (sync's job), or an admin's drain
                keys = sorted(x.idempotency_key for x in xs)
                st = state.get(node)
                if not st or st.get("exclusions") != keys:
                    st = state[node] = {"exclusions": keys, "passes": 0, "failed": False, "last": 0.0}
                if time.time() - float(st["last"]) < interval and not force:
                    continue
                verdict, info_ = self.deep_check(node)
                st["last"] = time.time()
                events += perfrecord.from_dicts(self.cfg, node, "deep", info_.pop("perf", None) or [], st["last"])
                start = min(x.start for x in xs)
                need = self._needs(s, node, xs)
                boot = info_.get("boot_id")
                if need:
                    # the boot the fault happened in: the drain's own record (made on the node), else the first
                    # deep check's; a pass in that same boot is no evidence (the reboot or reset has not happened)
                    drained_in = next((str(x.details["boot_id"]) for x in xs
                                       if (x.details or {}).get("boot_id")), None)
                    st.setdefault("boot_id", drained_in or boot)
                    st["needs"] = need
                    if verdict == "ok" and (boot is None or boot == st["boot_id"]):
                        verdict = "waiting"
                        info_["waiting_for"] = need
                if verdict == "ok":
                    st["passes"] += 1
                elif verdict == "fail":
                    st["passes"], st["failed"] = 0, True
                events.append(Event("node_state", {"node": node, "action": "deep_check", "actor": "controller",
                                                   "reason": f"deep check: {verdict}", "applied": True,
                                                   "details": {"verdict": verdict, "passes": st["passes"],
                                                               **info_}}, cluster=self.cluster))
                row = {"node": node, "verdict": verdict, "passes": st["passes"]}
                if st["passes"] >= passes_needed:
                    later = sum(1 for r in s.execute(select(F.trust, F.action, F.details).where(
                        F.cluster == self.cluster, F.node == node, F.time > start, F.trust.in_(NODE_TRUST)))
                        if self._node_fault(r))      # a superseded finding is no later fault
                    # a fault that needed a reboot or reset, which happened since: real (the kernel said so), fixed
                    outcome = "confirmed" if st["failed"] or later or st.get("needs") else "refuted"
                    decision, ev = drain.request_resume(node, cfg=self.cfg, slurm=self.slurm, actor="controller",
                                                         why=f"passed {passes_needed} deep checks ({outcome})")
                    events.append(ev)
                    if decision.applied or decision.outcome == "not_drained":
                        events += [exclusions.end_event(self.cfg, x, outcome, f"passed {passes_needed} deep checks")
                                   for x in xs]
                        del state[node]
                    row.update({"resumed": decision.outcome, "outcome": outcome, "later_faults": later})
                out.append(row)
        self._save_state(state)
        self.ctx.record(events)
        return out


def run_deep_check(cfg: Config, node: str) -> tuple[str, dict[str, Any]]:
    """`controller.deep_check_command` for NODE: (ok | fail | unknown, what it said). Also what the stall detector
    schedules on a stalled job's suspect (stalls/act.py)."""
    argv = [str(a).replace("{node}", node) for a in cfg.controller.deep_check_command]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=float(cfg.controller.deep_check_timeout))
    except subprocess.TimeoutExpired:
        return "unknown", {"error": "deep check timed out"}
    except OSError as exc:
        return "unknown", {"error": f"cannot run {argv[0]}: {exc}"}
    verdict = {0: "ok", 1: "fail"}.get(proc.returncode, "unknown")
    failed: list[Any] = []
    boot: str | None = None
    perf: list[Any] = []
    try:
        results = json.loads(proc.stdout)
        failed = [r.get("check") for r in results if r.get("status") == "fail"]
        boot = next((str(r["evidence"]["boot_id"]) for r in results if r.get("check") == "host"
                     and isinstance(r.get("evidence"), dict) and r["evidence"].get("boot_id")), None)
        perf = [r for r in results if isinstance(r, dict) and r.get("check") == "perf"]
    except (ValueError, AttributeError, TypeError):
        pass
    return verdict, {"rc": proc.returncode, "failed": failed, "boot_id": boot, "stderr": proc.stderr[-500:],
                     "perf": perf}
