"""The stall detector's core: the GPU signature, progress and its learned quiet time, the judge, blame, the GPU
signal's sources (the sampler's textfile, its replay file) and one scan over running jobs (docs/stalls.md)."""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from slurmtools import config
from slurmtools.slurm import JobInfo
from slurmtools.stalls import blame, gpu, judge, progress, sampler, scan, signals
from slurmtools.stalls.gpu import GpuSample

TH = gpu.Thresholds()


def g(node: str, i: int, util: float, power: float | None, limit: float | None = 700.0,
      sm: float | None = None) -> GpuSample:
    return GpuSample(node, str(i), util, power, limit, sm)


# ---------------------------------------------------------------- the GPU signature

def test_power_tells_a_spinning_gpu_from_a_working_one() -> None:
    # the H100 figures of the issue: idle 132 W, a polling kernel 100 % at 133-153 W, a matrix multiply 682 W
    assert gpu.classify(g("n1", 0, 100, 133), TH) == "spin"
    assert gpu.classify(g("n1", 0, 100, 153), TH) == "spin"
    assert gpu.classify(g("n1", 0, 100, 682), TH) == "work"
    assert gpu.classify(g("n1", 0, 0, 132), TH) == "idle"
    assert gpu.classify(g("n1", 0, 50, 300), TH) == "partial"
    assert gpu.classify(g("n1", 0, 100, 200, limit=None), TH) == "spin"     # spin_power_w without a limit
    assert gpu.classify(g("n1", 0, 100, 300, limit=None), TH) == "work"
    assert gpu.classify(g("n1", 0, 100, None, limit=None), TH) == "partial"  # utilisation alone cannot tell
    assert gpu.classify(g("n1", 0, 100, None, limit=None, sm=0.05), TH) == "spin"   # DCGM's SM activity can
    assert gpu.classify(g("n1", 0, 100, None, limit=None, sm=0.8), TH) == "work"
    assert gpu.classify(GpuSample("n1", "0", None), TH) is None


def test_job_signature_needs_every_node_spinning_or_idle() -> None:
    spin = [g("n1", i, 100, 140) for i in range(4)]
    idle = [g("n2", i, 0, 70) for i in range(4)]
    work = [g("n3", i, 100, 600) for i in range(4)]
    assert gpu.job_signature({"n1": spin, "n2": idle}, ["n1", "n2"], TH)["verdict"] == "hung"
    assert gpu.job_signature({"n1": spin, "n3": work}, ["n1", "n3"], TH)["verdict"] == "working"
    assert gpu.job_signature({}, ["n1", "n2"], TH)["verdict"] == "none"
    half = [g("n4", 0, 100, 140), g("n4", 1, 100, 600)]
    sig = gpu.job_signature({"n4": half}, ["n4"], TH)
    assert sig["nodes"]["n4"]["class"] == "mixed" and sig["verdict"] == "working"
    part = [g("n5", i, 50, 300) for i in range(2)]
    assert gpu.job_signature({"n1": spin, "n5": part}, ["n1", "n5"], TH)["verdict"] == "unclear"


# ---------------------------------------------------------------- the judge

def prog(last: float | None, gaps: list[float] | None = None, ckpts: list[float] | None = None,
         in_ckpt: float | None = None) -> progress.Progress:
    return progress.Progress(last, 100, gaps or [], ckpts or [], in_ckpt, [{"path": "x"}])


LIM = judge.Limits(min_quiet=600.0, margin=1.5, no_gpu_factor=3.0, startup_grace=1800.0,
                   checkpoint_min_quiet=2700.0, max_learned=21600.0)
T0 = 1_800_000_000.0


def test_a_job_quiet_past_its_own_normal_with_hung_gpus_is_stalled() -> None:
    v = judge.judge(1, T0 + 5000, T0, prog(T0 + 4000, gaps=[30, 60, 400]), "hung", LIM)
    assert v.stalled and v.quiet_s == 1000 and v.allowed_s == 600      # max(600, 1.5 x 400)
    v = judge.judge(1, T0 + 5000, T0, prog(T0 + 4500, gaps=[30, 60, 400]), "hung", LIM)
    assert not v.stalled


