"""The parsers against output recorded from the lab (tests/data/slurm/record.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmtools.slurm import ExitStatus, SlurmParseError, collect, expand, parse


def nodes_output(slurm_data: Path) -> str:
    """What CliSlurm.nodes reads on that release: `scontrol show node --json` (23.02+), else `sinfo --json`."""
    newer = slurm_data / "scontrol-show-node.json"
    return (newer if newer.exists() else slurm_data / "sinfo.json").read_text()


def test_sinfo_drained_draining_idle(slurm_data: Path) -> None:
    nodes = {n.name: n for n in parse.parse_sinfo_json(nodes_output(slurm_data))}
    assert list(nodes) == ["n1", "n2", "n3", "n4"]
    n3, n4, n1 = nodes["n3"], nodes["n4"], nodes["n1"]
    assert n3.state == "idle" and n3.flags == ("DRAIN",) and n3.drained and not n3.draining
    assert n3.reason.startswith("slurmtools: hardware: xid 79") and n3.reason_user == "root"
    assert n3.reason_time is not None and n3.reason_time.year == 2026
    assert n4.state == "mixed" and n4.draining and not n4.drained and n4.reason == "admin: cable reseat"
    assert n1.state == "mixed" and not n1.drain and n1.reason == "" and n1.reason_user is None
    assert n1.gres == "gpu:4" and "gpu" in n1.partitions


def ids(slurm_data: Path) -> dict[str, int]:
    """Which recorded job played which role (written by record.sh)."""
    return json.loads((slurm_data / "jobs.json").read_text())


def test_squeue_states_exit_codes_and_hostlists(slurm_data: Path) -> None:
    jobs = {j.job_id: j for j in parse.parse_squeue_json((slurm_data / "squeue.json").read_text())}
    role = ids(slurm_data)
    failed = jobs[role["exit3"]]
    assert failed.state == "FAILED" and failed.exit == ExitStatus(3, 0) and failed.nodes == ("n1",)
    signalled = jobs[role["signal"]]
    assert signalled.exit == ExitStatus(0, 9)
    running = jobs[role["running"]]
    assert running.state == "RUNNING" and running.nodes == ("n1", "n2")
    assert running.excluded_nodes == ("n4",) and running.comment == "slurmtools:retry=3,on=node"
    assert running.end_time is None and running.start_time is not None
    requeued = jobs[role["requeued"]]
    assert requeued.state == "RUNNING" and requeued.restart_count == 1 and requeued.nodes == ("n2",)
    assert requeued.requeue and failed.finished and not running.finished


def test_sacct_attempts_of_requeued_job(slurm_data: Path) -> None:
    records = parse.parse_sacct((slurm_data / "sacct.txt").read_text())
    role = ids(slurm_data)
    requeued = [r for r in records if r.job_id_raw == role["requeued"]]
    assert [(r.attempt, r.state) for r in requeued] == [(0, "REQUEUED"), (1, "RUNNING")]
    assert requeued[0].nodes == ("n2",) and requeued[0].end_time is not None
    failed = next(r for r in records if r.job_id_raw == role["exit3"])
    assert failed.state == "FAILED" and failed.exit == ExitStatus(3, 0)
    signalled = next(r for r in records if r.job_id_raw == role["signal"])
    assert signalled.state == "FAILED" and signalled.exit == ExitStatus(0, 9)
    running = next(r for r in records if r.job_id_raw == role["running"])
    assert running.state == "RUNNING" and running.end_time is None and running.nodes == ("n1", "n2")
    never_ran = [r for r in records if r.nodes == ()]
    assert never_ran and all(r.elapsed_s == 0 for r in never_ran)
    assert any(r.state == "CANCELLED" and r.comment == "slurmtools:retry=3,on=node" for r in records)


def test_sacct_rejects_missing_fields() -> None:
    with pytest.raises(SlurmParseError, match="lacks fields"):
        parse.parse_sacct("JobID|State\n1|FAILED\n")


def test_sacct_pipe_in_comment_kept() -> None:
    header = "|".join(parse.SACCT_FIELDS)
    row = ("5|5|x|root|FAILED|1:0|0:0|n1|2026-11-22T03:12:44|2026-11-22T03:12:45|2026-11-22T03:12:46"
           "|1|gpu|1|None|/tmp|a|b")
    rec = parse.parse_sacct(f"{header}\n{row}\n")[0]
    assert rec.work_dir == "/tmp" and rec.comment == "a|b"


def test_sacct_sluid_of_each_run_where_listed() -> None:
    """25.11's sacct lists each run's SLUID (src/sacct/sacct.c): read where it is a SLUID, None otherwise and on
    releases whose sacct has no such field."""
    fields = [*parse.SACCT_FIELDS[:-1], "SLUID", "Comment"]
    rows = [f"5|5|x|root|{state}|1:0|0:0|n1|2026-11-22T03:12:4{i}|2026-11-22T03:12:45|2026-11-22T03:12:46"
            f"|1|gpu|1|None|/tmp|{sluid}|a|b" for i, (state, sluid) in enumerate(
                (("REQUEUED", "s1J3QZ8KXW0Y2R"), ("FAILED", "s1J3QZ9B4M7N0C"), ("FAILED", "s0/../x")))]
    recs = parse.parse_sacct("|".join(fields) + "\n" + "\n".join(rows) + "\n")
    assert [(r.attempt, r.sluid) for r in recs] == [(0, "s1J3QZ8KXW0Y2R"), (1, "s1J3QZ9B4M7N0C"), (2, None)]
    assert recs[0].comment == "a|b"
    old = parse.parse_sacct("|".join(parse.SACCT_FIELDS) + "\n" + rows[0].replace("|s1J3QZ8KXW0Y2R", "") + "\n")
    assert old[0].sluid is None and old[0].comment == "a|b"


def test_sacctmgr_events(slurm_data: Path) -> None:
    events = parse.parse_sacctmgr_events((slurm_data / "sacctmgr-events.txt").read_text())
    assert events and all(e.node == "n3" for e in events)  # the cluster-level TRES event is skipped
    assert events[0].end is not None and events[-1].end is None
    assert events[0].reason.startswith("slurmtools: hardware") and events[0].user == "root(0)"


def test_hostlists_roundtrip() -> None:
    assert expand("n[1-3],gpu[07-08]") == ("n1", "n2", "n3", "gpu07", "gpu08")
    assert expand("(null)") == () and expand("") == () and expand(None) == ()
    assert collect(["n3", "n1", "n2", "n1"]) == "n[1-3]"
    assert collect([]) == ""
    with pytest.raises(SlurmParseError):
        expand("n[1-")


@pytest.mark.parametrize("raw, expected", [(0, (0, 0)), (768, (3, 0)), (9, (0, 9)), (15, (0, 15)),
                                           (256, (1, 0)), (0x8B, (0, 11))])  # 0x8B: SIGSEGV + core dump
def test_wait_status(raw: int, expected: tuple[int, int]) -> None:
    assert ExitStatus.from_wait_status(raw) == ExitStatus(*expected)


@given(st.integers(min_value=0, max_value=255), st.integers(min_value=0, max_value=64))
def test_wait_status_roundtrip(code: int, sig: int) -> None:
    raw = sig if sig else code << 8
    status = ExitStatus.from_wait_status(raw)
    assert status == (ExitStatus(0, sig) if sig else ExitStatus(code, 0))
    assert ExitStatus.from_pair(str(status)) == status


def test_bad_inputs_are_parse_errors() -> None:
    with pytest.raises(SlurmParseError):
        parse.parse_sinfo_json("not json")
    with pytest.raises(SlurmParseError, match="Slurm reported errors"):
        parse.parse_squeue_json('{"errors": [{"error": "boom"}], "jobs": []}')
    with pytest.raises(ValueError):
        ExitStatus.from_pair("abc")
    assert parse.parse_sbatch_parsable("42;lab\n") == 42
    with pytest.raises(SlurmParseError):
        parse.parse_sbatch_parsable("Submitted batch job 42")


def test_scontrol_oneliner(slurm_data: Path) -> None:
    role = ids(slurm_data)
    lines = {f["JobId"]: f for f in map(parse.parse_scontrol_oneliner,
                                         (slurm_data / "scontrol-show-job.txt").read_text().splitlines())}
    running, failed = lines[str(role["running"])], lines[str(role["exit3"])]
    assert running["JobState"] == "RUNNING" and running["ExcNodeList"] == "n4"
    assert running["Comment"] == "slurmtools:retry=3,on=node" and running["NodeList"] == "n[1-2]"
    assert failed["JobState"] == "FAILED" and failed["ExitCode"] == "3:0"


def test_a_job_whose_epilogs_run_is_completing_on_every_release() -> None:
    """Recorded on the 24.11 lab while the epilog ran: job_state ["FAILED", "COMPLETING"]. 22.05 says COMPLETING;
    the controller waits for it (the node epilogs' evidence), and so do the tests' cleanups."""
    (job,) = parse.parse_squeue_json((Path(__file__).parent / "data" / "slurm" / "24.11" /
                                      "squeue-completing.json").read_text())
    assert job.state == "COMPLETING" and not job.finished and job.exit == ExitStatus(1, 0)
    assert parse.job_state(["RUNNING", "CONFIGURING"]) == "CONFIGURING" and parse.job_state(["FAILED"]) == "FAILED"
    assert parse.job_state("COMPLETING") == "COMPLETING" and parse.job_state([]) == ""


def test_epoch_zero_is_unset_in_both_json_generations() -> None:
    """A node never given a reason: 22.05 says 0, 23.02+ {"set": true, "number": 0}; neither is 1970."""
    from slurmtools.slurm.parse import epoch

    assert epoch(0) is None and epoch({"set": True, "number": 0}) is None and epoch({"set": False}) is None
    assert epoch({"set": True, "number": 1700000000}).year == 2023  # type: ignore[union-attr]


@pytest.mark.parametrize(("job", "sluid"), [
    ({"step_id": {"sluid": "s0A1B2C3D4E5F6", "job_id": 5, "step_id": "batch"}}, "s0A1B2C3D4E5F6"),   # 25.11+
    ({"step_id": {"sluid": "garbage"}}, None),
    ({"step_id": {"sluid": ""}}, None),
    ({"step_id": "5.batch"}, None),
    ({}, None),                                                                                      # 22.05-24.11
])
def test_squeue_json_gives_the_runs_sluid_where_the_release_has_one(job: dict[str, object], sluid: str | None) -> None:
    assert parse.job_from_json({"job_id": 5, "job_state": "RUNNING", **job}).sluid == sluid
