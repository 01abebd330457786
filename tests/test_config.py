from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools import config
from slurmtools.cli import main


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "slurmtools.toml"
    path.write_text(text)
    return path


def test_defaults_load_without_operator_file() -> None:
    cfg = config.load(env={})
    assert cfg.get("ledger.url").startswith("sqlite:///")
    assert cfg.get("slurm.backend") == "auto"
    assert cfg.sources == ["(packaged defaults)"]


def test_operator_file_overrides_and_node_tables(tmp_path: Path) -> None:
    path = write(tmp_path, '[slurm]\ntimeout = 3\n[nodes.n2]\nkernel_log = "file:/x/n2.log"\n')
    cfg = config.load(path, env={})
    assert cfg.get("slurm.timeout") == 3.0 and isinstance(cfg.get("slurm.timeout"), float)
    assert cfg.node("n2")["kernel_log"] == "file:/x/n2.log"
    assert cfg.node("n1")["kernel_log"] == "kmsg"
    assert cfg.sources[-1] == str(path)


def test_env_overrides_win(tmp_path: Path) -> None:
    path = write(tmp_path, '[ledger]\nurl = "sqlite:////a.db"\n')
    cfg = config.load(path, env={"SLURMTOOLS_LEDGER_URL": "sqlite:////b.db", "SLURMTOOLS_SPOOL_DIR": "/s"})
    assert cfg.get("ledger.url") == "sqlite:////b.db"
    assert cfg.get("ledger.spool_dir") == "/s"


@pytest.mark.parametrize("text, needle", [
    ("[ledger]\nulr = 'x'\n", "unknown key 'ledger.ulr'"),
    ("[nope]\nx = 1\n", "unknown key 'nope'"),
    ("[slurm]\ntimeout = 'fast'\n", "slurm.timeout must be a number"),
    ("[general]\nobserve = 1\n", "general.observe must be a boolean"),
    ("[slurm]\nbackend = 'rest'\n", "slurm.backend must be one of auto, cli, pyslurm"),
    ("[nodes.n1]\nkernel = 'kmsg'\n", "unknown key 'nodes.n1.kernel'"),
    ("[ledger\n", "not valid TOML"),
])
def test_errors_name_key_and_file(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(config.ConfigError) as err:
        config.load(path, env={})
    assert needle in str(err.value)
    assert str(path) in str(err.value)


def test_bad_env_value_is_named() -> None:
    with pytest.raises(config.ConfigError, match=r"\$SLURMTOOLS_SLURM_BACKEND: slurm.backend must be one of"):
        config.load(env={"SLURMTOOLS_SLURM_BACKEND": "magic"})


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load(tmp_path / "nope.toml", env={})


def test_cli_config_check_and_show(tmp_path: Path) -> None:
    good = write(tmp_path, "[general]\nobserve = true\n")
    runner = CliRunner()
    result = runner.invoke(main, ["config", "check", str(good)])
    assert result.exit_code == 0, result.output
    bad = tmp_path / "bad.toml"
    bad.write_text("[general]\nobserve = 'yes'\n")
    result = runner.invoke(main, ["config", "check", str(bad)])
    assert result.exit_code == 1
    assert "general.observe must be a boolean" in result.output and "Traceback" not in result.output
    result = runner.invoke(main, ["config", "show", "--json"], env={"SLURMTOOLS_CONFIG": str(good)})
    assert result.exit_code == 0
    import json

    shown = json.loads(result.stdout)
    assert shown["config"]["general"]["observe"] is True


def test_cli_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    bad = write(tmp_path, "[slurm]\ntimeout = -\n")
    result = CliRunner().invoke(main, ["nodes"], env={"SLURMTOOLS_CONFIG": str(bad)})
    assert result.exit_code == 2
    assert "not valid TOML" in result.output and "Traceback" not in result.output


def test_xid_overrides_validated(tmp_path: Path) -> None:
    good = write(tmp_path, '[xid.94]\naction = "reset_gpu"\n')
    assert config.load(good, env={}).get("xid")["94"] == {"action": "reset_gpu"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[xid.94]\naction = "explode"\n')
    with pytest.raises(config.ConfigError, match=r"xid.94.action must be one of none, restart_app"):
        config.load(bad, env={})
