"""The epilog hook and the drain safety rails, with fake Slurm executables (the lowest boundary)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from slurmtools import config, drain, jobstate
from slurmtools.diagnosis import sources
from slurmtools.hooks import epilog
from slurmtools.ledger.spool import Spool

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python3, GPU has fallen off the bus."


def sinfo_json(nodes: list[tuple[str, str, list[str], str]]) -> str:
    return json.dumps({"errors": [], "nodes": [
        {"name": n, "state": st, "state_flags": fl, "reason": r, "reason_set_by_user": "root" if r else None,
         "reason_changed_at": 0, "partitions": ["gpu"], "gres": "gpu:8"} for n, st, fl, r in nodes]})


@pytest.fixture
def lab_like(tmp_path: Path) -> dict[str, Path]:
    """A node's world: a kernel log file, a state dir, a spool, and fake sinfo/scontrol."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo.json").write_text(sinfo_json([(f"n{i}", "idle", [], "") for i in range(1, 11)]))
    for tool, body in {"sinfo": f"cat {bin_dir}/sinfo.json",
                       "scontrol": f'printf "%s\\n" "$@" >> {bin_dir}/scontrol.calls'}.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    kern = tmp_path / "kern.log"
    kern.write_text(f"[10.0] {XID79.replace('python3', 'old-job')}\n")  # before the job
    cfg_file = tmp_path / "slurmtools.toml"
    cfg_file.write_text(f"""
[general]
cluster = "t"
[ledger]
url = "sqlite:///{tmp_path}/ledger.db"
spool_dir = "{tmp_path}/spool"
[slurm]
backend = "cli"
bin_dir = "{bin_dir}"
[node]
kernel_log = "file:{kern}"
state_dir = "{tmp_path}/state"
""")
    return {"bin": bin_dir, "kern": kern, "cfg": cfg_file, "spool": tmp_path / "spool", "root": tmp_path}


def env(job: str = "42", exit_raw: int = 9, node: str = "n1", **extra: str) -> dict[str, str]:
    return {"SLURM_JOB_ID": job, "SLURMD_NODENAME": node, "SLURM_NODELIST": "n[1-2]", "SLURM_JOB_EXIT_CODE": str(
        exit_raw), "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": str(os.getuid()),
            "SLURM_SCRIPT_CONTEXT": "epilog_slurmd", **extra}


def spooled(w: dict[str, Path]) -> list[dict[str, object]]:
    spool = Spool(w["spool"])
    return [{"type": e.type, **e.data} for p in spool.pending_files() for e in spool.read(p)]


def calls(w: dict[str, Path]) -> list[str]:
    path = w["bin"] / "scontrol.calls"
    return path.read_text().splitlines() if path.exists() else []


def run(w: dict[str, Path], e: dict[str, str], **overrides: object) -> int:
    cfg = config.load(w["cfg"], env={})
    for dotted, value in overrides.items():
        section, key = dotted.split("__")
        setattr(getattr(cfg, cfg.attribute(section)), key, value)
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    return epilog.run(e, cfg)


@pytest.fixture(autouse=True)
def _no_background_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(epilog.api, "flush_in_background", lambda: None)


def append(path: Path, line: str) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")


def test_xid79_drains_with_our_reason_and_records_everything(lab_like: dict[str, Path]) -> None:
    cfg = config.load(lab_like["cfg"], env={})
    e = env()
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    append(lab_like["kern"], f"[20.0] {XID79}")
    assert epilog.run(e, cfg) == 0
    assert calls(lab_like) == ["update", "nodename=n1", "state=drain",
                               "reason=slurmtools: hardware: XID 79 GPU 0000:3b:00: GPU has fallen off the bus "
                               "[job 42]"]
    events = spooled(lab_like)
    kinds = [(ev["type"], ev.get("kind") or ev.get("action")) for ev in events]
    assert ("attempt", None) in kinds and ("finding", "xid") in kinds and ("finding", "exit") in kinds
    assert ("node_state", "drain") in kinds
    xid = next(ev for ev in events if ev.get("kind") == "xid")
    assert xid["xid"] == 79 and xid["node"] == "n1" and xid["job_id"] == 42 and xid["trust"] == "kernel"
    assert sum(1 for ev in events if ev.get("kind") == "xid") == 1  # the pre-job XID 79 is outside the window
    state = next(ev for ev in events if ev["type"] == "node_state")
    assert state["applied"] is True and state["actor"] == "epilog"


