"""Checkpoint-interval advice from the ledger (docs/reports.md#checkpoint-advice): the mean time to interrupt (M)
of a job of this size from the report's projection (with its confidence interval, or a stated fallback when the
ledger holds too few interruptions), the checkpoint cost (δ) from recorded saves, the restart cost (R) from
recorded recoveries and loads, and the interval that maximises the expected goodput (reports/model.py).

`gather` reads the ledger (one read-only connection); `compose` turns figures, from the ledger, the options or a
published summary, into the advice. `published` is the summary `slurmtools advise publish` writes for the sbatch
wrapper, which runs as the user without database credentials; `hint` is the wrapper's one line from it."""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from slurmtools.reports import chains, incidents, model
from slurmtools.reports.incidents import CONFIDENCE, MIN_INTERRUPTIONS
from slurmtools.reports.scope import Scope, Sql

#: The least number of recorded saves (loads, recoveries) a user's or partition's figure rests on.
MIN_SAMPLES = 3
#: Inter-failure gaps needed before the ledger's own distribution is used by the simulation.
MIN_GAPS = 20
#: Any duration beyond this (ten years) is treated as a mistake.
MAX_SECONDS = 10 * 365 * 86400.0


class AdviceError(ValueError):
    """The advice cannot be given; the message says what is missing and which option supplies it."""


@dataclass
class Figure:
    """One input of the model: its value (seconds), where it came from, what it rests on."""

    value: float | None = None
    source: str = ""
    n: int = 0
    samples: list[float] = field(default_factory=list)
    interval: tuple[float, float] | None = None


@dataclass
class Inputs:
    mtti: Figure = field(default_factory=Figure)
    checkpoint: Figure = field(default_factory=Figure)
    restart: Figure = field(default_factory=Figure)
    current: Figure = field(default_factory=Figure)
    #: Fleet inter-failure gaps divided by their mean: the shape of the ledger's own distribution.
    shape: list[float] = field(default_factory=list)
    #: The Weibull shape of the gaps: given (an option, the published summary), else fitted to SHAPE, else 1.
    weibull: Figure = field(default_factory=Figure)
    notes: list[str] = field(default_factory=list)


def finite_seconds(values: list[Any]) -> list[float]:
    """The values that are real durations (finite, >= 0, below MAX_SECONDS); anything else is not a measurement."""
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and 0.0 <= f <= MAX_SECONDS:
            out.append(f)
    return out


def mtti_from_rate(hits: int, gpu_hours: float, gpus: int) -> Figure | None:
    """M for GPUS from HITS interruptions in GPU_HOURS, with its exact Poisson interval; None below the minimum."""
    if hits < MIN_INTERRUPTIONS or gpu_hours <= 0 or gpus <= 0:
        return None
    lo, hi = model.poisson_interval(hits, CONFIDENCE)
    per_gpu_s = gpu_hours * 3600.0
    m = per_gpu_s / hits / gpus
    return Figure(m, "", hits, interval=(per_gpu_s / hi / gpus, per_gpu_s / lo / gpus if lo > 0 else math.inf))


def gather(engine: Engine, scope: Scope, *, gpus: int, prefix: str = "slurmtools:", job: int | None = None,
           user: str | None = None) -> Inputs:
    """The model's inputs for a job of GPUS GPUs, from the ledger in SCOPE (its window, cluster, partition)."""
    out = Inputs()
    with engine.connect() as conn:
        sql = Sql(conn)
        if sql.name == "sqlite":
            conn.exec_driver_sql("PRAGMA query_only=OFF")   # temporary tables only; main stays read-only
        params = incidents.prepare(sql, scope, prefix)
        out.mtti = _mtti(sql, scope, params, gpus)
        out.shape = fleet_shape(sql, params)
        level = _level(sql, scope, params, job, user)
        out.checkpoint = _costs(sql, params, "save", level)
        chains.prepare(sql, scope, params)
        out.restart = _restart(sql, params, job, level)
        if job is not None:
            out.current = _current(sql, params, job)
        conn.rollback()
    return out


