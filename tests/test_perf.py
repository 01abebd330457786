"""The fail-slow probe (checks/perf.py): its measurements through the CUDA driver's calls, answered by
`SimulatedDriver` (the lowest boundary: each cu* call), NVML by FakeNvml, and its relative judgement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from slurmtools import config
from slurmtools.checks import cudadrv, perf, perfprobe, runner
from slurmtools.checks import system as sysmod

SNAPS = Path(__file__).parent / "data" / "snapshots"
H100 = {"d2d_gbps": 2975.0, "h2d_gbps": 54.8, "d2h_gbps": 55.1, "fp32_tflops": 57.1}   # the real H100 (issue 33)
MODEL = "NVIDIA H100 80GB HBM3"


def node_snapshot(**per_gpu: dict[str, float]) -> dict[str, Any]:
    """The 8x H100 snapshot, busy (not idle) GPUs, with a `cuda` section: every GPU at the H100's figures, GPU
    `gN` changed by per_gpu={"g3": {"d2d_gbps": 0.85}} (factors)."""
    snap = json.loads((SNAPS / "healthy-8xh100.json").read_text())
    devices = []
    for dev in snap["nvml"]["devices"]:
        dev.update(clocks_event_reasons=0, pcie_gen=5, clock_sm_mhz=1980, power_mw=690000)
        figs = {k: v * per_gpu.get(f"g{dev['index']}", {}).get(k, 1.0) for k, v in H100.items()}
        devices.append({"pci_bus_id": dev["pci_bus_id"], "sms": 132, **figs})
    snap["cuda"] = {"devices": devices[::-1]}          # CUDA's order need not be NVML's: matched by bus id
    return snap


def cfg_for(tmp_path: Path, extra: str = "", fleet: dict[str, Any] | None = None) -> config.Config:
    tmp_path.mkdir(parents=True, exist_ok=True)
    baseline = tmp_path / "baseline.json"
    if fleet is not None:
        baseline.write_text(json.dumps({"models": fleet}))
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "x"\n[hardware.x]\ngpus = 8\n'
                    f'[checks]\nperf_baseline_file = "{baseline}"\n{extra}\n')
    return config.load(path, env={})


def probe(tmp_path: Path, snap: dict[str, Any], profile: str = "health", extra: str = "",
          fleet: dict[str, Any] | None = None) -> tuple[list[Any], sysmod.System]:
    system = sysmod.System.from_snapshot(snap, "test")
    report = runner.run(cfg_for(tmp_path, extra, fleet), profile, node="n1", system=system)
    return [r for r in report.results if r.check == "perf"], system


def test_a_healthy_node_measures_the_figures_within_the_limits(tmp_path: Path) -> None:
    results, system = probe(tmp_path, node_snapshot())
    assert [r.status for r in results] == ["ok"] * 8
    drv = system.cuda()
    for r in results:
        got = r.evidence["probe"]
        for metric, value in H100.items():
            assert got[metric] == pytest.approx(value, rel=0.01), metric
        assert r.evidence["basis"] == "default" and got["model"] == MODEL and got["sms"] == 132
        assert got["during"]["sm_mhz_min"] == 1980 and got["during"]["power_w_max"] == 690
    assert results[0].reason == ("GPU 0 (0000:18:00.0): d2d 2975 GB/s, H2D 54.8, D2H 55.1, FP32 57.1 TFLOPS "
                                 "(default)")
    assert set(drv.peak_bytes) == set(range(8)) and max(drv.peak_bytes.values()) <= 2 << 30
    assert all(v == 0 for v in drv.live_bytes.values()) and sorted(drv.released) == list(range(8))
    assert "perf" not in config.load(None, env={}).checks.prolog


def test_the_simulated_run_fits_two_seconds_per_gpu() -> None:
    drv = cudadrv.SimulatedDriver([{"pci_bus_id": "0000:18:00.0", "sms": 132, **H100}])
    limits = perf.Limits()
    figs = perf.measure(drv, 0, limits)
    drv.local.clock = 0.0
    perf.measure(drv, 0, limits)
    assert drv.local.clock <= limits.seconds, "the GPU's busy time must fit the budget"
    assert figs["gpu_mib"] <= limits.memory_mib


@pytest.mark.parametrize("factor, slow", [(0.95, False), (0.85, True), (0.80, True)])
def test_a_gpu_with_less_hbm_bandwidth_warns_past_the_margin(tmp_path: Path, factor: float, slow: bool) -> None:
    results, _ = probe(tmp_path, node_snapshot(g3={"d2d_gbps": factor}))
    assert [r.status for r in results] == ["ok"] * 3 + ["warn" if slow else "ok"] + ["ok"] * 4
    if slow:
        r = results[3]
        assert r.reason.startswith("GPU 3 (0000:5d:00.0): fail-slow: device-to-device copy ")
        assert f"{round((1 - factor) * 100)}% below the model's default 2975" in r.reason
        assert r.evidence["fail_slow"] and r.evidence["shortfalls"][0]["metric"] == "d2d_gbps"


@pytest.mark.parametrize("factor, slow", [(0.94, False), (0.90, True)])
def test_compute_has_its_own_margin(tmp_path: Path, factor: float, slow: bool) -> None:
    results, _ = probe(tmp_path, node_snapshot(g6={"fp32_tflops": factor}))
    assert results[6].status == ("warn" if slow else "ok")
    if slow:
        assert "FP32 FMA" in results[6].reason and "below the model's default 57.1" in results[6].reason


def test_the_fleet_median_is_the_reference_once_the_fleet_is_large_enough(tmp_path: Path) -> None:
    # A fleet whose H100s all run 12% slower copies (other firmware, clocks): relative to it, ours are fine...
    fleet = {MODEL: {"n": 64, **{k: v * 0.88 for k, v in H100.items()}}}
    results, _ = probe(tmp_path, node_snapshot(), fleet=fleet)
    assert {r.status for r in results} == {"ok"} and {r.evidence["basis"] for r in results} == {"fleet"}
    # ...and a GPU 15% under that fleet's median is slow.
    results, _ = probe(tmp_path / "b", node_snapshot(g1={k: 0.88 * 0.85 for k in H100}), fleet=fleet)
    assert results[1].status == "warn" and "below the fleet's median" in results[1].reason
    assert results[1].evidence["fleet_n"] == 64
    # Too small a fleet: the model's defaults.
    results, _ = probe(tmp_path / "c", node_snapshot(), fleet={MODEL: {"n": 3, "d2d_gbps": 9999.0}})
    assert {r.evidence["basis"] for r in results} == {"default"} and {r.status for r in results} == {"ok"}
    results, _ = probe(tmp_path / "d", node_snapshot(), fleet=None)
    assert results[0].evidence["reference"] == H100


def test_profile_figures_override_the_packaged_defaults(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "x"\n[hardware.x]\ngpus = 8\n'
                    'perf_d2d_gbps = 3400.0\n')
    system = sysmod.System.from_snapshot(node_snapshot(), "t")
    results = [r for r in runner.run(config.load(path, env={}), "health", node="n1", system=system).results
               if r.check == "perf"]
    assert {r.evidence["basis"] for r in results} == {"profile"} and {r.status for r in results} == {"warn"}
    assert "12% below the profile's 3400" in results[0].reason


def test_a_gpu_in_use_is_never_probed(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][5]["processes"] = [{"pid": 4242, "used_mib": 30000}]
    results, system = probe(tmp_path, snap)
    assert [(r.status, r.reason) for r in results] == [("ok", "not probed: GPUs in use: GPU 5 (1 processes)")]
    assert system.cuda_source is None            # no CUDA call at all
    results, _ = probe(tmp_path / "deep", snap, profile="deep")
    assert [r.status for r in results] == ["unknown"]


def test_the_health_profile_probes_at_most_every_perf_interval(tmp_path: Path) -> None:
    first, _ = probe(tmp_path, node_snapshot())
    again, system = probe(tmp_path, node_snapshot())
    assert len(first) == 8 and [r.reason for r in again] == ["probed less than 3600s ago (perf_interval)"]
    assert system.cuda_source is None
    deep, _ = probe(tmp_path, node_snapshot(), profile="deep")
    assert len(deep) == 8


def test_no_cuda_is_said_not_failed(tmp_path: Path) -> None:
    snap = node_snapshot()
    del snap["cuda"]
    results, _ = probe(tmp_path, snap)
    assert [(r.status, r.reason) for r in results] == [("ok", "no probe: the replayed snapshot has no CUDA figures")]
    results, _ = probe(tmp_path / "deep", snap, profile="deep")      # nothing installed: no reason to hold back
    assert [r.status for r in results] == ["ok"]
    system = sysmod.System.from_snapshot(node_snapshot(), "t")
    system.cuda_source = cudadrv.SimulatedDriver([], errors={"cuDeviceGetCount": "CUDA_ERROR_NO_DEVICE"})
    report = runner.run(cfg_for(tmp_path / "d2"), "deep", node="n1", system=system, persist=False)
    assert [r.status for r in report.results if r.check == "perf"] == ["unknown"] * 8


def test_a_cuda_error_mid_probe_is_unknown_and_everything_is_freed(tmp_path: Path) -> None:
    system = sysmod.System.from_snapshot(node_snapshot(), "t")
    drv = cudadrv.SimulatedDriver(node_snapshot()["cuda"]["devices"],
                                  errors={"cuMemcpyHtoDAsync": "CUDA_ERROR_ILLEGAL_ADDRESS"})
    system.cuda_source = drv
    report = runner.run(cfg_for(tmp_path), "health", node="n1", system=system)
    results = [r for r in report.results if r.check == "perf"]
    assert {r.status for r in results} == {"unknown"} and report.verdict != "fail"
    assert "cuMemcpyHtoDAsync: CUDA_ERROR_ILLEGAL_ADDRESS" in results[0].reason
    assert all(v == 0 for v in drv.live_bytes.values()) and len(drv.released) == 8


def test_a_link_below_its_maximum_under_load_is_fail_slow(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][2]["pcie_gen"] = 4          # read while the probe loads it: not idle
    results, _ = probe(tmp_path, snap)
    assert results[2].status == "warn" and "PCIe Gen4 under load, capable of Gen5" in results[2].reason


def test_judgement_units() -> None:
    margin = {"bandwidth": 0.10, "compute": 0.08}
    ref = dict(H100)
    assert perf.shortfalls({**ref, "d2d_gbps": 2975 * 0.901}, ref, margin) == []
    short = perf.shortfalls({**ref, "d2d_gbps": 2975 * 0.89, "fp32_tflops": 57.1 * 0.91}, ref, margin)
    assert [s["metric"] for s in short] == ["d2d_gbps", "fp32_tflops"]
    rows = [{"model": "A", "d2d_gbps": v} for v in (1.0, 3.0, 2.0, 10.0)] + [{"model": "B", "d2d_gbps": 5.0}]
    assert perf.baseline(rows) == {"A": {"n": 4, "d2d_gbps": 2.5}, "B": {"n": 1, "d2d_gbps": 5.0}}
    ptx = perfprobe.fma_ptx().decode()
    assert ptx.count("fma.rn.f32") == perfprobe.FMAS_PER_ITER == cudadrv.SimulatedDriver([]).fmas
    assert perf.packaged_defaults()[MODEL] == H100


def test_no_probe_while_a_slurm_job_holds_the_node(tmp_path: Path) -> None:
    """A job allocated the node (its `extern` step's slurmstepd) but no CUDA process yet: the GPUs are the job's."""
    snap = node_snapshot()
    snap["files"]["proc/4242/comm"] = "slurmstepd\n"
    snap["files"]["proc/17/comm"] = "slurmd\n"
    results, system = probe(tmp_path, snap)
    assert [(r.status, r.reason) for r in results] == [
        ("ok", "not probed: a Slurm job is on the node (1 slurmstepd processes)")]
    assert system.cuda_source is None
    results, _ = probe(tmp_path / "deep", snap, profile="deep")
    assert [r.status for r in results] == ["unknown"]


def test_mig_gpus_are_left_alone_and_unsupported_process_lists_are_no_error(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][7]["mig_mode"] = [1, 1]
    snap["nvml"]["devices"][6]["processes"] = None          # NVML: not supported on this GPU
    results, _ = probe(tmp_path, snap)
    assert [r.gpus for r in results] == [[i] for i in range(7)] and {r.status for r in results} == {"ok"}
