"""Reports on the lab: the same figures from PostgreSQL as from SQLite, the InfiniteHBD validation on
PostgreSQL, the HTML report in a real headless Chromium, and a fault seen through a real Prometheus."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from slurmtools.lab import Lab, monitoring
from slurmtools.ledger import schema, ship
from slurmtools.ledger.db import make_engine
from slurmtools.ledger.imports import trace_events
from slurmtools.reports.build import build_report
from slurmtools.reports.scope import Scope
from slurmtools.slurm import CliSlurm

from ..browser import open_page
from ..reports_data import CLUSTER, DAY, T0, TRACE, fill, trace_figures
from .conftest import wait_until
from .test_epilog_lab import run_and_inject

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "slurmtools-dashboard.json"


@pytest.fixture
def pg_url(lab: Lab) -> Iterator[str]:
    """A fresh PostgreSQL database on the lab's server, dropped afterwards."""
    name = f"report_{int(time.time() * 1000)}"
    psql = ["psql", "-h", "127.0.0.1", "-p", str(lab.ports.postgres), "-U", "postgres", "-d", "postgres", "-c"]
    subprocess.run([*psql, f"CREATE DATABASE {name}"], check=True, capture_output=True, cwd="/tmp")
    yield f"postgresql+psycopg://postgres@127.0.0.1:{lab.ports.postgres}/{name}"
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], capture_output=True, cwd="/tmp")


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("report", "fleet")}


def test_postgresql_and_sqlite_give_the_same_report(pg_url: str, tmp_path: Path) -> None:
    reports = []
    for url in (f"sqlite:///{tmp_path}/l.db", pg_url):
        engine = make_engine(url)
        fill(engine)
        with engine.begin() as conn:
            ship.store(conn, trace_events(TRACE, CLUSTER, base=T0))
        reports.append(build_report(engine, Scope(CLUSTER, T0, T0 + 400 * DAY, nodes=500), charts=True))
        engine.dispose()
    lite, pg = reports
    assert (lite["report"]["database"], pg["report"]["database"]) == ("sqlite", "postgresql")
    assert pg["failures"]["failures"] > 500 and pg["goodput"]["chains"] == 2
    assert _figures(lite) == _figures(pg)


def test_infinitehbd_validation_on_postgresql(pg_url: str) -> None:
    expect = trace_figures(nodes=400)
    engine = make_engine(pg_url)
    schema.upgrade(engine)
    with engine.begin() as conn:
        ship.store(conn, trace_events(TRACE, "hbd"))
    r = build_report(engine, Scope("hbd", datetime(2024, 3, 30, tzinfo=UTC), expect["until"], nodes=400))
    engine.dispose()
    assert r["mttr"]["median_s"] == pytest.approx(expect["mttr_median_s"], abs=0.1)
    assert r["concentration"]["incidents"]["top10pct_share"] == pytest.approx(expect["top10pct_share"], abs=1e-4)
    assert r["concentration"]["incidents"]["top5pct_share"] == pytest.approx(expect["top5pct_share"], abs=1e-4)
    assert r["failures"]["mtbf_node_hours"] == pytest.approx(expect["mtbf_node_hours"], rel=1e-6)


