"""Monte Carlo of a checkpointing job under interruptions (numpy), to check the advised interval against more than
the formula's exponential assumption (docs/reports.md#checkpoint-advice).

A job must do WORK seconds of computation. It computes TAU seconds, writes a checkpoint (a cost drawn from the
checkpoint-cost distribution), and so on; the last piece needs no checkpoint. Interruptions form a renewal process:
the time from one interruption to the next is drawn from the inter-failure distribution (exponential, Weibull of any
shape, or a recorded sample resampled). An interruption loses the work since the last complete checkpoint (and a
checkpoint being written); the job then pays a restart cost (drawn) before it computes again, and an interruption
during the restart starts another one. Goodput = WORK / wall time, over all replicas together.

Common random numbers: every draw comes from a stream indexed by (replica, n-th interruption) or (replica, n-th
checkpoint), seeded by SEED alone, so two intervals are compared on the same failures (their difference is
measured far more precisely than either goodput)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

#: Draws an array of SHAPE from a generator: the form of every distribution below.
Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def exponential(mean: float) -> Sampler:
    return lambda rng, shape: rng.exponential(mean, shape)


def weibull(shape_k: float, mean: float) -> Sampler:
    """Weibull of shape K scaled to MEAN (k < 1: failures come in bursts; k > 1: wear-out, more regular)."""
    scale = mean / math.gamma(1.0 + 1.0 / shape_k)
    return lambda rng, shape: scale * rng.weibull(shape_k, shape)


def empirical(values: Sequence[float], mean: float | None = None) -> Sampler:
    """Resampling of recorded VALUES (with replacement); with MEAN, rescaled to that mean (the recorded shape)."""
    arr = np.asarray([v for v in values if math.isfinite(v) and v >= 0], dtype=float)
    if arr.size == 0 or float(arr.mean()) <= 0:
        raise ValueError("an empirical distribution needs at least one positive finite value")
    if mean is not None:
        arr = arr * (mean / float(arr.mean()))
    return lambda rng, shape: rng.choice(arr, size=shape)


def constant(value: float) -> Sampler:
    return lambda rng, shape: np.full(shape, float(value))


def simulate(tau: float, gaps: Sampler, delta: Sampler, restart: Sampler, *, mtti: float, work_mttis: float = 40.0,
             replicas: int = 1000, seed: int = 1) -> float:
    """The simulated goodput (0..1) at interval TAU; MTTI (the gaps' mean) sizes the job: WORK = WORK_MTTIS × MTTI."""
    if tau <= 0 or not math.isfinite(tau):
        raise ValueError(f"interval must be a finite number > 0 (got {tau!r})")
    work = work_mttis * mtti
    n_fail = int(work_mttis * 3 + 50)            # interruptions per replica drawn ahead (wrapped if ever exceeded)
    n_seg = math.ceil(work / tau) + 1
    gap = gaps(np.random.default_rng([seed, 0]), (n_fail, replicas))
    rst = restart(np.random.default_rng([seed, 1]), (n_fail, replicas))
    dlt = delta(np.random.default_rng([seed, 2]), (min(n_seg, 1_000_000 // max(replicas, 1) + 1), replicas))
    n_dlt = dlt.shape[0]
    done = np.zeros(replicas)
    wall = np.zeros(replicas)
    seg_i = np.zeros(replicas, dtype=np.int64)
    fail_i = np.ones(replicas, dtype=np.int64)
    ttf = gap[0].copy()
    active = np.arange(replicas)
    eps = work * 1e-12
    for _ in range(10_000_000):
        if active.size == 0:
            break
        w = np.minimum(tau, work - done[active])
        last = done[active] + w >= work - eps
        d = np.where(last, 0.0, dlt[seg_i[active] % n_dlt, active])
        seg = w + d
        ok = ttf[active] >= seg
        s = active[ok]
        wall[s] += seg[ok]
        ttf[s] -= seg[ok]
        done[s] += w[ok]
        seg_i[s] += 1
        pending = active[~ok]
        wall[pending] += ttf[pending]
        while pending.size:             # a restart, and another one for each interruption during it
            k = fail_i[pending] % n_fail
            g, r = gap[k, pending], rst[k, pending]
            fail_i[pending] += 1
            fine = g >= r
            wall[pending[fine]] += r[fine]
            ttf[pending[fine]] = g[fine] - r[fine]
            wall[pending[~fine]] += g[~fine]
            pending = pending[~fine]
        active = active[done[active] < work - eps]
    return float(work * replicas / wall.sum())


def scan(taus: Sequence[float], gaps: Sampler, delta: Sampler, restart: Sampler, *, mtti: float,
         work_mttis: float = 40.0, replicas: int = 1000, seed: int = 1) -> list[float]:
    """simulate() at each of TAUS, on the same random numbers."""
    return [simulate(t, gaps, delta, restart, mtti=mtti, work_mttis=work_mttis, replicas=replicas, seed=seed)
            for t in taus]


def grid(center: float, factor: float = 4.0, points: int = 33) -> list[float]:
    """POINTS intervals spaced evenly in log between CENTER / FACTOR and CENTER × FACTOR."""
    lo, hi = math.log(center / factor), math.log(center * factor)
    return [math.exp(lo + (hi - lo) * i / (points - 1)) for i in range(points)]


def best_by_simulation(center: float, gaps: Sampler, delta: Sampler, restart: Sampler, *, mtti: float,
                       factor: float = 4.0, points: int = 33, **kw: float) -> tuple[float, float]:
    """(interval, goodput) of the best interval on grid(CENTER, FACTOR, POINTS), by simulation."""
    taus = grid(center, factor, points)
    g = scan(taus, gaps, delta, restart, mtti=mtti, **kw)   # type: ignore[arg-type]
    i = int(np.argmax(g))
    return taus[i], g[i]