def test_a_job_that_checkpoints_12_minutes_every_2_hours_is_not_stalled_at_minute_10() -> None:
    history = prog(T0 + 3 * 3600, gaps=[20.0] * 50 + [720.0, 715.0], ckpts=[720.0, 715.0])
    v = judge.judge(1, T0 + 3 * 3600 + 600, T0, history, "hung", LIM)
    assert not v.stalled and v.allowed_s == 1080                         # 1.5 x 12 min
    v = judge.judge(1, T0 + 3 * 3600 + 1200, T0, history, "hung", LIM)
    assert v.stalled                                                     # 20 min: past its own normal


def test_an_open_checkpoint_at_its_start_and_gpus_that_work_are_not_stalls() -> None:
    in_ckpt = prog(T0 + 1000, in_ckpt=T0 + 1000)
    assert not judge.judge(1, T0 + 1000 + 2000, T0, in_ckpt, "hung", LIM).stalled       # < checkpoint_min_quiet
    assert judge.judge(1, T0 + 1000 + 2800, T0, in_ckpt, "hung", LIM).stalled
    starting = prog(None)
    v = judge.judge(1, T0 + 1700, T0, starting, "hung", LIM)
    assert not v.stalled and "startup" in v.why
    assert judge.judge(1, T0 + 1900, T0, starting, "hung", LIM).stalled
    v = judge.judge(1, T0 + 3600 * 5, T0, prog(T0 + 60), "working", LIM)
    assert not v.stalled and "GPUs work" in v.why
    assert not judge.judge(1, T0 + 3600 * 5, T0, prog(T0 + 60), "unclear", LIM).stalled


def test_without_a_gpu_signal_the_margin_is_longer() -> None:
    p = prog(T0 + 100)
    assert not judge.judge(1, T0 + 100 + 1700, T0, p, "none", LIM).stalled             # 3 x 600
    v = judge.judge(1, T0 + 100 + 1900, T0, p, "none", LIM)
    assert v.stalled and v.allowed_s == 1800


def test_the_learned_quiet_time_is_capped_so_a_hang_is_not_learnt() -> None:
    lim = dataclasses.replace(LIM, max_learned=3600.0)
    v = judge.judge(1, T0 + 20000, T0, prog(T0 + 10000, gaps=[9000.0]), "hung", lim)
    assert v.allowed_s == 5400 and v.stalled


def write_cfg(tmp_path: Path, body: str = "") -> Any:
    f = tmp_path / "slurmtools.toml"
    f.write_text(f'[stalls]\nstate_file = "{tmp_path}/state.json"\nmin_quiet = "20m"\n' + body)
    return config.load(f, env={})


def test_limits_come_from_the_partition_then_the_comment_then_the_command_line(tmp_path: Path) -> None:
    cfg = write_cfg(tmp_path, '[stalls.partitions.debug]\nmin_quiet = "5m"\nmargin = 2.0\n'
                              '[stalls.partitions.quiet]\nenabled = false\n')
    assert judge.limits_for(cfg).min_quiet == 1200
    lim = judge.limits_for(cfg, "debug")
    assert (lim.min_quiet, lim.margin) == (300, 2.0)
    assert judge.limits_for(cfg, "debug", "exp-1 slurmtools=retry:2 slurmtools=stall:2h").min_quiet == 7200
    assert not judge.limits_for(cfg, "gpu", "slurmtools=stall:off").enabled
    assert not judge.limits_for(cfg, "quiet").enabled
    assert judge.limits_for(cfg, "debug", "slurmtools=stall:banana").min_quiet == 300    # a bad token: ignored
    assert judge.limits_for(cfg, "debug", "slurmtools=stall:1s").min_quiet == 60         # at least a minute
    assert judge.limits_for(cfg, "debug", "slurmtools=stall:2h", quiet_override=90.0).min_quiet == 90
    off = judge.judge(1, T0 + 99999, T0, prog(T0), "hung", judge.limits_for(cfg, "quiet"))
    assert not off.stalled and "off" in off.why


