"""The lab's monitoring: Debian's Prometheus scraping `slurmtools exporter`, both on loopback, both tracked by
PID files like every other lab daemon (`lab down` stops only those PIDs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from slurmtools.lab.procs import LabError, port_open, wait_for

Lab = Any   # slurmtools.lab.cluster.Lab, which imports this module

PROMETHEUS_PORT = 19090
EXPORTER_PORT = 19469
#: PID file name -> the program's /proc/PID/comm (checked before any signal is sent).
COMMS = {"prometheus.pid": "prometheus", "exporter.pid": "slurmtools"}


def pidfiles(lab: Lab) -> list[tuple[str, Path]]:
    run = lab.root / "run"
    return [("prometheus", run / "prometheus.pid"), ("exporter", run / "exporter.pid")]


def prometheus_url() -> str:
    return f"http://127.0.0.1:{PROMETHEUS_PORT}"


def exporter_url() -> str:
    return f"http://127.0.0.1:{EXPORTER_PORT}/metrics"


def config_text() -> str:
    return (
        "global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\n"
        "scrape_configs:\n"
        "  - job_name: slurmtools\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{EXPORTER_PORT}']\n"
        "        labels: {cluster: lab}\n")


def _spawn(argv: list[str], pidfile: Path, log: Path, *, user: str | None = None,
           env: dict[str, str] | None = None) -> None:
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd="/tmp", user=user, env=env)
    pidfile.write_text(f"{proc.pid}\n")


def start_exporter(lab: Lab, units: Path) -> None:
    """As systemd would start `slurmtools install units`' exporter: its ExecStart, its Environment, a plain PATH
    (plus SLURM_CONF, which a site's slurm.conf in its default place needs not); it listens on metrics.listen."""
    from slurmtools.lab.install import service

    pidfile = lab.root / "run" / "exporter.pid"
    if lab._pid(pidfile) is not None:
        return
    argv, env = service(units / "slurmtools-exporter.service")
    if not Path(argv[0]).exists():
        raise LabError(f"cannot start the exporter: {argv[0]} missing (install slurmtools into this Python)")
    log = lab.root / "log" / "exporter.log"
    _spawn(argv, pidfile, log, env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                    "SLURM_CONF": lab.env()["SLURM_CONF"], **env})
    wait_for("slurmtools exporter", lambda: port_open(EXPORTER_PORT), 30, log)
    lab.say(f"started slurmtools exporter ({exporter_url()})")


def start_prometheus(lab: Lab) -> None:
    pidfile = lab.root / "run" / "prometheus.pid"
    if lab._pid(pidfile) is not None:
        return
    binary = shutil.which("prometheus")
    if binary is None:
        raise LabError("Debian's prometheus package is missing: run `slurmtools lab up` (it installs it)")
    pdir = lab.root / "prometheus"
    (pdir / "data").mkdir(parents=True, exist_ok=True)
    conf = pdir / "prometheus.yml"
    conf.write_text(config_text())
    shutil.chown(pdir, "prometheus", "prometheus")
    shutil.chown(pdir / "data", "prometheus", "prometheus")
    conf.chmod(0o644)
    log = lab.root / "log" / "prometheus.log"
    _spawn([binary, f"--config.file={conf}", f"--storage.tsdb.path={pdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}", "--storage.tsdb.retention.time=7d",
            "--web.enable-lifecycle"], pidfile, log, user="prometheus")
    wait_for("prometheus", lambda: port_open(PROMETHEUS_PORT), 60, log)
    lab.say(f"started prometheus ({prometheus_url()}, scraping the exporter every 2 s)")


def up(lab: Lab, units: Path) -> None:
    start_exporter(lab, units)
    start_prometheus(lab)


def down(lab: Lab) -> None:
    for name, pidfile in reversed(pidfiles(lab)):
        lab._stop_pid(name, pidfile)
