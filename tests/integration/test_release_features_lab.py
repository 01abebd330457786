"""What newer releases give, used where the running one has it (issue 35, docs/compatibility.md): each test detects
the feature on the lab's Slurm as slurmtools does, and runs where it is there; where it is not, it is skipped with
the reason (shown, never counted as passed: bench/compat_doc.py).

- SLURM_JOB_SLUID (25.11+): each run's own id, in the ledger's attempts and findings, matching sacct's.
- HealthCheckTimeout (26.05) and HealthCheckNodeState=START_ONLY (25.11+): detected (slurm/features.py) as the
  release's own manual page documents them, and shown by `slurmtools install slurm-conf` and `doctor` as detected.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.jobstate import is_sluid
from slurmtools.lab import Lab
from slurmtools.ledger import db, models
from slurmtools.slurm import CliSlurm, features

from .conftest import wait_job, wait_until


def _has_sluid() -> bool:
    """The running release gives each run a SLUID: its squeue can show one (25.11 src/squeue/opts.c, `-O SLUID`).

    Not sacct's field list: 24.11's sacct already lists a SLUID field that its slurmctld never fills, and its hooks
    get no SLURM_JOB_SLUID (CI found it)."""
    out = subprocess.run(["squeue", "--helpFormat"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:     # 22.05's squeue has no --helpFormat at all (nor --helpformat): it prints no field
        assert "unrecognized option" in out.stderr, out.stderr
        return False
    return "SLUID" in out.stdout.split()


def _ledger_attempts(lab: Lab, job_id: int) -> list[tuple[int, str | None, int]]:
    subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True, check=False)
    eng = db.make_engine(lab.ledger_url)
    try:
        with Session(eng) as s:
            return [(a.restart_count, a.sluid, a.id) for a in s.scalars(
                select(models.JobAttempt).where(models.JobAttempt.job_id == job_id)
                .order_by(models.JobAttempt.id))]
    finally:
        eng.dispose()


def test_each_run_is_keyed_by_its_sluid_where_slurm_gives_one(lab: Lab, slurm: CliSlurm, jobs: list[int],
                                                               workdir: Path) -> None:
    """A job run twice (requeued): two attempts, each with the SLUID its epilog was given, as sacct records it."""
    if not _has_sluid():
        pytest.skip(f"Slurm {lab.release} gives no SLUID (squeue --helpFormat lists none): job id, restart count "
                    "and times identify a run there")
    job_id = slurm.submit(["-o", str(workdir / "job.out"), "-D", str(workdir), "-w", "n2", "--requeue",
                           "--wrap", "echo 'NCCL WARN NET/IB : Got completion from peer 10.0.0.2<51234> with error 12, "
                                     "opcode 0'; sleep 300"])
    jobs.append(job_id)
    first = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running").sluid   # squeue's step_id.sluid
    slurm.requeue(job_id, hold=True)
    wait_job(slurm, job_id, lambda j: j.state == "PENDING" and j.restart_count >= 1, "requeued, held")
    slurm.release(job_id)
    second = wait_job(slurm, job_id, lambda j: j.state == "RUNNING", "running again", timeout=120).sluid
    slurm.cancel(job_id)
    wait_job(slurm, job_id, lambda j: j.finished, "finished")
    runs = wait_until("both runs' attempts with their SLUIDs in the ledger", lambda: (lambda rows: rows if len(
        rows) == 2 and all(r[1] for r in rows) else None)(_ledger_attempts(lab, job_id)), timeout=90)
    sluids = [r[1] for r in runs]
    # Each run its own row, whatever restart count its epilog was given (slurmctld may count the requeue before the
    # first run's epilogs end): a new SLUID at the requeue (batch_requeue_fini -> job_record_set_sluid).
    assert all(s is not None and is_sluid(s) for s in sluids) and sluids[0] != sluids[1], runs
    out = subprocess.run(["sacct", "-j", str(job_id), "-D", "-X", "-n", "-P", "-o", "SLUID"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert set(sluids) <= {line.strip() for line in out.stdout.splitlines()}, (sluids, out.stdout)
    # what the controller compares (controller/base.run_of): squeue's SLUID of each run is the one its epilogs got,
    # and EpilogSlurmctld's queue item carries the run's (a run it may act on: the one that ended)
    assert [first, second] == sluids, (first, second, runs)
    items = [json.loads(p.read_text()) for p in (lab.root / "controller").glob(f"{job_id}.*.json")]
    assert items and all(i.get("sluid") in sluids for i in items), (items, sluids)
    eng = db.make_engine(lab.ledger_url)
    try:
        with Session(eng) as s:
            found = list(s.scalars(select(models.Finding).where(models.Finding.job_id == job_id,
                                                                models.Finding.sluid.is_not(None))))
    finally:
        eng.dispose()
    # each run's epilog read the job's output (the NCCL line) and recorded its finding with that run's SLUID
    by_id = {r[2]: r[1] for r in runs}
    assert found and all(by_id.get(f.attempt_id) == f.sluid for f in found), [(f.kind, f.sluid) for f in found]


def _manual(lab: Lab, version: str) -> str:
    """The running release's slurm.conf(5), as installed with it (Debian's package; a source build's prefix)."""
    root = Path(str(lab.fs)) if lab.fs is not None else Path("/")
    for path in (root / f"opt/slurm/{version}/share/man/man5/slurm.conf.5",
                 root / "usr/share/man/man5/slurm.conf.5.gz", root / "usr/share/man/man5/slurm.conf.5"):
        if path.is_file():
            data = path.read_bytes()
            return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace")
    pytest.skip(f"no slurm.conf(5) installed with Slurm {version} under {root}: nothing to check detection against")


