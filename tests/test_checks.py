"""Health checks against snapshots (fakes at the pynvml call and the file tree), the runner, the prolog gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pynvml
import pytest
from click.testing import CliRunner

from slurmtools import config, drain
from slurmtools.checks import counters as counters_mod
from slurmtools.checks import filesystems, host, runner, snapshot
from slurmtools.checks import system as sysmod
from slurmtools.cli import main
from slurmtools.hooks import prolog
from slurmtools.ledger.spool import Spool

from .test_epilog import sinfo_json

SNAPS = Path(__file__).parent / "data" / "snapshots"
FAULTS = {  # snapshot -> (failing check, words its reason must hold)
    "gpu-missing": ("gpu", "missing from NVML"),
    "row-remap-failure": ("gpu", "GPU 3 (0000:5d:00.0): row remapping failed"),
    "ecc-dbe": ("gpu", "uncorrected ECC"),
    "nvlink-down": ("nvlink", "GPU 2: 16 of 18 NVLinks active"),
    "ib-port-down": ("infiniband", "mlx5_4/1: port DOWN"),
    "ib-link-downed": ("infiniband", "mlx5_2/1: link went down 3 times"),
    "thermal-slowdown": ("gpu", "HW thermal slowdown"),
}
PROFILE = "[hardware.dgx-h100]\n" + (SNAPS / "dgx-h100.profile.toml").read_text()


def healthy() -> dict[str, Any]:
    return json.loads((SNAPS / "healthy-8xh100.json").read_text())


def make_cfg(tmp_path: Path, extra: str = "", hardware: str = "dgx-h100") -> config.Config:
    path = tmp_path / "cfg.toml"
    path.write_text(f"""
