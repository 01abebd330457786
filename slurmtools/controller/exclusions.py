"""Exclusions: which nodes are kept out of jobs, why, by whom, until when; and keeping Slurm in step.

The ledger is the record (table `exclusions`). Scope `drain`: the node is drained in Slurm with our
reason (every drain we make opens one, see `drain.request_drain`). Scope `soft`: the node stays
schedulable, but resubmissions, `slurmtools sbatch` and the job_submit plugin avoid it.

Rules: we never resume or re-reason a node whose current reason is not ours; a node we drained is
resumed only when no active drain exclusion is left on it.
"""

from __future__ import annotations

import getpass
import grp
import logging
import os
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from slurmtools import drain
from slurmtools.ledger import models
from slurmtools.ledger.spool import Event, make_key

if TYPE_CHECKING:
    from collections.abc import Iterable

    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm

log = logging.getLogger(__name__)


class PermissionDenied(RuntimeError):
    pass


def require_admin(cfg: Config) -> str:
    """The acting admin's name; raises PermissionDenied unless root or in exclusions.admin_group."""
    user = getpass.getuser()
    if os.geteuid() == 0:
        return user
    group = str(cfg.exclusions.admin_group or "")
    if group:
        try:
            g = grp.getgrnam(group)
        except KeyError:
            raise PermissionDenied(f"admin group {group!r} does not exist") from None
        if user in g.gr_mem or g.gr_gid in os.getgroups():
            return user
    raise PermissionDenied("only root" + (f" or members of {group!r}" if group else "") +
                           " may change exclusions (anyone may list them)")


def active(session: Session, cluster: str, now: datetime | None = None,
           nodes: list[str] | None = None) -> list[models.Exclusion]:
    """Exclusions in force: not ended, not expired."""
    now = now or datetime.now(UTC)
    X = models.Exclusion
    stmt = select(X).where(X.cluster == cluster, X.end.is_(None), or_(X.expires.is_(None), X.expires > now))
    if nodes:
        stmt = stmt.where(X.node.in_(nodes))
    return list(session.scalars(stmt.order_by(X.node, X.start)))


def listing(session: Session, cluster: str, *, include_ended: bool = False) -> list[models.Exclusion]:
    X = models.Exclusion
    if not include_ended:
        return active(session, cluster)
    return list(session.scalars(select(X).where(X.cluster == cluster).order_by(X.node, X.start)))


def known_nodes(slurm: Slurm | None) -> set[str] | None:
    """The node names Slurm lists, or None when it cannot be asked (logged)."""
    if slurm is None:
        return None
    try:
        return {n.name for n in slurm.nodes()}
    except Exception as exc:  # noqa: BLE001 - any backend's error: published with the name grammar alone
        log.warning("exclusions: cannot ask Slurm which nodes exist: %s", str(exc).splitlines()[0] if str(exc)
                    else repr(exc))
        return None


def usable(nodes: Iterable[str], known: set[str] | None) -> list[str]:
    """The NODES a job's excluded list may carry: names in Slurm's grammar that Slurm lists (KNOWN; None: the
    grammar alone). One name Slurm refuses in `--exclude` or ExcNodeList fails the whole submission or update."""
    from slurmtools.plugins import valid_name

    return sorted(n for n in set(nodes) if valid_name(n) and (known is None or n in known))


