"""Small files replaced whole (caches, state, snapshots): readers see the old file or the new one,
never half of one. Stdlib only: hooks use it."""

from __future__ import annotations

import os


def write_atomic(path: str, text: str, mode: int = 0o644, *, durable: bool = False) -> None:
    """Write TEXT to a temporary sibling (never through a symlink: root writes these), then rename it
    over PATH. Without DURABLE no fsync: caches or state that a crash may lose; with it the file and
    its directory are fsynced, so a file that was renamed into place survives a crash. Raises OSError."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
