"""`slurmtools exclude ...`: the admin CLI for exclusions (see slurmtools/controller/exclusions.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config, ledger_session, spool_and_flush
from slurmtools.textsafe import clean

if TYPE_CHECKING:
    from slurmtools.config import Config


def _nodes(hostlist: str) -> list[str]:
    from slurmtools.slurm.parse import expand

    try:
        nodes = list(expand(hostlist))
    except Exception as exc:  # noqa: BLE001 - python-hostlist's errors, as a clear message
        fail(f"not a valid hostlist: {hostlist!r} ({exc})")
    if not nodes:
        fail(f"not a valid hostlist: {hostlist!r}")
    from slurmtools.plugins import valid_name

    bad = [n for n in nodes if not valid_name(n)]
    if bad:
        fail(f"not a valid node name: {bad[0]!r} (letters, digits, '-', '_', '.'; at most 64 characters)")
    return nodes


def _admin(cfg: Config) -> str:
    from slurmtools.controller.exclusions import PermissionDenied, require_admin

    try:
        return require_admin(cfg)
    except PermissionDenied as exc:
        fail(str(exc), 1)


def _slurm(cfg: Config) -> Any:
    from slurmtools.slurm import get_client

    return get_client(cfg)


def _publish(cfg: Config) -> None:
    """Rewrite the published exclusions (for `slurmtools sbatch` and the job_submit plugin)."""
    from slurmtools.controller import exclusions
    from slurmtools.plugins import PluginError
    from slurmtools.slurm import SlurmError

    try:
        known = exclusions.known_nodes(_slurm(cfg))
    except SlurmError:
        known = None
    try:
        with ledger_session() as session:
            exclusions.publish(cfg, session, known=known)
    except (OSError, PluginError) as exc:   # recorded all the same; the next publish tries again
        echo(f"slurmtools: warning: cannot publish the exclusions: {exc}", err=True)


def _report(rows: list[dict[str, Any]], as_json: bool, record: dict[str, Any] | None) -> None:
    if as_json:
        emit_json({"results": rows, "ledger": record})
        return
    for row in rows:
        echo("  ".join(f"{k}={clean(v)}" for k, v in row.items() if v not in (None, "")))


@click.group("exclude")
def exclude_group() -> None:
    """Keep nodes out of jobs (drained, or softly avoided), list and reconcile exclusions."""


@exclude_group.command("add")
@click.argument("hostlist")
@click.option("--reason", required=True, help="Why (shown in sinfo -R after our prefix).")
@click.option("--ttl", help="Expire after this long (90m, 12h, 7d); default exclusions.admin_ttl.")
@click.option("--soft", is_flag=True, help="Do not drain: only resubmissions and wrapped/plugged jobs avoid it.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def exclude_add(hostlist: str, reason: str, ttl: str | None, soft: bool, as_json: bool) -> None:
    """Exclude the nodes of HOSTLIST (n[1-3],gpu017)."""
    from slurmtools.controller import exclusions
    from slurmtools.slurm import SlurmError
    from slurmtools.timeutil import parse_duration

    cfg = get_config()
    user = _admin(cfg)
    nodes = _nodes(hostlist)
    if not reason.strip():
        fail("--reason must say why")
    limit = cfg.exclusions.max_nodes
    if len(nodes) > limit:
        fail(f"{hostlist!r} names {len(nodes)} nodes, more than exclusions.max_nodes ({limit}); nothing excluded")
    try:
        known = {n.name for n in _slurm(cfg).nodes()}
    except SlurmError as exc:
        fail(f"cannot ask Slurm which nodes exist: {exc}; nothing excluded")
    unknown = [n for n in nodes if n not in known]
    if unknown:
        fail(f"Slurm knows no node {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
             + "; nothing excluded")
    try:
        ttl_s = parse_duration(ttl).total_seconds() if ttl else cfg.exclusions.admin_ttl or None
    except ValueError as exc:
        fail(str(exc))
    try:
        rows, events = exclusions.add(cfg, _slurm(cfg), nodes, reason, user=user, ttl_s=ttl_s, soft=soft)
    except SlurmError as exc:
        fail(str(exc))
    record = spool_and_flush(events, quiet=as_json) if events else None
    _publish(cfg)
    _report(rows, as_json, record)
    if any(r["outcome"] in ("breaker_open", "error", "not_ours") for r in rows):
        sys.exit(1)


@exclude_group.command("remove")
@click.argument("hostlist", required=False)
@click.option("--key", "keys", multiple=True, metavar="KEY",
              help="End this exclusion (its key from `exclude list --json`), whatever its node's name; repeatable.")
@click.option("--reason", "why", default="", help="Why the exclusion ends (recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def exclude_remove(hostlist: str | None, keys: tuple[str, ...], why: str, as_json: bool) -> None:
    """End the exclusions of HOSTLIST and resume the nodes we drained (never an admin's drain). HOSTLIST may
    also be a node name exactly as an active exclusion holds it, even one that is no valid hostlist."""
    from slurmtools.controller import exclusions
    from slurmtools.slurm import SlurmError

    cfg = get_config()
    user = _admin(cfg)
    if not hostlist and not keys:
        fail("give a HOSTLIST or --key")
    with ledger_session() as session:
        current = exclusions.active(session, cfg.cluster)
        if keys:
            by_key = {x.idempotency_key: x for x in current}
            missing = [k for k in keys if k not in by_key]
            if missing:
                fail(f"no active exclusion with key {missing[0]!r}")
            rows = [{"node": by_key[k].node, "key": k, "outcome": "ended"} for k in keys]
            events = [exclusions.end_event(cfg, by_key[k], "removed", why or f"removed by {user}") for k in keys]
        else:
            assert hostlist is not None
            literal = {x.node for x in current if x.node == hostlist}
            nodes = sorted(literal) or _nodes(hostlist)
            try:
                rows, events = exclusions.remove(cfg, _slurm(cfg), session, nodes, user=user, why=why)
            except SlurmError as exc:
                fail(str(exc))
    record = spool_and_flush(events, quiet=as_json) if events else None
    _publish(cfg)
    _report(rows, as_json, record)


@exclude_group.command("list")
@click.option("--all", "include_ended", is_flag=True, help="Include ended and expired exclusions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def exclude_list(include_ended: bool, as_json: bool) -> None:
    """Exclusions in force (anyone may list)."""
    from slurmtools.controller import exclusions

    cfg = get_config()
    with ledger_session() as session:
        rows = [exclusions.to_dict(x) for x in exclusions.listing(session, cfg.cluster, include_ended=include_ended)]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        echo("no exclusions")
    for r in rows:
        until = (r["end"] and f"ended {r['end'][:19]} ({r['outcome']})") or (
            f"until {r['expires'][:19]}" if r["expires"] else "no expiry")
        echo(f"{clean(r['node']):<12} {r['scope']:<6} {clean(r['source']):<18} since {r['start'][:19]}  {until}  "
             f"{clean(r['reason'])}")


@exclude_group.command("history")
@click.argument("node")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def exclude_history(node: str, as_json: bool) -> None:
    """Every exclusion and drain/resume of NODE, oldest first."""
    from sqlalchemy import select

    from slurmtools.controller import exclusions
    from slurmtools.ledger import models

    cfg = get_config()
    X, S = models.Exclusion, models.NodeStateChange
    with ledger_session() as session:
        excl = [exclusions.to_dict(x) for x in session.scalars(
            select(X).where(X.cluster == cfg.cluster, X.node == node).order_by(X.start))]
        changes = [{"time": c.time.isoformat(), "action": c.action, "actor": c.actor, "reason": c.reason,
                    "applied": c.applied, "outcome": (c.details or {}).get("outcome")}
                   for c in session.scalars(select(S).where(S.cluster == cfg.cluster, S.node == node).order_by(S.time))]
    if as_json:
        emit_json({"node": node, "exclusions": excl, "state_changes": changes})
        return
    for r in excl:
        echo(f"exclusion {r['start'][:19]} {r['scope']} {clean(r['source'])}: {clean(r['reason'])} "
             f"[{'active' if r['active'] else (r['outcome'] or 'ended')}]")
    for c in changes:
        echo(f"{c['time'][:19]} {c['action']:<7} {clean(c['actor']):<16} {c['outcome'] or ''} {clean(c['reason'])}")


@exclude_group.command("sync")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def exclude_sync(as_json: bool) -> None:
    """Reconcile the ledger and Slurm (expired exclusions, drains without one, exclusions not drained)."""
    from slurmtools.controller import exclusions
    from slurmtools.slurm import SlurmError

    cfg = get_config()
    _admin(cfg)
    with ledger_session() as session:
        try:
            actions, events = exclusions.sync(cfg, _slurm(cfg), session)
        except SlurmError as exc:
            fail(str(exc))
    record = spool_and_flush(events, quiet=as_json) if events else None
    _publish(cfg)
    if as_json:
        emit_json({"actions": actions, "ledger": record})
        return
    echo("in sync: nothing to do" if not actions else "\n".join(
        f"{a['node']}: {a['action']} -> {a['outcome']}" for a in actions))