def test_html_report_renders_in_headless_chromium(pg_url: str, tmp_path: Path) -> None:
    engine = make_engine(pg_url)
    fill(engine)
    engine.dispose()
    out = tmp_path / "report.html"
    proc = subprocess.run(["slurmtools", "report", "--cluster", CLUSTER, "--since", T0.isoformat(),
                           "--until", (T0 + 10 * DAY).isoformat(), "--nodes", "10", "--format", "html", "-o", str(out)],
                          capture_output=True, text=True, env={**_env(), "SLURMTOOLS_LEDGER_URL": pg_url})
    assert proc.returncode == 0, proc.stderr
    shot = tmp_path / "report.png"
    page, close = open_page(out, shot)
    try:
        assert page.console_errors() == []
        sizes = page.evaluate("Array.from(document.querySelectorAll('svg.chart')).map(s => "
                              "{const r = s.getBoundingClientRect(); return [s.id, r.width, r.height]})")
        assert [s[0] for s in sizes] == ["failures-over-time", "mttr-distribution", "goodput", "chain-timeline",
                                         "lorenz", "checkpoint-scale"]
        # the checkpoint chart draws both groups of nodes saving at once, queue and round trip each
        assert page.evaluate("document.querySelectorAll('#checkpoint-scale rect[fill] title').length") == 4
        assert all(w > 100 and h > 50 for _, w, h in sizes), sizes
        bars = page.evaluate("document.querySelectorAll('#failures-over-time rect[fill]').length")
        assert bars > 2
        assert page.evaluate("document.title").startswith("slurmtools report: rep")
    finally:
        close()
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _prom(query: str) -> list[dict[str, Any]]:
    url = f"{monitoring.prometheus_url()}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def test_a_fault_shows_in_prometheus_and_the_report(lab: Lab, slurm: CliSlurm, jobs: list[int], workdir: Path,
                                                   resume_after: list[str]) -> None:
    wait_until("Prometheus scraping the exporter", lambda: _prom('up{job="slurmtools"} == 1'), 60)
    before = _xid_findings()
    resume_after.append("n2")
    job_id = run_and_inject(lab, slurm, jobs, workdir, "xid79")
    subprocess.run(["slurmtools", "ledger", "flush", "--quiet"], capture_output=True)
    wait_until("n2's exclusion in Prometheus",
               lambda: _prom('slurmtools_node_excluded{node="n2",scope="drain"} >= 1'), 90)
    wait_until("the XID finding counted in Prometheus", lambda: _xid_findings() > before, 90)
    drained = _prom("slurmtools_nodes_drained_by_slurmtools")
    assert drained and float(drained[0]["value"][1]) >= 1
    proc = subprocess.run(["slurmtools", "report", "--since", "15m", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert any(c["xid"] == 79 for c in r["failures"]["by_cause"])
    # (exclusions, by their own start: n2's incident may have begun before the window with an earlier test's fault
    # on n2, within the incident gap; the 24.11 run's order showed it)
    assert any(p["node"] == "n2" for p in r["concentration"]["exclusions"]["per_node"])
    assert any(x["node"] == "n2" and str(job_id) in x["reason"] for x in r["concentration"]["lemons"])
    assert r["detection"]["drains_by_actor"]["epilog"]["applied"] >= 1


def _xid_findings() -> float:
    return sum(float(r["value"][1]) for r in _prom('slurmtools_findings_total{kind="xid",category="hardware"}'))


def test_grafana_dashboard_uses_only_exported_metrics(lab: Lab) -> None:
    with urllib.request.urlopen(monitoring.exporter_url(), timeout=10) as resp:
        exposition = resp.read().decode()
    exported = set(re.findall(r"^(slurmtools_[a-z_]+)", exposition, re.M))   # samples, and families without any
    exported |= {n + ("_total" if t == "counter" else "")
                 for n, t in re.findall(r"^# TYPE (slurmtools_[a-z_]+) (\w+)", exposition, re.M)}
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\b(slurmtools_[a-z_]+)", e)}
    assert len(exprs) >= 10 and used
    assert used <= exported, f"not exported: {sorted(used - exported)}"
    check = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_node_exporters_mountstats_exposition_passes_promtool(lab: Lab) -> None:
    """The node exporter's per-mount series (a recorded nconnect=16 RDMA mount and an NFSv4.1 TCP one) are valid
    exposition for Debian's promtool (the lab installs it)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from slurmtools.iostat import mountstats
    from slurmtools.iostat.metrics import families

    data = Path(__file__).parents[1] / "data" / "mountstats"
    mounts = [*mountstats.parse((data / "procfs-nfs3-rdma-nconnect16.txt").read_text()),
              *mountstats.parse((data / "procfs-nfs41-tcp-kubelet.txt").read_text())]

    class Fixed:
        def collect(self) -> Any:
            return families(mounts)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    exposition = generate_latest(registry).decode()
    assert exposition.count("slurmtools_mountstats_nfs_transport_sends_total{") == 17
    check = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
