from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def slurm_data() -> Path:
    return DATA / "slurm"


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Unit tests never read the machine's /etc/slurmtools or a lab's environment."""
    from slurmtools import config

    for var in ["SLURMTOOLS_CONFIG", "SLURMTOOLS_LEDGER_URL", "SLURMTOOLS_SPOOL_DIR",
                "SLURMTOOLS_SLURM_BACKEND", "SLURMTOOLS_SLURM_BIN_DIR"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(config, "DEFAULT_PATH", str(tmp_path / "absent.toml"))
    config.reset()
