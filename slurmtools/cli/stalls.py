"""`slurmtools stalls`: jobs that hang while they hold their GPUs (docs/stalls.md)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import emit_json, fail, get_config

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm
    from slurmtools.stalls.notify import Notifier


@click.group("stalls")
def stalls_group() -> None:
    """Find running jobs whose progress stopped while their GPUs spin or idle; capture why; requeue them."""


def _seconds(value: str | None, what: str) -> float | None:
    from slurmtools.timeutil import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(f"{what}: {exc}") from None


def _scan(cfg: Config, quiet: float | None, with_evidence: bool) -> tuple[list[dict[str, Any]], list[str]]:
    from slurmtools.slurm import SlurmError, get_client
    from slurmtools.stalls import scan

    try:
        return scan.run_scan(cfg, get_client(cfg), quiet=quiet, with_evidence=with_evidence)
    except SlurmError as exc:
        fail(f"cannot read the running jobs: {exc}", 1)
    except ValueError as exc:
        fail(str(exc))


def _line(r: dict[str, Any]) -> str:
    what = "STALLED" if r["stalled"] else "ok"
    sus = f" suspect {r['suspect']}" if r["suspect"] else (" no suspect" if r["stalled"] else "")
    return f"{r['job_id']:<10} {what:<8} quiet {r['quiet_s']:>7.0f}s of {r['allowed_s']:>7.0f}s  GPUs {r['gpu']:<8}" \
           f"{sus}  ({r['evidence']['why']})"


@stalls_group.command("scan")
@click.option("--quiet", "quiet", metavar="DURATION", help="Override the minimum quiet time (e.g. 90s).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per running job judged (docs/stalls.md).")
@click.option("--no-evidence", is_flag=True, help="Do not probe the nodes of a stalled job.")
def stalls_scan(quiet: str | None, as_json: bool, no_evidence: bool) -> None:
    """Judge every running job once; exit 1 when one is stalled. Acts on nothing (see `stalls run`)."""
    cfg = get_config()
    results, warnings = _scan(cfg, _seconds(quiet, "--quiet"), not no_evidence)
    for w in warnings:
        click.echo(f"slurmtools: warning: {w}", err=True)
    if as_json:
        emit_json(results)
    else:
        click.echo(f"{len(results)} running job(s), {sum(r['stalled'] for r in results)} stalled")
        for r in results:
            click.echo(_line(r))
    raise SystemExit(1 if any(r["stalled"] for r in results) else 0)


@stalls_group.command("explain")
@click.argument("job_id", type=int)
@click.option("--quiet", "quiet", metavar="DURATION", help="Override the minimum quiet time (e.g. 90s).")
@click.option("--json", "as_json", is_flag=True)
def stalls_explain(job_id: int, quiet: str | None, as_json: bool) -> None:
    """Everything the detector sees of one running job now: progress, limits, each GPU, the verdict."""
    from slurmtools.slurm import SlurmError, get_client
    from slurmtools.stalls import scan, signals

    cfg = get_config()
    try:
        job = get_client(cfg).job(job_id)
    except SlurmError as exc:
        fail(f"cannot read job {job_id}: {exc}", 1)
    if job is None or job.state != "RUNNING":
        fail(f"job {job_id} is not running" + (f" ({job.state})" if job is not None else ""), 1)
    samples, warn = signals.gpu_samples(cfg, list(job.nodes))
    if warn:
        click.echo(f"slurmtools: warning: {warn}", err=True)
    now = time.time()
    history = scan.load_state(cfg.stalls.state_file).get(f"{job.job_id}.{job.restart_count}") or {}
    try:
        res, _ = scan.judge_job(cfg, job, now, samples, history, quiet=_seconds(quiet, "--quiet"))
    except ValueError as exc:
        fail(f"[stalls]: {exc}")
    if as_json:
        emit_json(res)
        return
    ev = res["evidence"]
    p = ev["progress"]
    click.echo(_line(res))
    last = datetime.fromtimestamp(p["last_progress"], UTC).isoformat(timespec="seconds") if p["last_progress"] \
        else "none since the start"
    click.echo(f"progress: last {last}; {len(p['files'])} file(s), {p['size']} bytes; longest gaps "
               f"{', '.join(f'{g:.0f}s' for g in p['gaps']) or '-'}; checkpoints "
               f"{', '.join(f'{c:.0f}s' for c in p['checkpoint_s']) or '-'}"
               + ("; in a checkpoint" if p["in_checkpoint_since"] else ""))
    for node, sig in ev["gpu"]["nodes"].items():
        gpus = " ".join(f"{g}:{c or '-'}" for g, c in sorted(sig["gpus"].items()))
        click.echo(f"{node:<12} {sig['class']:<8} {gpus}")
    for node, named in (ev.get("blame") or {}).items():
        click.echo(f"{node}: differs by {', '.join(named)}")


@stalls_group.command("probe")
@click.option("--job", "job_id", required=True, help="The job whose processes to look at.")
@click.option("--node", default=None, help="This node's name (default: the Slurm node this runs on).")
@click.option("--no-stacks", is_flag=True, help="No py-spy dumps.")
@click.option("--json", "as_json", is_flag=True)
def stalls_probe(job_id: str, node: str | None, no_stacks: bool, as_json: bool) -> None:
    """On a node, as root: the job's processes (states, wait channels), D-state threads, py-spy stacks and the
    kernel findings since it began. What `stalls scan` collects from every node of a stalled job."""
    from slurmtools.config import this_node
    from slurmtools.stalls import evidence

    if not job_id.isdigit():
        fail(f"--job must be a job id, got {job_id[:40]!r}")
    cfg = get_config()
    out = evidence.probe(cfg, job_id, node or this_node(), stacks=not no_stacks)
    if as_json:
        emit_json(out)
        return
    click.echo(f"job {job_id} on {out['node']}: {len(out['processes'])} process(es), {out['d_threads']} thread(s) "
               f"in D, {len(out['kernel'])} kernel finding(s)")
    for p in out["processes"]:
        click.echo(f"{p['pid']:>8} {p['ppid']:>8} {p['state']} {p['wchan'] or '-':<24} {p['cmdline'][:80]}")


@stalls_group.command("sample")
@click.option("--node", default=None, help="This node's name (default: the Slurm node this runs on).")
@click.option("--once", is_flag=True, help="One sample, then exit (cron, tests).")
def stalls_sample(node: str | None, once: bool) -> None:
    """The light per-node GPU sampler: NVML utilisation and power into the textfile collector's directory."""
    from slurmtools.config import this_node
    from slurmtools.stalls import sampler
    from slurmtools.timeutil import parse_duration

    cfg = get_config()
    name = node or this_node()
    every = parse_duration(cfg.stalls.sampler_interval).total_seconds()
    while True:
        t0 = time.monotonic()
        try:
            sampler.sample_once(cfg, name)
        except (OSError, ValueError) as exc:
            if once:
                fail(str(exc), 1)
            click.echo(f"slurmtools: warning: GPU sample not written: {exc}", err=True)
        except Exception as exc:  # noqa: BLE001 - NVML's own errors: one line, the sampler goes on
            if once:
                fail(f"NVML: {type(exc).__name__}: {exc}", 1)
            click.echo(f"slurmtools: warning: NVML: {type(exc).__name__}: {exc}", err=True)
        if once:
            return
        time.sleep(max(1.0, every - (time.monotonic() - t0)))


