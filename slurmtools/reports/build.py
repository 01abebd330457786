"""One report: every section computed from one snapshot of the ledger, as plain data.

The sections are read-only queries in four lanes, each a sequence that shares temporary tables on one connection:
the incidents (st_failures: failures, MTTR, concentration, the what-if's lemons and failure gaps), the jobs (the
projected MTTF and the manual retries, st_manual), the retry chains (st_chain_attempts: goodput, the automatic
retries, the what-if, the timeline) and the rest (detection, checkpoints, GPU performance, unrecognised, stalls).
On one connection they run one after the other. On PostgreSQL a report may use up to MAX_CONNECTIONS: the first
exports its snapshot (`pg_export_snapshot()` in a REPEATABLE READ transaction), the others import it (`SET
TRANSACTION SNAPSHOT`), and each takes the next lane until none is left, so every section reads the same rows as on
one connection, in less wall time and about the same CPU (docs/performance.md). The chains' lane waits for the
MTTF and the what-if's inputs; it is queued after the lanes that compute them, so a connection that runs it never
waits for a lane no connection has taken. SQLite keeps one connection."""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from slurmtools.reports import chains, checkpoints, gpuperf, incidents, quality, stalls, unrecognised, whatif
from slurmtools.reports.scope import Scope, Sql, iso

#: Section names, in the order a report shows them.
SECTIONS = ("failures", "mttf", "mttr", "goodput", "concentration", "retries", "detection", "checkpoints",
            "gpu_perf", "whatif", "unrecognised", "stalls")
#: The most connections a report uses (PostgreSQL; the engine's pool holds 4: db.make_engine).
MAX_CONNECTIONS = 4


class ReportError(RuntimeError):
    """The ledger could not be read for a report; the message says why in one line."""


class _Build:
    """One report's lanes and what they compute (each lane writes its own keys; the what-if waits on a future)."""

    def __init__(self, scope: Scope, prefix: str, sections: tuple[str, ...], charts: bool, fl: dict[str, Any]):
        self.scope, self.prefix, self.sections, self.charts, self.fleet = scope, prefix, sections, charts, fl
        self.params = incidents.report_params(scope, prefix)
        self.out: dict[str, Any] = {}
        self.parts: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.whatif_inputs: Future[whatif.Inputs] = Future()
        self.mttf: Future[dict[str, Any]] = Future()
        self.lock = threading.Lock()

    def lanes(self) -> list[Callable[[Sql], None]]:
        """The lanes this report needs, in the order they are taken (the incidents before the chains)."""
        want = set(self.sections)
        lanes: list[Callable[[Sql], None]] = [self.incidents]
        if want & {"mttf", "retries", "whatif"}:
            lanes.append(self.jobs)
        if want & {"goodput", "retries", "whatif"} or self.charts:
            lanes.append(self.chains)
        if want & {"detection", "checkpoints", "gpu_perf", "unrecognised", "stalls"}:
            lanes.append(self.rest)
        return lanes

    def timed(self, key: str, fn: Callable[[], Any]) -> Any:
        t = time.monotonic()
        value = fn()
        with self.lock:
            self.timings[key] = self.timings.get(key, 0.0) + time.monotonic() - t
        return value

    def incidents(self, sql: Sql) -> None:
        try:
            scope, params, fl = self.scope, self.params, self.fleet
            self.timed("incidents", lambda: incidents.prepare(sql, scope, self.prefix))
            steps: dict[str, Callable[[], Any]] = {
                "failures": lambda: incidents.failures(sql, scope, params, fl),
                "mttr": lambda: incidents.mttr(sql, params),
                "concentration": lambda: incidents.concentration(sql, scope, params, fl)}
            for name, step in steps.items():
                if name in self.sections:
                    self.out[name] = self.timed(name, step)
            if "whatif" in self.sections:
                self.whatif_inputs.set_result(self.timed("whatif", lambda: whatif.inputs(sql, params)))
            if self.charts:
                self.parts["failures_over_time"] = incidents.over_time(sql, scope, params)
        except BaseException as exc:
            if not self.whatif_inputs.done():   # the chains' lane may be waiting for it
                self.whatif_inputs.set_exception(exc)
            raise

    def jobs(self, sql: Sql) -> None:
        try:
            if {"mttf", "whatif"} & set(self.sections):
                self.mttf.set_result(self.timed("mttf", lambda: incidents.projected(sql, self.scope, self.params)))
                if "mttf" in self.sections:
                    self.out["mttf"] = self.mttf.result()
        except BaseException as exc:
            if not self.mttf.done():   # the chains' lane may be waiting for it
                self.mttf.set_exception(exc)
            raise
        if "retries" in self.sections:
            self.parts["manual"] = self.timed("retries_manual", lambda: chains.manual(sql, self.scope, self.params))

    def chains(self, sql: Sql) -> None:
        scope, params = self.scope, self.params
        self.timed("chains", lambda: chains.prepare(sql, scope, params))
        if "goodput" in self.sections:
            self.out["goodput"] = self.timed("goodput", lambda: chains.goodput(sql, params))
        if "retries" in self.sections:
            self.parts["automatic"] = self.timed("retries", lambda: chains.automatic(sql, params))
        if self.charts:
            worst = [w["chain_id"] for w in self.out.get("goodput", {}).get("worst", [])]
            self.parts["chain_timeline"] = chains.timeline(sql, params, worst)
        if "whatif" in self.sections:
            self.out["whatif"] = self.timed("whatif", lambda: whatif.whatif(
                sql, scope, params, self.mttf.result(), self.whatif_inputs.result()))

    def rest(self, sql: Sql) -> None:
        scope, params = self.scope, self.params
        steps: dict[str, Callable[[], Any]] = {
            "detection": lambda: quality.quality(sql, scope, params),
            "checkpoints": lambda: checkpoints.checkpoints(sql, scope, params),
            "gpu_perf": lambda: gpuperf.gpu_perf(sql, scope, params),
            "unrecognised": lambda: unrecognised.unrecognised(sql, scope, params),
            "stalls": lambda: stalls.stalls(sql, params)}
        for name, step in steps.items():
            if name in self.sections:
                self.out[name] = self.timed(name, step)

    def sections_out(self) -> dict[str, Any]:
        """The sections in the report's order (and the charts), from what the lanes computed."""
        if "retries" in self.sections:
            self.out["retries"] = chains.retries(self.scope, self.parts["automatic"], self.parts["manual"])
            self.timings["retries"] = self.timings.get("retries", 0.0) + self.timings.pop("retries_manual", 0.0)
        out = {name: self.out[name] for name in SECTIONS if name in self.sections}
        if self.charts:
            out["charts"] = {"failures_over_time": self.parts["failures_over_time"],
                             "chain_timeline": self.parts["chain_timeline"]}
        return out


