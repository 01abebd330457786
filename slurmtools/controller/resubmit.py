"""Resubmission: a job to retry that already left slurmctld's memory (MinJobAge) is submitted again from
its `slurmtools sbatch` record, as its user, away from the implicated nodes, and the new job id joins the
chain. Never twice: the intent is on record before sbatch runs, and a job submitted by a controller that
died in sbatch is found again by the comment tag."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from sqlalchemy.orm import Session

from slurmtools.controller import state
from slurmtools.controller.base import CD, Context, failed_try, summary, utcnow
from slurmtools.jobs import marker
from slurmtools.ledger import models
from slurmtools.slurm import SlurmError, expand, userenv
from slurmtools.slurm.types import SlurmTimeout

#: A token in a resubmitted job's comment: `slurmtools=resubmit-of:JOB.RESTART` (how a restarted controller
#: finds a job it submitted but did not get to record).
RESUBMIT_TAG = "slurmtools=resubmit-of:"

log = logging.getLogger(__name__)


class ResubmitRefused(Exception):
    """The stored submission cannot be resubmitted (a permanent reason, not a failed try)."""


class Resubmitter:
    """Resubmits a retry whose job slurmctld forgot, from its stored submission (input: the shared `Context`)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cfg = ctx.cfg

    def cannot_resubmit(self, chain: models.RetryChain | None) -> str | None:
        """Why the chain's stored submission cannot be resubmitted; None when it can."""
        if not self.cfg.controller.resubmit:
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
        if not wrap and len(str(script)) >= int(self.cfg.controller.script_copy_max_bytes):
            return "its batch script was larger than controller.script_copy_max_bytes, and only a part was kept"
        return None

    def _resubmission(self, chain: models.RetryChain, d: CD, exclude: list[str], tag: str,
                      delay: float) -> tuple[list[str], dict[str, str], str, str | None]:
        """(sbatch arguments, environment, working directory, temporary script file) for the stored
        submission: the user's own command line, with our options (exclusions, retry marker, checkpoint
        signal) built again by the wrapper's code, the copy of the script in place of the script path."""
        import pwd
        import tempfile

        from slurmtools.jobs import sbatch as wrapper

        rec = chain.details or {}
        argv = [str(a) for a in rec["user_argv"]]
        bin_dir = self.cfg.slurm.bin_dir
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
        try:
            plan = wrapper.build(argv, ask=marker.RetryAsk(chain.max_retries, chain.retry_on), excluded=exclude,
                                 ckpt_signal=ckpt.get("signal"), ckpt_grace=ckpt.get("grace"), sbatch=exe,
                                 value_opts=opts, comment_tag=tag, job_name=job_name,
                                 begin=f"now+{round(delay)}" if delay > 0 else None)
        except (wrapper.WrapperError, ValueError) as exc:
            if script_file:
                os.unlink(script_file)
            raise ResubmitRefused(f"the stored command line is refused: {exc}") from None
        # root builds the environment: the keep-list from the record (checked again: a record stored before
        # the check), identity from the passwd entry, the controller's own SLURM_CONF (slurm/userenv.py)
        env = userenv.for_user(rec.get("env"), pw.pw_name, pw.pw_dir, pw.pw_shell or "/bin/sh",
                               os.environ.get("SLURM_CONF"))
        return plan.argv[1:], env, str(rec["cwd"]), script_file

    def act(self, s: Session, d: CD) -> dict[str, Any]:
        """Submit the chain's stored submission again, as its user, away from the excluded nodes; join the
        new job id to the chain; verify. Never twice: the intent is on record before sbatch runs, and a
        controller that finds the intent without a job id looks for the job by its comment tag instead."""
        details = state.of(d)
        rs = details.resubmit = details.resubmit or state.Resubmit()
        tries = details.act_tries = details.act_tries + 1
        limit = int(self.cfg.controller.verify_attempts)
        exclude = list(expand(d.excluded_nodes)) if d.excluded_nodes else []
        tag = f"{RESUBMIT_TAG}{d.job_id}.{d.restart_count}"
        alert = None

        def save() -> None:
            state.save(d, details)
            s.commit()

        try:
            chain = s.get(models.RetryChain, d.chain_id) if d.chain_id else None
            if chain is None:
                raise ResubmitRefused("the decision has no retry chain")
            if rs.job_id is None and rs.submitting:
                found = sorted(j.job_id for j in self.ctx.all_jobs(fresh=True).values() if tag in j.comment.split())
                if not found:
                    raise ResubmitRefused(f"a resubmission was started at {rs.submitting:.0f} and Slurm has no "
                                          f"job with `{tag}` in its comment: it may or may not have been "
                                          "submitted, and it is not submitted twice")
                rs.job_id, rs.adopted = found[0], True
                self.ctx.join_chain(s, chain, d, found[0])
                d.t_requeued = d.t_requeued or utcnow()
                save()
            if rs.job_id is None:
                argv, env, cwd, script_file = self._resubmission(chain, d, exclude, tag, details.delay_s)
                rs.submitting, rs.user, rs.argv = time.time(), chain.user, argv
                save()                     # the intent is on record before sbatch runs
                try:
                    new_id = self.ctx.slurm.submit(argv, env=env, cwd=cwd, user=chain.user)
                except SlurmTimeout:
                    raise                  # it may have been submitted: the next pass looks for it by its tag
                except SlurmError:
                    rs.submitting = None         # sbatch said no: nothing was submitted, a later try may
                    raise
                finally:
                    if script_file:
                        try:
                            os.unlink(script_file)
                        except OSError:
                            pass
                rs.job_id = new_id
                if new_id == d.job_id:     # slurmctld handed the forgotten id out again: attempts will collide
                    rs.id_reused = True
                    log.error("controller: job %s: resubmitted under the same job id (Slurm reused it); its "
                              "next attempts share keys with the old ones", d.job_id)
                self.ctx.join_chain(s, chain, d, new_id)
                d.t_requeued = utcnow()
                save()
                log.warning("controller: job %s: resubmitted as job %s (the old one left slurmctld's memory)",
                            d.job_id, new_id)
            new_id = int(rs.job_id)
            d.t_released = d.t_released or d.t_requeued
            job = self.ctx.job(new_id, fresh=True)
            if job is not None and set(exclude) - set(job.excluded_nodes):
                self.ctx.slurm.update_job(new_id, excluded_nodes=sorted(set(exclude) | set(job.excluded_nodes)))
                job = self.ctx.job(new_id, fresh=True)
            if job is None:
                raise SlurmError(f"verify: job {new_id} not found")
            missing = sorted(set(exclude) - set(job.excluded_nodes))
            if missing:
                raise SlurmError(f"verify: job {new_id} not excluded from {','.join(missing)}")
            d.t_verified = utcnow()
            state.move(d, state.Status.DONE)
            details.last_error = None
        except ResubmitRefused as exc:
            details.last_error = str(exc)
            state.move(d, state.Status.FAILED)
            alert = f"job {d.job_id}: not resubmitted: {exc}"
            log.error("controller: ALERT: %s", alert)
        except SlurmError as exc:   # an sbatch that may have submitted is settled by the next pass, not here
            alert = failed_try(d, details, exc, tries, limit, "resubmission",
                               may_fail=not (rs.submitting and rs.job_id is None))
        if d.status == state.Status.FAILED and d.chain_id:
            chain = s.get(models.RetryChain, d.chain_id)
            if chain is not None and chain.status == "active":
                chain.status = "failed"
        save()
        out = summary(d)
        if alert:
            out["alert"] = alert
        return out
