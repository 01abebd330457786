"""One contract, every backend: each method of the `Slurm` interface (slurmtools/slurm/base.py) on the real lab.

The CLI backend runs on every lab release; the pyslurm backend where the lab has pyslurm (a release built from
source, lab/source.py: 25.11), inside the lab's Debian root (pyslurm links that root's libslurmfull), through
`python -m slurmtools.slurm.call`. Both answer through the same `call()` (a result as JSON, or an error's class
names and one line), so a test asserts the same thing of both, and the two are compared on the same cluster.
Where pyslurm has no equivalent, the backend uses the CLI for that call (pyslurm_backend.CLI_FALLBACKS); a test
checks that list, so a silent difference cannot creep in."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from slurmtools.lab import Lab, chroot, source
from slurmtools.lab.cluster import default_release
from slurmtools.slurm import CliSlurm
from slurmtools.slurm.call import call

from .conftest import wait_until

HOSTILE = 'slurmtools: test "q" \'s\' $(touch /tmp/slurmtools-pwned) ; `id` & <b>ü</b> state=down reason=x'
NO_JOB = 987654


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["cli", *(["pyslurm"] if source.has_pyslurm(default_release()) else [])],
                             indirect=True)


class Backend:
    """A backend by name: `b.x(**kw)` calls method x and returns its result; an error comes back as Failed."""

    def __init__(self, name: str, lab: Lab) -> None:
        self.name = name
        self.lab = lab

    def raw(self, method: str, **kwargs: Any) -> dict[str, Any]:
        if self.name == "cli":
            return json.loads(json.dumps(call(CliSlurm(timeout=30), method, kwargs), default=str))
        assert self.lab.fs is not None
        argv = chroot.inside(self.lab.fs, [f"{chroot.VENV}/bin/python", "-P", "-m", "slurmtools.slurm.call", "pyslurm",
                                           method, json.dumps(kwargs, default=str)], cwd="/tmp")
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "SLURM_CONF": str(self.lab.slurm_conf)})
        assert proc.returncode == 0 and proc.stdout.strip(), f"{method}: rc {proc.returncode}: {proc.stderr[-800:]}"
        return json.loads(proc.stdout.splitlines()[-1])

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def run(**kwargs: Any) -> Any:
            got = self.raw(method, **kwargs)
            if "error" in got:
                raise Failed(got)
            return got["ok"]
        return run


class Failed(Exception):
    def __init__(self, got: dict[str, Any]) -> None:
        self.kind = got["error"]
        self.bases = got.get("bases", [])
        self.message = got.get("message", "")
        super().__init__(f"{self.kind}: {self.message}")


@pytest.fixture
def backend(request: pytest.FixtureRequest, lab: Lab) -> Backend:
    return Backend(request.param, lab)


def _submit(b: Backend, workdir: Path, *extra: str, wrap: str = "sleep 300") -> int:
    job_id = b.submit(argv=["-o", "/dev/null", "-D", str(workdir), "-J", "conformance", *extra, "--wrap", wrap])
    assert isinstance(job_id, int) and job_id > 0
    return int(job_id)


def _job(b: Backend, job_id: int, pred: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        job = b.job(job_id=job_id)
        return job if job is not None and pred(job) else None
    return wait_until(f"job {job_id} {what}", probe, 90.0)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------------------ reads
def test_version_is_the_labs_release(backend: Backend, lab: Lab) -> None:
    assert str(backend.version()).startswith(lab.release + ".")


def test_nodes_all_and_by_name(backend: Backend) -> None:
    nodes = backend.nodes()
    assert [n["name"] for n in nodes] == ["n1", "n2", "n3", "n4"]
    for n in nodes:
        assert n["state"] in {"idle", "mixed", "allocated", "completing"}, n
        assert "gpu" in n["partitions"], n
    assert [n["name"] for n in backend.nodes(names=["n2"])] == ["n2"]
    assert backend.nodes(names=["no-such-node"]) == []


def test_unknown_job_is_none(backend: Backend) -> None:
    assert backend.job(job_id=NO_JOB) is None
    assert all(j["job_id"] != NO_JOB for j in backend.jobs())


# ----------------------------------------------------------------------------------------------------- drains
def test_drain_hostile_reason_round_trips_then_resume(backend: Backend, resume_after: list[str]) -> None:
    resume_after.append("n4")
    backend.drain(nodes=["n4"], reason=HOSTILE)
    n4 = backend.nodes(names=["n4"])[0]
    assert n4["reason"] == HOSTILE and "DRAIN" in n4["flags"] and n4["state"] != "down", n4
    assert n4["reason_user"] == "root"
    assert not Path("/tmp/slurmtools-pwned").exists()
    backend.resume(nodes=["n4"])
    n4 = backend.nodes(names=["n4"])[0]
    assert "DRAIN" not in n4["flags"] and n4["reason"] == "", n4


def test_drain_without_reason_is_refused(backend: Backend) -> None:
    with pytest.raises(Failed) as err:
        backend.drain(nodes=["n4"], reason="  ")
    assert err.value.kind == "ValueError"
    assert "DRAIN" not in backend.nodes(names=["n4"])[0]["flags"]


def test_unknown_node_is_an_error(backend: Backend) -> None:
    for method, kwargs in (("drain", {"reason": "slurmtools: test"}), ("resume", {})):
        with pytest.raises(Failed) as err:
            getattr(backend, method)(nodes=["no-such-node"], **kwargs)
        assert "SlurmError" in err.value.bases and "\n" not in err.value.message, (method, err.value)


# ------------------------------------------------------------------------------------------------------- jobs
def test_job_details_hold_requeue_release(backend: Backend, jobs: list[int], workdir: Path) -> None:
    job_id = _submit(backend, workdir, "--requeue")
    jobs.append(job_id)
    running = _job(backend, job_id, lambda j: j["state"] == "RUNNING", "running")
    assert running["name"] == "conformance" and running["user"] == "root" and running["requeue"] is True
    assert len(running["nodes"]) == 1 and running["batch_host"] == running["nodes"][0]
    assert running["work_dir"] == str(workdir) and running["partition"] == "gpu"
    assert running["submit_time"] and running["start_time"]
    assert any(j["job_id"] == job_id for j in backend.jobs(user="root"))
    assert any(j["job_id"] == job_id for j in backend.jobs(nodes=running["nodes"]))
    assert not any(j["job_id"] == job_id for j in backend.jobs(user="nobody"))

    backend.requeue(job_id=job_id, hold=True)
    held = _job(backend, job_id, lambda j: j["state"] == "PENDING" and j["restart_count"] >= 1, "requeued, held")
    # Slurm's reason code, as squeue gives it (pyslurm alone would give slurmctld's description here)
    assert "held" in held["state_reason"].lower() and " " not in held["state_reason"], held
    backend.update_job(job_id=job_id, excluded_nodes=running["nodes"], comment=HOSTILE)
    changed = backend.job(job_id=job_id)
    assert changed["excluded_nodes"] == running["nodes"] and changed["comment"] == HOSTILE, changed
    backend.release(job_id=job_id)
    again = _job(backend, job_id, lambda j: j["state"] == "RUNNING", "running again")
    assert again["nodes"] != running["nodes"] and again["restart_count"] >= 1

    backend.requeue(job_id=job_id)                     # a plain requeue: pending, then running again
    _job(backend, job_id, lambda j: j["restart_count"] >= 2 and j["state"] in {"PENDING", "RUNNING"},
         "requeued again")
    backend.cancel(job_id=job_id)
    done = _job(backend, job_id, lambda j: j["state"] == "CANCELLED", "cancelled")
    assert done["end_time"]


def test_signal_reaches_the_batch_script(backend: Backend, jobs: list[int], workdir: Path) -> None:
    mark = workdir / "got-usr1"
    job_id = _submit(backend, workdir, wrap=f"trap 'touch {mark}; exit 0' USR1; sleep 300 & wait")
    jobs.append(job_id)
    _job(backend, job_id, lambda j: j["state"] == "RUNNING", "running")
    time.sleep(1)          # the trap is set once bash runs the script
    backend.signal(job_id=job_id, sig="USR1", batch_only=True)
    wait_until("the batch script's USR1 trap", mark.exists, 30)
    with pytest.raises(Failed) as err:
        backend.signal(job_id=job_id, sig="KILL; id", batch_only=True)
    assert err.value.kind == "ValueError"


def test_actions_on_an_unknown_job_are_errors(backend: Backend) -> None:
    for method, kwargs in (("requeue", {}), ("requeue", {"hold": True}), ("release", {}),
                           ("update_job", {"comment": "x"}), ("signal", {"sig": "TERM"})):
        with pytest.raises(Failed) as err:
            getattr(backend, method)(job_id=NO_JOB, **kwargs)
        assert "SlurmError" in err.value.bases and "\n" not in err.value.message, (method, err.value)
    # cancel is idempotent: a job that is gone (or never was) is not an error, on either backend (scancel exits 0
    # and says so on stderr; pyslurm's kill RPC likewise)
    assert backend.cancel(job_id=NO_JOB) is None


# ------------------------------------------------------------------------------------------------- accounting
def test_accounting_has_each_attempt(backend: Backend, jobs: list[int], workdir: Path) -> None:
    job_id = _submit(backend, workdir, "--requeue")
    jobs.append(job_id)
    _job(backend, job_id, lambda j: j["state"] == "RUNNING", "running")
    backend.requeue(job_id=job_id)
    _job(backend, job_id, lambda j: j["state"] == "RUNNING" and j["restart_count"] >= 1, "running again")
    backend.cancel(job_id=job_id)

    def both() -> list[dict[str, Any]] | None:
        rows = [r for r in backend.job_history(job_ids=[job_id]) if r["job_id_raw"] == job_id]
        return rows if {"REQUEUED", "CANCELLED"} <= {r["state"] for r in rows} else None

    rows = wait_until("the requeued and the cancelled attempt in sacct", both, 120)
    assert sorted(r["attempt"] for r in rows) == list(range(len(rows))), rows


def test_node_events_record_a_drain(backend: Backend, resume_after: list[str]) -> None:
    # slurmctld records a drain in slurmdbd at once only on a node with no running or completing job; otherwise when
    # the last job leaves, as SlurmUser (node_mgr.c: update_node, make_node_idle). An earlier test's job can still be
    # ending on n3 (its epilog running): wait for an idle n3, so the event is the drain's own.
    wait_until("an idle n3", lambda: [n for n in backend.nodes(names=["n3"])
                                      if n["state"] == "idle" and not {"COMPLETING", "DRAIN"} & set(n["flags"])], 120)
    since = datetime.now() - timedelta(seconds=5)
    reason = f"slurmtools: conformance {backend.name} {time.time():.0f}"
    resume_after.append("n3")
    backend.drain(nodes=["n3"], reason=reason)
    events = wait_until("the drain in sacctmgr's events",
                   lambda: [e for e in backend.node_events(since=since.isoformat()) if e.get("reason") == reason], 60)
    assert any(e["node"] == "n3" and e["user"].split("(")[0] == "root" for e in events), events
    backend.resume(nodes=["n3"])


# --------------------------------------------------------------------------------- the two backends, compared
def test_backends_agree(lab: Lab, resume_after: list[str], jobs: list[int], workdir: Path) -> None:
    """The same cluster read through both: the same nodes, the same jobs, field by field."""
    if not source.has_pyslurm(default_release()):
        pytest.skip(f"no pyslurm on Slurm {lab.release}'s lab (PyPI's pyslurm follows 25.11; the lab builds it there)")
    cli, py = Backend("cli", lab), Backend("pyslurm", lab)
    resume_after.append("n2")
    cli.drain(nodes=["n2"], reason=HOSTILE)
    assert cli.nodes() == py.nodes()
    running = _submit(cli, workdir, "--requeue", "--comment", HOSTILE)
    held = _submit(cli, workdir, "--requeue")
    jobs += [running, held]
    _job(cli, running, lambda j: j["state"] == "RUNNING", "running")
    _job(cli, held, lambda j: j["state"] == "RUNNING", "running")
    cli.requeue(job_id=held, hold=True)
    _job(cli, held, lambda j: j["state"] == "PENDING", "requeued, held")
    for job_id in (running, held, NO_JOB):
        assert cli.job(job_id=job_id) == py.job(job_id=job_id)
    mine = {running, held}
    assert [j for j in cli.jobs() if j["job_id"] in mine] == [j for j in py.jobs() if j["job_id"] in mine]
    cli.resume(nodes=["n2"])
