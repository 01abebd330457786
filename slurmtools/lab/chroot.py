"""Another Slurm release for the lab: Debian's own packages of it (trixie: 24.11) in a Debian root made
with debootstrap, kept under the lab's base directory (<base>/roots/<version>) and reused.

Inside the root run what Slurm needs (munge, slurmdbd, slurmctld, the slurmd; slurmdbd stores into the host's
MariaDB over TCP, a server whose version the lab controls: lab/daemons.py), with the lab's state
directory bind-mounted at its own path (so every path in slurm.conf, every hook, spool and log is the same inside
and out), /tmp too (jobs' scripts and output), and /proc, /sys, /dev. slurmtools is installed into the root the way
docs/install.md tells a site (a venv in /opt/slurmtools, `pip install` of this checkout's wheel); the hooks run that
one. The host keeps the ledger's PostgreSQL, Prometheus, the exporter, the controller and the tests, which reach
the root's Slurm through small wrappers (`<lab>/slurm-bin/sinfo`...: `chroot` into the root, in the caller's
working directory). slurmd finds no cgroup filesystem in a chroot: cgroup.conf says `CgroupPlugin=disabled`."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from slurmtools.lab.procs import LabError

#: Slurm release -> the Debian suite that carries it.
RELEASES = {"24.11": "trixie"}
MIRROR = "http://deb.debian.org/debian"
#: No MariaDB server: every release's slurmdbd uses the host's (lab/daemons.py says why).
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "slurmdbd", "munge", "python3-venv",
            "ca-certificates", "procps", "libfaketime", "util-linux"]
#: The client tools the host reaches the root's Slurm through.
CLIENTS = ("sinfo", "squeue", "scontrol", "sbatch", "sacct", "sacctmgr", "scancel", "srun", "salloc", "sstat",
           "sprio", "sshare", "sreport", "sdiag", "mungekey")
MARK = ".slurmtools-root"       # written last: a root without it is remade
INSIDE = "/etc/slurmtools-lab-root"
VENV = "/opt/slurmtools"


def host_release() -> str:
    """The host's own Slurm release ("22.05"), from its slurmctld package."""
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "slurmctld"], capture_output=True, text=True)
    return ".".join(proc.stdout.split(".")[:2]) if proc.returncode == 0 and proc.stdout else ""


def _run(argv: list[str], timeout: float = 900, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8",
                               **(env or {})})
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv[:6])}... failed ({proc.returncode}): "
                       f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
    return proc.stdout


#: The command line that runs "$@" in the directory "$1" inside a root (or in / when it has no such directory), with
#: the system's PATH (/usr/local first: a source-built Slurm is linked there, lab/source.py).
_IN_DIR = ('PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH; '
           'cd "$1" 2>/dev/null || cd /; shift; exec "$@"')


def inside(root: Path, argv: list[str], *, user: str | None = None, cwd: str = "/") -> list[str]:
    """ARGV run in ROOT (as USER), in CWD when it exists there."""
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    return ["chroot", str(root), "/bin/sh", "-c", _IN_DIR, "sh", cwd, *argv]


def make(root: Path, version: str, say: Callable[[str], None] = print) -> str:
    """The Debian root for VERSION, made once (debootstrap, then Slurm's packages); its Slurm's version string.
    (A release Debian does not package is built from source in such a root: lab/source.py.)"""
    mark = root / MARK
    if mark.exists():
        return mark.read_text().strip()
    if version not in RELEASES:
        raise LabError(f"Slurm {version}: the lab knows {', '.join(sorted(RELEASES))} (and the host's own)")
    if shutil.which("debootstrap") is None:
        raise LabError("debootstrap is missing: apt-get install debootstrap")
    suite = RELEASES[version]
    root.mkdir(parents=True, exist_ok=True)
    say(f"making a Debian {suite} root for Slurm {version} in {root} (debootstrap, once)")
    if not (root / "usr" / "bin" / "apt-get").exists():
        _run(["debootstrap", "--variant=minbase", suite, str(root), MIRROR], timeout=1800)
    shutil.copyfile("/etc/resolv.conf", root / "etc" / "resolv.conf")
    (root / "usr" / "sbin" / "policy-rc.d").write_text("#!/bin/sh\nexit 101\n")   # packages start no daemons
    (root / "usr" / "sbin" / "policy-rc.d").chmod(0o755)
    # sid's Release files expire within days: a mirror (or a registry proxy) a little behind this clock serves one
    # apt would refuse; the lab's root is a test fixture, so the date is not checked (stable suites have none)
    _run(["chroot", str(root), "apt-get", "-o", "Acquire::Check-Valid-Until=false", "update", "-q"])
    _run(["chroot", str(root), "apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES], timeout=1800)
    got = _run(["chroot", str(root), "dpkg-query", "-W", "-f=${Version}", "slurmctld"]).strip()
    if not got.startswith(version + "."):
        raise LabError(f"Debian {suite} now carries Slurm {got}, not {version}: update slurmtools/lab/chroot.py")
    (root / INSIDE.lstrip("/")).write_text(f"Slurm {got}: a slurmtools lab root\n")
    mark.write_text(got + "\n")
    return got


def _mounted() -> set[str]:
    return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}


def binds(lab_root: Path) -> list[str]:
    return ["/proc", "/sys", "/dev", "/dev/pts", "/tmp", str(lab_root)]


def mount(root: Path, lab_root: Path) -> None:
    """Bind the host paths the lab shares into ROOT (idempotent)."""
    have = _mounted()
    for path in binds(lab_root):
        target = root / path.lstrip("/")
        if str(target) in have:
            continue
        target.mkdir(parents=True, exist_ok=True)
        if path == "/proc":
            _run(["mount", "-t", "proc", "proc", str(target)])
        else:
            _run(["mount", "--bind", path, str(target)])


def umount(root: Path, lab_root: Path) -> None:
    have = _mounted()
    for path in reversed(binds(lab_root)):
        target = root / path.lstrip("/")
        if str(target) in have:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)


