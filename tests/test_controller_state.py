"""The controller's state (controller/state.py): rows the previous version wrote are read and acted on, the state
machine refuses a move it does not have, and a pass whose stage fails still runs the others, naming the stage."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools.controller import state
from slurmtools.controller.engine import Controller
from slurmtools.ledger import api, models
from slurmtools.slurm import SlurmError

from .fakes import FakeSlurm
from .test_controller import decisions, ended

#: `details` as the previous version wrote them (controller/decide.py, act.py, resubmit.py, evacuate.py before the
#: typed state): a resubmission verified after one failed try, and an evacuation under way.
OLD_RESUBMITTED = {
    "classification": {"kind": "node_fault", "why": "hardware fault on n2: XID 79", "implicated": ["n2"],
                       "evidence": [3]},
    "decision": {"action": "retry", "reason": "node fault", "exclude": ["n2"], "delay_s": 0.0,
                 "chain_status": "active"},
    "ask": "slurmtools=retry:2", "state": None, "exit": "signal 9", "missing_epilogs": [],
    "item": {"job_id": 7, "restart_count": 0, "nodes": "n[1-2]"},
    "resubmit": {"submitting": 1764000000.5, "user": "alice", "argv": ["--exclude=n2", "/tmp/x.sh"],
                 "job_id": 12},
    "act_tries": 2, "errors": [{"time": "2026-11-20T10:00:00+00:00", "error": "sbatch: slurmctld busy"}],
    "future_key": {"kept": True},
}
OLD_EVACUATING = {"evacuate": {"signal": "USR1", "grace": 30.0, "nodes": ["n1"], "signalled": 1764000000.0},
                  "decision": {"delay_s": 0}, "state": "RUNNING"}


def test_a_previous_versions_details_read_typed_and_write_back_the_same() -> None:
    d = state.load(OLD_RESUBMITTED)
    assert d.resubmitted_as == 12 and d.resubmit is not None and d.resubmit.user == "alice"
    assert (d.act_tries, d.delay_s, d.classification and d.classification["implicated"]) == (2, 0.0, ["n2"])
    assert d.extra == {"future_key": {"kept": True}}          # a key this version does not know is kept
    # written back: every key with a value, as it was (a None the old version wrote is simply left out)
    assert state.dump(d) == {k: v for k, v in OLD_RESUBMITTED.items() if v is not None}
    e = state.load(OLD_EVACUATING)
    assert e.evacuate == state.Evacuate(signal="USR1", grace=30.0, nodes=["n1"], signalled=1764000000.0)
    assert state.dump(e) == OLD_EVACUATING
    # the resubmission marker the previous version wrote before sbatch ran: an empty dict, which still says so
    assert state.load({"resubmit": {}}).resubmit == state.Resubmit()
    assert state.dump(state.load({"resubmit": {}})) == {"resubmit": {}}
    assert state.load(None) == state.Details() and state.dump(state.Details()) == {}


def test_a_resubmission_recorded_by_the_previous_version_is_followed_to_its_new_job(world: dict[str, Any]) -> None:
    """A row the previous version left `done` with its resubmission's job id: the next pass stamps t_running when
    the new job starts, and `why` tells the chain through the new job."""
    from slurmtools.jobs import status as jobstatus

    slurm, cfg = world["slurm"], world["cfg"]
    now = datetime.now(UTC)
    with Session(api.engine_for(cfg)) as s:
        s.add(models.ControllerDecision(
            idempotency_key="old-7-0", cluster=cfg.cluster, job_id=7, restart_count=0, chain_id=None,
            classification="node_fault", decision="retry", reason="hardware fault on n2", excluded_nodes="n2",
            status="done", t_ended=now - timedelta(minutes=5), t_detected=now - timedelta(minutes=5),
            t_decided=now - timedelta(minutes=4), t_released=now - timedelta(minutes=3), details=OLD_RESUBMITTED))
        s.commit()
    slurm.add_job(12, state="PENDING", nodes=())
    slurm.start(12, ("n3", "n4"))
    report = Controller(cfg, slurm=slurm, rng=random.Random(0), recovery=False).once()
    assert [(r["job_id"], r.get("resubmitted_from")) for r in report["running"]] == [(12, 7)]
    (d,) = decisions(world)
    assert d.t_running is not None and d.details == OLD_RESUBMITTED       # read, not rewritten
    with Session(api.engine_for(cfg)) as s:
        text = jobstatus.why(jobstatus.chain(s, cfg.cluster, 7, cfg=cfg))
    assert "resubmitted it as job 12" in text


def test_the_state_machine_refuses_a_move_it_does_not_have() -> None:
    class Row:
        job_id, restart_count, status = 7, 0, "evacuating"

    row = Row()
    state.move(row, state.Status.ACTING)
    state.move(row, state.Status.ACTING)                          # a failed try stays where it is
    state.move(row, state.Status.DONE)
    assert row.status == "done" and state.Status(row.status).final
    with pytest.raises(state.TransitionError, match="done cannot become acting"):
        state.move(row, state.Status.ACTING)


class BrokenSinfo(FakeSlurm):
    """An in-memory Slurm whose listing of all nodes fails (sinfo down), once told to."""

    broken = False

    def nodes(self, names: list[str] | None = None) -> list[Any]:
        if self.broken and names is None:
            raise SlurmError("sinfo: Unable to contact slurm controller")
        return super().nodes(names)


def test_a_failing_stage_is_named_and_the_others_still_run(world: dict[str, Any]) -> None:
    from slurmtools import drain

    slurm, cfg = BrokenSinfo(), world["cfg"]
    world["slurm"] = slurm
    _, evs = drain.request_drain("n3", "hardware", "XID 79", job_id=5, actor="epilog", cfg=cfg, slurm=slurm)
    api.record(evs, cfg)
    api.flush(cfg)
    slurm.add_job(7, comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry", xid_on=None, exit_raw=256)
    slurm.broken = True
    report = Controller(cfg, slurm=slurm, rng=random.Random(0), recovery=True,
                        deep_check=lambda node: ("ok", {})).once()
    assert {e["stage"] for e in report["errors"]} == {"evacuations", "breaker"}
    assert all(e["error"].startswith(f"{e['stage']}: SlurmError: sinfo") for e in report["errors"])
    assert [(d["job_id"], d["classification"]) for d in report["decisions"]] == [(7, "app_fault")]
    assert [(r["node"], r["verdict"]) for r in report["recovery"]] == [("n3", "ok")]   # after the failed stage
    assert report["breaker"]["open"] is None
    with Session(api.engine_for(cfg)) as s:
        assert s.scalar(select(models.ControllerDecision.status)) == "done"
