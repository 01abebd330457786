"""`slurmtools report`: each section's figures on a ledger whose answers were worked out by hand, an empty
ledger, the InfiniteHBD trace against an independent computation, and the text/CSV/HTML/CLI surfaces."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from slurmtools.cli import main
from slurmtools.ledger import ship
from slurmtools.ledger.db import make_engine
from slurmtools.ledger.imports import trace_events
from slurmtools.reports import render
from slurmtools.reports.build import SECTIONS, ReportError, build_report
from slurmtools.reports.html import render_html
from slurmtools.reports.scope import Scope

from .reports_data import CLUSTER, DAY, T0, TRACE, exclusion, fill, trace_figures


def scope(**kw: Any) -> Scope:
    return Scope(**{"cluster": CLUSTER, "since": T0, "until": T0 + 10 * DAY, "nodes": 10, "gpus_per_node": 8, **kw})


@pytest.fixture
def report(tmp_path: Path) -> dict[str, Any]:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    return build_report(engine, scope(), charts=True)


def test_failures_and_mtbf(report: dict[str, Any]) -> None:
    f = report["failures"]
    # a1 twice (the XID 79 with its follow-on lines and lemon exclusion is one), a3 twice, a4 (observe), a5
    assert (f["failures"], f["nodes_with_failures"]) == (6, 4)
    down_h = (10798 + 3600 + 2400 + 2 * 86400 + 3600 + 3599) / 3600   # a2's maintenance counts as down time
    assert f["node_hours_out_of_service"] == pytest.approx(down_h, abs=1e-3)
    assert f["mtbf_node_hours"] == pytest.approx((2400 - down_h) / 6, abs=1e-3)
    assert f["mtbf_gpu_hours"] == pytest.approx((2400 - down_h) * 8 / 6, abs=1e-2)
    assert f["mtbf_cluster_hours"] == pytest.approx(40.0)
    causes = {(c["category"], c["kind"], c["xid"]): c["count"] for c in f["by_cause"]}
    assert causes == {("hardware", "xid", 79): 1, ("hardware", "xid", 48): 1, ("hardware", "GPU lost", None): 1,
                      ("hardware", "PSU failure", None): 1, ("network", "ib", None): 1, ("hardware", "drain", None): 1}
    assert {c["category"]: c["share"] for c in f["by_category"]} == {"hardware": pytest.approx(5 / 6, abs=1e-4),
                                                                    "network": pytest.approx(1 / 6, abs=1e-4)}


def test_checkpoints_section(report: dict[str, Any]) -> None:
    """Worked by hand from reports_data.checkpoint_events()."""
    ck = report["checkpoints"]
    save, load = ck["save"], ck["load"]
    assert (save["events"], save["timed"], save["jobs"]) == (12, 11, 4)
    assert save["by_source"] == {"lightning": 1, "marks": 10, "megatron": 1}
    # durations: 10, 10, 31..38, 21.03 -> sorted 10 10 21.03 31 32 33 34 35 36 37 38: median 33, p90 37 (rank 10)
    assert (save["seconds"]["median"], save["seconds"]["p90"], save["seconds"]["max"]) == (33.0, 37.0, 38.0)
    assert (save["gbytes_per_s"]["n"], save["gbytes_per_s"]["median"]) == (10, 0.8)
    assert save["utilisation"]["median"] == pytest.approx(0.8 / 250, abs=1e-4)
    assert save["bytes"] == 2 * int(2e10) + sum(int(0.8e9 * (30 + i)) for i in range(1, 9))
    assert (load["events"], load["gbytes_per_s"]["median"], load["utilisation"]["median"]) == (1, 5.0, 0.0071)
    # the scale effect: 2 nodes at once -> queue 0.5 ms of 2.5 (20 %); 8 at once -> 6 of 8.5 ms (71 %)
    assert [(s["nodes_from"], s["nodes_to"], s["saves"], s["queue_ms_per_op_median"], s["rtt_ms_per_op_median"],
             s["queue_share"], s["gbytes_per_s_median"]) for s in ck["scale"]] == [
        (2, 3, 2, 0.5, 2.0, 0.2, 2.0), (8, 15, 8, 6.0, 2.5, 0.7059, 0.8)]
    assert [(x["job_id"], x["seconds"]) for x in ck["slowest"][:2]] == [(510, 38.0), (510, 37.0)]
    text = render.text(report)
    assert "8. Checkpoints" in text and "8-15" in text and "70.6%" in text


def test_mttr_and_projected_mttf(report: dict[str, Any]) -> None:
    t = report["mttr"]
    assert (t["n"], t["open"], t["no_repair_time"]) == (4, 1, 1)
    assert t["median_s"] == pytest.approx(3599.5, abs=0.1)
    assert t["mean_s"] == pytest.approx((2400 + 3599 + 3600 + 10798) / 4, abs=0.1)
    assert t["p90_s"] == pytest.approx(10798, abs=0.1)
    # every repaired incident in the histogram; 3600 s is the first of "1-4 h" (bounds are exclusive)
    assert {b["label"]: b["count"] for b in t["histogram"] if b["count"]} == {"10 min-1 h": 2, "1-4 h": 2}
    assert sum(b["count"] for b in t["histogram"]) == t["n"] and t["histogram"][-1]["below_s"] is None
    m = report["mttf"]
    # job 100: two 1-hour attempts on 2 nodes x 8 GPUs; the first ended NODE_FAIL
    assert (m["attempts"], m["interruptions"]) == (2, 1) and m["gpu_hours"] == pytest.approx(32.0)
    # one interruption is too few to project from (the demo's `0.0 s` for 16,384 GPUs): no MTTF, only the exact
    # 95 % interval of the rate, 0.0253 to 5.572 interruptions in 32 GPU-hours
    assert all(p["mttf_h"] is None for p in m["projected"]) and "too few to project" in m["note"]
    from slurmtools.reports.model import poisson_interval

    lo, hi = poisson_interval(1)
    assert [p["gpus"] for p in m["projected"]] == [8, 64, 512, 1024, 16384]
    for p in m["projected"]:
        assert (p["mttf_h_low"], p["mttf_h_high"]) == pytest.approx((32 / hi / p["gpus"], 32 / lo / p["gpus"]),
                                                                    rel=1e-5, abs=1e-6)
    assert "interval" in render.text(report) and "unbounded" not in render.text(report)


def test_goodput_buckets(report: dict[str, Any]) -> None:
    g = report["goodput"]
    assert (g["chains"], g["active_chains"]) == (2, 0)
    assert (g["wall_s"], g["productive_s"], g["failed_attempts_s"], g["recovery_s"], g["queue_s"]) == (
        7920.0, 3600.0, 4140.0, 60.0, 120.0)
    assert g["ettr"] == pytest.approx(3600 / 7920, abs=1e-4)
    worst = {w["root_job_id"]: w for w in g["worst"]}
    assert worst[300]["ettr"] == 0.0 and worst[100]["ettr"] == pytest.approx(3600 / 7320, abs=1e-4)
    w = worst[100]
    assert w["productive_s"] + w["failed_attempts_s"] + w["recovery_s"] + w["queue_s"] == w["wall_s"]
    assert [a["job_id"] for a in report["charts"]["chain_timeline"] if a["chain_id"] == w["chain_id"]] == [100, 100]


def test_concentration(report: dict[str, Any]) -> None:
    inc = report["concentration"]["incidents"]
    assert (inc["total"], inc["nodes"], inc["nodes_with_any"]) == (6, 10, 4)
    assert (inc["top3_share"], inc["top10pct_nodes"], inc["top10pct_share"], inc["top5pct_share"]) == (
        pytest.approx(5 / 6, abs=1e-4), 1, pytest.approx(1 / 3, abs=1e-4), pytest.approx(1 / 3, abs=1e-4))
    assert inc["gini"] == pytest.approx(2 * 53 / 60 - 1.1, abs=1e-4)   # counts 0 x6, 1, 1, 2, 2
    ex = report["concentration"]["exclusions"]
    assert ex["total"] == 5 and ex["per_node"][0] == {"node": "a1", "count": 3}
    assert report["concentration"]["lemons"] == []   # all ended before the window's end


def test_open_exclusions_are_the_lemon_list(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    with engine.begin() as conn:
        ship.store(conn, [exclusion("a7", T0 + 9 * DAY, None, "slurmtools: lemon: lemon node: 3 faults", "controller"),
                          exclusion("a8", T0 + 9 * DAY, None, "slurmtools: admin: bad fan", "admin:root")])
    lemons = build_report(engine, scope(), sections=("concentration",))["concentration"]["lemons"]
    assert [(x["node"], x["lemon"], x["since"]) for x in lemons] == [("a7", True, "2026-01-10T00:00:00Z"),
                                                                   ("a8", False, "2026-01-10T00:00:00Z")]


def test_retries_and_detection(report: dict[str, Any]) -> None:
    auto, manual = report["retries"]["automatic"], report["retries"]["manual"]
    assert (auto["chains"], auto["succeeded"], auto["retry_interval_s"]["median"]) == (1, 1, 60.0)
    assert (manual["chains"], manual["succeeded"], manual["mean_attempts"]) == (1, 1, 2.0)
    assert manual["retry_interval_s"]["median"] == 660.0
    d = report["detection"]
    assert (d["confirmed"], d["refuted"], d["expired"], d["removed"]) == (2, 1, 1, 0)
    assert d["false_positive_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert (d["caught_before_job"], d["found_after_job"]) == (1, 2)
    assert d["drains_by_actor"]["epilog"] == {"drains": 2, "applied": 1}
    tm = d["time_from_job_end_s"]
    assert (tm["detect"]["median_s"], tm["running"]["median_s"], tm["running"]["n"]) == (1.0, 60.0, 1)


def test_partition_and_window_filter(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    other = build_report(engine, scope(partition="cpu"))
    assert other["mttf"]["attempts"] == 0 and other["goodput"]["chains"] == 0
    early = build_report(engine, Scope(cluster=CLUSTER, since=T0, until=T0 + 2 * DAY, nodes=10))
    assert early["failures"]["failures"] == 1 and early["mttr"]["n"] == 1


def test_empty_ledger_says_so(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    from slurmtools.ledger import schema

    schema.upgrade(engine)
    r = build_report(engine, scope(nodes=0), charts=True)
    assert r["empty"] is True and "nothing" in r["notes"][0]
    assert r["failures"]["mtbf_gpu_hours"] is None and r["mttr"]["median_s"] is None
    assert r["goodput"]["ettr"] is None and r["concentration"]["incidents"]["gini"] is None
    assert "n/a" in render.text(r) and render.csv_text(r).startswith("section,metric,value")
    html = render_html(r)
    assert html.count("<svg") == 6 and "no failures in" in html


def test_infinitehbd_trace_matches_an_independent_computation(tmp_path: Path) -> None:
    expect = trace_figures(nodes=400)
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    from slurmtools.ledger import schema

    schema.upgrade(engine)
    with engine.begin() as conn:
        ship.store(conn, trace_events(TRACE, "hbd"))
    r = build_report(engine, Scope(cluster="hbd", since=T0.replace(year=2024, month=3, day=30),
                                   until=expect["until"], nodes=400))
    assert r["failures"]["failures"] == expect["incidents"] and r["mttr"]["open"] == expect["open"]
    assert r["mttr"]["median_s"] == pytest.approx(expect["mttr_median_s"], abs=0.1)
    inc = r["concentration"]["incidents"]
    assert inc["top10pct_share"] == pytest.approx(expect["top10pct_share"], abs=1e-4)
    assert inc["top5pct_share"] == pytest.approx(expect["top5pct_share"], abs=1e-4)
    assert r["failures"]["mtbf_node_hours"] == pytest.approx(expect["mtbf_node_hours"], rel=1e-6)


def test_each_section_alone_is_the_whole_reports(report: dict[str, Any], tmp_path: Path) -> None:
    """A section asked alone runs only its lane and the lanes it waits for (the what-if waits for section 2 and the
    incidents' lemons; the manual retries are a lane of their own): each gives what the whole report gives. SQLite
    runs one connection whatever is asked; PostgreSQL's parallel lanes: tests/integration/test_ledger_pg.py."""
    engine = make_engine(f"sqlite:///{tmp_path}/alone.db")
    fill(engine)
    for name in SECTIONS:
        alone = build_report(engine, scope(), sections=(name,), connections=3)
        assert list(alone)[2:4] == [name, "empty"] and alone[name] == report[name], name
    pair = build_report(engine, scope(), sections=("whatif", "goodput", "retries"), charts=True)
    assert pair["charts"] == report["charts"] and pair["retries"] == report["retries"]
    with pytest.raises(ReportError, match="connections must be 1 to 4"):
        build_report(engine, scope(), connections=5)


def test_cli_report_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    fill(make_engine(url))
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", url)
    runner = CliRunner()
    base = ["report", "--cluster", CLUSTER, "--since", "2026-01-01T00:00:00+00:00",
            "--until", "2026-01-11T00:00:00+00:00", "--nodes", "10"]
    out = runner.invoke(main, [*base, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["failures"]["failures"] == 6 and data["report"]["sections"][0] == "failures"
    text = runner.invoke(main, base)
    assert text.exit_code == 0 and "1. Infrastructure failures and MTBF" in text.output
    assert "failures 6 on 4" in text.output
    rows = list(csv.DictReader(io.StringIO(runner.invoke(main, [*base, "--format", "csv"]).output)))
    assert {"section": "failures", "metric": "failures", "value": "6"} in rows
    only = json.loads(runner.invoke(main, [*base, "--json", "--section", "mttr"]).output)
    assert "mttr" in only and "failures" not in only
    html = tmp_path / "r.html"
    res = runner.invoke(main, [*base, "--format", "html", "-o", str(html)])
    assert res.exit_code == 0 and html.read_text().count("<svg") == 6
    same = json.loads(runner.invoke(main, [*base, "--json", "--connections", "4"]).output)
    assert {k: v for k, v in same.items() if k != "report"} == {k: v for k, v in data.items() if k != "report"}
    for bad, msg in ((["--format", "html"], "give -o FILE"), (["--section", "nope"], "unknown section"),
                     (["--since", "yesterday"], "not a time"), (["--connections", "5"], "not in the range")):
        res = runner.invoke(main, [*base, *bad])
        assert res.exit_code == 2 and msg in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["report", "--since", "1d", "--until", "2d"])
    assert res.exit_code == 1 and "empty window" in res.output


def test_html_is_self_contained(report: dict[str, Any]) -> None:
    html = render_html(report)
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "@import" not in html
    for chart in ("failures-over-time", "mttr-distribution", "lorenz", "chain-timeline", "goodput",
                  "checkpoint-scale"):
        assert f'id="{chart}"' in html
    assert report["charts"]["failures_over_time"]["points"]


def test_a_database_error_is_one_line(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/empty.db")   # no schema at all
    with pytest.raises(ReportError, match="cannot read the ledger"):
        build_report(engine, scope())
    with pytest.raises(ReportError, match="empty window"):
        build_report(engine, Scope(cluster="x", since=T0, until=T0 - timedelta(seconds=1)))


def test_exporter_counts_ledger_rows_by_label(tmp_path: Path) -> None:

    from prometheus_client import CollectorRegistry, generate_latest

    from slurmtools.reports.exporter import LedgerCollector

    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    from slurmtools import config

    cfg = config.load(env={})
    cfg.general.cluster, cfg.ledger.spool_dir = CLUSTER, str(tmp_path / "spool")
    cfg.controller.queue_dir = str(tmp_path / "queue")
    registry = CollectorRegistry()
    registry.register(LedgerCollector(cfg, engine))
    lines = set(generate_latest(registry).decode().splitlines())
    for sample in ('slurmtools_ledger_up 1.0',
                   'slurmtools_node_state_changes_total{action="drain",applied="false"} 1.0',
                   'slurmtools_node_state_changes_total{action="drain",applied="true"} 2.0',
                   'slurmtools_retry_chains{status="completed"} 1.0',
                   'slurmtools_controller_decisions_total{classification="node_fault",decision="retry",'
                   'status="done"} 1.0',
                   'slurmtools_findings_total{category="hardware",kind="xid",severity="critical"} 5.0'):
        assert sample in lines, sample


def test_gpus_per_node_from_slurm_gres_then_the_ledger_then_the_config(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's fleet line said 4 nodes x 8 GPUs on nodes with 4 each: the count comes from Slurm's GRES of each
    node, is kept in the ledger for a report run where Slurm cannot be reached, and the configuration is last."""
    from slurmtools import config
    from slurmtools.reports import gpus
    from slurmtools.slurm.types import NodeInfo

    assert [gpus.gres_gpus(g) for g in ("gpu:4", "gpu:a100:4(S:0-1)", "gpu:a100:2,gpu:h100:2(S:0,1)",
                                        "gpu:1080:2", "", "mps:100", "shard:8,gpu:1", "(null)")] == [
        4, 4, 4, 2, 0, 0, 1, 0]
    assert gpus.gres_gpus("gpu:" + "9" * 5000) == 0 and gpus.gres_gpus(",gpu:1" * 10000) == 682   # bounded
    url = f"sqlite:///{tmp_path}/l.db"
    engine = make_engine(url)
    fill(engine)
    lab = [NodeInfo(name=f"n{i}", state="idle", gres="gpu:4") for i in range(1, 5)]
    assert gpus.gpus_per_node(engine, CLUSTER, lab, 8) == (4.0, "Slurm GRES: 16 GPUs on 4 nodes")
    gpn, source = gpus.gpus_per_node(engine, CLUSTER, None, 8)          # Slurm unreachable: the ledger's copy
    assert gpn == 4.0 and source.startswith("ledger: Slurm GRES as read") and "16 GPUs on 4 nodes" in source
    assert gpus.gpus_per_node(engine, "other", None, 8) == (8.0, "configuration (reports.gpus_per_node)")
    mixed = [NodeInfo(name="a", state="idle", gres="gpu:8"), NodeInfo(name="b", state="idle", gres="gpu:h100:4")]
    assert gpus.gpus_per_node(engine, CLUSTER, mixed, 8)[0] == 6.0
    # through the CLI: this cluster's Slurm answers with 4 GPUs per node; --gpus-per-node still wins
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", url)
    monkeypatch.setenv("SLURM_CLUSTER_NAME", CLUSTER)
    config.reset()

    class FakeSlurm:
        def nodes(self) -> list[NodeInfo]:
            return lab

    monkeypatch.setattr("slurmtools.slurm.get_client", lambda cfg=None: FakeSlurm())
    base = ["report", "--since", "2026-01-01T00:00:00+00:00", "--until", "2026-01-11T00:00:00+00:00",
            "--nodes", "10", "--json"]
    data = json.loads(CliRunner().invoke(main, base).output)
    assert (data["fleet"]["gpus_per_node"], data["fleet"]["gpus"]) == (4, 40)
    assert data["fleet"]["gpus_per_node_from"] == "Slurm GRES: 16 GPUs on 4 nodes"
    down_h = (10798 + 3600 + 2400 + 2 * 86400 + 3600 + 3599) / 3600
    assert data["failures"]["mtbf_gpu_hours"] == pytest.approx((2400 - down_h) * 4 / 6, abs=1e-2)
    data = json.loads(CliRunner().invoke(main, [*base, "--gpus-per-node", "8"]).output)
    assert (data["fleet"]["gpus_per_node"], data["fleet"]["gpus_per_node_from"]) == (8, "option --gpus-per-node")


def test_whatif_worked_by_hand(tmp_path: Path) -> None:
    """Section 9 on a chain whose figures are worked out by hand: job 700 on 8 nodes saves at 1,000 s and 2,000 s
    (30 s each), a node fails at 3,600 s; the retry starts 600 s later, saves once, completes after 3,000 s. Node
    c3 gets a lemon exclusion two days after the failure."""
    from datetime import timedelta

    from sqlalchemy.orm import Session

    from slurmtools.ledger import models
    from slurmtools.reports import model
    from slurmtools.reports.advice import mtti_from_rate

    from .reports_data import _t, attempt, checkpoint

    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    c = _t(3 * DAY)
    sec = lambda x: c + timedelta(seconds=x)   # noqa: E731
    events = [attempt(700, 0, c, c, sec(3600), "NODE_FAIL", "c[1-8]"),
              attempt(700, 1, sec(3600), sec(4200), sec(7200), "COMPLETED", "c[1-8]"),
              checkpoint("c1", 700, sec(1000), 30.0), checkpoint("c1", 700, sec(2000), 30.0),
              checkpoint("c1", 700, sec(5200), 30.0),
              exclusion("c3", sec(3600 + 2 * 86400), None, "slurmtools: lemon: lemon node: 3 faults", "controller"),
              # two more interrupted multi-node attempts outside any chain: 4 interruptions, enough to project M
              attempt(800, 0, c, c, sec(3600), "NODE_FAIL", "d[1-2]"), attempt(801, 0, c, c, sec(3600), "NODE_FAIL",
                                                                                 "d[3-4]")]
    with engine.begin() as conn:
        ship.store(conn, events)
    with Session(engine) as s:
        s.add(models.RetryChain(idempotency_key="c7", cluster=CLUSTER, root_job_id=700, user="alice", created=c,
                                max_retries=2, status="completed", retries_used=1))
        s.commit()
    r = build_report(engine, scope(extra={"recovery_target_s": 60.0}))
    w = next(x for x in r["whatif"]["sizes"] if x["nodes_from"] == 8)
    assert (w["chains"], w["attempts"], w["interruptions"], w["nodes_to"]) == (1, 2, 1, 31)
    # wall = 3,600 + 3,000 run + 600 recovery; lost = 3,600 - 2,030 (the end of the last save); saves 90 s
    assert (w["wall_s"], w["lost_work_s"], w["recovery_s"], w["checkpoint_s"], w["useful_s"]) == (
        7200.0, 1570.0, 600.0, 90.0, 4940.0)
    assert w["goodput"] == pytest.approx(4940 / 7200, abs=1e-4)
    assert (w["lost_work_share"], w["recovery_share"], w["checkpoint_share"]) == pytest.approx(
        (1570 / 7200, 600 / 7200, 90 / 7200), abs=1e-4)
    assert w["recovery_at_target"]["goodput"] == pytest.approx(4940 / (6600 + 60), abs=1e-4)
    lem = w["lemons_excluded"]          # the failed attempt ran on c3 within the week before its lemon exclusion
    assert (lem["interruptions_avoided"], lem["lost_work_avoided_s"], lem["recovery_avoided_s"]) == (1, 1570.0, 600.0)
    assert lem["goodput"] == pytest.approx(4940 / (7200 - 1570 - 600), abs=1e-4)
    assert "c3" in [x["node"] for x in r["whatif"]["lemons"]]
    m = r["mttf"]
    assert m["interruptions"] == 4
    mtti = mtti_from_rate(4, m["gpu_hours"], 64)
    assert mtti is not None and mtti.value is not None
    adv = w["advised"]
    want = model.advise(30.0, 600.0, mtti.value)
    assert (adv["checkpoint_cost_s"], adv["restart_cost_s"]) == (30.0, 600.0)
    assert adv["mtti_s"] == pytest.approx(mtti.value, abs=0.1) and adv["interval_s"] == pytest.approx(
        want.interval_s, abs=0.1) and adv["goodput"] == pytest.approx(want.goodput, abs=1e-4)
    # the fleet's failure gaps were read for the shape (whatif.inputs: saves recorded), here too few to fit one
    assert r["whatif"]["failure_shape"] == adv["failure_shape"] == 1.0
    # every figure says what it assumes; the text and CSV show the section
    assert set(r["whatif"]["assumes"]) == {"today", "advised", "recovery_at_target", "lemons_excluded"}
    text = render.text(r)
    assert "10. What if" in text and "8-31" in text
    rows = list(csv.DictReader(io.StringIO(render.csv_text(r))))
    assert any(x["section"] == "whatif" and x["metric"].endswith("lemons_excluded.goodput") for x in rows)
    small = next(x for x in r["whatif"]["sizes"] if x["nodes_from"] == 1)       # job 300: no saves recorded
    assert small["advised"]["goodput"] is not None and small["lost_work_s"] == 540.0


def test_html_sections_are_in_order_each_once_and_never_inside_a_table(report: dict[str, Any]) -> None:
    """Sections 8-12 each render once, as top-level headings in order (the what-if section once sat inside the
    checkpoint table's row loop: drawn once per row, inside a cell, and not at all without rows)."""
    from html.parser import HTMLParser

    assert len(report["checkpoints"]["scale"]) == 2
    gpu = {"results": 3, "gpus": 2, "models": {"NVIDIA H100 80GB HBM3": {
        "gpus": 2, "d2d_gbps": {"median": 2900.0, "p10": 2500.0, "min": 2400.0, "max": 3000.0}}},
        "slow": [{"node": "n2", "gpu": 1, "model": "NVIDIA H100 80GB HBM3",
                  "shortfalls": [{"metric": "d2d_gbps", "value": 2400.0, "shortfall": 0.17}]}]}

    class Headings(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ids: list[str] = []
            self.depth = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in ("table", "td"):
                self.depth += 1
            if tag == "h2":
                assert self.depth == 0, f"heading {dict(attrs)} inside a table"
                self.ids.append(str(dict(attrs).get("id")))

        def handle_endtag(self, tag: str) -> None:
            if tag in ("table", "td"):
                self.depth -= 1

    for r in (report, {**report, "gpu_perf": gpu}):
        page = Headings()
        html = render_html(r)
        page.feed(html)
        assert page.ids[-5:] == ["checkpoints", "gpu_perf", "whatif", "unrecognised", "stalls"], page.ids
        assert len(page.ids) == len(set(page.ids))
    assert "<td>device-to-device copy</td><td>2,900.0 GB/s</td>" in html
    assert "<td>n2 GPU 1</td>" in html and "d2d_gbps 2,400.0 (17.0% below)" in html


def test_the_lemon_attribution_tests_a_hostlist_as_expanding_it_would() -> None:
    from slurmtools.reports.whatif import hostlist_holds
    from slurmtools.slurm.parse import expand

    lists = ["g0007", "g[0001-0064]", "g[0010-0012]", "n[1-10]", "n[08-11]", "gpu[1-3],cpu7", "n[1-2,5]", "a-b[1-2]",
             "g[0064-0001]", "g[1-", "", "  g0003  ", "x[1-3]y"]
    nodes = ["g0007", "g0064", "g0065", "g0010", "g10", "n5", "n05", "n10", "n08", "n9", "gpu2", "cpu7", "a-b2",
             "g0003", "x2y", "g", "n²"]
    for h in lists:
        for n in nodes:
            try:
                want = n in expand(h)
            except Exception:  # noqa: BLE001 - unreadable: holds nothing
                want = False
            assert hostlist_holds(h, n) == want, (h, n)