def share(root: Path, path: Path) -> None:
    """A filesystem mounted at PATH on the host after the lab's binds (a test's small tmpfs), seen inside ROOT too
    (the binds do not carry later mounts)."""
    _run(["mount", "--bind", str(path), str(root / str(path).lstrip("/"))])


def unshare(root: Path, path: Path) -> None:
    subprocess.run(["umount", "-l", str(root / str(path).lstrip("/"))], capture_output=True)


def uid(root: Path, user: str) -> tuple[int, int]:
    """USER's uid and gid in ROOT (not the host's: the packages made them there)."""
    for line in (root / "etc" / "passwd").read_text().splitlines():
        parts = line.split(":")
        if parts[0] == user:
            return int(parts[2]), int(parts[3])
    raise LabError(f"no user {user} in {root}/etc/passwd")


def clients(root: Path, dest: Path) -> None:
    """<lab>/slurm-bin: the root's Slurm tools for the host (and for itself: inside, they run directly)."""
    dest.mkdir(exist_ok=True)
    for tool in CLIENTS:
        path = dest / tool
        real = f"/usr/local/bin/{tool}" if (root / "usr" / "local" / "bin" / tool).is_symlink() else f"/usr/bin/{tool}"
        path.write_text(f"#!/bin/sh\n# The lab's Slurm, in {root}\n"
                        f"[ -e {INSIDE} ] && exec {real} \"$@\"\n"
                        f"exec chroot {root} /bin/sh -c '{_IN_DIR}' "
                        f"sh \"$PWD\" {real} \"$@\"\n")
        path.chmod(0o755)


def trust_host_cas(root: Path) -> None:
    """The host's local certificate authorities (a site's proxy, say) trusted in ROOT too, as a site would do on
    every host: pip inside reaches the package index the way the host's does."""
    local = Path("/usr/local/share/ca-certificates")
    if not local.is_dir():
        return
    dest = root / "usr" / "local" / "share" / "ca-certificates"
    dest.mkdir(parents=True, exist_ok=True)
    for crt in local.glob("*.crt"):
        shutil.copyfile(crt, dest / crt.name)
    _run(inside(root, ["update-ca-certificates"]))


def install_slurmtools(root: Path, lab_root: Path, say: Callable[[str], None] = print) -> str:
    """docs/install.md step 1 inside ROOT: a venv in /opt/slurmtools and a wheel of this slurmtools in it (again when
    it changed): the checkout's, or, installed from a package, the installed distribution's (lab/wheel.py).
    Returns the installed wheel's name."""
    from slurmtools.lab import wheel as wheels_

    wheel = wheels_.build(lab_root / "wheels")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    stamp = root / VENV.lstrip("/") / ".slurmtools-wheel"
    if stamp.exists() and stamp.read_text().strip() == digest:
        return wheel.name
    say(f"installing slurmtools into {root}{VENV} (docs/install.md step 1)")
    trust_host_cas(root)
    if not (root / VENV.lstrip("/") / "bin" / "pip").exists():
        _run(inside(root, ["python3", "-m", "venv", VENV]))
    _run(inside(root, [f"{VENV}/bin/pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                       "--no-deps", str(wheel)]), timeout=900)
    _run(inside(root, [f"{VENV}/bin/pip", "install", "-q", "--disable-pip-version-check",
                       f"{wheel}[postgres]"]), timeout=900)
    stamp.write_text(digest + "\n")
    return wheel.name
