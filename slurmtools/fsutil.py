"""Small files replaced whole (caches, state, snapshots): readers see the old file or the new one,
never half of one. Stdlib only: hooks use it."""

from __future__ import annotations

import os

#: Where root's processes (the hooks) keep caches: the parsed configuration (config.py) and the compiled prefilter
#: (diagnosis/prefilter.py); SLURMTOOLS_CACHE_DIR overrides it for both.
ROOT_CACHE_DIR = "/run/slurmtools"


def private(st: os.stat_result) -> bool:
    """A file or directory this process may trust: owned by its user, writable by no one else."""
    return _why_untrusted(st, {os.geteuid()}, sticky_ok=False) is None


def write_atomic(path: str, text: str | bytes, mode: int = 0o644, *, durable: bool = False) -> None:
    """Write TEXT (UTF-8 if a str) to a temporary sibling (never through a symlink: root writes these), then rename it
    over PATH. Without DURABLE no fsync: caches or state that a crash may lose; with it the file and
    its directory are fsynced, so a file that was renamed into place survives a crash. Raises OSError."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode() if isinstance(text, str) else text)
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


class UntrustedPath(OSError):
    """A file or directory root would act on, but that someone else could have written: refused, never
    repaired silently. The message names the path and what is wrong with it."""


def _why_untrusted(st: os.stat_result, owners: frozenset[int] | set[int], sticky_ok: bool) -> str | None:
    import stat

    if st.st_uid not in owners:
        return f"owned by uid {st.st_uid}"
    if st.st_mode & 0o022 and not (sticky_ok and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        who = {0o022: "group and other", 0o020: "group", 0o002: "other"}[st.st_mode & 0o022]
        return f"writable by {who} (mode {st.st_mode & 0o7777:04o})"
    return None


def check_trusted(path: str, *, owners: frozenset[int] | set[int] | None = None, what: str = "file",
                  parents: bool = True) -> None:
    """Refuse PATH unless it and the directories above it are as sshd wants its files (StrictModes): PATH and
    its directory owned by root (or the effective user) and writable by nobody else; the directories further up
    owned by root and not writable by others, or sticky (/tmp, /var/tmp). PATH itself must not be a symlink.
    Raises UntrustedPath."""
    import stat

    trusted = set(owners) if owners is not None else {0, os.geteuid()}
    full = os.path.abspath(path)
    st = os.lstat(full)
    if stat.S_ISLNK(st.st_mode):
        raise UntrustedPath(f"{path}: is a symbolic link; refused")
    why = _why_untrusted(st, trusted, sticky_ok=False)
    if why:
        raise UntrustedPath(f"{path}: {what} {why}; refused (must be owned by root and writable by root only)")
    if not parents:
        return
    first = True
    d = os.path.dirname(full)
    while True:
        st = os.stat(d)
        why = _why_untrusted(st, trusted if first else {0, *trusted}, sticky_ok=not first)
        if why:
            raise UntrustedPath(f"{path}: its directory {d} is {why}; refused")
        first = False
        if d == os.path.dirname(d):
            return
        d = os.path.dirname(d)


def trusted_dir(path: str, mode: int = 0o750, *, owners: frozenset[int] | set[int] | None = None) -> None:
    """Make directory PATH (mode MODE) if it is missing, then refuse it unless trusted (see `check_trusted`):
    a spool or queue that another user could write, or that is a symlink, is never used by root."""
    try:
        os.makedirs(path, mode=mode, exist_ok=True)
    except FileExistsError:
        pass
    check_trusted(path, owners=owners, what="directory")


def read_safely(path: str, max_bytes: int, *, owners: frozenset[int] | set[int] | tuple[int, ...] | None = None,
                start: int = 0, whole: bool = False, head: bool = False) -> tuple[bytes, os.stat_result]:
    """The bytes of PATH as root may read a file that a user could have planted or replaced: opened without
    following a symlink and without blocking (a FIFO), refused unless a regular file owned by one of OWNERS (any
    owner when None). At most the newest MAX_BYTES from byte START on (with HEAD the oldest); with WHOLE a larger
    file is refused instead. Returns the bytes and the file's stat. Raises OSError when it cannot be opened (ELOOP
    for a link), UntrustedPath when refused: the message says why."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UntrustedPath(f"{path}: not a regular file; refused")
    with os.fdopen(fd, "rb") as fh:
        if owners is not None and st.st_uid not in owners:
            raise UntrustedPath(f"{path}: owned by uid {st.st_uid}; refused")
        if whole and st.st_size > max_bytes:
            raise UntrustedPath(f"{path}: larger than {max_bytes} bytes; refused")
        begin = max(start, 0 if head else st.st_size - max_bytes, 0)
        if begin:
            fh.seek(begin)
        data = fh.read(max(0, min(st.st_size - begin, max_bytes)))
    return data, st
