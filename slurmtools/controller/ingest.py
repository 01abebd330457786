"""Submission records: `slurmtools sbatch` drops one file per job; each becomes (or updates) a retry chain
with the stored command line, script copy and environment. A record is believed only from the job's user."""

from __future__ import annotations

import json
import logging
import os
import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import queue
from slurmtools.controller.base import ControllerBase, utcnow
from slurmtools.ledger import models
from slurmtools.ledger.chains import chain_key
from slurmtools.slurm import SlurmError, userenv

log = logging.getLogger(__name__)


class Ingesting(ControllerBase):
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
                              created=utcnow(), status="active", retries_used=0)
                    s.add(chain)
                chain.max_retries = int(record.get("max_retries") or 0)
                chain.retry_on = str(record.get("retry_on") or "node")
                env, refused = userenv.clean(record.get("env"))
                if refused:
                    log.warning("controller: submission %s: environment left out: %s", name,
                                "; ".join(refused)[:2000])
                chain.details = {"source": "slurmtools sbatch",
                                 **{k: record.get(k) for k in ("user_argv", "argv", "added", "cwd", "script",
                                                               "checkpoint")},
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
            rows = self.slurm.job_history(job_ids=[job_id])
        except SlurmError:
            return None
        users = {r.user for r in rows if r.job_id_raw == job_id and r.user}
        return users.pop() if len(users) == 1 else None
