"""The detector's arithmetic: per-signal evidence against peers and against the device's own history, one score
per device, flags with persistence, hysteresis and a cooldown, and hard signals that flag at once.

For one signal, X[s, t] is series s (a GPU, a port, a node) at grid time t, and W[s, t] its workload state
(1 busy, 0 idle, NaN unknown, SETTLING just after a change: left out of everything). Then, with every median
taken over the devices of the same peer group in the same workload state at the same moment, and robust
scale = max(1.4826 x MAD, floor, rel_floor x |median|):

* residual   R = X - peer median                  (a fleet-wide job start or stop moves the median, not R)
* z_peer     = R / peer scale                      (how far the device stands out now)
* z_self     = (R - median of its own R) / scale  (how far it moved from its usual offset to its peers,
               its own history being the `baseline` before the last `gap` (so a drift over hours is not
               learnt as normal before it is flagged), in the same workload state)
* evidence   = z_self in the signal's bad direction, when z_peer also exceeds `peer_z` in that direction;
               else 0. A warm aisle moves a few nodes a little (z_self under the floor); a GPU that always
               runs warm has a high z_peer and a z_self of 0; a noisy node has a wide own scale.

The device's score is the root of the sum of squared weighted evidence of its signals. A flag is raised when
the score is at least `threshold` in `persist` of the last `persist_of` samples, holds while it stays above
`clear` or the device stands `threshold` peer scales apart (its own baseline may catch up with a drift that
goes on), and a new one on the same device within `cooldown` of the last one's end extends it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import numpy as np

MAD_K = 1.4826
EVIDENCE_CAP = 50.0
HARD_SCORE = 100.0
SETTLING = 2.0                         # workload state: just changed between busy and idle, not comparable yet


@dataclass
class Signal:
    name: str
    query: str
    level: str = "gpu"                 # gpu, port, node
    direction: str = "up"              # up, down, both
    floor: float = 1.0                 # least robust scale, in the signal's unit
    rel_floor: float = 0.0             # least robust scale as a fraction of |peer median|
    weight: float = 1.0
    kind: str = ""
    category: str = "hardware"
    busy_only: bool = False            # only evaluated while the device is busy (clocks, power)
    hard: str = ""                     # "", increase, nonzero, xid
    bits: int = 0                      # a bitmask: the value becomes 1 when any of these bits is set
    smooth: float = 0.0                # seconds: score the trailing mean over this long (intermittent signals)
    unit: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Signal:
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"signal {d.get('name', '?')!r}: unknown key(s) {', '.join(sorted(unknown))}")
        d = dict(d)
        if isinstance(d.get("smooth"), str):
            from slurmtools import timeutil

            try:
                d["smooth"] = timeutil.parse_duration(d["smooth"]).total_seconds()
            except ValueError as exc:
                raise ValueError(f"signal {d.get('name', '?')!r}: smooth: {exc}") from None
        sig = cls(**d)
        if sig.direction not in {"up", "down", "both"}:
            raise ValueError(f"signal {sig.name!r}: direction must be up, down or both")
        if sig.level not in {"gpu", "port", "node"}:
            raise ValueError(f"signal {sig.name!r}: level must be gpu, port or node")
        if sig.hard not in {"", "increase", "nonzero", "xid"}:
            raise ValueError(f"signal {sig.name!r}: hard must be increase, nonzero or xid")
        if not sig.hard and sig.floor <= 0 and sig.rel_floor <= 0:
            raise ValueError(f"signal {sig.name!r}: floor or rel_floor must be positive")
        sig.kind = sig.kind or sig.name
        return sig


@dataclass
class Params:
    threshold: float = 6.0
    clear: float = 3.0
    persist: int = 5
    persist_of: int = 7
    clear_samples: int = 10
    cooldown_s: float = 7200.0
    peer_z: float = 2.5
    min_peers: int = 4
    baseline_s: float = 6 * 3600.0
    gap_s: float = 3600.0              # the newest hour is left out of the own baseline (a slow drift is not normal)
    min_history: int = 30
    block: int = 15                    # the own baseline is recomputed every `block` samples
    step_s: float = 60.0
    node_devices: int = 4              # this many devices of one node flagging one kind together: one node flag
    fleet_nodes: int = 3               # the same kind starting together on this many nodes: a fleet event
    together_s: float = 600.0          # "together": flag starts within this long of the first
    hard_xids: frozenset[int] = frozenset()


@dataclass
class Evidence:
    """One signal's arrays for the devices of one level, aligned with `keys` (node, device)."""
    signal: Signal
    keys: list[tuple[str, str | None]]
    values: np.ndarray
    peer_median: np.ndarray
    self_median: np.ndarray
    z_peer: np.ndarray
    z_self: np.ndarray
    evidence: np.ndarray
    hard: np.ndarray