def test_application_xid_does_not_drain(lab_like: dict[str, Path]) -> None:
    cfg = config.load(lab_like["cfg"], env={})
    e = env(exit_raw=256)
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    append(lab_like["kern"], "[20.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=7, name=python3, Graphics Exception")
    assert epilog.run(e, cfg) == 0
    assert calls(lab_like) == []
    xid = next(ev for ev in spooled(lab_like) if ev.get("kind") == "xid")
    assert xid["category"] == "application"


def test_job_output_never_drains(lab_like: dict[str, Path]) -> None:
    out = lab_like["root"] / "job.out"
    out.write_text("RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    assert run(lab_like, env(exit_raw=256, SLURM_JOB_STDOUT=str(out))) == 0
    assert calls(lab_like) == []
    cuda = next(ev for ev in spooled(lab_like) if ev.get("kind") == "cuda")
    assert cuda["trust"] == "job" and cuda["source"] == "job-log"


def test_job_output_symlink_is_not_followed(lab_like: dict[str, Path]) -> None:
    secret = lab_like["root"] / "secret"
    secret.write_text("CUDA error: root-only secret\n")
    link = lab_like["root"] / "job.out"
    link.symlink_to(secret)
    run(lab_like, env(exit_raw=256, SLURM_JOB_STDOUT=str(link)))
    assert not any("secret" in str(ev.get("message")) for ev in spooled(lab_like))


def test_observe_mode_records_but_does_not_drain(lab_like: dict[str, Path]) -> None:
    cfg = config.load(lab_like["cfg"], env={})
    cfg.general.observe = True
    e = env()
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    append(lab_like["kern"], f"[20.0] {XID79}")
    epilog.run(e, cfg)
    assert calls(lab_like) == []
    state = next(ev for ev in spooled(lab_like) if ev["type"] == "node_state")
    assert state["applied"] is False and state["details"]["outcome"] == "observe"  # type: ignore[index]


def test_internal_error_is_recorded_never_drains(lab_like: dict[str, Path]) -> None:
    fifo = lab_like["root"] / "hung.log"
    os.mkfifo(fifo)  # opening it for reading blocks forever, like a hung source
    cfg = config.load(lab_like["cfg"], env={})
    cfg.nodes["n1"] = cfg.node_defaults.replace(kernel_log=f"file:{fifo}")
    cfg.diagnosis.time_budget = 0.5
    assert epilog.run(env(), cfg) == 0
    assert calls(lab_like) == []
    internal = next(ev for ev in spooled(lab_like) if ev.get("kind") == "internal")
    assert "time budget" in str(internal["message"])


def test_admin_drain_is_untouchable_and_breaker_stops_mass_drains(lab_like: dict[str, Path]) -> None:
    cfg = config.load(lab_like["cfg"], env={})
    from slurmtools.slurm import CliSlurm

    slurm = CliSlurm(bin_dir=str(lab_like["bin"]))
    (lab_like["bin"] / "sinfo.json").write_text(sinfo_json(
        [("n1", "idle", ["DRAIN"], "admin: reseating cables")] + [(f"n{i}", "idle", [], "") for i in range(2, 11)]))
    decision, _ = drain.request_drain("n1", "hardware", "x", job_id=1, actor="t", cfg=cfg, slurm=slurm)
    assert decision.outcome == "not_ours" and calls(lab_like) == []
    ours = [(f"n{i}", "idle", ["DRAIN"], f"slurmtools: hardware: xid [job {i}]") for i in (1, 2)]
    (lab_like["bin"] / "sinfo.json").write_text(sinfo_json(ours + [(f"n{i}", "idle", [], "") for i in range(3, 11)]))
    decision, events = drain.request_drain("n3", "hardware", "x", job_id=3, actor="t", cfg=cfg, slurm=slurm)
    assert decision.outcome == "breaker_open" and not decision.applied and calls(lab_like) == []
    assert "circuit breaker" in events[0].data["details"]["detail"]
    assert [e.type for e in events] == ["node_state"]      # refused: no exclusion
    rest = [(f"n{i}", "idle", [], "") for i in range(2, 11)]
    (lab_like["bin"] / "sinfo.json").write_text(sinfo_json(ours[:1] + rest))
    decision, events = drain.request_drain("n3", "hardware", "x", job_id=3, actor="t", cfg=cfg, slurm=slurm)
    assert decision.outcome == "drained" and calls(lab_like)[1] == "nodename=n3"
    assert [(e.type, e.data.get("scope")) for e in events] == [("node_state", None), ("exclusion", "drain")]


def test_reason_protocol() -> None:
    r = drain.make_reason("slurmtools:", "hardware", "XID 79 GPU 0000:3b:00: GPU has fallen off the bus\n", 42)
    assert r == "slurmtools: hardware: XID 79 GPU 0000:3b:00: GPU has fallen off the bus [job 42]"
    long = drain.make_reason("slurmtools:", "network", "x" * 500, 7)
    assert len(long) == drain.MAX_REASON and long.endswith("... [job 7]")


def test_the_epilog_leaves_a_marker_for_an_attempt_whose_prolog_slurmd_skipped(lab_like: dict[str, Path]) -> None:
    """A requeued attempt that lands on the same node while its credential is cached gets no prolog (Slurm
    22.05 on the lab: "reissued job credential"); its epilog must still read only its own window."""
    cfg = config.load(lab_like["cfg"], env={})
    e = env()
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    marker = lab_like["root"] / "state" / "jobs" / "42.n1.json"
    assert json.loads(marker.read_text())["offset"] == lab_like["kern"].stat().st_size
    with lab_like["kern"].open("a") as fh:        # attempt 1 is killed by an XID 79
        fh.write("[ 200.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n")
    epilog.run(e, cfg)
    assert json.loads(marker.read_text())["offset"] == lab_like["kern"].stat().st_size   # where it stopped
    drained = calls(lab_like)
    assert "nodename=n1" in drained and "state=drain" in drained
    epilog.run(e, cfg)                             # attempt 2: no prolog ran; the old XID is not its own
    assert calls(lab_like) == drained              # no second drain
    os.utime(marker, (0, 0))                       # a week later: pruned by the next epilog
    assert jobstate.prune(str(lab_like["root"] / "state")) == 1 and not marker.exists()
    shutil.rmtree(lab_like["root"] / "state")


def test_epilog_writes_node_exporters_textfile(lab_like: dict[str, Path]) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    tf = lab_like["root"] / "textfile"
    tf.mkdir(mode=0o755)
    e = env()
    cfg = config.load(lab_like["cfg"], env={})
    cfg.metrics.textfile_dir = str(tf)
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    append(lab_like["kern"], f"[20.0] {XID79}")
    assert epilog.run(e, cfg) == 0
    m = {(s.name, tuple(sorted(s.labels.items()))): s.value
         for fam in text_string_to_metric_families((tf / "slurmtools_epilog.prom").read_text()) for s in fam.samples}
    assert m[("slurmtools_hook_epilog_findings", (("category", "hardware"), ("severity", "critical")))] == 1.0
    assert m[("slurmtools_hook_epilog_internal_error", ())] == 0.0
    assert 0 <= m[("slurmtools_hook_epilog_duration_seconds", ())] < 60


def test_an_unrecognised_hardware_error_is_recorded_and_never_drains(lab_like: dict[str, Path]) -> None:
    """The subsystem fallback's finding goes to the ledger like any finding (details.unrecognised), no drain."""
    cfg = config.load(lab_like["cfg"], env={})
    e = env(exit_raw=0)
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    append(lab_like["kern"], "[20.0] EDAC skx: the memory controller interface failed to respond at 0x7f00")
    assert epilog.run(e, cfg) == 0
    assert calls(lab_like) == []
    [f] = [ev for ev in spooled(lab_like) if ev["type"] == "finding" and ev.get("kind") == "mce"]
    assert (f["severity"], f["action"], f["trust"]) == ("warning", "investigate", "kernel")
    details = f["details"]
    assert isinstance(details, dict)
    assert details["unrecognised"] is True and details["subsystem"] == "machine-check"
    assert details["family"] == "EDAC skx: the memory controller interface failed to respond at <hex>"


def test_a_hostile_job_id_is_one_line_and_no_traceback(lab_like: dict[str, Path],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """SLURM_JOB_ID is parsed once (hooks/context.py): one that is not a number is said in one line; the node's
    evidence is still read and recorded (the kernel log's tail), no attempt is made up with job id 0."""
    cfg = config.load(lab_like["cfg"], env={})
    append(lab_like["kern"], f"[20.0] {XID79}")
    assert epilog.run(env(job="42; rm -rf /" + "x" * 100_000, SLURM_JOB_RESTART_COUNT="-1"), cfg) == 0
    out = capsys.readouterr().out
    assert "SLURM_JOB_ID is not a number" in out and "SLURM_JOB_RESTART_COUNT is not a number" in out
    assert max(len(line) for line in out.splitlines()) < 300
    events = spooled(lab_like)
    assert [e["type"] for e in events if e["type"] == "attempt"] == []
    assert {e["job_id"] for e in events if e["type"] == "finding"} == {None}


#: Two runs' SLURM_JOB_SLUID as Slurm 25.11 prints them (src/common/sluid.c: "s" and 13 base-32 digits).
SLUID_A, SLUID_B = "s1J3QZ8KXW0Y2R", "s1J3QZ9B4M7N0C"


def test_a_reused_job_id_with_its_own_sluid_is_another_run_in_the_ledger(lab_like: dict[str, Path]) -> None:
    """Slurm 25.11+ gives each run a SLUID: job 42 run twice under the same id and restart count (the id reused
    after a controller's state was lost) is two attempts, each with its own findings, where without the SLUID the
    second run's attempt and exit finding were taken for the first's duplicates."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import db, models
    from slurmtools.ledger.ship import flush

    for sluid, node in ((SLUID_A, "n1"), (SLUID_A, "n2"), (SLUID_B, "n1")):
        assert run(lab_like, env(node=node, SLURM_JOB_SLUID=sluid)) == 0
    events = spooled(lab_like)
    assert {ev.get("sluid") for ev in events if ev["type"] in {"attempt", "finding"}} == {SLUID_A, SLUID_B}
    engine = db.make_engine(f"sqlite:///{lab_like['root']}/ledger.db")
    flush(Spool(lab_like["spool"]), engine)
    with Session(engine) as s:
        attempts = s.scalars(select(models.JobAttempt).order_by(models.JobAttempt.id)).all()
        assert [(a.job_id, a.restart_count, a.sluid) for a in attempts] == [(42, 0, SLUID_A), (42, 0, SLUID_B)]
        assert sorted(attempts[0].details["epilog"]) == ["n1", "n2"]   # one run's two nodes: one row
        by_run = {a.id: a.sluid for a in attempts}
        exits = s.scalars(select(models.Finding).where(models.Finding.kind == "exit")).all()
        assert sorted((f.node, f.sluid, by_run[f.attempt_id]) for f in exits if f.attempt_id is not None) == [
            ("n1", SLUID_A, SLUID_A), ("n1", SLUID_B, SLUID_B), ("n2", SLUID_A, SLUID_A)]


def test_without_a_sluid_events_and_keys_are_as_before(lab_like: dict[str, Path]) -> None:
    """22.05 and 24.11 give no SLURM_JOB_SLUID: no sluid field, and the keys spool files already hold."""
    from slurmtools.ledger.spool import make_key

    assert run(lab_like, env()) == 0
    spool = Spool(lab_like["spool"])
    attempt = next(e for p in spool.pending_files() for e in spool.read(p) if e.type == "attempt")
    assert "sluid" not in attempt.data and attempt.key == make_key("epilog-attempt", "t", "42", 0, "n1")
