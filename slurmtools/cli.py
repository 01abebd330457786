"""The `slurmtools` command. Subcommands import their heavy modules lazily so hooks stay fast."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, NoReturn

import click

from slurmtools import __version__

log = logging.getLogger("slurmtools")


def emit_json(data: Any) -> None:
    """Print one JSON document and nothing else on stdout."""
    click.echo(json.dumps(data, indent=None, sort_keys=False, default=str))


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"slurmtools: error: {message}", err=True)
    sys.exit(code)


def _config() -> Any:
    from slurmtools import config

    try:
        return config.get()
    except config.ConfigError as exc:
        fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurmtools")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Health gates, fault diagnosis, a failure ledger and automatic requeue for Slurm GPU clusters."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="slurmtools: %(levelname)s: %(message)s")


# ---------------------------------------------------------------------------------- config
@main.group("config")
def config_group() -> None:
    """Show or check the configuration."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def config_show(as_json: bool) -> None:
    """Print the effective configuration (defaults + operator file + environment)."""
    cfg = _config()
    if as_json:
        emit_json({"sources": cfg.sources, "config": cfg.data})
        return
    click.echo("# sources: " + ", ".join(cfg.sources))
    for section, values in cfg.data.items():
        click.echo(f"\n[{section}]")
        for key, value in values.items():
            click.echo(f"{key} = {json.dumps(value)}")


@config_group.command("check")
@click.argument("path", required=False)
def config_check(path: str | None) -> None:
    """Validate an operator file (default: SLURMTOOLS_CONFIG or /etc/slurmtools/slurmtools.toml)."""
    from slurmtools import config

    target = path or config.config_path()
    try:
        config.check_file(target)
    except config.ConfigError as exc:
        fail(str(exc), 1)
    click.echo(f"{target}: ok")


