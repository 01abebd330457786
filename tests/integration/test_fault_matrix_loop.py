"""The fault matrix, part two: failures of the loop itself, each injected for real on the lab (tmpfs, SIGKILL,
slurmctld restarted, PostgreSQL stopped, libfaketime), each row's outcome asserted and written to the matrix
(conftest's `matrix`, then docs/reliability.md). Part one (faults in a job) is test_fault_matrix.py."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools.lab import Lab, chroot
from slurmtools.ledger import db, models
from slurmtools.ledger.spool import LOSSES, Spool
from slurmtools.slurm import CliSlurm

from .conftest import matrix_row, wait_idle, wait_job, wait_until
from .test_controller_lab import inject
from .test_epilog_lab import ledger_rows
from .test_fault_matrix import _decision, decisions_of, start_job
from .test_ledger_pg import pg_ledger  # noqa: F401 - the fixture: a fresh database on the lab's PostgreSQL

XID79 = "slurmtools: hardware: XID 79"


def calls(lab: Lab, what: str) -> int:
    return sum(what in c for c in (lab.root / "log" / "slurm-calls.log").read_text().splitlines())


def epilog_done(lab: Lab, job_id: int, node: str) -> float | None:
    """When the lab's epilog wrapper for JOB_ID on NODE finished (hooks.log), or None."""
    for line in (lab.root / "log" / "hooks.log").read_text().splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1] == "epilog" and parts[2] == f"job={job_id}" and parts[3] == f"node={node}":
            return float(parts[0])
    return None


def retried_away(slurm: CliSlurm, job_id: int, node: str, timeout: float = 120) -> Any:
    done = wait_job(slurm, job_id, lambda j: j.state == "COMPLETED" and j.restart_count >= 1, "the retry completed",
                    timeout=timeout)
    assert done.restart_count == 1 and node not in done.nodes and node in done.excluded_nodes
    return done


