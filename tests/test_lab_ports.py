"""The lab's listening ports (slurmtools/lab): none inside the kernel's ephemeral range, and PostgreSQL's own reason
when it does not start."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from slurmtools.lab import monitoring, postgres
from slurmtools.lab.cluster import Lab, Ports


def _ephemeral() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_no_lab_port_is_one_the_kernel_hands_to_clients() -> None:
    """A port inside ip_local_port_range can be held by any client socket when a daemon starts (CI once saw the
    ledger's PostgreSQL fail at 55432 with "Address already in use" after 26 minutes of tests)."""
    low, high = _ephemeral()
    listening = {**asdict(Ports()), "prometheus": monitoring.PROMETHEUS_PORT, "exporter": monitoring.EXPORTER_PORT}
    listening.update({f"slurmd {n.name}": n.port for n in Lab(Path("/nonexistent-lab")).nodes})
    inside = {name: port for name, port in listening.items() if low <= port <= high}
    assert not inside, f"inside the ephemeral range {low}-{high}: {inside}"
    assert len(set(listening.values())) == len(listening)


# The server's lines from that CI run (postgres.log), after lines of an earlier clean start and shutdown.
_EARLIER = """\
2026-11-27 18:17:56.331 UTC [23946] LOG:  database system is ready to accept connections
2026-11-27 18:18:02.379 UTC [23946] LOG:  database system is shut down
"""
_FAILED = """\
2026-11-27 18:20:28.804 UTC [27565] LOG:  starting PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu
2026-11-27 18:20:28.805 UTC [27565] LOG:  could not bind IPv4 address "127.0.0.1": Address already in use
2026-11-27 18:20:28.805 UTC [27565] HINT:  Is another postmaster already running on port 55432? If not, wait a few \
seconds and retry.
2026-11-27 18:20:28.805 UTC [27565] WARNING:  could not create listen socket for "127.0.0.1"
2026-11-27 18:20:28.805 UTC [27565] FATAL:  could not create any TCP/IP sockets
2026-11-27 18:20:28.812 UTC [27565] LOG:  database system is shut down
"""


def test_a_failed_start_says_the_servers_reason(tmp_path: Path) -> None:
    log = tmp_path / "postgres.log"
    log.write_text(_EARLIER + _FAILED)
    reason = postgres.why(log, len(_EARLIER))
    assert reason.startswith('LOG:  could not bind IPv4 address "127.0.0.1": Address already in use')
    assert "HINT:  Is another postmaster already running on port 55432?" in reason
    assert reason.endswith("FATAL:  could not create any TCP/IP sockets")
    assert postgres.why(log, len(_EARLIER + _FAILED)) == ""      # nothing new since: no reason invented
    assert postgres.why(tmp_path / "absent.log", 0) == ""
