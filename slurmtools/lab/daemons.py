"""Starting the lab's Slurm side: munge, MariaDB, slurmdbd, slurmctld and the slurmd, each tracked by its PID file.
On the host's own packages, or inside a Debian root with another Slurm release (lab/chroot.py): `lab.slurm_run`
runs a command where that Slurm lives, and `lab.owner` gives a user's ids as that system knows them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from slurmtools.lab import chroot, source
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
    @property
    def slurm_source(self) -> str | None: ...
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


#: MariaDB servers slurmdbd is known to work with. Every release's slurmdbd (the host's 22.05, and 24.11/26.05 in
#: their Debian roots, over TCP) uses the one server the lab controls: the HOST's MariaDB (Debian 12: 10.11). A
#: root's own MariaDB is never started: with trixie's and sid's 11.8, slurmdbd 24.11 and 26.05 stop at start
#: (`mysql_query failed: 5027 Number of columns in result (=1) set execeeds maxmimum allowed number of columns (=0)`
#: on `select @var := concat('')`, then `fatal: _check_mysql_concat_is_sane`), while the same slurmdbd and client
#: library work against 10.11 (docs/lab.md).
MARIADB_KNOWN_GOOD = ("10.5", "10.6", "10.11", "11.4")
#: slurmdbd log lines that mean "the database answered wrongly", and what to say about them.
DB_FAILURES = {
    "_check_mysql_concat_is_sane": "slurmdbd rejected the database server's answers (MariaDB 11.8 with Slurm's "
                                   "client library does this); the lab runs slurmdbd against the host's MariaDB: "
                                   "check `mariadb --version` on the host (known good: {good})",
    "mysql_real_connect failed": "slurmdbd cannot connect to the lab's MariaDB on 127.0.0.1:{port} "
                                 "(see {mdir}/error.log)",
    "Database settings not recommended": None,
}


def _host_run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd="/tmp")
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv[:4])}... failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return proc


def _host_owner(user: str) -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise LabError(f"no user {user} on this host: install Debian's mariadb-server (`slurmtools lab up`)") from None
    return entry.pw_uid, entry.pw_gid


def mariadb_version(sock: Path) -> str:
    """The running server's version ("10.11.19-MariaDB-0+deb12u1")."""
    return _host_run(["mariadb", f"--socket={sock}", "-N", "-B", "-e", "SELECT VERSION()"]).stdout.strip()


def check_mariadb_version(version: str) -> None:
    """A server slurmdbd is not known to work with: one clear line, before slurmdbd dies of it."""
    major_minor = ".".join(version.split("-")[0].split(".")[:2])
    if major_minor not in MARIADB_KNOWN_GOOD:
        raise LabError(f"the lab's MariaDB is {version}: slurmdbd is known to work with MariaDB "
                       f"{', '.join(MARIADB_KNOWN_GOOD)} only (11.8 stops slurmdbd 24.11 and 26.05 at start); "
                       "run the lab on a Debian 12 host, whose MariaDB is 10.11")


def mariadb(lab: Lab) -> None:
    """The accounting database: the host's MariaDB (never a root's), on the lab's port, for every release."""
    mdir = lab.root / "mariadb"
    pidfile = mdir / "mysqld.pid"
    sock = mdir / "mysqld.sock"
    if lab._alive(pidfile):
        return
    mdir.mkdir(exist_ok=True)
    os.chown(mdir, *_host_owner("mysql"))
    data = mdir / "data"
    if data.exists() and data.stat().st_uid != _host_owner("mysql")[0]:
        import shutil

        shutil.rmtree(data)    # made by a root's MariaDB before the lab used the host's (accounting is per lab)
    if not (data / "mysql").exists():
        _host_run(["mariadb-install-db", "--user=mysql", f"--datadir={data}",
                   "--auth-root-authentication-method=socket", "--skip-test-db"], timeout=300)
    subprocess.Popen(
        ["mariadbd", "--user=mysql", f"--datadir={data}", f"--socket={sock}",
         f"--port={lab.ports.mariadb}", "--bind-address=127.0.0.1", f"--pid-file={pidfile}",
         f"--log-error={mdir}/error.log", "--innodb-buffer-pool-size=64M",
         "--innodb-lock-wait-timeout=900", "--skip-name-resolve"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd="/tmp")
    wait_for("mariadb", lambda: sock.exists() and lab._alive(pidfile), 60, mdir / "error.log")
    version = mariadb_version(sock)
    check_mariadb_version(version)
    pw = lab._db_password()
    sql = (f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
           f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
           "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
    _host_run(["mariadb", f"--socket={sock}", "-e", sql])
    lab.say(f"started mariadb {version.split('-')[0]} (127.0.0.1:{lab.ports.mariadb})")


def db_failure(log: Path, port: int, mdir: Path) -> str | None:
    """What slurmdbd's log says went wrong with the database, in one line (None: nothing we know)."""
    try:
        text = log.read_text(errors="replace")[-20000:]
    except OSError:
        return None
    for needle, say in DB_FAILURES.items():
        if say is not None and needle in text:
            return say.format(good=", ".join(MARIADB_KNOWN_GOOD), port=port, mdir=mdir)
    return None


def slurmdbd(lab: Lab) -> None:
    if lab._alive(lab.root / "run" / "slurmdbd.pid"):
        return
    log = lab.root / "log" / "slurmdbd.log"
    lab.slurm_run(["slurmdbd"])
    try:
        # 30 s: a first start creates the database, and a client library that wants TLS retries once after 5 s
        wait_for("slurmdbd", lambda: port_open(lab.ports.slurmdbd), 30, log)
    except LabError as exc:
        known = db_failure(log, lab.ports.mariadb, lab.root / "mariadb")
        raise LabError(f"slurmdbd did not start: {known}\n{exc}" if known else str(exc)) from None
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
    if lab.slurm in source.RELEASES:
        source.make(lab.fs, lab.slurm, lab.slurm_source, lab.say)
    else:
        chroot.make(lab.fs, lab.slurm, lab.say)
    chroot.mount(lab.fs, lab.root)
    chroot.clients(lab.fs, lab.root / "slurm-bin")
    wheel = chroot.install_slurmtools(lab.fs, lab.root, lab.say)
    if source.has_pyslurm(lab.slurm):    # the hooks' venv gets pyslurm, built against this Slurm
        source.install_pyslurm(lab.fs, lab.slurm, str(lab.root / "wheels" / wheel), lab.say)


def ports_free(lab: Lab) -> None:
    """Another lab (another release) holding the same ports: say so, instead of a daemon failing to bind."""
    if any(lab._alive(p) for p in (lab.root / "run" / "slurmctld.pid", lab.root / "mariadb" / "mysqld.pid")):
        return
    busy = [f"{name} {port}" for name, port in (("slurmctld", lab.ports.slurmctld), ("mariadb", lab.ports.mariadb))
            if port_open(port)]
    if busy:
        raise LabError(f"ports in use by another lab ({', '.join(busy)}): `slurmtools lab down` it first "
                       "(`--slurm RELEASE` for another release's)")
