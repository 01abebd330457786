"""`slurmtools exporter`: the ledger's and the controller's state as Prometheus metrics (prometheus_client).

One collector reads everything at scrape time, in one short read-only transaction: per-node exclusion and
last gate verdict, findings and decisions as counters (counts of ledger rows, so they only grow until a
`ledger prune`), retry chains by state, the controller's queue and the spool's backlog, and, from Slurm, the
drain circuit breaker. Labels are bounded: node names, never job ids."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine, text

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from slurmtools.config import Config
    from slurmtools.slurm.base import Slurm

log = logging.getLogger(__name__)
VERDICTS = ("ok", "warn", "fail", "unknown")
#: Ledger rows counted per label set: (family class, name, help), labels, table.
COUNTS: list[tuple[tuple[Any, str, str], tuple[str, ...], str]] = [
    ((CounterMetricFamily, "slurmtools_findings", "Findings recorded in the ledger"),
     ("kind", "severity", "category"), "findings"),
    ((CounterMetricFamily, "slurmtools_controller_decisions", "Controller decisions, by outcome"),
     ("classification", "decision", "status"), "controller_decisions"),
    ((GaugeMetricFamily, "slurmtools_retry_chains", "Retry chains by status"), ("status",), "retry_chains"),
    ((CounterMetricFamily, "slurmtools_node_state_changes", "Drains, resumes and exclusions recorded"),
     ("action", "applied"), "node_state_changes"),
]
#: A label's SQL where the column is not text (both dialects give the same label values).
LABEL_SQL = {"applied": "CASE WHEN applied THEN 'true' ELSE 'false' END"}


#: The fail-slow probe's figures (checks/perf.py), one gauge per figure: metric name -> (ledger column, help).
PERF_FIGURES = {
    "slurmtools_gpu_probe_d2d_gbps": ("d2d_gbps", "Device-to-device copy bandwidth, GB/s (read + write)"),
    "slurmtools_gpu_probe_h2d_gbps": ("h2d_gbps", "Pinned host-to-device copy bandwidth, GB/s"),
    "slurmtools_gpu_probe_d2h_gbps": ("d2h_gbps", "Pinned device-to-host copy bandwidth, GB/s"),
    "slurmtools_gpu_probe_fp32_tflops": ("fp32_tflops", "FP32 FMA throughput, TFLOPS"),
    "slurmtools_gpu_probe_sm_clock_min_mhz": ("sm_mhz_min", "Lowest SM clock seen while the probe ran, MHz"),
}


def perf_families(rows: Callable[[str], list[Any]]) -> Iterator[Any]:
    """Each GPU's latest fail-slow probe result (labels: node, GPU index, model; bounded by the fleet's GPUs)."""
    cols = ", ".join(c for c, _ in PERF_FIGURES.values())
    latest = rows(f"""SELECT p.node, p.gpu_index, p.model, p.status, p.time, {cols} FROM perf_results p
                      WHERE p.cluster = :cluster AND p.status != 'unknown' AND p.id = (
                          SELECT MAX(q.id) FROM perf_results q WHERE q.cluster = p.cluster AND q.uuid = p.uuid
                          AND q.status != 'unknown') ORDER BY p.node, p.gpu_index""")
    labels = ["node", "gpu", "model"]
    figures = [GaugeMetricFamily(name, text, labels=labels) for name, (_c, text) in PERF_FIGURES.items()]
    slow = GaugeMetricFamily("slurmtools_gpu_probe_slow", "1 if the GPU's latest probe was judged fail-slow on its "
                             "node", labels=labels)
    when = GaugeMetricFamily("slurmtools_gpu_probe_timestamp_seconds", "When the GPU was last probed (Unix time)",
                             labels=labels)
    for node, gpu, model, status, at, *values in latest:
        key = [str(node), str(gpu), str(model)]
        for family, value in zip(figures, values, strict=True):
            if value is not None:
                family.add_metric(key, float(value))
        slow.add_metric(key, 1.0 if status == "warn" else 0.0)
        ts = _ts(at)
        if ts is not None:
            when.add_metric(key, ts)
    yield from figures
    yield slow
    yield when


class LedgerCollector(Collector):
    def __init__(self, cfg: Config, engine: Engine, slurm: Slurm | None = None) -> None:
        self.cfg = cfg
        self.engine = engine
        self.slurm = slurm
        self.cluster = cfg.cluster

    def collect(self) -> Iterator[Any]:
        t0 = time.monotonic()
        up = GaugeMetricFamily("slurmtools_ledger_up", "1 if the ledger database answered this scrape")
        try:
            families = list(self._ledger())
            up.add_metric([], 1)
        except Exception as exc:  # noqa: BLE001 - a scrape reports the database down, it does not fail
            log.warning("exporter: ledger unavailable: %s", str(exc).splitlines()[0] if str(exc) else exc)
            families = []
            up.add_metric([], 0)
        yield up
        yield from families
        yield from self._local()
        yield from self._slurm()
        took = GaugeMetricFamily("slurmtools_exporter_collect_seconds", "How long this scrape took to collect")
        took.add_metric([], time.monotonic() - t0)
        yield took

    def _ledger(self) -> Iterator[Any]:
        p = {"cluster": self.cluster}
        with self.engine.connect() as conn:
            def rows(sql: str) -> list[Any]:
                return list(conn.execute(text(sql), p))

            excl = GaugeMetricFamily("slurmtools_node_excluded", "Active exclusions of a node (0 or more), by scope",
                                     labels=["node", "scope"])
            for node, scope, n in rows("""SELECT node, scope, COUNT(*) FROM exclusions WHERE cluster = :cluster
                                          AND "end" IS NULL GROUP BY node, scope ORDER BY node, scope"""):
                excl.add_metric([node, scope], n)
            yield excl
            nodes = [r[0] for r in rows("SELECT name FROM nodes WHERE cluster = :cluster ORDER BY name")]
            last_fail = {r[0]: r[1:] for r in rows("""
                SELECT g.node, g.time, g.verdict, g.duration_ms FROM gate_runs g
                WHERE g.cluster = :cluster AND g.time = (SELECT MAX(h.time) FROM gate_runs h
                                                         WHERE h.cluster = g.cluster AND h.node = g.node)""")}
            last_pass = {r[0]: r[1:] for r in rows("""
                SELECT node, MAX(last_pass), MAX(total_ms * 1.0 / passes) FROM gate_pass_counts
                WHERE cluster = :cluster AND passes > 0 GROUP BY node""")}
            verdict = GaugeMetricFamily("slurmtools_node_gate_verdict",
                                        "1 for the verdict of the node's last health-gate run",
                                        labels=["node", "verdict"])
            duration = GaugeMetricFamily("slurmtools_node_gate_duration_seconds",
                                         "Duration of the node's last failing gate run, or its mean passing one",
                                         labels=["node"])
            when = GaugeMetricFamily("slurmtools_node_gate_last_run_timestamp_seconds",
                                     "When the node's last gate run ended (Unix time)", labels=["node"])
            for node in sorted(set(nodes) | set(last_fail) | set(last_pass)):
                f, ps = last_fail.get(node), last_pass.get(node)
                ft, pt = _ts(f[0]) if f else None, _ts(ps[0]) if ps else None
                if ft is None and pt is None:
                    continue
                if f is not None and ft is not None and (pt is None or ft >= pt):
                    v, secs, at = str(f[1]), float(f[2]) / 1000.0, ft
                elif ps is not None and pt is not None:
                    v, secs, at = "ok", float(ps[1] or 0.0) / 1000.0, pt
                else:
                    continue
                for name in VERDICTS:
                    verdict.add_metric([node, name], 1.0 if v == name else 0.0)
                duration.add_metric([node], secs)
                when.add_metric([node], at)
            yield verdict
            yield duration
            yield when
            yield from perf_families(rows)
            beat = GaugeMetricFamily("slurmtools_leader_heartbeat_timestamp_seconds",
                                     "When the leader of a service (controller, stalls) last said it leads (Unix time)",
                                     labels=["role"])
            for key, value in rows("SELECT key, value FROM meta WHERE key LIKE 'leader:%'"):
                role, _, cluster = str(key)[len("leader:"):].partition(":")
                try:
                    if cluster == self.cluster:
                        beat.add_metric([role], float(json.loads(value)["time"]))
                except (ValueError, KeyError, TypeError):
                    continue
            yield beat
            for family, labels, table in COUNTS:
                metric = family[0](family[1], family[2], labels=list(labels))
                cols = ", ".join(LABEL_SQL.get(c, c) for c in labels)
                for *values, n in rows(f"SELECT {cols}, COUNT(*) FROM {table} WHERE cluster = :cluster "
                                       f"GROUP BY {cols}"):
                    metric.add_metric([str(v) for v in values], n)
                yield metric

    def _local(self) -> Iterator[Any]:
        yield from local_families(self.cfg)

    def _slurm(self) -> Iterator[Any]:
        if self.slurm is None:
            return
        from slurmtools import drain

        up = GaugeMetricFamily("slurmtools_slurm_up", "1 if slurmctld answered this scrape")
        try:
            b = drain.breaker_status(self.cfg, self.slurm)
        except Exception as exc:  # noqa: BLE001 - Slurm down is a metric, not a failed scrape
            log.warning("exporter: Slurm unavailable: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        g = GaugeMetricFamily("slurmtools_drain_breaker_open", "1 while the circuit breaker refuses further drains")
        g.add_metric([], 1 if b["open"] else 0)
        yield g
        g = GaugeMetricFamily("slurmtools_nodes_drained_by_slurmtools", "Nodes drained with slurmtools' reason now")
        g.add_metric([], len(b["drained_by_us"]))
        yield g
        g = GaugeMetricFamily("slurmtools_drain_breaker_limit", "How many nodes slurmtools may hold drained at once")
        g.add_metric([], b["limit"])
        yield g


def local_families(cfg: Config) -> Iterator[Any]:
    """This host's spool backlog (events waiting for the ledger) and the controller's queue."""
    from slurmtools.ledger.spool import Spool

    spool = GaugeMetricFamily("slurmtools_spool_files", "Files in this host's ledger spool, by state",
                              labels=["state"])
    try:
        counts = Spool(cfg.ledger.spool_dir).counts()
    except OSError:
        counts = {}
    for state in ("pending", "bad", "tmp"):
        spool.add_metric([state], counts.get(state, 0))
    yield spool
    queue = GaugeMetricFamily("slurmtools_controller_queue_depth", "Ended jobs waiting for the controller")
    try:
        qdir = cfg.controller.queue_dir
        queue.add_metric([], sum(1 for n in os.listdir(qdir) if n.endswith(".json")))
    except OSError:
        queue.add_metric([], 0)
    yield queue


def _ts(value: datetime | str | None) -> float | None:
    """A timestamp column as Unix time."""
    from slurmtools.reports.scope import column_time

    return None if value is None else column_time(value).timestamp()


class NodeCollector(Collector):
    """`slurmtools exporter --node`: what one compute node knows without the ledger or Slurm: its NFS mounts
    (slurmtools/iostat/metrics.py) and its spool."""

    def __init__(self, cfg: Config) -> None:
        from slurmtools.iostat.metrics import MountstatsCollector

        self.cfg = cfg
        self.mounts = MountstatsCollector(cfg)

    def collect(self) -> Iterator[Any]:
        yield from self.mounts.collect()
        yield from local_families(self.cfg)


def serve(cfg: Config, listen: str, engine: Engine | None, slurm: Slurm | None = None, node: bool = False) -> Any:
    """Start the HTTP server on LISTEN (host:port) in a thread; returns (server, thread). NODE: this node's
    mounts and spool only (no ledger, no Slurm)."""
    from prometheus_client import CollectorRegistry, start_http_server

    host, _, port = listen.rpartition(":")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(cfg) if node or engine is None else LedgerCollector(cfg, engine, slurm))
    return start_http_server(int(port), addr=host.strip("[]") or "127.0.0.1", registry=registry)