def build_report(engine: Engine, scope: Scope, *, prefix: str = "slurmtools:",
                 sections: tuple[str, ...] = SECTIONS, charts: bool = False, connections: int = 1) -> dict[str, Any]:
    """The report for SCOPE. CHARTS adds the series the HTML charts draw (failures over time, chain timelines).
    CONNECTIONS (1 to MAX_CONNECTIONS; PostgreSQL only, SQLite uses one): how many connections the sections may run
    on at once, all reading one snapshot; the report is the same whatever the number."""
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ReportError(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    if scope.until <= scope.since:
        raise ReportError(f"empty window: --since {iso(scope.since)} is not before --until {iso(scope.until)}")
    if not 1 <= connections <= MAX_CONNECTIONS:
        raise ReportError(f"connections must be 1 to {MAX_CONNECTIONS}, not {connections}")
    t0 = time.monotonic()
    try:
        # REPEATABLE READ on PostgreSQL: one snapshot for every statement of the report (READ COMMITTED would take a
        # new one per statement); SQLite's transaction is one snapshot already
        repeatable = {"isolation_level": "REPEATABLE READ"} if engine.dialect.name == "postgresql" else {}
        with engine.connect().execution_options(**repeatable) as conn:
            sql = Sql(conn)
            dialect = sql.name
            if dialect != "postgresql":
                connections = 1
            snapshot = _export(conn) if connections > 1 else None
            _setup(sql)
            build = _Build(scope, prefix, sections, charts, incidents.fleet(sql, scope))
            lanes = build.lanes()
            connections = min(connections, len(lanes))
            if connections == 1:
                for lane in lanes:
                    lane(sql)
            else:
                assert snapshot is not None
                _parallel(engine, sql, lanes, connections - 1, snapshot, repeatable)
            conn.rollback()
        timings = build.timings
        out = build.sections_out()
        fl = build.fleet
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


def _setup(sql: Sql) -> None:
    if sql.name == "sqlite":
        sql.conn.exec_driver_sql("PRAGMA query_only=OFF")   # our temporary tables only: main stays read-only
    else:   # JIT compiles each big query anew: 0.1-0.3 s apiece, more than most of them take to run
        sql.conn.exec_driver_sql("SET LOCAL jit = off")


_SNAPSHOT = re.compile(r"[0-9A-F]+(-[0-9A-F]+)+")


def _export(conn: Connection) -> str:
    """This REPEATABLE READ transaction's snapshot, for the report's other connections (valid while it is open)."""
    snapshot = str(conn.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one())
    if not _SNAPSHOT.fullmatch(snapshot):
        raise ReportError(f"unexpected snapshot identifier from the server: {snapshot[:40]!r}")
    return snapshot


def _parallel(engine: Engine, first: Sql, lanes: list[Callable[[Sql], None]], others: int, snapshot: str,
              options: dict[str, Any]) -> None:
    """Run LANES on FIRST's connection and OTHERS more, each importing SNAPSHOT; every connection takes the next
    lane until none is left. The other connections import the snapshot here, while FIRST's transaction is open; where
    no more can be opened, the lanes run on those that could."""
    todo: queue.SimpleQueue[Callable[[Sql], None]] = queue.SimpleQueue()
    for lane in lanes:
        todo.put(lane)
    opened: list[Connection] = []
    failed = threading.Event()   # a lane failed: the others finish theirs, none starts another

    def work(sql: Sql) -> None:
        while not failed.is_set():
            try:
                lane = todo.get_nowait()
            except queue.Empty:
                return
            try:
                lane(sql)
            except BaseException:
                failed.set()
                raise

    try:
        workers = [first]
        for _ in range(others):
            try:
                conn = engine.connect().execution_options(**options)
            except Exception:  # noqa: BLE001 - no spare connection (the server's or the pool's limit): fewer lanes
                break          # at once, the same report
            opened.append(conn)
            conn.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")   # the transaction's first statement
            sql = Sql(conn)
            _setup(sql)
            workers.append(sql)
        with ThreadPoolExecutor(max_workers=len(workers), thread_name_prefix="report") as pool:
            done = [pool.submit(work, w) for w in workers]
            for f in done:
                f.result()
    finally:
        for conn in opened:
            conn.rollback()
            conn.close()


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
