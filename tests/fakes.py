"""Fakes at the Slurm interface for unit tests of what acts on Slurm (the controller, exclusions, safety), and a
stand-in HTTP API for what reads Prometheus. The integration tests run the same code on the real lab."""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from slurmtools.slurm import JobInfo, NodeInfo, SlurmCommandError, expand
from slurmtools.slurm.types import ExitStatus

KILLED = ExitStatus(0, 9)


class FakeSlurm:
    """Slurm 22.05's behaviour for what the controller does: a finished job requeued held gets
    restart+1 and PENDING/JobHeldUser; update sets ExcNodeList; release clears the hold."""

    name = "fake"

    def __init__(self, nodes: int = 4) -> None:
        self.node_list = {f"n{i}": NodeInfo(f"n{i}", "idle") for i in range(1, nodes + 1)}
        self.jobs_by_id: dict[int, JobInfo] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.fail_next: dict[str, int] = {}
        self.ignore_exclude = False
        self.history: list[Any] = []

    def _maybe_fail(self, what: str) -> None:
        if self.fail_next.get(what, 0) > 0:
            self.fail_next[what] -= 1
            raise SlurmCommandError(["scontrol", what], 1, f"{what} failed (injected)")

    def add_job(self, job_id: int, state: str = "FAILED", nodes: tuple[str, ...] = ("n1", "n2"),
                comment: str = "", exit_: ExitStatus = KILLED) -> None:
        self.jobs_by_id[job_id] = JobInfo(job_id, state=state, nodes=nodes, comment=comment, exit=exit_,
                                          requeue=True, end_time=datetime.now(UTC))

    def nodes(self, names: list[str] | None = None) -> list[NodeInfo]:
        return [n for n in self.node_list.values() if names is None or n.name in names]

    def jobs(self, **_: Any) -> list[JobInfo]:
        return list(self.jobs_by_id.values())

    def job(self, job_id: int) -> JobInfo | None:
        return self.jobs_by_id.get(job_id)

    def drain(self, nodes: list[str], reason: str) -> None:
        self.calls.append(("drain", tuple(nodes), reason))
        for n in nodes:
            self.node_list[n] = dataclasses.replace(self.node_list[n], flags=("DRAIN",), reason=reason)

    def resume(self, nodes: list[str]) -> None:
        self.calls.append(("resume", tuple(nodes)))
        for n in nodes:
            self.node_list[n] = dataclasses.replace(self.node_list[n], flags=(), reason="")

    def requeue(self, job_id: int, *, hold: bool = False) -> None:
        self._maybe_fail("requeue")
        self.calls.append(("requeue", job_id, hold))
        j = self.jobs_by_id[job_id]
        self.jobs_by_id[job_id] = dataclasses.replace(j, state="PENDING", restart_count=j.restart_count + 1,
                                                      state_reason="JobHeldUser" if hold else "BeginTime")

    def update_job(self, job_id: int, *, excluded_nodes: list[str] | None = None, start_time: str | None = None,
                   comment: str | None = None) -> None:
        self._maybe_fail("update")
        self.calls.append(("update", job_id, tuple(excluded_nodes or ()), start_time))
        if excluded_nodes and not self.ignore_exclude:
            self.jobs_by_id[job_id] = dataclasses.replace(self.jobs_by_id[job_id],
                                                          excluded_nodes=tuple(excluded_nodes))

    def release(self, job_id: int) -> None:
        self.calls.append(("release", job_id))
        self.jobs_by_id[job_id] = dataclasses.replace(self.jobs_by_id[job_id], state_reason="None")

    def submit(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
               user: str | None = None) -> int:
        """sbatch: reads --exclude/--comment/--requeue and the script file (it must exist, as for sbatch)."""
        self._maybe_fail("submit")
        job_id = max([1000, *self.jobs_by_id]) + 1
        opts = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in argv if a.startswith("--") and "=" in a}
        script = next((a for a in argv if os.path.isfile(a)), None)
        body = open(script).read() if script else None
        self.calls.append(("submit", job_id, tuple(argv), dict(env or {}), cwd, user, body))
        self.jobs_by_id[job_id] = JobInfo(job_id, state="PENDING", user=user or "", comment=opts.get("--comment", ""),
                                          excluded_nodes=tuple(expand(opts["--exclude"])) if "--exclude" in opts
                                          else (), requeue="--requeue" in argv, state_reason="None")
        return job_id

    def job_history(self, *, since: Any = None, job_ids: list[int] | None = None) -> list[Any]:
        """sacct: what a test put in `history` (JobRecord-like: job_id_raw, user)."""
        return [r for r in self.history if job_ids is None or r.job_id_raw in job_ids]

    def signal(self, job_id: int, sig: str, *, batch_only: bool = True) -> None:
        self.calls.append(("signal", job_id, sig, batch_only))

    def start(self, job_id: int, nodes: tuple[str, ...]) -> None:
        self.jobs_by_id[job_id] = dataclasses.replace(self.jobs_by_id[job_id], state="RUNNING", nodes=nodes,
                                                      start_time=datetime.now(UTC))

    def actions(self) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] in {"requeue", "update", "release"}]


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A stand-in HTTP API (Prometheus's, in the detect and stall tests): subclasses answer `do_GET` with
    `self.reply(code, body)`; `query()` is the request's query string as a dict."""

    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).items()}

    def reply(self, code: int, body: object) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """HANDLER on a free loopback port, in a thread, for the block: yields its base URL."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
