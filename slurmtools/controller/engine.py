"""The requeue controller: for each ended attempt EpilogSlurmctld queued, gather the evidence, classify,
decide, act, verify, and audit every step in `controller_decisions`; then follow retried jobs until
they run, flag lemon nodes, and return excluded nodes to service after deep checks.

Idempotent by construction: the decision row (key: cluster, job, restart count) is written before
anything is done, and acting reads the job back first. A controller killed at any point and started
again finishes the flow without requeueing twice: a job whose restart count already moved on is not
requeued again. A queue file is removed only once its decision is final.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools import exclusions, safety
from slurmtools.controller import policy, queue
from slurmtools.diagnosis.findings import NODE_TRUST
from slurmtools.ledger import api, models
from slurmtools.ledger.spool import Event, make_key
from slurmtools.slurm import SlurmError, collect, expand
from slurmtools.slurm.types import ExitStatus, JobInfo, SlurmTimeout

log = logging.getLogger(__name__)

CD = models.ControllerDecision
FINAL_STATUSES = frozenset({"done", "failed", "observed"})
#: An evacuation under way: the job was sent its checkpoint signal and gets its grace before the requeue.
EVACUATING = "evacuating"
#: How long acting waits for a job to leave COMPLETING (its epilogs) before it counts as a failure.
COMPLETING_WAIT_S = 600.0
#: States of an attempt that got as far as running (a retry cancelled while pending never ran).
STARTED = frozenset({"RUNNING", "COMPLETING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"})
AUTO_SOURCES = frozenset({"prolog", "epilog", "controller", "sync"})


def decision_key(cluster: str, job_id: int, restart_count: int) -> str:
    return make_key("decision", cluster, job_id, restart_count)


def chain_key(cluster: str, job_id: int) -> str:
    """A retry chain is named by its job id (requeues keep it); `slurmtools sbatch` uses the same key."""
    return make_key("chain", cluster, job_id)


#: A token in a resubmitted job's comment: `slurmtools=resubmit-of:JOB.RESTART` (how a restarted controller
#: finds a job it submitted but did not get to record).
RESUBMIT_TAG = "slurmtools=resubmit-of:"


def chain_lookups(cluster: str, job_id: int, what: Any) -> tuple[Any, Any]:
    """WHAT (a select on retry_chains) narrowed to JOB_ID's chain, in the order to try: by the chain's own key
    (its root job, which requeues keep), then through `chain_jobs` (a job resubmitted for the chain)."""
    C, J = models.RetryChain, models.ChainJob
    return (what.where(C.idempotency_key == chain_key(cluster, job_id)),
            what.join(J, J.chain_id == C.id).where(J.cluster == cluster, J.job_id == job_id))


def find_chain(s: Session, cluster: str, job_id: int) -> models.RetryChain | None:
    """The retry chain JOB_ID belongs to (see `chain_lookups`)."""
    for stmt in chain_lookups(cluster, job_id, select(models.RetryChain)):
        chain: models.RetryChain | None = s.scalar(stmt)
        if chain is not None:
            return chain
    return None


class ResubmitRefused(Exception):
    """The stored submission cannot be resubmitted (a permanent reason, not a failed try)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _held(job: JobInfo) -> bool:
    return job.state == "PENDING" and "held" in job.state_reason.lower()


