"""The detector's arithmetic on arrays (slurmtools.detect.score), its Prometheus client against a real HTTP
server answering like Prometheus's API, and acting on flags through the safety rails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

from slurmtools import config
from slurmtools.detect import act, prom, score
from slurmtools.detect.score import Params, Signal

from .fakes import JsonHandler, serving

P = Params(min_history=30, baseline_s=3 * 3600, step_s=60.0, hard_xids=frozenset({79, 48}))
TEMP = Signal.from_dict({"name": "gpu_temp", "query": "T", "direction": "up", "floor": 1.5, "kind": "thermal"})
T, S = 600, 16


def fleet(seed: int = 0) -> np.ndarray:
    """16 GPUs at 60-70 C with their own offsets and a little noise."""
    rng = np.random.default_rng(seed)
    return 60 + rng.normal(0, 3, (S, 1)) + rng.normal(0, 0.5, (S, T))


def run(X: np.ndarray, sig: Signal = TEMP, state: np.ndarray | None = None) -> list[score.Flag]:
    keys = [(f"n{i // 4}", str(i % 4)) for i in range(X.shape[0])]
    W = np.ones_like(X) if state is None else state
    ev = score.evaluate(sig, keys, X, W, ["h100"] * X.shape[0], P)
    return score.flags([ev], P, first=200)


def test_a_healthy_fleet_is_not_flagged() -> None:
    assert run(fleet()) == []


def test_a_fleet_wide_step_flags_nobody() -> None:
    X = fleet()
    X[:, 400:] += 15.0                       # every GPU at once: a job started, the room warmed
    assert run(X) == []


def test_one_gpu_drifting_is_flagged_with_its_evidence() -> None:
    X = fleet()
    X[5, 300:] += np.linspace(0, 25, T - 300)  # thermal runaway on one GPU
    flags = run(X)
    assert [(f.node, f.device, f.kind) for f in flags] == [("n1", "1", "thermal")]
    f = flags[0]
    # raised once the GPU is ~6 floors (9 C) above its own baseline, which ends an hour before: 0.083 C a sample
    assert 300 + 100 < f.start_i < 300 + 200 and f.end_i == T - 1 and f.score >= P.threshold
    sig = f.signals[0]
    assert sig["signal"] == "gpu_temp" and sig["z_self"] >= P.threshold and sig["z_peer"] >= P.peer_z


def test_a_short_blip_is_not_a_flag() -> None:
    X = fleet()
    X[3, 350:353] += 30.0                    # three samples: under the persistence rule
    assert run(X) == []


def test_a_warm_aisle_of_a_few_nodes_is_not_a_flag() -> None:
    X = fleet()
    X[:4, 300:] += 3.0                       # one node's 4 GPUs a little warmer for hours
    assert run(X) == []


def test_a_gpu_that_always_runs_hot_is_its_normal() -> None:
    X = fleet()
    X[7] += 12.0                             # far from its peers, but always so
    assert run(X) == []


def test_a_noisy_gpu_is_judged_against_its_own_noise() -> None:
    X = fleet()
    X[9] += np.random.default_rng(3).normal(0, 4, T)
    assert run(X) == []


def test_too_few_peers_gives_no_evidence() -> None:
    X = fleet()[:3].copy()
    X[1, 300:] += 30.0
    assert run(X) == []


def test_down_signals_only_count_while_busy() -> None:
    clock = Signal.from_dict({"name": "sm_clock", "query": "C", "direction": "down", "floor": 25.0,
                              "busy_only": True, "kind": "clock_sag"})
    X = 1980 + np.random.default_rng(1).normal(0, 5, (S, T))
    state = np.ones((S, T))
    X[2, 300:] = 345.0                       # idle (its job ended): low clocks are no fault
    state[2, 300:] = 0.0
    assert run(X, clock, state) == []
    X[4, 300:] -= 300.0                      # busy and 300 MHz down: clock sag
    assert [(f.node, f.device) for f in run(X, clock, state)] == [("n1", "0")]


def test_hard_signals_flag_at_once() -> None:
    xid = Signal.from_dict({"name": "xid", "query": "X", "hard": "xid", "kind": "xid"})
    X = np.zeros((S, T))
    X[6, 420:430] = 79.0
    X[8, 420:430] = 13.0                     # an application XID: not hard
    flags = run(X, xid)
    assert [(f.node, f.device, f.start_i, f.hard, f.score) for f in flags] == [("n1", "2", 420, True, 100.0)]


def test_a_flag_that_began_before_the_window_is_not_raised_again() -> None:
    X = fleet()
    X[5, 100:] += 25.0
    keys = [(f"n{i // 4}", str(i % 4)) for i in range(S)]
    ev = score.evaluate(TEMP, keys, X, np.ones_like(X), ["h100"] * S, P)
    assert [f.start_i < 150 for f in score.flags([ev], P, first=50)] == [True]
    assert score.flags([ev], P, first=150) == []             # still the same flag: not raised again


def test_signal_definitions_are_checked() -> None:
    with pytest.raises(ValueError, match="direction"):
        Signal.from_dict({"name": "x", "query": "q", "direction": "sideways"})
    with pytest.raises(ValueError, match="unknown key"):
        Signal.from_dict({"name": "x", "query": "q", "treshold": 3})


# --- the Prometheus client against a real HTTP server speaking the API

class _Prom(JsonHandler):
    calls: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        q = self.query()
        _Prom.calls.append(q)
        if q.get("query") == "bad(":
            self.reply(400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"})
            return
        start, end, step = float(q["start"]), float(q["end"]), float(q["step"])
        ts = np.arange(start, end + step / 2, step)
        result = [{"metric": {"__name__": "m", "Hostname": "n1", "gpu": str(g)},
                   "values": [[t, str(float(t) + g)] for t in ts if int(t) % 600 != 200]} for g in (0, 1)]
        self.reply(200, {"status": "success", "data": {"resultType": "matrix", "result": result}})


@pytest.fixture()
def fake_prom() -> Iterator[str]:
    _Prom.calls.clear()
    with serving(_Prom) as url:
        yield url


def test_range_queries_are_chunked_and_merged(fake_prom: str) -> None:
    client = prom.Client(fake_prom, chunk_s=3600)
    grid = prom.grid_for(1_790_000_000, 1_790_000_000 + 5 * 3600, 60)
    series = client.range("m", grid)
    assert grid.n == 301 and len(_Prom.calls) == 6        # 5 h in chunks of 60 samples
    assert sorted(s.labels["gpu"] for s in series) == ["0", "1"]
    one = next(s for s in series if s.labels["gpu"] == "1")
    gone = grid.times.astype(int) % 600 == 200               # the server leaves these out
    assert gone.sum() == 31 and np.isnan(one.values[gone]).all()   # a missing sample stays NaN
    assert (one.values[~gone] == grid.times[~gone] + 1).all()


def test_prometheus_errors_are_one_clear_line(fake_prom: str) -> None:
    grid = prom.grid_for(1_790_000_000, 1_790_000_600, 60)
    with pytest.raises(prom.PromError, match="HTTP 400 for 'bad\\(': parse error at char 5"):
        prom.Client(fake_prom).range("bad(", grid)
    with pytest.raises(prom.PromError, match="cannot reach Prometheus"):
        prom.Client("http://127.0.0.1:9", timeout=2).range("m", grid)
    with pytest.raises(prom.PromError, match="empty time range"):
        prom.grid_for(10, 5, 60)


# --- acting on flags

def _Cfg(**over: Any) -> config.Config:
    """The packaged defaults (observe off, 6h soft exclusions, breaker 10 % / 2 nodes) with OVER ("a.b": v)."""
    cfg = config.load(env={})
    cfg.general.cluster = "lab"
    for dotted, value in over.items():
        table, key = dotted.split(".")
        setattr(getattr(cfg, table), key, value)
    return cfg

    def drain_limit(self, total_nodes: int) -> int:
        """Config.drain_limit over this configuration's two breaker values (the real definition)."""
        from slurmtools.settings import Safety

        safety = Safety({"max_drain_fraction": self.values["safety.max_drain_fraction"],
                         "min_drain_nodes": self.values["safety.min_drain_nodes"], "settle": 0.0})
        return safety.drain_limit(total_nodes)


