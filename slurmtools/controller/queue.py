"""The controller's inbox: EpilogSlurmctld drops one small file per ended job attempt; the controller
removes it only once its decision for that attempt is final. A controller that is down, slow or
restarted loses nothing: the files wait.

Stdlib only: `enqueue` runs inside slurmctld's EpilogSlurmctld, which must return within a second.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from slurmtools.fsutil import check_trusted, read_safely, trusted_dir, write_atomic
from slurmtools.jobstate import is_sluid

VERSION = 1


class QueueError(ValueError):
    """An EpilogSlurmctld environment or a queue file we cannot use."""


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = (env.get(name) or "").strip()
        if value.isdigit():
            return int(value)
    return None


def item_from_env(env: Mapping[str, str], cluster: str) -> dict[str, Any]:
    """What EpilogSlurmctld tells us about the attempt that just ended (Slurm 22.05 gives no job state)."""
    job_id = _int(env, "SLURM_JOB_ID", "SLURM_JOBID")
    if job_id is None:
        raise QueueError("no SLURM_JOB_ID in the environment: not run by EpilogSlurmctld?")
    return {
        "version": VERSION, "cluster": cluster, "job_id": job_id,
        "restart_count": _int(env, "SLURM_JOB_RESTART_COUNT") or 0,
        "exit_raw": _int(env, "SLURM_JOB_EXIT_CODE"),
        "exit2": env.get("SLURM_JOB_EXIT_CODE2") or None,
        "nodes": env.get("SLURM_JOB_NODELIST") or "",
        "comment": env.get("SLURM_JOB_COMMENT") or "",
        "user": env.get("SLURM_JOB_USER") or "",
        "name": env.get("SLURM_JOB_NAME") or "",
        "partition": env.get("SLURM_JOB_PARTITION") or "",
        "array_job_id": _int(env, "SLURM_ARRAY_JOB_ID"),
        "enqueued": time.time(),
        **_sluid(env),
    }


def _sluid(env: Mapping[str, str]) -> dict[str, str]:
    """The run's SLURM_JOB_SLUID (25.11+) where it is one: the controller acts only on that run (controller/act.py)."""
    value = (env.get("SLURM_JOB_SLUID") or "").strip()
    return {"sluid": value} if is_sluid(value) else {}


def file_name(item: Mapping[str, Any]) -> str:
    return f"{int(item['job_id'])}.{int(item['restart_count'])}.json"


def owners(queue_user: str = "") -> set[int]:
    """Whose queue files are believed: root, this process's user, and the configured SlurmUser."""
    out = {0, os.geteuid()}
    if queue_user:
        import pwd

        try:
            out.add(pwd.getpwnam(queue_user).pw_uid)
        except KeyError:
            raise QueueError(f"controller.queue_user {queue_user!r} is not a user here") from None
    return out


def enqueue(queue_dir: str, item: Mapping[str, Any]) -> str:
    """Durably write ITEM (fsync + rename); a second enqueue of the same attempt replaces the first.
    Refuses (UntrustedPath) a queue directory that another user could write."""
    trusted_dir(queue_dir, 0o755)
    path = os.path.join(queue_dir, file_name(item))
    write_atomic(path, json.dumps(dict(item), sort_keys=True) + "\n", 0o644, durable=True)
    return path


def pending(queue_dir: str, trusted: set[int] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Queued attempts, oldest first. A file we cannot read, or one written by a user outside TRUSTED (default:
    root and us), is moved to `bad/` (kept for an admin). Raises UntrustedPath for a directory another user
    could write: its files could be anyone's."""

    trusted = trusted if trusted is not None else owners()
    try:
        check_trusted(queue_dir, owners=trusted, what="directory")
        names = sorted(n for n in os.listdir(queue_dir) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        path = os.path.join(queue_dir, name)
        try:
            data, _ = read_safely(path, 1 << 20, owners=trusted, head=True)
            item = json.loads(data)
            if not isinstance(item, dict) or not isinstance(item.get("job_id"), int):
                raise QueueError("not a queue item")
            item.setdefault("restart_count", 0)
            item.setdefault("enqueued", os.stat(path).st_mtime)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            _quarantine(queue_dir, name, exc)
            continue
        out.append((path, item))
    out.sort(key=lambda pi: float(pi[1]["enqueued"]))
    return out


def _quarantine(queue_dir: str, name: str, exc: Exception) -> None:
    import logging

    bad = os.path.join(queue_dir, "bad")
    try:
        trusted_dir(bad, 0o750)
        os.replace(os.path.join(queue_dir, name), os.path.join(bad, name))
    except OSError:
        pass
    logging.getLogger(__name__).error("controller queue: %s is unreadable (%s); moved to %s", name, exc, bad)


def done(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
