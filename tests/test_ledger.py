"""The ledger on SQLite: spool, idempotent shipping, concurrency, crashes, merges, schema drift."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.cli import main
from slurmtools.ledger import db, imports, models, schema
from slurmtools.ledger.ship import flush
from slurmtools.ledger.spool import Event, Spool, make_key

TRACE = Path(__file__).parent / "data" / "traces" / "infinitehbd_fault_trace.json"
WRITER = Path(__file__).parent / "ledger_writer.py"


@pytest.fixture
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"SLURMTOOLS_LEDGER_URL": f"sqlite:///{tmp_path}/ledger.db", "SLURMTOOLS_SPOOL_DIR": str(tmp_path / "spool")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    config.reset()
    return env


def engine(env: dict[str, str]):  # type: ignore[no-untyped-def]
    return db.make_engine(env["SLURMTOOLS_LEDGER_URL"])


def finding(i: int, node: str = "n1", **extra: object) -> Event:
    data = {"node": node, "source": "kernel", "kind": "xid", "xid": 79, "category": "hardware",
            "severity": "critical", "action": "drain_node", "trust": "kernel", "message": f"event {i}", **extra}
    return Event("finding", data, cluster="test", key=make_key("t", node, i))


def count(env: dict[str, str], model: type[models.Base] = models.Finding) -> int:
    with Session(engine(env)) as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_spool_then_flush_is_idempotent(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    for i in range(5):
        spool.write(finding(i))
    spool.write(finding(0))  # the same event spooled twice
    result = flush(spool, engine(ledger_env))
    assert (result.shipped, result.left, result.error) == (6, 0, None)
    assert count(ledger_env) == 5
    spool.write(finding(3))
    flush(spool, engine(ledger_env))
    assert count(ledger_env) == 5
    assert flush(spool, engine(ledger_env)).shipped == 0  # a second flush adds nothing
    with Session(engine(ledger_env)) as s:
        row = s.scalars(select(models.Finding).where(models.Finding.message == "event 2")).one()
        assert row.time.tzinfo is not None and row.xid == 79 and row.node == "n1"
        assert s.scalars(select(models.Node)).one().name == "n1"


def test_half_written_and_corrupt_files_never_block(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    spool.ensure()
    (spool.tmp / "00000000000000000001-dead.json.123").write_text('{"v":1,"type":"find')  # writer died here
    (spool.pending / "00000000000000000002-bad.json").write_text('{"v":1,"type":"finding","ke')
    (spool.pending / "00000000000000000003-wrong.json").write_text('{"v":1,"type":"nonsense","key":"k",'
                                                                   '"time":"2026-01-01T00:00:00","data":{}}')
    for i in range(3):
        spool.write(finding(i))
    result = flush(spool, engine(ledger_env))
    assert result.shipped == 3 and result.quarantined == 2 and result.left == 0
    assert count(ledger_env) == 3
    assert sorted(p.name for p in spool.bad.iterdir() if p.suffix == ".json") == [
        "00000000000000000002-bad.json", "00000000000000000003-wrong.json"]
    assert "unreadable event" in (spool.bad / "00000000000000000002-bad.json.why").read_text()
    assert spool.clean_tmp(older_than=0) == 1 and spool.counts()["tmp"] == 0


def test_rejected_event_is_quarantined_not_blocking(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    spool.write(finding(1))
    broken = Event("finding", {"node": "n2", "kind": "xid"}, cluster="test")  # lacks required columns
    spool.write_many([finding(2), broken, finding(3)])  # one batch file, one bad event in the middle
    spool.write(finding(4))
    result = flush(spool, engine(ledger_env))
    assert result.shipped == 4 and result.quarantined == 1 and result.left == 0
    assert count(ledger_env) == 4
    (kept,) = [p for p in spool.bad.iterdir() if p.suffix == ".json"]
    assert Event.from_json(kept.read_text()).key == broken.key
    assert "rejected by the database" in (spool.bad / (kept.name + ".why")).read_text()


def test_batch_file_is_kept_whole_while_the_database_is_down(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    spool.write_many([finding(i) for i in range(8)])
    down = db.make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    result = flush(spool, down, backoff=())
    assert result.error and result.left == 1 and result.shipped == 0
    assert len(spool.read(spool.pending_files()[0])) == 8
    assert flush(spool, engine(ledger_env)).shipped == 8 and count(ledger_env) == 8


def test_64_concurrent_writer_processes_sqlite(ledger_env: dict[str, str]) -> None:
    env = {**os.environ, **ledger_env}
    procs = [subprocess.Popen([sys.executable, str(WRITER), str(i), "5"], env=env, stderr=subprocess.PIPE,
                              text=True) for i in range(64)]
    errors = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    assert all(rc == 0 for rc, _ in errors), [e for e in errors if e[0]][:3]
    assert not any("locked" in err for _, err in errors)
    assert Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"]).counts()["pending"] == 0  # the writers shipped it all
    with Session(engine(ledger_env)) as s:
        messages = s.scalars(select(models.Finding.message)).all()
    assert len(messages) == 320 and len(set(messages)) == 320


def test_writer_killed_mid_write_loses_nothing_complete(ledger_env: dict[str, str]) -> None:
    env = {**os.environ, **ledger_env}
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, str(WRITER), "k", "1", "--loop", "--no-flush"], env=env)
        deadline = time.monotonic() + 20
        while spool.counts()["pending"] < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    complete = spool.counts()["pending"]  # one event per file in this writer's --loop mode
    assert complete >= 20
    result = flush(spool, engine(ledger_env))
    assert result.quarantined == 0 and result.left == 0
    assert result.shipped == complete
    # The writer's keys restart at 0 each run, so the distinct events are the longest run.
    assert 0 < count(ledger_env) <= complete


def test_attempt_from_epilog_and_sacct_merge(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    end = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    spool.write(Event("attempt", {"job_id": 42, "restart_count": 0, "end_time": end, "exit_code": 0,
                                  "exit_signal": 9, "nodes": "n2", "source": "epilog"}, cluster="lab", time=end))
    spool.write(Event("attempt", {"job_id": 42, "restart_count": 0, "submit_time": end - timedelta(hours=1),
                                  "start_time": end - timedelta(minutes=59), "end_time": end, "state": "FAILED",
                                  "exit_code": 0, "exit_signal": 9, "nodes": "n[1-2]", "source": "sacct"},
                      cluster="lab", time=end))
    spool.write(Event("attempt", {"job_id": 42, "restart_count": 1, "submit_time": end, "state": "RUNNING",
                                  "nodes": "n[3-4]", "source": "sacct"}, cluster="lab", time=end))
    spool.write(Event("finding", {"node": "n2", "job_id": 42, "restart_count": 0, "source": "kernel", "kind": "xid",
                                  "xid": 79, "category": "hardware", "severity": "critical", "action": "drain_node",
                                  "trust": "kernel", "message": "fell off the bus"}, cluster="lab"))
    flush(spool, engine(ledger_env))
    with Session(engine(ledger_env)) as s:
        attempts = s.scalars(select(models.JobAttempt).order_by(models.JobAttempt.restart_count)).all()
        assert [(a.restart_count, a.state, a.nodes) for a in attempts] == [(0, "FAILED", "n[1-2]"),
                                                                          (1, "RUNNING", "n[3-4]")]
        assert attempts[0].source == "epilog+sacct" and attempts[0].submit_time == end - timedelta(hours=1)
        assert s.scalars(select(models.Finding)).one().attempt_id == attempts[0].id


def test_gate_passes_are_counted_not_stored(ledger_env: dict[str, str]) -> None:
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    ok = [Event("gate_run", {"node": "n1", "profile": "prolog", "verdict": "ok", "duration_ms": 40},
                cluster="lab", key=f"ok{i}") for i in range(50)]
    for e in ok + ok[:10]:  # ten shipped twice
        spool.write(e)
    spool.write(Event("gate_run", {"node": "n1", "profile": "prolog", "verdict": "fail", "duration_ms": 55,
                                   "failed_checks": "gpu", "details": {"gpu": "row remap failure"}}, cluster="lab"))
    flush(spool, engine(ledger_env))
    with Session(engine(ledger_env)) as s:
        counter = s.scalars(select(models.GatePassCount)).one()
        assert counter.passes == 50 and counter.total_ms == 2000
        assert s.scalars(select(models.GateRun)).one().verdict == "fail"


def test_schema_sql_files_match_models() -> None:
    for name in schema.DIALECTS:
        path = schema.SQL_DIR / f"schema.{name}.sql"
        assert path.read_text() == schema.generate_sql(name), f"{path} drifted: run slurmtools.ledger.schema --write"


def test_migrations_match_models(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    assert schema.alembic_head() == schema.HEAD
    eng = db.make_engine(f"sqlite:///{tmp_path}/m.db")
    schema.upgrade(eng)
    assert schema.is_current(eng)
    with eng.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), models.Base.metadata)
    assert diff == []


def test_import_real_trace(ledger_env: dict[str, str]) -> None:
    events = imports.trace_events(TRACE, "infinitehbd")
    assert len(events) == 584
    assert len({e.data["node"] for e in events}) == 231
    first = min(events, key=lambda e: e.data["start"])
    assert first.data["start"].date().isoformat() == "2024-04-02" and first.data["category"] == "hardware"
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(main, ["ledger", "import-events", str(TRACE), "--cluster", "infinitehbd", "--json"])
        assert result.exit_code == 0, result.output
    assert count(ledger_env, models.NodeEvent) == 584
    with Session(engine(ledger_env)) as s:
        closed = s.scalar(select(func.count()).select_from(models.NodeEvent).where(models.NodeEvent.end.isnot(None)))
        assert closed == 584 - 14  # 14 faults are still open when the trace ends


def test_import_generic_formats_and_errors(ledger_env: dict[str, str], tmp_path: Path) -> None:
    csv_file = tmp_path / "t.csv"
    csv_file.write_text("node,start,end,category,description\ng1,2026-01-01T00:00:00,2026-01-01T05:00:00,"
                        "hardware,psu\ng2,2026-01-02,,network,link flap\n")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"node":"g3","start":1767225600,"end":1767229200,"category":"hardware","description":"x"}\n')
    assert len(imports.trace_events(csv_file, "c")) == 2
    assert imports.trace_events(jsonl, "c")[0].data["end"] - imports.trace_events(jsonl, "c")[0].data["start"] \
        == timedelta(hours=1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"node":"g1","start":"2026-01-01"}\n{not json\n')
    result = CliRunner().invoke(main, ["ledger", "import-events", str(bad)])
    assert result.exit_code == 1 and f"{bad}:2: not valid JSON" in result.output
    assert "Traceback" not in result.output


def test_cli_record_events_and_filters(ledger_env: dict[str, str]) -> None:
    runner = CliRunner()
    for node, kind in [("n1", "gpu_replaced"), ("n2", "cable_reseat"), ("n1", "note")]:
        result = runner.invoke(main, ["ledger", "record", "--node", node, "--kind", kind, "-m", "done",
                                      "--category", "hardware"])
        assert result.exit_code == 0, result.output
    out = runner.invoke(main, ["ledger", "events", "--node", "n1", "--json"])
    rows = json.loads(out.stdout)
    assert [r["kind"] for r in rows] == ["note", "gpu_replaced"] and rows[0]["trust"] == "admin"
    assert json.loads(runner.invoke(main, ["ledger", "events", "--kind", "cable_reseat", "--json"]).stdout)[0][
        "node"] == "n2"
    assert json.loads(runner.invoke(main, ["ledger", "events", "--since", "1h", "--json"]).stdout).__len__() == 3
    bad = runner.invoke(main, ["ledger", "events", "--since", "yesterday"])
    assert bad.exit_code == 2 and "not a time" in bad.output
    nodes = json.loads(runner.invoke(main, ["ledger", "nodes", "--json"]).stdout)
    assert [(n["node"], n["findings"]) for n in nodes] == [("n1", {"info": 2}), ("n2", {"info": 1})]


def test_cli_record_with_database_down_exits_0_and_keeps_event(ledger_env: dict[str, str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    config.reset()
    result = CliRunner().invoke(main, ["ledger", "record", "--node", "n1", "--kind", "note", "-m", "x"])
    assert result.exit_code == 0 and "kept in the spool" in result.output
    assert Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"]).counts()["pending"] == 1


def test_sqlite_on_network_fs_warns(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(db, "fs_type", lambda path: "nfs4")
    warning = db.network_fs_warning(f"sqlite:///{tmp_path}/l.db")
    assert warning is not None and "network filesystem (nfs4)" in warning and "PostgreSQL" in warning
    monkeypatch.setattr(db, "fs_type", lambda path: "ext4")
    assert db.network_fs_warning(f"sqlite:///{tmp_path}/l.db") is None


def test_bad_ledger_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", "mysql://x/y")
    config.reset()
    result = CliRunner().invoke(main, ["ledger", "events"])
    assert result.exit_code == 2 and "only sqlite:/// and postgresql+psycopg://" in result.output


def test_a_full_spool_counts_the_loss_and_reports_it_once_space_returns(ledger_env: dict[str, str],
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from slurmtools.ledger.spool import LOSSES, record_or_report

    state = tmp_path / "state"
    state.mkdir()
    blocked = tmp_path / "full"
    blocked.write_text("")                      # the spool cannot be made under a file: every write fails
    assert not record_or_report(blocked / "spool", [finding(1), finding(2)], "epilog", str(state), "n1")
    assert not record_or_report(blocked / "spool", [finding(3)], "prolog", str(state), "n1")
    assert "epilog: cannot spool 2 event(s)" in capsys.readouterr().out
    noted = [json.loads(ln) for ln in (state / LOSSES).read_text().splitlines()]
    assert [(x["who"], x["events"], x["types"]) for x in noted] == [("epilog", 2, {"finding": 2}),
                                                                    ("prolog", 1, {"finding": 1})]
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    assert record_or_report(spool.root, [finding(4)], "epilog", str(state), "n1")    # space is back
    assert not (state / LOSSES).exists()
    assert record_or_report(spool.root, [finding(5)], "epilog", str(state), "n1")    # reported once only
    flush(spool, engine(ledger_env))
    assert count(ledger_env) == 2
    with Session(engine(ledger_env)) as s:
        (row,) = s.scalars(select(models.NodeStateChange)).all()
    assert (row.node, row.action, row.actor, row.applied) == ("n1", "spool_loss", "epilog", False)
    assert row.details["events"] == 3 and row.details["batches"] == 2
    assert row.reason.startswith("3 event(s) in 2 batch(es) could not be spooled and are lost")


def test_sacct_and_epilog_rows_of_one_run_meet_by_sluid(ledger_env: dict[str, str]) -> None:
    """25.11+: sacct's row of a run and its epilogs' row are one attempt by their SLUID; a row of the same job id
    and restart count with another SLUID (the id reused) stays its own."""
    spool = Spool(ledger_env["SLURMTOOLS_SPOOL_DIR"])
    end = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    epilog = {"job_id": 42, "restart_count": 0, "end_time": end, "exit_signal": 9, "nodes": "n2", "source": "epilog"}
    spool.write(Event("attempt", {**epilog, "sluid": "s1J3QZ8KXW0Y2R"}, cluster="lab", time=end))
    spool.write(Event("attempt", {**epilog, "sluid": "s1J3QZ9B4M7N0C", "end_time": end + timedelta(days=1)},
                      cluster="lab", time=end + timedelta(days=1)))
    spool.write(Event("attempt", {"job_id": 42, "restart_count": 0, "submit_time": end - timedelta(hours=1),
                                  "end_time": end, "state": "FAILED", "nodes": "n[1-2]", "source": "sacct",
                                  "sluid": "s1J3QZ8KXW0Y2R"}, cluster="lab", time=end))
    flush(spool, engine(ledger_env))
    with Session(engine(ledger_env)) as s:
        rows = s.scalars(select(models.JobAttempt).order_by(models.JobAttempt.id)).all()
        assert [(a.sluid, a.source, a.state) for a in rows] == [("s1J3QZ8KXW0Y2R", "epilog+sacct", "FAILED"),
                                                                ("s1J3QZ9B4M7N0C", "epilog", None)]


def _derived(eng):  # type: ignore[no-untyped-def]
    """The ledger's derived report data (ledger/derived.py), as sorted tuples."""
    with eng.connect() as conn:
        return (sorted(conn.execute(select(models.InterruptedAttempt.cluster, models.InterruptedAttempt.job_id,
                                           models.InterruptedAttempt.restart_count)).all()),
                sorted(conn.execute(select(models.FailedJobName.cluster, models.FailedJobName.user,
                                           models.FailedJobName.name)).all()),
                sorted(conn.execute(select(models.JobAttempt.idempotency_key, models.JobAttempt.interrupted,
                                           models.JobAttempt.name_failed)).all()))