def _flag(node: str, hard: bool = False) -> dict[str, Any]:
    return {"node": node, "device": "3", "start": "2026-11-22T10:00:00Z", "end": "2026-11-22T11:00:00Z",
            "score": 100.0 if hard else 8.5, "kind": "thermal", "category": "hardware", "hard": hard,
            "evidence_since": "2026-11-22T09:40:00Z",
            "signals": [{"signal": "gpu_temp", "kind": "thermal", "hard": False, "z_self": 8.5, "z_peer": 4.0}]}


FLEET = {f"n{i}" for i in range(16)}     # the nodes Slurm lists


def test_flags_become_findings_and_soft_exclusions_within_the_breaker() -> None:
    flags = [_flag(f"n{i}") for i in range(5)]
    events, outcomes = act.events_for(_Cfg(), flags, known=FLEET, excluded={"n1"})
    findings = [e for e in events if e.type == "finding"]
    assert len(findings) == 5 and {e.data["kind"] for e in findings} == {"anomaly"}
    assert {e.data["trust"] for e in findings} == {"metrics"} and findings[0].data["gpu"] == "3"
    soft = [e for e in events if e.type == "exclusion"]
    # n1 already excluded; the breaker allows max(2, 10 % of 16) = 2 at once
    assert [e.data["node"] for e in soft] == ["n0", "n2"] and {e.data["scope"] for e in soft} == {"soft"}
    assert soft[0].data["reason"].startswith("slurmtools: hardware: anomaly thermal 3")
    assert [o["outcome"] for o in outcomes] == ["soft_excluded", "already_excluded", "soft_excluded",
                                                "breaker_open", "breaker_open"]
    again, _ = act.events_for(_Cfg(), flags[:1], known=FLEET, excluded=set())
    assert again[0].key == findings[0].key                  # the same flag twice is one finding


def test_observe_mode_records_and_excludes_nothing() -> None:
    events, outcomes = act.events_for(_Cfg(**{"general.observe": True}), [_flag("n0")], known=FLEET,
                                      excluded=set())
    assert [e.type for e in events] == ["finding"] and outcomes[0]["outcome"] == "observe"
