"""Small files replaced whole (caches, state, snapshots): readers see the old file or the new one,
never half of one. Stdlib only: hooks use it."""

from __future__ import annotations

import os


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Write TEXT to a temporary sibling (never through a symlink: root writes these), then rename it
    over PATH. No fsync: these files are caches or state that a crash may lose. Raises OSError."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
