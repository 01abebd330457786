"""The researcher's commands: `slurmtools sbatch` (the wrapper), `slurmtools status` and `slurmtools why`."""

from __future__ import annotations

import sys
from typing import Any

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config, ledger_session
from slurmtools.textsafe import clean


@click.command("sbatch", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                          "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def sbatch_cmd(argv: tuple[str, ...]) -> None:
    """sbatch with exclusions, automatic retries and a checkpoint signal: `slurmtools sbatch [sbatch options]
    [--max-retries N] [--retry-on node|any] [--checkpoint-signal SIG] [--checkpoint-grace SECONDS]
    [--advice off|print|export] script
    [args...]`. Everything else goes to sbatch unchanged; the job id is printed as sbatch prints it."""
    import os
    import subprocess

    from slurmtools.jobs import sbatch
    from slurmtools.jobs.marker import MAX_DIGITS, RETRY_ON, RetryAsk, bounded_count

    if argv and argv[0] in ("-h", "--help"):
        echo(sbatch_cmd.help or "")
        return
    cfg = get_config()
    bin_dir = cfg.slurm.bin_dir
    exe = os.path.join(bin_dir, "sbatch") if bin_dir else "sbatch"
    opts = sbatch.value_options(exe)
    try:
        ours, rest = sbatch.take_ours(list(argv), *opts)
        asked = bounded_count(ours.get("max-retries", cfg.controller.max_retries), 10 ** MAX_DIGITS)
        if asked is None:
            raise sbatch.WrapperError("--max-retries must be a whole number >= 0")
        retries = asked
        on = ours.get("retry-on", "node")
        if on not in RETRY_ON or retries < 0:
            raise sbatch.WrapperError("--retry-on must be node or any, --max-retries a number >= 0")
        if retries > cfg.controller.retry_limit:
            raise sbatch.WrapperError(f"--max-retries {retries} is above this site's maximum "
                                      f"({cfg.controller.retry_limit}, controller.retry_limit)")
        grace = int(ours["checkpoint-grace"]) if "checkpoint-grace" in ours else None
        plan = sbatch.build(rest, ask=RetryAsk(retries, on), excluded=sbatch.active_exclusions(cfg),
                            ckpt_signal=ours.get("checkpoint-signal"), ckpt_grace=grace, sbatch=exe, value_opts=opts)
        hint, env = sbatch.checkpoint_advice(cfg, plan, ours.get("advice"))
    except (sbatch.WrapperError, ValueError) as exc:
        fail(str(exc))
    if hint:
        click.echo(hint, err=True)
    proc = subprocess.run(plan.argv, capture_output=True, text=True, env={**os.environ, **env} if env else None)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    import re

    found = re.search(r"(\d+)", proc.stdout)
    if found and sbatch.record_submission(cfg, int(found.group(1)), plan, list(rest), os.getcwd()) is None:
        echo("slurmtools sbatch: note: submission not recorded (controller.submit_dir not writable); "
             "retries still apply", err=True)

def _job_status(job_id: int) -> dict[str, Any]:
    from slurmtools.jobs import status as jobstatus
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    try:
        with ledger_session() as session:
            newest = jobstatus.job_ids(session, cfg.cluster, job_id)[-1]   # a resubmitted chain's newest job
            try:
                job = get_client(cfg).job(newest)
            except SlurmError:
                job = None   # the ledger still answers
            return jobstatus.chain(session, cfg.cluster, job_id, job, cfg)
    except Exception as exc:  # noqa: BLE001 - no read access, database down: a clear message
        fail(f"cannot read the ledger: {exc.__class__.__name__}: {str(exc).splitlines()[0]}", 1)


def _my_chains(user: str, limit: int) -> list[dict[str, Any]]:
    from slurmtools.jobs import status as jobstatus
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    try:
        jobs = {j.job_id: j for j in get_client(cfg).jobs(user=user)}
    except SlurmError:
        jobs = {}
    try:
        with ledger_session() as session:
            return jobstatus.mine(session, cfg.cluster, user, jobs, limit)
    except Exception as exc:  # noqa: BLE001 - no read access, database down: a clear message
        fail(f"cannot read the ledger: {exc.__class__.__name__}: {str(exc).splitlines()[0]}", 1)


@click.command("status")
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
            echo("no retry chains of yours in the ledger")
        for r in rows:
            now = r["now"]
            newest = f" (now job {r['newest_job_id']})" if r["newest_job_id"] != r["job_id"] else ""
            echo(f"job {r['job_id']}{newest}: chain {r['status']}, {r['retries_used']} of {r['max_retries']} "
                 f"retries used; " + (f"now attempt {now['restart_count'] + 1} {now['state']}" if now else
                                      "no longer in Slurm") + (f"; last: {clean(r['last'])}" if r["last"] else ""))
        return
    data = _job_status(job_id)
    if as_json:
        emit_json(data)
        return
    c = data["chain"]
    echo(f"job {job_id}: " + (f"chain {c['status']}, {c['retries_used']} of {c['max_retries']} retries used "
                              f"(retry on {c['retry_on']})" if c else "no retry chain"))
    several = len(data["jobs"]) > 1
    for a in data["attempts"]:
        d = a["decision"] or {}
        exit_ = f"signal {a['exit_signal']}" if a["exit_signal"] else f"exit {a['exit_code']}"
        job = f" (job {a['job_id']})" if several else ""
        then = f"; resubmitted as job {d['resubmitted_as']}" if d.get("resubmitted_as") else ""
        echo(f"  attempt {a['attempt']}{job}: {a['nodes'] or '?'} ended {a['end'] or '?'} {exit_}; "
             f"{d.get('classification', '-')} -> {d.get('decision', '-')}: {clean(d.get('reason', ''))}{then}")
        for f in a["findings"]:
            echo(f"      {clean(f['node'])}: {f['category']} {clean(f['kind'])} {f['action']}: "
                 f"{clean(f['message'][:100])}")
    if data["now"]:
        now = data["now"]
        echo(f"  now: job {now['job_id']} attempt {now['attempt']} {now['state']} "
             f"{clean(now['nodes'] or now['reason'])}")


@click.command("why")
@click.argument("job_id", type=int)
def why_cmd(job_id: int) -> None:
    """What happened to JOB_ID, in a few plain sentences."""
    from slurmtools.jobs import status as jobstatus

    echo(clean(jobstatus.why(_job_status(job_id))))   # one paragraph: a newline in a stored field cannot add a line
