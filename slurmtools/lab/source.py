"""Slurm releases Debian does not package (25.11), built from SchedMD's source in a Debian root.

The root is the same kind as 24.11's (lab/chroot.py: debootstrap of trixie; made by copying an existing 24.11 root
when there is one, which saves the bootstrap), without Debian's Slurm packages and with Slurm's build dependencies
from Debian. The release's tarball is built inside the root (configure, `make -j<cores>`, `make install`) under a
versioned prefix, /opt/slurm/<version>, linked into /usr/local/{bin,sbin} (first on the root's PATH). The build
is cached by version and the tarball's sha256: a second `lab up` with the same tarball does not rebuild.

The tarball: `--slurm-source PATH`, else `$SLURMTOOLS_SLURM_SOURCE`, else the vendored copy next to the checkout
(`../shared/vendor`, `/work/shared/vendor`), else SchedMD's release tag downloaded from GitHub (`archive/refs/
tags/<tag>.tar.gz`, a `git archive` of the tag as the vendored copies are) and kept only when its contents are the
ones this project vouches for (`tree_digest`: the files below the top folder, whatever the compression, the folder's
name and the archive's owners and times; recorded from the vendored copies). SchedMD's own release .tar.bz2 is
used when given or vendored; it is not downloaded, its hash being known to this project from no source it can check."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slurmtools.lab import chroot
from slurmtools.lab.procs import LabError

#: SchedMD's tags as GitHub serves them: `git archive` of the tag, gzip'd, under a `slurm-<tag>/` folder.
GITHUB = "https://github.com/SchedMD/slurm/archive/refs/tags/{tag}.tar.gz"


@dataclass(frozen=True)
class SourceRelease:
    version: str           # "25.11.7"
    suite: str             # the Debian suite of the root that builds and runs it
    files: tuple[str, ...]  # tarball names, preferred first
    tag: str = ""           # SchedMD's git tag of the release
    tree: str = ""          # tree_digest of that tag's `git archive` (from the vendored copy, whose sha256 is kept)
    pyslurm: bool = True    # PyPI has a pyslurm for this release (pyslurm follows Slurm's major.minor)


#: Release -> what the lab builds for it. 26.05 too is built from SchedMD's source rather than taken from Debian
#: sid: sid changes daily (its Release files expire within days), and a source build is the same recipe as 25.11.
#: PyPI has no pyslurm 26.05: its lab runs the CLI backend.
RELEASES = {"25.11": SourceRelease("25.11.7", "trixie", ("slurm-25.11.7.tar.xz", "slurm-25.11.7.tar.bz2"),
                                   "slurm-25-11-7-1",
                                   "eea5e0f68eb48c5fd54f45c9ba89ea140f4497a0a5346615def0759368f24992"),
            "26.05": SourceRelease("26.05.3", "trixie", ("slurm-26.05.3.tar.xz", "slurm-26.05.3.tar.bz2"),
                                   "slurm-26-05-3-1",
                                   "951cb55c6403c6e7280f17b1fd61e4a306ae4e84dba6513c9c3549ccb2fa536d", pyslurm=False)}


def has_pyslurm(release: str) -> bool:
    """Whether the lab of RELEASE builds pyslurm against it (a source build of a release PyPI's pyslurm follows)."""
    return release in RELEASES and RELEASES[release].pyslurm


def hook_backend(release: str) -> str:
    """The Slurm backend the lab's hooks are configured with: `auto` (pyslurm, which the root has) on a release built
    from source with a pyslurm, else the CLI; SLURMTOOLS_LAB_SLURM_BACKEND overrides."""
    return os.environ.get("SLURMTOOLS_LAB_SLURM_BACKEND") or ("auto" if has_pyslurm(release) else "cli")

#: sha256 of the tarballs the project vouches for, checked when a local tarball of that name is built: the .tar.xz
#: are `git archive`s of SchedMD's tags (the vendored copies, shared/vendor/SHA256SUMS). A download is checked by
#: its tree digest instead (RELEASES, `download_tag`).
CHECKSUMS = {
    "slurm-25.11.7.tar.xz": "f71f1e5f33a72e7864104a6857e86862eac3c4e5e348c92dd0c10dbe03a82dec",
    "slurm-26.05.3.tar.xz": "b7c7c7c8d78f7fde485ac7fc811034c5dd1a067d0167dba1a044e731c0374b13",
}

#: Debian packages of a source-built root: Slurm's build dependencies, munge, and what the lab needs there.
BUILD_DEPS = ["build-essential", "pkg-config", "libmunge-dev", "libmariadb-dev", "libmariadb-dev-compat",
              "libjson-c-dev", "libhttp-parser-dev", "libyaml-dev", "libjwt-dev", "liblua5.1-0-dev",
              "libpam0g-dev", "libreadline-dev", "munge", "python3", "python3-venv", "python3-dev",
              "ca-certificates", "procps", "libfaketime", "util-linux", "xz-utils", "bzip2", "passwd"]
#: Debian's own Slurm, removed from a root copied from a Debian-Slurm root.
DEBIAN_SLURM = ["slurmctld", "slurmd", "slurm-client", "slurmdbd", "slurm-wlm-basic-plugins", "libslurm*",
                "slurm-wlm-*"]
STAMP = ".slurmtools-build"
#: Plugins the lab's slurm.conf needs: a build without them is a failed build (configure silently skips
#: what it does not find).
NEEDED = ("accounting_storage_mysql.so", "job_submit_lua.so", "cli_filter_lua.so", "auth_munge.so")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: What tree_digest reads of a downloaded tarball at most (Slurm 25.11.7: 2,338 members, 39 MiB).
TREE_MAX_MEMBERS = 50_000
TREE_MAX_BYTES = 1 << 30


def tree_digest(path: Path) -> str:
    """sha256 of a source tarball's contents: each member's path below its top folder, its type, for a file whether
    it is executable and its sha256, for a link its target, in path order. The same for any compression, any top
    folder's name and any owners, times or umask: two `git archive`s of one tag (the vendored .tar.xz, GitHub's
    .tar.gz) give the same digest. The archive is only read (nothing extracted), within TREE_MAX_MEMBERS and
    TREE_MAX_BYTES; a member that is neither file, folder nor link (a device, a FIFO) is refused."""
    import tarfile

    rows: list[str] = []
    size = 0
    try:
        with tarfile.open(path, "r:*") as tar:
            for m in tar:
                size += max(m.size, 0)
                if len(rows) >= TREE_MAX_MEMBERS or size > TREE_MAX_BYTES:
                    raise LabError(f"{path}: over {TREE_MAX_MEMBERS:,} members or {TREE_MAX_BYTES >> 20:,} MiB: "
                                   "not a Slurm source tarball")
                parts = m.name.strip("/").split("/", 1)
                if len(parts) < 2 or parts[1] in ("", "."):
                    continue            # the top folder itself
                name = parts[1]
                if m.isdir():
                    rows.append(f"d {name}")
                elif m.issym() or m.islnk():
                    rows.append(f"l {name} {m.linkname.split('/', 1)[-1] if m.islnk() else m.linkname}")
                elif m.isfile():
                    h = hashlib.sha256()
                    member = tar.extractfile(m)
                    while member is not None and (block := member.read(1 << 20)):
                        h.update(block)
                    rows.append(f"f {name} {'x' if m.mode & 0o100 else '-'} {h.hexdigest()}")
                else:
                    raise LabError(f"{path}: {m.name!r} is neither a file, a folder nor a link: not a source tarball")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise LabError(f"{path}: not a readable tarball ({exc})") from None
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def prefix(version: str) -> str:
    """Where VERSION is installed inside its root."""
    return f"/opt/slurm/{version}"


#: configure's options (a change rebuilds: they are part of the cache key). Several slurmd on one host need
#: --enable-multiple-slurmd (without it, 25.11's slurmctld finds no address for n2..n4: `_fwd_tree_get_addr: can't
#: find address for host n3`), as Debian's packages are built.
CONFIGURE = ("--sysconfdir=/etc/slurm", "--disable-dependency-tracking", "--without-rpath", "--with-munge",
             "--enable-pam", "--enable-multiple-slurmd")


def build_key(version: str, digest: str, options: tuple[str, ...] = CONFIGURE) -> str:
    """The cache key of a build: the release, the tarball it came from, and configure's options."""
    return f"{version} {digest} {hashlib.sha256(' '.join(options).encode()).hexdigest()[:12]}"


def cached(root: Path, version: str, digest: str) -> bool:
    """VERSION built from the tarball with sha256 DIGEST is installed in ROOT."""
    stamp = root / prefix(version).lstrip("/") / STAMP
    try:
        return stamp.read_text().strip() == build_key(version, digest)
    except OSError:
        return False


def vendored_dirs() -> list[Path]:
    here = Path(__file__).resolve().parents[2]
    return [here.parent / "shared" / "vendor", here.parent.parent / "shared" / "vendor", Path("/work/shared/vendor")]


def find_tarball(release: str, given: str | None = None) -> Path | None:
    """The local tarball for RELEASE: GIVEN, $SLURMTOOLS_SLURM_SOURCE, or a vendored one (None: download)."""
    explicit = given or os.environ.get("SLURMTOOLS_SLURM_SOURCE")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise LabError(f"--slurm-source {path}: no such file")
        return path
    for folder in vendored_dirs():
        for name in RELEASES[release].files:
            if (folder / name).is_file():
                return folder / name
    return None


def check(path: Path, name: str | None = None) -> str:
    """PATH's sha256, checked against CHECKSUMS where the project keeps one for its name."""
    digest = sha256(path)
    want = CHECKSUMS.get(name or path.name)
    if want is not None and want != digest:
        raise LabError(f"{path}: sha256 {digest} is not the {want} this project keeps for {name or path.name}")
    return digest


def download_tag(release: str, dest: Path, url: str | None = None) -> Path:
    """RELEASE's tag from GitHub (or URL) into DEST, kept only when its tree_digest is the one kept in RELEASES."""
    rel = RELEASES[release]
    name = f"{rel.tag}.tar.gz"
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    if target.is_file() and tree_digest(target) == rel.tree:
        return target
    part = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(url or GITHUB.format(tag=rel.tag), timeout=60) as resp, open(part, "wb") as fh:
            shutil.copyfileobj(resp, fh)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise LabError(f"cannot download {name}: {exc}; pass a local tarball with --slurm-source PATH") from None
    try:
        got = tree_digest(part)
    except LabError:
        part.unlink(missing_ok=True)
        raise
    if got != rel.tree:
        part.unlink(missing_ok=True)
        raise LabError(f"downloaded {name} holds other files than SchedMD's tag {rel.tag} (tree digest {got}, "
                       f"not the {rel.tree} this project keeps): not used")
    part.replace(target)
    return target


def tarball(release: str, base: Path, given: str | None = None) -> Path:
    found = find_tarball(release, given)
    if found is not None:
        return found
    return download_tag(release, base / "downloads")


def _run(argv: list[str], log: Path | None = None, timeout: float = 3600) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}
    if log is None:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env=env)
        if proc.returncode != 0:
            raise LabError(f"{' '.join(argv[:6])}... failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
        return
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n")
        fh.flush()
        rc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout,
                            stdin=subprocess.DEVNULL, env=env).returncode
    if rc != 0:
        raise subprocess.CalledProcessError(rc, argv)