def start_controller(lab: Lab, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    with (lab.root / "log" / "controller.log").open("a") as out:
        return subprocess.Popen(["slurmtools", "-v", "controller", "run", "--interval", "0.5", "--no-recovery"],
                                stdout=out, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def gated(lab: Lab, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """Slurm's tools for a controller that stops between `requeuehold` and the update that follows it: while GATE
    exists its `scontrol update jobid=...` waits (writing its caller's pid to GATE.reached first)."""
    shim, gate = tmp_path / "bin", tmp_path / "gate"
    shim.mkdir()
    for tool in ("sinfo", "squeue", "sbatch", "sacct", "sacctmgr", "scancel", "scontrol"):
        body = f'exec {lab.root}/bin/{tool} "$@"'
        if tool == "scontrol":
            body = (f'if [ "$1" = update ]; then case "$2" in jobid=*) echo $PPID > {gate}.reached\n'
                    f'    while [ -e {gate} ]; do sleep 0.1; done;; esac; fi\n{body}')
        (shim / tool).write_text(f"#!/bin/sh\n{body}\n")
        (shim / tool).chmod(0o755)
    gate.touch()
    yield {"SLURMTOOLS_SLURM_BIN_DIR": str(shim)}, gate
    gate.unlink(missing_ok=True)


def _xid79_job(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str]) -> tuple[int, str]:
    job_id, node = start_job(lab, slurm, jobs, workdir, resume_after)
    inject(node, "xid79")
    (workdir / "GO").write_text("1\n")
    return job_id, node


def test_slurmctld_restarted_between_requeuehold_and_release(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
        gated: tuple[dict[str, str], Path], matrix: list[dict[str, Any]]) -> None:
    env, gate = gated
    with matrix_row(matrix, "slurmctld restarted between requeuehold and release", node="drained (XID 79)",
                    job="requeued away, runs exactly once",
                    why="slurmctld keeps the held job across its restart; the controller's next step finds it") as rec:
        ctl = start_controller(lab, env)
        try:
            job_id, node = _xid79_job(lab, slurm, jobs, workdir, resume_after)
            wait_until("the controller between requeuehold and release", lambda: Path(f"{gate}.reached").exists(),
                       timeout=120)
            pid = int((lab.root / "run" / "slurmctld.pid").read_text())
            os.kill(pid, signal.SIGTERM)
            wait_until("slurmctld gone", lambda: not Path(f"/proc/{pid}").exists(), timeout=30)
            lab.start_slurmctld()
            gate.unlink()
            done = retried_away(slurm, job_id, node, timeout=180)
        finally:
            stop(ctl)
        (d,) = decisions_of(lab, job_id)
        assert (d.classification, d.status) == ("node_fault", "done")
        assert calls(lab, f"requeuehold {job_id}") == 1
        out = (workdir / "job.out").read_text()
        assert out.count("attempt 1 on") == 1 and "attempt 2" not in out            # ran exactly once more
        rec.update({"decision": _said(d), "node": node, "ran_on": ",".join(done.nodes)})


def test_two_controllers_the_leader_killed_mid_decision(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
        gated: tuple[dict[str, str], Path], matrix: list[dict[str, Any]]) -> None:
    env, gate = gated
    with matrix_row(matrix, "Two controllers; the leader SIGKILLed between requeuehold and release",
                    node="drained (XID 79)", job="requeued away exactly once",
                    why="the standby takes the advisory lock and finishes the decision from the ledger") as rec:
        ctls = [start_controller(lab, env) for _ in range(2)]
        try:
            job_id, node = _xid79_job(lab, slurm, jobs, workdir, resume_after)
            reached = Path(f"{gate}.reached")
            wait_until("a controller between requeuehold and release", reached.exists, timeout=120)
            leader = next(c for c in ctls if str(c.pid) == reached.read_text().strip())
            t0 = time.monotonic()
            leader.kill()
            leader.wait(10)
            gate.unlink()
            standby = next(c for c in ctls if c is not leader)
            d = wait_until("the standby's finished decision", lambda: next(
                (x for x in decisions_of(lab, job_id) if x.status == "done"), None), timeout=60)
            took = time.monotonic() - t0
            done = retried_away(slurm, job_id, node)
            assert standby.poll() is None
        finally:
            for c in ctls:
                stop(c)
        assert len(decisions_of(lab, job_id)) == 1 and calls(lab, f"requeuehold {job_id}") == 1
        assert took < 30
        rec.update({"decision": _said(d), "node": node, "ran_on": ",".join(done.nodes),
                    "measured": f"the standby finished {took:.1f} s after the leader's SIGKILL"})


def test_the_controller_killed_mid_decision_and_restarted(
        lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
        gated: tuple[dict[str, str], Path], matrix: list[dict[str, Any]]) -> None:
    env, gate = gated
    with matrix_row(matrix, "The only controller SIGKILLed between requeuehold and release, then restarted",
                    node="drained (XID 79)", job="requeued away exactly once",
                    why="the decision is on record as acting before the requeue; a restart finishes it") as rec:
        ctl = start_controller(lab, env)
        try:
            job_id, node = _xid79_job(lab, slurm, jobs, workdir, resume_after)
            wait_until("the controller between requeuehold and release", Path(f"{gate}.reached").exists,
                       timeout=120)
            ctl.kill()
            ctl.wait(10)
            (d,) = decisions_of(lab, job_id)
            assert d.status == "acting" and d.t_requeued is not None and d.t_released is None
            gate.unlink()
            ctl = start_controller(lab)
            d = wait_until("the restarted controller's finished decision", lambda: next(
                (x for x in decisions_of(lab, job_id) if x.status == "done"), None), timeout=60)
            done = retried_away(slurm, job_id, node)
        finally:
            stop(ctl)
        assert len(decisions_of(lab, job_id)) == 1 and calls(lab, f"requeuehold {job_id}") == 1
        rec.update({"decision": _said(d), "node": node, "ran_on": ",".join(done.nodes)})


def test_an_epilog_run_twice(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path, resume_after: list[str],
                             controller: subprocess.Popen[str], matrix: list[dict[str, Any]]) -> None:
    with matrix_row(matrix, "The epilog and EpilogSlurmctld run twice for one attempt", node="drained (XID 79)",
                    job="requeued away once", why="every event carries its idempotency key; the decision its own")\
            as rec:
        job_id, node = _xid79_job(lab, slurm, jobs, workdir, resume_after)
        wait_until("the epilog", lambda: epilog_done(lab, job_id, node), timeout=60)
        env = {**os.environ, "SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id), "SLURMD_NODENAME": node,
               "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0",
               "SLURM_NODELIST": node, "SLURM_JOB_NODELIST": node, "SLURM_JOB_EXIT_CODE": "256"}
        for hook, context in (("epilog", "epilog_slurmd"), ("epilog_slurmctld", "epilog_slurmctld")):
            r = subprocess.run([str(lab.root / "hooks" / hook)], env={**env, "SLURM_SCRIPT_CONTEXT": context},
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
        done = retried_away(slurm, job_id, node)
        subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=True)
        time.sleep(3)                                # the second enqueue, seen by the controller's next passes
        assert len(decisions_of(lab, job_id)) == 1 and calls(lab, f"requeuehold {job_id}") == 1
        assert slurm.job(job_id).restart_count == 1
        found = [f for f in ledger_rows(lab, models.Finding, job_id=job_id)
                 if isinstance(f, models.Finding) and f.restart_count == 0 and f.xid == 79]
        attempts = [a for a in ledger_rows(lab, models.JobAttempt, job_id=job_id)
                    if isinstance(a, models.JobAttempt) and a.restart_count == 0]
        assert len(found) == 1 and len(attempts) == 1
        rec.update({"decision": _said(decisions_of(lab, job_id)[0]), "node": node, "ran_on": ",".join(done.nodes)})


def test_clocks_skewed_between_nodes(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                     resume_after: list[str], controller: subprocess.Popen[str],
                                     matrix: list[dict[str, Any]]) -> None:
    nodes = [n.name for n in slurm.nodes()]
    with matrix_row(matrix, "Clocks 16 s apart: half the nodes' hooks 8 s ahead, half 8 s behind (libfaketime)",
                    node="drained (XID 79)", job="requeued away, decided once",
                    why="nothing in the loop orders one node's events against another's clock") as rec:
        try:
            for i, n in enumerate(nodes):
                inject(n, "clock-ahead" if i % 2 == 0 else "clock-behind")
            job_id, node = _xid79_job(lab, slurm, jobs, workdir, resume_after)
            d = wait_until("the controller's decision", lambda: _decision(lab, job_id), timeout=120)
            done = retried_away(slurm, job_id, node)
        finally:
            for n in nodes:
                inject(n, "clock-ok")
        assert d.classification == "node_fault" and len(decisions_of(lab, job_id)) == 1
        info = slurm.nodes([node])[0]
        assert info.drain and info.reason.startswith(XID79), info.reason
        assert not {n.name for n in slurm.nodes() if n.drain} - {node}
        rec.update({"decision": _said(d), "node": node, "ran_on": ",".join(done.nodes)})


def test_a_skewed_clock_breaks_no_sleep_and_no_child(lab: Lab) -> None:
    """The clock fault as a node's hooks get it (the wrapper's own lines): the wall clock is 8 s ahead, and sleeps
    and children that outlive their output still work. (With FAKETIME_DONT_FAKE_MONOTONIC, libfaketime 0.9.10
    failed them with EINVAL: the epilog's drain failed whenever sinfo outlived its output, the clock row's flake.)"""
    wrapper = (lab.root / "hooks" / "epilog").read_text().splitlines()
    start = next(i for i, line in enumerate(wrapper) if line.startswith("clock="))
    end = next(i for i in range(start, len(wrapper)) if wrapper[i] == "fi")
    code = ("import subprocess, sys, time; t = time.time(); time.sleep(0.05); "
            "p = subprocess.run(['sh', '-c', 'echo out; sleep 0.3'], capture_output=True, text=True, timeout=10); "
            "print(round(t - float(sys.argv[1])), p.stdout.strip())")
    script = "\n".join(["node=n1", *wrapper[start:end + 1], 'exec "$@"'])
    inject("n1", "clock-ahead")
    try:
        out = subprocess.run(["bash", "-c", script, "clock", "python3", "-c", code, str(time.time())],
                             capture_output=True, text=True, timeout=60)
    finally:
        inject("n1", "clock-ok")
    assert out.returncode == 0, out.stderr
    ahead, said = out.stdout.split()
    assert 7 <= int(ahead) <= 10 and said == "out"


def test_the_spool_filesystem_full(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                   resume_after: list[str], controller: subprocess.Popen[str],
                                   matrix: list[dict[str, Any]]) -> None:
    spool = lab.root / "spool-slurmtools"
    with matrix_row(matrix, "The spool's filesystem full (a 256 KiB tmpfs, filled) while a job fails with XID 79",
                    node="drained (XID 79)", job="requeued away (the drain names the job)",
                    why="the epilog exits in time, the loss is counted in the node's state_dir and reported in "
                        "the ledger by the node's next hook once space is back") as rec:
        subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=True)
        before = {c.id for c in ledger_rows(lab, models.NodeStateChange, action="spool_loss")}
        job_id, node = start_job(lab, slurm, jobs, workdir, resume_after)
        losses = lab.root / "nodes" / node / "state" / LOSSES          # the lab's state_dir for the node
        losses.unlink(missing_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0750", "slurmtools-full", str(spool)],
                       check=True)
        if lab.fs is not None:                                      # the hooks run in another release's root
            chroot.share(lab.fs, spool)
        try:
            for sub in ("tmp", "pending", "bad"):
                (spool / sub).mkdir(mode=0o750)
            fd = os.open(spool / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError:
                pass                                                        # ENOSPC: full
            finally:
                os.close(fd)
            inject(node, "xid79")
            (workdir / "GO").write_text("1\n")
            ended = wait_job(slurm, job_id, lambda j: j.restart_count >= 1 or j.finished, "ended", timeout=60)
            took = wait_until("the epilog", lambda: epilog_done(lab, job_id, node), timeout=60)
        finally:
            if lab.fs is not None:
                chroot.unshare(lab.fs, spool)
            _umount(spool)
        info = slurm.nodes([node])[0]
        assert info.drain and info.reason.startswith(XID79) and info.reason.endswith(f"[job {job_id}]"), info.reason
        noted = losses.read_text().splitlines()
        assert noted and sum(int(json.loads(x)["events"]) for x in noted) >= 2
        d = wait_until("the controller's decision", lambda: _decision(lab, job_id), timeout=120)
        assert d.classification == "node_fault" and "findings not in the ledger" in (
            d.details or {})["classification"]["why"]
        done = retried_away(slurm, job_id, node)
        # space is back: the node's next hook spools, and carries the count into the ledger (the node rebooted
        # first: its GPU fell off the bus, and its prolog would turn the next job away until then)
        inject(node, "reboot")
        slurm.resume([node])
        after = slurm.submit(["-w", node, "-o", "/dev/null", "--wrap", "true"])
        jobs.append(after)
        wait_job(slurm, after, lambda j: j.state == "COMPLETED", "the next job on the node")
        subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=True)
        reported = [c for c in ledger_rows(lab, models.NodeStateChange, action="spool_loss")
                    if isinstance(c, models.NodeStateChange) and c.node == node and c.id not in before]
        assert len(reported) == 1 and not losses.exists()
        assert reported[0].details["batches"] == len(noted)
        assert [a for a in ledger_rows(lab, models.JobAttempt, job_id=after)]       # writing resumed
        rec.update({"decision": _said(d), "node": node, "ran_on": ",".join(done.nodes),
                    "measured": f"epilog done {took - (ended.end_time.timestamp() if ended.end_time else took):.1f} s "
                                f"after the job's end; {reported[0].reason}"})


def _umount(path: Path) -> None:
    for _ in range(50):
        if subprocess.run(["umount", str(path)], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    subprocess.run(["umount", "-l", str(path)], check=True)


def test_an_epilog_killed_mid_write(lab: Lab, pg_ledger: dict[str, str], tmp_path: Path,  # noqa: F811
                                    matrix: list[dict[str, Any]]) -> None:
    """The real epilog hook (its real code, a kernel log with an XID 13, the spool, PostgreSQL), SIGKILLed at a
    random moment of its run, 40 times; then shipped."""
    kern, state = tmp_path / "kern.log", tmp_path / "state"
    state.mkdir()
    kern.write_text("[  100.000000] NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, Graphics Exception\n")
    conf = tmp_path / "slurmtools.toml"
    conf.write_text(f'[general]\ncluster = "killed"\n[node]\nkernel_log = "file:{kern}"\nstate_dir = "{state}"\n')
    env = {**os.environ, **pg_ledger, "SLURMTOOLS_CONFIG": str(conf), "SLURMD_NODENAME": "kx",
           "SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0"}
    hook = ["slurmtools-hook", "epilog_slurmd"]
    with matrix_row(matrix, "The epilog SIGKILLed 40 times: at random moments, and while its batch is being written",
                    node="-",
                    job="-", why="a batch appears in the spool only by rename after fsync") as rec:
        assert subprocess.run(["slurmtools", "ledger", "init"], env=env, capture_output=True).returncode == 0
        t0 = time.monotonic()
        assert subprocess.run(hook, env={**env, "SLURM_JOB_ID": "1"}, timeout=60).returncode == 0
        full = time.monotonic() - t0
        rng, acked, caught = random.Random(20), [1], 0
        tmp = Path(pg_ledger["SLURMTOOLS_SPOOL_DIR"]) / "tmp"
        for job in range(2, 42):
            p = subprocess.Popen(hook, env={**env, "SLURM_JOB_ID": str(job)})
            if job % 2:      # at a random moment of its run
                time.sleep(rng.uniform(0.5 * full, 1.5 * full))
            else:            # the moment its batch is in spool/tmp: written, not yet renamed
                deadline = time.monotonic() + 10 * full
                while p.poll() is None and time.monotonic() < deadline and not any(
                        n.endswith(f".{p.pid}") for n in os.listdir(tmp)):
                    pass
                caught += p.poll() is None
            if p.poll() is None:
                p.kill()
            if p.wait(30) == 0:
                acked.append(job)
        spool = Spool(pg_ledger["SLURMTOOLS_SPOOL_DIR"])
        wait_until("everything shipped", lambda: subprocess.run(
            ["slurmtools", "ledger", "flush", "--quiet"], env=env).returncode == 0 and not spool.counts()["pending"])
        counts = spool.counts()
        assert counts["bad"] == 0                                            # nothing half-written was shipped
        eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
        with Session(eng) as s:
            att = dict(s.execute(select(models.JobAttempt.job_id, func.count()).group_by(models.JobAttempt.job_id))
                       .all())
            fnd = dict(s.execute(select(models.Finding.job_id, func.count()).group_by(models.Finding.job_id))
                       .all())
        eng.dispose()
        assert all(att.get(j) == 1 and fnd.get(j) == 1 for j in acked)     # acknowledged: stored, once
        assert all(n == 1 for n in [*att.values(), *fnd.values()])
        assert set(att) == set(fnd)                                          # a batch whole, or not at all
        rec.update({"measured": f"20 killed the moment their batch was seen in spool/tmp ({caught} still running "
                                f"then), 20 at random moments; of the 40, {len(acked) - 1} had finished, "
                                f"{len(att) - len(acked)} had their batch in pending/ (each event stored once), "
                                f"{40 - len(att) + 1} had not (nothing stored); {counts['tmp']} temporary file(s) "
                                f"left, never shipped; a whole run {full:.2f} s"})


def test_the_ledger_database_down_while_jobs_end(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                 matrix: list[dict[str, Any]]) -> None:
    """PostgreSQL stopped while 8 jobs end on the 4 nodes (2 each, an XID 13 in each one's kernel-log window):
    the real prologs and epilogs spool; once it is back, every event is shipped exactly once."""
    spool = Spool(lab.root / "spool-slurmtools")
    with matrix_row(matrix, "The ledger's PostgreSQL down while 8 jobs end on 4 nodes, then back", node="not drained",
                    job="completes", why="the hooks spool and exit; the flush after the database is back ships "
                                         "each event once (the spool keeps it until the commit)") as rec:
        wait_idle(slurm)
        nodes = [n.name for n in slurm.nodes()]
        ended: list[tuple[int, str]] = []
        lab.stop_postgres()
        try:
            for _ in range(2):
                batch = [(slurm.submit(["-w", n, "-o", "/dev/null", "--wrap", "sleep 4"]), n) for n in nodes]
                jobs.extend(j for j, _ in batch)
                for j, n in batch:        # running its script: its prolog has marked the kernel log
                    wait_until(f"job {j}'s processes", lambda n=n, j=j: any(
                        job == str(j) for _, job in lab.job_pids_on(n)), timeout=60)
                    lab.append_kernel_line(n, "NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, Graphics "
                                              "Exception: ESR 0x404600=0x80000002")
                for j, n in batch:
                    wait_until(f"job {j}'s epilog", lambda j=j, n=n: epilog_done(lab, j, n), timeout=60)
                ended += batch
            kept = spool.counts()["pending"]
            down = subprocess.run(["slurmtools", "ledger", "flush", "--json"], capture_output=True, text=True)
            assert down.returncode == 1 and json.loads(down.stdout)["left"] == kept >= 8
        finally:
            lab.start_postgres()
        wait_until("everything shipped", lambda: subprocess.run(
            ["slurmtools", "ledger", "flush", "--quiet"]).returncode == 0 and not spool.counts()["pending"])
        again = subprocess.run(["slurmtools", "ledger", "flush", "--json"], capture_output=True, text=True)
        assert json.loads(again.stdout)["shipped"] == 0
        for j, n in ended:
            attempts = [a for a in ledger_rows(lab, models.JobAttempt, job_id=j) if isinstance(a, models.JobAttempt)]
            found = [f for f in ledger_rows(lab, models.Finding, job_id=j) if isinstance(f, models.Finding)]
            assert len(attempts) == 1 and n in (attempts[0].details or {}).get("epilog", {}), j
            assert [(f.node, f.xid) for f in found] == [(n, 13)], j
            assert not slurm.nodes([n])[0].drain
        rec.update({"measured": f"{kept} spool files kept while the database was down, each event stored once"})


def _said(d: models.ControllerDecision) -> dict[str, Any]:
    return {"classification": d.classification, "decision": d.decision, "reason": d.reason}
