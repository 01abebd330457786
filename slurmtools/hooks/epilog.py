"""The epilog: diagnose this job's window on this node, record it, drain the node if it is faulty.

Runs from epilog.d/ on every node of every job, as root, with Slurm's epilog environment
(SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_EXIT_CODE as a raw wait status, SLURM_JOB_STDOUT...).
The healthy path makes no Slurm call and never waits on the database (events are spooled and a
background flush ships them). Always exits 0: a non-zero epilog makes Slurm drain the node with
"Epilog error", and an internal error of ours must never drain a node.

Node evidence first, the job's word after (issue 30): the kernel-log window, the exit status Slurm reports and
the attempt are read, spooled and the drain decided before anything the job wrote is opened (its output, its
checkpoint marks, the checkpoint lines in its output). Each later stage has its own time budget
(`diagnosis.job_time_budget`) and its own `try`: a failure there costs only that stage's records and is
recorded as an internal error event, never a drain. A job's `slurmtools=off` skips those later stages only.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slurmtools import jobstate
from slurmtools.diagnosis import diagnose, diagnose_job_output, policy, sources
from slurmtools.diagnosis.findings import Finding
from slurmtools.hooks.context import JobContext
from slurmtools.ledger import api
from slurmtools.ledger.spool import Event, make_key, record_or_report
from slurmtools.settings import plain
from slurmtools.slurm.types import ExitStatus

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    from slurmtools.config import Config

log = logging.getLogger(__name__)


class BudgetExceeded(Exception):
    pass


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise BudgetExceeded in this (main) thread when the budget runs out."""
    def _expired(signum: int, frame: FrameType | None) -> None:
        raise BudgetExceeded(f"epilog time budget of {seconds:g}s exceeded")

    old = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


#: Lines of the job's output are cut to this before any stage looks at them (the diagnosis does the same).
MAX_LINE = 4096


def read_job_log(path: str, uid: int | None, max_bytes: int) -> list[str]:
    """The tail of the job's output, opened safely: a regular file owned by the job's user, no symlinks
    (the epilog runs as root; a user must not make us read /etc/shadow into the ledger)."""
    from slurmtools.fsutil import read_safely

    if not path or path == "/dev/null":
        return []
    try:
        data, _ = read_safely(path, max_bytes, owners=None if uid is None else (uid,))
    except OSError:
        return []
    return [line[:MAX_LINE] for line in data.decode("utf-8", "replace").splitlines()]


def first_node(nodelist: str) -> str | None:
    from slurmtools.slurm.parse import expand

    try:
        nodes = expand(nodelist)
    except Exception:  # noqa: BLE001 - a bad list just means "not sure": skip the job log
        return None
    return nodes[0] if nodes else None


def collect(cfg: Config, job: JobContext) -> tuple[list[Finding], dict[str, Any], ExitStatus | None,
                                                       float | None]:
    """The node's evidence: the findings of the kernel-log window and the exit status Slurm reports, what was read
    (for the ledger), the exit status, and when this attempt's prolog ran (None without a marker). Nothing the job
    wrote is read here."""
    node, job_id = job.node, job.job_id
    ncfg = cfg.node_for(node)
    marker = sources.load_marker(ncfg.state_dir, job_id, node) if job_id is not None else None
    data, how = sources.read_window(ncfg.kernel_log, marker, max_bytes=cfg.diagnosis.max_bytes)
    status = ExitStatus.from_wait_status(job.exit_status) if job.exit_status is not None else None
    findings = diagnose(data, exit_code=status.code if status else None, exit_signal=status.signal if status else 0,
                        overrides=plain(cfg.xid), no_requeue_code=cfg.diagnosis.no_requeue_exit_code,
                        rules=plain(cfg.diagnosis.rules) or None,
                        window_s=max(0.0, time.time() - marker.time) if marker is not None else None)
    info = {"node": node, "job_id": job.key, "kernel_log": how, "marker": marker is not None,
            "exit": str(status) if status else None}
    if job_id is not None:
        # Leave a marker where this window ends, for the job's next attempt on this node: slurmd skips the
        # prolog of a requeued attempt that lands on the same node while the job's credential is cached
        # ("reissued job credential"), and without a marker that attempt's epilog would read the log's tail
        # and its old lines (seen on the lab: a stale XID 79 drained a node after a fast requeue).
        try:
            sources.save_marker(ncfg.state_dir, job_id, node, sources.mark(ncfg.kernel_log))
            jobstate.prune(ncfg.state_dir, every=3600)
        except OSError:
            pass
    return findings, info, status, marker.time if marker is not None else None


def job_output(cfg: Config, job: JobContext) -> list[str]:
    """The tail of the job's output (stdout, then stderr when it is a separate file), on its first node only: the
    job's own word, each line cut to MAX_LINE."""
    if first_node(job.nodelist or "") != job.node:
        return []
    lines: list[str] = []
    for path in job.outputs:
        lines += read_job_log(path, job.uid, cfg.diagnosis.job_log_max_bytes)
    return lines


def _sluid(job: JobContext) -> dict[str, str]:
    """The run's SLUID as an event field, only where Slurm gave one (25.11+): events of older releases unchanged."""
    return {"sluid": job.sluid} if job.sluid else {}


