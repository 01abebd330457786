"""Host check: memory available, free space on configured paths, processes stuck in D state, required
daemons. Reads procfs through the system's file tree (one pass over /proc/PID/stat, ~1 ms per 100
processes); disk space with statvfs on the live paths."""

from __future__ import annotations

import os

from slurmtools.checks import Context, Result, fail, ok, warn
from slurmtools.checks import system as sysmod

NAME = "host"


def meminfo(fs: sysmod.Fs) -> dict[str, int]:
    out = {}
    for line in (fs.read("proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0])  # kB
    return out


def processes(fs: sysmod.Fs) -> list[tuple[int, str, str]]:
    """(pid, comm, state) for every process."""
    out = []
    for pid in fs.listdir("proc"):
        if not pid.isdigit():
            continue
        stat = fs.read(f"proc/{pid}/stat")
        if not stat or ")" not in stat:
            continue   # exited meanwhile
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        state = stat[stat.rfind(")") + 2:stat.rfind(")") + 3]
        out.append((int(pid), comm, state))
    return out


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    hw = ctx.hardware
    results: list[Result] = []
    mem = meminfo(system.fs)
    want_mib = hw.min_mem_available_mib
    if want_mib and "MemAvailable" in mem and mem["MemAvailable"] // 1024 < want_mib:
        results.append(fail(NAME, f"{mem['MemAvailable'] // 1024} MiB memory available, need {want_mib}",
                            mem_available_mib=mem["MemAvailable"] // 1024))
    for path in hw.disk_paths:
        try:
            st = os.statvfs(path)
        except OSError as exc:
            results.append(fail(NAME, f"{path}: {exc.strerror}", path=path))
            continue
        free = st.f_bavail * st.f_frsize >> 20
        if free < hw.min_disk_free_mib:
            results.append(fail(NAME, f"{path}: {free} MiB free, need {hw.min_disk_free_mib}", path=path,
                                free_mib=free))
    procs = processes(system.fs)
    stuck = [(pid, comm) for pid, comm, state in procs if state == "D"]
    if stuck:
        limit = hw.dstate_fail_count
        maker = fail if limit and len(stuck) >= limit else warn
        shown = ", ".join(f"{comm}[{pid}]" for pid, comm in stuck[:5])
        results.append(maker(NAME, f"{len(stuck)} processes in D state: {shown}", dstate=stuck[:32]))
    if hw.daemons:
        running = {comm for _, comm, _ in procs}
        # comm is cut to 15 characters by the kernel: compare the same way.
        missing = [d for d in hw.daemons if d[:15] not in running]
        if missing:
            results.append(fail(NAME, f"required daemons not running: {', '.join(missing)}", missing=missing))
    if not any(r.status != "ok" for r in results):
        results.append(ok(NAME, "memory, disk, processes fine",
                          mem_available_mib=mem.get("MemAvailable", 0) // 1024, processes=len(procs)))
    boot = sysmod.boot_id(system)
    for r in results:           # return to service reads it: was the node rebooted since its drain?
        r.evidence["boot_id"] = boot
    return results