[ledger]
spool_dir = "{tmp_path}/spool"
[slurm]
backend = "cli"
bin_dir = "{tmp_path}/bin"
[node]
state_dir = "{tmp_path}/state"
kernel_log = "file:{tmp_path}/kern.log"
hardware = "{hardware}"
{PROFILE}
{extra}
""")
    return config.load(path, env={})


def run_snap(cfg: config.Config, snap: dict[str, Any], profile: str = "prolog", **kw: Any) -> runner.Report:
    return runner.run(cfg, profile, node="n1", system=sysmod.System.from_snapshot(snap, "test"), **kw)


def failing(report: runner.Report) -> list[tuple[str, str]]:
    return [(r.check, r.reason) for r in report.results if r.status == "fail"]


# ------------------------------------------------------------------------------- snapshots
def test_shipped_snapshots_match_their_generator() -> None:
    sys.path.insert(0, str(SNAPS))
    try:
        import make_snapshots
    finally:
        sys.path.pop(0)
    for name, snap in make_snapshots.variants().items():
        assert (SNAPS / f"{name}.json").read_text() == make_snapshots.render(snap), name


def test_nvml_constants_are_pynvmls() -> None:
    assert sysmod.TEMPERATURE_GPU == pynvml.NVML_TEMPERATURE_GPU
    assert sysmod.MEMORY_ERROR_TYPE_UNCORRECTED == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    assert sysmod.VOLATILE_ECC == pynvml.NVML_VOLATILE_ECC
    assert sysmod.NVLINK_ERROR_DL_REPLAY == pynvml.NVML_NVLINK_ERROR_DL_REPLAY
    assert sysmod.NVLINK_ERROR_DL_RECOVERY == pynvml.NVML_NVLINK_ERROR_DL_RECOVERY
    assert sysmod.NVLINK_ERROR_DL_CRC_FLIT == pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT
    assert sysmod.NVLINK_MAX_LINKS == pynvml.NVML_NVLINK_MAX_LINKS
    assert sysmod.FI_DEV_GET_GPU_RECOVERY_ACTION == pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
    assert sysmod.SUCCESS == pynvml.NVML_SUCCESS
    from slurmtools.checks import gpu

    assert gpu.HW_THERMAL == pynvml.nvmlClocksEventReasonHwThermalSlowdown
    assert gpu.HW_SLOWDOWN == pynvml.nvmlClocksEventReasonHwSlowdown
    assert gpu.HW_POWER_BRAKE == pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown
    assert gpu.SW_THERMAL == pynvml.nvmlClocksEventReasonSwThermalSlowdown


def test_fake_raises_pynvmls_own_errors() -> None:
    snap = healthy()
    snap["nvml"]["devices"][0]["errors"] = {"nvmlDeviceGetRemappedRows": "GpuIsLost"}
    fake = sysmod.FakeNvml(snap["nvml"])
    h = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetRemappedRows(h)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetRetiredPagesPendingStatus(h)   # null in the snapshot: H100 has no page retirement
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        fake.nvmlDeviceGetNvLinkState(h, 18)


@pytest.mark.parametrize("hardware", ["dgx-h100", ""])
def test_healthy_snapshot_passes_with_and_without_a_profile(tmp_path: Path, hardware: str) -> None:
    report = run_snap(make_cfg(tmp_path, hardware=hardware), healthy())
    assert report.verdict == "ok", [r.to_dict() for r in report.results]
    assert {r.check for r in report.results} == {"gpu", "nvlink", "infiniband", "pcie", "host", "filesystems"}


@pytest.mark.parametrize("name", sorted(FAULTS))
@pytest.mark.parametrize("hardware", ["dgx-h100", ""])
def test_each_faulted_snapshot_fails_the_right_check(tmp_path: Path, name: str, hardware: str) -> None:
    snap = json.loads((SNAPS / f"{name}.json").read_text())
    report = run_snap(make_cfg(tmp_path, hardware=hardware), snap)
    check, words = FAULTS[name]
    assert report.verdict == "fail"
    assert any(c == check and words in reason for c, reason in failing(report)), failing(report)
    assert {c for c, _ in failing(report)} == {check}   # no collateral failures


# ------------------------------------------------------------------------------- NVML error paths
def test_driver_not_loaded_fails_where_gpus_are_expected(tmp_path: Path) -> None:
    snap = healthy()
    snap["nvml"]["errors"] = {"nvmlInit": "DriverNotLoaded"}
    report = run_snap(make_cfg(tmp_path), snap)
    assert ("gpu", "NVML unavailable (Driver Not Loaded); 8 NVIDIA GPUs on the PCI bus") in failing(report)


def test_no_nvml_and_no_gpus_is_fine_on_a_cpu_node(tmp_path: Path) -> None:
    snap = {"format": sysmod.SNAPSHOT_FORMAT, "nvml": {"errors": {"nvmlInit": "LibraryNotFound"}},
            "files": {"proc/meminfo": "MemAvailable: 1000000 kB\n"}}
    report = run_snap(make_cfg(tmp_path, hardware=""), snap)
    assert report.verdict == "ok", [r.to_dict() for r in report.results]


def test_gpu_lost_mid_query(tmp_path: Path) -> None:
    snap = healthy()
    snap["nvml"]["devices"][4]["errors"] = {"nvmlDeviceGetTemperature": "GpuIsLost",
                                            "nvmlDeviceGetNvLinkState": "GpuIsLost"}
    report = run_snap(make_cfg(tmp_path), snap)
    assert ("gpu", "GPU 4 (0000:9a:00.0): GPU is lost (fallen off the bus)") in failing(report)
    assert ("nvlink", "GPU 4: GPU is lost") in failing(report)


def test_driver_and_cuda_mismatch(tmp_path: Path) -> None:
    snap = healthy()
    snap["nvml"]["driver_version"] = "535.104.05"
    snap["nvml"]["cuda_driver_version"] = 12020
    reasons = [r for _, r in failing(run_snap(make_cfg(tmp_path), snap))]
    assert "driver 535.104.05, expected 550.90.07" in reasons
    assert "CUDA 12.2, expected 12.4" in reasons


def test_unexpected_nvml_error_is_unknown_not_fail(tmp_path: Path) -> None:
    snap = healthy()
    snap["nvml"]["devices"][0]["errors"] = {"nvmlDeviceGetTotalEccErrors": "Unknown"}
    report = run_snap(make_cfg(tmp_path), snap)
    assert report.verdict == "unknown" and report.exit_code == 2
    assert report.failures == []
    strict = run_snap(make_cfg(tmp_path, "[checks]\nunknown_fails = true"), snap)
    assert strict.verdict == "fail" and strict.failures[0].status == "unknown"


def test_recovery_action_stray_processes_persistence_and_mig(tmp_path: Path) -> None:
    snap = healthy()
    devs = snap["nvml"]["devices"]
    devs[0]["recovery_action"] = 2
    devs[1]["processes"] = [{"pid": 4242, "used_mib": 30000}]
    devs[1]["memory_used_mib"] = 30000
    devs[2]["processes"] = [{"pid": 77, "used_mib": 10}]
    devs[3]["persistence_mode"] = 0
    devs[5]["mig_mode"] = [1, 1]
    devs[5]["processes"] = [{"pid": 9, "used_mib": 50000}]   # MIG: per-instance memory is not judged here
    report = run_snap(make_cfg(tmp_path), snap)
    statuses = {(r.status, r.reason) for r in report.results if r.status != "ok"}
    assert ("fail", "GPU 0 (0000:18:00.0): NVML asks for node reboot") in statuses
    assert ("fail", "GPU 1 (0000:2a:00.0): 1 leftover processes hold 30000 MiB") in statuses
    assert ("warn", "GPU 2 (0000:3a:00.0): 1 leftover processes (10 MiB)") in statuses
    assert ("warn", "GPU 3 (0000:5d:00.0): persistence mode off (slow, flaky job starts)") in statuses
    assert not any("GPU 5" in reason for _, reason in statuses)
    epilog_report = run_snap(make_cfg(tmp_path), snap, profile="epilog")   # processes are the job's there
    assert not any("leftover" in r.reason for r in epilog_report.results)


# ------------------------------------------------------------------------------- counters
def test_counters_strikes_window_and_reset(tmp_path: Path) -> None:
    path = str(tmp_path / "c.json")
    c = counters_mod.Counters(path, window=100, now=1000)
    assert c.observe("k", 5, per_run=0).delta is None
    c.save()
    c = counters_mod.Counters(path, window=100, now=1010)
    obs = c.observe("k", 9, per_run=0)
    assert (obs.delta, obs.strike, obs.strikes) == (4, True, 1)
    c.save()
    c = counters_mod.Counters(path, window=100, now=1020)
    obs = c.observe("k", 2, per_run=0)   # counter reset (driver reload): the new value is the rise
    assert (obs.delta, obs.strikes) == (2, 2)
    c.save()
    c = counters_mod.Counters(path, window=100, now=1500)   # old strikes leave the window
    obs = c.observe("k", 2, per_run=0)
    assert (obs.delta, obs.strike, obs.strikes) == (0, False, 0)


def test_ib_symbol_errors_warn_then_fail_on_strikes(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path)
    snap = healthy()
    key = "sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error"
    statuses = []
    for value in (0, 50, 100, 150):
        snap["files"][key] = f"{value}\n"
        report = run_snap(cfg, snap)   # counters persist in state_dir between runs, as on a node
        statuses.append(next(r.status for r in report.results if r.check == "infiniband"))
    assert statuses == ["ok", "warn", "warn", "fail"]


def test_nvlink_error_counters_judge_increases_not_totals(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path)
    snap = healthy()
    snap["nvml"]["devices"][7]["nvlink_counters"][3] = [5000, 0, 0]   # a big lifetime total
    assert run_snap(cfg, snap).verdict == "ok"
    for step in (1, 2, 3):
        snap["nvml"]["devices"][7]["nvlink_counters"][3] = [5000 + 1000 * step, 0, 0]
        report = run_snap(cfg, snap)
    assert ("nvlink", "GPU 7: NVLink replay errors +1000 (3 of 3 strikes in 3600s)") in failing(report)


# ------------------------------------------------------------------------------- host, filesystems
def tree(tmp_path: Path, files: dict[str, str]) -> sysmod.RootFs:
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sysmod.RootFs(str(root))


def test_host_memory_disk_dstate_daemons(tmp_path: Path) -> None:
    fs = tree(tmp_path, {"proc/meminfo": "MemAvailable:     512000 kB\n",
                         "proc/100/stat": "100 (nfsd worker) D 1 0 0\n",
                         "proc/101/stat": "101 (sshd) S 1 0 0\n"})
    cfg = make_cfg(tmp_path, hardware="h")
    cfg.hardware_profiles["h"] = cfg.hardware_profile.replace(
        min_mem_available_mib=1024, daemons=["sshd", "nvidia-persistenced"],
        disk_paths=[str(tmp_path), "/nonexistent-path"], dstate_fail_count=0)
    ctx = runner.Context(node="n1", profile="prolog", settings=cfg.checks, hardware=cfg.hardware_for("n1"),
                         counters=counters_mod.Counters(None, 1))
    results = host.run(sysmod.System(fs=fs), ctx)
    got = {(r.status, r.reason) for r in results}
    assert ("fail", "500 MiB memory available, need 1024") in got
    assert ("fail", "required daemons not running: nvidia-persistenced") in got
    assert ("warn", "1 processes in D state: nfsd worker[100]") in got
    assert ("fail", "/nonexistent-path: No such file or directory") in got


def test_hung_filesystem_fails_within_the_probe_timeout(tmp_path: Path) -> None:
    """A FIFO with no writer blocks its reader forever, like a hung NFS mount."""
    fifo = tmp_path / "hung"
    os.mkfifo(fifo)
    ro = tmp_path / "ro"
    ro.mkdir()
    fs = tree(tmp_path, {"proc/mounts": f"nfs1:/x {fifo} nfs4 rw 0 0\n/dev/sda1 / ext4 rw 0 0\n"})
    cfg = make_cfg(tmp_path, "[checks]\nprobe_timeout = 0.5", hardware="h")
    cfg.hardware_profiles["h"] = cfg.hardware_profile.replace(mounts=[str(fifo), "/", "/lustre"],
                                                              writable=[str(tmp_path), str(ro / "gone")])
    ctx = runner.Context(node="n1", profile="prolog", settings=cfg.checks, hardware=cfg.hardware_for("n1"),
                         counters=counters_mod.Counters(None, 1))
    start = time.monotonic()
    results = filesystems.run(sysmod.System(fs=fs), ctx)
    elapsed = time.monotonic() - start
    assert elapsed < 2.0
    got = {r.reason for r in results if r.status == "fail"}
    assert f"{fifo} not answering: no answer within 0.5s (hung mount?)" in got
    assert "/lustre is not mounted" in got
    assert f"{ro / 'gone'} not writable: No such file or directory" in got
    assert not any(str(tmp_path) + " not" in r for r in got if "gone" not in r and "hung" not in r)


def test_filesystem_probes_all_answer(tmp_path: Path) -> None:
    result = filesystems.probe([(str(tmp_path), "write"), ("/", "read")], timeout=5)
    assert result == {(str(tmp_path), "write"): "", ("/", "read"): ""}
    assert not list(tmp_path.iterdir())   # the probe file is gone


# ------------------------------------------------------------------------------- runner
def test_hung_or_crashing_check_is_unknown_and_the_runner_returns(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    monkeypatch.setattr(host, "run", lambda system, ctx: stop.wait(30))
    monkeypatch.setattr(filesystems, "run", lambda system, ctx: 1 / 0)
    cfg = make_cfg(tmp_path, "[checks]\ntimeout = 0.3")
    start = time.monotonic()
    report = run_snap(cfg, healthy())
    stop.set()
    assert time.monotonic() - start < 2
    got = {(r.check, r.status, r.reason) for r in report.results if r.status != "ok"}
    assert ("host", "unknown", "no result within 0.3s (probe hung?)") in got
    assert ("filesystems", "unknown", "internal error: ZeroDivisionError: division by zero") in got
    assert report.verdict == "unknown"


def test_disabled_checks_and_unknown_profile_names(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, '[checks]\ndisabled = ["gpu", "nvlink"]')
    snap = json.loads((SNAPS / "row-remap-failure.json").read_text())
    assert run_snap(cfg, snap).verdict == "ok"
    bad = make_cfg(tmp_path, '[checks]\nprolog = ["gpu", "nope"]')
    with pytest.raises(ValueError, match="unknown checks: nope"):
        run_snap(bad, snap)


def test_touches_job_by_minor_number(tmp_path: Path) -> None:
    snap = json.loads((SNAPS / "row-remap-failure.json").read_text())   # GPU 3
    report = run_snap(make_cfg(tmp_path), snap)
    assert runner.touches_job(report, {3, 4})
    assert not runner.touches_job(report, {0, 1})
    assert not runner.touches_job(report, set())           # a CPU-only job
    node_wide = run_snap(make_cfg(tmp_path), json.loads((SNAPS / "ib-port-down.json").read_text()))
    assert runner.touches_job(node_wide, set())


def test_snapshot_record_round_trips_through_the_fake(tmp_path: Path) -> None:
    """What `snapshot record` writes is what FakeNvml replays: record from a fake and compare."""
    snap = healthy()
    snap["nvml"]["devices"][2]["errors"] = {"nvmlDeviceGetTemperature": "Unknown"}
    snap["nvml"]["devices"][2]["temperature"] = None
    fs = tree(tmp_path, snap["files"])
    recorded = snapshot.record(root=fs.root, nvml=sysmod.FakeNvml(snap["nvml"]))
    assert recorded["files"] == snap["files"]
    for got, want in zip(recorded["nvml"]["devices"], snap["nvml"]["devices"], strict=True):
        assert got == want
    assert recorded["nvml"]["driver_version"] == snap["nvml"]["driver_version"]


# ------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize("name", ["healthy-8xh100", *sorted(FAULTS)])
def test_check_cli_contract(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text(f'[node]\nstate_dir = "{tmp_path}/state"\n')
    out = CliRunner().invoke(main, ["check", "--replay", str(SNAPS / f"{name}.json"), "--json"])
    results = json.loads(out.output)
    assert isinstance(results, list)
    assert all({"check", "status", "reason", "duration_ms"} <= set(r) for r in results)
    if name == "healthy-8xh100":
        assert out.exit_code == 0
    else:
        assert out.exit_code == 1
        assert FAULTS[name][0] in {r["check"] for r in results if r["status"] == "fail"}
    assert not (tmp_path / "state").exists()   # a replay on the CLI keeps no counters


def test_check_cli_bad_snapshot_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = CliRunner().invoke(main, ["check", "--replay", str(bad)])
    assert out.exit_code == 2
    assert "not a JSON snapshot" in out.output and "Traceback" not in out.output
    (tmp_path / "other.json").write_text('{"format": "x"}')
    out = CliRunner().invoke(main, ["check", "--replay", str(tmp_path / "other.json")])
    assert out.exit_code == 2 and "not a slurmtools snapshot" in out.output


# ------------------------------------------------------------------------------- the prolog gate
def sinfo(nodes: list[tuple[str, str]]) -> str:
    """Idle nodes, drained where a reason is given (the epilog tests' fake sinfo output)."""
    return sinfo_json([(n, "idle", ["DRAIN"] if r else [], r) for n, r in nodes])


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo.json").write_text(sinfo([(f"n{i}", "") for i in range(1, 21)]))
    for tool, body in {"sinfo": f'echo sinfo >> {bin_dir}/calls; cat {bin_dir}/sinfo.json',
                       "scontrol": f'echo "scontrol $*" >> {bin_dir}/calls'}.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "kern.log").write_text("")
    from slurmtools.ledger import api

    monkeypatch.setattr(api, "flush_in_background", lambda: None)

    def run(snapshot: str, extra: str = "", gpus: str = "0,1,2,3,4,5,6,7", comment: str = "") -> tuple[int, list[str]]:
        cfg = make_cfg(tmp_path, extra)
        cfg.node_defaults.replay = str(SNAPS / f"{snapshot}.json")
        env = {"SLURM_JOB_ID": "77", "SLURMD_NODENAME": "n1", "SLURM_JOB_GPUS": gpus, "SLURM_JOB_COMMENT": comment}
        code = prolog.run(env, cfg)
        calls_file = bin_dir / "calls"
        calls = calls_file.read_text().splitlines() if calls_file.exists() else []
        return code, calls

    return {"run": run, "tmp": tmp_path, "bin": bin_dir}


