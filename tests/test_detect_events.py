"""The detector around one device's score: workload state that settles after a job starts or stops, signals that
come and go (smoothed), flags held across a gap in the data, and flags that start together grouped into one
node-level flag or a fleet event (slurmtools.detect.scan.settled, score, group)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from slurmtools.detect import group, prom, scan, score
from slurmtools.detect.score import Flag, Params, Signal

P = Params(min_history=30, baseline_s=3 * 3600, step_s=60.0)
TEMP = Signal.from_dict({"name": "gpu_temp", "query": "T", "direction": "up", "floor": 1.5, "kind": "thermal"})
T, S = 600, 16
KEYS = [(f"n{i // 4}", str(i % 4)) for i in range(S)]


def lag(x: np.ndarray, tau: float) -> np.ndarray:
    """First-order lag: how a GPU's temperature follows its load."""
    out = np.empty_like(x)
    acc = x[..., 0].copy()
    for i in range(x.shape[-1]):
        acc = acc + (x[..., i] - acc) / tau
        out[..., i] = acc
    return out


def test_settled_marks_the_minutes_after_a_change_of_state() -> None:
    busy = np.array([0] * 5 + [1] * 10 + [0] * 5, dtype=bool)
    unknown = np.zeros(20, dtype=bool)
    unknown[17] = True
    st = scan.settled(busy, unknown, 3)
    assert list(st[:5]) == [0] * 5
    assert list(st[5:8]) == [score.SETTLING] * 3 and list(st[8:15]) == [1] * 7
    assert list(st[15:17]) == [score.SETTLING] * 2 and np.isnan(st[17])
    assert list(st[18:]) == [score.SETTLING] * 2       # after a gap: what happened in it is not known
    gap = np.zeros(20, dtype=bool)
    gap[8:11] = True
    st = scan.settled(np.ones(20, dtype=bool), gap, 3)
    assert (st[:8] == 1).all() and np.isnan(st[8:11]).all() and (st[11:14] == score.SETTLING).all()
    assert (st[14:] == 1).all()
    # no utilisation at all: unknown throughout, nothing settles
    assert np.isnan(scan.settled(np.zeros(20, dtype=bool), np.ones(20, dtype=bool), 3)).all()


def _staggered_start(settle: int) -> list[Flag]:
    """Node n0 starts its job 8 minutes before the other 12 GPUs: for a few minutes it is much warmer than busy
    peers that are still warming up."""
    rng = np.random.default_rng(1)
    load = np.zeros((S, T))
    load[:, 200:] = 1.0
    load[4:, 300:310] = 0.0                      # the others: a short gap between jobs; n0 stays busy
    temp = 35 + 30 * lag(load, 8.0) + rng.normal(0, 3, (S, 1)) / 2 + rng.normal(0, 0.5, (S, T))
    unknown = np.zeros(T, dtype=bool)
    W = np.vstack([scan.settled(load[i] > 0.5, unknown, settle) for i in range(S)])
    ev = score.evaluate(TEMP, KEYS, temp, W, ["h100"] * S, P)
    return score.flags([ev], P, first=200)


def test_a_node_that_started_before_its_peers_is_not_flagged() -> None:
    assert _staggered_start(settle=10) == []
    # without the settling time the same physics is four thermal flags on n0: what settle is for
    assert {(f.node, f.kind) for f in _staggered_start(settle=0)} == {("n0", "thermal")}


THROTTLE = Signal.from_dict({"name": "hw_throttle", "query": "R", "direction": "up", "bits": 0x80, "smooth": "10m",
                             "floor": 0.05, "kind": "power_brake"})


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_a_brake_that_comes_and_goes_is_flagged_when_smoothed(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((S, T)) < 0.02, 128.0, 4.0)      # healthy: a power-brake sample now and then
    X[6, 350:] = np.where(rng.random(T - 350) < 0.35, 132.0, 4.0)   # one GPU braking a third of the time
    ev = score.evaluate(THROTTLE, KEYS, X, np.ones((S, T)), ["h100"] * S, P)
    assert ev.values[6, 400] == pytest.approx(np.mean(X[6, 391:401] >= 128))   # the share of the last 10 min
    flags = score.flags([ev], P, first=200)
    assert [(f.node, f.device, f.kind) for f in flags] == [("n1", "2", "power_brake")]
    assert 350 <= flags[0].start_i < 350 + 120


def test_a_flag_holds_across_a_gap_in_the_data() -> None:
    rng = np.random.default_rng(3)
    X = 60 + rng.normal(0, 3, (S, 1)) + rng.normal(0, 0.5, (S, T))
    X[5, 300:] += np.linspace(0, 25, T - 300)
    X[5, 480:500] = np.nan                       # the exporter stopped answering for 20 minutes
    ev = score.evaluate(TEMP, KEYS, X, np.ones((S, T)), ["h100"] * S, P)
    flags = score.flags([ev], P, first=200)
    assert [(f.node, f.device, f.end_i) for f in flags] == [("n1", "1", T - 1)]


