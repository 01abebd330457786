"""`slurmtools advise checkpoint|publish`: the checkpoint interval that maximises goodput for a job of this size on
this cluster, from the ledger's own figures (docs/reports.md#checkpoint-advice)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import emit_json, fail, get_config, since_option

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.reports.scope import Scope


@click.group("advise")
def advise_group() -> None:
    """Advice a researcher can act on, from the ledger: `checkpoint` (the interval), `publish` (for sbatch)."""


def duration_s(value: str | None, option: str) -> float | None:
    """`6h`, `5m`, `90s` or plain seconds; anything else (or beyond ten years) is a one-line error."""
    from slurmtools.reports.advice import MAX_SECONDS
    from slurmtools.timeutil import parse_duration

    if value is None:
        return None
    text = value.strip()
    try:
        if text.isascii() and text.replace(".", "", 1).isdigit():
            seconds = float(text)
        else:
            seconds = parse_duration(text).total_seconds()
    except (ValueError, OverflowError):
        fail(f"{option} {value[:40]!r} is not a duration (e.g. 90s, 5m, 6h, 2d)")
    if not math.isfinite(seconds) or seconds > MAX_SECONDS:
        fail(f"{option} {value[:40]!r}: more than ten years")
    return seconds


def _scope(cfg: Config, since: str, partition: str | None, gpus_per_node: int) -> Any:
    from slurmtools.reports.scope import Scope

    t0, t1 = since_option(since), datetime.now(UTC)
    assert t0 is not None
    return Scope(cluster=cfg.cluster, since=t0, until=t1, partition=partition, nodes=cfg.reports.nodes,
                 gpus_per_node=gpus_per_node, merge_gap_s=cfg.reports.merge_gap,
                 lookback_s=cfg.reports.lookback, multi_node_min=cfg.reports.multi_node_min)


def _gather(cfg: Config, scope: Scope, gpus: int, job: int | None, user: str | None) -> Any:
    """The ledger's figures, or (no access to the ledger) the published summary's, with a note saying which."""
    from slurmtools.ledger.db import make_engine
    from slurmtools.reports import advice

    engine = None
    try:
        engine = make_engine(cfg.ledger.url, readonly=True)
        return advice.gather(engine, scope, gpus=gpus, prefix=cfg.reason_prefix, job=job, user=user)
    except Exception as exc:  # noqa: BLE001 - no ledger access: the published figures, or one line
        why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc.__class__.__name__
        inp = _published(cfg, gpus)
        if inp is None:
            fail(f"cannot read the ledger ({why}) and no published advice; give --mtti, --checkpoint-cost and "
                 "--restart-cost", 1)
        inp.notes.append(f"the ledger could not be read ({why}): figures from the published summary")
        return inp
    finally:
        if engine is not None:
            engine.dispose()


def _published(cfg: Config, gpus: int) -> Any:
    import json

    from slurmtools.reports import advice

    try:
        with open(cfg.advise.data_file, encoding="utf-8") as fh:
            data = json.loads(fh.read(1_000_000))
        return advice.from_summary(data, gpus)
    except (OSError, ValueError):
        return None


@advise_group.command("checkpoint")
@click.option("--nodes", type=click.IntRange(min=1, max=1_000_000), help="The job's nodes.")
@click.option("--gpus", type=click.IntRange(min=1, max=100_000_000), help="The job's GPUs (default: nodes x "
                                                                          "GPUs per node).")
@click.option("--gpus-per-node", type=click.IntRange(min=1, max=1024),
              help="GPUs per node (default: reports.gpus_per_node).")
@click.option("--job", type=click.IntRange(min=1), help="Take the checkpoint and restart costs (and the current "
                                                        "interval) from this job's own history.")
@click.option("--user", help="Whose recorded checkpoints to prefer (default: you).")
@click.option("--partition", help="Only this partition's jobs (after the user's own figures).")
@click.option("--since", default="90d", show_default=True, help="How far back the ledger is read.")
@click.option("--mtti", help="Mean time to interrupt (e.g. 6h): replaces the ledger's projection.")
@click.option("--checkpoint-cost", help="Seconds to write a checkpoint (e.g. 5m): replaces the ledger's.")
@click.option("--restart-cost", help="Seconds from interruption to computing again (e.g. 10m): replaces the "
                                     "ledger's.")
@click.option("--weibull-shape", type=click.FloatRange(0.1, 20), help="Shape of the gaps between interruptions "
              "(1: exponential; below 1: bursts): replaces the fit to the ledger's gaps.")
@click.option("--interval", "current", help="The interval the job uses now (e.g. 1h), to compare.")
@click.option("--simulate", is_flag=True, help="Also check the advice by Monte Carlo with the recorded "
                                               "distributions (a few seconds).")
@click.option("--json", "as_json", is_flag=True)
def checkpoint_cmd(nodes: int | None, gpus: int | None, gpus_per_node: int | None, job: int | None, user: str | None,
                   partition: str | None, since: str, mtti: str | None, checkpoint_cost: str | None,
                   restart_cost: str | None, weibull_shape: float | None, current: str | None, simulate: bool,
                   as_json: bool) -> None:
    """The checkpoint interval that maximises the expected goodput of a job of this size (Young/Daly with the
    restart cost, on the ledger's figures), the goodput there and the range of intervals within 1 % of it."""
    import getpass

    from slurmtools.reports import advice, model

    if nodes is None and gpus is None:
        fail("give the job's size: --nodes N or --gpus N")
    cfg = get_config()
    gpn = gpus_per_node or cfg.reports.gpus_per_node
    n_gpus = gpus or (nodes or 1) * gpn
    over = {k: duration_s(v, o) for k, v, o in (("mtti", mtti, "--mtti"), ("delta", checkpoint_cost,
                                                "--checkpoint-cost"), ("r", restart_cost, "--restart-cost"),
                                               ("cur", current, "--interval"))}
    if over["mtti"] is not None and over["mtti"] <= 0:
        fail("--mtti must be more than 0")
    if all(over[k] is not None for k in ("mtti", "delta", "r")) and job is None:
        inp = advice.Inputs()      # every figure given: nothing to read
    else:
        if user is None:
            try:
                user = getpass.getuser()
            except (KeyError, OSError):
                user = None
        inp = _gather(cfg, _scope(cfg, since, partition, gpn), n_gpus, job, user)
    try:
        inp.mtti = advice.override(inp.mtti, over["mtti"], "--mtti")
        inp.checkpoint = advice.override(inp.checkpoint, over["delta"], "--checkpoint-cost")
        inp.restart = advice.override(inp.restart, over["r"], "--restart-cost")
        inp.current = advice.override(inp.current, over["cur"], "--interval")
        if weibull_shape is not None:
            inp.weibull = advice.Figure(weibull_shape, "option --weibull-shape", 0)
        out = advice.compose(inp, gpus=n_gpus, nodes=nodes)
        if simulate:
            out["simulation"] = advice.check_by_simulation(out, inp)
    except (advice.AdviceError, model.ModelError) as exc:
        fail(str(exc), 1)
    if as_json:
        emit_json(out)
        return
    click.echo(render(out))


def render(a: dict[str, Any]) -> str:
    from slurmtools.reports.advice import format_duration as fd

    lo, hi = a["range_s"]
    size = f"{a['gpus']} GPUs" + (f" ({a['nodes']} nodes)" if a.get("nodes") else "")
    lines = [f"checkpoint every {fd(a['interval_s'])} ({a['interval_s']:.0f} s) for a job of {size}",
             f"  expected goodput there: {a['goodput'] * 100:.2f}%",
             f"  within {a['range_share'] * 100:g}% of the best: every {fd(lo)} to {fd(hi)}"]
    if a.get("goodput_at_current") is not None:
        lines.append(f"  at the current interval ({fd(a['current_interval_s'])}): "
                     f"{a['goodput_at_current'] * 100:.2f}%  ({a['current_interval_from']})")
    iv = a.get("mtti_interval_s")
    ci = (f", {a['mtti_confidence'] * 100:.0f}% interval {fd(iv[0])} to {fd(iv[1]) if iv[1] else 'unbounded'}"
          if iv else "")
    lines += [f"  mean time to interrupt M = {fd(a['mtti_s'])}{ci}  [{a['mtti_from']}]"]
    if a.get("interval_at_mtti_interval_s"):
        x, y = a["interval_at_mtti_interval_s"]
        lines.append(f"    advice at the interval's ends: {fd(x)} to {fd(y) if y else 'n/a'}")
    lines += [f"  checkpoint cost = {fd(a['checkpoint_cost_s'])}  [{a['checkpoint_cost_from']}]",
              f"  restart cost R = {fd(a['restart_cost_s'])}  [{a['restart_cost_from']}]",
              f"  gaps between interruptions: Weibull shape {a['failure_shape']:g}  [{a['failure_shape_from']}]",
              f"  Young: {fd(a['young_s'])}, Daly: {fd(a['daly_s'])}; model: {a['model']}"]
    s = a.get("simulation")
    if s:
        lines.append(f"  simulation ({s['failures']}, {s['replicas']} runs): {s['goodput_at_advised'] * 100:.2f}% at "
                     f"the advice, best {s['best_goodput'] * 100:.2f}% at {fd(s['best_interval_s'])}")
    lines += [f"  note: {n}" for n in a.get("notes", [])]
    return "\n".join(lines)


@advise_group.command("publish")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write (default: advise.data_file).")
@click.option("--since", default="90d", show_default=True)
def publish_cmd(output: Path | None, since: str) -> None:
    """Write the figures behind the advice (interruptions per GPU-second, checkpoint and restart costs) to a
    world-readable file, for the sbatch wrapper's one line (it runs as the user, without the database)."""
    import json

    from slurmtools import fsutil
    from slurmtools.ledger.db import make_engine
    from slurmtools.reports import advice

    cfg = get_config()
    scope = _scope(cfg, since, None, cfg.reports.gpus_per_node)
    try:
        engine = make_engine(cfg.ledger.url, readonly=True)
        try:
            inp = advice.gather(engine, scope, gpus=1, prefix=cfg.reason_prefix)
        finally:
            engine.dispose()
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        fail(f"cannot read the ledger: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc}", 1)
    data = advice.summary(inp, scope, datetime.now(UTC))
    path = output or Path(cfg.advise.data_file)
    try:
        fsutil.write_atomic(str(path), json.dumps(data, allow_nan=False, indent=1) + "\n", mode=0o644)
    except (OSError, ValueError) as exc:
        fail(f"cannot write {path}: {exc}", 1)
    click.echo(f"wrote {path}", err=True)