def _derived_events() -> list[Event]:
    t = datetime(2026, 3, 1, tzinfo=UTC)

    def att(key: str, job: int, restart: int, state: str | None, user: str | None = "ann", name: str | None = "train",
            sub: int | None = 0, **extra: object) -> Event:
        data = {"job_id": job, "restart_count": restart, "state": state, "user": user, "name": name,
                "submit_time": (t + timedelta(hours=sub)).isoformat() if sub is not None else None,
                "source": "sacct" if sub is not None else "epilog", **extra}
        return Event("attempt", {k: v for k, v in data.items() if v is not None}, cluster="c", key=key)

    def decision(key: str, job: int, restart: int, cls: str) -> Event:
        return Event("decision", {"job_id": job, "restart_count": restart, "classification": cls,
                                  "decision": "retry", "reason": "t", "status": "done"}, cluster="c", key=key)

    return [
        att("a1", 1, 0, "COMPLETED"), att("a2", 2, 0, "COMPLETED"), att("a3", 2, 1, "COMPLETED", sub=3),
        att("a4", 3, 0, "COMPLETED", name="eval"), att("a5", 4, 0, "COMPLETED", user="bob", name="train"),
        att("a6", 5, 0, "FAILED", sub=5),                      # marks (ann, train), before or after its peers
        att("a7", 6, 0, "RUNNING", name="sweep", sub=None),    # epilog's row first ...
        att("a8", 6, 0, "NODE_FAIL", name="sweep", sub=None),  # ... then its failure merged into it
        att("a9", 7, 0, "COMPLETED", user=None, name=None),
        finding(1, job_id=2, restart_count=1),                                  # interrupts (c, 2, 1)
        finding(2, job_id=3, restart_count=0, trust="job"),                     # the job's own output: not
        finding(3, job_id=4, restart_count=0, category="application"),          # not infrastructure
        finding(4, job_id=4, restart_count=0, severity="warning"),              # not severe
        finding(5, job_id=9, restart_count=0),                                  # an attempt never stored
        decision("d1", 1, 0, "node_fault"), decision("d2", 5, 0, "app_fault"),
    ]


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffled"])
def test_derived_report_data_is_kept_in_any_order_and_matches_the_migration(ledger_env: dict[str, str],
                                                                             order: str) -> None:
    import random

    from alembic import command

    from slurmtools.ledger import store

    events = [Event(e.type, e.data, cluster="c", key=e.key) for e in _derived_events()]
    merged = [e for e in events if e.key in ("a7", "a8")]       # the merge keeps its order (RUNNING, then failed)
    rest = [e for e in events if e.key not in ("a7", "a8")]
    if order == "reverse":
        rest.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(rest)
    eng = engine(ledger_env)
    schema.upgrade(eng)
    for e in rest[:6] + merged[:1] + rest[6:] + merged[1:] + rest[:4]:   # one event at a time, some twice
        with eng.begin() as conn:
            store.store(conn, [e])
    got = _derived(eng)
    assert got[0] == [("c", 1, 0), ("c", 2, 1), ("c", 9, 0)]
    assert got[1] == [("c", "ann", "sweep"), ("c", "ann", "train")]
    flags = {k: (bool(i), bool(n)) for k, i, n in got[2]}
    assert flags == {"a1": (True, True), "a2": (False, True), "a3": (True, True), "a4": (False, False),
                     "a5": (False, False), "a6": (False, True), "a7": (False, True), "a9": (False, False)}
    # an existing ledger: the same rows, filled by migration 0008 from the stored rows
    with eng.begin() as conn:
        command.downgrade(schema.alembic_config(conn), "0007")  # type: ignore[arg-type]
    schema.upgrade(eng)
    assert _derived(eng) == got