def test_a_bad_stalls_value_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("[stalls]\nmargin = 0.5\n")
    with pytest.raises(config.ConfigError, match=r"stalls\.margin"):
        config.load(f, env={})
    f.write_text("[stalls.partitions.x]\nbogus = 1\n")
    with pytest.raises(config.ConfigError, match="unknown key"):
        config.load(f, env={})


# ---------------------------------------------------------------- blame

def test_the_node_idle_among_spinning_peers_is_the_suspect() -> None:
    assert blame.blame(["n1", "n2", "n3"], {"n1": "spin", "n2": "idle", "n3": "spin"}, {}, {})[0] == "n2"
    assert blame.blame(["n1", "n2"], {"n1": "spin", "n2": "idle"}, {}, {})[0] == "n2"
    assert blame.blame(["n1", "n2", "n3"], {"n1": "spin", "n2": "spin", "n3": "spin"}, {}, {})[0] is None
    assert blame.blame(["n1", "n2", "n3"], {"n1": "idle", "n2": "idle", "n3": "spin"}, {}, {})[0] is None


def test_d_state_and_kernel_findings_name_the_node_that_alone_has_them() -> None:
    classes = {n: "spin" for n in ("n1", "n2", "n3")}
    sus, named = blame.blame(["n1", "n2", "n3"], classes, {"n1": 0, "n2": 0, "n3": 3}, {"n1": 0, "n2": 0, "n3": 0})
    assert sus == "n3" and named == {"n3": ["dstate"]}
    sus, named = blame.blame(["n1", "n2", "n3"], {"n1": "spin", "n2": "idle", "n3": "spin"},
                             {"n1": 0, "n2": 0, "n3": 2}, {"n1": 0, "n2": 1, "n3": 0})
    assert sus == "n2" and named == {"n2": ["gpu", "kernel"], "n3": ["dstate"]}     # most kinds of evidence
    sus, _ = blame.blame(["n1", "n2", "n3"], classes, {"n1": 1, "n2": 0, "n3": 0}, {"n1": 0, "n2": 1, "n3": 0})
    assert sus is None                                                       # a tie: nobody
    assert blame.blame(["n1", "n2"], classes, {"n1": 2, "n2": 2}, {})[0] is None


# ---------------------------------------------------------------- progress from the files

