"""Evidence before action: what was seen on each node of a stalled job, before anything is killed.

On the node (`slurmtools stalls probe --job JOB`, as root, read-only, time-bounded): the job's processes (found
by their cgroup `job_N`, or their environment where there is no cgroup, as in the lab) as a tree with each one's
state and wait channel, the count of its threads in uninterruptible sleep (D), the Python stacks of its ranks
where `py-spy` is installed (`py-spy dump --nonblocking`: never stops the process; each dump bounded in time
and size), and the kernel-log findings since the attempt began (the prolog's marker: the epilog's window).

On the stall service's host: `collect` runs `stalls.probe_command` for every node at once (ssh by default, like
the controller's deep check), each within `stalls.probe_timeout`; a node that does not answer is an error in the
evidence, never a reason to act or not. The process names and stacks are the job's own text: stored as
evidence, bounded, never near a drain."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.config import Config

MAX_PROCS = 256
MAX_TEXT = 16384
MAX_ANSWER = 1 << 20
_JOB_CGROUP = re.compile(r"/job_(\d+)(?:/|$)")


def _read(path: str, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def job_of(pid: int, node: str | None = None) -> str | None:
    """The Slurm job PID belongs to: its cgroup's `job_N`, else its environment's SLURM_JOB_ID (with NODE: only
    a process of that node, `SLURMD_NODENAME`; the lab's nodes share one host). Hooks' processes are not the job."""
    m = _JOB_CGROUP.search(_read(f"/proc/{pid}/cgroup"))
    if m and node is None:
        return m.group(1)
    raw = _read(f"/proc/{pid}/environ", 1 << 16).encode()
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    if node is not None and env.get(b"SLURMD_NODENAME", node.encode()) != node.encode():
        return None                 # another node's process (the lab's nodes share one host)
    if m:
        return m.group(1)
    if b"SLURM_JOB_ID" not in env or b"SLURM_SCRIPT_CONTEXT" in env:
        return None
    return env[b"SLURM_JOB_ID"].decode("ascii", "replace")


def job_pids(job_id: str, node: str | None = None) -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and job_of(int(entry), node) == str(job_id):
            yield int(entry)


def proc_info(pid: int) -> dict[str, Any] | None:
    """State, parent, wait channel, name, command line (bounded) and threads in D of one process."""
    stat = _read(f"/proc/{pid}/stat")
    close = stat.rfind(")")
    if close < 0:
        return None
    fields = stat[close + 2:].split()
    d_threads = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")[:1024]
    except OSError:
        tasks = []
    for tid in tasks:
        t = _read(f"/proc/{pid}/task/{tid}/stat")
        if t[t.rfind(")") + 2:t.rfind(")") + 3] == "D":
            d_threads += 1
    cmd = _read(f"/proc/{pid}/cmdline", 512).replace("\0", " ").strip()
    return {"pid": pid, "ppid": int(fields[1]) if len(fields) > 1 else 0, "state": fields[0] if fields else "?",
            "wchan": _read(f"/proc/{pid}/wchan", 128).strip() or None, "comm": stat[stat.find("(") + 1:close][:64],
            "cmdline": cmd[:256], "threads": len(tasks), "d_threads": d_threads}


def pyspy(pid: int, timeout: float) -> str | None:
    """`py-spy dump --nonblocking` of PID (bounded), or None where py-spy is not installed."""
    exe = shutil.which("py-spy")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "dump", "--nonblocking", "--pid", str(pid)], capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"(py-spy gave nothing within {timeout:g}s)"
    except OSError as exc:
        return f"(py-spy failed: {exc})"
    return (out.stdout or out.stderr)[:MAX_TEXT]


def kernel_findings(cfg: Config, job_id: str, node: str) -> list[dict[str, Any]]:
    """Node-level kernel findings since the attempt began (the prolog's marker), as the epilog would see them."""
    from slurmtools.diagnosis import kernel, sources
    from slurmtools.diagnosis.findings import NODE_TRUST

    ncfg = cfg.node_for(node)
    marker = sources.load_marker(ncfg.state_dir, int(job_id), node) if str(job_id).isdigit() else None
    if marker is None:      # the log's tail would hold other jobs' (and older) lines: not this attempt's evidence
        return [{"error": "no kernel-log marker for this job on this node (the prolog records it): not read"}]
    try:
        data, _ = sources.read_window(ncfg.kernel_log, marker, max_bytes=cfg.diagnosis.max_bytes)
    except sources.SourceError as exc:
        return [{"error": str(exc)}]
    found, _ = kernel.scan(data)
    return [{"kind": f.kind, "action": f.action, "severity": f.severity, "message": f.message[:300],
             "xid": f.xid, "count": f.count} for f in found if f.trust in NODE_TRUST][:50]


def probe(cfg: Config, job_id: str, node: str, *, stacks: bool = True) -> dict[str, Any]:
    """Everything this node can say about JOB_ID now (run on the node, as root)."""
    t0 = time.monotonic()
    budget = cfg.stalls.probe_timeout * 0.8
    procs = [p for p in (proc_info(pid) for pid in sorted(job_pids(job_id, node))[:MAX_PROCS]) if p]
    out: dict[str, Any] = {"node": node, "job_id": str(job_id), "time": time.time(), "processes": procs,
                           "d_state": sum(1 for p in procs if p["state"] == "D"),
                           "d_threads": sum(p["d_threads"] for p in procs), "stacks": {}}
    out["kernel"] = kernel_findings(cfg, str(job_id), node)
    if stacks:
        per = cfg.stalls.pyspy_timeout
        for p in procs:
            if not p["comm"].startswith("python") or len(out["stacks"]) >= 8:
                continue
            left = budget - (time.monotonic() - t0)
            if left <= 1:
                out["stacks_cut"] = "time budget spent"
                break
            dump = pyspy(p["pid"], min(per, left))
            if dump is None:
                out["stacks_note"] = "py-spy is not installed"
                break
            out["stacks"][str(p["pid"])] = dump
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def _probe_remote(cfg: Config, job_id: int, node: str) -> dict[str, Any]:
    argv = [str(a).replace("{node}", node).replace("{job}", str(job_id)) for a in cfg.stalls.probe_command]
    timeout = cfg.stalls.probe_timeout
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"node": node, "error": f"no answer within {timeout:g}s"}
    except OSError as exc:
        return {"node": node, "error": f"cannot run {argv[0]}: {exc}"}
    try:
        data = json.loads(res.stdout[:MAX_ANSWER])
    except ValueError:
        return {"node": node, "error": f"exit {res.returncode}: {(res.stderr or res.stdout).strip()[-300:]}"}
    return data if isinstance(data, dict) else {"node": node, "error": "not a JSON object"}


def collect(cfg: Config, job_id: int, nodes: list[str]) -> dict[str, dict[str, Any]]:
    """Every node's probe, run at once; per node its answer or its error."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
        answers = list(pool.map(lambda n: _probe_remote(cfg, job_id, n), nodes))
    return {n: a for n, a in zip(nodes, answers, strict=True)}


def summary(per_node: dict[str, dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """Per node: D-state threads of the job, and node-level kernel findings (for blame)."""
    dstate = {n: float(a.get("d_threads") or a.get("d_state") or 0) for n, a in per_node.items() if "error" not in a}
    kern = {n: float(len([k for k in a.get("kernel") or [] if "error" not in k]))
            for n, a in per_node.items() if "error" not in a}
    return dstate, kern
