"""The lab cluster: its layout on disk, rendering its configuration, starting and stopping its daemons.

Debian's munge, slurmctld, slurmdbd (with MariaDB) and four ``slurmd -N nX`` on their own
ports, fake GPUs as gres on character devices, PostgreSQL for the ledger, and Prometheus scraping
``slurmtools exporter`` (lab/monitoring.py); every
listener on loopback. Every daemon is tracked by its PID file, and ``down`` stops only
those PIDs (never anything found by name).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from slurmtools.lab import chroot, daemons, monitoring, packages, postgres
from slurmtools.lab import install as site
from slurmtools.lab import source as sources
from slurmtools.lab.faults import faketime_lib
from slurmtools.lab.procs import LabError, job_pids, pid_alive, pid_is, read_pid, wait_for

HOOKS = {"prolog": "prolog.d", "epilog": "epilog.d", "epilog_slurmctld": "epilog.d"}


@dataclass
class Ports:
    """The lab's listening ports: all below Linux's ephemeral range (32768-60999 by default), so that no client
    socket the kernel gave that port to can hold it when a daemon starts (the ledger's PostgreSQL once sat at 55432
    and failed to bind, "Address already in use", after a run had opened thousands of connections)."""
    slurmctld: int = 6817
    slurmd_base: int = 17000
    slurmdbd: int = 6819
    mariadb: int = 3307
    postgres: int = 15432


@dataclass
class LabNode:
    name: str
    port: int


def base_dir() -> Path:
    """The host's lab; labs of other Slurm releases and their Debian roots live under it."""
    return Path(os.environ.get("SLURMTOOLS_LAB_BASE", "/var/tmp/slurmtools-lab"))


def default_release() -> str:
    """The Slurm release of the lab in use ("" for the host's own packages): `lab env` sets it."""
    return os.environ.get("SLURMTOOLS_LAB_SLURM", "")


def default_dir() -> Path:
    if "SLURMTOOLS_LAB_DIR" in os.environ:
        return Path(os.environ["SLURMTOOLS_LAB_DIR"])
    release = default_release()
    return base_dir() / f"slurm-{release}" if release else base_dir()


def snapshot_dir() -> Path | None:
    """The shipped health-check snapshots (the source tree's tests/data/snapshots), if present."""
    here = Path(__file__).resolve().parents[2] / "tests" / "data" / "snapshots"
    return here if (here / "healthy-8xh100.json").is_file() else None


#: Commands the lab's slurmtools runs through logging shims ($LAB/bin), so tests can count Slurm calls.
SLURM_TOOLS = ("sinfo", "squeue", "scontrol", "sbatch", "sacct", "sacctmgr", "scancel")


def repo_hook_dir(name: str) -> Path:
    """The project's prolog.d/epilog.d: the source tree's, else the installed copy."""
    here = Path(__file__).resolve().parents[2] / name
    if here.is_dir():
        return here
    installed = Path(sys.prefix) / "share" / "slurmtools" / name
    if installed.is_dir():
        return installed
    raise LabError(f"cannot find the {name} hooks (looked in {here} and {installed})")