def test_progress_reads_times_not_text_and_learns_gaps_between_scans(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    lines = [f"{datetime.fromtimestamp(T0 + t).strftime('%Y-%m-%d %H:%M:%S')} step {i}" for i, t in
             enumerate([0, 10, 20, 740, 750])]
    out.write_text("\n".join(lines) + "\n")
    os.utime(out, (T0 + 750, T0 + 750))
    p, kept = progress.observe([str(out)], os.getuid(), T0 - 5, None, 1 << 20)
    assert p.last_progress == T0 + 750 and max(p.gaps) == pytest.approx(720)
    assert (kept["mtime"], kept["size"], kept["gaps"]) == (T0 + 750, out.stat().st_size, [])
    assert kept["files"][str(out)]["offset"] == out.stat().st_size and kept["newest_line"] == T0 + 750
    with out.open("a") as fh:
        fh.write("no timestamp here\n")
    os.utime(out, (T0 + 2000, T0 + 2000))
    p, kept = progress.observe([str(out)], os.getuid(), T0 - 5, kept, 1 << 20)
    assert p.last_progress == T0 + 2000 and kept["gaps"] == [1250.0]
    assert p.learned_quiet(3600) == 1250.0 and max(kept["line_gaps"]) == pytest.approx(720)   # learnt, not re-read
    with out.open("a") as fh:                  # only the new lines are read: the gap to the newest line kept
        fh.write(f"{datetime.fromtimestamp(T0 + 2900).strftime('%Y-%m-%d %H:%M:%S')} step 6\npartial")
    p, kept = progress.observe([str(out)], os.getuid(), T0 - 5, kept, 1 << 20)
    assert max(kept["line_gaps"]) == pytest.approx(2150) and kept["newest_line"] == T0 + 2900
    assert kept["files"][str(out)]["offset"] == out.stat().st_size - len("partial")   # a line being written waits
    # not the job's user's file, or a link: not read at all
    assert progress.observe([str(out)], os.getuid() + 1, T0, None, 1 << 20)[0].files == []
    link = tmp_path / "link.out"
    link.symlink_to(out)
    assert progress.observe([str(link)], os.getuid(), T0, None, 1 << 20)[0].files == []


def test_checkpoint_lines_give_durations_and_an_open_checkpoint() -> None:
    lines = ["[2026-01-01 10:00:00,000] [INFO] [engine.py:3] [Torch] Checkpoint global_step500 is about to be "
             "saved!",
             "[2026-01-01 10:00:40,000] [INFO] [engine.py:3] [Torch] Checkpoint global_step500 is ready now!"]
    done, open_since = progress.checkpoints(lines, None)
    assert done == [40.0] and open_since is None
    more = [*lines, "[2026-01-01 11:00:00,000] [INFO] [engine.py:3] [Torch] Checkpoint global_step900 is about "
                    "to be saved!"]
    done, open_since = progress.checkpoints(more, None)
    assert done == [40.0] and open_since == time.mktime((2026, 1, 1, 11, 0, 0, 0, 0, -1))


def test_output_paths_follow_slurm_s_naming() -> None:
    job = JobInfo(42, name="train", user="ann", work_dir="/home/ann/run", stdout="logs/%x-%j.out",
                  stderr="/scratch/%u/%j.err")
    assert scan.output_paths(job) == ["/home/ann/run/logs/train-42.out", "/scratch/ann/42.err"]
    assert scan.output_paths(JobInfo(7, work_dir="/w")) == ["/w/slurm-7.out"]
    assert scan.output_paths(JobInfo(7, work_dir="/w", stdout="/o/%N.out")) == []     # one file per node


# ---------------------------------------------------------------- the GPU signal: sampler -> textfile -> samples

def test_the_sampler_s_textfile_is_what_the_detector_reads(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir(mode=0o755)
    replay = tmp_path / "n1.gpu.json"
    replay.write_text(json.dumps({"mode": "spin", "gpus": 2}))
    cfg = write_cfg(tmp_path, f'gpu_source = "textfile"\ngpu_replay = "{tmp_path}/{{node}}.gpu.json"\n'
                              f'[metrics]\ntextfile_dir = "{tmp_path}/{{node}}"\n')
    path = sampler.sample_once(cfg, "n1")
    assert path == str(tmp_path / "n1" / signals.FILENAME)
    got, warn = signals.gpu_samples(cfg, ["n1", "n2"])
    assert warn is None and list(got) == ["n1"]
    assert [(s.gpu, s.util, s.power_w, s.power_limit_w) for s in got["n1"]] == [("0", 100.0, 140.0, 700.0),
                                                                               ("1", 100.0, 140.0, 700.0)]
    assert gpu.node_signature(got["n1"], TH)["class"] == "spin"
    assert signals.from_textfiles(cfg, ["n1"], now=time.time() + 3600) == {}        # stale: says nothing
    replay.unlink()                                                                 # the lab's gpu-clear
    assert sampler.sample_once(cfg, "n1") is None and signals.gpu_samples(cfg, ["n1"])[0] == {}
    replay.write_text('{"mode": "dancing", "gpus": 2}')
    with pytest.raises(ValueError, match="needs mode"):
        sampler.sample_once(cfg, "n1")


def test_gpus_of_another_job_are_left_out() -> None:
    rows = {"n1": [GpuSample("n1", "0", 100, 140, job="5"), GpuSample("n1", "1", 100, 600, job="6")],
            "n2": [GpuSample("n2", "0", 0, 70)]}
    mine = signals.for_job(rows, 5, ["n1", "n2"])
    assert [s.gpu for s in mine["n1"]] == ["0"] and len(mine["n2"]) == 1


class FakeProm:
    """The Prometheus client's range(): DCGM series for n1 (with the job mapping), our sampler's for n2."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def range(self, query: str, grid: Any) -> list[Any]:
        import numpy as np

        from slurmtools.detect.prom import Series

        self.asked.append(query)
        table = {"DCGM_FI_DEV_GPU_UTIL": [({"Hostname": "n1", "gpu": "0", "hpc_job": "9"}, 100.0)],
                 "DCGM_FI_DEV_POWER_USAGE": [({"Hostname": "n1", "gpu": "0", "hpc_job": "9"}, 150.0)],
                 signals.UTIL: [({"instance": "n2:9100", "gpu": "0"}, 0.0), ({"instance": "n1:9100", "gpu": "0"},
                                                                              100.0)],
                 signals.POWER: [({"instance": "n2:9100", "gpu": "0"}, 60.0)]}
        return [Series(lab, np.full(grid.n, v)) for lab, v in table.get(query, [])]


def test_dcgm_first_then_our_sampler_from_prometheus(tmp_path: Path) -> None:
    cfg = write_cfg(tmp_path)
    fake = FakeProm()
    got, warn = signals.gpu_samples(cfg, ["n1", "n2"], client=fake)
    assert warn is None
    assert [(s.source, s.util, s.power_w, s.job) for s in got["n1"]] == [("dcgm", 100.0, 150.0, "9")]
    assert [(s.source, s.util, s.power_w) for s in got["n2"]] == [("sampler", 0.0, 60.0)]


# ---------------------------------------------------------------- one scan over running jobs

def running(slurm: Any, job_id: int, nodes: tuple[str, ...], out: Path, start: float, **kw: Any) -> None:
    slurm.jobs_by_id[job_id] = JobInfo(job_id, user=getpass.getuser(), state="RUNNING", nodes=nodes,
                                       stdout=str(out), work_dir=str(out.parent),
                                       start_time=datetime.fromtimestamp(start, UTC), **kw)


def gpu_files(tmp_path: Path, modes: dict[str, str]) -> None:
    for node, mode in modes.items():
        (tmp_path / f"{node}.gpu.json").write_text(json.dumps({"mode": mode, "gpus": 2}))


def test_scan_finds_the_stalled_job_names_the_stopped_node_and_leaves_the_others(tmp_path: Path,
                                                                                 world: dict[str, Any]) -> None:
    from .fakes import FakeSlurm

    slurm = FakeSlurm()
    now = time.time()
    for n in ("n1", "n2", "n3", "n4"):
        (tmp_path / n).mkdir(mode=0o755)
    cfg = write_cfg(tmp_path, f'gpu_source = "textfile"\ngpu_replay = "{tmp_path}/{{node}}.gpu.json"\n'
                              'probe_command = ["false"]\nprobe_timeout = 5.0\n'
                              f'[metrics]\ntextfile_dir = "{tmp_path}/{{node}}"\n')
    hung, busy, quiet = tmp_path / "hung.out", tmp_path / "busy.out", tmp_path / "new.out"
    for f, age in ((hung, 300), (busy, 3000)):
        f.write_text("step 1\n")
        os.utime(f, (now - age, now - age))
    running(slurm, 11, ("n1", "n2", "n3"), hung, now - 3600)
    running(slurm, 12, ("n4",), busy, now - 7200)
    running(slurm, 13, ("n4",), quiet, now - 60)                  # at its start: no output yet
    quiet.write_text("")
    os.utime(quiet, (now - 3600, now - 3600))
    gpu_files(tmp_path, {"n1": "spin", "n2": "idle", "n3": "spin", "n4": "busy"})
    for n in ("n1", "n2", "n3", "n4"):
        sampler.sample_once(cfg, n)
    res, warnings = scan.run_scan(cfg, slurm, quiet=90.0, now=now, use_ledger=False)
    by = {r["job_id"]: r for r in res}
    assert warnings == []
    assert by[11]["stalled"] and by[11]["suspect"] == "n2" and by[11]["quiet_s"] == pytest.approx(300, abs=1)
    assert by[11]["evidence"]["blame"] == {"n2": ["gpu"]} and by[11]["evidence"]["gpu"]["verdict"] == "hung"
    assert set(by[11]["evidence"]["nodes"]) == {"n1", "n2", "n3"}               # every node probed (here: errors)
    assert not by[12]["stalled"] and by[12]["gpu"] == "working"
    assert not by[13]["stalled"] and "startup" in by[13]["evidence"]["why"]
    state = json.loads((tmp_path / "state.json").read_text())
    assert set(state) == {"11.0", "12.0", "13.0"}


def test_scan_cli_json_contract_and_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from slurmtools.cli import main

    from .fakes import FakeSlurm

    slurm = FakeSlurm()
    now = time.time()
    out = tmp_path / "job.out"
    out.write_text("x\n")
    os.utime(out, (now - 1000, now - 1000))
    running(slurm, 21, ("n1",), out, now - 5000)
    f = tmp_path / "slurmtools.toml"
    f.write_text(f'[stalls]\nstate_file = "{tmp_path}/state.json"\ngpu_source = "none"\n'
                 f'[ledger]\nurl = "sqlite:///{tmp_path}/l.db"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(f))
    monkeypatch.setattr("slurmtools.slurm.get_client", lambda cfg: slurm)
    config.reset()
    r = CliRunner().invoke(main, ["stalls", "scan", "--quiet", "90s", "--json", "--no-evidence"])
    (obj,) = json.loads(r.output)
    assert r.exit_code == 1 and obj["stalled"] and obj["suspect"] is None      # no GPU signal: 3 x 90 s
    assert {"job_id", "stalled", "suspect", "quiet_s", "evidence"} <= set(obj)
    r = CliRunner().invoke(main, ["stalls", "scan", "--quiet", "10m", "--json", "--no-evidence"])
    assert r.exit_code == 0 and not json.loads(r.output)[0]["stalled"]
    r = CliRunner().invoke(main, ["stalls", "scan", "--quiet", "soon"])
    assert r.exit_code == 2 and "Traceback" not in r.output


# ---------------------------------------------------------------- the lab's fake GPU signal

def test_lab_gpu_faults_set_what_the_sampler_reports(tmp_path: Path) -> None:
    from slurmtools.lab.faults import FAULTS

    class Node:
        gpus = 4
        root = tmp_path

    for n in ("n1", "n2"):
        (tmp_path / n).mkdir(mode=0o755)
    cfg = write_cfg(tmp_path, f'gpu_source = "textfile"\ngpu_replay = "{tmp_path}/faults/{{node}}.gpu.json"\n'
                              f'[metrics]\ntextfile_dir = "{tmp_path}/{{node}}"\n')
    for fault, node, expect in (("gpu-spin", "n1", "spin"), ("gpu-idle", "n2", "idle"), ("gpu-busy", "n2", "work")):
        out = FAULTS[fault](Node(), node)   # type: ignore[arg-type]
        assert out["gpu"] == fault[4:]
        sampler.sample_once(cfg, node)
        got = signals.gpu_samples(cfg, [node])[0][node]
        assert len(got) == 4 and gpu.node_signature(got, TH)["class"] == expect
    FAULTS["gpu-clear"](Node(), "n2")   # type: ignore[arg-type]
    sampler.sample_once(cfg, "n2")
    assert signals.gpu_samples(cfg, ["n1", "n2"])[0].keys() == {"n1"}


def test_the_lab_configuration_holds_a_valid_stalls_section(tmp_path: Path) -> None:
    import jinja2

    src = Path(__file__).resolve().parent.parent / "slurmtools" / "lab" / "templates" / "slurmtools.toml.j2"
    text = jinja2.Template(src.read_text()).render(cluster="lab", ledger_url="sqlite:////tmp/x.db", lab=str(tmp_path),
                                                   slurmtools="/usr/bin/slurmtools", snapshots=False, nodes=[])
    f = tmp_path / "lab.toml"
    f.write_text(text)
    cfg = config.load(f, env={})
    assert cfg.stalls.gpu_source == "textfile" and "{node}" in cfg.stalls.gpu_replay


def test_every_gpu_idle_is_weaker_than_spinning_and_the_limits_default_to_the_shipped_config(tmp_path: Path) -> None:
    idle = {"n1": [g("n1", 0, 0, 70)], "n2": [g("n2", 0, 0, 70)]}
    assert gpu.job_signature(idle, ["n1", "n2"], TH)["verdict"] == "idle"
    p = prog(T0 + 100)
    assert not judge.judge(1, T0 + 100 + 1100, T0, p, "idle", LIM).stalled                # 2 x 600
    assert judge.judge(1, T0 + 100 + 1300, T0, p, "idle", LIM).stalled
    assert judge.judge(1, T0 + 100 + 700, T0, p, "hung", LIM).stalled
    # the dataclass's defaults (the bench uses them) are data/defaults.toml's
    (tmp_path / "empty.toml").write_text("")
    assert judge.limits_for(config.load(tmp_path / "empty.toml", env={})) == judge.Limits()


def test_an_empty_output_file_is_no_progress(tmp_path: Path) -> None:
    out = tmp_path / "new.out"
    out.write_text("")
    p, _ = progress.observe([str(out)], os.getuid(), T0, None, 1 << 20)
    assert p.files and p.last_progress is None
    assert judge.judge(1, T0 + 600, T0, p, "idle", LIM).why.startswith("progressing: quiet 600s (startup)")


def test_the_probe_finds_this_job_s_processes_by_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from slurmtools.stalls import evidence

    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    child = __import__("subprocess").Popen(["sleep", "30"])
    try:
        for _ in range(200):          # until it has exec'd sleep (its environment is empty for a moment then)
            if (evidence.proc_info(child.pid) or {}).get("comm") == "sleep" \
                    and Path(f"/proc/{child.pid}/environ").read_bytes():
                break
            time.sleep(0.02)
        assert evidence.job_of(child.pid, "n7") == "4242" and evidence.job_of(child.pid, "n8") is None
        info = evidence.proc_info(child.pid)
        # a sleeping task reads S, or D where the kernel froze it in place (CI's 6.18 kernel showed this sleep as D
        # in hrtimer_nanosleep: a frozen task's state is reported as uninterruptible)
        assert info is not None and info["comm"] == "sleep" and info["state"] in "SRD" and info["ppid"] == os.getpid()
        assert child.pid in set(evidence.job_pids("4242", "n7"))
    finally:
        child.kill()
        child.wait()


def test_link_downs_on_one_node_name_it_from_prometheus(tmp_path: Path) -> None:
    import numpy as np

    from slurmtools.detect.prom import Series

    class Net:
        def range(self, query: str, grid: Any) -> list[Any]:
            if query.startswith("increase(node_infiniband_link_downed_total["):
                return [Series({"instance": "n2:9100", "device": "mlx5_0", "port": "1"}, np.full(grid.n, 3.0)),
                        Series({"instance": "n1:9100", "device": "mlx5_0", "port": "1"}, np.full(grid.n, 0.0))]
            return []

    cfg = write_cfg(tmp_path)
    net = signals.network_events(cfg, ["n1", "n2", "n3"], T0, T0 + 600, client=Net())
    assert net == {"n1": 0.0, "n2": 3.0, "n3": 0.0}
    spin = {n: "spin" for n in ("n1", "n2", "n3")}
    assert blame.blame(["n1", "n2", "n3"], spin, {}, {}, net) == ("n2", {"n2": ["network"]})
    assert signals.network_events(write_cfg(tmp_path, 'gpu_source = "textfile"\n'), ["n1"], T0) is None


def test_explain_and_one_service_pass_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.cli import main
    from slurmtools.ledger import api, models

    from .fakes import FakeSlurm

    slurm = FakeSlurm()
    now = time.time()
    out = tmp_path / "job.out"
    out.write_text("x\n")
    os.utime(out, (now - 1000, now - 1000))
    running(slurm, 21, ("n1",), out, now - 5000)
    f = tmp_path / "slurmtools.toml"
    f.write_text(f'[stalls]\nstate_file = "{tmp_path}/state.json"\ngpu_source = "none"\nprobe_command = ["false"]\n'
                 f'[ledger]\nurl = "sqlite:///{tmp_path}/l.db"\nspool_dir = "{tmp_path}/spool"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(f))
    monkeypatch.setattr("slurmtools.slurm.get_client", lambda cfg: slurm)
    config.reset()
    r = CliRunner().invoke(main, ["stalls", "explain", "21", "--quiet", "90s"])
    assert r.exit_code == 0 and "STALLED" in r.output and "n1" in r.output, r.output
    r = CliRunner().invoke(main, ["stalls", "explain", "99"])
    assert r.exit_code == 1 and "job 99 is not running" in r.output
    r = CliRunner().invoke(main, ["stalls", "run", "--once", "--quiet", "90s"])
    assert r.exit_code == 0 and "1 job(s), 1 stalled; job 21 observe" in r.output, r.output
    with Session(api.engine_for(config.get())) as s:
        (found,) = s.scalars(select(models.Finding).where(models.Finding.kind == "stall"))
    assert found.job_id == 21 and found.node is None and slurm.actions() == []


def test_an_open_checkpoint_ends_with_other_output_and_a_replaced_file_is_read_anew(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    begin = ("[2026-01-01 10:00:00,000] [INFO] [engine.py:3] [Torch] Checkpoint global_step5 is about to be "
             "saved!\n")
    out.write_text("2026-01-01 09:59:00 step 4\n" + begin)
    p, kept = progress.observe([str(out)], os.getuid(), None, None, 1 << 20)
    assert p.in_checkpoint_since is not None
    p, kept = progress.observe([str(out)], os.getuid(), None, kept, 1 << 20)          # nothing new: still in it
    assert p.in_checkpoint_since is not None
    with out.open("a") as fh:
        fh.write("2026-01-01 10:05:00 step 6\n")
    p, kept = progress.observe([str(out)], os.getuid(), None, kept, 1 << 20)
    assert p.in_checkpoint_since is None                                                 # training goes on
    out.write_text("2026-01-01 11:00:00 step 1\n")                                        # truncated (a new attempt)
    p, kept = progress.observe([str(out)], os.getuid(), None, kept, 1 << 20)
    assert kept["files"][str(out)]["offset"] == out.stat().st_size and kept["newest_line"] is not None


def test_kernel_findings_only_since_the_job_s_marker(tmp_path: Path) -> None:
    from slurmtools.diagnosis import sources
    from slurmtools.stalls import evidence

    log = tmp_path / "kern.log"
    log.write_text("[  10.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n")
    cfg = write_cfg(tmp_path, f'[nodes.n1]\nkernel_log = "file:{log}"\nstate_dir = "{tmp_path}/state"\n')
    (only,) = evidence.kernel_findings(cfg, "77", "n1")
    assert "no kernel-log marker" in only["error"]            # an old line is not this attempt's evidence
    sources.save_marker(str(tmp_path / "state"), "77", "n1", sources.mark(f"file:{log}"))
    assert evidence.kernel_findings(cfg, "77", "n1") == []
    with log.open("a") as fh:
        fh.write("[  20.000000] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python3, An uncorrectable double bit "
                 "error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n")
    (f,) = evidence.kernel_findings(cfg, "77", "n1")
    assert f["xid"] == 48
