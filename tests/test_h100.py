"""Recordings from a real H100 80GB HBM3 (tests/data/h100/, origin in its README) replayed to the verdicts the
recording saw: the real check and diagnosis code over the recorded NVML answers, files and kernel lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from slurmtools import config
from slurmtools.checks import runner
from slurmtools.checks import system as sysmod
from slurmtools.diagnosis import diagnose, policy
from slurmtools.diagnosis.faults import is_node_fault

H100 = Path(__file__).parent / "data" / "h100"


def load(name: str) -> dict[str, Any]:
    return json.loads((H100 / name).read_text())  # type: ignore[no-any-return]


def cfg_for(tmp_path: Path, hardware: str = "") -> config.Config:
    path = tmp_path / "cfg.toml"
    path.write_text(f'[node]\nstate_dir = "{tmp_path}/state"\nhardware = "{hardware}"\n'
                    '[hardware.h100-nvlink]\nnvlinks_per_gpu = 18\ngpus = 1\n')
    return config.load(path, env={})


def replay(tmp_path: Path, name: str, profile: str, hardware: str = "") -> runner.Report:
    snap = sysmod.load_snapshot(str(H100 / name))
    return runner.run(cfg_for(tmp_path, hardware), profile, node="h100",
                      system=sysmod.System.from_snapshot(snap, name))


def gpu_nvlink(report: runner.Report) -> list[tuple[str, str, str]]:
    """The NVML-derived results (the host and filesystem checks read this machine, not the recording)."""
    return [(r.check, r.status, r.reason) for r in report.results if r.check in ("gpu", "nvlink")]


def recorded(name: str) -> list[tuple[str, str, str]]:
    return [(r["check"], r["status"], r["reason"]) for r in load(name) if r["check"] in ("gpu", "nvlink")]


def test_healthy_h100_replays_to_the_recorded_pass(tmp_path: Path) -> None:
    report = replay(tmp_path, "snapshot.json", "prolog")
    assert gpu_nvlink(report) == recorded("check-prolog-healthy.json")
    assert gpu_nvlink(report)[0] == ("gpu", "ok", "1 GPUs healthy")
    health = replay(tmp_path, "snapshot.json", "health")
    assert [s for _, s, _ in gpu_nvlink(health)] == ["ok", "ok"]


def test_stray_process_fails_the_prolog_not_the_health_profile(tmp_path: Path) -> None:
    report = replay(tmp_path, "snapshot-stray-process-under-load.json", "prolog")
    assert gpu_nvlink(report) == recorded("check-prolog-stray-process.json")
    bad = [r for r in report.results if r.status == "fail"]
    assert [(r.check, r.reason) for r in bad] == [("gpu", "GPU 0 (0000:00:06.0): 1 leftover processes hold 21702 MiB")]
    assert bad[0].evidence["minors"] == [0] and bad[0].gpus == [0]
    assert runner.touches_job(report, {0}) and not runner.touches_job(report, {1})
    health = replay(tmp_path, "snapshot-stray-process-under-load.json", "health")
    assert not [r for r in health.results if r.check == "gpu" and r.status != "ok"]


def test_pcie_gpu_without_nvlink_says_so_under_an_nvlink_profile(tmp_path: Path) -> None:
    report = replay(tmp_path, "snapshot.json", "prolog", hardware="h100-nvlink")
    nv = [r for r in report.results if r.check == "nvlink"]
    assert [(r.status, r.reason) for r in nv] == [
        ("fail", "GPU 0: no NVLink visible to NVML on this GPU (expected 18)")]
    assert nv[0].evidence["nvlink_supported"] is False


def lines(name: str) -> list[str]:
    return (H100 / name).read_text().splitlines()


def test_real_xid31_and_its_job_output_are_the_applications(tmp_path: Path) -> None:
    found = diagnose((H100 / "kernel-xid31.log").read_bytes(), exit_code=1, job_lines=lines("job-xid31.out"))
    xid = [f for f in found if f.kind == "xid"]
    assert [(f.xid, f.category, f.pci) for f in xid] == [(31, "application", "0000:00:06")]
    cuda = [f for f in found if f.kind == "cuda"]
    assert cuda and all(f.trust == "job" and f.category == "application" for f in cuda)
    assert not any(is_node_fault(f, None) for f in found)
    assert policy.summary(found) is None        # the epilog drains only on a summary finding: none here


def test_real_xid43_and_its_job_output_are_the_applications(tmp_path: Path) -> None:
    found = diagnose((H100 / "kernel-xid43.log").read_bytes(), exit_code=1, job_lines=lines("job-xid43.out"))
    assert [(f.xid, f.category) for f in found if f.kind == "xid"] == [(43, "application")]
    assert not any(is_node_fault(f, None) for f in found) and policy.summary(found) is None


def test_the_whole_boots_nvrm_lines_drain_nothing() -> None:
    data = (H100 / "kernel-nvrm-boot-and-faults.log").read_bytes()
    found = diagnose(data, exit_code=1)
    assert sorted(f.xid for f in found if f.kind == "xid") == [31, 43]
    assert policy.summary(found) is None
