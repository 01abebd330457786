"""This node's NFS mounts as Prometheus metrics (`slurmtools exporter --node`), read from mountstats per scrape.

Names follow node_exporter's mountstats collector (collector/mountstats_linux.go) under our own prefix:
`node_mountstats_nfs_X` is `slurmtools_mountstats_nfs_X`, same units (seconds, bytes) and meanings, so its
dashboards and PromQL carry over by renaming, and both can run on one node without a clash. Labels: export
(server:/path), mountpoint, protocol (tcp, rdma, udp) and mountaddr as node_exporter has them; transport (the
connection's index: nconnect gives several) on the transport series; operation on the per-operation series, which
are exported only for operations the mount has used (bounded: about 20 per mount instead of 60).

The study's signal in PromQL (docs/io.md): per WRITE, queue time against round trip,
  rate(slurmtools_mountstats_nfs_operations_queue_time_seconds_total{operation="WRITE"}[5m])
    / rate(slurmtools_mountstats_nfs_operations_requests_total{operation="WRITE"}[5m])
and the same with ..._response_time_seconds_total: queue time above the RTT is the client's slots, not the server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from slurmtools.config import Config

log = logging.getLogger(__name__)
P = "slurmtools_mountstats_nfs_"
LABELS = ["export", "mountpoint", "protocol", "mountaddr"]
#: bytes: line field -> (name, help)
BYTES = {
    "normal_read": ("read_bytes", "Number of bytes read using the read() syscall."),
    "normal_write": ("write_bytes", "Number of bytes written using the write() syscall."),
    "direct_read": ("direct_read_bytes", "Number of bytes read using the read() syscall in O_DIRECT mode."),
    "direct_write": ("direct_write_bytes", "Number of bytes written using the write() syscall in O_DIRECT mode."),
    "server_read": ("total_read_bytes", "Number of bytes read from the NFS server, in total."),
    "server_write": ("total_write_bytes", "Number of bytes written to the NFS server, in total."),
    "read_pages": ("read_pages", "Number of pages read directly via mmap()'d files."),
    "write_pages": ("write_pages", "Number of pages written directly via mmap()'d files."),
}
#: xprt: field -> (name, help, counter?, scale)
TRANSPORT = {
    "bind_count": ("transport_bind", "Number of times the client has had to establish a connection from scratch "
                   "to the NFS server.", True),
    "connect_count": ("transport_connect", "Number of times the client has made a TCP connection to the NFS "
                      "server.", True),
    "idle_time": ("transport_idle_time_seconds", "Duration since the NFS mount last saw any RPC traffic, in "
                  "seconds.", False),
    "sends": ("transport_sends", "Number of RPC requests for this mount sent to the NFS server.", True),
    "recvs": ("transport_receives", "Number of RPC responses for this mount received from the NFS server.", True),
    "bad_xids": ("transport_bad_transaction_ids", "Number of times the NFS server sent a response with a "
                 "transaction ID unknown to this client.", True),
    "bklog_u": ("transport_backlog_queue", "Total number of items added to the RPC backlog queue.", True),
    "max_slots": ("transport_maximum_rpc_slots", "Maximum number of simultaneously active RPC requests ever used.",
                  False),
    "sending_u": ("transport_sending_queue", "Total number of items added to the RPC transmission sending queue.",
                  True),
    "pending_u": ("transport_pending_queue", "Total number of items added to the RPC transmission pending queue.",
                  True),
}
#: per-op: field -> (name, help, scale)
OPERATIONS = {
    "ops": ("operations_requests", "Number of requests performed for a given operation.", 1.0),
    "trans": ("operations_transmissions", "Number of times an actual RPC request has been transmitted for a given "
              "operation.", 1.0),
    "timeouts": ("operations_major_timeouts", "Number of times a request has had a major timeout for a given "
                 "operation.", 1.0),
    "bytes_sent": ("operations_sent_bytes", "Number of bytes sent for a given operation, including RPC headers "
                   "and payload.", 1.0),
    "bytes_recv": ("operations_received_bytes", "Number of bytes received for a given operation, including RPC "
                   "headers and payload.", 1.0),
    "queue_ms": ("operations_queue_time_seconds", "Duration all requests spent queued for transmission for a "
                 "given operation before they were sent, in seconds.", 1e-3),
    "rtt_ms": ("operations_response_time_seconds", "Duration all requests took to get a reply back after a "
               "request for a given operation was transmitted, in seconds.", 1e-3),
    "execute_ms": ("operations_request_time_seconds", "Duration all requests took from when a request was "
                   "enqueued to when it was completely handled for a given operation, in seconds.", 1e-3),
}


class MountstatsCollector(Collector):
    """The watched NFS mounts (`[io] mountstats`, `mounts`, `max_mounts`), read at each scrape."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def collect(self) -> Iterator[Any]:
        from slurmtools.iostat.jobio import watched
        from slurmtools.iostat.mountstats import MountstatsError

        up = GaugeMetricFamily("slurmtools_mountstats_up", "1 if mountstats was read and parsed at this scrape")
        count = GaugeMetricFamily("slurmtools_mountstats_nfs_mounts", "Watched NFS mounts on this node")
        try:
            if not os.access(self.cfg.io.mountstats, os.R_OK):
                raise OSError(f"cannot read {self.cfg.io.mountstats}")
            mounts = watched(self.cfg) or []
            up.add_metric([], 1)
        except (OSError, MountstatsError) as exc:
            log.warning("exporter: mountstats unreadable: %s", exc)
            mounts = []
            up.add_metric([], 0)
        count.add_metric([], len(mounts))
        yield up
        yield count
        yield from families(mounts)


def families(mounts: list[Any]) -> Iterator[Any]:
    """Metric families for MOUNTS (parsed mountstats)."""
    age = CounterMetricFamily(P + "age_seconds", "The age of the NFS mount in seconds.", labels=LABELS)
    by = {f: CounterMetricFamily(P + n, h, labels=LABELS) for f, (n, h) in BYTES.items()}
    tr: dict[str, CounterMetricFamily | GaugeMetricFamily] = {
        f: (CounterMetricFamily if c else GaugeMetricFamily)(P + n, h, labels=[*LABELS, "transport"])
        for f, (n, h, c) in TRANSPORT.items()}
    ops = {f: CounterMetricFamily(P + n, h, labels=[*LABELS, "operation"]) for f, (n, h, _) in OPERATIONS.items()}
    for m in mounts:
        protocol = (m.transports[0].get("proto") if m.transports else None) or m.opts.get("proto", "")
        base = [m.device, m.mountpoint, str(protocol), m.opts.get("mountaddr") or m.opts.get("addr", "")]
        if m.age is not None:
            age.add_metric(base, float(m.age))
        for f, fam in by.items():
            if f in m.bytes:
                fam.add_metric(base, float(m.bytes[f]))
        for i, x in enumerate(m.transports):
            for f, tfam in tr.items():
                if f in x:
                    tfam.add_metric([*base, str(i)], float(x[f]))
        for op, st in sorted(m.ops.items()):
            if not st.get("ops"):
                continue
            for f, fam in ops.items():
                if f in st:     # a wrapped or garbage counter is left out, not exported as 0
                    fam.add_metric([*base, op], float(st[f]) * OPERATIONS[f][2])
    yield age
    yield from by.values()
    yield from tr.values()
    yield from ops.values()