@dataclass
class Lab:
    root: Path = field(default_factory=default_dir)
    nodes: list[LabNode] = field(default_factory=lambda: [LabNode(f"n{i}", 17000 + i) for i in range(1, 5)])
    gpus: int = 4
    cluster: str = "lab"
    ports: Ports = field(default_factory=Ports)
    say: Callable[[str], None] = print
    #: Another Slurm release than the host's, run in a Debian root (lab/chroot.py); "" for the host's packages.
    slurm: str = field(default_factory=default_release)
    #: A Slurm source tarball for a release built from source (lab/source.py); None: the vendored or downloaded one.
    slurm_source: str | None = None
    #: Set by prepare(): the rendered slurm.conf differs from the one before (slurmctld must restart).
    conf_changed: bool = field(default=False, init=False, repr=False)

    @classmethod
    def for_release(cls, release: str | None, say: Callable[[str], None] = print,
                    source: str | None = None) -> Lab:
        """The lab of Slurm RELEASE ("22.05", "24.11", "25.11" ...; None or the host's own: the host's lab).
        SOURCE: the tarball a release built from source is built from (lab/source.py)."""
        if release is None:
            return cls(say=say, slurm_source=source)
        if release in ("", "host", chroot.host_release()):
            return cls(root=base_dir(), slurm="", say=say)
        if release not in chroot.RELEASES and release not in sources.RELEASES:
            raise LabError(f"Slurm {release}: the lab has "
                           f"{', '.join([chroot.host_release(), *chroot.RELEASES, *sources.RELEASES])}")
        return cls(root=base_dir() / f"slurm-{release}", slurm=release, say=say, slurm_source=source)

    # ------------------------------------------------------------------ paths
    @property
    def fs(self) -> Path | None:
        """The Debian root this lab's Slurm runs in (None: the host's)."""
        return base_dir() / "roots" / self.slurm if self.slurm else None

    @property
    def release(self) -> str:
        return self.slurm or chroot.host_release()

    def where_slurm(self, argv: list[str], *, user: str | None = None, cwd: str = "/") -> list[str]:
        """ARGV as run where this lab's Slurm lives (in its Debian root, or here)."""
        if self.fs is not None:
            return chroot.inside(self.fs, argv, user=user, cwd=cwd)
        return ["runuser", "-u", user, "--", *argv] if user else argv

    def slurm_run(self, argv: list[str], *, user: str | None = None, check: bool = True, timeout: float = 120,
                  cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        return self._run(self.where_slurm(argv, user=user, cwd=cwd or "/"), check=check, timeout=timeout,
                         cwd=cwd if self.fs is None else None)

    def owner(self, user: str) -> tuple[int, int]:
        """USER's uid and gid where this lab's Slurm lives."""
        if self.fs is not None:
            return chroot.uid(self.fs, user)
        import pwd

        entry = pwd.getpwnam(user)
        return entry.pw_uid, entry.pw_gid

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def host(self) -> str:
        return socket.gethostname().split(".")[0]

    @property
    def pg_dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports.postgres}/slurmtools"

    @property
    def ledger_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.ports.postgres}/slurmtools"

    def node_dir(self, node: str) -> Path:
        return self.root / "nodes" / node

    def kernel_log(self, node: str) -> Path:
        return self.node_dir(node) / "kern.log"

    def snapshot(self, node: str) -> Path:
        """The snapshot a lab node's health checks read instead of this GPU-less machine."""
        return self.node_dir(node) / "snapshot.json"

    def set_snapshot(self, node: str, name: str, *, reboot: bool = False) -> Path:
        """The node's hardware becomes the shipped snapshot NAME, in the same boot (REBOOT: a new boot id)."""
        from slurmtools.lab import hardware

        src = snapshot_dir()
        if src is None or not (src / f"{name}.json").is_file():
            raise LabError(f"no snapshot {name!r} (the lab's health checks need the source tree's "
                           "tests/data/snapshots)")
        dest = self.snapshot(node)
        snap = hardware.load(src / f"{name}.json")
        if snap is None:
            raise LabError(f"snapshot {name!r} is not JSON")
        boot = None if reboot else hardware.boot_id(hardware.load(dest))
        hardware.save(dest, hardware.with_boot_id(snap, boot))
        return dest

    def env(self) -> dict[str, str]:
        bin_dir = str(Path(sys.executable).parent)
        return {
            "SLURM_CONF": str(self.slurm_conf),
            "SLURMTOOLS_CONFIG": str(self.etc / "slurmtools.toml"),
            "SLURMTOOLS_LAB_DIR": str(self.root),
            "SLURMTOOLS_LEDGER_URL": self.ledger_url,
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.ports.postgres),
            "PGUSER": "postgres",
            "PGDATABASE": "slurmtools",
            "SLURMTOOLS_LAB_PG_DSN": self.pg_dsn,
            "PATH": f"{bin_dir}:" + (f"{self.root / 'slurm-bin'}:" if self.fs else "")
                    + os.environ.get("PATH", "/usr/bin:/bin"),
            "SLURMTOOLS_LAB_SLURM": self.slurm,
        }

    def _run(self, argv: list[str], *, user: str | None = None, check: bool = True,
             timeout: float = 120, cwd: str | None = None, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
        if user:
            argv = ["runuser", "-u", user, "--", *argv]
        full_env = {**os.environ, **(env or {}), "SLURM_CONF": str(self.slurm_conf)}
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd, env=full_env, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    # ------------------------------------------------------------- rendering
    def _render(self, template: str, dest: Path, mode: int = 0o644, **extra: object) -> None:
        env = jinja2.Environment(loader=jinja2.PackageLoader("slurmtools.lab", "templates"),
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                 trim_blocks=True, lstrip_blocks=True)
        text = env.get_template(template).render(
            lab=str(self.root), cluster=self.cluster, host=self.host, ports=self.ports,
            nodes=self.nodes, gpus=self.gpus, ledger_url=self.ledger_url,
            hostlist=f"n[1-{len(self.nodes)}]" if len(self.nodes) > 1 else self.nodes[0].name, **extra)
        tmp = dest.with_suffix(dest.suffix + ".tmp")
        tmp.write_text(text)
        tmp.chmod(mode)
        tmp.replace(dest)

    def _db_password(self) -> str:
        path = self.etc / "db-password"
        if not path.exists():
            path.write_text(secrets.token_hex(12))
            path.chmod(0o600)
        return path.read_text().strip()

    def prepare(self) -> None:
        for sub in ["etc", "state", "run", "log", "hooks", "faults", "fakedev", "spool-slurmtools", "bin"]:
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        submissions = self.root / "submissions"   # users drop `slurmtools sbatch` records: sticky, like /tmp
        submissions.mkdir(exist_ok=True)
        submissions.chmod(0o1733)
        for node in self.nodes:
            (self.root / "spool" / node.name).mkdir(parents=True, exist_ok=True)
            self.node_dir(node.name).mkdir(parents=True, exist_ok=True)
            (self.node_dir(node.name) / "textfile").mkdir(mode=0o755, exist_ok=True)
            self.kernel_log(node.name).touch()
            if snapshot_dir() is not None:
                self.set_snapshot(node.name, "healthy-8xh100")   # every `lab up` starts healthy
        for i in range(self.gpus):
            dev = self.root / "fakedev" / f"gpu{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, like /dev/null
        before = self.slurm_conf.read_text() if self.slurm_conf.exists() else ""
        self._render("slurm.conf.j2", self.slurm_conf)
        # A running slurmctld keeps its plugin types until restarted (`reconfigure` does not load new ones).
        self.conf_changed = before != self.slurm_conf.read_text()
        self._render("gres.conf.j2", self.etc / "gres.conf")
        self._render("slurmdbd.conf.j2", self.etc / "slurmdbd.conf", mode=0o600, db_password=self._db_password())
        snaps = snapshot_dir()
        self._render("slurmtools.toml.j2", self.etc / "slurmtools.toml", snapshots=snaps is not None,
                     backend=sources.hook_backend(self.slurm),
                     profile=(snaps / "dgx-h100.profile.toml").read_text() if snaps else "",
                     slurmtools=str(Path(sys.executable).parent / "slurmtools"))
        site.configure(self, self.etc)          # docs/install.md steps 2 and 5, as an admin runs them
        real = "/usr/bin" if self.fs is None else str(self.root / "slurm-bin")   # the root's, from in and out
        for tool in SLURM_TOOLS:   # logging shims: one line per call, with the calling hook's context
            shim = self.root / "bin" / tool
            shim.write_text(f'#!/bin/sh\necho "$(date +%s.%N) ${{SLURMD_NODENAME:--}} ${{SLURM_SCRIPT_CONTEXT:--}} '
                            f'{tool} $*" >> {self.root}/log/slurm-calls.log\nexec {real}/{tool} "$@"\n')
            shim.chmod(0o755)
        system = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        for hook, hookdir in HOOKS.items():
            if self.fs is None:    # the checkout's hooks and environment
                where, path = str(repo_hook_dir(hookdir)), f"{Path(sys.executable).parent}:{system}"
            else:                  # the root's slurmtools, installed as docs/install.md says (lab/chroot.py)
                where, path = f"{chroot.VENV}/share/slurmtools/{hookdir}", f"{chroot.VENV}/bin:{system}"
            self._render("hook.sh.j2", self.root / "hooks" / hook, mode=0o755,
                         hook=hook, hookdir=where, path=path, faketime=faketime_lib())
        if self.fs is not None:    # no cgroup filesystem in a chroot
            (self.etc / "cgroup.conf").write_text("# Written by `slurmtools lab up`: slurmd in a chroot\n"
                                                  "CgroupPlugin=disabled\n")

    def _etc_slurm(self) -> Path:
        return Path("/etc/slurm") if self.fs is None else self.fs / "etc" / "slurm"

    def link_etc(self) -> None:
        """Let plain `sinfo` work: link /etc/slurm/*.conf (the root's, for another release) to the lab when nothing
        else is there."""
        etc_slurm = self._etc_slurm()
        if self.fs is not None:
            etc_slurm.mkdir(parents=True, exist_ok=True)
        if not etc_slurm.is_dir() or os.geteuid() != 0:
            return
        for name in ["slurm.conf", "gres.conf"]:
            link = etc_slurm / name
            if link.is_symlink() and str(os.readlink(link)).startswith(str(self.root)):
                continue
            if not link.exists() and not link.is_symlink():
                link.symlink_to(self.etc / name)

    def unlink_etc(self) -> None:
        for name in ["slurm.conf", "gres.conf"]:
            link = self._etc_slurm() / name
            if link.is_symlink() and str(os.readlink(link)).startswith(str(self.root)):
                link.unlink()

    # --------------------------------------------------------------- daemons
    def daemons(self) -> list[tuple[str, Path]]:
        """Every daemon the lab starts, with the PID file that tracks it."""
        run = self.root / "run"
        items = [("munged", self.root / "munge" / "munged.pid"),
                 ("mariadb", self.root / "mariadb" / "mysqld.pid"),
                 ("slurmdbd", run / "slurmdbd.pid"),
                 ("slurmctld", run / "slurmctld.pid")]
        items += [(f"slurmd {n.name}", run / f"slurmd-{n.name}.pid") for n in self.nodes]
        items.append(("postgresql", self.root / "pg" / "data" / "postmaster.pid"))
        return items + monitoring.pidfiles(self)

    @staticmethod
    def _comm(pidfile: Path) -> str:
        """The program a lab PID file belongs to (checked against /proc/PID/comm)."""
        return {"munged.pid": "munged", "mysqld.pid": "mariadbd", "slurmdbd.pid": "slurmdbd",
                "slurmctld.pid": "slurmctld", "postmaster.pid": "postgres",
                **monitoring.COMMS}.get(pidfile.name, "slurmd")

    def _pid(self, pidfile: Path) -> int | None:
        """The live PID of the lab daemon behind this PID file, or None (absent, dead or reused)."""
        pid = read_pid(pidfile)
        return pid if pid is not None and pid_is(pid, self._comm(pidfile)) else None

    def _alive(self, pidfile: Path) -> bool:
        return self._pid(pidfile) is not None

    def start_slurmctld(self) -> None:
        daemons.slurmctld(self)

    def start_slurmds(self) -> None:
        daemons.slurmds(self)

    def start_postgres(self) -> None:
        postgres.start(self)

    def stop_postgres(self) -> None:
        postgres.stop(self)

    def nodes_idle(self) -> bool:
        proc = self.slurm_run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, timeout=10)
        states = dict(line.split() for line in proc.stdout.splitlines() if len(line.split()) == 2)
        return all(states.get(n.name, "").rstrip("*") in {"idle", "mixed", "allocated", "drained", "draining"}
                   and not states.get(n.name, "").endswith("*") for n in self.nodes)

    def up(self, install: bool = True) -> None:
        if os.geteuid() != 0:
            raise LabError("the lab runs Slurm daemons as root: run `slurmtools lab up` as root")
        t0 = time.monotonic()
        if install:
            packages.install(self.say)
        if self.fs is not None:
            daemons.root_up(self)
        daemons.ports_free(self)
        self.prepare()
        self.link_etc()
        daemons.munge(self)
        daemons.mariadb(self)
        daemons.slurmdbd(self)
        if self.conf_changed and self._alive(self.root / "run" / "slurmctld.pid"):
            self.say("slurm.conf changed: restarting slurmctld, reconfiguring the slurmds")
            self._stop_pid("slurmctld", self.root / "run" / "slurmctld.pid")
            self.start_slurmctld()
            self.slurm_run(["scontrol", "reconfigure"], check=False)
        self.start_slurmctld()
        self.start_slurmds()
        self.start_postgres()
        site.ledger(self)                       # docs/install.md step 3
        monitoring.up(self, site.units(self))   # step 6: the exporter runs from its unit file
        wait_for("all lab nodes responding", self.nodes_idle, 60, self.root / "log" / "slurmctld.log")
        self.say(f"lab up in {time.monotonic() - t0:.1f}s: Slurm {self.release}, {len(self.nodes)} nodes, state in "
                 f"{self.root}" + (f", Slurm's root {self.fs}" if self.fs else ""))

    def status(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, pidfile in self.daemons():
            pid = self._pid(pidfile)
            out.append({"daemon": name, "pid": pid, "running": pid is not None, "pidfile": str(pidfile),
                        "slurm": self.release})
        return out

    def _stop_pid(self, name: str, pidfile: Path, timeout: float = 20) -> None:
        pid = self._pid(pidfile)
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.1)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        self.say(f"stopped {name} (pid {pid})")

    def down(self, purge: bool = False) -> None:
        run = self.root / "run"
        monitoring.down(self)
        for node in self.nodes:
            self._stop_pid(f"slurmd {node.name}", run / f"slurmd-{node.name}.pid")
        self._stop_pid("slurmctld", run / "slurmctld.pid")
        self._stop_pid("slurmdbd", run / "slurmdbd.pid")
        self._stop_pid("mariadb", self.root / "mariadb" / "mysqld.pid", timeout=60)
        self.stop_postgres()
        self._stop_pid("munged", self.root / "munge" / "munged.pid")
        self.unlink_etc()
        if self.fs is not None:
            chroot.umount(self.fs, self.root)
        if purge and self.root.exists():
            shutil.rmtree(self.root)
            self.say(f"removed {self.root}")

    # --------------------------------------------------------------- faults
    def job_pids_on(self, node: str) -> Iterator[tuple[int, str]]:
        """Processes of jobs running on a lab node: (pid, job id), found by their environment."""
        return job_pids(node)

    def append_kernel_line(self, node: str, message: str) -> str:
        """Append a kernel-log line in the `[ seconds.micros] message` form dmesg prints."""
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        line = f"[{uptime:12.6f}] {message}"
        with open(self.kernel_log(node), "a") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return line

    def inject(self, node: str, fault: str) -> dict[str, object]:
        if node not in {n.name for n in self.nodes}:
            raise LabError(f"unknown lab node {node!r} (have {', '.join(n.name for n in self.nodes)})")
        from slurmtools.lab.faults import FAULTS

        if fault not in FAULTS:
            raise LabError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
        return FAULTS[fault](self, node)
