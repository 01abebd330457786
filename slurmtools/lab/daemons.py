"""Starting the lab's Slurm side: munge, MariaDB, slurmdbd, slurmctld and the slurmd, each tracked by its PID file.
On the host's own packages, or inside a Debian root with another Slurm release (lab/chroot.py): `lab.slurm_run`
runs a command where that Slurm lives, and `lab.owner` gives a user's ids as that system knows them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from slurmtools.lab import chroot
from slurmtools.lab.procs import LabError, port_open, wait_for


class Lab(Protocol):
    """What starting the daemons needs of the lab (`slurmtools.lab.cluster.Lab`)."""

    @property
    def root(self) -> Path: ...
    @property
    def ports(self) -> Any: ...
    @property
    def nodes(self) -> Sequence[Any]: ...
    @property
    def gpus(self) -> int: ...
    @property
    def slurm(self) -> str: ...
    @property
    def say(self) -> Callable[[str], None]: ...
    @property
    def fs(self) -> Path | None: ...
    @property
    def slurm_conf(self) -> Path: ...
    def _alive(self, pidfile: Path) -> bool: ...
    def _db_password(self) -> str: ...
    def owner(self, user: str) -> tuple[int, int]: ...
    def where_slurm(self, argv: list[str], *, user: str | None = None, cwd: str = "/") -> list[str]: ...
    def slurm_run(self, argv: list[str], *, user: str | None = None, check: bool = True, timeout: float = 120,
                  cwd: str | None = None) -> subprocess.CompletedProcess[str]: ...


def munge(lab: Lab) -> None:
    mdir = lab.root / "munge"
    pidfile = mdir / "munged.pid"
    if lab._alive(pidfile):
        return
    mdir.mkdir(exist_ok=True)
    os.chown(mdir, *lab.owner("munge"))
    mdir.chmod(0o711)
    key = mdir / "munge.key"
    if not key.exists():
        lab.slurm_run(["mungekey", "--create", f"--keyfile={key}"], user="munge")
    lab.slurm_run(["munged", f"--socket={mdir}/munge.sock", f"--key-file={key}", f"--pid-file={pidfile}",
                   f"--log-file={mdir}/munged.log", f"--seed-file={mdir}/munged.seed", "--force"], user="munge")
    wait_for("munged", lambda: (mdir / "munge.sock").exists() and lab._alive(pidfile), 10, mdir / "munged.log")
    lab.say("started munged (socket %s)" % (mdir / "munge.sock"))


def mariadb(lab: Lab) -> None:
    mdir = lab.root / "mariadb"
    pidfile = mdir / "mysqld.pid"
    sock = mdir / "mysqld.sock"
    if lab._alive(pidfile):
        return
    mdir.mkdir(exist_ok=True)
    os.chown(mdir, *lab.owner("mysql"))
    if not (mdir / "data" / "mysql").exists():
        lab.slurm_run(["mariadb-install-db", "--user=mysql", f"--datadir={mdir}/data",
                       "--auth-root-authentication-method=socket", "--skip-test-db"], cwd="/tmp")
    subprocess.Popen(
        lab.where_slurm(["mariadbd", "--user=mysql", f"--datadir={mdir}/data", f"--socket={sock}",
                         f"--port={lab.ports.mariadb}", "--bind-address=127.0.0.1", f"--pid-file={pidfile}",
                         f"--log-error={mdir}/error.log", "--innodb-buffer-pool-size=64M",
                         "--innodb-lock-wait-timeout=900", "--skip-name-resolve"]),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd="/tmp")
    wait_for("mariadb", lambda: sock.exists() and lab._alive(pidfile), 60, mdir / "error.log")
    pw = lab._db_password()
    sql = (f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
           "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
    lab.slurm_run(["mariadb", f"--socket={sock}", "-e", sql])
    lab.say(f"started mariadb (127.0.0.1:{lab.ports.mariadb})")


def slurmdbd(lab: Lab) -> None:
    if lab._alive(lab.root / "run" / "slurmdbd.pid"):
        return
    lab.slurm_run(["slurmdbd"])
    wait_for("slurmdbd", lambda: port_open(lab.ports.slurmdbd), 30, lab.root / "log" / "slurmdbd.log")
    lab.say(f"started slurmdbd (127.0.0.1:{lab.ports.slurmdbd})")


def slurmctld(lab: Lab) -> None:
    if lab._alive(lab.root / "run" / "slurmctld.pid"):
        return
    lab.slurm_run(["slurmctld", "-f", str(lab.slurm_conf)])
    wait_for("slurmctld", lambda: port_open(lab.ports.slurmctld), 30, lab.root / "log" / "slurmctld.log")
    lab.say(f"started slurmctld (127.0.0.1:{lab.ports.slurmctld})")


def slurmds(lab: Lab) -> None:
    for node in lab.nodes:
        if lab._alive(lab.root / "run" / f"slurmd-{node.name}.pid"):
            continue
        lab.slurm_run(["slurmd", "-N", node.name, "-f", str(lab.slurm_conf)])
        lab.say(f"started slurmd {node.name} (127.0.0.1:{node.port}, {lab.gpus} fake GPUs)")
    for node in lab.nodes:
        wait_for(f"slurmd {node.name}", lambda n=node: port_open(n.port), 30,  # type: ignore[misc]
                 lab.root / "log" / f"slurmd-{node.name}.log")


def root_up(lab: Lab) -> None:
    """Another release: its Debian root made (once), the lab's paths bound into it, slurmtools installed in it."""
    assert lab.fs is not None
    for sub in ("etc", "run", "log"):
        (lab.root / sub).mkdir(parents=True, exist_ok=True)
    chroot.make(lab.fs, lab.slurm, lab.say)
    chroot.mount(lab.fs, lab.root)
    chroot.clients(lab.fs, lab.root / "slurm-bin")
    chroot.install_slurmtools(lab.fs, lab.root, Path(__file__).resolve().parents[2], lab.say)


def ports_free(lab: Lab) -> None:
    """Another lab (another release) holding the same ports: say so, instead of a daemon failing to bind."""
    if any(lab._alive(p) for p in (lab.root / "run" / "slurmctld.pid", lab.root / "mariadb" / "mysqld.pid")):
        return
    busy = [f"{name} {port}" for name, port in (("slurmctld", lab.ports.slurmctld), ("mariadb", lab.ports.mariadb))
            if port_open(port)]
    if busy:
        raise LabError(f"ports in use by another lab ({', '.join(busy)}): `slurmtools lab down` it first "
                       "(`--slurm RELEASE` for another release's)")
