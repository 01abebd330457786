"""The Debian packages the lab runs (installed with apt-get when missing, without starting the distribution's
own daemons: the lab runs its own)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from slurmtools.lab.procs import LabError

PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd", "mariadb-server", "postgresql",
            "lua5.1",    # the interpreter the plugins' unit tests run them under (slurmctld links liblua5.1)
            "prometheus",  # scrapes `slurmtools exporter` in the lab (and promtool for the rules)
            "chromium",    # headless: the HTML report is checked in a real browser
            "libfaketime",  # a node's clock skewed for its hooks (`lab inject NODE clock-ahead`)
            "debootstrap"]  # the Debian roots of the other Slurm releases (`lab up --slurm 24.11`)


def missing() -> list[str]:
    out = []
    for pkg in PACKAGES:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in proc.stdout:
            out.append(pkg)
    return out


def _apt(argv: list[str], timeout: float) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")


def install(say: Callable[[str], None]) -> None:
    """Install the missing packages (root only)."""
    todo = missing()
    if not todo:
        return
    if os.geteuid() != 0:
        raise LabError(f"missing Debian packages {' '.join(todo)}: run `slurmtools lab up` as root")
    say(f"installing {' '.join(todo)} (apt-get)")
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = not policy.exists()
    if made_policy:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        _apt(["apt-get", "update", "-q"], timeout=600)
        _apt(["apt-get", "install", "-y", "-q", "--no-install-recommends", *todo], timeout=900)
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)