def _mtti(sql: Sql, scope: Scope, params: dict[str, Any], gpus: int) -> Figure:
    proj = incidents.projected(sql, scope, params)
    hits, gpu_h = int(proj["interruptions"]), float(proj["gpu_hours"])
    fig = mtti_from_rate(hits, gpu_h, gpus)
    if fig is not None:
        fig.source = (f"ledger: {hits} interruptions in {gpu_h:.1f} GPU-hours of attempts of >= "
                      f"{scope.multi_node_min} nodes, scaled to {gpus} GPUs")
        return fig
    thin = f"only {hits} interruption(s) of multi-node attempts in {gpu_h:.1f} GPU-hours"
    fl = incidents.fleet(sql, scope)
    f = incidents.failures(sql, scope, params, fl)
    n, node_h = int(f["failures"]), float(f["node_hours_in_service"])
    fig = mtti_from_rate(n, node_h * scope.gpus_per_node, gpus)
    if fig is not None:
        fig.source = (f"fallback ({thin}): the fleet's {n} failure incidents in {node_h:.1f} node-hours in service "
                      f"x {scope.gpus_per_node} GPUs per node, scaled to {gpus} GPUs")
        return fig
    return Figure(None, f"too little data: {thin}, {n} fleet failure incident(s); give --mtti", hits + n)


def fleet_shape(sql: Sql, params: dict[str, Any]) -> list[float]:
    """The gaps between the fleet's failure incidents (st_failures) divided by their mean; [] below MIN_GAPS."""
    starts = [float(r["s"]) for r in sql.rows(
        "SELECT s FROM st_failures WHERE s >= :e0 AND s < :e1 ORDER BY s", params)]
    gaps = [b - a for a, b in itertools.pairwise(starts) if b > a]
    if len(gaps) < MIN_GAPS:
        return []
    mean = statistics.fmean(gaps)
    return [g / mean for g in gaps]


