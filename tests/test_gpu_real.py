"""On a real NVIDIA GPU (marker `gpu`; skipped, with the reason, on a machine without one: tests/conftest.py).

Each test reads the real machine through the landed code (NVML, sysfs, /dev/kmsg) and starts its own user
programs through the CUDA driver API (tests/gpu_child.py; no torch). Nothing here changes a GPU setting or resets
a GPU; each child process is ended by its own pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurmtools import config
from slurmtools.checks import runner, snapshot
from slurmtools.checks import system as sysmod
from slurmtools.diagnosis import diagnose, policy, sources
from slurmtools.diagnosis.faults import is_node_fault

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parents[1]


def cfg_for(tmp_path: Path, extra: str = "") -> config.Config:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\n[checks]\nrequire_persistence_mode = false\n'
                    f'perf_baseline_file = ""\n{extra}')
    return config.load(path, env={})


def gpu_results(report: runner.Report) -> list[tuple[str, str, str]]:
    return [(r.check, r.status, r.reason) for r in report.results if r.check in ("gpu", "nvlink")]


def child(*args: str) -> subprocess.Popen[str]:
    pytest.importorskip("cuda.bindings", reason="cuda-bindings not installed (pip install 'slurmtools[gpu]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.Popen([sys.executable, "-m", "tests.gpu_child", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_prolog_and_health_pass_on_a_healthy_gpu(tmp_path: Path) -> None:
    cfg = cfg_for(tmp_path)
    for profile in ("prolog", "health"):
        report = runner.run(cfg, profile, node="gpu", system=sysmod.System.real())
        assert [s for _, s, _ in gpu_results(report)] == ["ok", "ok"], report.to_dict()
        assert report.duration_ms < 3000


def test_a_stray_process_holding_gpu_memory_fails_the_prolog(tmp_path: Path) -> None:
    proc = child("hold", "2048")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        cfg = cfg_for(tmp_path)
        report = runner.run(cfg, "prolog", node="gpu", system=sysmod.System.real())
        bad = [r for r in report.results if r.status == "fail"]
        assert bad and bad[0].check == "gpu" and "leftover processes hold" in bad[0].reason, report.to_dict()
        assert bad[0].evidence["used_mib"] >= 2000 and proc.pid in bad[0].evidence["pids"]
        health = runner.run(cfg, "health", node="gpu", system=sysmod.System.real())
        assert not [r for r in health.results if r.check == "gpu" and r.status != "ok"]
    finally:
        proc.kill()
        proc.wait(10)


def test_a_user_illegal_address_is_the_applications_and_the_gpu_stays_healthy(tmp_path: Path) -> None:
    if not os.access("/dev/kmsg", os.R_OK):
        pytest.skip("the kernel log (/dev/kmsg) is not readable here: run as root")
    marker = sources.mark("kmsg")
    proc = child("fault")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    time.sleep(1.0)                                     # the driver's Xid line reaches the ring buffer
    data, _how = sources.read_window("kmsg", marker)
    found = diagnose(data, exit_code=proc.returncode, job_lines=out.splitlines())
    xids = [f for f in found if f.kind == "xid"]
    assert 31 in {f.xid for f in xids}, data[-2000:]
    assert all(f.category == "application" and not is_node_fault(f, None) for f in xids)
    assert any(f.kind == "cuda" and f.trust == "job" for f in found)
    assert policy.summary(found) is None                # the epilog's drain decision: nothing to drain
    report = runner.run(cfg_for(tmp_path), "health", node="gpu", system=sysmod.System.real())
    assert [s for _, s, _ in gpu_results(report)] == ["ok", "ok"], report.to_dict()


def test_a_snapshot_recorded_here_replays_to_the_same_verdict(tmp_path: Path) -> None:
    cfg = cfg_for(tmp_path)
    live = runner.run(cfg, "prolog", node="gpu", system=sysmod.System.real(), persist=False)
    snap = snapshot.record(interval=0.5)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    replayed = runner.run(cfg, "prolog", node="gpu", system=sysmod.System.from_snapshot(
        sysmod.load_snapshot(str(path)), str(path)), persist=False)
    assert gpu_results(replayed) == gpu_results(live)
    assert replayed.verdict == live.verdict



def test_the_fail_slow_probe_on_a_real_gpu(tmp_path: Path) -> None:
    """The probe through cuda-bindings on this machine's GPUs: figures, time and memory bounds, repeatability."""
    pytest.importorskip("cuda.bindings", reason="cuda-bindings not installed (pip install 'slurmtools[gpu]')")
    cfg = cfg_for(tmp_path, "perf_stress_seconds = 0\n")
    runs = []
    for _ in range(10):
        report = runner.run(cfg, "deep", node="gpu", system=sysmod.System.real(), persist=False)
        perf = [r for r in report.results if r.check == "perf"]
        assert perf and all(r.status in ("ok", "warn") for r in perf), [r.to_dict() for r in perf]
        runs.append([r.evidence["probe"] for r in perf])
    for probe in runs[0]:
        assert probe["d2d_gbps"] > 100 and probe["h2d_gbps"] > 1 and probe["fp32_tflops"] > 1
        assert probe["seconds"] <= 3.0 and probe["gpu_mib"] <= 2048
    for gpu in range(len(runs[0])):
        for metric in ("d2d_gbps", "h2d_gbps", "d2h_gbps", "fp32_tflops"):
            values = [run[gpu][metric] for run in runs]
            assert (max(values) - min(values)) / max(values) < 0.05, (metric, values)


def test_the_deep_profiles_stress_on_a_real_gpu(tmp_path: Path) -> None:
    """Ten seconds of the FMA kernel on every GPU, NVML watching: a healthy GPU shows no HW slowdown."""
    pytest.importorskip("cuda.bindings", reason="cuda-bindings not installed (pip install 'slurmtools[gpu]')")
    report = runner.run(cfg_for(tmp_path, "perf_stress_seconds = 10\n"), "deep", node="gpu",
                        system=sysmod.System.real(), persist=False)
    stress = [r for r in report.results if r.check == "stress"]
    assert stress and all(r.status == "ok" for r in stress), [r.to_dict() for r in stress]
    for r in stress:
        during = r.evidence["stress"]["during"]
        assert r.evidence["stress"]["seconds"] >= 10 and during["samples"] >= 20 and during["sm_mhz_median"] > 0
