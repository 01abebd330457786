"""This code's fail-slow probe on a real NVIDIA H100 (tests/data/h100/probe/, origin in its README): its runs are
within the margins of the packaged H100 figures, which the issue's own probe had measured, and the recorded GPU
replays to what the live run said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from slurmtools import config
from slurmtools.checks import perf, runner
from slurmtools.checks import system as sysmod

PROBE = Path(__file__).parent / "data" / "h100" / "probe"
MODEL = "NVIDIA H100 80GB HBM3"


def load(name: str) -> dict[str, Any]:
    return json.loads((PROBE / name).read_text())  # type: ignore[no-any-return]


def replay(tmp_path: Path, profile: str, snap: dict[str, Any], hardware: str = "") -> runner.Report:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "{hardware}"\n'
                    '[hardware.sxm]\nnvlinks_per_gpu = 18\ngpus = 1\n'
                    '[checks]\nperf_baseline_file = ""\nperf_stress_seconds = 0\n')
    return runner.run(config.load(path, env={}), profile, node="h100",
                      system=sysmod.System.from_snapshot(snap, "h100"), persist=False)


def test_the_recording_is_this_codes_probe_on_an_h100() -> None:
    rec = load("gpu_probe.json")
    assert [d["name"] for d in rec["devices"]] == [MODEL]
    assert len(rec["probe"]["runs"]) == 10 and rec["prolog"]["verdict"] == "ok"


@pytest.mark.parametrize("run", range(10))
def test_each_real_run_is_within_the_margins_of_the_packaged_h100(run: int) -> None:
    """No false alarm on the real GPU: each run against the packaged figures (data/gpu_perf.toml)."""
    figures = load("gpu_probe.json")["probe"]["runs"][run]["gpus"]["0"]
    margins = perf.margins(config.load(None, env={}).checks)
    assert perf.shortfalls(figures, perf.packaged_defaults()[MODEL], margins) == []


def test_the_packaged_h100_figures_agree_with_this_codes_medians() -> None:
    """The packaged figures came from the issue's own probe; this code measured the same GPU model within 1 %."""
    summary = load("gpu_probe.json")["probe"]["summary"]["0"]
    packaged = perf.packaged_defaults()[MODEL]
    for metric in perf.METRICS:
        assert abs(summary[metric]["median"] / packaged[metric] - 1) < 0.01, (metric, summary[metric], packaged)


def test_the_recorded_idle_h100_passes_the_prolog_and_the_nvlink_reason_is_the_live_ones(tmp_path: Path) -> None:
    snap = load("snapshot.json")
    report = replay(tmp_path, "prolog", snap)
    got = [(r.check, r.status) for r in report.results if r.check in ("gpu", "nvlink", "pcie")]
    assert got == [("gpu", "ok"), ("nvlink", "ok"), ("pcie", "ok")], report.to_dict()
    live = load("gpu_probe.json")["nvlink_expected"]["nvlink"]
    nvlink = [r for r in replay(tmp_path, "health", snap, hardware="sxm").results if r.check == "nvlink"]
    assert [(r.status, r.reason) for r in nvlink] == [(x["status"], x["reason"]) for x in live]
