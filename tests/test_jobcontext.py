"""The job a node hook runs for (hooks/context.py) and the per-job state folder (jobstate.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmtools import fsutil, jobstate
from slurmtools.hooks.context import JobContext


def test_context_parses_slurms_environment_once() -> None:
    job = JobContext.from_env({
        "SLURM_JOB_ID": "4242", "SLURMD_NODENAME": "n3", "SLURM_JOB_SLUID": "s1J3QZ8KXW0Y2R", "SLURM_JOB_USER": "ann",
        "SLURM_JOB_UID": "1001", "SLURM_JOB_GPUS": "0,3,x,7", "SLURM_JOB_STDOUT": "/o", "SLURM_JOB_STDERR": "/o",
        "SLURM_NODELIST": "n[3-4]", "SLURM_JOB_RESTART_COUNT": "2", "SLURM_JOB_COMMENT": "a,slurmtools=off",
        "SLURM_JOB_EXIT_CODE": "768"})
    assert (job.job_id, job.node, job.sluid, job.user, job.uid) == (4242, "n3", "s1J3QZ8KXW0Y2R", "ann", 1001)
    assert job.gpus == frozenset({0, 3, 7}) and job.outputs == ["/o"] and job.restart_count == 2
    assert job.exit_status == 768 and job.opted_out and job.key == "4242" and job.problems == ()


@pytest.mark.parametrize("raw", ["abc", "12a", "-1", "1" * 5000, "٣", str(1 << 40)])
def test_a_hostile_job_id_is_no_id_and_one_line_never_a_traceback(raw: str) -> None:
    job = JobContext.from_env({"SLURM_JOB_ID": raw, "SLURMD_NODENAME": "n1", "SLURM_JOB_RESTART_COUNT": raw,
                               "SLURM_JOB_SLUID": raw + "/../x"})
    assert job.job_id is None and job.restart_count == 0 and job.sluid is None and job.key == ""
    assert len(job.problems) == 3 and all(len(p) < 200 for p in job.problems)


@pytest.mark.parametrize("raw", ["sabc123", "s1J3QZ8KXW0Y2", "s1J3QZ8KXW0Y2RR", "x1J3QZ8KXW0Y2R",
                                 "s1J3QZ8KXW0Y2U", "s1j3qz8kxw0y2r", "s1J3QZ8KXW0Y2٢"])
def test_a_sluid_is_what_slurm_prints_or_none(raw: str) -> None:
    """Slurm 25.11 prints "s" and 13 base-32 digits without I, L, O, U (src/common/sluid.c); nothing else."""
    job = JobContext.from_env({"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "SLURM_JOB_SLUID": raw})
    assert job.sluid is None and job.run_parts == () and len(job.problems) == 1
    good = JobContext.from_env({"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "SLURM_JOB_SLUID": "S1J3QZ8KXW0Y2R"})
    assert good.sluid == "S1J3QZ8KXW0Y2R" and good.run_parts == ("S1J3QZ8KXW0Y2R",) and good.problems == ()


def test_huge_values_are_bounded() -> None:
    job = JobContext.from_env({"SLURMD_NODENAME": "n" * 10**6, "SLURM_JOB_COMMENT": "x " * 10**6,
                               "SLURM_JOB_GPUS": ",".join(["1"] * 10**6), "SLURM_JOB_STDOUT": "/" * 10**6})
    assert len(job.node) <= 256 and len(job.comment) <= 4096 and job.gpus == frozenset({1})
    assert job.stdout is not None and len(job.stdout) <= 4096 and job.job_id is None and job.problems == ()


def test_state_folder_round_trip_and_prune(tmp_path: Path) -> None:
    state = str(tmp_path)
    jobstate.write(state, 7, "n1", "marker", '{"a": 1}')
    jobstate.write(state, 7, "n1", "io", '{"b": 2}')
    assert jobstate.read(state, 7, "n1", "marker") == '{"a": 1}'
    assert jobstate.read(state, 7, "n1", "io", remove=True) == '{"b": 2}'
    assert jobstate.read(state, 7, "n1", "io") is None                   # consumed
    assert os.stat(jobstate.path(state, 7, "n1", "marker")).st_mode & 0o077 == 0
    os.utime(jobstate.path(state, 7, "n1", "marker"), (0, 0))
    assert jobstate.prune(state) == 1 and jobstate.read(state, 7, "n1", "marker") is None


def test_a_planted_link_or_fifo_is_never_read(tmp_path: Path) -> None:
    state = str(tmp_path)
    os.makedirs(jobstate.folder(state))
    secret = tmp_path / "secret"
    secret.write_text("root's secret")
    os.symlink(secret, jobstate.path(state, 8, "n1", "marker"))
    os.mkfifo(jobstate.path(state, 8, "n1", "io"))
    assert jobstate.read(state, 8, "n1", "marker") is None
    assert jobstate.read(state, 8, "n1", "io") is None                   # no hang on a FIFO


def test_read_safely_refuses_and_bounds(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"0123456789")
    assert fsutil.read_safely(str(f), 4)[0] == b"6789"                   # the newest bytes
    assert fsutil.read_safely(str(f), 100, start=8)[0] == b"89"
    with pytest.raises(fsutil.UntrustedPath, match="larger than 4 bytes"):
        fsutil.read_safely(str(f), 4, whole=True)
    with pytest.raises(fsutil.UntrustedPath, match="owned by uid"):
        fsutil.read_safely(str(f), 4, owners=(os.geteuid() + 1,))
    with pytest.raises(fsutil.UntrustedPath, match="not a regular file"):
        fsutil.read_safely(str(tmp_path), 4)
