"""A wheel of the slurmtools that is running, to install elsewhere (the lab's Debian roots, docs/install.md step 1):
built from the source checkout when this is one, else made again from the installed distribution itself (a site
that installed slurmtools with `pip install` has no checkout, and pip cannot wheel an installed package)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from slurmtools.lab.procs import LabError

#: installer-written files of an installed distribution that a wheel does not carry
_INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def checkout() -> Path | None:
    """The source tree this slurmtools runs from, if it runs from one (an editable install or a clone)."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "setup.cfg").is_file() and (here / "slurmtools").is_dir() else None


def build(dest: Path) -> Path:
    """A wheel of this slurmtools in DEST (made empty first)."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    src = checkout()
    if src is not None:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(src)],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise LabError(f"pip wheel {src} failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}")
        (wheel,) = dest.glob("slurmtools-*.whl")
        return wheel
    return from_installed(dest)


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def from_installed(dest: Path, name: str = "slurmtools") -> Path:
    """The installed distribution NAME as a wheel again: its package files and metadata as they are, its scripts
    under `.data/scripts/` (shebang back to `#!python`, for the installer to set), its data files (`share/...`)
    under `.data/data/`. Console scripts are left out: the installer makes them from entry_points.txt."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise LabError(f"{name} is not installed here, and this is no source checkout of it") from None
    files = dist.files
    if not files:
        raise LabError(f"the installed {name} lists no files (no RECORD): reinstall it with pip")
    version = dist.version
    stem = f"{name}-{version}"
    console = {ep.name for ep in dist.entry_points if ep.group == "console_scripts"}
    prefix = Path(sys.prefix).resolve()
    records: list[str] = []
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        def add(arcname: str, data: bytes) -> None:
            zf.writestr(arcname, data)
            records.append(f"{arcname},{_digest(data)},{len(data)}")

        dist_info = ""
        for file in sorted(files, key=str):
            parts = file.parts
            if "__pycache__" in parts or file.suffix == ".pyc":
                continue
            path = Path(str(dist.locate_file(file))).resolve()
            if parts[0].endswith(".dist-info"):
                dist_info = parts[0]
                if file.name in _INSTALLER_FILES:
                    continue
                arcname = str(file)
            elif parts[0] == "..":
                try:
                    rel = path.relative_to(prefix)
                except ValueError:
                    continue
                if rel.parts[0] == "bin":
                    if rel.name in console:
                        continue
                    data = path.read_bytes()
                    if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
                        data = b"#!python\n" + data.split(b"\n", 1)[1]
                    add(f"{stem}.data/scripts/{rel.name}", data)
                    continue
                arcname = f"{stem}.data/data/{rel.as_posix()}"
            else:
                arcname = str(file)
            add(arcname, path.read_bytes())
        if not dist_info:
            raise LabError(f"the installed {name} has no .dist-info in its RECORD")
        record = f"{dist_info}/RECORD"
        zf.writestr(record, "\n".join([*records, f"{record},,"]) + "\n")
    return wheel