def publish(cfg: Config, session: Session, now: datetime | None = None, *, known: set[str] | None = None) -> bool:
    """Write the active exclusions to `exclusions.data_file` (JSON, for `slurmtools sbatch`) and to
    `exclusions.plugin_file` (for the Lua plugins): world-readable, write + fsync + rename. Returns whether
    they were rewritten: an unchanged set is rewritten only after 60 s, so `generated` says how fresh it is.

    Neither file ever names a node outside Slurm's name grammar, nor one missing from KNOWN (the nodes Slurm
    lists; None: not known, the grammar alone decides): every job's `--exclude` carries these names, and one
    name Slurm refuses makes every submission fail. What is left out stays in the ledger and is logged."""
    import json

    from slurmtools import plugins
    from slurmtools.fsutil import write_atomic

    now = now or datetime.now(UTC)
    rows = []
    for x in active(session, cfg.cluster, now):
        if not plugins.valid_name(x.node) or (known is not None and x.node not in known):
            log.error("exclusions: not published: node %r is %s", x.node,
                      "not a valid Slurm node name" if not plugins.valid_name(x.node) else "not a node Slurm lists")
            continue
        rows.append({"node": x.node, "scope": x.scope, "reason": x.reason, "source": x.source,
                     "expires_epoch": x.expires.timestamp() if x.expires else None})
    path = str(cfg.exclusions.data_file)
    lua_path = str(cfg.exclusions.plugin_file)
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh)
        if old.get("exclusions") == rows and now.timestamp() - float(old.get("generated_epoch", 0)) < 60 \
                and os.path.exists(lua_path):
            return False
    except (OSError, ValueError, AttributeError):
        pass
    data = {"version": 1, "cluster": cfg.cluster, "generated_epoch": now.timestamp(), "exclusions": rows}
    os.makedirs(os.path.dirname(path) or ".", mode=0o755, exist_ok=True)
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1, allow_nan=False) + "\n", 0o644, durable=True)
    # the plugins' file last: one too big for them (PluginError) leaves the JSON current and is raised to say so
    text, problems = plugins.render_data(rows, now.timestamp())
    for problem in problems:   # a name the Lua plugins must never see; the JSON keeps it for the record
        log.error("exclusions: not published to the plugins: %s", problem)
    os.makedirs(os.path.dirname(lua_path) or ".", mode=0o755, exist_ok=True)
    write_atomic(lua_path, text, 0o644, durable=True)
    return True