def one_pass(cfg: Config, slurm: Slurm, engine: Engine, notifier: Notifier | None,
             quiet: float | None = None) -> dict[str, Any]:
    """Judge every running job, record and act on the stalled ones, tell people, run due deep checks."""
    import json
    import os

    from slurmtools.fsutil import write_atomic
    from slurmtools.ledger import api
    from slurmtools.stalls import act, notify, scan

    results, warnings = scan.run_scan(cfg, slurm, quiet=quiet)
    events, outcomes = act.act_on(cfg, slurm, engine, results)
    deep_file = cfg.stalls.state_file + ".deep.json"
    pending = scan.load_state(deep_file)
    act.schedule(pending, outcomes, cfg)
    busy = {n for r in results for n in r["nodes"]}
    evs, checks = act.run_deep_checks(cfg, slurm, pending, busy) if pending else ([], [])
    events += evs
    if events:
        api.record(events, cfg)
        try:
            api.flush(cfg)
        except Exception as exc:  # noqa: BLE001 - the events wait in the spool
            warnings.append(f"ledger flush failed (events kept in the spool): {exc}")
    try:
        if pending or os.path.exists(deep_file):
            write_atomic(deep_file, json.dumps(pending), 0o600)
    except OSError as exc:
        warnings.append(f"deep checks not kept: {exc}")
    seen = scan.load_state(cfg.stalls.state_file + ".told.json")
    for o in outcomes:
        tag = f"{o['job_id']}.{o['restart_count']}.{o['outcome']}"
        if tag not in seen and notifier is not None:
            seen[tag] = time.time()
            notifier.send(notify.urls_for(cfg, o.get("partition", "")), *notify.message(o))
    try:
        write_atomic(cfg.stalls.state_file + ".told.json",
                     json.dumps({k: v for k, v in seen.items() if time.time() - float(v) < 7 * 86400}), 0o600)
    except OSError as exc:
        warnings.append(f"notifications not kept: {exc}")
    return {"judged": len(results), "stalled": [r["job_id"] for r in results if r["stalled"]],
            "outcomes": outcomes, "deep_checks": checks, "warnings": warnings}


