"""The pyslurm backend never imports pyslurm where libslurm could end the process (slurmtools/slurm/
pyslurm_backend.py). The stand-in `pyslurm` here does what libslurm's init does without a configuration: it
prints libslurm's fatal line and exits the process."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmtools.slurm import pyslurm_backend as pb

FATAL = ("import sys\nsys.stderr.write('slurm_init: fatal: Could not establish a configuration source\\n')\n"
         "import os\nos._exit(1)\n")


@pytest.fixture
def fake_pyslurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pkg = tmp_path / "site" / "pyslurm"
    pkg.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "pyslurm", raising=False)
    yield pkg
    sys.modules.pop("pyslurm", None)     # the stand-in never outlives its test


def test_no_readable_conf_means_no_import(tmp_path: Path) -> None:
    why = pb.conf_reason({"SLURM_CONF": str(tmp_path / "absent.conf")})
    assert why is not None and "absent.conf" in why and "fatal" in why and "\n" not in why
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    assert pb.conf_reason({"SLURM_CONF": str(conf)}) is None


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pyslurm", raising=False)
    monkeypatch.setattr(pb.importlib.util, "find_spec", lambda name: None)
    assert "not installed" in (pb.import_reason() or "")


def test_fatal_library_is_met_in_a_child_not_here(fake_pyslurm: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_pyslurm / "__init__.py").write_text(FATAL)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    why = pb.unusable_reason(lambda: "25.11.7")
    assert why is not None and "child" in why and "Could not establish a configuration source" in why
    assert "pyslurm" not in sys.modules          # this process is alive and never imported it


def test_fatal_library_without_conf_is_not_even_tried(fake_pyslurm: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_pyslurm / "__init__.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w')\n" + FATAL)
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "absent.conf"))
    why = pb.unusable_reason(lambda: "25.11.7")
    assert why is not None and "no readable slurm.conf" in why
    assert not (tmp_path / "imported").exists()   # not imported here, nor in a child


def test_version_mismatch_is_refused(fake_pyslurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_pyslurm / "__init__.py").write_text("__version__ = '25.11.2'\n")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    assert pb.unusable_reason(lambda: "25.11.7") is None
    assert "does not match Slurm 24.11.5" in (pb.unusable_reason(lambda: "24.11.5") or "")


def test_signal_names() -> None:
    assert pb.parse_signal("TERM") == 15 and pb.parse_signal("SIGUSR1") == 10
    assert pb.parse_signal("NOPE") is None and pb.parse_signal("KILL; rm") is None


def test_pyslurm_fallbacks_are_the_documented_ones() -> None:
    """Every Slurm method the pyslurm backend does not implement itself is a documented CLI fallback (no call
    silently inherits the CLI's behaviour)."""
    from slurmtools.slurm import base

    methods = {m for m in vars(base.Slurm) if not m.startswith("_") and callable(getattr(base.Slurm, m))}
    own = {m for m in vars(pb.PyslurmSlurm) if m in methods}
    assert methods - own == set(pb.CLI_FALLBACKS)


def test_times_are_utc_as_the_cli_gives_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host whose clock is not UTC: pyslurm's epoch seconds and naive local datetimes come out in UTC, equal to
    and printed like parse.epoch's (the CLI backend's) for the same instant."""
    import time
    from datetime import UTC, datetime

    from slurmtools.slurm import parse

    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        got = pb._time(1764115200)
        assert got == parse.epoch(1764115200) and got is not None
        assert got.isoformat() == "2025-11-26T00:00:00+00:00"
        naive_local = datetime.fromtimestamp(1764115200)          # 2025-11-25 16:00 in Los Angeles
        assert pb._time(naive_local) == got and pb._time(naive_local).tzinfo == UTC  # type: ignore[union-attr]
        assert pb._time(0) is None and pb._time("garbage") is None and pb._time(10**30) is None
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
