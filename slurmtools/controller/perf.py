"""The fleet's side of the fail-slow probe (checks/perf.py): medians per GPU model, slow GPUs, and the rails.

Every probe result is in the ledger (`perf_results`). A scan (`slurmtools perf scan`, from cron or after each
HealthCheckProgram round) takes each GPU's latest result within ``checks.perf_window``, computes each model's
median per metric, publishes them (``checks.perf_baseline_file``, read by every node's probe), and judges each
GPU against its model's reference (the fleet median once the model has ``perf_min_fleet`` GPUs, else the
profile's or packaged figures) with the same margins as the nodes.

A slow GPU, through the safety rails: the first time, a *soft* exclusion of its node (new jobs and retries avoid
it; ``checks.perf_soft_ttl``) whose evidence asks for a deep check (``deep_check: true``), which the controller
runs once the node is idle (controller/failslow.py: at speed, the exclusion is refuted; a failure, or the GPU slow
again, drains);
``checks.perf_drain_after`` slow results of the same GPU in a row, a drain through `drain.request_drain`
(reason ``slurmtools: hardware: fail-slow GPU ...``), with its observe mode, circuit breaker and kill switch.
Soft exclusions opened by one scan are capped like drains (the breaker's limit over the fleet), a node already
excluded gets no second one, and observe mode records and opens nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.checks import perf
from slurmtools.fsutil import write_atomic
from slurmtools.ledger import models
from slurmtools.ledger.spool import Event

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm


def results(session: Session, cluster: str, since: datetime) -> dict[str, list[dict[str, Any]]]:
    """Each GPU's (uuid's) probe results since SINCE, newest first; failed probes (no figures) left out."""
    T = models.PerfResult
    rows = session.execute(select(T).where(T.cluster == cluster, T.time >= since, T.status != "unknown")
                           .order_by(T.uuid, T.time.desc(), T.id.desc())).scalars()
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r.uuid, []).append({
            "node": r.node, "gpu": r.gpu_index, "uuid": r.uuid, "model": r.model, "time": r.time,
            **{m: getattr(r, m) for m in perf.METRICS}})
    return out


def judge(cfg: Config,
          history: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(the fleet's baseline per model, the slow GPUs): each slow GPU with its shortfalls, the basis, and how
    many of its newest results in a row were slow (``streak``)."""
    latest = [rows[0] for rows in history.values() if rows]
    fleet = perf.baseline(latest)
    settings = cfg.checks
    margin = perf.margins(settings)
    slow = []
    for uuid, rows in sorted(history.items()):
        hardware = cfg.hardware_for(rows[0]["node"])
        basis, reference, n = perf.reference_for(rows[0]["model"], fleet, hardware, settings)
        streak = 0
        for row in rows:
            if not perf.shortfalls(row, reference, margin):
                break
            streak += 1
        if streak:
            short = perf.shortfalls(rows[0], reference, margin)
            slow.append({"node": rows[0]["node"], "gpu": rows[0]["gpu"], "uuid": uuid, "model": rows[0]["model"],
                         "basis": basis, "fleet_n": n, "shortfalls": short, "streak": streak,
                         "cause": f"fail-slow GPU {rows[0]['gpu']}: " + "; ".join(perf.describe(x, basis)
                                                                                 for x in short)})
    return fleet, slow


def publish(cfg: Config, fleet: dict[str, dict[str, Any]], now: datetime) -> str:
    """Write the baseline the nodes read (atomically; world-readable figures, no names)."""
    path = str(cfg.checks.perf_baseline_file)
    write_atomic(path, json.dumps({"time": now.isoformat(timespec="seconds"), "models": fleet}, indent=1,
                                  sort_keys=True))
    return path


def act(cfg: Config, slow: list[dict[str, Any]], *, fleet_nodes: int, excluded: set[str], slurm: Slurm | None = None,
        now: datetime | None = None) -> tuple[list[Event], list[dict[str, Any]]]:
    """The ledger events and what was done for each slow GPU (one action per node: its worst GPU)."""
    now = now or datetime.now(UTC)
    observe = bool(cfg.general.observe)
    prefix = cfg.reason_prefix
    drain_after = int(cfg.checks.perf_drain_after)
    ttl = float(cfg.checks.perf_soft_ttl)
    limit = cfg.drain_limit(fleet_nodes)
    events: list[Event] = []
    outcomes: list[dict[str, Any]] = []
    opened: set[str] = set()
    by_node: dict[str, dict[str, Any]] = {}
    for flag in sorted(slow, key=lambda f: (-f["streak"], f["node"], f["gpu"])):
        by_node.setdefault(flag["node"], flag)
    for node, flag in sorted(by_node.items()):
        evidence = {"perf": {k: flag[k] for k in ("gpu", "uuid", "model", "basis", "fleet_n", "shortfalls",
                                                   "streak")}}
        if flag["streak"] >= drain_after and slurm is not None:
            decision, evs = drain.request_drain(node, "hardware", flag["cause"], job_id=None, actor="perf",
                                                 cfg=cfg, slurm=slurm, evidence=evidence)
            events.extend(evs)
            outcomes.append({"node": node, "gpu": flag["gpu"], "action": "drain", "outcome": decision.outcome})
            continue
        if observe:
            outcome = "observe"
        elif node in excluded or node in opened:
            outcome = "already_excluded"
        elif len(opened) >= limit:
            outcome = "breaker_open"
        else:
            events.append(drain.exclusion_event(
                cfg, node, "soft", drain.make_reason(prefix, "hardware", flag["cause"]), "perf", ttl_s=ttl,
                start=now, evidence={**evidence, "deep_check": True}))
            opened.add(node)
            outcome = "soft_excluded"
        outcomes.append({"node": node, "gpu": flag["gpu"], "action": "soft_exclude", "outcome": outcome})
    return events, outcomes


def scan(cfg: Config, session: Session, *, slurm: Slurm | None = None, now: datetime | None = None,
         record: bool = False) -> dict[str, Any]:
    """One scan: the baseline (published when RECORD), the slow GPUs, and with RECORD the events acting on them."""
    from slurmtools.controller import exclusions

    now = now or datetime.now(UTC)
    since = now - timedelta(seconds=float(cfg.checks.perf_window))
    history = results(session, cfg.cluster, since)
    fleet, slow = judge(cfg, history)
    out: dict[str, Any] = {"gpus": len(history), "models": fleet, "slow": slow, "events": [], "outcomes": []}
    if record:
        try:
            out["baseline_file"] = publish(cfg, fleet, now)
        except OSError as exc:      # the nodes keep the last one they read; the scan still acts
            out["baseline_error"] = f"cannot publish {cfg.checks.perf_baseline_file}: {exc.strerror or exc}"
        excluded = {x.node for x in exclusions.active(session, cfg.cluster)}
        nodes = {rows[0]["node"] for rows in history.values() if rows}
        fleet_nodes = len(nodes)
        if slurm is not None:
            try:
                fleet_nodes = max(fleet_nodes, len(slurm.nodes()))
            except Exception as exc:  # noqa: BLE001 - Slurm unreachable: the fleet is what the ledger saw
                out["slurm_error"] = f"{type(exc).__name__}: {exc}"[:300]
        out["events"], out["outcomes"] = act(cfg, slow, fleet_nodes=fleet_nodes, excluded=excluded, slurm=slurm,
                                             now=now)
    return out

