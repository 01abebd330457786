"""PCIe link state (fail-slow): GPUs through NVML (FakeNvml answers from a snapshot), RDMA NICs through sysfs
(a real file tree the test builds, or a snapshot's files)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pynvml
import pytest

from slurmtools import config
from slurmtools.checks import pcie, runner, snapshot
from slurmtools.checks import system as sysmod

SNAPS = Path(__file__).parent / "data" / "snapshots"
H100 = Path(__file__).parent / "data" / "h100"


def snap(name: str = "healthy-8xh100") -> dict[str, Any]:
    return json.loads((SNAPS / f"{name}.json").read_text())  # type: ignore[no-any-return]


def cfg_for(tmp_path: Path, profile: str = "") -> config.Config:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "x"\n[hardware.x]\n{profile}\n')
    return config.load(path, env={})


def pcie_results(tmp_path: Path, data: dict[str, Any], profile: str = "",
                 system: sysmod.System | None = None) -> list[tuple[str, str]]:
    report = runner.run(cfg_for(tmp_path, profile), "health", node="n1",
                        system=system or sysmod.System.from_snapshot(data, "test"))
    return [(r.status, r.reason) for r in report.results if r.check == "pcie"]


def test_the_fakes_calls_are_pynvmls() -> None:
    for call in ("nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
                 "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
                 "nvmlDeviceGetGpuMaxPcieLinkGeneration"):
        assert hasattr(pynvml, call) and hasattr(sysmod.FakeNvml, call)


def test_idle_gpus_at_gen1_and_nics_at_their_max_pass(tmp_path: Path) -> None:
    assert pcie_results(tmp_path, snap()) == [
        ("ok", "17 PCIe links at their maximum (8 idle GPUs below their maximum generation, not judged: idle GPUs "
               "lower it)")]


def test_a_downtrained_gpu_and_nic_warn_by_default_and_fail_where_the_profile_says(tmp_path: Path) -> None:
    down = snap("pcie-downtrained")
    expected = ["GPU 4 (0000:9a:00.0): PCIe x8, capable of x16 (fail-slow)",
                "mlx5_3: PCIe Gen4, capable of Gen5 (fail-slow)"]
    assert pcie_results(tmp_path, down) == [("warn", text) for text in expected]
    report = runner.run(cfg_for(tmp_path, 'pcie_slow = "fail"'), "prolog", node="n1",
                        system=sysmod.System.from_snapshot(down, "test"))
    assert report.verdict == "fail" and report.worst() is not None
    worst = report.worst()
    assert worst is not None and (worst.check, worst.category, worst.gpus) == ("pcie", "hardware", [4])
    assert worst.evidence["fail_slow"] is True and worst.evidence["link"]["width"] == 8
    assert pcie_results(tmp_path, down, 'pcie_slow = "off"') == [("ok", "PCIe link check off (pcie_slow = off)")]


def test_generation_is_judged_only_when_the_gpu_is_not_idle(tmp_path: Path) -> None:
    busy = snap()
    for dev in busy["nvml"]["devices"]:
        dev["clocks_event_reasons"], dev["pcie_gen"] = 0, 5
    busy["nvml"]["devices"][6]["pcie_gen"] = 4
    assert pcie_results(tmp_path, busy) == [("warn", "GPU 6 (0000:ba:00.0): PCIe Gen4, capable of Gen5 (fail-slow)")]
    busy["nvml"]["devices"][6]["clocks_event_reasons"] = pcie.GPU_IDLE
    assert pcie_results(tmp_path, busy) == [
        ("ok", "17 PCIe links at their maximum (1 idle GPUs below their maximum generation, not judged: idle GPUs "
               "lower it)")]


def test_a_slot_slower_than_the_gpu_and_the_profiles_floors(tmp_path: Path) -> None:
    data = snap()
    data["nvml"]["devices"][2].update(pcie_max_gen=4)
    assert pcie_results(tmp_path, data) == [
        ("warn", "GPU 2 (0000:3a:00.0): the slot allows Gen4, the GPU Gen5 (fail-slow)")]
    data = snap()
    data["nvml"]["devices"][1].update(pcie_width=8, pcie_max_width=8)
    assert pcie_results(tmp_path, data, "pcie_min_width = 16") == [
        ("warn", "GPU 1 (0000:2a:00.0): PCIe x8, the profile requires x16 (fail-slow)")]
    assert pcie_results(tmp_path, snap(), "pcie_min_gen = 6")[0][1].startswith(
        "GPU 0 (0000:18:00.0): PCIe at most Gen5, the profile requires Gen6")


def write_nic(root: Path, dev: str, speed: str, width: str, max_speed: str, max_width: str) -> None:
    base = root / "sys/class/infiniband" / dev / "device"
    base.mkdir(parents=True)
    for name, value in (("current_link_speed", speed), ("current_link_width", width),
                        ("max_link_speed", max_speed), ("max_link_width", max_width)):
        (base / name).write_text(value + "\n")


def test_nics_from_a_real_sysfs_tree(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_nic(root, "mlx5_0", "32.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16")
    write_nic(root, "mlx5_1", "8.0 GT/s PCIe", "4", "32.0 GT/s PCIe", "16")
    write_nic(root, "mlx5_2", "16 GT/s", "16", "16 GT/s", "16")          # older kernels: no " PCIe"
    write_nic(root, "mlx5_3", "Unknown", "0", "Unknown", "255")          # a function with no link of its own
    system = sysmod.System(sysmod.RootFs(str(root)), sysmod.FakeNvml({"errors": {"nvmlInit": "LibraryNotFound"}}))
    assert pcie_results(tmp_path, {}, system=system) == [
        ("warn", "mlx5_1: PCIe x4, capable of x16; PCIe Gen3, capable of Gen5 (fail-slow)")]
    assert pcie_results(tmp_path, {}, 'ib_exclude = ["mlx5_1"]', system=system) == [
        ("ok", "2 PCIe links at their maximum")]


def test_the_real_h100_recording_has_no_link_state_and_passes(tmp_path: Path) -> None:
    data = sysmod.load_snapshot(str(H100 / "snapshot.json"))
    assert pcie_results(tmp_path, data) == [("ok", "no PCIe link state reported")]


def test_snapshot_record_keeps_the_link_state(tmp_path: Path) -> None:
    """What `snapshot record` writes replays to the same PCIe verdict (NVML faked at the call, sysfs a real tree)."""
    source = snap("pcie-downtrained")
    root = tmp_path / "root"
    for path, text in source["files"].items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    recorded = snapshot.record(root=str(root), nvml=sysmod.FakeNvml(copy.deepcopy(source["nvml"])))
    dev4 = recorded["nvml"]["devices"][4]
    assert (dev4["pcie_gen"], dev4["pcie_width"], dev4["pcie_max_gen"], dev4["pcie_max_width"],
            dev4["pcie_gpu_max_gen"]) == (1, 8, 5, 16, 5)
    assert recorded["files"]["sys/class/infiniband/mlx5_3/device/current_link_speed"] == "16.0 GT/s PCIe\n"
    assert pcie_results(tmp_path, recorded) == pcie_results(tmp_path, source)


@pytest.mark.parametrize("text, gen", [("32.0 GT/s PCIe", 5), ("2.5 GT/s PCIe", 1), ("64.0 GT/s PCIe", 6),
                                       ("Unknown", 0), ("", 0), ("abc GT/s", 0), ("7.0 GT/s", 0)])
def test_sysfs_speeds(text: str, gen: int) -> None:
    assert pcie.gen_of(text) == gen