def _plain(text: str) -> str:
    """TEXT for a message: printable ASCII, at most 64 characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:64])


def _level(sql: Sql, scope: Scope, params: dict[str, Any], job: int | None,
           user: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    """The filters tried in turn for the recorded costs: the job's own, the user's, the partition's, the cluster's."""
    base = "c.cluster = :cluster AND c.time >= :t0 AND c.time < :t1"
    out: list[tuple[str, str, dict[str, Any]]] = []
    if job is not None:
        out.append((f"job {job}", f"{base} AND c.job_id = :job", {"job": job}))
    if user:
        out.append((f"user {_plain(user)}", f"{base} AND c.job_id IN (SELECT a.job_id FROM job_attempts a WHERE "
                                    'a.cluster = :cluster AND a."user" = :user)', {"user": user}))
    if scope.partition:
        out.append((f"partition {_plain(scope.partition)}",
                    f"{base} AND c.job_id IN (SELECT a.job_id FROM job_attempts a "
                    "WHERE a.cluster = :cluster AND a.partition = :partition)", {}))
    out.append((f"cluster {scope.cluster}", base, {}))
    return out


def _costs(sql: Sql, params: dict[str, Any], kind: str,
           levels: list[tuple[str, str, dict[str, Any]]]) -> Figure:
    for i, (label, where, extra) in enumerate(levels):
        vals = finite_seconds([r["v"] for r in sql.rows(
            f"""SELECT c.seconds AS v FROM checkpoint_events c WHERE {where} AND c.kind = :kind
                AND c.seconds IS NOT NULL ORDER BY c.time DESC LIMIT 10000""", {**params, **extra, "kind": kind})])
        last = i == len(levels) - 1
        if vals and (len(vals) >= MIN_SAMPLES or label.startswith("job") or last):
            return Figure(statistics.fmean(vals), f"ledger: mean of {len(vals)} recorded {kind}s of {label}",
                          len(vals), vals)
    return Figure(None, f"no recorded checkpoint {kind}s with a duration", 0)


def _restart(sql: Sql, params: dict[str, Any], job: int | None,
             levels: list[tuple[str, str, dict[str, Any]]]) -> Figure:
    """R = requeue to running (the gap between a chain's attempts) + a checkpoint load."""
    where, label = "prev_e IS NOT NULL AND s > prev_e", "the cluster's retry chains"
    gaps: list[float] = []
    if job is not None:
        gaps = finite_seconds([r["v"] for r in sql.rows(
            f"""SELECT s - prev_e AS v FROM st_chain_attempts WHERE {where} AND chain_id IN (
                    SELECT chain_id FROM st_chain_attempts WHERE job_id = :job)""", {**params, "job": job})])
        label = f"job {job}'s retry chain"
    if not gaps:
        gaps = finite_seconds([r["v"] for r in sql.rows(
            f"SELECT s - prev_e AS v FROM st_chain_attempts WHERE {where}", params)])
        label = "the cluster's retry chains"
    loads = _costs(sql, params, "load", levels)
    if not gaps and loads.value is None:
        return Figure(None, "no recorded recoveries or checkpoint loads", 0)
    gap = statistics.fmean(gaps) if gaps else 0.0
    load = loads.value or 0.0
    parts = []
    parts.append(f"mean requeue-to-running of {len(gaps)} recoveries of {label}" if gaps
                 else "no recorded recoveries (requeue-to-running taken as 0)")
    parts.append(loads.source.removeprefix("ledger: ") if loads.value is not None
                 else "no recorded loads (load taken as 0)")
    samples = [g + ld for g in (gaps or [0.0]) for ld in (loads.samples or [0.0])][:10000]
    return Figure(gap + load, "ledger: " + " + ".join(parts), len(gaps) + loads.n, samples)


def _current(sql: Sql, params: dict[str, Any], job: int) -> Figure:
    """The job's own interval: the median time from the end of one save to the start of the next, per node."""
    rows = sql.rows("""SELECT c.node, c.restart_count, c.seconds, {t} AS t FROM checkpoint_events c
                       WHERE c.cluster = :cluster AND c.job_id = :job AND c.kind = 'save' AND c.seconds IS NOT NULL
                       ORDER BY c.node, c.restart_count, c.time""".format(t=sql.epoch("c.time")),
                    {**params, "job": job})
    spans: list[float] = []
    for a, b in itertools.pairwise(rows):
        if (a["node"], a["restart_count"]) == (b["node"], b["restart_count"]):
            spans.append(float(b["t"]) - float(a["t"]) - float(a["seconds"]))
    spans = [s for s in finite_seconds(spans) if s > 0]
    if not spans:
        return Figure(None, f"job {job} has fewer than two timed saves on one node", 0)
    return Figure(statistics.median(spans), f"ledger: median of {len(spans)} gaps between job {job}'s saves",
                  len(spans), spans)


def override(fig: Figure, value: float | None, option: str) -> Figure:
    if value is None:
        return fig
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise AdviceError(f"{option} must be a duration between 0 and 10 years")
    return Figure(value, f"option {option}", 0, [value])


def compose(inp: Inputs, *, gpus: int, nodes: int | None, share: float = 0.01) -> dict[str, Any]:
    """The advice as plain data (the `--json` contract of docs/reports.md#checkpoint-advice)."""
    m, d, r = inp.mtti, inp.checkpoint, inp.restart
    if m.value is None or m.value <= 0:
        raise AdviceError(f"no mean time to interrupt for {gpus} GPUs: {m.source or 'give --mtti'}")
    if d.value is None:
        raise AdviceError(f"no checkpoint cost: {d.source or 'none recorded'}; give --checkpoint-cost")
    notes = list(inp.notes)
    if r.value is None:
        r = Figure(d.value, f"assumed equal to the checkpoint cost ({r.source}); give --restart-cost", 0)
        notes.append("restart cost assumed: no recovery or load recorded")
    mv, dv, rv = m.value, d.value, r.value
    assert rv is not None
    k, k_from = _weibull(inp)
    a = model.advise(dv, rv, mv, share, shape=k)
    out: dict[str, Any] = {
        "gpus": gpus, "nodes": nodes,
        "interval_s": round(a.interval_s, 1), "goodput": round(a.goodput, 5),
        "range_s": [round(a.range_s[0], 1), round(a.range_s[1], 1)], "range_share": share,
        "young_s": round(a.young_s, 1), "daly_s": round(a.daly_s, 1),
        "mtti_s": round(mv, 1), "mtti_from": m.source, "mtti_n": m.n,
        "mtti_interval_s": _interval(m.interval), "mtti_confidence": CONFIDENCE if m.interval else None,
        "checkpoint_cost_s": round(dv, 3), "checkpoint_cost_from": d.source, "checkpoint_cost_n": d.n,
        "restart_cost_s": round(rv, 3), "restart_cost_from": r.source, "restart_cost_n": r.n,
        "current_interval_s": None, "current_interval_from": inp.current.source or None, "goodput_at_current": None,
        "failure_shape": round(k, 3), "failure_shape_from": k_from,
        "model": ("Daly 2006: exponential interruptions; goodput = tau / (M e^(R/M) (e^((tau+delta)/M) - 1))"
                  if k == 1.0 else f"renewal: Weibull({k:.2f}) gaps of mean M; goodput = (tau/M) "
                                   "sum_j S(R + j (tau + delta))"),
        "notes": notes,
    }
    if m.interval:   # the advice at each end of M's interval: how much the uncertainty moves it
        out["interval_at_mtti_interval_s"] = [
            None if not math.isfinite(x) else round(model.advise(dv, rv, x, share, shape=k).interval_s, 1)
            for x in m.interval]
    if inp.current.value is not None:
        out["current_interval_s"] = round(inp.current.value, 1)
        out["goodput_at_current"] = round(model.goodput(inp.current.value, dv, rv, mv, k), 5)
    return out


def _weibull(inp: Inputs) -> tuple[float, str]:
    if inp.weibull.value is not None:
        return inp.weibull.value, inp.weibull.source
    if len(inp.shape) >= MIN_GAPS:
        k = model.fit_weibull_shape(inp.shape)
        return k, f"ledger: maximum-likelihood fit to {len(inp.shape)} gaps between the fleet's failure incidents"
    return 1.0, f"exponential assumed (fewer than {MIN_GAPS} recorded gaps between failure incidents, or none read)"


def _interval(iv: tuple[float, float] | None) -> list[float | None] | None:
    if iv is None:
        return None
    return [round(x, 1) if math.isfinite(x) else None for x in iv]


def check_by_simulation(advice: dict[str, Any], inp: Inputs, *, replicas: int = 400, seed: int = 1) -> dict[str, Any]:
    """The advised interval's goodput simulated with the ledger's own distributions (inter-failure shape, saves,
    restarts) where recorded, against the best interval of a grid around it."""
    from slurmtools.reports import simulate as sim

    m = float(advice["mtti_s"])
    gaps = sim.empirical(inp.shape, m) if inp.shape else sim.exponential(m)
    delta = sim.empirical(inp.checkpoint.samples) if inp.checkpoint.samples else sim.constant(
        advice["checkpoint_cost_s"])
    restart = sim.empirical(inp.restart.samples) if inp.restart.samples else sim.constant(advice["restart_cost_s"])
    tau = float(advice["interval_s"])
    best_tau, best_g = sim.best_by_simulation(tau, gaps, delta, restart, mtti=m, factor=3.0, points=25,
                                              replicas=replicas, seed=seed)
    at = sim.simulate(tau, gaps, delta, restart, mtti=m, replicas=replicas, seed=seed)
    return {"failures": "ledger's inter-failure gaps" if inp.shape else "exponential (fewer than "
            f"{MIN_GAPS} recorded gaps)", "goodput_at_advised": round(at, 5), "best_interval_s": round(best_tau, 1),
            "best_goodput": round(best_g, 5), "shortfall": round((best_g - at) / best_g, 5), "replicas": replicas}


# ------------------------------------------------------------------------------- the published summary
def summary(inp: Inputs, scope: Scope, generated: datetime) -> dict[str, Any]:
    """What `advise publish` writes: the rate per GPU-hour behind M (not M: the size is the job's), δ and R."""
    m = inp.mtti
    k, k_from = _weibull(inp)
    return {"cluster": scope.cluster, "generated_epoch": generated.timestamp(),
            "gpu_seconds_per_interruption": None if m.value is None else m.value * _GPUS_REF,
            "gpu_seconds_interval": None if m.interval is None else [
                x * _GPUS_REF if math.isfinite(x) else None for x in m.interval],
            "mtti_from": m.source, "mtti_n": m.n,
            "checkpoint_cost_s": inp.checkpoint.value, "checkpoint_cost_from": inp.checkpoint.source,
            "restart_cost_s": inp.restart.value, "restart_cost_from": inp.restart.source,
            "failure_shape": k, "failure_shape_from": k_from, "gpus_per_node": scope.gpus_per_node}


#: gather() is run for this many GPUs when publishing; M scales as 1/GPUs, so M x GPUs is per-GPU seconds.
_GPUS_REF = 1


def from_summary(data: object, gpus: int) -> Inputs:
    """Inputs for GPUS from a published summary (a user's view, no database); bad content is an AdviceError."""
    if not isinstance(data, dict):
        raise AdviceError("the published advice is not a JSON object")
    inp = Inputs()
    per = _num(data.get("gpu_seconds_per_interruption"))
    if per is not None and gpus > 0:
        iv = data.get("gpu_seconds_interval")
        ends = [_num(x) for x in iv] if isinstance(iv, list) and len(iv) == 2 else None
        inp.mtti = Figure(per / gpus, f"published: {data.get('mtti_from', '')}"[:300], int(_num(data.get("mtti_n"))
                                                                                          or 0),
                          interval=None if ends is None or ends[0] is None else
                          (ends[0] / gpus, ends[1] / gpus if ends[1] is not None else math.inf))
    for key, name in (("checkpoint_cost_s", "checkpoint"), ("restart_cost_s", "restart"), ("failure_shape",
                                                                                          "weibull")):
        v = _num(data.get(key))
        if v is not None:
            src = str(data.get(key.removesuffix("_s") + "_from", ""))[:300]
            if name != "weibull" or 0.1 <= v <= 20:
                setattr(inp, name, Figure(v, f"published: {src}", 0))
    return inp


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) and 0 <= f <= MAX_SECONDS * 1e6 else None


def format_duration(seconds: float | None) -> str:
    """`3403` -> `57m`, `90` -> `1m30s`, `30000` -> `8h20m`: a duration as a person reads it."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m" + (f"{s % 60:02d}s" if s % 60 and s < 600 else "")
    if s < 86400 * 2:
        return f"{s // 3600}h" + (f"{s % 3600 // 60:02d}m" if s % 3600 // 60 else "")
    return f"{s / 86400:.1f}d"


def hint(advice: dict[str, Any]) -> str:
    """The sbatch wrapper's one line."""
    lo, hi = advice["range_s"]
    return (f"checkpoint every {format_duration(advice['interval_s'])} (within 1% of the best goodput: "
            f"{format_duration(lo)}-{format_duration(hi)}; expected goodput {advice['goodput'] * 100:.1f}% with "
            f"interruptions every {format_duration(advice['mtti_s'])} on {advice['gpus']} GPUs, checkpoints of "
            f"{format_duration(advice['checkpoint_cost_s'])}); `slurmtools advise checkpoint` explains")