@dataclass
class Flag:
    node: str
    device: str | None
    start_i: int
    end_i: int
    score: float
    kind: str
    category: str
    hard: bool
    first_evidence_i: int
    signals: list[dict[str, Any]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)      # a node-level flag made of several devices' flags


def _nanmedian(M: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Median and count of the non-NaN values along AXIS (NaN where there are none). One sort: numpy sorts NaN
    last, so the median sits at the middle of each slice's first `count` values (np.nanmedian's masked-array
    path is ~10x slower on the detector's shapes)."""
    srt = np.sort(M, axis=axis)
    cnt = np.sum(~np.isnan(M), axis=axis)
    lo = np.expand_dims(np.maximum((cnt - 1) // 2, 0), axis)
    hi = np.expand_dims(np.maximum(cnt // 2, 0), axis)
    with np.errstate(invalid="ignore"):
        med = (np.take_along_axis(srt, lo, axis) + np.take_along_axis(srt, hi, axis)) / 2
    out: np.ndarray = np.where(cnt > 0, np.squeeze(med, axis), np.nan)
    return out, cnt


def _robust(M: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median, MAD and count of non-NaN values along AXIS (all-NaN slices give NaN)."""
    med, cnt = _nanmedian(M, axis)
    with np.errstate(invalid="ignore"):
        mad, _ = _nanmedian(np.abs(M - np.expand_dims(med, axis)), axis)
    return med, mad, cnt


def _scale(mad: np.ndarray, med: np.ndarray, sig: Signal) -> np.ndarray:
    out: np.ndarray = np.maximum(np.maximum(MAD_K * np.nan_to_num(mad), sig.floor),
                                 sig.rel_floor * np.abs(np.nan_to_num(med)))
    return out


def evaluate(sig: Signal, keys: list[tuple[str, str | None]], X: np.ndarray, state: np.ndarray,
             groups: list[str], p: Params) -> Evidence:
    """Evidence of one signal for S series over T samples (X, state: S x T; groups: a peer group per series)."""
    X = X.astype(float, copy=True)
    if sig.bits:
        raw = np.nan_to_num(X, nan=0).astype(np.int64)
        X = np.where(np.isnan(X), np.nan, ((raw & sig.bits) != 0).astype(float))
    S, T = X.shape
    if sig.smooth > p.step_s:
        X = _trailing_mean(X, round(sig.smooth / p.step_s))
    hard = np.zeros((S, T), dtype=bool)
    if sig.hard:
        hard = _hard(sig, X, p)
        zero = np.zeros((S, T))
        return Evidence(sig, keys, X, zero, zero, zero, zero, zero, hard)
    X[state == SETTLING] = np.nan
    if sig.busy_only:
        X[state != 1] = np.nan
    st = np.where(np.isnan(state), 1.0, state)        # unknown workload state: one group with the busy
    pm = np.full((S, T), np.nan)
    pscale = np.full((S, T), np.nan)
    for g in sorted(set(groups)):
        rows = np.array([i for i, x in enumerate(groups) if x == g])
        for v in (0.0, 1.0):
            sel = st[rows] == v
            if not sel.any():
                continue
            M = np.where(sel, X[rows], np.nan)
            med, mad, cnt = _robust(M, axis=0)
            ok = cnt >= p.min_peers
            scale = _scale(mad, med, sig)
            put = sel & ok[None, :]
            pm[rows] = np.where(put, med[None, :], pm[rows])
            pscale[rows] = np.where(put, scale[None, :], pscale[rows])
    R = X - pm
    zp = R / pscale
    sm, sscale = _own_baseline(R, st, pm, sig, p)
    zs = (R - sm) / sscale
    if sig.direction == "up":
        ev = np.where(zp >= p.peer_z, zs, 0.0)
    elif sig.direction == "down":
        ev = np.where(zp <= -p.peer_z, -zs, 0.0)
    else:
        ev = np.where(np.abs(zp) >= p.peer_z, np.where(np.sign(zp) == np.sign(zs), np.abs(zs), 0.0), 0.0)
    ev = np.clip(np.nan_to_num(ev, nan=0.0, posinf=EVIDENCE_CAP), 0.0, EVIDENCE_CAP) * sig.weight
    return Evidence(sig, keys, X, pm, sm, zp, zs, ev, hard)


def _trailing_mean(X: np.ndarray, k: int) -> np.ndarray:
    """The mean of each row's last K samples (NaN left out; NaN where all K are)."""
    ok = ~np.isnan(X)
    c = np.cumsum(np.where(ok, X, 0.0), axis=1)
    n = np.cumsum(ok, axis=1)
    c[:, k:] = c[:, k:] - c[:, :-k]
    n[:, k:] = n[:, k:] - n[:, :-k]
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(n > 0, c / np.maximum(n, 1), np.nan)
    return out


def _own_baseline(R: np.ndarray, st: np.ndarray, pm: np.ndarray, sig: Signal,
                  p: Params) -> tuple[np.ndarray, np.ndarray]:
    """Each series' median and robust scale of its own residual over the `baseline` before each block of
    samples, in the same workload state; NaN where it has fewer than `min_history` such samples (the first
    `baseline_gap` + `min_history` of a series' data: 1.5 h by default)."""
    S, T = R.shape
    W = max(int(p.baseline_s / p.step_s), p.min_history)
    sm = np.full((S, T), np.nan)
    ss = np.full((S, T), np.nan)
    stride = max(1, W // 120)                           # at most ~120 samples per baseline: a median is robust
    for b0 in range(0, T, p.block):
        b1 = min(T, b0 + p.block)
        z = max(0, b0 - int(p.gap_s / p.step_s))
        a = max(0, z - W)
        if z - a < p.min_history:
            continue
        win = R[:, a:z:stride]
        wst = st[:, a:z:stride]
        for v in (0.0, 1.0):
            here = st[:, b0:b1] == v
            if not here.any():
                continue
            M = np.where(wst == v, win, np.nan)
            med, mad, cnt = _robust(M, axis=1)
            ok = cnt * stride >= p.min_history
            level = _robust(np.abs(pm[:, a:z:stride]), axis=1)[0] if sig.rel_floor else med
            scale = _scale(mad, level, sig)
            put = here & ok[:, None]
            sm[:, b0:b1] = np.where(put, med[:, None], sm[:, b0:b1])
            ss[:, b0:b1] = np.where(put, scale[:, None], ss[:, b0:b1])
    return sm, ss


def _hard(sig: Signal, X: np.ndarray, p: Params) -> np.ndarray:
    out: np.ndarray
    if sig.hard == "nonzero":
        out = np.nan_to_num(X, nan=0.0) > 0
    elif sig.hard == "increase":
        d = np.diff(X, axis=1, prepend=np.nan)
        out = np.nan_to_num(d, nan=0.0) > 0             # a counter reset (negative) is not an error
    else:
        vals = np.nan_to_num(X, nan=0.0).astype(np.int64)
        prev = np.concatenate([np.zeros((X.shape[0], 1), dtype=np.int64), vals[:, :-1]], axis=1)
        out = np.isin(vals, list(p.hard_xids)) & (vals != prev)   # a new fatal XID value
    return out


def flags(evs: list[Evidence], p: Params, first: int = 0) -> list[Flag]:
    """Combine the evidence of every signal per (node, device) and raise flags at or after sample FIRST."""
    by_dev: dict[tuple[str, str | None], list[tuple[Evidence, int]]] = {}
    for ev in evs:
        for i, key in enumerate(ev.keys):
            by_dev.setdefault(key, []).append((ev, i))
    out: list[Flag] = []
    for key, parts in sorted(by_dev.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        T = parts[0][0].evidence.shape[1]
        sq = np.zeros(T)
        hard = np.zeros(T, dtype=bool)
        apart = np.zeros(T, dtype=bool)      # standing far out from its peers (keeps a raised flag up)
        seen = np.zeros(T, dtype=bool)       # some scored signal has a value (else the flag neither rises nor clears)
        for ev, i in parts:
            sq += ev.evidence[i] ** 2
            if not ev.signal.hard:
                seen |= ~np.isnan(ev.values[i])
            hard |= ev.hard[i]
            zp = np.nan_to_num(ev.z_peer[i], nan=0.0)
            d = ev.signal.direction
            apart |= (zp >= p.threshold) if d == "up" else (-zp >= p.threshold) if d == "down" \
                else (np.abs(zp) >= p.threshold)
        score = np.sqrt(sq)
        out.extend(_device_flags(key, parts, score, hard, apart, ~seen, p, first))
    return out


def _device_flags(key: tuple[str, str | None], parts: list[tuple[Evidence, int]], score: np.ndarray,
                  hard: np.ndarray, apart: np.ndarray, blind: np.ndarray, p: Params, first: int) -> list[Flag]:
    """A blind sample (no scored signal has a value: settling after a job's start or stop, a scrape gap) neither
    raises nor clears a flag, for up to 3 x clear_samples in a row."""
    T = score.shape[0]
    over = score >= p.threshold
    window = np.convolve(over.astype(int), np.ones(p.persist_of, dtype=int))[:T]
    raised = (window >= p.persist) | hard
    found: list[Flag] = []
    t = 0          # from the beginning, so that a flag that began before FIRST is not raised again at FIRST
    while t < T:
        if not raised[t]:
            t += 1
            continue
        start = t
        low = dark = 0
        end = t
        while t < T and (low < p.clear_samples):
            dark = dark + 1 if blind[t] else 0
            if hard[t] or score[t] >= p.clear or apart[t]:
                end, low = t, 0
            elif not blind[t] or dark > 3 * p.clear_samples:
                low += 1
            t += 1
        back = start
        while back > 0 and score[back - 1] >= p.clear:
            back -= 1
        flag = _describe(key, parts, score, hard, start, end, back)
        if found and (start - found[-1].end_i) * p.step_s <= p.cooldown_s and not flag.hard:
            prev = found[-1]
            prev.end_i, prev.score = max(prev.end_i, end), max(prev.score, flag.score)
        else:
            found.append(flag)
    return [f for f in found if f.start_i >= first]


def _describe(key: tuple[str, str | None], parts: list[tuple[Evidence, int]], score: np.ndarray,
              hard: np.ndarray, start: int, end: int, back: int) -> Flag:
    seg = slice(start, end + 1)
    is_hard = bool(hard[seg].any())
    peak = start + int(np.argmax(score[seg]))
    signals: list[dict[str, Any]] = []
    best, best_w = None, -1.0
    for ev, i in parts:
        sig = ev.signal
        if sig.hard:
            if ev.hard[i, seg].any():
                at = start + int(np.argmax(ev.hard[i, seg]))
                signals.append({"signal": sig.name, "kind": sig.kind, "hard": True, "at_i": at,
                                "value": _num(ev.values[i, at])})
                if best_w < math.inf:
                    best, best_w = sig, math.inf
            continue
        total = float(ev.evidence[i, seg].sum())
        if total <= 0:
            continue
        at = peak if ev.evidence[i, peak] > 0 else start + int(np.argmax(ev.evidence[i, seg]))
        signals.append({"signal": sig.name, "kind": sig.kind, "hard": False, "at_i": at, "unit": sig.unit,
                        "value": _num(ev.values[i, at]), "peer_median": _num(ev.peer_median[i, at]),
                        "own_baseline": _num(ev.self_median[i, at] + ev.peer_median[i, at]),
                        "z_peer": _num(ev.z_peer[i, at], 2), "z_self": _num(ev.z_self[i, at], 2),
                        "evidence": _num(ev.evidence[i, at], 2)})
        if total > best_w:
            best, best_w = sig, total
    signals.sort(key=lambda s: (not s["hard"], -(s.get("evidence") or 0.0)))
    top = best or parts[0][0].signal
    return Flag(key[0], key[1], start, end, HARD_SCORE if is_hard else round(float(score[peak]), 2), top.kind,
                top.category, is_hard, back, signals)


def _num(v: SupportsFloat, digits: int = 4) -> float | None:
    f = float(v)
    return None if math.isnan(f) or math.isinf(f) else round(f, digits)
