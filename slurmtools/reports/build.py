"""One report: every section computed on one connection (one snapshot of the ledger), as plain data."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from slurmtools.reports import chains, checkpoints, gpuperf, incidents, quality, stalls, unrecognised, whatif
from slurmtools.reports.scope import Scope, Sql, iso

#: Section names, in the order a report shows them.
SECTIONS = ("failures", "mttf", "mttr", "goodput", "concentration", "retries", "detection", "checkpoints",
            "gpu_perf", "whatif", "unrecognised", "stalls")


class ReportError(RuntimeError):
    """The ledger could not be read for a report; the message says why in one line."""


def build_report(engine: Engine, scope: Scope, *, prefix: str = "slurmtools:",
                 sections: tuple[str, ...] = SECTIONS, charts: bool = False) -> dict[str, Any]:
    """The report for SCOPE. CHARTS adds the series the HTML charts draw (failures over time, chain timelines)."""
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ReportError(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    if scope.until <= scope.since:
        raise ReportError(f"empty window: --since {iso(scope.since)} is not before --until {iso(scope.until)}")
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    out: dict[str, Any] = {}
    try:
        with engine.connect() as conn:
            sql = Sql(conn)
            if sql.name == "sqlite":
                conn.exec_driver_sql("PRAGMA query_only=OFF")   # our temporary tables only: main stays read-only
            else:   # JIT compiles each big query anew: 0.1-0.3 s apiece, more than most of them take to run
                conn.exec_driver_sql("SET LOCAL jit = off")
            params = incidents.prepare(sql, scope, prefix)
            timings["incidents"] = time.monotonic() - t0
            if {"goodput", "retries", "whatif"} & set(sections) or charts:
                t = time.monotonic()
                chains.prepare(sql, scope, params)
                timings["chains"] = time.monotonic() - t
            fl = incidents.fleet(sql, scope)
            steps = {
                "failures": lambda: incidents.failures(sql, scope, params, fl),
                "mttf": lambda: incidents.projected(sql, scope, params),
                "mttr": lambda: incidents.mttr(sql, params),
                "goodput": lambda: chains.goodput(sql, params),
                "concentration": lambda: incidents.concentration(sql, scope, params, fl),
                "retries": lambda: chains.retries(sql, scope, params),
                "detection": lambda: quality.quality(sql, scope, params),
                "checkpoints": lambda: checkpoints.checkpoints(sql, scope, params),
                "gpu_perf": lambda: gpuperf.gpu_perf(sql, scope, params),
                "whatif": lambda: whatif.whatif(sql, scope, params,
                                                out.get("mttf") or incidents.projected(sql, scope, params)),
                "unrecognised": lambda: unrecognised.unrecognised(sql, scope, params),
                "stalls": lambda: stalls.stalls(sql, params),
            }
            for name in SECTIONS:
                if name in sections:
                    t = time.monotonic()
                    out[name] = steps[name]()
                    timings[name] = time.monotonic() - t
            if charts:
                out["charts"] = {"failures_over_time": incidents.over_time(sql, scope, params)}
                worst = [w["chain_id"] for w in out.get("goodput", {}).get("worst", [])]
                out["charts"]["chain_timeline"] = chains.timeline(sql, params, worst)
            dialect = sql.name
            conn.rollback()
    except ReportError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise ReportError(f"cannot read the ledger for the report: {first}") from exc
    report = {
        "report": {"cluster": scope.cluster, "since": iso(scope.since), "until": iso(scope.until),
                   "partition": scope.partition, "generated": iso(datetime.now(UTC)), "database": dialect,
                   "sections": [s for s in SECTIONS if s in sections], "window_h": round(scope.hours, 3),
                   "merge_gap_s": scope.merge_gap_s, "lookback_s": scope.lookback_s,
                   "seconds": round(time.monotonic() - t0, 3),
                   "timings_s": {k: round(v, 3) for k, v in timings.items()}},
        "fleet": fl, **out,
    }
    report["empty"], report["notes"] = _notes(report)
    return report


def _notes(report: dict[str, Any]) -> tuple[bool, list[str]]:
    """What the numbers rest on, in words, when there is little or nothing."""
    notes: list[str] = []
    f = report.get("failures")
    if f is not None and f["failures"] == 0:
        notes.append("no infrastructure failures in the window: MTBF is not defined (shown as null)")
    m = report.get("mttf")
    if m is not None and m["attempts"] == 0:
        notes.append("no multi-node attempts with start and end times: run `slurmtools ledger import-sacct`")
    g = report.get("goodput")
    if g is not None and g["chains"] == 0:
        notes.append("no finished retry chains in the window (jobs submitted with `slurmtools sbatch`)")
    if report["fleet"]["nodes"] == 0:
        notes.append("the ledger knows no nodes for this cluster: give the fleet size with --nodes")
    empty = all(report.get(k) is None or _is_empty(k, report[k]) for k in SECTIONS)
    if empty:
        notes.insert(0, "the ledger holds nothing for this cluster and window")
    return empty, notes


def _is_empty(name: str, s: dict[str, Any]) -> bool:
    if name == "failures":
        return bool(s["failures"] == 0)
    if name == "mttf":
        return bool(s["attempts"] == 0)
    if name == "mttr":
        return bool(s["n"] == 0 and s["open"] == 0)
    if name == "goodput":
        return bool(s["chains"] == 0 and not s["active_chains"])
    if name == "concentration":
        return bool(s["exclusions"]["total"] == 0 and s["incidents"]["total"] == 0 and not s["lemons"])
    if name == "retries":
        return bool(s["automatic"]["chains"] == 0 and s["manual"]["chains"] == 0)
    if name == "checkpoints":
        return checkpoints.is_empty(s)
    if name == "gpu_perf":
        return gpuperf.is_empty(s)
    if name == "whatif":
        return whatif.is_empty(s)
    if name == "unrecognised":
        return unrecognised.is_empty(s)
    if name == "stalls":
        return stalls.is_empty(s)
    return bool(not s["drains_by_actor"] and not s["decisions"] and s["confirmed"] + s["refuted"] == 0)