def _mounted_under(root: Path) -> list[str]:
    text = Path("/proc/self/mountinfo").read_text()
    return [line.split()[4] for line in text.splitlines() if line.split()[4].startswith(str(root) + "/")]


def make_root(root: Path, release: str, roots: Path, say: Callable[[str], None] = print) -> None:
    """The Debian root that builds and runs RELEASE (once): a copy of an existing root of the same suite (without
    its Debian Slurm), else debootstrap; then the build dependencies."""
    mark = root / chroot.MARK
    if mark.exists():
        return
    suite = RELEASES[release].suite
    donor = next((roots / r for r, s in chroot.RELEASES.items() if s == suite and (roots / r / chroot.MARK).exists()),
                 None)
    if not (root / "usr" / "bin" / "apt-get").exists():
        if donor is not None and not _mounted_under(donor):
            say(f"making a Debian {suite} root for Slurm {release} in {root} (a copy of {donor}, once)")
            tmp = root.with_name(root.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            _run(["cp", "-a", "--one-file-system", str(donor), str(tmp)])
            (tmp / chroot.MARK).unlink(missing_ok=True)
            if root.exists():
                shutil.rmtree(root)    # a half-made root (no apt-get in it)
            tmp.replace(root)
        else:
            if shutil.which("debootstrap") is None:
                raise LabError("debootstrap is missing: apt-get install debootstrap")
            say(f"making a Debian {suite} root for Slurm {release} in {root} (debootstrap, once)")
            root.mkdir(parents=True, exist_ok=True)
            _run(["debootstrap", "--variant=minbase", suite, str(root), chroot.MIRROR], timeout=1800)
    shutil.copyfile("/etc/resolv.conf", root / "etc" / "resolv.conf")
    (root / "usr" / "sbin" / "policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
    (root / "usr" / "sbin" / "policy-rc.d").chmod(0o755)
    say(f"installing Slurm's build dependencies in {root} (apt-get, once)")
    if (root / "usr" / "bin" / "slurmctld").exists() or (root / "usr" / "sbin" / "slurmctld").exists():
        _run(["chroot", str(root), "sh", "-c", "apt-get purge -y -q " + " ".join(f"'{p}'" for p in DEBIAN_SLURM)
              + " 2>/dev/null || apt-get purge -y -q slurmctld slurmd slurm-client slurmdbd"])
    _run(["chroot", str(root), "apt-get", "update", "-q"], timeout=900)
    _run(["chroot", str(root), "apt-get", "install", "-y", "-q", "--no-install-recommends", *BUILD_DEPS],
         timeout=1800)
    if "\nslurm:" not in "\n" + (root / "etc" / "passwd").read_text():
        _run(["chroot", str(root), "useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
              "slurm"])
    (root / chroot.INSIDE.lstrip("/")).write_text(f"Slurm {release} (source build): a slurmtools lab root\n")
    mark.write_text(f"{release} (source)\n")


def build(root: Path, release: str, source: Path, logs: Path, say: Callable[[str], None] = print) -> str:
    """RELEASE built from SOURCE inside ROOT under prefix(version), unless that build is cached. Returns the
    installed version. A failed step raises one line: the step and its log."""
    version = RELEASES[release].version
    digest = check(source)
    if cached(root, version, digest):
        return version
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"slurm-{version}-{digest[:12]}.log"
    log.write_text(f"building Slurm {version} from {source} (sha256 {digest})\n")
    src = root / "usr" / "src"
    work = src / f"slurm-{version}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    pre = prefix(version)
    shutil.rmtree(root / pre.lstrip("/"), ignore_errors=True)
    jobs = str(max(1, len(os.sched_getaffinity(0))))
    inside = f"/usr/src/slurm-{version}"
    steps = [
        # into slurm-<version> whatever the tarball's top folder (GitHub's is slurm-<tag>)
        ("unpack", ["tar", "-xf", str(source), "-C", str(work), "--strip-components=1"]),
        ("configure", ["chroot", str(root), "sh", "-c",
                       f"cd {inside} && ./configure --prefix={pre} {' '.join(CONFIGURE)}"]),
        ("make", ["chroot", str(root), "sh", "-c", f"cd {inside} && make -j{jobs}"]),
        ("install", ["chroot", str(root), "sh", "-c", f"cd {inside} && make install"]),
    ]
    t0 = time.monotonic()
    say(f"building Slurm {version} in {root} (configure, make -j{jobs}, install; log {log})")
    for step, argv in steps:
        say(f"  {step} ({time.monotonic() - t0:.0f}s)")
        try:
            _run(argv, log)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise LabError(f"building Slurm {version} failed at {step} ({exc.__class__.__name__}): see {log}") \
                from None
    plugins = root / pre.lstrip("/") / "lib" / "slurm"
    missing = [p for p in NEEDED if not (plugins / p).exists()]
    if missing:
        raise LabError(f"building Slurm {version} failed at configure (no {', '.join(missing)}: a build "
                       f"dependency was not found): see {log}")
    for sub in ("bin", "sbin"):
        dest = root / "usr" / "local" / sub
        dest.mkdir(parents=True, exist_ok=True)
        for tool in (root / pre.lstrip("/") / sub).iterdir():
            link = dest / tool.name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(f"{pre}/{sub}/{tool.name}")
    _run(["chroot", str(root), "ldconfig"])
    shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - t0
    with open(log, "a") as fh:
        fh.write(f"\nbuilt in {took:.0f}s with make -j{jobs}\n")
    (root / pre.lstrip("/") / STAMP).write_text(build_key(version, digest) + "\n")
    say(f"built Slurm {version} in {took:.0f}s (make -j{jobs})")
    return version


def make(root: Path, release: str, source: str | None, say: Callable[[str], None] = print) -> str:
    """RELEASE's root (ROOT, under <base>/roots) made and its Slurm built: the installed version."""
    make_root(root, release, root.parent, say)
    tar = tarball(release, root.parent.parent, source)
    return build(root, release, tar, root.parent.parent / "builds", say)


def install_pyslurm(root: Path, release: str, wheel: str, say: Callable[[str], None] = print) -> str:
    """`pip install '<slurmtools wheel>[pyslurm]'` in the root's slurmtools venv (chroot.VENV, the hooks' one),
    pyslurm built against the release's headers and libslurmfull (SLURM_INCLUDE_DIR, SLURM_LIB_DIR), once per
    Slurm build. Returns pyslurm's version."""
    version = RELEASES[release].version
    pre = prefix(version)
    built = (root / pre.lstrip("/") / STAMP).read_text().strip()
    stamp = root / chroot.VENV.lstrip("/") / ".slurmtools-pyslurm"
    python = f"{chroot.VENV}/bin/python"
    if stamp.exists() and stamp.read_text().splitlines()[0] == built:
        return stamp.read_text().splitlines()[1]
    say(f"building pyslurm against Slurm {version} in {root}{chroot.VENV} (pip, once per Slurm build)")
    t0 = time.monotonic()
    env = {"SLURM_INCLUDE_DIR": f"{pre}/include", "SLURM_LIB_DIR": f"{pre}/lib"}
    _run(["env", *(f"{k}={v}" for k, v in env.items()), *chroot.inside(root, [
        f"{chroot.VENV}/bin/pip", "install", "-q", "--disable-pip-version-check", "--no-binary", "pyslurm",
        f"/{wheel.lstrip('/')}[pyslurm]"])], timeout=1800)
    got = subprocess.run(chroot.inside(root, [python, "-c", "import importlib.metadata as m; "
                                              "print(m.version('pyslurm'))"]),
                         capture_output=True, text=True, timeout=60)
    if got.returncode != 0 or not got.stdout.strip():
        raise LabError(f"pyslurm did not install in {root}{chroot.VENV}: {got.stderr.strip()[-300:]}")
    stamp.write_text(f"{built}\n{got.stdout.strip()}\n")
    say(f"built pyslurm {got.stdout.strip()} in {time.monotonic() - t0:.0f}s")
    return got.stdout.strip()
