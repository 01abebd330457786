"""CliSlurm against fake Slurm executables: the lowest boundary, so our real code runs."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from slurmtools.slurm import CliSlurm, SlurmCommandError, SlurmError, SlurmNotFound, SlurmTimeout


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def bin_dir(tmp_path: Path, slurm_data: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    for name in ("sinfo.json", "squeue.json", "scontrol-show-node.json", "jobs.json"):
        if (slurm_data / name).exists():
            shutil.copy(slurm_data / name, d / name)
    version = {"22.05": "22.05.8", "24.11": "24.11.5"}[slurm_data.name]
    fake(d, "sinfo", f'[ "$1" = --version ] && echo "slurm {version}" && exit 0\n'
                     f'printf "%s\\n" "$@" > {d}/sinfo.argv; cat {d}/sinfo.json')
    fake(d, "squeue", f'printf "%s\\n" "$@" > {d}/squeue.argv; cat {d}/squeue.json')
    fake(d, "scontrol", f'[ "$1 $2 $3" = "show node --json" ] && exec cat {d}/scontrol-show-node.json\n'
                        f'printf "%s\\n" "$@" > {d}/scontrol.argv')
    fake(d, "sbatch", f'printf "%s\\n" "$@" > {d}/sbatch.argv; echo "77;lab"')
    return d


def test_reads_and_filters(bin_dir: Path) -> None:
    import json

    role = json.loads((bin_dir / "jobs.json").read_text())
    slurm = CliSlurm(bin_dir=str(bin_dir))
    newer = slurm.version() >= "23"
    assert [n.name for n in slurm.nodes(["n3", "n1"])] == ["n1", "n3"]
    assert (bin_dir / "sinfo.argv").exists() is not newer          # 23.02+: scontrol show node --json
    job = slurm.job(role["requeued"])
    assert job is not None and job.restart_count == 1
    assert (bin_dir / "squeue.argv").read_text().split() == ["--json", "--states=all"]   # 23.02+ hide ended jobs
    assert slurm.job(99999) is None  # 22.05 ignores -j with --json; we filter
    assert {j.job_id for j in slurm.jobs(nodes=["n4"])} >= {role["busy"]}


def test_actions_pass_argv_lists(bin_dir: Path) -> None:
    slurm = CliSlurm(bin_dir=str(bin_dir))
    slurm.drain(["n4", "n3"], 'slurmtools: x "quoted" ; $(touch /tmp/pwned)')
    argv = (bin_dir / "scontrol.argv").read_text().splitlines()
    assert argv == ["update", "nodename=n[3-4]", "state=drain", 'reason=slurmtools: x "quoted" ; $(touch /tmp/pwned)']
    slurm.update_job(5, excluded_nodes=["n2", "n1"], start_time="now")
    assert (bin_dir / "scontrol.argv").read_text().splitlines() == ["update", "jobid=5", "excnodelist=n[1-2]",
                                                                     "starttime=now"]
    assert slurm.submit(["-N2", "job.sh", "a b", "$(x)"]) == 77
    assert (bin_dir / "sbatch.argv").read_text().splitlines() == ["--parsable", "-N2", "job.sh", "a b", "$(x)"]
    with pytest.raises(ValueError):
        slurm.drain(["n1"], "  ")
    with pytest.raises(ValueError):
        slurm.signal(1, "USR1; rm -rf /")


def test_failure_is_typed_with_command_code_and_stderr(bin_dir: Path) -> None:
    fake(bin_dir, "scontrol", 'echo "slurm_update error: Invalid node name specified" >&2; exit 1')
    with pytest.raises(SlurmCommandError) as err:
        CliSlurm(bin_dir=str(bin_dir)).resume(["n9"])
    assert err.value.returncode == 1
    assert err.value.argv == ["scontrol", "update", "nodename=n9", "state=resume"]
    assert "Invalid node name" in err.value.stderr


def test_hard_timeout(bin_dir: Path) -> None:
    fake(bin_dir, "squeue", "exec sleep 30")
    t0 = time.monotonic()
    with pytest.raises(SlurmTimeout):
        CliSlurm(bin_dir=str(bin_dir), timeout=0.5).jobs()
    assert time.monotonic() - t0 < 5


def test_missing_tool(tmp_path: Path) -> None:
    with pytest.raises(SlurmNotFound):
        CliSlurm(bin_dir=str(tmp_path)).nodes()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_submit_as_another_user_runs_sbatch_as_that_user() -> None:
    d = Path(tempfile.mkdtemp(prefix="slurmtools-test-"))      # nobody must reach it: not under pytest's 0700 tmp
    try:
        d.chmod(0o755)
        out = d / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        fake(d, "sbatch", f'id -un > {out}/who; pwd > {out}/cwd; echo "$NCCL_DEBUG" > {out}/env; echo 91')
        slurm = CliSlurm(bin_dir=str(d))
        env = {"NCCL_DEBUG": "kept", "PATH": "/usr/bin:/bin"}
        assert slurm.submit(["--wrap", "true"], user="nobody", cwd=str(out), env=env) == 91
        assert [(out / f).read_text().strip() for f in ("who", "cwd", "env")] == ["nobody", str(out), "kept"]
        assert slurm.submit(["--wrap", "true"], user="root", cwd=str(out)) == 91      # ourselves: no privilege to drop
        assert (out / "who").read_text().strip() == "root"
    finally:
        shutil.rmtree(d)


def test_submit_as_another_user_needs_root(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    with pytest.raises(SlurmError, match="only root can"):
        CliSlurm(bin_dir=str(bin_dir)).submit(["--wrap", "true"], user="alice")


@pytest.mark.parametrize("listed", [True, False])
def test_job_history_asks_for_the_sluid_only_where_sacct_lists_it(tmp_path: Path, listed: bool) -> None:
    """`sacct --helpformat` says whether the running sacct has SLUID (25.11+); it is asked for only there, before
    the free-text Comment, and read once per client."""
    from slurmtools.slurm import parse

    fields = " ".join([*parse.SACCT_FIELDS, *(["SLUID"] if listed else [])])
    header = "|".join([*parse.SACCT_FIELDS[:-1], *(["SLUID"] if listed else []), "Comment"])
    row = ("5|5|x|root|FAILED|1:0|0:0|n1|2026-11-22T03:12:44|2026-11-22T03:12:45|2026-11-22T03:12:46|1|gpu|1|None|"
           "/tmp|" + ("s1J3QZ8KXW0Y2R|" if listed else "") + "a|b")
    fake(tmp_path, "sacct", f'echo "$*" >> {tmp_path}/sacct.calls\n'
                            f'[ "$1" = --helpformat ] && echo "{fields}" && exit 0\n'
                            f"printf '%s\\n%s\\n' '{header}' '{row}'")
    slurm = CliSlurm(bin_dir=str(tmp_path))
    for _ in range(2):
        (rec,) = slurm.job_history(job_ids=[5])
        assert (rec.sluid, rec.comment) == (("s1J3QZ8KXW0Y2R" if listed else None), "a|b")
    calls = (tmp_path / "sacct.calls").read_text().splitlines()
    assert calls.count("--helpformat") == 1 and len(calls) == 3
    assert ("SLUID,Comment" in calls[1]) is listed


@pytest.mark.parametrize(("script", "has", "asked"), [
    ('echo "JobId SLUID State"', True, 1),                                         # 25.11+: read once
    ("echo \"squeue: unrecognized option '--helpFormat'\" >&2; exit 1", False, 1),  # 22.05: none, remembered
    ('echo "slurm_load_jobs error: Socket timed out" >&2; exit 1', False, 3),      # a failure: asked again
])
def test_squeue_fields_are_read_once_and_a_failure_is_not_remembered(tmp_path: Path, script: str, has: bool,
                                                                     asked: int) -> None:
    fake(tmp_path, "squeue", f'echo "$*" >> {tmp_path}/squeue.calls\n{script}')
    slurm = CliSlurm(bin_dir=str(tmp_path))
    assert [slurm.squeue_has("SLUID") for _ in range(3)] == [has] * 3
    assert (tmp_path / "squeue.calls").read_text().splitlines() == ["--helpFormat"] * asked
