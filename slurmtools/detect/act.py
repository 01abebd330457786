"""Acting on flags: each flag is a ledger finding (kind `anomaly`, trust `metrics`, the evidence in its
details); through the safety rails a flag opens a *soft* exclusion with a TTL (new jobs, resubmissions and the
job_submit plugin avoid the node; it is not drained), and a hard signal (a fatal XID, a double-bit error, a
row-remap failure) asks for a drain through `drain.request_drain` like every other drain.

Rails: observe mode records the findings and opens nothing; a node already excluded gets no second
exclusion; soft exclusions are limited like drains (the circuit breaker's limit over the nodes Slurm lists),
counting every detect exclusion still active, not only this scan's, so a broken exporter or a bad threshold
cannot push the whole fleet aside, not even one limit's worth per pass.

Names come from Prometheus labels, which whoever runs an exporter writes: a flag is acted on only for a node
Slurm lists (the label's value as it is, or in lower case). A name Slurm does not know (`n[1-500]`, an IP
address, markup, a name with a newline) is recorded as a finding (outcome `unknown_node`), never excluded
nor drained; with no answer from Slurm nothing is excluded (`slurm_unavailable`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slurmtools import drain
from slurmtools.ledger.spool import Event, make_key
from slurmtools.textsafe import clean

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm


def slurm_name(label: str, known: set[str]) -> str | None:
    """The Slurm node LABEL (a node label's value, already without port and domain: scan.node_of) names."""
    for name in (label, label.lower()):
        if name in known:
            return name
    return None


def finding_event(cfg: Config, flag: dict[str, Any]) -> Event:
    dev = flag.get("device")
    what = f"{flag['kind']} on {'GPU ' + dev if dev and dev.isdigit() else dev or 'the node'}"
    tops = ", ".join(f"{s['signal']}" + (f" z={s['z_self']}" if s.get("z_self") is not None else "")
                     for s in flag["signals"][:3])
    data = {"node": flag["node"], "job_id": None, "source": "detect", "kind": "anomaly",
            "gpu": dev if dev and dev.isdigit() else None, "category": flag["category"],
            "severity": "error" if flag["hard"] else "warning",
            "action": "drain_node" if flag["hard"] else "soft_exclude", "trust": "metrics",
            "message": f"metrics anomaly: {what} (score {flag['score']}; {tops})"[:2000],
            "details": {"flag": flag}}
    key = make_key("detect", cfg.cluster, flag["node"], dev, flag["start"])
    return Event("finding", data, cluster=cfg.cluster, key=key)


def events_for(cfg: Config, flags: list[dict[str, Any]], *, known: set[str] | None, excluded: set[str],
               active_detect: int = 0, slurm: Slurm | None = None) -> tuple[list[Event], list[dict[str, Any]]]:
    """The ledger events for FLAGS and what was done per flag. KNOWN: the nodes Slurm lists (None: Slurm did
    not answer); EXCLUDED: nodes with an active exclusion; ACTIVE_DETECT: detect's exclusions now in force."""
    from slurmtools.timeutil import parse_duration

    events: list[Event] = []
    outcomes: list[dict[str, Any]] = []
    observe = cfg.general.observe
    prefix = cfg.reason_prefix
    ttl = parse_duration(cfg.detect.soft_ttl).total_seconds()
    limit = cfg.drain_limit(len(known or ()))
    opened: set[str] = set()
    for flag in flags:
        node = slurm_name(str(flag["node"]), known) if known is not None else None
        if node is None:
            ev = finding_event(cfg, {**flag, "node": clean(flag["node"])[:64]})
            ev.data["details"]["slurm_node"] = False
            ev.data["message"] += " (not a node Slurm lists: not acted on)"
            events.append(ev)
            outcomes.append({"node": ev.data["node"], "device": flag.get("device"), "action": "none",
                             "outcome": "slurm_unavailable" if known is None else "unknown_node"})
            continue
        flag = {**flag, "node": node}
        ev = finding_event(cfg, flag)
        events.append(ev)
        cause = f"anomaly {flag['kind']} {flag.get('device') or ''} (metrics, score {flag['score']})"
        evidence = {"finding_key": ev.key, "flag_start": flag["start"]}
        if flag["hard"] and cfg.detect.drain_on_hard and slurm is not None:
            decision, evs = drain.request_drain(node, flag["category"], cause, job_id=None, actor="detect",
                                                 cfg=cfg, slurm=slurm, evidence=evidence)
            events.extend(evs)
            outcomes.append({"node": node, "device": flag.get("device"), "action": "drain",
                             "outcome": decision.outcome})
            continue
        if observe:
            outcome = "observe"
        elif node in excluded or node in opened:
            outcome = "already_excluded"
        elif len(opened) + active_detect >= limit:
            outcome = "breaker_open"
        else:
            events.append(drain.exclusion_event(cfg, node, "soft", drain.make_reason(prefix, flag["category"], cause),
                                                 "detect", ttl_s=ttl, evidence=evidence))
            opened.add(node)
            outcome = "soft_excluded"
        outcomes.append({"node": node, "device": flag.get("device"), "action": "soft_exclude", "outcome": outcome})
    return events, outcomes
