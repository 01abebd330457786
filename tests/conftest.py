from __future__ import annotations

from pathlib import Path
from typing import Any

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


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A configuration (SQLite ledger, spool, controller queue; no drain settle) and an in-memory Slurm."""
    from slurmtools import config

    from .fakes import FakeSlurm

    cfg_file = tmp_path / "slurmtools.toml"
    cfg_file.write_text(f"""
[general]
cluster = "t"
[ledger]
url = "sqlite:///{tmp_path}/ledger.db"
spool_dir = "{tmp_path}/spool"
[safety]
settle = 0.0
[exclusions]
data_file = "{tmp_path}/exclusions.json"
plugin_file = "{tmp_path}/exclusions.txt"
[controller]
queue_dir = "{tmp_path}/queue"
submit_dir = "{tmp_path}/submissions"
evidence_wait = 30.0
recovery_interval = 0.0
""")
    from slurmtools.ledger import api

    cfg = config.load(cfg_file, env={})
    api.flush(cfg)   # creates the ledger's schema
    return {"cfg": cfg, "slurm": FakeSlurm(), "path": cfg_file, "tmp": tmp_path}
