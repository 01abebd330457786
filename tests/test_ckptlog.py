"""Checkpoint events from the frameworks' own log lines (issue 17, part 3): real published log excerpts
(tests/data/checkpoint_logs/SOURCES.md) through the scanner, and a job's output through the real epilog."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from slurmtools import config
from slurmtools.hooks import epilog
from slurmtools.iostat import ckptlog
from tests.test_epilog import env, lab_like, spooled  # noqa: F401 - lab_like is a fixture

LOGS = Path(__file__).parent / "data" / "checkpoint_logs"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Naive log times are read in the node's zone: pin it so the expected epoch seconds hold anywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def scan(name: str, fs: dict[str, dict[str, float]] | None = None) -> list[dict[str, object]]:
    return ckptlog.scan((LOGS / name).read_text().splitlines(), fs or {})


def brief(events: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(e["framework"], e["kind"], e["step"], None if e["seconds"] is None else round(float(e["seconds"]), 3))
            for e in events]


def test_every_real_log_gives_its_checkpoints() -> None:
    """Expected from reading each excerpt by hand: one event per checkpoint, its duration where the lines give it."""
    expected = {
        "deepspeed_hf_trainer.log": [("deepspeed", "save", "global_step500", 0.384),
                                     ("deepspeed", "save", "global_step1000", 0.393)],
        "deepspeed_bert.log": [("deepspeed", "save", "global_step10", None)],     # the excerpt starts mid-save
        "megatron_gpt2.log": [("megatron", "save", "1", 21.027)],                  # the max of the timer pair
        "megatron_srun_label.log": [("megatron", "save", "1", 81.612)],
        "megatron_torch_dist.log": [("megatron", "save", "35", 109.333)],          # the last begin never ended
        "nemo2.log": [("nemo", "load", None, 9.712), ("nemo", "save", "50", 4.389), ("nemo", "save", "0", 13.567)],
        "torchtitan.log": [("torchtitan", "save", "644", 5.53)],
        "lightning.log": [("lightning", "save", "79", None), ("lightning", "save", "1848", None),
                          ("lightning", "save", "16000", None), ("lightning", "load", None, None)],
    }
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(expected)
    for name, want in expected.items():
        assert brief(scan(name)) == want, name


def test_times_paths_and_mounts() -> None:
    ds = scan("deepspeed_hf_trainer.log")
    # the HF Trainer's own 'Saving model checkpoint to' line is the same save as DeepSpeed's: not a second event
    assert [e["start"] for e in ds] == [pytest.approx(1729627888.103), pytest.approx(1729628264.598)]
    assert str(ds[1]["path"]).endswith("global_step1000/mp_rank_00_model_states.pt")
    nemo = scan("nemo2.log")
    assert nemo[2]["start"] == pytest.approx(1755612135.735) and nemo[2]["path"] == "nemo_llama_nemotron_model"
    tt = scan("torchtitan.log")[0]
    assert tt["end"] == pytest.approx(time.mktime((2025, 4, 1, 0, 25, 59, 0, 0, -1)) + 0.616)
    (mega,) = scan("megatron_srun_label.log", {"/fsx": {"write_gbps": 40.0}, "/": {"write_gbps": 1.0}})
    assert (mega["mountpoint"], mega["nominal_gbps"]) == ("/fsx", 40.0)


def test_lines_that_are_not_checkpoints_give_nothing() -> None:
    quiet = [
        "    Epoch 1, global step 49992: 'train_loss' was not in top 1",
        "[NeMo I 2025-08-19 14:02:36 nemo_logging:393] Async finalization time took 7.538 s",
        "[INFO|configuration_utils.py:673] 2024-10-22 20:17:44,385 >> loading configuration file /opt/m/config.json",
        "/usr/lib/python3/site-packages/torch/utils/checkpoint.py:295: FutureWarning: `torch.cpu.amp.autocast` ...",
        "    evaluate .......................................: (1795.46, 1795.46)",
        "echo saving checkpoint soon",
    ]
    assert ckptlog.scan(quiet, {}) == []


def test_deepspeed_loads_file_by_file_are_one_load() -> None:
    lines = [f"[2024-05-04 12:40:0{i},000] [INFO] [torch_checkpoint_engine.py:27:load] [Torch] {w} checkpoint from "
             f"/ckpt/global_step500/{f}{'...' if w == 'Loading' else '.'}"
             for i, (w, f) in enumerate([("Loading", "a.pt"), ("Loaded", "a.pt"), ("Loading", "b.pt"),
                                         ("Loaded", "b.pt")])]
    (load,) = ckptlog.scan(lines, {})
    assert (load["kind"], load["seconds"], load["files"]) == ("load", pytest.approx(3.0), 2)


def test_bad_pattern_names_the_entry() -> None:
    with pytest.raises(ckptlog.PatternError, match=r"pattern 1 .*not a pattern the linear-time engine"):
        ckptlog.parse_patterns([{"framework": "x", "kind": "save", "mark": "begin", "regex": "("}])
    for backtracking in ("(?<!done )saving", "(?P<q>['\"])x(?P=q)", "(a)\\1", "(?=x)y"):   # RE2 has none of these
        with pytest.raises(ckptlog.PatternError, match=r"pattern 1 .*RE2"):
            ckptlog.parse_patterns([{"framework": "x", "kind": "save", "mark": "begin", "regex": backtracking}])
    with pytest.raises(ckptlog.PatternError, match="mark in"):
        ckptlog.parse_patterns([{"framework": "x", "kind": "save", "mark": "later", "regex": "x"}])


def test_the_epilog_records_the_frameworks_checkpoints(lab_like: dict[str, Path]) -> None:  # noqa: F811
    """Through the real epilog: the job's output on its first node -> 'checkpoint' events with their source; a
    dated event from before this attempt's prolog (an earlier attempt appending to the file) is left out."""
    from slurmtools.diagnosis import sources

    out = lab_like["root"] / "job.out"
    out.write_text((LOGS / "torchtitan.log").read_text() + (LOGS / "megatron_gpt2.log").read_text())
    cfg = config.load(lab_like["cfg"], env={})
    e = env(exit_raw=0, SLURM_JOB_STDOUT=str(out))
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
    assert epilog.run(e, cfg) == 0
    ckpts = [ev for ev in spooled(lab_like) if ev["type"] == "checkpoint"]
    # torchtitan's save is dated 2025-04-01, long before this attempt's prolog: not this attempt's
    assert [(c["source"], c["kind"], round(c["seconds"], 2)) for c in ckpts] == [("megatron", "save", 21.03)]
    assert ckpts[0]["details"]["step"] == "1" and ckpts[0]["details"]["timed"] is False
    assert ckpts[0]["nbytes"] is None and ckpts[0]["node"] == "n1"
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    api.flush(cfg)
    assert epilog.run(e, cfg) == 0          # the same output read again (a re-run epilog): no second event
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        (row,) = s.scalars(select(models.CheckpointEvent)).all()
    assert (row.source, row.kind, row.job_id, row.seconds) == ("megatron", "save", 42, pytest.approx(21.02708))
