"""The prolog gate and HealthCheckProgram: run the health checks, record the verdict, drain on failure.

Runs from prolog.d/ on every node of every job, as root, before the job starts. The healthy path
makes no Slurm call and imports no database code: it writes a kernel-log marker for the epilog, runs
the checks, caches the verdict for HealthCheckProgram, and spools one gate event.

On a failure it asks `drain.request_drain` to drain the node with our reason and exits 100
(prolog.d/ turns it into 1), so Slurm requeues the job onto other nodes
(SchedulerParameters=nohold_on_prolog_fail). If the drain was
refused (observe mode, the circuit breaker), it exits 0: a non-zero prolog makes Slurm drain the node
itself ("Prolog error"), which would defeat the rail. A failure of a GPU the job was not given drains
the node (no new jobs) but lets this job start.
"""

from __future__ import annotations

from slurmtools import config
from slurmtools.checks import FAIL, runner
from slurmtools.hooks.context import JobContext
from slurmtools.ledger.spool import Event, record_or_report

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Mapping

    from slurmtools.config import Config

#: The hook's exit code for "this job must not start here" (prolog.d/ turns it into 1; any other
#: non-zero code is an error of ours and becomes 0 there).
GATE_FAILED = 100

#: Drain outcomes after which a non-zero exit cannot make things worse (the node is out already).
NODE_OUT = ("drained", "already_ours", "not_ours")


def gate_event(cfg: Config, report: runner.Report, job_id: int | None) -> Event:
    bad = [r.to_dict() for r in report.results if r.status != "ok"]
    return Event("gate_run", {"node": report.node, "job_id": job_id,
                              "profile": report.profile, "verdict": report.verdict,
                              "duration_ms": int(report.duration_ms),
                              "failed_checks": ",".join(sorted({r.check for r in report.failures})),
                              "details": {"results": bad, "replay": report.replay} if bad else {}},
                 cluster=cfg.cluster)


def perf_events(cfg: Config, report: runner.Report) -> list[Event]:
    """One `perf` ledger event per probed GPU in the report (none on the prolog's path: nothing imported)."""
    if not any(r.check == "perf" for r in report.results):
        return []
    from slurmtools.checks.perfrecord import events

    return events(cfg, report.node, report.profile, report.results, report.time)

def _spool(cfg: Config, events: list[Event], node: str) -> None:
    record_or_report(cfg.ledger.spool_dir, events, "prolog", cfg.state_dir(node), node)


def act(cfg: Config, report: runner.Report, *, job_id: int | None, job_gpus: frozenset[int] | None,
        actor: str) -> int:
    """Record the verdict; on failure drain through the safety rails. Returns the hook's exit code."""
    events = [gate_event(cfg, report, job_id), *perf_events(cfg, report)]
    if cfg.metrics.textfile_dir:
        from slurmtools.hooks import textfile

        try:
            textfile.write(cfg, "slurmtools_gate.prom", textfile.gate_families(report), report.node)
        except OSError as exc:      # metrics are a nicety: said, never in the way of the gate
            print(f"slurmtools {actor}: cannot write the textfile metrics: {exc}")
    code = 0
    if report.verdict == FAIL:
        from slurmtools import drain
        from slurmtools.ledger import api

        worst = report.worst()
        assert worst is not None
        others = len(report.failures) - 1
        cause = f"{worst.check}: {worst.reason}" + (f" (+{others} more)" if others > 0 else "")
        decision, drain_events = drain.request_drain(report.node, worst.category, cause, job_id=job_id,
                                                      actor=actor, cfg=cfg,
                                                      evidence={"failures": [r.to_dict() for r in report.failures]})
        events.extend(drain_events)
        print(f"slurmtools {actor}: {report.node} failed the health gate: {cause}; drain: {decision.outcome}"
              f"{' (' + decision.detail + ')' if decision.detail else ''}")
        if decision.outcome in NODE_OUT and (job_gpus is None or runner.touches_job(report, job_gpus)):
            code = GATE_FAILED
        _spool(cfg, events, report.node)
        api.flush_in_background()
        return code
    if report.verdict != "ok":
        for r in report.results:
            if r.status != "ok":
                print(f"slurmtools {actor}: {report.node}: {r.check} {r.status}: {r.reason}")
    _spool(cfg, events, report.node)
    return code


def run(env: Mapping[str, str] | None = None, cfg: Config | None = None) -> int:
    """The prolog hook (SLURM_SCRIPT_CONTEXT=prolog_slurmd)."""
    job = JobContext.from_env(env)
    cfg = cfg or config.get()
    node = job.node
    for problem in job.problems:
        print(f"slurmtools prolog: {problem}; ignored")
    from slurmtools.diagnosis import sources

    try:
        sources.record_job_start(cfg, job.job_id, node)
    except OSError as exc:  # without a marker the epilog reads the log's tail instead
        print(f"slurmtools prolog: cannot record the kernel-log marker: {exc}")
    if job.opted_out:
        return 0    # the job's own gate only: the marker above still bounds the epilog's kernel-log window
    try:
        from slurmtools.iostat import jobio

        jobio.record_start(cfg, job.job_id, node)
    except Exception as exc:  # noqa: BLE001 - the job's I/O summary is a nicety: never a reason to fail a job
        print(f"slurmtools prolog: cannot record the NFS counters: {exc}")
    report = runner.run(cfg, "prolog", node=node, job_gpus=set(job.gpus))
    runner.write_status(cfg.state_dir(node), report)
    return act(cfg, report, job_id=job.job_id, job_gpus=job.gpus, actor="prolog")


def healthcheck(env: Mapping[str, str] | None = None, cfg: Config | None = None) -> int:
    """Slurm's HealthCheckProgram: reuse a recent gate verdict, or run the health profile. Always 0."""
    cfg = cfg or config.get()
    node = JobContext.from_env(env).node
    state_dir = cfg.state_dir(node)
    report = runner.read_status(state_dir, cfg.checks.health_max_age)
    if report is None or report.verdict == FAIL:   # a failure is re-checked: it may have been repaired
        report = runner.run(cfg, "health", node=node)
        runner.write_status(state_dir, report)
        act(cfg, report, job_id=None, job_gpus=None, actor="healthcheck")
    return 0
