"""Integration tests run on the real lab cluster. If the lab cannot start, they fail: never skip."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from slurmtools import config
from slurmtools.lab import Lab
from slurmtools.slurm import CliSlurm, JobInfo

T = TypeVar("T")


def end_exclusions(nodes: list[str]) -> None:
    """Ship what the hooks spooled, then end the nodes' exclusions (and resume those we drained)."""
    # Not --quiet: that form returns at once when a hook's background flush holds the spool's lock, and an
    # exclusion still in the spool then opens after this cleanup; `exclude sync` would drain its node again.
    subprocess.run(["slurmtools", "ledger", "flush"], capture_output=True, check=False)
    subprocess.run(["slurmtools", "exclude", "remove", ",".join(nodes), "--reason", "test cleanup"],
                   capture_output=True, check=False)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    the_lab = Lab(say=lambda msg: print(f"lab: {msg}"))
    the_lab.up()  # idempotent; a LabError here fails every integration test
    from slurmtools.lab.cluster import base_dir

    from ..conftest import RUN

    RUN.update({"release": the_lab.release, "base": str(base_dir()), "version": subprocess.run(
        ["sinfo", "--version"], capture_output=True, text=True, env={**os.environ, **the_lab.env()}).stdout.strip()})
    saved = dict(os.environ)
    os.environ.update(the_lab.env())
    config.reset()
    # The lab's state outlives a run: start from no node drained by slurmtools.
    slurm = CliSlurm(timeout=30)
    end_exclusions([n.name for n in slurm.nodes()])
    leftover = [n.name for n in slurm.nodes() if n.drain and n.reason.startswith("slurmtools:")]
    if leftover:
        slurm.resume(leftover)
    yield the_lab
    os.environ.clear()
    os.environ.update(saved)
    config.reset()


@pytest.fixture(autouse=True)
def _isolated_config(lab: Lab) -> None:
    """Overrides the unit tests' isolation: here the lab's own configuration is the point."""
    config.reset()


@pytest.fixture(autouse=True)
def _healthy_hardware(lab: Lab) -> Iterator[None]:
    """A fault a test injects changes the node's hardware (lab/hardware.py) until a reboot: every test starts on
    healthy hardware (in the same boot), so one test's broken GPU never meets the next test's job."""
    yield
    from slurmtools.lab import hardware
    from slurmtools.lab.cluster import snapshot_dir

    src = snapshot_dir()
    healthy = hardware.load(src / "healthy-8xh100.json") if src else None
    if healthy is None:
        return
    for node in lab.nodes:
        now = hardware.load(lab.snapshot(node.name))
        if now is None or hardware.with_boot_id(now, "x") != hardware.with_boot_id(healthy, "x"):
            lab.set_snapshot(node.name, "healthy-8xh100")


@pytest.fixture
def slurm(lab: Lab) -> CliSlurm:
    return CliSlurm(timeout=30)


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 60.0, every: float = 0.3) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_job(slurm: CliSlurm, job_id: int, pred: Callable[[JobInfo], bool], what: str,
             timeout: float = 60.0) -> JobInfo:
    seen: list[str] = []

    def probe() -> JobInfo | None:
        job = slurm.job(job_id)
        if job is not None:
            seen[:] = [f"{job.state} ({job.state_reason or 'no reason'}) on {','.join(job.nodes) or '-'}"]
        return job if job is not None and pred(job) else None

    try:
        return wait_until(f"job {job_id} {what}", probe, timeout)
    except AssertionError as e:   # say what the job was doing, and what the cluster was doing
        nodes = "; ".join(f"{n.name} {'+'.join((n.state, *n.flags))} {n.reason}".strip() for n in slurm.nodes())
        queue = subprocess.run(["squeue", "-h", "-o", "%i %T %r %N"], capture_output=True, text=True).stdout
        raise AssertionError(f"{e}; last seen {seen[0] if seen else 'nothing'}; nodes: {nodes}; "
                             f"queue: {' | '.join(queue.splitlines())}") from None


def wait_idle(slurm: CliSlurm, timeout: float = 120.0) -> None:
    """Until no job is left and every node is idle: for tests that need the whole cluster (earlier tests'
    cancelled jobs may still be running their epilogs)."""
    def idle() -> bool:
        queue = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
        return not queue and all(not n.drain and n.state == "idle" and not n.flags for n in slurm.nodes())

    try:
        wait_until("an idle cluster", idle, timeout, every=0.5)
    except AssertionError as e:
        nodes = "; ".join(f"{n.name} {'+'.join((n.state, *n.flags))} {n.reason}".strip() for n in slurm.nodes())
        queue = subprocess.run(["squeue", "-h", "-o", "%i %T %r %N"], capture_output=True, text=True).stdout
        raise AssertionError(f"{e}; nodes: {nodes}; queue: {' | '.join(queue.splitlines())}") from None


@pytest.fixture
def jobs(slurm: CliSlurm) -> Iterator[list[int]]:
    """Job ids a test submits; cancelled afterwards."""
    submitted: list[int] = []
    yield submitted
    for job_id in submitted:
        subprocess.run(["scancel", str(job_id)], capture_output=True)


@pytest.fixture
def resume_after(slurm: CliSlurm) -> Iterator[list[str]]:
    """Nodes a test drains; resumed afterwards so tests stay independent."""
    nodes: list[str] = []
    yield nodes
    if nodes:
        end_exclusions(nodes)   # drains now open exclusions: end them, or `exclude sync` would drain again
    still = [n.name for n in slurm.nodes(nodes) if n.drain] if nodes else []
    if still:  # resuming a node that is not drained is an error in Slurm
        slurm.resume(still)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


@pytest.fixture
def controller(lab: Lab) -> Iterator[subprocess.Popen[str]]:
    """`slurmtools controller run` for the length of one test (no recovery: the test's drains must stay)."""
    log = lab.root / "log" / "controller.log"
    with log.open("a") as out:
        proc = subprocess.Popen(["slurmtools", "-v", "controller", "run", "--interval", "0.5", "--no-recovery"],
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    yield proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    assert proc.returncode in (0, -signal.SIGTERM), f"controller exited {proc.returncode}; see {log}"


@pytest.fixture(scope="session")
def matrix(lab: Lab) -> Iterator[list[dict[str, Any]]]:
    """The fault matrix's rows, from every module that has some (tests/integration/test_fault_matrix*.py and
    the loop's own failures elsewhere): written to <lab state>/fault-matrix.json at the end of the session, for
    `python bench/reliability_doc.py` (scripts/test.sh) to write docs/reliability.md from."""
    rows: list[dict[str, Any]] = []
    yield rows
    if rows:
        slurm = subprocess.run(["sinfo", "--version"], capture_output=True, text=True).stdout.strip()
        (lab.root / "fault-matrix.json").write_text(json.dumps(
            {"run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "slurm": slurm, "rows": rows}, indent=1))


@contextmanager
def matrix_row(matrix: list[dict[str, Any]], name: str, *, node: str, job: str, why: str = "",
               group: str = "loop") -> Iterator[dict[str, Any]]:
    """One row of the matrix whose expectations are told in words (NODE, JOB): it passes when its block does;
    the block adds what happened to the record it is given."""
    record: dict[str, Any] = {"name": name, "group": group, "expect_node": node, "expect_job": job, "why": why,
                              "result": "failed"}
    matrix.append(record)
    yield record
    record["result"] = "passed"
