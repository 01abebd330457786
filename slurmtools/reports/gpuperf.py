"""GPU performance (section 9): the fail-slow probe's results in the window (checks/perf.py, `perf_results`):
per GPU model the distribution of each figure over every GPU's latest result, and the GPUs below their model's
median by more than the default margins (10 % bandwidth, 8 % compute)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slurmtools.checks.perfprobe import METRICS
from slurmtools.reports.scope import Scope, Sql

MARGIN = {"bandwidth": 0.10, "compute": 0.08}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def gpu_perf(sql: Sql, scope: Scope, params: dict[str, Any]) -> dict[str, Any]:
    from slurmtools.checks import perf

    cols = ", ".join(f"p.{m}" for m in METRICS)
    rows = sql.rows(f"""SELECT p.node, p.gpu_index, p.uuid, p.model, p.time, {cols} FROM perf_results p
                        WHERE p.cluster = :cluster AND p.time >= :t0 AND p.time < :t1 AND p.status != 'unknown'
                        ORDER BY p.uuid, p.time DESC, p.id DESC""", params)
    latest: dict[str, dict[str, Any]] = {}
    results = 0
    for r in rows:
        results += 1
        latest.setdefault(r["uuid"], r)
    gpus = [{**r, "model": r["model"]} for r in latest.values()]
    medians = perf.baseline(gpus)
    models: dict[str, Any] = {}
    for model, entry in sorted(medians.items()):
        dist = {}
        for metric in METRICS:
            values = [float(g[metric]) for g in gpus if g["model"] == model and g.get(metric) is not None]
            if values:
                dist[metric] = {"median": round(entry[metric], 3), "p10": round(_quantile(values, 0.1), 3),
                                "min": round(min(values), 3), "max": round(max(values), 3)}
        models[model] = {"gpus": entry["n"], **dist}
    slow = []
    for g in sorted(gpus, key=lambda g: (str(g["node"]), int(g["gpu_index"]))):
        ref = {m: medians[g["model"]].get(m) for m in METRICS}
        short = perf.shortfalls(g, {k: v for k, v in ref.items() if v}, MARGIN)
        if short:
            slow.append({"node": g["node"], "gpu": int(g["gpu_index"]), "model": g["model"],
                         "shortfalls": short})
    return {"results": results, "gpus": len(gpus), "models": models, "slow": slow}


def is_empty(s: dict[str, Any]) -> bool:
    return bool(s["results"] == 0)


def text(s: dict[str, Any], table: Callable[[list[list[str]], list[str]], list[str]],
         fmt: Callable[..., str]) -> list[str]:
    """The section as text lines (render.text), TABLE and FMT being render's helpers."""
    out = ["", "9. GPU performance (the fail-slow probe: every GPU's latest result in the window)"]
    if not s["results"]:
        return [*out, "   no probe results (the `perf` check of the health and deep profiles records them)"]
    rows = []
    for model, m in s["models"].items():
        for metric, (_kind, what, unit) in METRICS.items():
            d = m.get(metric)
            if d:
                rows.append([model, str(m["gpus"]), what, fmt(d["median"], f" {unit}"), fmt(d["p10"], f" {unit}"),
                             fmt(d["min"], f" {unit}"), fmt(d["max"], f" {unit}")])
    out += ["   " + x for x in table(rows, ["model", "GPUs", "figure", "median", "p10", "min", "max"])]
    if s["slow"]:
        out.append(f"   slow GPUs ({len(s['slow'])}): below their model's median by more than 10 % (bandwidth) or "
                   "8 % (compute):")
        for g in s["slow"][:50]:
            what = ", ".join(f"{x['metric']} {x['value']:g} ({x['shortfall'] * 100:.0f}% below)"
                             for x in g["shortfalls"])
            out.append(f"   - {g['node']} GPU {g['gpu']}: {what}")
    else:
        out.append("   no GPU below its model's median by more than the margins")
    return out
