"""Submission records: `slurmtools sbatch` drops one file per job; each becomes (or updates) a retry chain
with the stored command line, script copy and environment. A record is believed only from the job's user."""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import queue
from slurmtools.controller.base import Context, utcnow
from slurmtools.fsutil import read_safely
from slurmtools.jobs import marker
from slurmtools.ledger import models
from slurmtools.ledger.chains import chain_key
from slurmtools.slurm import SlurmError, userenv

log = logging.getLogger(__name__)


class Ingester:
    """Submission records into retry chains (input: the shared `Context`)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cfg = ctx.cfg
        self.cluster = ctx.cluster
        self.engine = ctx.engine

    def run(self) -> list[int]:
        """Turn `slurmtools sbatch` records into retry chains. A record is believed only if its file
        belongs to the job's user (users can write the drop directory, not each other's files)."""
        import pwd

        drop = str(self.cfg.controller.submit_dir)
        try:
            names = sorted(n for n in os.listdir(drop) if n.endswith(".json"))
        except OSError:
            return []
        done: list[int] = []
        for name in names:
            path = os.path.join(drop, name)
            try:
                data, st = read_safely(path, 4 << 20, whole=True)
                record = json.loads(data)
                job_id = int(record["job_id"]) if isinstance(record, dict) else None
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("controller: submission %s unreadable (%s); removed", name, exc)
                queue.done(path)
                continue
            job = self.ctx.job(job_id) if job_id is not None else None
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
            kept, why = checked_record(record, int(self.cfg.controller.retry_limit))
            if why:
                log.warning("controller: submission %s refused: %s", name, why)
                queue.done(path)
                continue
            with Session(self.engine) as s:
                C = models.RetryChain
                key = chain_key(self.cluster, job_id)
                chain = s.scalar(select(C).where(C.idempotency_key == key))
                if chain is None:
                    chain = C(idempotency_key=key, cluster=self.cluster, root_job_id=job_id, user=user,
                              created=utcnow(), status="active", retries_used=0)
                    s.add(chain)
                chain.max_retries, chain.retry_on = kept.pop("max_retries"), kept.pop("retry_on")
                env, refused = userenv.clean(record.get("env"))
                if refused:
                    log.warning("controller: submission %s: environment left out: %s", name,
                                "; ".join(refused)[:2000])
                chain.details = {"source": "slurmtools sbatch", **kept,
                                 "env": env, **({"env_refused": refused[:64]} if refused else {})}
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
            rows = self.ctx.slurm.job_history(job_ids=[job_id])
        except SlurmError:
            return None
        users = {r.user for r in rows if r.job_id_raw == job_id and r.user}
        return users.pop() if len(users) == 1 else None


#: Bounds on what a submission record may hold (its user wrote it): more is refused, never truncated.
MAX_ARGS, MAX_ARG = 4096, 65536
MAX_GRACE_S = 86400


def checked_record(record: dict[str, Any], retry_limit: int) -> tuple[dict[str, Any], str | None]:
    """(the fields a chain keeps, why the record is refused or None). A count is capped at RETRY_LIMIT; every other
    field must have its type and bounds (a record is written by its user, or by hand)."""
    retries = marker.bounded_count(record.get("max_retries", 0), retry_limit)
    if retries is None:
        return {}, "max_retries is not a non-negative count"
    retry_on = record.get("retry_on") or "node"
    if retry_on not in marker.RETRY_ON:
        return {}, f"retry_on must be one of {', '.join(marker.RETRY_ON)}"
    out: dict[str, Any] = {"max_retries": retries, "retry_on": retry_on}
    for key in ("user_argv", "argv", "added"):
        value = record.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or len(value) > MAX_ARGS or not all(
                isinstance(a, str) and len(a) <= MAX_ARG and "\0" not in a for a in value):
            return {}, f"{key} is not a list of at most {MAX_ARGS} strings"
        out[key] = value
    cwd = record.get("cwd")
    if cwd is not None and not (isinstance(cwd, str) and cwd.startswith("/") and "\0" not in cwd
                                and len(cwd) <= 4096):
        return {}, "cwd is not an absolute path"
    script = record.get("script")
    if script is not None and not isinstance(script, str):
        return {}, "script is not text"
    ckpt = record.get("checkpoint")
    if ckpt is not None:
        grace = ckpt.get("grace") if isinstance(ckpt, dict) else None
        if not isinstance(ckpt, dict) or not isinstance(ckpt.get("signal"), str) or len(ckpt["signal"]) > 16 or (
                grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)
                                       or not 0 <= grace <= MAX_GRACE_S)):
            return {}, f"checkpoint is not {{signal, grace in [0, {MAX_GRACE_S}] s}}"
    out.update(cwd=cwd, script=script, checkpoint=ckpt)
    return out, None