def _flag(node: str, dev: str | None, start: int, kind: str = "thermal", hard: bool = False) -> Flag:
    return Flag(node, dev, start, start + 30, 100.0 if hard else 8.0 + start / 1000, kind, "hardware", hard, start,
                [{"signal": "gpu_temp", "z_self": 8.0}])


def test_many_gpus_of_one_node_together_are_one_node_flag() -> None:
    flags = [_flag("n1", str(g), 100 + g) for g in range(6)] + [_flag("n1", "7", 100, hard=True),
                                                                 _flag("n2", "0", 104), _flag("n2", "1", 300)]
    out, fleet = group.apply(flags, node_devices=4, fleet_nodes=3, window=10)
    assert fleet == []
    node = [f for f in out if f.node == "n1" and f.device is None]
    assert len(node) == 1 and node[0].devices == ["0", "1", "2", "3", "4", "5"]
    assert node[0].start_i == 100 and node[0].end_i == 135 and {s["device"] for s in node[0].signals} >= {"5"}
    # the hard flag stays the GPU's own; two flags of n2 half an hour apart stay two
    assert [(f.node, f.device) for f in out if f is not node[0]] == [("n1", "7"), ("n2", "0"), ("n2", "1")]


def test_one_kind_on_many_nodes_at_once_is_a_fleet_event_not_flags() -> None:
    flags = [_flag(f"n{i}", "0", 200 + i) for i in range(4)] + [_flag("n9", "3", 200, kind="ecc"),
                                                                _flag("n5", "1", 203, hard=True),
                                                                _flag("n6", "0", 260)]
    out, fleet = group.apply(flags, node_devices=4, fleet_nodes=3, window=10)
    assert [(e.kind, e.nodes, e.flags) for e in fleet] == [("thermal", ["n0", "n1", "n2", "n3"], 4)]
    assert sorted((f.node, f.kind) for f in out) == [("n5", "thermal"), ("n6", "thermal"), ("n9", "ecc")]
    # turned off: every flag is kept
    assert len(group.apply(flags, node_devices=0, fleet_nodes=0, window=10)[0]) == len(flags)


@pytest.mark.parametrize("axis", [0, 1])
def test_the_fast_median_is_numpys_nanmedian(axis: int) -> None:
    rng = np.random.default_rng(axis)
    for shape in [(1, 1), (2, 7), (37, 53), (8, 300)]:
        M = rng.normal(0, 1, shape)
        M[rng.random(shape) < 0.3] = np.nan
        M[0] = np.nan                                # an all-NaN slice along axis 1
        M[:, 0] = np.nan                             # ... and along axis 0
        med, mad, cnt = score._robust(M, axis)
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            want = np.nanmedian(M, axis=axis)
            want_mad = np.nanmedian(np.abs(M - np.expand_dims(want, axis)), axis=axis)
        np.testing.assert_allclose(med, want, equal_nan=True)
        np.testing.assert_allclose(mad, want_mad, equal_nan=True)
        assert (cnt == np.sum(~np.isnan(M), axis=axis)).all()


def _answer(series: list[tuple[dict[str, str], list[list[Any]]]]) -> bytes:
    """A range query's answer laid out as Prometheus writes it (compact JSON, metric then values)."""
    body = {"status": "success", "data": {"resultType": "matrix",
                                          "result": [{"metric": m, "values": v} for m, v in series]}}
    return json.dumps(body, separators=(",", ":")).encode()


def test_the_fast_matrix_reader_reads_what_json_reads() -> None:
    grid = prom.Grid(1000.0, 60.0, 10)
    full = [[1000 + 60 * i, str(20.5 + i)] for i in range(10)]
    full[3][1], full[4][1] = "NaN", "+Inf"
    gappy = [p for i, p in enumerate(full) if i not in (2, 7)]
    tricky = {"__name__": "x", "Hostname": 'n"1,"values":[', "path": "C:\\\\", "gpu": "0"}
    raw = _answer([(tricky, full), ({"Hostname": "n2"}, gappy), ({"Hostname": "n3"}, [])])
    parsed = prom._matrix(raw)
    assert parsed is not None and [p[0] for p in parsed] == [tricky, {"Hostname": "n2"}, {"Hostname": "n3"}]
    fast = prom._Out(10, "test")
    for labels, seg in parsed:
        prom._series(fast, labels, grid).put_segment(seg, 0, 9, grid)
    slow = prom._Out(10, "test")
    for item in json.loads(raw)["data"]["result"]:
        prom._put(prom._series(slow, item["metric"], grid).values, item["values"], grid)
    assert fast.keys() == slow.keys()
    for k in fast:
        np.testing.assert_array_equal(fast[k].values, slow[k].values)
    assert np.isnan(fast[tuple(sorted({"Hostname": "n2"}.items()))].values[[2, 7]]).all()
    # anything laid out otherwise (spaces, another key order, an error) goes to the JSON parser
    assert prom._matrix(json.dumps(json.loads(raw)).encode()) is None
    assert prom._matrix(b'{"status":"error","error":"bad"}') is None