class Controller:
    def __init__(self, cfg: Any, *, slurm: Any = None, engine: Any = None, rng: random.Random | None = None,
                 recovery: bool | None = None,
                 deep_check: Callable[[str], tuple[str, dict[str, Any]]] | None = None) -> None:
        from slurmtools.slurm import get_client

        self.cfg = cfg
        self.cluster = cfg.cluster
        self.slurm = slurm or get_client(cfg)
        self.engine = engine or api.engine_for(cfg)
        self.rules = policy.Rules.from_config(cfg)
        self.rng = rng or random.Random()
        self.queue_dir = str(cfg.get("controller.queue_dir"))
        self.recovery = bool(cfg.get("controller.recovery")) if recovery is None else recovery
        self.deep_check = deep_check or self._deep_check_command
        self._jobs: dict[int, JobInfo] | None = None
        self._last_recovery = 0.0
        self._last_publish = 0.0

    # ------------------------------------------------------------------ the pass
    def once(self) -> dict[str, Any]:
        """One pass: the queue, the follow-ups, lemons, recovery. Returns what happened."""
        report: dict[str, Any] = {"decisions": [], "waiting": [], "errors": [], "alerts": [], "running": [],
                                  "evacuations": [], "lemons": [], "recovery": []}
        self._jobs = None
        try:
            report["submissions"] = self.ingest_submissions()
        except Exception as exc:
            log.exception("controller: submissions: %s", exc)
            report["errors"].append({"error": f"submissions: {type(exc).__name__}: {exc}"})
        items = queue.pending(self.queue_dir)
        if items:
            self._ship()
        for path, item in items:
            try:
                result = self.process(item)
            except Exception as exc:
                log.exception("controller: job %s: %s", item.get("job_id"), exc)
                report["errors"].append({"job_id": item.get("job_id"), "error": f"{type(exc).__name__}: {exc}"})
                continue
            if result.get("waiting"):
                report["waiting"].append(result)
                continue
            report["decisions"].append(result)
            if result.get("alert"):
                report["alerts"].append(result["alert"])
            if result.get("status") in FINAL_STATUSES:
                queue.done(path)
        try:
            report["running"] = self.follow_up()
            report["evacuations"] = self.evacuate()
            report["lemons"] = self.lemons([n for r in report["decisions"] for n in r.get("implicated", [])])
            if self.recovery:
                report["recovery"] = self.recover()
        except Exception as exc:
            log.exception("controller: %s", exc)
            report["errors"].append({"error": f"{type(exc).__name__}: {exc}"})
        report["published"] = self.publish()
        report["breaker"] = self.breaker()
        return report

    def publish(self) -> bool:
        """Keep the published exclusions current (epilog drains reach the ledger through the spool)."""
        now_m = time.monotonic()
        if now_m - self._last_publish < 5.0:
            return False
        self._last_publish = now_m
        try:
            with Session(self.engine) as s:
                return exclusions.publish(self.cfg, s)
        except OSError as exc:
            log.warning("controller: cannot publish the exclusions: %s", exc)
            return False

    def run(self, interval: float, should_stop: Callable[[], bool]) -> None:
        while not should_stop():
            started = time.monotonic()
            try:
                report = self.once()
                for d in report["decisions"]:
                    log.warning("controller: job %s.%s: %s %s (%s)", d["job_id"], d["restart_count"],
                                d["classification"], d["decision"], d["reason"])
                for a in report["alerts"]:
                    log.error("controller: ALERT: %s", a)
                if report["breaker"]["open"]:
                    log.error("controller: circuit breaker open: %s", report["breaker"]["detail"])
            except Exception as exc:
                log.exception("controller: pass failed: %s", exc)
            left = interval - (time.monotonic() - started)
            while left > 0 and not should_stop():
                time.sleep(min(left, 0.2))
                left -= 0.2

    def ingest_submissions(self) -> list[int]:
        """Turn `slurmtools sbatch` records into retry chains. A record is believed only if its file
        belongs to the job's user (users can write the drop directory, not each other's files)."""
        import pwd

        drop = str(self.cfg.get("controller.submit_dir"))
        try:
            names = sorted(n for n in os.listdir(drop) if n.endswith(".json"))
        except OSError:
            return []
        done: list[int] = []
        for name in names:
            path = os.path.join(drop, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, encoding="utf-8") as fh:
                    st = os.fstat(fh.fileno())
                    record = json.load(fh) if st.st_size < 4 << 20 else None
                job_id = int(record["job_id"]) if isinstance(record, dict) else None
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("controller: submission %s unreadable (%s); removed", name, exc)
                queue.done(path)
                continue
            job = self._job(job_id) if job_id is not None else None
            user = job.user if job is not None else self._accounted_user(job_id)
            if user is None:       # not in slurmctld (yet, or any more) nor in the accounting
                if time.time() - st.st_mtime > 3600:
                    queue.done(path)
                continue
            try:
                owner = pwd.getpwuid(st.st_uid).pw_name
            except KeyError:
                owner = str(st.st_uid)
            if owner != user:
                log.warning("controller: submission %s belongs to %s, job %s to %s; ignored", name, owner,
                            job_id, user)
                queue.done(path)
                continue
            assert record is not None and job_id is not None
            with Session(self.engine) as s:
                C = models.RetryChain
                key = chain_key(self.cluster, job_id)
                chain = s.scalar(select(C).where(C.idempotency_key == key))
                if chain is None:
                    chain = C(idempotency_key=key, cluster=self.cluster, root_job_id=job_id, user=user,
                              created=_now(), status="active", retries_used=0)
                    s.add(chain)
                chain.max_retries = int(record.get("max_retries") or 0)
                chain.retry_on = str(record.get("retry_on") or "node")
                chain.details = {"source": "slurmtools sbatch",
                                 **{k: record.get(k) for k in ("user_argv", "argv", "added", "cwd", "env", "script",
                                                               "checkpoint")}}
                s.commit()
            queue.done(path)
            done.append(job_id)
        return done

    def _accounted_user(self, job_id: int | None) -> str | None:
        """The user of a job slurmctld no longer holds, from Slurm's accounting (a controller that was down
        longer than MinJobAge still ingests the submissions made meanwhile). None when unknown."""
        if job_id is None:
            return None
        try:
            rows = self.slurm.job_history(job_ids=[job_id])
        except SlurmError:
            return None
        users = {r.user for r in rows if r.job_id_raw == job_id and r.user}
        return users.pop() if len(users) == 1 else None

    # ------------------------------------------------------------ Slurm and ledger
    def _ship(self) -> None:
        """Ship what this host spooled (the node epilogs on a one-host lab; our own events)."""
        try:
            api.flush(self.cfg)
        except Exception as exc:  # noqa: BLE001 - the evidence wait covers a slow ledger
            log.warning("controller: ledger flush failed: %s", exc)

    def _all_jobs(self, fresh: bool = False) -> dict[int, JobInfo]:
        """slurmctld's jobs, read once per pass (FRESH: read again)."""
        if self._jobs is None or fresh:
            self._jobs = {j.job_id: j for j in self.slurm.jobs()}
        return self._jobs

    def _job(self, job_id: int, fresh: bool = False) -> JobInfo | None:
        return self._all_jobs(fresh).get(int(job_id))

    def _record(self, events: list[Event]) -> None:
        if not events:
            return
        api.record(events, self.cfg)
        self._ship()

    # ------------------------------------------------------------- one attempt
    def process(self, item: dict[str, Any]) -> dict[str, Any]:
        job_id, restart = int(item["job_id"]), int(item.get("restart_count") or 0)
        key = decision_key(self.cluster, job_id, restart)
        with Session(self.engine, expire_on_commit=False) as s:
            d = s.scalar(select(CD).where(CD.idempotency_key == key))
            if d is not None and d.status in FINAL_STATUSES:
                return self._summary(d)
            if d is not None and d.status == "acting":     # a restart mid-flow: finish, never requeue twice
                return self._act(s, d)
            if d is not None and d.status == EVACUATING:   # the evacuated attempt ended (or was ended by us)
                return self._evacuation_step(s, d)
            nodes = list(expand(item.get("nodes") or ""))
            waited = time.time() - float(item.get("enqueued") or 0)
            reported = self._epilogs_reported(s, job_id, restart)
            missing = sorted(set(nodes) - reported)
            job = self._job(job_id)
            completing = job is not None and job.restart_count == restart and job.state == "COMPLETING"
            if (missing or completing) and waited < float(self.cfg.get("controller.evidence_wait")):
                return {"waiting": True, "job_id": job_id, "restart_count": restart, "missing_epilogs": missing,
                        "completing": completing}
            d = self._decide(s, item, job, nodes, missing, key)
            if d.status == "acting":
                return self._act(s, d)
            out = self._summary(d)
            if (d.details or {}).get("alert"):
                out["alert"] = d.details["alert"]
                log.error("controller: ALERT: %s", out["alert"])
            return out

    def _epilogs_reported(self, s: Session, job_id: int, restart: int) -> set[str]:
        A = models.JobAttempt
        rows = s.scalars(select(A).where(A.cluster == self.cluster, A.job_id == job_id, A.restart_count == restart))
        return {node for row in rows for node in ((row.details or {}).get("epilog") or {})}

    def _evidence(self, s: Session, job_id: int, restart: int) -> list[policy.Evidence]:
        F = models.Finding
        rows = s.scalars(select(F).where(F.cluster == self.cluster, F.job_id == job_id,
                                         F.restart_count == restart).order_by(F.id))
        return [policy.Evidence(node=f.node, kind=f.kind, category=f.category, action=f.action, trust=f.trust,
                               message=f.message, superseded=bool((f.details or {}).get("superseded_by")),
                               do_not_requeue=bool((f.details or {}).get("do_not_requeue")), id=f.id)
               for f in rows]

    def _gate_failures(self, s: Session, job_id: int, nodes: list[str]) -> list[tuple[str, str]]:
        G = models.GateRun
        rows = s.scalars(select(G).where(G.cluster == self.cluster, G.job_id == job_id, G.verdict == "fail"))
        return [(g.node, g.failed_checks) for g in rows if not nodes or g.node in nodes]

    def _chain(self, s: Session, job_id: int, ask: policy.RetryAsk | None, user: str) -> models.RetryChain | None:
        C = models.RetryChain
        chain = find_chain(s, self.cluster, job_id)
        if chain is None and ask is not None and not ask.opted_out:
            chain = C(idempotency_key=chain_key(self.cluster, job_id), cluster=self.cluster, root_job_id=job_id,
                      user=user or None, created=_now(), max_retries=ask.max_retries, retry_on=ask.retry_on,
                      status="active", retries_used=0, details={"marker": ask.marker(), "source": "comment"})
            s.add(chain)
            s.flush()
        return chain

    def _decide(self, s: Session, item: dict[str, Any], job: JobInfo | None, nodes: list[str], missing: list[str],
                key: str) -> Any:
        job_id, restart = int(item["job_id"]), int(item.get("restart_count") or 0)
        same = job is not None and job.restart_count == restart
        state = job.state if same and job is not None and job.finished else None
        exit_: ExitStatus | None = None
        if item.get("exit_raw") is not None:
            exit_ = ExitStatus.from_wait_status(int(item["exit_raw"]))
        elif same and job is not None:
            exit_ = job.exit
        findings = self._evidence(s, job_id, restart)
        down: list[str] = []
        if state in self.rules.node_fault_states:
            down = [n.name for n in self.slurm.nodes(nodes) if n.state == "down" or not n.responding]
        attempt = policy.Attempt(job_id, restart, nodes, state, exit_, item.get("comment") or "")
        cls = policy.classify(attempt, findings, self.rules, gate_failures=self._gate_failures(s, job_id, nodes),
                              down_nodes=down)
        comment = item.get("comment") or (job.comment if job else "")
        ask = policy.parse_marker(comment, int(self.cfg.get("controller.max_retries")),
                                  str(self.cfg.get("controller.retry_on")))
        chain = self._chain(s, job_id, ask, item.get("user") or (job.user if job else ""))
        if ask is None and chain is not None:           # recorded by `slurmtools sbatch`
            ask = policy.RetryAsk(chain.max_retries, chain.retry_on)
        soft = sorted({x.node for x in exclusions.active(s, self.cluster) if x.scope == "soft"})
        dec = policy.decide(cls, ask, chain.retries_used if chain else 0,
                            already_excluded=list(job.excluded_nodes) if job else [], soft_excluded=soft,
                            base=float(self.cfg.get("controller.backoff")),
                            maximum=float(self.cfg.get("controller.backoff_max")),
                            jitter=float(self.cfg.get("controller.backoff_jitter")), rng=self.rng)
        acting = self.cfg.get("general.enabled") and not self.cfg.get("general.observe")
        alert = None
        if dec.action == "retry" and len(cls.implicated) > 1:
            limit = safety.breaker_limit(len(self.slurm.nodes()), self.cfg.get("safety.max_drain_fraction"),
                                         self.cfg.get("safety.min_drain_nodes"))
            if len(cls.implicated) > limit:   # a shared cause (fabric, filesystem, our config): a human decides
                alert = (f"job {job_id}: {len(cls.implicated)} nodes implicated at once (circuit breaker limit "
                         f"{limit}); not retried, nothing excluded")
                dec = policy.Decision("no_retry", "circuit breaker: " + alert, chain_status="failed")
        resubmit = False
        if dec.action == "retry" and job is None:
            refused = self._cannot_resubmit(chain)
            if refused:
                dec = policy.Decision("no_retry", "the job left slurmctld's memory (MinJobAge) before it could be "
                                                  f"requeued, and it cannot be resubmitted: {refused}",
                                      chain_status="failed")
            else:
                resubmit = True
        status = ("acting" if acting else "observed") if dec.action == "retry" else "done"
        now = _now()
        ended = job.end_time if same and job is not None and job.end_time else None
        detected = datetime.fromtimestamp(float(item.get("enqueued") or time.time()), tz=UTC)
        d = CD(idempotency_key=key, cluster=self.cluster, job_id=job_id, restart_count=restart,
               chain_id=chain.id if chain else None, classification=cls.kind, decision=dec.action,
               reason=dec.reason[:2000], excluded_nodes=collect(dec.exclude) if dec.exclude else "",
               status=status, t_ended=ended or detected, t_detected=detected, t_decided=now,
               details={"classification": cls.to_dict(), "decision": dec.to_dict(),
                        "ask": ask.marker() if ask else None, "state": state, "exit": str(exit_) if exit_ else None,
                        "missing_epilogs": missing, "item": item, **({"alert": alert} if alert else {}),
                        **({"resubmit": {}} if resubmit else {})})
        s.add(d)
        if chain is not None:
            if dec.action == "retry" and acting:
                chain.retries_used += 1
            chain.status = dec.chain_status
        A = models.JobAttempt
        for att in s.scalars(select(A).where(A.cluster == self.cluster, A.job_id == job_id,
                                             A.restart_count == restart)):
            att.chain_id = chain.id if chain else att.chain_id
        s.commit()
        return d

    def _act(self, s: Session, d: Any) -> dict[str, Any]:
        """requeuehold -> exclude + StartTime -> release -> verify; every step timestamped."""
        if (d.details or {}).get("resubmit") is not None:
            return self._act_resubmit(s, d)
        exclude = list(expand(d.excluded_nodes)) if d.excluded_nodes else []
        delay = float((d.details or {}).get("decision", {}).get("delay_s") or 0)
        tries = int((d.details or {}).get("act_tries", 0)) + 1
        details = dict(d.details or {})
        details["act_tries"] = tries
        limit = int(self.cfg.get("controller.verify_attempts"))
        alert = None
        try:
            job = self._job(d.job_id, fresh=True)
            if job is None and d.t_requeued is None and not details.get("evacuate") \
                    and not self._cannot_resubmit(s.get(models.RetryChain, d.chain_id) if d.chain_id else None):
                d.details = {**details, "act_tries": tries - 1, "resubmit": {}}   # purged since the decision
                s.commit()
                return self._act_resubmit(s, d)
            if job is None:
                raise SlurmError("the job left slurmctld's memory (MinJobAge) before it could be requeued")
            evacuating = bool(details.get("evacuate")) and job.state in ("RUNNING", "SUSPENDED")
            if job.restart_count == d.restart_count:
                if not evacuating and (job.state == "COMPLETING" or not job.finished):
                    # epilogs still running (COMPLETING), or a state between: not a failed try, wait for it
                    waited = (_now() - d.t_decided).total_seconds() if d.t_decided else 0.0
                    if waited < COMPLETING_WAIT_S:
                        details["act_tries"] = tries - 1
                        details["waiting"] = f"job in state {job.state}"
                        d.details = details
                        s.commit()
                        return self._summary(d)
                    raise SlurmError(f"job still in state {job.state} for attempt {d.restart_count} after "
                                     f"{waited:.0f}s")
                self.slurm.requeue(d.job_id, hold=True)
                d.t_requeued = _now()
            elif d.t_requeued is None:
                details["requeued_by"] = "slurm"
            s.commit()   # the requeue is on record before anything else can fail
            if details.get("evacuate"):
                job = self._wait_requeued(d.job_id)
            start = "now" if delay <= 0 else f"now+{round(delay)}"
            self.slurm.update_job(d.job_id, excluded_nodes=exclude or None, start_time=start)
            job = self._job(d.job_id, fresh=True)
            if job is not None and _held(job):
                self.slurm.release(d.job_id)
            d.t_released = _now()
            job = self._job(d.job_id, fresh=True)
            problems = self._verify(d, job, exclude)
            if problems:
                raise SlurmError("verify: " + "; ".join(problems))
            d.t_verified = _now()
            d.status = "done"
            details.pop("last_error", None)
        except SlurmError as exc:
            alert = self._failed_try(d, details, exc, tries, limit, "requeue", may_fail=True)
        d.details = details
        s.commit()
        out = self._summary(d)
        if alert:
            out["alert"] = alert
        return out

    # ------------------------------------------------------------ resubmission
    def _cannot_resubmit(self, chain: models.RetryChain | None) -> str | None:
        """Why the chain's stored submission cannot be resubmitted; None when it can."""
        if not self.cfg.get("controller.resubmit"):
            return "resubmission is off (controller.resubmit)"
        rec = (chain.details or {}) if chain is not None else {}
        if chain is None or rec.get("source") != "slurmtools sbatch":
            return "it was not submitted through `slurmtools sbatch`, so no submission is stored"
        if not rec.get("user_argv") or not rec.get("cwd"):
            return "its submission record lacks the command line or the working directory"
        if not chain.user:
            return "its user is unknown"
        script = rec.get("script")
        wrap = any(a == "--wrap" or a.startswith("--wrap=") for a in rec["user_argv"])
        if not wrap and script is None:
            return "no copy of its batch script was kept"
        if not wrap and len(str(script)) >= int(self.cfg.get("controller.script_copy_max_bytes")):
            return "its batch script was larger than controller.script_copy_max_bytes, and only a part was kept"
        return None

    def _resubmission(self, chain: models.RetryChain, d: Any, exclude: list[str],
                      tag: str) -> tuple[list[str], dict[str, str], str, str | None]:
        """(sbatch arguments, environment, working directory, temporary script file) for the stored
        submission: the user's own command line, with our options (exclusions, retry marker, checkpoint
        signal) built again by the wrapper's code, the copy of the script in place of the script path."""
        import pwd
        import tempfile

        from slurmtools import sbatch as wrapper

        rec = chain.details or {}
        argv = [str(a) for a in rec["user_argv"]]
        bin_dir = self.cfg.get("slurm.bin_dir")
        exe = os.path.join(bin_dir, "sbatch") if bin_dir else "sbatch"
        opts = wrapper.value_options(exe)
        _, stop = wrapper.scan(argv, *opts)
        at = stop + 1 if stop < len(argv) and argv[stop] == "--" else stop
        try:
            pw = pwd.getpwnam(str(chain.user))
        except KeyError:
            raise ResubmitRefused(f"user {chain.user} does not exist here") from None
        script_file, job_name = None, None
        if at < len(argv) and rec.get("script") is None:
            raise ResubmitRefused("no copy of its batch script was kept")
        if at < len(argv):
            job_name = os.path.basename(argv[at])     # what Slurm named the job after, not our copy's name
            fd, script_file = tempfile.mkstemp(prefix=f"slurmtools-resubmit-{d.job_id}-", suffix=".sh")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(str(rec["script"]))
                if os.geteuid() == 0:
                    os.fchown(fh.fileno(), pw.pw_uid, pw.pw_gid)
            argv[at] = script_file
        given = wrapper.split_argv(argv, *opts)
        directives = wrapper.script_directives(script_file, *opts) if script_file else wrapper.Parsed()
        if {"array", "a"} & (set(given.values) | set(directives.values)):
            if script_file:
                os.unlink(script_file)
            raise ResubmitRefused("it is a job array: a resubmission would run every task again")
        ckpt = rec.get("checkpoint") or {}
        delay = float((d.details or {}).get("decision", {}).get("delay_s") or 0)
        try:
            plan = wrapper.build(argv, ask=policy.RetryAsk(chain.max_retries, chain.retry_on), excluded=exclude,
                                 ckpt_signal=ckpt.get("signal"), ckpt_grace=ckpt.get("grace"), sbatch=exe,
                                 value_opts=opts, comment_tag=tag, job_name=job_name,
                                 begin=f"now+{round(delay)}" if delay > 0 else None)
        except (wrapper.WrapperError, ValueError) as exc:
            if script_file:
                os.unlink(script_file)
            raise ResubmitRefused(f"the stored command line is refused: {exc}") from None
        env = {str(k): str(v) for k, v in (rec.get("env") or {}).items()}
        if "SLURM_CONF" not in env and os.environ.get("SLURM_CONF"):
            env["SLURM_CONF"] = os.environ["SLURM_CONF"]
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        return plan.argv[1:], env, str(rec["cwd"]), script_file

    def _act_resubmit(self, s: Session, d: Any) -> dict[str, Any]:
        """Submit the chain's stored submission again, as its user, away from the excluded nodes; join the
        new job id to the chain; verify. Never twice: the intent is on record before sbatch runs, and a
        controller that finds the intent without a job id looks for the job by its comment tag instead."""
        details = dict(d.details or {})
        rs = dict(details.get("resubmit") or {})
        tries = int(details.get("act_tries", 0)) + 1
        details["act_tries"] = tries
        limit = int(self.cfg.get("controller.verify_attempts"))
        exclude = list(expand(d.excluded_nodes)) if d.excluded_nodes else []
        tag = f"{RESUBMIT_TAG}{d.job_id}.{d.restart_count}"
        alert = None

        def save() -> None:
            d.details = {**details, "resubmit": dict(rs)}
            s.commit()

        try:
            chain = s.get(models.RetryChain, d.chain_id) if d.chain_id else None
            if chain is None:
                raise ResubmitRefused("the decision has no retry chain")
            if rs.get("job_id") is None and rs.get("submitting"):
                found = sorted(j.job_id for j in self._all_jobs(fresh=True).values() if tag in j.comment.split())
                if not found:
                    raise ResubmitRefused(f"a resubmission was started at {rs['submitting']:.0f} and Slurm has no "
                                          f"job with `{tag}` in its comment: it may or may not have been "
                                          "submitted, and it is not submitted twice")
                rs["job_id"], rs["adopted"] = found[0], True
                self._join_chain(s, chain, d, found[0])
                d.t_requeued = d.t_requeued or _now()
                save()
            if rs.get("job_id") is None:
                argv, env, cwd, script_file = self._resubmission(chain, d, exclude, tag)
                rs["submitting"], rs["user"], rs["argv"] = time.time(), chain.user, argv
                save()                     # the intent is on record before sbatch runs
                try:
                    new_id = self.slurm.submit(argv, env=env, cwd=cwd, user=chain.user)
                except SlurmTimeout:
                    raise                  # it may have been submitted: the next pass looks for it by its tag
                except SlurmError:
                    rs.pop("submitting", None)   # sbatch said no: nothing was submitted, a later try may
                    raise
                finally:
                    if script_file:
                        try:
                            os.unlink(script_file)
                        except OSError:
                            pass
                rs["job_id"] = new_id
                if new_id == d.job_id:     # slurmctld handed the forgotten id out again: attempts will collide
                    rs["id_reused"] = True
                    log.error("controller: job %s: resubmitted under the same job id (Slurm reused it); its "
                              "next attempts share keys with the old ones", d.job_id)
                self._join_chain(s, chain, d, new_id)
                d.t_requeued = _now()
                save()
                log.warning("controller: job %s: resubmitted as job %s (the old one left slurmctld's memory)",
                            d.job_id, new_id)
            new_id = int(rs["job_id"])
            d.t_released = d.t_released or d.t_requeued
            job = self._job(new_id, fresh=True)
            if job is not None and set(exclude) - set(job.excluded_nodes):
                self.slurm.update_job(new_id, excluded_nodes=sorted(set(exclude) | set(job.excluded_nodes)))
                job = self._job(new_id, fresh=True)
            if job is None:
                raise SlurmError(f"verify: job {new_id} not found")
            missing = sorted(set(exclude) - set(job.excluded_nodes))
            if missing:
                raise SlurmError(f"verify: job {new_id} not excluded from {','.join(missing)}")
            d.t_verified = _now()
            d.status = "done"
            details.pop("last_error", None)
        except ResubmitRefused as exc:
            details["last_error"] = str(exc)
            d.status = "failed"
            alert = f"job {d.job_id}: not resubmitted: {exc}"
            log.error("controller: ALERT: %s", alert)
        except SlurmError as exc:   # an sbatch that may have submitted is settled by the next pass, not here
            alert = self._failed_try(d, details, exc, tries, limit, "resubmission",
                                     may_fail=not (rs.get("submitting") and rs.get("job_id") is None))
        if d.status == "failed" and d.chain_id:
            chain = s.get(models.RetryChain, d.chain_id)
            if chain is not None and chain.status == "active":
                chain.status = "failed"
        save()
        out = self._summary(d)
        if alert:
            out["alert"] = alert
        return out

    @staticmethod
    def _failed_try(d: Any, details: dict[str, Any], exc: SlurmError, tries: int, limit: int, what: str,
                    may_fail: bool) -> str | None:
        """Record a failed try of acting on D; past LIMIT tries (and when MAY_FAIL) the decision fails with
        an alert, which is returned."""
        details["last_error"] = str(exc)
        details.setdefault("errors", []).append({"time": _now().isoformat(), "error": str(exc)[:500]})
        if tries >= limit and may_fail:
            d.status = "failed"
            alert = f"job {d.job_id}: {what} did not take after {tries} tries: {exc}"
            log.error("controller: ALERT: %s", alert)
            return alert
        log.warning("controller: job %s: %s: %s (try %d of %d)", d.job_id, what, exc, tries, limit)
        return None

    def _join_chain(self, s: Session, chain: models.RetryChain, d: Any, job_id: int) -> None:
        J = models.ChainJob
        row = s.scalar(select(J).where(J.cluster == self.cluster, J.job_id == job_id))
        if row is None:                    # (an old row: Slurm reused the job id)
            row = J(cluster=self.cluster, job_id=job_id, chain_id=chain.id, created=_now())
            s.add(row)
        row.chain_id, row.created = chain.id, _now()
        row.details = {"replaces": {"job_id": d.job_id, "restart_count": d.restart_count}}

    @staticmethod
    def _verify(d: Any, job: JobInfo | None, exclude: list[str]) -> list[str]:
        if job is None:
            return ["the job is gone"]
        problems = []
        if job.restart_count <= d.restart_count:
            problems.append(f"restart count still {job.restart_count}")
        if _held(job):
            problems.append(f"still held ({job.state_reason})")
        missing = sorted(set(exclude) - set(job.excluded_nodes))
        if missing:
            problems.append("not excluded: " + ",".join(missing))
        return problems

    @staticmethod
    def _summary(d: Any) -> dict[str, Any]:
        cls = (d.details or {}).get("classification") or {}
        return {"job_id": d.job_id, "restart_count": d.restart_count, "classification": d.classification,
                "decision": d.decision, "reason": d.reason, "excluded_nodes": d.excluded_nodes, "status": d.status,
                "implicated": cls.get("implicated", []), "error": (d.details or {}).get("last_error"),
                **({"resubmitted_as": rs["job_id"]} if (rs := (d.details or {}).get("resubmit") or {}).get("job_id")
                   else {})}

    # -------------------------------------------------------------- evacuation
    def evacuate(self) -> list[dict[str, Any]]:
        """Take jobs off nodes we are draining while they run (an admin `exclude add` on a busy node, a drain
        by a non-fatal finding): a job submitted with `slurmtools sbatch --checkpoint-signal SIG` gets SIG
        (batch shell), its grace to save, then the usual requeue away from those nodes. Other jobs finish
        where they are; the node drains after them. An evacuation does not spend the retry budget."""
        if not self.cfg.get("controller.evacuate") or not self.cfg.get("general.enabled") \
                or self.cfg.get("general.observe"):
            return []
        out: list[dict[str, Any]] = []
        with Session(self.engine, expire_on_commit=False) as s:
            for d in list(s.scalars(select(CD).where(CD.cluster == self.cluster, CD.status == EVACUATING))):
                out.append(self._evacuation_step(s, d))
            prefix = str(self.cfg.get("general.reason_prefix"))
            draining = {n.name: n.reason for n in safety.drained_by_us(self.slurm.nodes(), prefix) if n.draining}
            if not draining:
                return out
            for job in list(self._all_jobs(fresh=True).values()):
                busy = sorted(set(job.nodes) & set(draining))
                if job.state != "RUNNING" or not busy:
                    continue
                key = decision_key(self.cluster, job.job_id, job.restart_count)
                if s.scalar(select(CD.id).where(CD.idempotency_key == key)) is not None:
                    continue
                chain = find_chain(s, self.cluster, job.job_id)
                ckpt = (chain.details or {}).get("checkpoint") if chain is not None else None
                if not ckpt or chain is None or chain.status != "active":
                    continue
                out.append(self._start_evacuation(s, job, chain, busy, draining, ckpt))
        return out

    def _start_evacuation(self, s: Session, job: JobInfo, chain: models.RetryChain, busy: list[str],
                          draining: dict[str, str], ckpt: dict[str, Any]) -> dict[str, Any]:
        sig, grace = str(ckpt.get("signal") or "USR1"), float(ckpt.get("grace") or 0)
        soft = {x.node for x in exclusions.active(s, self.cluster) if x.scope == "soft"}
        exclude = sorted(set(busy) | set(job.excluded_nodes) | soft)
        why = "; ".join(f"{n}: {draining[n]}" for n in busy)
        now = _now()
        d = CD(idempotency_key=decision_key(self.cluster, job.job_id, job.restart_count), cluster=self.cluster,
               job_id=job.job_id, restart_count=job.restart_count, chain_id=chain.id, classification="evacuation",
               decision="retry", reason=(f"{collect(busy)} taken out of service while the job ran ({why}); "
                                         f"checkpoint signal {sig}, {grace:.0f}s grace, then requeued")[:2000],
               excluded_nodes=collect(exclude), status=EVACUATING, t_ended=None, t_detected=now, t_decided=now,
               details={"evacuate": {"signal": sig, "grace": grace, "nodes": busy}, "decision": {"delay_s": 0},
                        "state": job.state})
        s.add(d)
        s.commit()     # on record before the signal: a restarted controller continues, never signals twice
        evac = dict(d.details["evacuate"])
        try:
            self.slurm.signal(job.job_id, sig, batch_only=True)
            evac["signalled"] = time.time()
        except SlurmError as exc:      # no signal, no grace: requeue at once (the job asked to be moved)
            evac["signal_error"] = str(exc)[:500]
            evac["signalled"] = time.time() - grace
        d.details = {**d.details, "evacuate": evac}
        s.commit()
        log.warning("controller: job %s: evacuating from %s: %s sent, requeue in %.0fs", job.job_id,
                    collect(busy), sig, grace)
        return self._summary(d)

    def _evacuation_step(self, s: Session, d: Any) -> dict[str, Any]:
        """Past the grace, or once the attempt ended by itself (a trap that saves and exits): requeue."""
        evac = (d.details or {}).get("evacuate") or {}
        job = self._job(d.job_id)
        running = job is not None and job.restart_count == d.restart_count and job.state == "RUNNING"
        if running and time.time() - float(evac.get("signalled") or 0) < float(evac.get("grace") or 0):
            return {**self._summary(d), "waiting": "grace"}
        d.status = "acting"
        s.commit()
        return self._act(s, d)

    def _wait_requeued(self, job_id: int, timeout: float = 60.0) -> JobInfo | None:
        """A running job just requeued is COMPLETING until its steps are gone (KillWait): Slurm refuses an
        update of its excluded nodes until then. Bounded."""
        deadline = time.monotonic() + timeout
        job = self._job(job_id, fresh=True)
        while job is not None and job.state == "COMPLETING" and time.monotonic() < deadline:
            time.sleep(0.5)
            job = self._job(job_id, fresh=True)
        return job

    # ------------------------------------------------------------ follow-ups
    def follow_up(self) -> list[dict[str, Any]]:
        """Stamp t_running on retries whose next attempt has started (the recovery latency's end)."""
        since = _now() - timedelta(days=1)
        out: list[dict[str, Any]] = []
        with Session(self.engine, expire_on_commit=False) as s:
            rows = list(s.scalars(select(CD).where(CD.cluster == self.cluster, CD.decision == "retry",
                                                   CD.status == "done", CD.t_running.is_(None),
                                                   CD.t_decided >= since).limit(500)))
            if not rows:
                return out
            for d in rows:
                new_id = ((d.details or {}).get("resubmit") or {}).get("job_id")   # resubmitted: the new job
                job = self._job(d.job_id if new_id is None else int(new_id))
                moved_on = job is not None and (new_id is not None or job.restart_count > d.restart_count)
                if job is None or not moved_on or job.state not in STARTED or job.start_time is None:
                    continue
                d.t_running = job.start_time
                out.append({"job_id": job.job_id, "restart_count": job.restart_count, "nodes": collect(job.nodes),
                            "t_running": d.t_running.isoformat(),
                            **({"resubmitted_from": d.job_id} if new_id is not None else {})})
            s.commit()
        return out

    def breaker(self) -> dict[str, Any]:
        return safety.breaker_status(self.cfg, self.slurm)

    # ------------------------------------------------------------------- lemons
    def lemons(self, nodes: list[str]) -> list[dict[str, Any]]:
        """A node with `lemon_findings` node faults (distinct attempts) within `lemon_window` gets a lemon
        exclusion, `lemon_ttl` long, doubled for each earlier lemon exclusion (up to `lemon_ttl_max`)."""
        cfg = self.cfg
        need = int(cfg.get("controller.lemon_findings"))
        if not nodes or need <= 0:
            return []
        window = float(cfg.get("controller.lemon_window"))
        since = _now() - timedelta(seconds=window)
        F, X = models.Finding, models.Exclusion
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        with Session(self.engine) as s:
            for node in sorted(set(nodes)):
                rows = s.execute(select(F.job_id, F.restart_count, F.action, F.trust, F.details).where(
                    F.cluster == self.cluster, F.node == node, F.time >= since)).all()
                faults = {(r.job_id, r.restart_count) for r in rows if r.trust in NODE_TRUST
                          and r.action in self.rules.node_fault_actions and not (r.details or {}).get("superseded_by")}
                if len(faults) < need:
                    continue
                lemon_xs = [x for x in s.scalars(select(X).where(X.cluster == self.cluster, X.node == node))
                            if (x.details or {}).get("lemon")]
                if lemon_xs and any((x.details or {}).get("lemon")
                                    for x in exclusions.active(s, self.cluster, nodes=[node])):
                    continue
                ttl = min(float(cfg.get("controller.lemon_ttl")) * 2 ** len(lemon_xs),
                          float(cfg.get("controller.lemon_ttl_max")))
                cause = f"lemon node: {len(faults)} node faults within {window / 86400:g} days"
                evidence = {"lemon": True, "faults": len(faults), "earlier_lemon_exclusions": len(lemon_xs)}
                decision, evs = safety.request_drain(node, "lemon", cause, job_id=None, actor="controller",
                                                     cfg=cfg, slurm=self.slurm, evidence=evidence, ttl_s=ttl)
                events += evs
                if decision.outcome == "already_ours":  # drained for the fault itself: the lemon TTL still holds
                    events.append(safety.exclusion_event(cfg, node, "drain", decision.reason, "controller",
                                                         ttl_s=ttl, evidence=evidence))
                out.append({"node": node, "faults": len(faults), "ttl_s": ttl, "outcome": decision.outcome})
        self._record(events)
        return out

    # ---------------------------------------------------------------- recovery
    def _state_path(self) -> str:
        return os.path.join(self.queue_dir, "state", "recovery.json")

    def _load_state(self) -> dict[str, Any]:
        try:
            with open(self._state_path(), encoding="utf-8") as fh:
                data = json.load(fh)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_state(self, state: dict[str, Any]) -> None:
        from slurmtools.fsutil import write_atomic

        os.makedirs(os.path.dirname(self._state_path()), exist_ok=True)
        write_atomic(self._state_path(), json.dumps(state, sort_keys=True))

    def _deep_check_command(self, node: str) -> tuple[str, dict[str, Any]]:
        argv = [str(a).replace("{node}", node) for a in self.cfg.get("controller.deep_check_command")]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  timeout=float(self.cfg.get("controller.deep_check_timeout")))
        except subprocess.TimeoutExpired:
            return "unknown", {"error": "deep check timed out"}
        except OSError as exc:
            return "unknown", {"error": f"cannot run {argv[0]}: {exc}"}
        verdict = {0: "ok", 1: "fail"}.get(proc.returncode, "unknown")
        try:
            results = json.loads(proc.stdout)
            failed = [r.get("check") for r in results if r.get("status") == "fail"]
        except (ValueError, AttributeError, TypeError):
            failed = []
        return verdict, {"rc": proc.returncode, "failed": failed, "stderr": proc.stderr[-500:]}

    def recover(self, force: bool = False) -> list[dict[str, Any]]:
        """Deep-check nodes under an automatic drain exclusion; resume them after `recovery_passes` passes
        in a row and close their exclusions as `confirmed` (a deep check failed, or the node had node
        faults after it was drained) or `refuted` (nothing found since)."""
        interval = float(self.cfg.get("controller.recovery_interval"))
        now_m = time.monotonic()
        if not force and now_m - self._last_recovery < min(interval, 10.0):
            return []
        self._last_recovery = now_m
        prefix = self.cfg.get("general.reason_prefix")
        need = int(self.cfg.get("controller.recovery_passes"))
        state = self._load_state()
        out: list[dict[str, Any]] = []
        events: list[Event] = []
        F = models.Finding
        with Session(self.engine) as s:
            by_node: dict[str, list[models.Exclusion]] = {}
            for x in exclusions.active(s, self.cluster):
                by_node.setdefault(x.node, []).append(x)
            candidates = {n: xs for n, xs in by_node.items()
                          if all(x.scope == "drain" and x.source in AUTO_SOURCES and not (x.details or {}).get("lemon")
                                 for x in xs)}
            for node in list(state):
                if node not in candidates:
                    del state[node]
            if not candidates:
                self._save_state(state)
                return out
            infos = {n.name: n for n in self.slurm.nodes(sorted(candidates))}
            for node, xs in sorted(candidates.items()):
                info = infos.get(node)
                if info is None or not info.drained or not safety.is_ours(info.reason, prefix):
                    continue   # busy (draining), resumed behind our back (sync's job), or an admin's drain
                keys = sorted(x.idempotency_key for x in xs)
                st = state.get(node)
                if not st or st.get("exclusions") != keys:
                    st = state[node] = {"exclusions": keys, "passes": 0, "failed": False, "last": 0.0}
                if time.time() - float(st["last"]) < interval and not force:
                    continue
                verdict, info_ = self.deep_check(node)
                st["last"] = time.time()
                if verdict == "ok":
                    st["passes"] += 1
                elif verdict == "fail":
                    st["passes"], st["failed"] = 0, True
                events.append(Event("node_state", {"node": node, "action": "deep_check", "actor": "controller",
                                                   "reason": f"deep check: {verdict}", "applied": True,
                                                   "details": {"verdict": verdict, "passes": st["passes"],
                                                               **info_}}, cluster=self.cluster))
                row = {"node": node, "verdict": verdict, "passes": st["passes"]}
                if st["passes"] >= need:
                    start = min(x.start for x in xs)
                    later = s.scalar(select(func.count()).select_from(F).where(
                        F.cluster == self.cluster, F.node == node, F.time > start, F.trust.in_(NODE_TRUST),
                        F.action.in_(self.rules.node_fault_actions))) or 0
                    outcome = "confirmed" if st["failed"] or later else "refuted"
                    decision, ev = safety.request_resume(node, cfg=self.cfg, slurm=self.slurm, actor="controller",
                                                         why=f"passed {need} deep checks ({outcome})")
                    events.append(ev)
                    if decision.applied or decision.outcome == "not_drained":
                        events += [exclusions.end_event(self.cfg, x, outcome, f"passed {need} deep checks")
                                   for x in xs]
                        del state[node]
                    row.update({"resumed": decision.outcome, "outcome": outcome, "later_faults": later})
                out.append(row)
        self._save_state(state)
        self._record(events)
        return out
