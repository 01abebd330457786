"""Recordings from a real NVIDIA H200 (tests/data/h200/, origin in its README) replayed: the checks over the
recorded NVML answers give what the live run gave, and the probe's real figures against the packaged ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from slurmtools import config
from slurmtools.checks import perf, runner
from slurmtools.checks import system as sysmod

H200 = Path(__file__).parent / "data" / "h200"
MODEL = "NVIDIA H200"


def load(name: str) -> dict[str, Any]:
    return json.loads((H200 / name).read_text())  # type: ignore[no-any-return]


def cfg_for(tmp_path: Path, hardware: str = "") -> config.Config:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "{hardware}"\n'
                    '[hardware.sxm]\nnvlinks_per_gpu = 18\ngpus = 1\n'
                    '[checks]\nperf_baseline_file = ""\nperf_stress_seconds = 0\n')
    return config.load(path, env={})


def replay(tmp_path: Path, profile: str, hardware: str = "", snap: dict[str, Any] | None = None) -> runner.Report:
    snap = snap or load("snapshot.json")
    return runner.run(cfg_for(tmp_path, hardware), profile, node="h200",
                      system=sysmod.System.from_snapshot(snap, "h200"), persist=False)


def probe_runs() -> list[dict[str, Any]]:
    """The probe's runs on the GPU, three machines: the 10 of the landed probe, the 10 of the second machine, and the
    first machine's (before the FP32 warm-up) but its first run after idle, which measured FP32 10 % low (51.7
    TFLOPS) and made the warm-up (README.md)."""
    return [run["gpus"]["0"] for name in ("gpu_probe.json", "gpu_probe-second-machine.json")
            for run in load(name)["probe"]["runs"]] + \
        [run["gpus"]["0"] for run in load("gpu_probe-first-machine.json")["probe"]["runs"][1:]]


def test_the_recorded_idle_h200_passes_the_prolog(tmp_path: Path) -> None:
    report = replay(tmp_path, "prolog")
    got = [(r.check, r.status) for r in report.results if r.check in ("gpu", "nvlink", "pcie")]
    assert got == [("gpu", "ok"), ("nvlink", "ok"), ("pcie", "ok")], report.to_dict()
    assert load("gpu_probe.json")["prolog"]["verdict"] == "ok"      # the live prolog said the same


def test_with_nvlinks_expected_the_replay_says_what_the_live_run_said(tmp_path: Path) -> None:
    """A profile expecting 18 NVLinks on a GPU whose NVML knows none: the live run's reason, word for word."""
    live = load("gpu_probe.json")["nvlink_expected"]["nvlink"]
    report = replay(tmp_path, "health", hardware="sxm")
    nvlink = [r for r in report.results if r.check == "nvlink"]
    assert [(r.status, r.reason) for r in nvlink] == [(x["status"], x["reason"]) for x in live]
    assert nvlink[0].reason == "GPU 0: no NVLink visible to NVML on this GPU (expected 18)"


@pytest.mark.parametrize("run", range(29))
def test_each_real_run_of_the_probe_is_within_the_margins_of_the_packaged_h200(run: int) -> None:
    """No false alarm on the real GPU: each of the 29 runs against the packaged figures (data/gpu_perf.toml)."""
    figures = probe_runs()[run]
    reference = perf.packaged_defaults()[MODEL]
    margins = perf.margins(config.load(None, env={}).checks)
    assert perf.shortfalls(figures, reference, margins) == []


def test_the_real_figures_slowed_past_the_margins_are_found() -> None:
    """The same run with HBM 12 % slower and compute 9 % slower: both shortfalls, nothing else."""
    figures = dict(probe_runs()[0])
    figures["d2d_gbps"] *= 0.88
    figures["fp32_tflops"] *= 0.91
    short = perf.shortfalls(figures, perf.packaged_defaults()[MODEL], perf.margins(config.load(None, env={}).checks))
    assert [s["metric"] for s in short] == ["d2d_gbps", "fp32_tflops"]


def test_the_probe_replayed_at_the_real_figures_is_judged_against_the_h200_defaults(tmp_path: Path) -> None:
    """The recorded snapshot with a CUDA section at the measured medians (SimulatedDriver): the deep profile's
    probe finds the model by NVML's name and judges against the packaged H200 figures, ok."""
    snap = load("snapshot.json")
    medians = {k: v["median"] for k, v in load("gpu_probe.json")["probe"]["summary"]["0"].items()
               if isinstance(v, dict) and k in perf.METRICS}
    snap["cuda"] = {"devices": [{"pci_bus_id": "0000:00:06.0", "sms": 132, **medians}]}
    report = replay(tmp_path, "deep", snap=snap)
    (result,) = [r for r in report.results if r.check == "perf"]
    assert result.status == "ok" and result.evidence["basis"] == "default", result.to_dict()
    assert result.evidence["reference"] == perf.packaged_defaults()[MODEL]
