"""The fleet's side of the fail-slow probe (controller/perf.py): every probe result recorded in the ledger, each
model's medians, slow GPUs, and the rails (a soft exclusion first, a drain when repeated; observe mode, breaker).
Slurm is the in-memory FakeSlurm; probe results come from the real check over SimulatedDriver, or as the events
the hook writes."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.checks import runner
from slurmtools.checks import system as sysmod
from slurmtools.controller import perf as fleetperf
from slurmtools.hooks import prolog
from slurmtools.ledger import api, models
from slurmtools.ledger.spool import Event, make_key

from .fakes import FakeSlurm
from .test_perf import H100, MODEL, node_snapshot

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def perf_event(cfg: Any, node: str, gpu: int, figures: dict[str, float], when: datetime,
               status: str = "ok") -> Event:
    uuid = f"GPU-{node}-{gpu}"
    data = {"node": node, "time": when, "profile": "health", "gpu_index": gpu, "uuid": uuid, "model": MODEL,
            "pci_bus_id": None, "status": status, **figures, "details": {}}
    return Event("perf", data, cluster=cfg.cluster, time=when, key=make_key("perf", cfg.cluster, uuid, when))


def fleet(cfg: Any, nodes: int = 20, spread: float = 0.003, when: datetime = T0,
          slow: dict[tuple[str, int], float] | None = None, seed: int = 1) -> None:
    """NODES nodes of 8 H100s at the real figures with SPREAD (relative sd); SLOW: (node, gpu) -> factor."""
    rng = random.Random(seed)
    events = []
    for n in range(1, nodes + 1):
        for g in range(8):
            factor = (slow or {}).get((f"n{n}", g), 1.0)
            figs = {k: round(v * factor * (1 + rng.gauss(0, spread)), 3) for k, v in H100.items()}
            events.append(perf_event(cfg, f"n{n}", g, figs, when, status="warn" if factor < 0.9 else "ok"))
    api.store_now(events, cfg)


def scan(world: dict[str, Any], now: datetime, record: bool = True) -> dict[str, Any]:
    cfg = world["cfg"]
    with Session(api.engine_for(cfg)) as s:
        out = fleetperf.scan(cfg, s, slurm=world["slurm"], now=now, record=record)
    api.store_now(out["events"], cfg)
    return out


def with_settings(world: dict[str, Any], extra: str) -> None:
    path = world["path"]
    path.write_text(path.read_text() + f"\n[checks]\nperf_baseline_file = \"{world['tmp']}/baseline.json\"\n"
                    + extra)
    world["cfg"] = config.load(path, env={})
    world["slurm"] = FakeSlurm(nodes=20)


def test_every_probe_result_the_health_hook_gets_is_recorded(world: dict[str, Any]) -> None:
    with_settings(world, "")
    cfg = world["cfg"]
    snap = node_snapshot(g2={"d2d_gbps": 0.8})
    report = runner.run(cfg, "health", node="n1", system=sysmod.System.from_snapshot(snap, "t"), persist=False)
    api.store_now(prolog.perf_events(cfg, report), cfg)
    with Session(api.engine_for(cfg)) as s:
        rows = s.execute(select(models.PerfResult).order_by(models.PerfResult.gpu_index)).scalars().all()
        got = [(r.gpu_index, r.status, round(r.d2d_gbps), r.model, r.sm_mhz_min, r.power_w_max) for r in rows]
    assert got == [(i, "warn" if i == 2 else "ok", 2380 if i == 2 else 2975, MODEL, 1980, 690) for i in range(8)]
    assert prolog.perf_events(cfg, runner.run(cfg, "prolog", node="n1",
                                              system=sysmod.System.from_snapshot(snap, "t"))) == []


def test_the_fleet_median_finds_the_slow_gpu_and_publishes_the_baseline(world: dict[str, Any]) -> None:
    with_settings(world, "")
    fleet(world["cfg"], slow={("n7", 3): 0.85})
    out = scan(world, T0 + timedelta(hours=1))
    assert out["gpus"] == 160 and out["models"][MODEL]["n"] == 160
    assert abs(out["models"][MODEL]["d2d_gbps"] / 2975 - 1) < 0.002
    assert [(f["node"], f["gpu"], f["basis"], f["streak"]) for f in out["slow"]] == [("n7", 3, "fleet", 1)]
    assert {s["metric"] for s in out["slow"][0]["shortfalls"]} == set(H100)
    published = json.loads((world["tmp"] / "baseline.json").read_text())
    assert published["models"][MODEL]["n"] == 160
    # the first time: a soft exclusion asking for a deep check, no drain
    assert out["outcomes"] == [{"node": "n7", "gpu": 3, "action": "soft_exclude", "outcome": "soft_excluded"}]
    assert not [c for c in world["slurm"].calls if c[0] == "drain"]
    with Session(api.engine_for(world["cfg"])) as s:
        x = s.execute(select(models.Exclusion)).scalars().one()
    assert (x.node, x.scope, x.source) == ("n7", "soft", "perf") and x.details["deep_check"] is True
    assert x.reason.startswith("slurmtools: hardware: fail-slow GPU 3: device-to-device copy")


def test_slow_again_drains_through_the_rails(world: dict[str, Any]) -> None:
    with_settings(world, "")
    fleet(world["cfg"], slow={("n7", 3): 0.85})
    scan(world, T0 + timedelta(hours=1))
    fleet(world["cfg"], when=T0 + timedelta(hours=2), slow={("n7", 3): 0.84}, seed=2)
    out = scan(world, T0 + timedelta(hours=3))
    assert out["slow"][0]["streak"] == 2
    assert out["outcomes"] == [{"node": "n7", "gpu": 3, "action": "drain", "outcome": "drained"}]
    drains = [c for c in world["slurm"].calls if c[0] == "drain"]
    assert len(drains) == 1 and drains[0][1] == ("n7",) and drains[0][2].startswith("slurmtools: hardware: fail-slow")


def test_a_gpu_that_recovered_is_not_slow(world: dict[str, Any]) -> None:
    with_settings(world, "")
    fleet(world["cfg"], slow={("n7", 3): 0.85})
    fleet(world["cfg"], when=T0 + timedelta(hours=2), seed=3)
    assert scan(world, T0 + timedelta(hours=3), record=False)["slow"] == []


def test_observe_mode_and_the_breaker(world: dict[str, Any]) -> None:
    with_settings(world, "")
    slow = {(f"n{n}", 0): 0.8 for n in (2, 4, 6, 8, 10)}
    fleet(world["cfg"], slow=slow)
    out = scan(world, T0 + timedelta(hours=1))
    # 20 nodes at 10%: at most 2 soft exclusions in one scan, the rest refused by the breaker
    assert [o["outcome"] for o in out["outcomes"]] == ["soft_excluded"] * 2 + ["breaker_open"] * 3
    path = world["path"]
    path.write_text(path.read_text().replace('cluster = "t"', 'cluster = "t"\nobserve = true'))
    world["cfg"] = config.load(path, env={})
    out = scan(world, T0 + timedelta(hours=2))
    assert {o["outcome"] for o in out["outcomes"]} == {"observe"} and out["events"] == []


def test_failed_probes_and_old_results_stay_out_of_the_baseline(world: dict[str, Any]) -> None:
    with_settings(world, "perf_min_fleet = 4\n")
    cfg = world["cfg"]
    fleet(cfg, nodes=1)
    api.store_now([perf_event(cfg, "n9", 0, {}, T0, status="unknown"),
                   perf_event(cfg, "n9", 1, {k: v * 0.5 for k, v in H100.items()}, T0 - timedelta(days=30))], cfg)
    out = scan(world, T0 + timedelta(hours=1), record=False)
    assert out["gpus"] == 8 and out["slow"] == []


def test_the_report_section_and_the_exporter(world: dict[str, Any]) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from slurmtools.reports.build import build_report
    from slurmtools.reports.exporter import LedgerCollector
    from slurmtools.reports.render import text
    from slurmtools.reports.scope import Scope

    with_settings(world, "")
    cfg = world["cfg"]
    fleet(cfg, nodes=4, slow={("n3", 5): 0.8})
    engine = api.engine_for(cfg)
    report = build_report(engine, Scope(cluster="t", since=T0 - timedelta(days=1), until=T0 + timedelta(days=1)),
                          sections=("gpu_perf",))
    section = report["gpu_perf"]
    assert (section["results"], section["gpus"], section["models"][MODEL]["gpus"]) == (32, 32, 32)
    assert section["models"][MODEL]["d2d_gbps"]["min"] < 0.81 * 2975
    assert [(g["node"], g["gpu"]) for g in section["slow"]] == [("n3", 5)]
    rendered = text(report)
    assert "9. GPU performance" in rendered and "- n3 GPU 5: d2d_gbps" in rendered
    registry = CollectorRegistry()
    registry.register(LedgerCollector(cfg, engine))
    lines = generate_latest(registry).decode().splitlines()
    d2d = [ln for ln in lines if ln.startswith("slurmtools_gpu_probe_d2d_gbps{")]
    assert len(d2d) == 32
    assert f'slurmtools_gpu_probe_slow{{gpu="5",model="{MODEL}",node="n3"}} 1.0' in lines
    assert f'slurmtools_gpu_probe_slow{{gpu="0",model="{MODEL}",node="n3"}} 0.0' in lines


def test_the_controllers_deep_checks_record_their_probes_too(world: dict[str, Any]) -> None:
    """The controller runs `slurmtools check --profile deep --json` (here: `cat` of such output, from the real
    check over SimulatedDriver) on a drained node: its probe results reach the ledger like the health hook's."""
    import random as rnd

    from slurmtools import drain
    from slurmtools.controller.engine import Controller

    with_settings(world, "perf_stress_seconds = 0\n")
    snap = node_snapshot(g5={"d2d_gbps": 0.7})
    report = runner.run(world["cfg"], "deep", node="n1", system=sysmod.System.from_snapshot(snap, "t"), persist=False)
    out = world["tmp"] / "deep.json"
    out.write_text(json.dumps([r.to_dict() for r in report.results] + [{"check": "perf", "status": "ok",
                                                                          "evidence": {"probe": "not a dict"}}]))
    path = world["path"]
    path.write_text(path.read_text().replace("[controller]", f'[controller]\ndeep_check_command = ["cat", "{out}"]'))
    cfg = world["cfg"] = config.load(path, env={})
    _, evs = drain.request_drain("n1", "hardware", "XID 79", job_id=7, actor="epilog", cfg=cfg, slurm=world["slurm"])
    api.record(evs, cfg)
    api.flush(cfg)
    c = Controller(cfg, slurm=world["slurm"], rng=rnd.Random(0), recovery=True)
    rows = c.recover(force=True)
    assert rows[0]["node"] == "n1"
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        got = s.execute(select(models.PerfResult.profile, models.PerfResult.gpu_index, models.PerfResult.status)
                        .order_by(models.PerfResult.gpu_index)).all()
    assert [tuple(r) for r in got] == [("deep", i, "warn" if i == 5 else "ok") for i in range(8)]


def test_an_unwritable_baseline_or_no_slurm_is_said_not_raised(world: dict[str, Any]) -> None:
    with_settings(world, "")
    fleet(world["cfg"], slow={("n7", 3): 0.85})
    path = world["path"]
    path.write_text(path.read_text().replace(f'perf_baseline_file = "{world["tmp"]}/baseline.json"',
                                             'perf_baseline_file = "/proc/no/such/baseline.json"'))
    world["cfg"] = config.load(path, env={})

    class NoSlurm:
        def nodes(self) -> list[Any]:
            raise RuntimeError("sinfo not found")

    world["slurm"] = NoSlurm()
    out = scan(world, T0 + timedelta(hours=1))
    assert out["baseline_error"].startswith("cannot publish /proc/no/such/baseline.json")
    assert "sinfo not found" in out["slurm_error"]
    assert [o["outcome"] for o in out["outcomes"]] == ["soft_excluded"]