def events(tmp_path: Path) -> list[dict[str, Any]]:
    spool = Spool(tmp_path / "spool")
    return [{"type": e.type, **e.data} for p in spool.pending_files() for e in spool.read(p)]


def test_healthy_gate_makes_no_slurm_call_and_spools_a_pass(gate: dict[str, Any]) -> None:
    code, calls = gate["run"]("healthy-8xh100")
    assert code == 0 and calls == []
    evs = events(gate["tmp"])
    assert [(e["type"], e["verdict"], e["job_id"]) for e in evs] == [("gate_run", "ok", 77)]
    status = runner.read_status(str(gate["tmp"] / "state"))
    assert status is not None and status.verdict == "ok"
    assert (gate["tmp"] / "state" / "jobs").exists()   # the epilog's kernel-log marker


@pytest.mark.parametrize("comment, gated", [("slurmtools=off", False), ("a,slurmtools=off", False),
                                            ("notslurmtools=offline", True), ("slurmtools=offx", True)])
def test_the_opt_out_is_a_whole_token_and_keeps_the_window_marker(gate: dict[str, Any], comment: str,
                                                                   gated: bool) -> None:
    """Issue 30, F15: `slurmtools=off` as a token skips the job's gate; a substring does not. Either way the
    kernel-log marker is written, so the epilog (which never skips the kernel diagnosis) reads this job's window."""
    code, calls = gate["run"]("row-remap-failure", comment=comment)
    assert (code == prolog.GATE_FAILED) is gated and bool([c for c in calls if c.startswith("scontrol")]) is gated
    assert (gate["tmp"] / "state" / "jobs" / "77.n1.json").is_file()


