"""Slurm built from source for the lab (slurmtools/lab/source.py): the tarball found, checked, downloaded, and the
build cached by version and tarball hash. The build itself runs in `slurmtools lab up --slurm 25.11`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from slurmtools.lab import source
from slurmtools.lab.procs import LabError


def _tar(tmp_path: Path, name: str, data: bytes) -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_cache_key_is_version_and_tarball_hash(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert not source.cached(root, "25.11.7", "a" * 64)
    stamp = root / source.prefix("25.11.7").lstrip("/") / source.STAMP
    stamp.parent.mkdir(parents=True)
    stamp.write_text(source.build_key("25.11.7", "a" * 64) + "\n")
    assert source.cached(root, "25.11.7", "a" * 64)
    assert not source.cached(root, "25.11.7", "b" * 64)     # another tarball of the same version: rebuild
    assert not source.cached(root, "25.11.8", "a" * 64)     # another version: another prefix, rebuild
    stamp.write_text(source.build_key("25.11.7", "a" * 64, ("--prefix-only",)) + "\n")
    assert not source.cached(root, "25.11.7", "a" * 64)     # other configure options: rebuild


def test_build_is_skipped_when_cached(tmp_path: Path) -> None:
    tar, digest = _tar(tmp_path, "slurm-x.tar.xz", b"not really a tarball")
    root = tmp_path / "root"
    version = source.RELEASES["25.11"].version
    stamp = root / source.prefix(version).lstrip("/") / source.STAMP
    stamp.parent.mkdir(parents=True)
    stamp.write_text(source.build_key(version, digest))
    said: list[str] = []
    assert source.build(root, "25.11", tar, tmp_path / "logs", said.append) == version
    assert said == [] and not (tmp_path / "logs").exists()    # nothing unpacked, nothing built


def test_failed_build_names_the_step_and_log(tmp_path: Path) -> None:
    tar, _ = _tar(tmp_path, "slurm-x.tar.xz", b"not a tarball")
    with pytest.raises(LabError) as err:
        source.build(tmp_path / "root", "25.11", tar, tmp_path / "logs", lambda _m: None)
    msg = str(err.value)
    assert "failed at unpack" in msg and str(tmp_path / "logs") in msg and "\n" not in msg
    log = Path(msg.split("see ")[-1])
    assert log.is_file() and "tar -xf" in log.read_text()


def test_given_tarball_wins_and_a_missing_one_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tar, _ = _tar(tmp_path, "mine.tar.xz", b"x")
    monkeypatch.delenv("SLURMTOOLS_SLURM_SOURCE", raising=False)
    assert source.find_tarball("25.11", str(tar)) == tar
    monkeypatch.setenv("SLURMTOOLS_SLURM_SOURCE", str(tar))
    assert source.find_tarball("25.11") == tar
    with pytest.raises(LabError, match="no such file"):
        source.find_tarball("25.11", str(tmp_path / "absent.tar.xz"))


def test_vendored_tarball_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURMTOOLS_SLURM_SOURCE", raising=False)
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    monkeypatch.setattr(source, "vendored_dirs", lambda: [tmp_path / "nothing", vendor])
    assert source.find_tarball("25.11") is None
    (vendor / "slurm-25.11.7.tar.xz").write_bytes(b"x")
    assert source.find_tarball("25.11") == vendor / "slurm-25.11.7.tar.xz"


def test_kept_checksum_is_enforced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tar, digest = _tar(tmp_path, "slurm-9.9.9.tar.xz", b"the real one")
    monkeypatch.setitem(source.CHECKSUMS, "slurm-9.9.9.tar.xz", digest)
    assert source.check(tar) == digest
    tar.write_bytes(b"tampered")
    with pytest.raises(LabError, match="is not the"):
        source.check(tar)
    other, other_digest = _tar(tmp_path, "unlisted.tar.xz", b"y")   # an unlisted local file: the user's choice
    assert source.check(other) == other_digest


def test_download_checks_the_kept_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served, digest = _tar(tmp_path, "served.tar.bz2", b"release tarball")
    url = served.as_uri()
    monkeypatch.setitem(source.CHECKSUMS, "slurm-9.9.9.tar.bz2", digest)
    got = source.download("slurm-9.9.9.tar.bz2", tmp_path / "dl", url)
    assert got.read_bytes() == b"release tarball"
    monkeypatch.setitem(source.CHECKSUMS, "slurm-9.9.9.tar.bz2", "0" * 64)
    (tmp_path / "dl" / "slurm-9.9.9.tar.bz2").unlink()
    with pytest.raises(LabError, match="not the 0000"):
        source.download("slurm-9.9.9.tar.bz2", tmp_path / "dl", url)
    assert not list((tmp_path / "dl").iterdir())    # a mismatching download is not kept


def test_no_kept_checksum_no_download(tmp_path: Path) -> None:
    with pytest.raises(LabError, match=r"no sha256 kept for slurm-0\.0\.0\.tar\.bz2"):
        source.download("slurm-0.0.0.tar.bz2", tmp_path, (tmp_path / "x").as_uri())


def test_unreachable_download_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(source.CHECKSUMS, "slurm-9.9.9.tar.bz2", "0" * 64)
    with pytest.raises(LabError, match=r"cannot download slurm-9\.9\.9\.tar\.bz2.*--slurm-source"):
        source.download("slurm-9.9.9.tar.bz2", tmp_path / "dl", (tmp_path / "absent").as_uri())


def test_vendored_checksums_match_the_kept_ones() -> None:
    """The checksums kept in the code are the vendored files' SHA256SUMS (where this checkout has them)."""
    sums = next((d / "SHA256SUMS" for d in source.vendored_dirs() if (d / "SHA256SUMS").is_file()), None)
    if sums is None:
        pytest.skip("no vendored sources next to this checkout")
    listed = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
    for name, digest in listed.items():
        assert source.CHECKSUMS[name] == digest
