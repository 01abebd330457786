"""What the running Slurm supports (slurm/features.py), read from it as Slurm 22.05, 24.11, 25.11 and 26.05 show it:
`scontrol show config` (through a fake scontrol, the lowest boundary) and the string table of its libslurmfull.so
(a file holding the strings the real ones hold: checked on the lab's 22.05.8, 24.11.5 and 25.11.7 libraries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools import config
from slurmtools.cli import main
from slurmtools.cli.doctor import health_check_checks
from slurmtools.slurm import features


def library(tmp_path: Path, version: str, *tokens: str) -> str:
    """A PluginDir whose libslurmfull.so holds VERSION and TOKENS as a C string table does."""
    plugin_dir = tmp_path / "lib" / "slurm"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    (plugin_dir / "libslurmfull.so").write_bytes(b"\x7fELF\0" + b"\0".join(t.encode() for t in (
        "HEALTH_CHECK_NODE_STATE", version, *tokens, "NONDRAINED_IDLE")) + b"\0")
    return str(plugin_dir)


def conf(version: str, plugin_dir: str, **extra: str) -> dict[str, str]:
    return {"SLURM_VERSION": version, "PluginDir": plugin_dir, "HealthCheckInterval": "300 sec",
            "HealthCheckNodeState": "ANY", **extra}


def test_each_release_as_it_shows_itself(tmp_path: Path) -> None:
    old = features.detect(conf("24.11.5", library(tmp_path / "a", "24.11.5", "CYCLE")))
    assert (old.health_check_timeout, old.start_only) == (False, False)
    mid = features.detect(conf("25.11.7", library(tmp_path / "b", "25.11.7", "START_ONLY")))
    assert (mid.health_check_timeout, mid.start_only) == (False, True)
    new = features.detect(conf("26.05.3", library(tmp_path / "c", "26.05.3", "START_ONLY"),
                               HealthCheckTimeout="60 sec"))
    assert (new.health_check_timeout, new.start_only, new.why) == (True, True, "")


def test_a_token_inside_a_longer_string_is_not_the_option(tmp_path: Path) -> None:
    feats = features.detect(conf("24.11.5", library(tmp_path, "24.11.5", "HEALTH_CHECK_START_ONLY_X")))
    assert feats.start_only is False


@pytest.mark.parametrize("case", ["other release", "no library", "no PluginDir", "empty file"])
def test_what_cannot_be_read_is_unknown_never_guessed(tmp_path: Path, case: str) -> None:
    plugin_dir = library(tmp_path, "24.11.5", "START_ONLY")     # the host's library, another Slurm running
    shown = conf("25.11.7", plugin_dir)
    if case == "no library":
        shown["PluginDir"] = str(tmp_path / "nowhere")
    elif case == "no PluginDir":
        del shown["PluginDir"]
    elif case == "empty file":
        (Path(plugin_dir) / "libslurmfull.so").write_bytes(b"")
    feats = features.detect(shown)
    assert feats.start_only is None and feats.why and len(feats.why) <= 300
    lines = features.slurm_conf_lines(feats, hook="/h", interval=300, budget=36)
    assert not any(line.startswith("HealthCheckNodeState") for line in lines)
    assert any("cannot tell" in line for line in lines)


def test_a_set_start_only_is_proof_enough_and_a_root_is_looked_into(tmp_path: Path) -> None:
    assert features.detect(conf("25.11.7", "/nowhere", HealthCheckNodeState="START_ONLY")).start_only is True
    library(tmp_path, "25.11.7", "START_ONLY")
    assert features.detect(conf("25.11.7", "/lib/slurm"), root=str(tmp_path)).start_only is True


def test_the_snippet_has_only_what_the_release_has(tmp_path: Path) -> None:
    old = features.slurm_conf_lines(features.detect(conf("22.05.8", library(tmp_path / "a", "22.05.8"))),
                                    hook="/h", interval=300, budget=36)
    assert old[:2] == ["HealthCheckProgram=/h", "HealthCheckInterval=300"]
    assert not any(line.startswith(("HealthCheckTimeout", "HealthCheckNodeState", "# HealthCheckNodeState"))
                   for line in old)
    new = features.slurm_conf_lines(features.detect(conf("26.05.3", library(tmp_path / "b", "26.05.3", "START_ONLY"),
                                                         HealthCheckTimeout="60 sec")),
                                    hook="/h", interval=300, budget=75)
    assert new[2].startswith("HealthCheckTimeout=75 ") and new[3].startswith("# HealthCheckNodeState=START_ONLY")


def test_doctor_warns_of_a_timeout_that_kills_the_hook_or_reaches_the_interval(tmp_path: Path) -> None:
    cfg = config.load(None, env={})
    budget = features.health_check_budget(len(cfg.checks.health), cfg.checks.timeout, cfg.slurm.timeout)
    plugin_dir = library(tmp_path, "26.05.3", "START_ONLY")
    for timeout, interval, status in ((60, 300, "ok"), (budget - 1, 300, "warn"), (60, 60, "warn")):
        checks = {c.name: c for c in health_check_checks(
            conf("26.05.3", plugin_dir, HealthCheckTimeout=f"{timeout} sec", HealthCheckInterval=f"{interval} sec"),
            cfg)}
        assert checks["slurm.conf HealthCheckTimeout"].status == status, (timeout, interval)
        assert "START_ONLY is available" in checks["slurm.conf HealthCheckNodeState"].detail
    old = {c.name: c for c in health_check_checks(conf("22.05.8", library(tmp_path / "o", "22.05.8")), cfg)}
    assert "has no HealthCheckTimeout" in old["slurm.conf HealthCheckTimeout"].detail
    assert "has no START_ONLY" in old["slurm.conf HealthCheckNodeState"].detail


def test_install_slurm_conf_prints_the_running_releases_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_dir = library(tmp_path, "25.11.7", "START_ONLY")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shown = "\n".join(f"{k:<23} = {v}" for k, v in conf("25.11.7", plugin_dir).items())
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\ncat <<'EOF'\n{shown}\nEOF\n")
    (bin_dir / "scontrol").chmod(0o755)
    site = tmp_path / "site.toml"
    site.write_text(f'[slurm]\nbackend = "cli"\nbin_dir = "{bin_dir}"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(site))
    config.reset()
    res = CliRunner().invoke(main, ["install", "slurm-conf", "--interval", "600"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "PrologFlags=Alloc" in lines and "HealthCheckInterval=600" in lines
    assert any(line.startswith("# no HealthCheckTimeout in Slurm 25.11.7") for line in lines)
    assert any(line.startswith("# HealthCheckNodeState=START_ONLY   #") for line in lines)
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_ctl_conf error: Unable to contact' >&2\nexit 1\n")
    res = CliRunner().invoke(main, ["install", "slurm-conf"])
    assert res.exit_code == 2 and "cannot read Slurm's configuration" in res.output
    assert "Traceback" not in res.output