@stalls_group.command("run")
@click.option("--interval", metavar="DURATION", help="Judge every running job this often (default stalls.interval).")
@click.option("--once", is_flag=True, help="One pass, then exit (cron, tests).")
@click.option("--quiet", "quiet", metavar="DURATION", help="Override the minimum quiet time (drills, tests).")
def stalls_run(interval: str | None, once: bool, quiet: str | None) -> None:
    """A service: every INTERVAL judge the running jobs; record each stall with its evidence; in act mode
    (`stalls.act`) signal, requeue away from the suspect and deep-check it. One leader at a time."""
    import signal as signals_

    from slurmtools.cli.common import ledger_engine
    from slurmtools.controller.leader import Leader
    from slurmtools.slurm import SlurmError, get_client
    from slurmtools.stalls.notify import Notifier

    cfg = get_config()
    every = _seconds(interval, "--interval") or _seconds(cfg.stalls.interval, "stalls.interval") or 60.0
    q = _seconds(quiet, "--quiet")
    engine = ledger_engine()
    slurm = get_client(cfg)
    notifier = Notifier(cfg.stalls.notify_retries)
    leader = Leader(engine, cfg.cluster, role="stalls") if cfg.controller.leader_election else None
    stop = {"now": False}
    signals_.signal(signals_.SIGTERM, lambda *_: stop.__setitem__("now", True))
    try:
        while not stop["now"]:
            t0 = time.monotonic()
            if leader is None or leader.hold():
                try:
                    rep = one_pass(cfg, slurm, engine, notifier, q)
                except (SlurmError, ValueError) as exc:
                    rep = {"error": str(exc)}
                except Exception as exc:      # a pass that failed (the ledger, a bug) is said, not fatal
                    if once:
                        raise
                    rep = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
                stamp = datetime.now(UTC).isoformat(timespec="seconds")
                if "error" in rep:
                    click.echo(f"{stamp} stalls: error: {rep['error']}", err=True)
                else:
                    click.echo(f"{stamp} stalls: {rep['judged']} job(s), {len(rep['stalled'])} stalled"
                               + "".join(f"; job {o['job_id']} {o['outcome']}" for o in rep["outcomes"])
                               + "".join(f"; warning: {w}" for w in rep["warnings"]), err=True)
            if once:
                notifier.wait(30.0)
                return
            while not stop["now"] and time.monotonic() - t0 < every:
                time.sleep(0.2)
    finally:
        if leader is not None:
            leader.release()
