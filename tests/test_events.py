"""The ledger's event kinds (ledger/events.py): one definition each, refused fields, enums, and spool files
written by the previous version still shipping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.diagnosis.findings import ACTIONS, TRUSTS, Finding
from slurmtools.ledger import db, events, fields, models
from slurmtools.ledger.ship import flush
from slurmtools.ledger.spool import Event, Spool

FINDING = {"node": "n1", "source": "kernel", "kind": "xid", "xid": 79, "category": "hardware",
           "severity": "critical", "action": "drain_node", "trust": "kernel", "message": "fell off the bus"}


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Spool, object]:
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", f"sqlite:///{tmp_path}/ledger.db")
    monkeypatch.setenv("SLURMTOOLS_SPOOL_DIR", str(tmp_path / "spool"))
    config.reset()
    return Spool(tmp_path / "spool"), db.make_engine(f"sqlite:///{tmp_path}/ledger.db")


def test_every_kind_has_one_definition_matching_its_table() -> None:
    from slurmtools.ledger import store

    tables = {**store.SINGLE, **store.BULK, **store.AFTER}
    assert set(fields.FIELDS) == set(tables) == set(events.EventType)
    for kind, model in {"finding": models.Finding, "attempt": models.JobAttempt, "gate_run": models.GateRun,
                        "node_state": models.NodeStateChange, "node_event": models.NodeEvent,
                        "exclusion": models.Exclusion, "chain": models.RetryChain,
                        "decision": models.ControllerDecision, "io": models.IoSummary,
                        "checkpoint": models.CheckpointEvent, "perf": models.PerfResult}.items():
        columns = {c.name for c in model.__table__.columns if not c.info.get("derived")} - {
            "id", "idempotency_key", "cluster"}
        assert fields.FIELDS[kind] == columns, kind


def test_construction_refuses_an_unknown_field_or_value() -> None:
    with pytest.raises(ValueError, match="a finding event has no field 'colour'"):
        Event("finding", {**FINDING, "colour": "red"})
    with pytest.raises(ValueError, match="trust 'gossip' is none of"):
        Event("finding", {**FINDING, "trust": "gossip"})
    with pytest.raises(ValueError, match="unknown event type"):
        Event("findings", FINDING)
    assert Event("finding", {**FINDING, "action": "soft_exclude", "trust": "metrics"}).data["trust"] == "metrics"


def test_detects_values_are_allowed_and_rank_between_investigate_and_reset() -> None:
    assert "soft_exclude" in ACTIONS and "metrics" in TRUSTS
    soft = Finding("anomaly", "hardware", "soft_exclude", "warning", "metrics", "m")
    assert Finding("x", "hardware", "investigate", "warning", "kernel", "m").rank() < soft.rank() \
        < Finding("x", "hardware", "reset_gpu", "warning", "kernel", "m").rank()


def test_an_unknown_field_in_a_spool_file_goes_to_bad_with_the_reason(ledger: tuple[Spool, object]) -> None:
    spool, engine = ledger
    spool.ensure()
    good = Event("finding", FINDING, cluster="c", key="k-good").to_json()
    bad = json.loads(Event("finding", FINDING, cluster="c", key="k-bad").to_json())
    bad["data"]["severty"] = "critical"                       # a misspelt column, written by hand
    (spool.pending / "00000000000000000001-x.json").write_text(good + "\n" + json.dumps(bad) + "\n")
    result = flush(spool, engine)  # type: ignore[arg-type]
    assert (result.shipped, result.quarantined) == (1, 1)
    (kept,) = [p for p in spool.bad.iterdir() if p.suffix == ".json"]
    assert Event.from_json(kept.read_text()).key == "k-bad"
    assert "no field 'severty'" in (spool.bad / (kept.name + ".why")).read_text()


#: Lines as the previous version wrote them (before ledger/events.py): a hook's attempt, finding and gate run, an
#: io event whose non-finite number was nulled (`nonfinite`, kept under details), a drain's node_state.
OLD_FILE = "\n".join([
    '{"v":1,"type":"attempt","key":"a1","cluster":"c","time":"2026-11-01T10:00:00+00:00","data":{"job_id":42,'
    '"restart_count":0,"end_time":"2026-11-01 10:00:00+00:00","exit_code":1,"exit_signal":0,"nodes":"n1",'
    '"user":"ann","partition":null,"source":"epilog","details":{"epilog":{"n1":{"findings":1}},"comment":""}}}',
    '{"v":1,"type":"finding","key":"f1","cluster":"c","time":"2026-11-01T10:00:00+00:00","data":{"node":"n1",'
    '"job_id":42,"restart_count":0,"source":"kernel","kind":"xid","xid":79,"pci":"0000:3b:00","gpu":null,'
    '"category":"hardware","severity":"critical","action":"drain_node","trust":"kernel","message":"off the bus",'
    '"details":{"line":3,"log_time":null,"count":1}}}',
    '{"v":1,"type":"gate_run","key":"g1","cluster":"c","time":"2026-11-01T09:00:00+00:00","data":{"node":"n1",'
    '"job_id":42,"profile":"prolog","verdict":"fail","duration_ms":12,"failed_checks":"gpu","details":{}}}',
    '{"v":1,"type":"io","key":"i1","cluster":"c","time":"2026-11-01T10:00:00+00:00","data":{"node":"n1",'
    '"job_id":42,"restart_count":0,"mountpoint":"/nfs","device":"s:/e","seconds":60.0,"read_bytes":1,'
    '"write_bytes":2,"read_ops":1,"write_ops":1,"rtt_ms":null,"queue_ms":null,"retransmissions":0,'
    '"mean_backlog":null,"limit":null,"details":{},"nonfinite":["rtt_ms"]}}',
    '{"v":1,"type":"node_state","key":"d1","cluster":"c","time":"2026-11-01T10:00:01+00:00","data":{"node":"n1",'
    '"action":"drain","actor":"epilog","reason":"slurmtools: hardware: XID 79","applied":true,'
    '"details":{"outcome":"drained","detail":"","job_id":"42"}}}']) + "\n"


def test_spool_files_of_the_previous_version_still_ship(ledger: tuple[Spool, object]) -> None:
    spool, engine = ledger
    spool.ensure()
    (spool.pending / "00000000000000000001-old.json").write_text(OLD_FILE)
    result = flush(spool, engine)  # type: ignore[arg-type]
    assert (result.shipped, result.quarantined, result.left) == (5, 0, 0)
    with Session(engine) as s:  # type: ignore[call-overload]
        f = s.scalars(select(models.Finding)).one()
        io = s.scalars(select(models.IoSummary)).one()
        assert (f.job_id, f.attempt_id is not None, f.trust) == (42, True, "kernel")
        assert io.rtt_ms is None and io.details["nonfinite"] == ["rtt_ms"]
        assert s.scalars(select(models.NodeStateChange)).one().action == "drain"