# ----------------------------------------------------------------------------------- nodes
@main.command("nodes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def nodes_cmd(as_json: bool) -> None:
    """Each node with its Slurm state, flags and reason, and the circuit breaker's state."""
    from slurmtools import safety
    from slurmtools.slurm import SlurmError, get_client

    cfg = _config()
    try:
        slurm = get_client(cfg)
        nodes = slurm.nodes()
        breaker = safety.breaker_status(cfg, slurm)
    except SlurmError as exc:
        fail(str(exc))
    if as_json:
        emit_json([n.to_dict() for n in nodes])
        return
    if breaker["open"]:
        click.echo(f"CIRCUIT BREAKER OPEN: {breaker['detail']}", err=True)
    rows = [("NODE", "STATE", "FLAGS", "REASON")]
    for n in nodes:
        reason = n.reason or ""
        if n.reason_user:
            reason += f" [{n.reason_user}@{n.reason_time.isoformat() if n.reason_time else '?'}]"
        rows.append((n.name, n.state, ",".join(n.flags) or "-", reason))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        click.echo("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])


# ------------------------------------------------------------------------------------- lab
@main.group("lab")
def lab_group() -> None:
    """A real 4-node Slurm cluster on this machine, for tests and demos."""


def _lab() -> Any:
    from slurmtools.lab import Lab

    return Lab(say=lambda msg: click.echo(f"lab: {msg}", err=True))


@lab_group.command("up")
@click.option("--no-install", is_flag=True, help="Do not install missing Debian packages.")
def lab_up(no_install: bool) -> None:
    """Start (or complete) the lab: munge, MariaDB, slurmdbd, slurmctld, n1..n4, PostgreSQL."""
    from slurmtools.lab import LabError

    try:
        _lab().up(install=not no_install)
    except LabError as exc:
        fail(str(exc), 1)


@lab_group.command("down")
@click.option("--purge", is_flag=True, help="Also delete the lab's state directory.")
def lab_down(purge: bool) -> None:
    """Stop what the lab started (by PID file only)."""
    _lab().down(purge=purge)


@lab_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def lab_status(as_json: bool) -> None:
    """Each lab daemon and whether it runs. Exit 1 if any is down."""
    rows = _lab().status()
    if as_json:
        emit_json(rows)
    else:
        for row in rows:
            state = f"running (pid {row['pid']})" if row["running"] else "stopped"
            click.echo(f"{row['daemon']:<12} {state}")
    sys.exit(0 if all(r["running"] for r in rows) else 1)


@lab_group.command("env")
def lab_env() -> None:
    """Shell exports for using the lab: eval "$(slurmtools lab env)"."""
    import shlex

    for key, value in _lab().env().items():
        click.echo(f"export {key}={shlex.quote(value)}")


@lab_group.command("inject")
@click.argument("node")
@click.argument("fault")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def lab_inject(node: str, fault: str, as_json: bool) -> None:
    """Inject FAULT on lab NODE (e.g. `slurmtools lab inject n2 xid79`)."""
    from slurmtools.lab import LabError

    try:
        result = _lab().inject(node, fault)
    except LabError as exc:
        fail(str(exc))
    if as_json:
        emit_json(result)
    else:
        click.echo(f"injected {fault} on {node}: {result.get('line', '')}")


# -------------------------------------------------------------------------------- diagnose
def _finding_time(stamp: str | None) -> float | None:
    """Epoch seconds of a kernel-log stamp: monotonic (via boot time) or ISO; None if unknown."""
    from datetime import datetime

    if not stamp:
        return None
    try:
        mono = float(stamp)
    except ValueError:
        try:
            return datetime.fromisoformat(stamp.replace(",", ".")).timestamp()
        except ValueError:
            return None
    try:
        with open("/proc/stat") as fh:
            btime = next(int(ln.split()[1]) for ln in fh if ln.startswith("btime "))
    except (OSError, StopIteration):
        return None
    return btime + mono


@main.command("diagnose")
@click.option("--kernel-log", "kernel_log", help="A kernel log file, or - for stdin (default: this node's "
                                                 "configured source).")
@click.option("--job-log", type=click.Path(exists=True, dir_okay=False), help="The job's output, for NCCL/CUDA errors.")
@click.option("--exit-code", help="The job's exit: an exit code (3) or Slurm's code:signal (0:9).")
@click.option("--wait-status", type=int, help="The exit as a raw wait status (SLURM_JOB_EXIT_CODE: 768 = exit 3).")
@click.option("--since", help="Only findings stamped at or after this time (7d, 2h, 2026-11-01T12:00).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of findings.")
def diagnose_cmd(kernel_log: str | None, job_log: str | None, exit_code: str | None, wait_status: int | None,
                 since: str | None, as_json: bool) -> None:
    """Classify the faults in a kernel log and a job's exit and output."""
    from slurmtools.diagnosis import diagnose, sources
    from slurmtools.slurm.types import ExitStatus
    from slurmtools.timeutil import parse_since

    cfg = _config()
    status = None
    try:
        if exit_code is not None:
            status = ExitStatus.from_pair(exit_code if ":" in exit_code else f"{exit_code}:0")
        elif wait_status is not None:
            status = ExitStatus.from_wait_status(wait_status)
        cutoff = parse_since(since).timestamp() if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if kernel_log == "-":
        data = sys.stdin.buffer.read()
    elif kernel_log:
        try:
            with open(kernel_log, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            fail(f"cannot read {kernel_log}: {exc.strerror}")
    else:
        from slurmtools.config import this_node

        source = cfg.node(this_node())["kernel_log"]
        marker = None
        if cutoff is not None:
            import time as _time

            marker = sources.Marker(source=source, time=cutoff,
                                    mono=_time.clock_gettime(_time.CLOCK_MONOTONIC) - (_time.time() - cutoff))
        try:
            data, _ = sources.read_window(source, marker, max_bytes=cfg.get("diagnosis.max_bytes"))
        except sources.SourceError as exc:
            fail(str(exc))
    job_lines = None
    if job_log:
        with open(job_log, "rb") as fh:
            job_lines = fh.read().decode("utf-8", "replace").splitlines()
    findings = diagnose(data, exit_code=status.code if status else None, exit_signal=status.signal if status else 0,
                        job_lines=job_lines, overrides=cfg.get("xid"),
                        no_requeue_code=cfg.get("diagnosis.no_requeue_exit_code"))
    if cutoff is not None:
        findings = [f for f in findings if f.trust == "job" or (t := _finding_time(f.time)) is None or t >= cutoff]
    if as_json:
        emit_json([f.to_dict() for f in findings])
        return
    if not findings:
        click.echo("no findings")
    for f in findings:
        where = f" line {f.line}" if f.line else ""
        xid = f" XID {f.xid}" if f.xid is not None else ""
        repeat = f" (x{f.count})" if f.count > 1 else ""
        click.echo(f"{f.severity:<8} {f.category:<11} {f.action:<11} {f.kind}{xid}{where}{repeat} [{f.trust}]: "
                   f"{f.message[:160]}")


# ------------------------------------------------------------------------------------ hook
@main.command("hook", hidden=False)
@click.argument("context", required=False)
def hook_cmd(context: str | None) -> None:
    """Entry point for prolog.d/, epilog.d/ and HealthCheckProgram (same as `slurmtools-hook`).

    CONTEXT defaults to SLURM_SCRIPT_CONTEXT; `healthcheck` for HealthCheckProgram. An internal error of
    ours is logged and exits 0: it must never drain a node.
    """
    from slurmtools import hooks

    sys.exit(hooks.main([context] if context else []))


# ----------------------------------------------------------------------------------- check
@main.command("check")
@click.option("--profile", type=click.Choice(["prolog", "epilog", "health", "deep"]), default="prolog",
              show_default=True, help="Which checks to run (config: checks.<profile>).")
@click.option("--replay", type=click.Path(dir_okay=False), help="Read this snapshot instead of the machine.")
@click.option("--node", help="Judge as this node (its hardware profile; default: this host).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of results.")
def check_cmd(profile: str, replay: str | None, node: str | None, as_json: bool) -> None:
    """Run the health checks here and report; changes nothing (no drain, no ledger record).

    Exit status: 0 healthy (ok or warn), 1 failed, 2 unknown or an error of ours.
    """
    from slurmtools import config
    from slurmtools.checks import runner
    from slurmtools.checks.system import SnapshotError

    cfg = _config()
    try:
        report = runner.run(cfg, profile, node=node or config.this_node(), replay=replay,
                            persist=not replay)
    except (SnapshotError, config.ConfigError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json([r.to_dict() for r in report.results])
    else:
        for r in report.results:
            click.echo(f"{r.status.upper():<8} {r.check:<12} {r.duration_ms:7.1f} ms  {r.reason}")
        click.echo(f"verdict: {report.verdict} ({report.duration_ms:.1f} ms)")
    sys.exit(report.exit_code)


@main.group("snapshot")
def snapshot_group() -> None:
    """Record what the health checks read on this node, for replay (`check --replay`, node.replay)."""


@snapshot_group.command("record")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--interval", type=float, default=0.0, show_default=True,
              help="Read error counters twice, this many seconds apart (replays then judge their increase).")
def snapshot_record(path: str, interval: float) -> None:
    """Write a snapshot of this node's NVML values and sysfs/procfs files to PATH (JSON)."""
    from slurmtools.checks import snapshot

    data = snapshot.record(interval=interval)
    from slurmtools.fsutil import write_atomic

    try:
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}")
    gpus = len((data.get("nvml") or {}).get("devices") or [])
    click.echo(f"{path}: {gpus} GPUs, {len(data['files'])} files"
               + (f", NVML error {data['nvml']['errors']}" if (data.get("nvml") or {}).get("errors") else ""))


# ----------------------------------------------------------------------------------- sbatch
@main.command("sbatch", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                          "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def sbatch_cmd(argv: tuple[str, ...]) -> None:
    """sbatch with exclusions, automatic retries and a checkpoint signal: `slurmtools sbatch [sbatch options]
    [--max-retries N] [--retry-on node|any] [--checkpoint-signal SIG] [--checkpoint-grace SECONDS] script
    [args...]`. Everything else goes to sbatch unchanged; the job id is printed as sbatch prints it."""
    import os
    import subprocess

    from slurmtools import sbatch
    from slurmtools.controller.policy import RETRY_ON, RetryAsk

    if argv and argv[0] in ("-h", "--help"):
        click.echo(sbatch_cmd.help or "")
        return
    cfg = _config()
    bin_dir = cfg.get("slurm.bin_dir")
    exe = os.path.join(bin_dir, "sbatch") if bin_dir else "sbatch"
    opts = sbatch.value_options(exe)
    try:
        ours, rest = sbatch.take_ours(list(argv), *opts)
        retries = int(ours.get("max-retries", cfg.get("controller.max_retries")))
        on = ours.get("retry-on", "node")
        if on not in RETRY_ON or retries < 0:
            raise sbatch.WrapperError("--retry-on must be node or any, --max-retries a number >= 0")
        grace = int(ours["checkpoint-grace"]) if "checkpoint-grace" in ours else None
        plan = sbatch.build(rest, ask=RetryAsk(retries, on), excluded=sbatch.active_exclusions(cfg),
                            ckpt_signal=ours.get("checkpoint-signal"), ckpt_grace=grace, sbatch=exe, value_opts=opts)
    except (sbatch.WrapperError, ValueError) as exc:
        fail(str(exc))
    proc = subprocess.run(plan.argv, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    import re

    found = re.search(r"(\d+)", proc.stdout)
    if found and sbatch.record_submission(cfg, int(found.group(1)), plan, list(rest), os.getcwd()) is None:
        click.echo("slurmtools sbatch: note: submission not recorded (controller.submit_dir not writable); "
                   "retries still apply", err=True)


# ----------------------------------------------------------------------------------- status
def _job_status(job_id: int) -> dict[str, Any]:
    from slurmtools import jobstatus
    from slurmtools.ledger.cli import _session
    from slurmtools.slurm import SlurmError, get_client

    cfg = _config()
    try:
        with _session() as session:
            newest = jobstatus.job_ids(session, cfg.cluster, job_id)[-1]   # a resubmitted chain's newest job
            try:
                job = get_client(cfg).job(newest)
            except SlurmError:
                job = None   # the ledger still answers
            return jobstatus.chain(session, cfg.cluster, job_id, job)
    except Exception as exc:  # noqa: BLE001 - no read access, database down: a clear message
        fail(f"cannot read the ledger: {exc.__class__.__name__}: {str(exc).splitlines()[0]}", 1)


def _my_chains(user: str, limit: int) -> list[dict[str, Any]]:
    from slurmtools import jobstatus
    from slurmtools.ledger.cli import _session
    from slurmtools.slurm import SlurmError, get_client

    cfg = _config()
    try:
        jobs = {j.job_id: j for j in get_client(cfg).jobs(user=user)}
    except SlurmError:
        jobs = {}
    try:
        with _session() as session:
            return jobstatus.mine(session, cfg.cluster, user, jobs, limit)
    except Exception as exc:  # noqa: BLE001 - no read access, database down: a clear message
        fail(f"cannot read the ledger: {exc.__class__.__name__}: {str(exc).splitlines()[0]}", 1)


@main.command("status")
@click.argument("job_id", type=int, required=False)
@click.option("--mine", is_flag=True, help="Your retry chains, newest first.")
@click.option("--limit", default=20, show_default=True, help="With --mine: at most this many chains.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status_cmd(job_id: int | None, mine: bool, limit: int, as_json: bool) -> None:
    """A job's retry chain: every attempt, its nodes, times, exit, findings and what the controller did.
    With --mine: one line per chain of yours."""
    if mine == (job_id is not None):
        fail("give a JOB_ID or --mine")
    if job_id is None:
        import getpass

        rows = _my_chains(getpass.getuser(), limit)
        if as_json:
            emit_json(rows)
            return
        if not rows:
            click.echo("no retry chains of yours in the ledger")
        for r in rows:
            now = r["now"]
            newest = f" (now job {r['newest_job_id']})" if r["newest_job_id"] != r["job_id"] else ""
            click.echo(f"job {r['job_id']}{newest}: chain {r['status']}, {r['retries_used']} of {r['max_retries']} "
                       f"retries used; " + (f"now attempt {now['restart_count'] + 1} {now['state']}" if now else
                                            "no longer in Slurm") + (f"; last: {r['last']}" if r["last"] else ""))
        return
    data = _job_status(job_id)
    if as_json:
        emit_json(data)
        return
    c = data["chain"]
    click.echo(f"job {job_id}: " + (f"chain {c['status']}, {c['retries_used']} of {c['max_retries']} retries used "
                                    f"(retry on {c['retry_on']})" if c else "no retry chain"))
    several = len(data["jobs"]) > 1
    for a in data["attempts"]:
        d = a["decision"] or {}
        exit_ = f"signal {a['exit_signal']}" if a["exit_signal"] else f"exit {a['exit_code']}"
        job = f" (job {a['job_id']})" if several else ""
        then = f"; resubmitted as job {d['resubmitted_as']}" if d.get("resubmitted_as") else ""
        click.echo(f"  attempt {a['attempt']}{job}: {a['nodes'] or '?'} ended {a['end'] or '?'} {exit_}; "
                   f"{d.get('classification', '-')} -> {d.get('decision', '-')}: {d.get('reason', '')}{then}")
        for f in a["findings"]:
            click.echo(f"      {f['node']}: {f['category']} {f['kind']} {f['action']}: {f['message'][:100]}")
    if data["now"]:
        now = data["now"]
        click.echo(f"  now: job {now['job_id']} attempt {now['attempt']} {now['state']} "
                   f"{now['nodes'] or now['reason']}")


@main.command("why")
@click.argument("job_id", type=int)
def why_cmd(job_id: int) -> None:
    """What happened to JOB_ID, in a few plain sentences."""
    from slurmtools import jobstatus

    click.echo(jobstatus.why(_job_status(job_id)))


def _register() -> None:
    from slurmtools.controller.cli import controller_group
    from slurmtools.exclusions_cli import exclude_group
    from slurmtools.ledger.cli import ledger_group
    from slurmtools.plugins.cli import plugins_group

    main.add_command(ledger_group)
    main.add_command(plugins_group)
    main.add_command(exclude_group)
    main.add_command(controller_group)


_register()