def finding_event(f: Finding, cfg: Config, job: JobContext) -> Event:
    node, restart = job.node, job.restart_count
    data = {"node": node, "job_id": job.job_id, "restart_count": restart,
            "source": f.source, "kind": f.kind, "xid": f.xid, "pci": f.pci, "gpu": f.gpu, "category": f.category,
            "severity": f.severity, "action": f.action, "trust": f.trust, "message": f.message[:2000],
            "details": {**f.details, "line": f.line, "log_time": f.time, "count": f.count}, **_sluid(job)}
    key = make_key("epilog", cfg.cluster, node, job.key, restart, f.kind, f.xid, f.pci, f.line, f.message[:200],
                   *job.run_parts)
    return Event("finding", data, cluster=cfg.cluster, key=key)


def io_events(cfg: Config, job: JobContext, now: datetime) -> list[Event]:
    """The job's NFS I/O on this node, per mount (nothing when the prolog kept no reading). Errors are the
    caller's (a stage of its own)."""
    from slurmtools.iostat import jobio

    node, job_num, restart = job.node, job.job_id, job.restart_count
    summaries = jobio.finish(cfg, job_num, node)
    return [Event("io", {"node": node, "job_id": job_num, "restart_count": restart, **s}, cluster=cfg.cluster,
                  time=now, key=make_key("io", cfg.cluster, job_num, restart, node, s["mountpoint"], *job.run_parts))
            for s in summaries]


def checkpoint_events(cfg: Config, job: JobContext, window: tuple[float, float] | None = None) -> list[Event]:
    """The checkpoints the job marked on this node (slurmtools checkpoint begin/end): the job's own word, its times
    within WINDOW (the attempt's), every number bounded (iostat/checkpoints.clean_mark). Errors are the caller's."""
    node, job_num, restart = job.node, job.job_id, job.restart_count
    if job_num is None or job.uid is None:
        return []
    from slurmtools.iostat import checkpoints

    pairs = checkpoints.pair(checkpoints.read_marks(job_num, job.uid), plain(cfg.io.filesystems), window)
    return [Event("checkpoint", {"node": node, "job_id": job_num, "restart_count": restart, "kind": p["kind"],
                                 "time": datetime.fromtimestamp(p["start"], UTC), "seconds": p["seconds"],
                                 "nbytes": p["bytes"], "bytes_source": p["bytes_source"],
                                 "gbytes_per_s": p["gbytes_per_s"],
                                 "utilisation": p["utilisation"], "mountpoint": p["mountpoint"],
                                 "source": p["source"], "rpcs": p["rpcs"], "queue_ms_per_op": p["queue_ms_per_op"],
                                 "rtt_ms_per_op": p["rtt_ms_per_op"],
                                 "details": {"path": p["path"], "nominal_gbps": p["nominal_gbps"]}},
                  cluster=cfg.cluster, key=make_key("checkpoint", cfg.cluster, job_num, restart, node, p["kind"],
                                                    p["start"], *job.run_parts))
            for p in pairs]


def checkpoint_log_events(cfg: Config, job: JobContext, lines: list[str], now: datetime,
                          window: tuple[float, float]) -> list[Event]:
    """The checkpoints the training framework printed in the job's output (first node only): the job's own word.
    Events dated outside this attempt's WINDOW came from an earlier attempt appending to the same file (or are not
    times at all); the key is the line itself, so an undated line recorded by an earlier attempt is not counted
    twice. Errors are the caller's."""
    node, job_num, restart = job.node, job.job_id, job.restart_count
    if job_num is None or not lines:
        return []
    from slurmtools.iostat import ckptlog

    out = []
    for e in ckptlog.scan(lines, plain(cfg.io.filesystems)):
        when = e["start"] if e["start"] is not None else e["end"]
        if when is not None and not window[0] <= when <= window[1]:
            continue
        out.append(Event("checkpoint", {
            "node": node, "job_id": job_num, "restart_count": restart, "kind": e["kind"],
            "time": datetime.fromtimestamp(when, UTC) if when is not None else now, "seconds": e["seconds"],
            "source": e["framework"], "nbytes": None, "bytes_source": None, "gbytes_per_s": None,
            "utilisation": None, "mountpoint": e["mountpoint"], "rpcs": None, "queue_ms_per_op": None,
            "rtt_ms_per_op": None,
            "details": {"path": e["path"], "step": e["step"], "line": e["line"], "nominal_gbps": e["nominal_gbps"],
                        "timed": when is not None, "files": e.get("files", 1)}},
            cluster=cfg.cluster, key=make_key("checkpoint-log", cfg.cluster, job_num, node, e["kind"], e["framework"],
                                              e["line"])))
    return out


def cause_text(f: Finding) -> str:
    where = f" GPU {f.pci}" if f.pci else ""
    if f.kind == "xid":
        name = str(f.details.get("name") or "").rstrip(".")
        return f"XID {f.xid}{where}: {name or f.message}"
    return f"{f.kind}{where}: {f.message}"


