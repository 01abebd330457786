"""The checkpoint-interval model (docs/reports.md#checkpoint-advice): expected goodput of a job that computes for
TAU seconds, writes a checkpoint of DELTA seconds, and after each interruption pays RESTART seconds and redoes the
work since its last complete checkpoint, with interruptions at mean interval M (Daly 2006, exact for a Poisson
process; and its renewal-reward form for Weibull-distributed gaps, which is Daly's at shape 1); Young's and Daly's
closed forms; the interval that maximises it and the range within a share of the best; the Weibull shape fitted to
recorded gaps; and an exact Poisson confidence interval for a failure rate. No database."""

from __future__ import annotations

import math
from dataclasses import dataclass


class ModelError(ValueError):
    """The model's inputs make no sense (a cost or a time to interrupt that is not a finite positive number)."""


def _check(delta: float, restart: float, mtti: float) -> None:
    for name, v, low in (("checkpoint cost", delta, 0.0), ("restart cost", restart, 0.0), ("MTTI", mtti, 0.0)):
        if not math.isfinite(v) or v < low or (name == "MTTI" and v <= 0):
            raise ModelError(f"{name} must be a finite number {'> 0' if name == 'MTTI' else '>= 0'} (got {v!r})")


def goodput(tau: float, delta: float, restart: float, mtti: float, shape: float = 1.0) -> float:
    """Expected share of wall time spent on useful work (0..1). SHAPE 1 (exponential interruptions), Daly's exact
    model: wall time per segment of TAU useful seconds = M·e^(R/M)·(e^((TAU+DELTA)/M) − 1). Any other SHAPE: the
    gaps between interruptions are Weibull(SHAPE) with mean M and the clock starts again at each interruption (a
    renewal process); each gap X holds a restart and then ⌊(X − R)⁺ / (TAU + DELTA)⌋ complete segments, so
    goodput = (TAU / M) · Σ_{j≥1} S(R + j·(TAU + DELTA)), S the gaps' survival function (= Daly's at SHAPE 1)."""
    _check(delta, restart, mtti)
    if tau <= 0 or not math.isfinite(tau):
        return 0.0
    if shape != 1.0:
        return _renewal(tau, delta, restart, mtti, shape)
    x = (tau + delta) / mtti
    if x > 700 or restart / mtti > 700:     # e^x overflows: the job practically never finishes a segment
        return 0.0
    return tau / (mtti * math.exp(restart / mtti) * math.expm1(x))


def _renewal(tau: float, delta: float, restart: float, mtti: float, shape: float) -> float:
    import numpy as np

    scale = mtti / math.gamma(1.0 + 1.0 / shape)
    seg = tau + delta
    horizon = scale * 50.0 ** (1.0 / shape)        # S < e^-50 beyond
    n = min(int((horizon - restart) / seg) + 1, 5_000_000)
    if n <= 0:
        return 0.0
    t = restart + seg * np.arange(1, n + 1, dtype=float)
    return float(tau / mtti * np.exp(-((t / scale) ** shape)).sum())


def fit_weibull_shape(gaps: list[float]) -> float:
    """The maximum-likelihood Weibull shape of GAPS (> 0): the root of Σx^k·ln x / Σx^k − 1/k − mean(ln x) = 0
    (bisection on k in [0.2, 10]; the scale then follows, and the model rescales to M anyway)."""
    import numpy as np

    x = np.asarray([g for g in gaps if g > 0 and math.isfinite(g)], dtype=float)
    if x.size < 2 or float(x.max()) == float(x.min()):
        raise ModelError("a Weibull shape needs at least two different positive gaps")
    x = x / float(x.mean())
    lx = np.log(x)

    def f(k: float) -> float:
        xk = x ** k
        return float((xk * lx).sum() / xk.sum() - 1.0 / k - lx.mean())

    lo, hi = 0.2, 10.0
    if f(lo) > 0:
        return lo
    if f(hi) < 0:
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if f(mid) > 0 else (mid, hi)
    return (lo + hi) / 2.0


def young(delta: float, mtti: float) -> float:
    """Young (1974): √(2·δ·M)."""
    return math.sqrt(2.0 * delta * mtti)


def daly(delta: float, mtti: float) -> float:
    """Daly (2006), the higher-order estimate: √(2δM)·[1 + ⅓·√(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M."""
    if delta >= 2.0 * mtti:
        return mtti
    r = delta / (2.0 * mtti)
    return math.sqrt(2.0 * delta * mtti) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - delta


