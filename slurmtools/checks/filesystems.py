"""Filesystem check: required mounts present (procfs mounts table) and answering; writable paths accept a
write. Every live probe runs in a forked child with a hard timeout: a hung NFS/Lustre mount leaves a
child stuck in the kernel, and the check fails in `probe_timeout` seconds instead of hanging the prolog."""

from __future__ import annotations

import os
import signal
import time

from slurmtools.checks import Context, Result, fail, ok
from slurmtools.checks import system as sysmod

NAME = "filesystems"


def mount_points(fs: sysmod.Fs) -> dict[str, str]:
    """Mount point -> filesystem type, from the mounts table (octal escapes decoded)."""
    out = {}
    for line in (fs.read("proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            point = parts[1].encode().decode("unicode_escape")
            out[point] = parts[2]
    return out


def _child(path: str, kind: str) -> int:
    """Runs in the child: 0 on success (never returns on a hung mount)."""
    if kind == "write":
        probe = os.path.join(path, f".slurmtools-probe-{os.getpid()}")
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"slurmtools\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
        return 0
    st = os.stat(path)
    if os.path.isdir(path):
        os.listdir(path)
        os.statvfs(path)
    elif st.st_size or not os.path.isfile(path):
        with open(path, "rb") as fh:   # a FIFO or a device answers a read (or hangs: that is the test)
            fh.read(1)
    return 0


def probe(targets: list[tuple[str, str]], timeout: float) -> dict[tuple[str, str], str]:
    """Probe (path, "read"|"write") targets in parallel children. Returns "" for success, else why not."""
    children: dict[int, tuple[tuple[str, str], int]] = {}
    results: dict[tuple[str, str], str] = {}
    for target in targets:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its exit status is what is tested)
            os.close(r)
            try:
                code = _child(*target)
            except OSError as exc:
                os.write(w, (exc.strerror or str(exc)).encode()[:300])
                code = 1
            except BaseException:  # noqa: BLE001 - never let the child run on into the parent's code
                code = 2
            os._exit(code)
        os.close(w)
        children[pid] = (target, r)
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while children:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                target, r = children.pop(pid)
                why = os.read(r, 400).decode(errors="replace")
                os.close(r)
                code = os.waitstatus_to_exitcode(status)
                results[target] = "" if code == 0 else (why or f"probe exited {code}")
        if not children or time.monotonic() >= deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    for pid, (target, r) in children.items():   # still hanging: the mount does not answer
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)        # a child in D state dies when the mount comes back
        except OSError:
            pass
        results[target] = f"no answer within {timeout:g}s (hung mount?)"
    return results


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    hw = ctx.hardware
    mounts = [str(m).rstrip("/") or "/" for m in hw.mounts]
    writable = [str(p) for p in hw.writable]
    if not mounts and not writable:
        return [ok(NAME, "no filesystems required")]
    table = mount_points(system.fs)
    results: list[Result] = []
    present = []
    for point in mounts:
        if point not in table:
            results.append(fail(NAME, f"{point} is not mounted", mount=point))
        else:
            present.append(point)
    targets = [(p, "write") for p in writable]
    if not system.replay:   # a replayed snapshot cannot answer a live probe of its mounts
        targets += [(p, "read") for p in present]
    outcome = probe(targets, ctx.settings.probe_timeout) if targets else {}
    for (path, kind), why in sorted(outcome.items()):
        if why:
            verb = "not writable" if kind == "write" else "not answering"
            results.append(fail(NAME, f"{path} {verb}: {why}", path=path, probe=kind))
    if not results:
        results.append(ok(NAME, f"{len(present)} mounts present, {len(targets)} probes answered",
                          mounts={p: table[p] for p in present}))
    return results