def test_failing_gate_drains_with_our_reason_and_fails_the_job(gate: dict[str, Any]) -> None:
    code, calls = gate["run"]("row-remap-failure")
    assert code == prolog.GATE_FAILED
    drain = [c for c in calls if c.startswith("scontrol")]
    assert len(drain) == 1
    assert ("reason=slurmtools: hardware: gpu: GPU 3 (0000:5d:00.0): row remapping failed (12 uncorrectable rows) "
            "[job 77]") in drain[0]
    types = [(e["type"], e.get("verdict") or e.get("action")) for e in events(gate["tmp"])]
    assert types == [("gate_run", "fail"), ("node_state", "drain"), ("exclusion", None)]


def test_failed_gpu_outside_the_job_drains_but_lets_the_job_start(gate: dict[str, Any]) -> None:
    code, calls = gate["run"]("row-remap-failure", gpus="0,1")
    assert code == 0
    assert any(c.startswith("scontrol update") for c in calls)


def test_observe_mode_and_breaker_let_the_job_run(gate: dict[str, Any]) -> None:
    code, calls = gate["run"]("ib-port-down", '[general]\nobserve = true')
    assert code == 0 and not any(c.startswith("scontrol") for c in calls)
    (gate["bin"] / "sinfo.json").write_text(sinfo([("n1", ""), ("n2", "slurmtools: x"), ("n3", "slurmtools: y")]))
    code, calls = gate["run"]("ib-port-down")
    assert code == 0 and not any(c.startswith("scontrol") for c in calls)
    assert events(gate["tmp"])[-1]["details"]["outcome"] == "breaker_open"


