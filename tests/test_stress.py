"""The deep profile's short stress (checks/stress.py): the probe's kernel under SimulatedDriver (the driver's calls
answered in virtual GPU time), NVML's readings under load from FakeNvml."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from slurmtools import config
from slurmtools.checks import cudadrv, runner
from slurmtools.checks import system as sysmod

from .test_perf import MODEL, node_snapshot


def cfg_for(tmp_path: Path, profile: str = "", fleet: dict[str, Any] | None = None) -> config.Config:
    tmp_path.mkdir(parents=True, exist_ok=True)
    baseline = tmp_path / "baseline.json"
    if fleet is not None:
        baseline.write_text(json.dumps({"models": fleet}))
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "x"\n[hardware.x]\ngpus = 8\n{profile}\n'
                    f'[checks]\nperf_baseline_file = "{baseline}"\nperf_stress_seconds = 60.0\n')
    return config.load(path, env={})


def stress(tmp_path: Path, snap: dict[str, Any], profile: str = "",
           fleet: dict[str, Any] | None = None) -> tuple[list[Any], sysmod.System]:
    system = sysmod.System.from_snapshot(snap, "t")
    report = runner.run(cfg_for(tmp_path, profile, fleet), "deep", node="n1", system=system, persist=False)
    return [r for r in report.results if r.check == "stress"], system


def test_a_cool_steady_node_passes_sixty_seconds_of_load(tmp_path: Path) -> None:
    results, system = stress(tmp_path, node_snapshot())
    assert [r.status for r in results] == ["ok"] * 8
    assert results[0].reason == ("GPU 0 (0000:18:00.0) under 60s of load: no slowdown (SM clock median 1980 MHz, "
                                 "max 33 C, 690 W; no clock reference yet)")
    got = results[0].evidence["stress"]
    assert got["seconds"] >= 60 and got["launches"] > 100
    drv = system.cuda()
    assert all(v == 0 for v in drv.live_bytes.values())
    assert "stress" not in config.load(None, env={}).checks.health


def test_hw_thermal_slowdown_under_load_fails_the_deep_check(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][4].update(clocks_event_reasons=0x48, temperature=91, clock_sm_mhz=1200)
    results, _ = stress(tmp_path, snap)
    assert [r.status for r in results] == ["ok"] * 4 + ["fail"] + ["ok"] * 3
    assert results[4].reason == ("GPU 4 (0000:9a:00.0) under 60s of load: HW slowdown, HW thermal slowdown seen "
                                 "(SM clock median 1200 MHz, max 91 C, 690 W)")
    report = runner.run(cfg_for(tmp_path / "r"), "deep", node="n1", system=sysmod.System.from_snapshot(snap, "t"),
                        persist=False)
    assert report.verdict == "fail" and ("stress", [4]) in [(r.check, r.gpus) for r in report.failures]


def test_a_clock_that_sags_below_the_fleet_median_fails_and_sw_thermal_warns(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][1]["clock_sm_mhz"] = 1700
    snap["nvml"]["devices"][2]["clock_sm_mhz"] = 1900
    snap["nvml"]["devices"][3]["clocks_event_reasons"] = 0x20
    fleet = {MODEL: {"n": 64, "sm_mhz_min": 1980.0}}
    results, _ = stress(tmp_path, snap, fleet=fleet)
    assert [r.status for r in results] == ["ok", "fail", "ok", "warn", "ok", "ok", "ok", "ok"]
    assert "SM clock median 1700 MHz, 14% below the fleet's median 1980" in results[1].reason
    assert "SW thermal slowdown" in results[3].reason
    # a small fleet: the profile's clock, else no judgement of the clock
    results, _ = stress(tmp_path / "p", snap, profile="perf_sm_mhz = 1800.0", fleet={MODEL: {"n": 3}})
    assert [r.status for r in results][:3] == ["ok", "fail", "ok"] and "the profile's 1800" in results[1].reason


def test_busy_gpus_cannot_vouch_and_no_cuda_holds_nothing_back(tmp_path: Path) -> None:
    snap = node_snapshot()
    snap["nvml"]["devices"][0]["processes"] = [{"pid": 7, "used_mib": 100}]
    results, _ = stress(tmp_path, snap)
    assert [(r.status, r.reason) for r in results] == [("unknown", "not stressed: GPUs in use: GPU 0 (1 processes)")]
    snap = node_snapshot()
    del snap["cuda"]
    results, _ = stress(tmp_path / "n", snap)
    assert [r.status for r in results] == ["ok"] and "no CUDA figures" in results[0].reason


class _Watching(cudadrv.SimulatedDriver):
    """SimulatedDriver that counts the sessions open on each GPU at once (a session: the primary context held
    by the probe or the stress), each held a little longer so that overlapping checks would show."""

    def __init__(self, devices: list[dict[str, Any]]) -> None:
        super().__init__(devices)
        self.open: dict[int, int] = {}
        self.most = 0

    def cuDevicePrimaryCtxRetain(self, dev: int) -> int:
        with self.lock:
            self.open[dev] = self.open.get(dev, 0) + 1
            self.most = max(self.most, self.open[dev])
        time.sleep(0.02)
        return super().cuDevicePrimaryCtxRetain(dev)

    def cuDevicePrimaryCtxRelease(self, dev: int) -> None:
        with self.lock:
            self.open[dev] -= 1
        super().cuDevicePrimaryCtxRelease(dev)


def test_the_probe_and_the_stress_never_load_a_gpu_at_the_same_time(tmp_path: Path) -> None:
    """Side by side, the stress's kernel halved the probe's figures on a real H200 (the probe then warned
    fail-slow on a healthy GPU): the runner runs the two one after the other, the probe first."""
    snap = node_snapshot()
    system = sysmod.System.from_snapshot(snap, "t")
    system.cuda_source = drv = _Watching(snap["cuda"]["devices"])
    report = runner.run(cfg_for(tmp_path), "deep", node="n1", system=system, persist=False)
    statuses = {(r.check, r.status) for r in report.results if r.check in ("perf", "stress")}
    assert statuses == {("perf", "ok"), ("stress", "ok")}, report.to_dict()
    assert drv.most == 1, drv.open
    first_stress = next(i for i, c in enumerate(drv.calls) if c == "cuLaunchKernel")
    assert "cuMemcpyDtoDAsync" in drv.calls[:first_stress]       # the probe's copies came before any kernel
