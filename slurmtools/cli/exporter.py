"""`slurmtools exporter`: serve /metrics for Prometheus (docs/reports.md lists every metric)."""

from __future__ import annotations

import signal
import threading

import click

from slurmtools.cli.common import echo, fail, get_config


@click.command("exporter")
@click.option("--listen", help="host:port to serve /metrics on (default: metrics.listen, 127.0.0.1:9469).")
@click.option("--no-slurm", is_flag=True, help="Do not ask Slurm for the circuit breaker's state.")
@click.option("--node", is_flag=True,
              help="Serve this node's NFS mounts (mountstats, node_exporter's names under slurmtools_) and spool "
                   "instead: no ledger, no Slurm; one per compute node.")
def exporter_cmd(listen: str | None, no_slurm: bool, node: bool) -> None:
    """Serve the ledger's and the controller's state as Prometheus metrics until stopped."""
    from slurmtools.ledger.db import LedgerError, make_engine
    from slurmtools.reports.exporter import serve

    cfg = get_config()
    listen = listen or cfg.metrics.listen
    _, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"--listen {listen!r}: use host:port, e.g. 127.0.0.1:9469")
    engine = None
    if not node:
        try:
            engine = make_engine(cfg.ledger.url, readonly=True)
        except LedgerError as exc:
            fail(str(exc), 1)
    slurm = None
    if not no_slurm and not node:
        from slurmtools.slurm import get_client

        slurm = get_client(cfg)
    try:
        serve(cfg, listen, engine, slurm, node=node)
    except OSError as exc:
        fail(f"cannot listen on {listen}: {exc.strerror}", 1)
    echo(f"slurmtools exporter: serving http://{listen}/metrics", err=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
