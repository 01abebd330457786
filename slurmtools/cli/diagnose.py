"""`slurmtools diagnose`: findings from a kernel log, a job's exit and its output."""

from __future__ import annotations

import sys

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config


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


@click.command("diagnose")
@click.option("--kernel-log", "kernel_log", help="A kernel log file, or - for stdin (default: this node's "
                                                 "configured source).")
@click.option("--job-log", help="The job's output, for NCCL/CUDA errors.")
@click.option("--stream", is_flag=True, help="Also read a named pipe or device, for at most "
                                              "diagnosis.time_budget seconds (stdin always is).")
@click.option("--exit-code", help="The job's exit: an exit code (3) or Slurm's code:signal (0:9).")
@click.option("--wait-status", type=int, help="The exit as a raw wait status (SLURM_JOB_EXIT_CODE: 768 = exit 3).")
@click.option("--since", help="Only findings stamped at or after this time (7d, 2h, 2026-11-01T12:00).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of findings.")
@click.option("--suggest-rules", "suggest_file", metavar="FILE",
              help="Print a TOML rule skeleton for each distinct unrecognised message in FILE (a kernel log, - for "
                   "stdin), to review and add to [[diagnosis.rules]].")
def diagnose_cmd(kernel_log: str | None, job_log: str | None, stream: bool, exit_code: str | None,
                 wait_status: int | None, since: str | None, as_json: bool, suggest_file: str | None) -> None:
    """Classify the faults in a kernel log and a job's exit and output."""
    from slurmtools.diagnosis import diagnose, sources
    from slurmtools.slurm.types import ExitStatus
    from slurmtools.timeutil import parse_since

    cfg = get_config()
    if suggest_file is not None:
        from slurmtools.diagnosis import suggest

        try:
            data, _ = sources.read_input(suggest_file, cfg.diagnosis.max_bytes,
                                         cfg.diagnosis.time_budget, stream=stream,
                                         stdin=sys.stdin.buffer)
        except sources.SourceError as exc:
            fail(str(exc))
        found = suggest.suggest(data, cfg.diagnosis.rules or None)
        if as_json:
            emit_json(found)
        else:
            click.echo(suggest.to_toml(found), nl=False)
        return
    status = None
    try:
        if exit_code is not None:
            status = ExitStatus.from_pair(exit_code if ":" in exit_code else f"{exit_code}:0")
        elif wait_status is not None:
            status = ExitStatus.from_wait_status(wait_status)
        cutoff = parse_since(since).timestamp() if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    budget = cfg.diagnosis.time_budget
    if kernel_log:
        try:
            data, _ = sources.read_input(kernel_log, cfg.diagnosis.max_bytes, budget, stream=stream,
                                         stdin=sys.stdin.buffer)
        except sources.SourceError as exc:
            fail(str(exc))
    else:
        from slurmtools.config import this_node

        source = cfg.node_for(this_node()).kernel_log
        marker = None
        if cutoff is not None:
            import time as _time

            marker = sources.Marker(source=source, time=cutoff,
                                    mono=_time.clock_gettime(_time.CLOCK_MONOTONIC) - (_time.time() - cutoff))
        try:
            data, _ = sources.read_window(source, marker, max_bytes=cfg.diagnosis.max_bytes)
        except sources.SourceError as exc:
            fail(str(exc))
    job_lines = None
    if job_log:
        try:
            raw, _ = sources.read_input(job_log, cfg.diagnosis.job_log_max_bytes, budget, stream=stream)
        except sources.SourceError as exc:
            fail(str(exc))
        job_lines = raw.decode("utf-8", "replace").splitlines()
    findings = diagnose(data, exit_code=status.code if status else None, exit_signal=status.signal if status else 0,
                        job_lines=job_lines, overrides=cfg.xid_overrides(),
                        no_requeue_code=cfg.diagnosis.no_requeue_exit_code,
                        rules=cfg.diagnosis.rules or None)
    if cutoff is not None:
        findings = [f for f in findings if f.trust == "job" or (t := _finding_time(f.time)) is None or t >= cutoff]
    if as_json:
        emit_json([f.to_dict() for f in findings])
        return
    if not findings:
        echo("no findings")
    for f in findings:
        where = f" line {f.line}" if f.line else ""
        xid = f" XID {f.xid}" if f.xid is not None else ""
        repeat = f" (x{f.count})" if f.count > 1 else ""
        echo(f"{f.severity:<8} {f.category:<11} {f.action:<11} {f.kind}{xid}{where}{repeat} [{f.trust}]: "
             f"{f.message[:160]}")