def test_derived_report_data_from_orm_writes(ledger_env: dict[str, str]) -> None:
    """The controller writes decisions through a Session: they flag their attempt too."""
    eng = engine(ledger_env)
    schema.upgrade(eng)
    from slurmtools.ledger import store

    with eng.begin() as conn:
        store.store(conn, [Event("attempt", {"job_id": 11, "restart_count": 0, "state": "NODE_FAIL", "user": "u",
                                             "name": "n", "source": "sacct"}, cluster="c", key="x1")])
    with Session(eng) as s:
        s.add(models.ControllerDecision(idempotency_key="d", cluster="c", job_id=11, restart_count=0,
                                        classification="node_fault", decision="retry", reason="t", status="done"))
        s.add(models.JobAttempt(idempotency_key="x2", cluster="c", job_id=12, restart_count=0, user="u", name="n",
                                state="COMPLETED", source="sacct"))
        s.commit()
    got = _derived(eng)
    assert got[0] == [("c", 11, 0)] and got[1] == [("c", "u", "n")]
    assert got[2] == [("x1", True, True), ("x2", False, True)]


def test_findings_infra_index_serves_the_incidents_probe(tmp_path: Path) -> None:
    """Migration 0009's partial index states the models' predicate (frozen in the migration), and the report's probe
    for an incident's first infrastructure finding on its node reads it in order: no sort, no other index
    (SQLite's plan here; PostgreSQL's on the 1M-finding bench, docs/performance.md)."""
    from alembic import command

    eng = db.make_engine(f"sqlite:///{tmp_path}/i.db")
    schema.upgrade(eng)
    with eng.begin() as conn:
        command.downgrade(schema.alembic_config(conn), "0008")  # type: ignore[arg-type]
        assert conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'ix_findings_infra'").first() is None
    schema.upgrade(eng)
    with eng.connect() as conn:
        made = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'ix_findings_infra'").scalar_one()
        assert made.endswith(f"WHERE {models.infra_finding_where()}"), made
        plan = [str(r[-1]) for r in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT fi.id FROM findings fi WHERE fi.cluster = 'c' AND fi.node = 'g1' "
            "AND fi.time >= '2026-01-01' AND fi.time <= '2026-01-02' "
            f"AND {models.infra_finding_where('fi')} ORDER BY fi.time, fi.id LIMIT 1")]
    assert any("ix_findings_infra" in p for p in plan) and not any("TEMP B-TREE" in p for p in plan), plan
