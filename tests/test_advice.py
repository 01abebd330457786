"""`slurmtools advise checkpoint`: the model against its closed forms and an exact confidence interval, the advice
against a Monte Carlo of the job under exponential, Weibull (0.7, 1.5) and recorded failures, the ledger's figures
worked out by hand, the fallbacks, and the CLI's one-line errors."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from slurmtools import config
from slurmtools.cli import main
from slurmtools.ledger import ship
from slurmtools.ledger.db import make_engine
from slurmtools.reports import advice, model
from slurmtools.reports import simulate as sim
from slurmtools.reports.scope import Scope

from .reports_data import CLUSTER, DAY, T0, attempt, fill

H = 3600.0


def test_model_optimum_matches_daly_and_young() -> None:
    for m, d, r in ((6 * H, 300.0, 600.0), (H, 60.0, 0.0), (24 * H, 900.0, 1800.0), (2 * H, 1800.0, 600.0)):
        a = model.advise(d, r, m)
        # Daly's higher-order estimate is the optimum of his exact model to well under 1 %
        assert a.interval_s == pytest.approx(model.daly(d, m), rel=0.01)
        assert a.young_s == pytest.approx(math.sqrt(2 * d * m))
        g = model.goodput(a.interval_s, d, r, m)
        for other in (a.interval_s * 0.9, a.interval_s * 1.1, a.young_s):
            assert model.goodput(other, d, r, m) <= g + 1e-12
        lo, hi = a.range_s
        assert lo < a.interval_s < hi
        for edge in (lo, hi):       # the range's ends are where goodput falls to 99 % of the best
            assert model.goodput(edge, d, r, m) == pytest.approx(0.99 * g, rel=1e-6)
    # the example: 6 h MTTI, 5-minute checkpoints -> about an hour (Young: exactly 1 h)
    assert model.young(300, 6 * H) == pytest.approx(3600.0)
    # the restart cost lowers the goodput, not the optimum (a constant factor e^(-R/M))
    assert model.best(300, 0, 6 * H) == pytest.approx(model.best(300, 3600, 6 * H), rel=1e-6)
    assert model.goodput(3000, 300, 3600, 6 * H) < model.goodput(3000, 300, 0, 6 * H)
    with pytest.raises(model.ModelError):
        model.advise(300, 0, 0)
    with pytest.raises(model.ModelError):
        model.advise(float("nan"), 0, H)


def test_poisson_interval_is_garwoods() -> None:
    # the exact intervals every table gives (95 %)
    for k, lo, hi in ((0, 0.0, 3.689), (1, 0.0253, 5.572), (3, 0.619, 8.767), (10, 4.795, 18.39)):
        got = model.poisson_interval(k)
        assert got[0] == pytest.approx(lo, abs=2e-3) and got[1] == pytest.approx(hi, abs=2e-3)
    # beyond 200 events, the chi-square form: its bounds still leave 2.5 % on each side by the exact Poisson sums
    from slurmtools.reports.model import poisson_cdf

    for k in (250, 3000):
        lo, hi = model.poisson_interval(k)
        assert poisson_cdf(k, hi) == pytest.approx(0.025, abs=5e-4)
        assert 1.0 - poisson_cdf(k - 1, lo) == pytest.approx(0.025, abs=5e-4)


def test_simulation_agrees_with_the_formula_under_its_own_assumptions() -> None:
    m, d, r = 6 * H, 300.0, 600.0
    for shape, gaps in ((1.0, sim.exponential(m)), (0.7, sim.weibull(0.7, m)), (1.5, sim.weibull(1.5, m))):
        for tau in (1200.0, 3400.0, 9000.0):
            # a long job (400 MTTIs): the formula is the long-run goodput, without the last segment's saving
            g = sim.simulate(tau, gaps, sim.constant(d), sim.constant(r), mtti=m, replicas=100, seed=3, work_mttis=400)
            assert g == pytest.approx(model.goodput(tau, d, r, m, shape), abs=0.002), (shape, tau)
    # the renewal form is Daly's at shape 1, and a bursty shape moves the optimum to longer intervals
    assert model.goodput(3000, 300, 600, m, 1.0 + 1e-9) == pytest.approx(model.goodput(3000, 300, 600, m), rel=1e-6)
    assert model.best(300, 600, m, 0.7) > model.best(300, 600, m) > model.best(300, 600, m, 1.5)


def test_weibull_shape_fit() -> None:
    rng = np.random.default_rng(5)
    for k in (0.7, 1.0, 1.5):
        assert model.fit_weibull_shape(list(rng.weibull(k, 2000) * 1000)) == pytest.approx(k, rel=0.06)
    with pytest.raises(model.ModelError):
        model.fit_weibull_shape([5.0, 5.0])


@pytest.mark.parametrize("name", ["exponential", "weibull-0.7", "weibull-1.5", "recorded"])
@pytest.mark.parametrize("case", [(6 * H, 300.0, 600.0), (3 * H, 1200.0, 1800.0)], ids=["512-gpus", "slow-fs"])
def test_advised_interval_is_within_half_a_percent_of_the_simulated_best(name: str,
                                                                       case: tuple[float, float, float]) -> None:
    """The advice knows what a ledger would: M, 400 recorded gaps (its Weibull shape is fitted to them), the mean
    δ and R. The simulation draws failures from the true distribution and δ, R from theirs; the best interval on a
    grid around the advice (÷3 to ×3) by simulation is the reference."""
    m, d_mean, r_mean = case
    rng = np.random.default_rng(7)
    recorded = rng.lognormal(0.0, 1.0, 400)      # a heavy-tailed recorded sample, as a ledger may hold
    gaps, seen = {"exponential": (sim.exponential(m), rng.exponential(1.0, 400)),
                  "weibull-0.7": (sim.weibull(0.7, m), rng.weibull(0.7, 400)),
                  "weibull-1.5": (sim.weibull(1.5, m), rng.weibull(1.5, 400)),
                  "recorded": (sim.empirical(recorded, m), recorded)}[name]
    saves = rng.gamma(4.0, d_mean / 4.0, 200)
    restarts = rng.gamma(2.0, r_mean / 2.0, 200)
    shape = model.fit_weibull_shape(list(seen))
    a = model.advise(float(saves.mean()), float(restarts.mean()), m, shape=shape)
    args = (gaps, sim.empirical(saves), sim.empirical(restarts))
    best_tau, best_g = sim.best_by_simulation(a.interval_s, *args, mtti=m, factor=3.0, points=13, replicas=250,
                                              seed=11)
    at = sim.simulate(a.interval_s, *args, mtti=m, replicas=250, seed=11)
    assert best_g >= at       # the advice is one of the grid's points
    assert (best_g - at) / best_g < 0.005, (name, shape, a.interval_s, best_tau, at, best_g)
    # and the grid is wide enough to matter: its ends are clearly worse
    worst = min(sim.scan([a.interval_s / 3, a.interval_s * 3], *args, mtti=m, replicas=250, seed=11))
    assert (best_g - worst) / best_g > 0.02


def _scope(**kw: Any) -> Scope:
    return Scope(**{"cluster": CLUSTER, "since": T0, "until": T0 + 10 * DAY, "nodes": 10, "gpus_per_node": 8, **kw})


def test_ledger_figures_with_the_thin_data_fallback(tmp_path: Path) -> None:
    """reports_data: one interruption of a multi-node attempt (32 GPU-hours): too few to project; the fleet's six
    failure incidents are used instead, and the message says so."""
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    inp = advice.gather(engine, _scope(), gpus=64, job=None, user="alice")
    down_h = (10798 + 3600 + 2400 + 2 * 86400 + 3600 + 3599) / 3600
    assert inp.mtti.value == pytest.approx((2400 - down_h) * 8 * H / 6 / 64, rel=1e-4)
    assert inp.mtti.source.startswith("fallback (only 1 interruption(s)") and inp.mtti.n == 6
    lo, hi = model.poisson_interval(6)
    assert inp.mtti.interval == pytest.approx(((2400 - down_h) * 8 * H / hi / 64, (2400 - down_h) * 8 * H / lo / 64),
                                              rel=1e-4)
    # δ: alice has no attempts with saves, so the cluster's 11 timed saves: 10, 10, 31..38, 21.03
    assert inp.checkpoint.value == pytest.approx((20 + sum(range(31, 39)) + 21.03) / 11)
    assert "cluster rep" in inp.checkpoint.source and inp.checkpoint.n == 11
    # R: chain 1's one recovery (60 s from NODE_FAIL to the retry running) + the one recorded load (20 s)
    assert inp.restart.value == pytest.approx(80.0) and inp.restart.n == 2
    out = advice.compose(inp, gpus=64, nodes=8)
    assert out["mtti_s"] == pytest.approx(inp.mtti.value, abs=0.1)
    assert out["interval_s"] == pytest.approx(model.best(inp.checkpoint.value, 80.0, inp.mtti.value), abs=0.1)
    assert out["interval_at_mtti_interval_s"][0] < out["interval_s"] < out["interval_at_mtti_interval_s"][1]


def test_ledger_projection_by_job_size_and_a_jobs_own_history(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    base = T0 + 2 * DAY
    events = []
    for i in range(20):   # 20 attempts of 10 h on 4 nodes, 5 of them ended by a node failure
        s = base + timedelta(hours=9 * i)
        events.append(attempt(1000 + i, 0, s, s, s + timedelta(hours=10), "NODE_FAIL" if i % 4 == 0 else
                              "COMPLETED", "b[1-4]", user="carol"))
    from .reports_data import checkpoint
    for k in range(4):    # job 1001 saves every 1000 s on b1 (30 s each), carol's only saves
        events.append(checkpoint("b1", 1001, base + timedelta(hours=9, seconds=1030 * k), 30.0))
    with engine.begin() as conn:
        ship.store(conn, events)
    inp = advice.gather(engine, _scope(), gpus=64, job=1001, user="carol")
    gpu_h = 32.0 + 20 * 10 * 4 * 8
    assert inp.mtti.value == pytest.approx(gpu_h * H / 6 / 64, rel=1e-6)
    assert inp.mtti.source.startswith("ledger: 6 interruptions")
    assert inp.checkpoint.value == pytest.approx(30.0) and "job 1001" in inp.checkpoint.source
    assert inp.current.value == pytest.approx(1000.0) and inp.current.n == 3
    from slurmtools.reports.build import build_report

    proj = build_report(engine, _scope(), sections=("mttf",))["mttf"]
    p64 = next(p for p in proj["projected"] if p["gpus"] == 64)     # the report's projection: the same M
    assert p64["mttf_h"] * H == pytest.approx(inp.mtti.value, rel=1e-5) and proj["note"] is None
    assert p64["mttf_h_low"] < p64["mttf_h"] < p64["mttf_h_high"]
    out = advice.compose(inp, gpus=64, nodes=8)
    assert out["current_interval_s"] == 1000.0
    assert out["goodput_at_current"] < out["goodput"]


def test_an_empty_ledger_asks_for_the_figures(tmp_path: Path) -> None:
    from slurmtools.ledger import schema

    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    schema.upgrade(engine)
    inp = advice.gather(engine, _scope(), gpus=8)
    with pytest.raises(advice.AdviceError, match=r"too little data.*give --mtti"):
        advice.compose(inp, gpus=8, nodes=1)
    inp.mtti = advice.override(inp.mtti, 6 * H, "--mtti")
    with pytest.raises(advice.AdviceError, match="--checkpoint-cost"):
        advice.compose(inp, gpus=8, nodes=1)
    inp.checkpoint = advice.override(inp.checkpoint, 300.0, "--checkpoint-cost")
    out = advice.compose(inp, gpus=8, nodes=1)     # R unknown: assumed = δ, and said so
    assert out["restart_cost_s"] == 300.0 and "assumed" in out["restart_cost_from"] and out["notes"]


def test_published_summary_gives_the_same_advice(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)
    direct = advice.compose(advice.gather(engine, _scope(), gpus=64), gpus=64, nodes=8)
    data = json.loads(json.dumps(advice.summary(advice.gather(engine, _scope(), gpus=1), _scope(),
                                                datetime.now(UTC))))
    via = advice.compose(advice.from_summary(data, 64), gpus=64, nodes=8)
    assert via["interval_s"] == pytest.approx(direct["interval_s"], abs=0.2)
    assert via["mtti_interval_s"] == pytest.approx(direct["mtti_interval_s"], abs=0.2)
    for bad in ([], {"gpu_seconds_per_interruption": "1e999"}, {"gpu_seconds_per_interruption": float("inf")}):
        try:
            inp = advice.from_summary(bad, 8)
        except advice.AdviceError:
            continue
        assert inp.mtti.value is None


def test_cli_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["advise", "checkpoint", "--nodes", "64", "--gpus-per-node", "8", "--mtti", "6h",
                               "--checkpoint-cost", "5m", "--restart-cost", "600", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for key in ("interval_s", "goodput", "mtti_s", "checkpoint_cost_s", "restart_cost_s", "mtti_from",
                "checkpoint_cost_from", "restart_cost_from", "range_s"):
        assert key in out
    assert out["gpus"] == 512 and out["mtti_s"] == 21600 and out["checkpoint_cost_from"] == "option --checkpoint-cost"
    assert 0 < out["goodput"] < 1 and out["range_s"][0] < out["interval_s"] < out["range_s"][1]
    text = runner.invoke(main, ["advise", "checkpoint", "--gpus", "512", "--mtti", "6h", "--checkpoint-cost", "5m",
                                "--restart-cost", "10m", "--interval", "2h"])
    assert text.exit_code == 0 and "checkpoint every 56m" in text.output
    assert "at the current interval (2h)" in text.output
    url = f"sqlite:///{tmp_path}/l.db"
    fill(make_engine(url))
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", url)
    monkeypatch.setenv("SLURM_CLUSTER_NAME", CLUSTER)
    config.reset()
    res = runner.invoke(main, ["advise", "checkpoint", "--nodes", "8", "--since", "2025-12-31", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["mtti_from"].startswith("fallback")
    for bad, msg, code in ((["--nodes", "8", "--mtti", "-5h"], "not a duration", 2),
                           (["--nodes", "8", "--mtti", "9" * 400 + "h"], "not a duration", 2),
                           (["--nodes", "8", "--mtti", "4000d"], "more than ten years", 2),
                           (["--nodes", "8", "--mtti", "0s", "--checkpoint-cost", "1m", "--restart-cost", "1m"],
                            "more than 0", 2),
                           ([], "--nodes N or --gpus N", 2)):
        res = runner.invoke(main, ["advise", "checkpoint", *bad])
        assert res.exit_code == code and msg in res.output and "Traceback" not in res.output, (bad, res.output)


def test_cli_publish_writes_what_the_wrapper_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    fill(make_engine(url))
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", url)
    monkeypatch.setenv("SLURM_CLUSTER_NAME", CLUSTER)
    config.reset()
    out = tmp_path / "advice.json"
    res = CliRunner().invoke(main, ["advise", "publish", "-o", str(out), "--since", "2025-12-31"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["cluster"] == CLUSTER and data["mtti_from"].startswith("fallback") and data["checkpoint_cost_s"] > 0
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    # a user without the database: the published figures, and a note saying so
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(f'[advise]\ndata_file = "{out}"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg_file))
    config.reset()
    res = CliRunner().invoke(main, ["advise", "checkpoint", "--nodes", "8", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert got["mtti_from"].startswith("published:") and any("could not be read" in n for n in got["notes"])
