from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"


#: Set by the integration suite's `lab` fixture (the lab's release, Slurm's version, where the lab keeps results):
#: with it, each test's outcome goes to <base>/compat/<release>.json for bench/compat_doc.py.
RUN: dict[str, Any] = {}
_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":      # a failed setup or teardown counts too
        if _OUTCOMES.get(report.nodeid) != "failed":
            _OUTCOMES[report.nodeid] = report.outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not RUN or not _OUTCOMES:
        return
    import json
    import time

    out = Path(RUN["base"]) / "compat" / f"{RUN['release']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = {"release": RUN["release"], "version": RUN["version"], "run": now, "outcomes": dict(_OUTCOMES),
              "reruns": []}
    try:
        last = json.loads(out.read_text())
    except (OSError, ValueError):
        last = None
    if isinstance(last, dict) and last.get("version") == RUN["version"] and \
            len(_OUTCOMES) < len(last.get("outcomes") or {}):
        # a rerun of some tests (the failures of the last full run, once fixed): the full run stays the record, the
        # rerun's outcomes replace those tests' and the rerun is named (docs/compatibility.md says so)
        record = {**last, "outcomes": {**last["outcomes"], **_OUTCOMES},
                  "reruns": [*last.get("reruns", []), {"run": now, "tests": len(_OUTCOMES),
                                                       "passed": sum(v == "passed" for v in _OUTCOMES.values())}]}
    out.write_text(json.dumps(record, indent=1))


def _real_gpu() -> str:
    """Why there is no usable NVIDIA GPU here ("" when there is one): /dev/nvidia0 and NVML must both answer."""
    import os

    if not os.path.exists("/dev/nvidia0"):
        return "no /dev/nvidia0"
    try:
        from slurmtools.checks.system import import_pynvml

        nvml = import_pynvml()
        nvml.nvmlInit()
        try:
            count = int(nvml.nvmlDeviceGetCount())
        finally:
            nvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - any failure means: no GPU to test on
        return f"NVML does not answer ({type(exc).__name__})"
    return "" if count > 0 else "NVML sees no GPU"


_GPU_SKIPPED: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` need a real NVIDIA GPU: where there is none they are skipped, with the reason."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    why = _real_gpu()
    if why:
        mark = pytest.mark.skip(reason=f"needs a real NVIDIA GPU: {why} on this machine (not run, not passed)")
        for item in gpu_items:
            item.add_marker(mark)
            _GPU_SKIPPED.append(item.nodeid)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _GPU_SKIPPED:
        terminalreporter.write_line(f"real-GPU tests (marker `gpu`): {len(_GPU_SKIPPED)} SKIPPED, none run here: "
                                    f"no NVIDIA GPU ({_real_gpu()})", yellow=True, bold=True)


#: The Slurm releases with recorded outputs (tests/data/slurm/<release>/).
SLURM_RELEASES = sorted(p.parent.name for p in (DATA / "slurm").glob("*/sinfo.json"))


@pytest.fixture(params=SLURM_RELEASES)
def slurm_data(request: pytest.FixtureRequest) -> Path:
    """One Slurm release's recorded outputs (tests/data/slurm/<release>/, record.sh): each test runs on each."""
    return DATA / "slurm" / str(request.param)


@pytest.fixture(autouse=True, scope="session")
def _prefilter_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Compiled Hyperscan databases go to one directory of this session (reused across its tests, never the user's
    ~/.cache)."""
    from slurmtools.diagnosis import prefilter

    before = os.environ.get(prefilter.CACHE_ENV)
    os.environ[prefilter.CACHE_ENV] = str(tmp_path_factory.mktemp("prefilter-cache"))
    yield
    if before is None:
        os.environ.pop(prefilter.CACHE_ENV, None)
    else:
        os.environ[prefilter.CACHE_ENV] = before


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
