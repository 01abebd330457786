"""The lab sets itself up along docs/install.md where one host without systemd can, so that every lab start (and
CI) runs the documented commands as an admin would: step 2 `slurmtools config check`, step 3 `slurmtools ledger
init`, step 5 `slurmtools plugins install`, step 6 `slurmtools install units`, after which the lab's exporter is
started from its unit file (its ExecStart and Environment, as systemd would run it). Step 8, `slurmtools doctor`,
is tests/integration/test_doctor_lab.py.

Not followed, and why: step 1's /opt venv and /usr/local links (the lab runs the checkout's own environment);
step 4's slurm.conf lines point at the lab's hook wrappers (which set the lab's paths and inject faults) rather
than at the hooks themselves; `systemctl` (no systemd here: the units are checked with `systemd-analyze verify`
in tests/test_install.py); the controller and detector units (the tests start controllers of their own)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Protocol

from slurmtools.lab.procs import LabError


class Target(Protocol):
    root: Path

    def env(self) -> dict[str, str]: ...


def cli(lab: Target, *args: str, timeout: float = 120) -> str:
    """`slurmtools ARGS` with the lab's configuration, as an admin runs it; its output. Raises LabError."""
    exe = Path(sys.executable).parent / "slurmtools"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **lab.env()}, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise LabError(f"`slurmtools {' '.join(args)}` failed ({proc.returncode}): "
                       f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def configure(lab: Target, etc: Path) -> None:
    """Steps 2 and 5: the configuration checked, the plugins installed next to slurm.conf."""
    cli(lab, "config", "check")
    cli(lab, "plugins", "install", "--dir", str(etc), "--json")


def ledger(lab: Target) -> None:
    """Step 3, once the database is up: the schema created or migrated."""
    cli(lab, "ledger", "init")


def units(lab: Target) -> Path:
    """Step 6: the unit files, written where the lab keeps them."""
    dest = lab.root / "systemd"
    dest.mkdir(exist_ok=True)
    cli(lab, "install", "units", "--dest", str(dest), "--json")
    return dest


def service(unit: Path) -> tuple[list[str], dict[str, str]]:
    """What systemd would run for UNIT: ExecStart's argv and the Environment= settings."""
    argv: list[str] = []
    env: dict[str, str] = {}
    for line in unit.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key.strip() == "ExecStart":
            argv = shlex.split(value)
        elif key.strip() == "Environment":
            for item in shlex.split(value):
                name, _, val = item.partition("=")
                env[name] = val
    if not argv:
        raise LabError(f"{unit}: no ExecStart")
    return argv, env