def test_hook_internal_error_exits_zero(gate: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from slurmtools.hooks import runner as hooks

    monkeypatch.setattr(prolog, "run", lambda: 1 / 0)
    monkeypatch.setattr(config, "get", lambda: config.load(env={}))
    assert hooks.main(["prolog_slurmd"]) == 0
    assert "internal error in prolog_slurmd: ZeroDivisionError" in capsys.readouterr().err


def test_prolog_wrapper_only_fails_the_job_on_a_gate_verdict(tmp_path: Path) -> None:
    """prolog.d/: exit 100 from the hook means "fail this job"; a crash of ours (exit 1) means run it."""
    wrapper = Path(__file__).parent.parent / "prolog.d" / "50-slurmtools"
    for rc, want in ((0, 0), (100, 1), (1, 0), (2, 0)):
        fake = tmp_path / "slurmtools-hook"
        fake.write_text(f"#!/bin/sh\nexit {rc}\n")
        fake.chmod(0o755)
        proc = subprocess.run(["sh", str(wrapper)], env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, check=False,
                              capture_output=True)
        assert proc.returncode == want, (rc, proc.stderr)


def test_healthcheck_reuses_a_fresh_verdict(gate: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gate["run"]("healthy-8xh100")
    cfg = make_cfg(gate["tmp"])
    cfg.node_defaults.replay = str(SNAPS / "row-remap-failure.json")
    calls: list[str] = []
    real = runner.run
    monkeypatch.setattr(runner, "run", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert prolog.healthcheck({"SLURMD_NODENAME": "n1"}, cfg) == 0
    assert calls == []                         # the prolog's verdict is fresh: nothing probed
    cfg.checks.health_max_age = 0.0
    assert prolog.healthcheck({"SLURMD_NODENAME": "n1"}, cfg) == 0
    assert calls == ["health"]
    assert runner.read_status(str(gate["tmp"] / "state")).verdict == "fail"   # type: ignore[union-attr]


def test_reason_fits_slurm(gate: dict[str, Any]) -> None:
    reason = drain.make_reason("slurmtools:", "hardware", "gpu: " + "x" * 500, 77)
    assert len(reason) <= drain.MAX_REASON and reason.endswith("[job 77]")


def test_snapshot_cli_records_here(tmp_path: Path) -> None:
    """On this GPU-less machine: NVML reports its own absence, files are read from the real /sys."""
    out = CliRunner().invoke(main, ["snapshot", "record", str(tmp_path / "s.json")])
    assert out.exit_code == 0, out.output
    data = sysmod.load_snapshot(str(tmp_path / "s.json"))
    assert "proc/meminfo" in data["files"]
    assert data["nvml"].get("errors", {}).get("nvmlInit") or data["nvml"].get("devices") is not None


def test_healthy_prolog_process_stays_lean(tmp_path: Path) -> None:
    """What keeps the prolog fast (docs/performance.md), checked in a fresh interpreter as Slurm starts it:
    the healthy path imports no database, CLI, logging, subprocess or pathlib module, typing only for a
    config parse (not once the parse is cached), and pynvml without its unused ctypes.util."""
    (tmp_path / "kern.log").touch()
    (tmp_path / "cache").mkdir(mode=0o755)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[ledger]\nspool_dir = "{tmp_path}/spool"\n[node]\nreplay = "{SNAPS}/healthy-8xh100.json"\n'
                   f'state_dir = "{tmp_path}/state"\nkernel_log = "file:{tmp_path}/kern.log"\nhardware = "dgx-h100"\n'
                   f'[hardware.dgx-h100]\n{(SNAPS / "dgx-h100.profile.toml").read_text()}\nmounts = ["/"]\n'
                   f'writable = ["{tmp_path}"]\ndisk_paths = ["{tmp_path}"]\n'
                   f'[metrics]\ntextfile_dir = "{tmp_path}/textfile"\n')
    (tmp_path / "textfile").mkdir(mode=0o755)
    env = {"PATH": "/usr/bin:/bin", "SLURMTOOLS_CONFIG": str(cfg), "SLURMTOOLS_CACHE_DIR": str(tmp_path / "cache"),
           "SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "5", "SLURMD_NODENAME": "n1",
           "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7", "PYTHONPATH": str(Path(__file__).parent.parent)}
    # modules the hook imports (an editable install's finder has imported pathlib before: not ours)
    code = ("import sys\nbefore = set(sys.modules)\nfrom slurmtools.hooks.runner import main\n"
            "rc = main(['prolog_slurmd'])\n"
            "print(rc, ' '.join(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in {'sqlalchemy', "
            "'click', 'logging', 'subprocess', 'pathlib', 'typing', 'ctypes', 'pynvml', 'tomllib', 'dataclasses', "
            "'inspect', 'shutil', 'tempfile'})))")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    rc, mods = runs[1].stdout.split(" ", 1)
    assert rc == "0" and set(mods.split()) == {"ctypes", "ctypes._endian", "pynvml"}, runs[1].stdout
    status = runner.read_status(str(tmp_path / "state"))
    assert status is not None and status.verdict == "ok"     # the healthy path, all five checks
    assert "tomllib" in runs[0].stdout           # the first run parsed the config; the second read the cache
    assert (tmp_path / "textfile" / "slurmtools_gate.prom").read_text().count("slurmtools_hook_gate_verdict{") == 4


def test_pynvml_import_leaves_the_real_ctypes_util() -> None:
    code = ("import sys\nfrom slurmtools.checks.system import import_pynvml\nnv = import_pynvml()\n"
            "assert 'ctypes.util' not in sys.modules and hasattr(nv, 'nvmlInit')\n"
            "import ctypes.util\nassert ctypes.util.__file__ and ctypes.util.find_library('c')\n"
            "assert nv.find_library('c') == ctypes.util.find_library('c')\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert out.stdout.strip() == "ok", out.stderr


def _textfile(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(path.read_text()) for s in fam.samples}


def test_gate_writes_node_exporters_textfile(gate: dict[str, Any]) -> None:
    """[metrics] textfile_dir: the prolog replaces slurmtools_gate.prom whole; prometheus_client's parser reads
    it; a failing check shows in its status series. An untrusted directory is said, never in the gate's way."""
    tmp = gate["tmp"]
    (tmp / "tf-n1").mkdir(mode=0o755)
    extra = f'[metrics]\ntextfile_dir = "{tmp}/tf-{{node}}"\n'
    code, _ = gate["run"]("healthy-8xh100", extra)
    assert code == 0
    m = _textfile(tmp / "tf-n1" / "slurmtools_gate.prom")
    assert m[("slurmtools_hook_gate_verdict", (("profile", "prolog"), ("verdict", "ok")))] == 1.0
    assert m[("slurmtools_hook_gate_verdict", (("profile", "prolog"), ("verdict", "fail")))] == 0.0
    assert m[("slurmtools_hook_gate_check_status", (("check", "gpu"), ("status", "ok")))] == 1.0
    assert 0 < m[("slurmtools_hook_gate_duration_seconds", ())] < 60
    code, _ = gate["run"]("row-remap-failure", extra)
    assert code == prolog.GATE_FAILED
    m = _textfile(tmp / "tf-n1" / "slurmtools_gate.prom")
    assert m[("slurmtools_hook_gate_check_status", (("check", "gpu"), ("status", "fail")))] == 1.0
    assert m[("slurmtools_hook_gate_verdict", (("profile", "prolog"), ("verdict", "fail")))] == 1.0
    assert [p.name for p in (tmp / "tf-n1").iterdir()] == ["slurmtools_gate.prom"]    # no temporary left
    (tmp / "tf-n1").chmod(0o777)
    code, _ = gate["run"]("healthy-8xh100", extra)
    assert code == 0
    assert _textfile(tmp / "tf-n1" / "slurmtools_gate.prom")[
        ("slurmtools_hook_gate_verdict", (("profile", "prolog"), ("verdict", "fail")))] == 1.0   # not rewritten


def test_textfile_exposition_escapes_and_numbers() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from slurmtools.hooks import textfile

    text = textfile.render([("x_y", "gauge", 'help with \\ and\nnewline', [({"a": 'q"uote\\back\nline'}, 0.5),
                                                                         ({}, 3.0), ({"b": "z"}, float("inf"))])])
    (fam,) = text_string_to_metric_families(text)
    assert fam.documentation == "help with \\ and\nnewline"
    assert [(s.labels, s.value) for s in fam.samples] == [({"a": 'q"uote\\back\nline'}, 0.5), ({}, 3.0),
                                                         ({"b": "z"}, float("inf"))]
