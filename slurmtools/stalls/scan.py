"""One pass of the stall detector over every running job: progress (its files), the GPU signal (one read for
all nodes), the verdict, and for a stalled job the evidence of every node and the suspect.

The per-job history the judge learns from (the files' sizes and modification times, the gaps seen between
them) is kept between passes in `stalls.state_file` (JSON, root's), keyed by job and attempt."""

from __future__ import annotations

import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from slurmtools.stalls import blame, evidence, gpu, judge, progress, signals

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.detect import prom
    from slurmtools.slurm.base import Slurm
    from slurmtools.slurm.types import JobInfo

log = logging.getLogger(__name__)


def output_paths(job: JobInfo) -> list[str]:
    """The job's output and error files as Slurm names them: its simple patterns filled in (%j %J %x %u %%);
    a relative path is under its working directory; nothing given is Slurm's default slurm-%j.out there."""
    def fill(p: str) -> str:
        if not p:
            return ""
        out = (p.replace("%%", "\0").replace("%j", str(job.job_id)).replace("%J", str(job.job_id))
               .replace("%x", job.name).replace("%u", job.user).replace("\0", "%"))
        if "%" in out:
            return ""              # a pattern we do not fill (%N, %t, ...): per node or per task, not one file
        return out if os.path.isabs(out) or not job.work_dir else os.path.join(job.work_dir, out)

    paths = [fill(job.stdout) or (os.path.join(job.work_dir, f"slurm-{job.job_id}.out") if job.work_dir and
                                   not job.stdout else ""), fill(getattr(job, "stderr", ""))]
    return [p for p in dict.fromkeys(paths) if p]


def _uid(user: str) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except (KeyError, TypeError):
        return None


def load_state(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(16 << 20))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_state(path: str, state: dict[str, Any]) -> str | None:
    from slurmtools.fsutil import write_atomic

    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o750, exist_ok=True)
        write_atomic(path, json.dumps(state, sort_keys=True), 0o600)
    except OSError as exc:
        return f"stall state not kept ({path}): {exc}"
    return None


def judge_job(cfg: Config, job: JobInfo, now: float, samples: dict[str, list[gpu.GpuSample]], history: dict[str, Any],
              *, quiet: float | None = None, with_evidence: bool = True,
              ledger_checkpoints: list[float] | None = None, client: prom.Client | None = None) -> tuple[dict[str, Any],
                                                                                          dict[str, Any]]:
    """One job's result (the `scan --json` object) and its history for the next pass."""
    lim = judge.limits_for(cfg, job.partition, job.comment, quiet)
    start = job.start_time.timestamp() if job.start_time else None
    uid = _uid(job.user)
    paths = output_paths(job) if uid is not None else []
    prog, kept = progress.observe(paths, uid, start, history, cfg.stalls.history_bytes,
                                  ledger_checkpoints)
    nodes = list(job.nodes)
    th = gpu.Thresholds.from_config(cfg)
    sig = gpu.job_signature(signals.for_job(samples, job.job_id, nodes), nodes, th)
    if not prog.files:
        v = judge.Verdict(job.job_id, False, 0.0, 0.0, "no output file of the job's user to read: not judged",
                          sig["verdict"])
    else:
        v = judge.judge(job.job_id, now, start, prog, sig["verdict"], lim)
    ev: dict[str, Any] = {"progress": prog.to_dict(), "gpu": sig, "limits": lim.to_dict(), "why": v.why}
    if v.stalled:
        per_node = evidence.collect(cfg, job.job_id, nodes) if with_evidence else {}
        dstate, kern = evidence.summary(per_node)
        net = signals.network_events(cfg, nodes, start or now - 3600.0, now, client)
        v.suspect, named = blame.blame(nodes, {n: s["class"] for n, s in sig["nodes"].items()}, dstate, kern, net)
        ev.update(nodes=per_node, blame=named, network=net)
    result = {"job_id": job.job_id, "restart_count": job.restart_count, "user": job.user, "partition": job.partition,
              "nodes": nodes, "stalled": v.stalled, "suspect": v.suspect, "quiet_s": round(v.quiet_s, 1),
              "allowed_s": round(v.allowed_s, 1), "gpu": v.gpu, "last_progress": prog.last_progress,
              "start": start, "evidence": ev}
    return result, kept


def ledger_checkpoints(cfg: Config, job_ids: list[int]) -> dict[int, list[float]]:
    """The checkpoint durations the ledger holds for these jobs (their earlier attempts); {} without a ledger."""
    if not job_ids:
        return {}
    try:
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from slurmtools.ledger import api, models

        E = models.CheckpointEvent
        out: dict[int, list[float]] = {}
        with Session(api.engine_for(cfg)) as s:
            for job_id, seconds in s.execute(select(E.job_id, E.seconds).where(
                    E.cluster == cfg.cluster, E.job_id.in_(job_ids[:5000]), E.kind == "save",
                    E.seconds.is_not(None))):
                out.setdefault(int(job_id), []).append(float(seconds or 0.0))
        return out
    except Exception as exc:  # noqa: BLE001 - the ledger is one source among several: say so, go on
        log.warning("stalls: checkpoint durations not read from the ledger: %s", exc)
        return {}


def run_scan(cfg: Config, slurm: Slurm, *, quiet: float | None = None, with_evidence: bool = True,
             now: float | None = None, client: prom.Client | None = None, use_ledger: bool = True,
             keep_state: bool = True) -> tuple[list[dict[str, Any]], list[str]]:
    """Every running job judged; warnings (a GPU source that did not answer, a state file not kept)."""
    now = time.time() if now is None else now
    jobs = [j for j in slurm.jobs() if j.state == "RUNNING"]
    warnings: list[str] = []
    nodes = sorted({n for j in jobs for n in j.nodes})
    samples, warn = signals.gpu_samples(cfg, nodes, client=client, now=now)
    if warn:
        warnings.append(warn)
    path = cfg.stalls.state_file
    state = load_state(path) if keep_state else {}
    ckpts = ledger_checkpoints(cfg, [j.job_id for j in jobs]) if use_ledger else {}
    results, new_state = [], {}
    for job in jobs:
        key = f"{job.job_id}.{job.restart_count}"
        try:
            res, kept = judge_job(cfg, job, now, samples, state.get(key) or {}, quiet=quiet,
                                  with_evidence=with_evidence, ledger_checkpoints=ckpts.get(job.job_id),
                                  client=client)
        except ValueError as exc:           # a bad [stalls] value: one line for the operator, every job
            raise ValueError(f"[stalls]: {exc}") from None
        results.append(res)
        new_state[key] = kept
    if keep_state:
        problem = save_state(path, new_state)
        if problem:
            warnings.append(problem)
    return results, warnings