def test_health_check_settings_are_detected_as_the_release_documents_them(lab: Lab, slurm: CliSlurm) -> None:
    """Every release: what slurm/features.py detects is what the release's own manual documents."""
    conf = features.show_config(slurm)
    feats = features.detect(conf, root=str(lab.fs) if lab.fs is not None else "/")
    manual = _manual(lab, feats.version)
    assert feats.health_check_timeout == ("\\fBHealthCheckTimeout\\fR" in manual), feats
    assert feats.start_only == ("\\fBSTART_ONLY\\fR" in manual), feats


def test_health_check_timeout_where_the_release_has_it(lab: Lab, slurm: CliSlurm) -> None:
    """26.05+: `install slurm-conf` suggests HealthCheckTimeout and doctor checks the lab's value."""
    conf = features.show_config(slurm)
    if "HealthCheckTimeout" not in conf:
        pytest.skip(f"Slurm {lab.release} has no HealthCheckTimeout (scontrol show config lists none)")
    out = subprocess.run(["slurmtools", "install", "slurm-conf"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert any(line.startswith("HealthCheckTimeout=") for line in out.stdout.splitlines()), out.stdout
    doc = subprocess.run(["slurmtools", "doctor", "--json"], capture_output=True, text=True, timeout=120)
    check = {c["name"]: c for c in json.loads(doc.stdout)}["slurm.conf HealthCheckTimeout"]
    assert check["detail"].startswith("HealthCheckTimeout = "), check


def test_start_only_where_the_release_parses_it(lab: Lab, slurm: CliSlurm) -> None:
    """25.11+: the parser of the lab's Slurm has START_ONLY, and `install slurm-conf` offers it only there."""
    feats = features.detect(features.show_config(slurm), root=str(lab.fs) if lab.fs is not None else "/")
    if not feats.start_only:
        pytest.skip(f"Slurm {lab.release}'s parser has no HealthCheckNodeState=START_ONLY"
                    + (f" (cannot tell: {feats.why})" if feats.start_only is None else ""))
    lines = features.slurm_conf_lines(feats, hook="/usr/local/bin/slurmtools-hook", interval=300, budget=36)
    assert any(line.startswith("# HealthCheckNodeState=START_ONLY   #") for line in lines), lines