def internal_event(cfg: Config, job: JobContext, stage: str, exc: BaseException) -> Event:
    """An internal error of ours in one stage, as a finding that never drains (action none)."""
    node, restart = job.node, job.restart_count
    return Event("finding", {"node": node, "job_id": job.job_id, "restart_count": restart, "source": "slurmtools",
                             "kind": "internal", "category": "unknown", "severity": "error", "action": "none",
                             "trust": "kernel", "message": f"epilog {stage} failed: {exc}"[:2000],
                             "details": {"error": repr(exc)[:2000], "stage": stage}, **_sluid(job)},
                 cluster=cfg.cluster, key=make_key("epilog-internal", cfg.cluster, node, job.key, restart, stage,
                                                   *job.run_parts))


def run(env: Mapping[str, str] | None = None, cfg: Config | None = None) -> int:
    from slurmtools import bounds, config, drain

    job = JobContext.from_env(env)
    cfg = cfg or config.get()
    node, job_id = job.node, job.key
    for problem in job.problems:
        print(f"slurmtools epilog: {problem}; ignored")
    status: ExitStatus | None = None
    now = datetime.now(UTC)
    t0 = time.monotonic()
    events: list[Event] = []
    top: Finding | None = None
    since: float | None = None
    # 1. The node's evidence: the kernel-log window and the exit status Slurm reports -> findings, the attempt, the
    #    drain decision, spooled before anything the job wrote is opened.
    try:
        with time_budget(cfg.diagnosis.time_budget):
            findings, info, status, since = collect(cfg, job)
    except Exception as exc:  # noqa: BLE001 - ours (a blown time budget included): recorded, never a drain
        findings, info = [], {"node": node, "job_id": job_id, "internal_error": f"{exc.__class__.__name__}: {exc}"}
        events.append(internal_event(cfg, job, "diagnosis", exc))
        log.error("epilog: diagnosis failed on %s for job %s: %r", node, job_id, exc)
    else:
        top = policy.summary(findings, cfg)
    if job.job_id is not None:
        events.insert(0, Event("attempt", {
            "job_id": job.job_id, "restart_count": job.restart_count, "end_time": now,
            "exit_code": status.code if status else None, "exit_signal": status.signal if status else None,
            "nodes": job.nodelist, "user": job.user, "partition": job.partition,
            "source": "epilog", "details": {"epilog": {node: {**info, "findings": len(findings),
                                                              "duration_ms": int((time.monotonic() - t0) * 1000)}},
                                             "comment": job.comment}, **_sluid(job)},
            cluster=cfg.cluster, time=now, key=make_key("epilog-attempt", cfg.cluster, job_id, job.restart_count,
                                                        node, *job.run_parts)))
    events += [finding_event(f, cfg, job) for f in findings]
    if events:
        _spool(events, cfg, node)
    if top is not None and cfg.diagnosis.drain:
        decision, drain_events = drain.request_drain(node, top.category, cause_text(top), job_id=job.job_id,
                                                      actor="epilog", cfg=cfg, evidence={"finding": top.to_dict()})
        _spool(drain_events, cfg, node)
        if decision.outcome in {"breaker_open", "error"}:
            print(f"slurmtools epilog: not drained: {decision.detail}")
    # 2. The job's word, after: each stage with its own budget and try; a failure costs that stage's records only.
    later: list[Event] = []
    failed: list[str] = []
    budget = cfg.diagnosis.job_time_budget
    window = bounds.window(since, now.timestamp())

    def stage(name: str, work: Callable[[], Any]) -> Any:
        try:
            with time_budget(budget):
                return work()
        except Exception as exc:  # noqa: BLE001 - ours or the job's input: recorded, never a drain
            failed.append(name)
            later.append(internal_event(cfg, job, name, exc))
            log.error("epilog: %s failed on %s for job %s: %r", name, node, job_id, exc)
            return None

    if not job.opted_out:
        lines = stage("job output", lambda: job_output(cfg, job)) or []
        job_findings = stage("job output rules", lambda: diagnose_job_output(
            lines, plain(cfg.diagnosis.rules) or None)) or []
        later += [finding_event(f, cfg, job) for f in job_findings]
        findings = findings + job_findings
        later += stage("NFS I/O", lambda: io_events(cfg, job, now)) or []
        later += stage("checkpoint marks", lambda: checkpoint_events(cfg, job, window)) or []
        later += stage("checkpoint lines", lambda: checkpoint_log_events(cfg, job, lines, now, window)) or []
    if later:
        _spool(later, cfg, node)
    if cfg.metrics.textfile_dir:
        from slurmtools.hooks import textfile

        try:
            textfile.write(cfg, "slurmtools_epilog.prom", textfile.epilog_families(
                findings, time.monotonic() - t0, "internal_error" in info or bool(failed)), node)
        except OSError as exc:      # metrics are a nicety: said, never in the way of the diagnosis
            print(f"slurmtools epilog: cannot write the textfile metrics: {exc}")
    api.flush_in_background()
    return 0


def _spool(events: list[Event], cfg: Config, node: str) -> None:
    record_or_report(cfg.ledger.spool_dir, events, "epilog", cfg.state_dir(node), node)