def to_dict(x: models.Exclusion, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    expired = x.end is None and x.expires is not None and x.expires <= now
    return {"node": x.node, "scope": x.scope, "reason": x.reason, "source": x.source,
            "start": x.start.isoformat(), "expires": x.expires.isoformat() if x.expires else None,
            "end": x.end.isoformat() if x.end else None, "outcome": x.outcome or ("expired" if expired else None),
            "active": x.end is None and not expired, "key": x.idempotency_key, "evidence": x.details}


def end_event(cfg: Config, x: models.Exclusion, outcome: str, why: str = "") -> Event:
    now = datetime.now(UTC)
    return Event("exclusion_end", {"exclusion_key": x.idempotency_key, "node": x.node, "end": now.isoformat(),
                                   "outcome": outcome, "why": why},
                 cluster=cfg.cluster, key=make_key("exclusion_end", x.idempotency_key))


def add(cfg: Config, slurm: Slurm | None, nodes: list[str], reason: str, *, user: str, ttl_s: float | None,
        soft: bool) -> tuple[list[dict[str, Any]], list[Event]]:
    """Exclude NODES. Returns what happened per node and the events to record."""
    results, events = [], []
    source = f"admin:{user}"
    for node in nodes:
        if soft:
            events.append(drain.exclusion_event(cfg, node, "soft", reason, source, ttl_s=ttl_s))
            results.append({"node": node, "scope": "soft", "outcome": "excluded"})
            continue
        decision, evs = drain.request_drain(node, "admin", reason, job_id=None, actor=source, cfg=cfg, slurm=slurm,
                                             ttl_s=ttl_s or 0.0)
        events.extend(evs)
        if decision.outcome == "already_ours":   # drained by us already: the admin's exclusion still counts
            events.append(drain.exclusion_event(cfg, node, "drain", decision.reason, source, ttl_s=ttl_s))
        results.append({"node": node, "scope": "drain", "outcome": decision.outcome, "detail": decision.detail})
    return results, events


def remove(cfg: Config, slurm: Slurm, session: Session, nodes: list[str], *, user: str,
           why: str = "") -> tuple[list[dict[str, Any]], list[Event]]:
    """End the active exclusions of NODES; resume those we drained (never a node whose reason is not ours)."""
    results, events = [], []
    current: dict[str, list[models.Exclusion]] = {}
    for x in active(session, cfg.cluster, nodes=nodes):
        current.setdefault(x.node, []).append(x)
    from slurmtools.plugins import valid_name

    valid = [n for n in nodes if valid_name(n)]     # Slurm is asked about names it could have, only
    states = {n.name: n for n in slurm.nodes(valid)} if valid else {}
    for node in nodes:
        mine = current.get(node, [])
        for x in mine:
            events.append(end_event(cfg, x, "removed", why or f"removed by {user}"))
        outcome = "ended" if mine else "not_excluded"
        info = states.get(node)
        if info is not None and (info.drain or info.state == "down") and any(x.scope == "drain" for x in mine):
            decision, ev = drain.request_resume(node, cfg=cfg, slurm=slurm, actor=f"admin:{user}",
                                                 why=why or "exclusion removed")
            events.append(ev)
            outcome = f"ended, {decision.outcome}"
        results.append({"node": node, "outcome": outcome, "exclusions": len(mine)})
    return results, events


def sync(cfg: Config, slurm: Slurm, session: Session, now: datetime | None = None) -> tuple[list[dict[str, Any]],
                                                                                        list[Event]]:
    """Reconcile the ledger and Slurm. Nothing changed → nothing done, nothing recorded.

    * an exclusion past its expiry is ended (`expired`); its node is resumed if we drained it and no
      other drain exclusion is left;
    * a node drained with our reason and no active drain exclusion, for longer than `sync_grace`
      (the exclusion may still be unshipped in a node's spool), is resumed;
    * an active drain exclusion whose node is not drained is drained again (through the safety rails).
    """
    now = now or datetime.now(UTC)
    prefix = cfg.reason_prefix
    grace = timedelta(seconds=float(cfg.exclusions.sync_grace))
    X = models.Exclusion
    open_rows = list(session.scalars(select(X).where(X.cluster == cfg.cluster, X.end.is_(None))))
    expired = [x for x in open_rows if x.expires is not None and x.expires <= now]
    live = [x for x in open_rows if x not in expired]
    drain_live = {x.node for x in live if x.scope == "drain"}
    actions: list[dict[str, Any]] = []
    events: list[Event] = []
    for x in expired:
        events.append(end_event(cfg, x, "expired"))
        actions.append({"node": x.node, "action": "end", "outcome": "expired", "scope": x.scope})
    nodes = slurm.nodes()
    for n in nodes:
        drained = n.drain or n.state == "down"
        if not drained or not drain.is_ours(n.reason, prefix) or n.name in drain_live:
            continue
        had_expired = any(x.node == n.name and x.scope == "drain" for x in expired)
        old_enough = n.reason_time is not None and now - n.reason_time >= grace
        if had_expired or old_enough:
            decision, ev = drain.request_resume(n.name, cfg=cfg, slurm=slurm, actor="sync",
                                                 why="expired" if had_expired else "no active exclusion")
            events.append(ev)
            actions.append({"node": n.name, "action": "resume", "outcome": decision.outcome})
    by_name = {n.name: n for n in nodes}
    for node in sorted(drain_live):
        info = by_name.get(node)
        if info is None or info.drain or info.state == "down":
            continue
        x = next(x for x in live if x.node == node and x.scope == "drain")
        cause = x.reason[len(prefix):].strip() if x.reason.startswith(prefix) else x.reason
        category, _, rest = cause.partition(": ")
        decision, evs = drain.request_drain(node, category if rest else "excluded", rest or cause, job_id=None,
                                             actor="sync", cfg=cfg, slurm=slurm, record_exclusion=False)
        events.extend(evs)
        actions.append({"node": node, "action": "drain", "outcome": decision.outcome})
    return actions, events