def best(delta: float, restart: float, mtti: float, shape: float = 1.0) -> float:
    """The TAU that maximises goodput(): golden-section search on log TAU (the function is unimodal in TAU), in a
    bracket around Daly's estimate."""
    _check(delta, restart, mtti)
    if delta == 0:
        return 0.0      # free checkpoints: checkpoint continuously (the caller bounds it from below)
    centre = max(daly(delta, mtti), 1e-9 * mtti)
    lo, hi = math.log(centre / 30.0), math.log(centre * 30.0)
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = goodput(math.exp(a), delta, restart, mtti, shape), goodput(math.exp(b), delta, restart, mtti, shape)
    for _ in range(200):
        if hi - lo < 1e-7:
            break
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = goodput(math.exp(b), delta, restart, mtti, shape)
        else:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = goodput(math.exp(a), delta, restart, mtti, shape)
    return math.exp((lo + hi) / 2.0)


def within(tau_best: float, share: float, delta: float, restart: float, mtti: float,
           shape: float = 1.0) -> tuple[float, float]:
    """The intervals whose goodput is at least (1 − SHARE) × the best's, as (shortest, longest), by bisection on
    each side of TAU_BEST."""
    target = goodput(tau_best, delta, restart, mtti, shape) * (1.0 - share)

    def edge(inside: float, outside: float) -> float:
        for _ in range(60):
            mid = math.sqrt(inside * outside)
            if goodput(mid, delta, restart, mtti, shape) >= target:
                inside = mid
            else:
                outside = mid
        return inside

    return edge(tau_best, tau_best * 1e-3), edge(tau_best, tau_best * 1e3)


@dataclass(frozen=True)
class Advice:
    interval_s: float
    goodput: float
    range_s: tuple[float, float]
    young_s: float
    daly_s: float


def advise(delta: float, restart: float, mtti: float, share: float = 0.01, floor_s: float = 1.0,
           shape: float = 1.0) -> Advice:
    """The advised interval (the model's optimum, at least FLOOR_S), its goodput and the range within SHARE."""
    if not (math.isfinite(shape) and 0.1 <= shape <= 20):
        raise ModelError(f"Weibull shape must be between 0.1 and 20 (got {shape!r})")
    tau = max(best(delta, restart, mtti, shape), floor_s)
    lo, hi = within(tau, share, delta, restart, mtti, shape)
    return Advice(tau, goodput(tau, delta, restart, mtti, shape), (lo, hi), young(delta, mtti), daly(delta, mtti))


def poisson_cdf(k: int, lam: float) -> float:
    """P(X <= K) for X ~ Poisson(LAM), summed in log space (no overflow for large K or LAM)."""
    if lam <= 0:
        return 1.0
    terms = [i * math.log(lam) - lam - math.lgamma(i + 1) for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def poisson_interval(k: int, conf: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) confidence interval of a Poisson mean from K observed events: the means under which K or
    fewer (resp. K or more) events are as unlikely as (1 − CONF)/2. Bisection on the Poisson CDF up to K = 200;
    beyond, the same bounds as chi-square quantiles (χ²(2K)/2, χ²(2K+2)/2) by Wilson and Hilferty's cube-root
    approximation, within 1e-4 relative there (the exact sum would cost K terms per step)."""
    a = (1.0 - conf) / 2.0
    if k > 200:
        from statistics import NormalDist

        z = NormalDist().inv_cdf(1.0 - a)

        def chi2(p_z: float, nu: float) -> float:
            return nu * (1.0 - 2.0 / (9.0 * nu) + p_z * math.sqrt(2.0 / (9.0 * nu))) ** 3

        return chi2(-z, 2.0 * k) / 2.0, chi2(z, 2.0 * k + 2.0) / 2.0

    def solve(f: object, lo: float, hi: float) -> float:
        assert callable(f)
        for _ in range(80):
            mid = (lo + hi) / 2.0
            if f(mid):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2.0

    upper_limit = 10.0 * (k + 10)
    upper = solve(lambda lam: poisson_cdf(k, lam) > a, 0.0, upper_limit)
    lower = 0.0 if k == 0 else solve(lambda lam: 1.0 - poisson_cdf(k - 1, lam) < a, 0.0, upper_limit)
    return lower, upper
