"""`slurmtools sbatch`: the command line sbatch gets (argv lists only; tests/integration/test_sbatch_lab.py
submits for real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmtools.jobs import sbatch
from slurmtools.jobs.marker import RetryAsk

# What 22.05's `sbatch --help` yields (value_options parses the installed one at run time).
OPTS = (frozenset("aAbcCdDeFGiJLmMnNopqStwx"), frozenset({
    "exclude", "nodelist", "comment", "open-mode", "signal", "output", "nodes", "gres", "wrap", "chdir", "time",
    "partition", "job-name"}))
ASK = RetryAsk(3, "node")
HOSTILE = ["a b", "it's", '"q"', "$(touch /tmp/pwned)", "x;rm -rf /", "line1\nline2", "--max-retries", "9"]


def build(argv: list[str], excluded: list[str] = [], **kw: object) -> sbatch.Plan:  # noqa: B006
    return sbatch.build(argv, ask=kw.pop("ask", ASK), excluded=excluded, ckpt_signal=kw.pop("sig", None),  # type: ignore[arg-type]
                        ckpt_grace=kw.pop("grace", None), value_opts=OPTS)  # type: ignore[arg-type]


def test_script_arguments_pass_byte_for_byte(tmp_path: Path) -> None:
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    plan = build(["-N", "2", str(script), *HOSTILE])
    assert plan.argv[-len(HOSTILE) - 1:] == [str(script), *HOSTILE]
    assert plan.argv[:3] == ["sbatch", "-N", "2"]
    assert plan.added == ["--requeue", "--open-mode=append", "--comment=slurmtools=retry:3:node"]


def test_our_options_only_before_the_script() -> None:
    ours, rest = sbatch.take_ours(["--max-retries", "5", "-N", "2", "--retry-on=any", "job.sh", "--max-retries", "7"],
                                  *OPTS)
    assert ours == {"max-retries": "5", "retry-on": "any"}
    assert rest == ["-N", "2", "job.sh", "--max-retries", "7"]


def test_user_exclude_is_merged_not_replaced() -> None:
    plan = build(["-x", "n1", "--wrap", "true"], excluded=["n3"])
    assert "-x" not in plan.argv and "--exclude=n[1,3]" in plan.added
    assert plan.exclude == ["n1", "n3"]
    untouched = build(["--exclude=n1", "--wrap", "true"])
    assert "--exclude=n1" in untouched.argv and not any(a.startswith("--exclude") for a in untouched.added)


def test_no_exclusions_adds_no_exclude() -> None:
    plan = build(["--wrap", "true"])
    assert not any(a.startswith("--exclude") for a in plan.argv)


def test_users_choices_win(tmp_path: Path) -> None:
    plan = build(["--no-requeue", "--open-mode=truncate", "--comment", "exp 7", "--wrap", "true"])
    assert "--requeue" not in plan.added and "--open-mode=append" not in plan.added
    assert plan.added == ["--comment=exp 7 slurmtools=retry:3:node"]
    assert "--comment" not in plan.argv                           # the user's one is merged into ours


def test_script_directives_count_as_the_users(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --comment='run 4' --open-mode=truncate\n#SBATCH -x n2\necho\n"
                      "#SBATCH --requeue\n")
    plan = build([str(script)], excluded=["n4"])
    assert plan.added == ["--exclude=n[2,4]", "--requeue", "--comment=run 4 slurmtools=retry:3:node"]


def test_opt_out_comment_adds_no_marker() -> None:
    plan = build(["--comment=slurmtools=off", "--wrap", "true"])
    assert not any(a.startswith("--comment") for a in plan.added)


def test_checkpoint_signal() -> None:
    assert build(["--wrap", "true"], sig="USR1", grace=30).added[-1] == "--signal=B:USR1@30"
    with pytest.raises(sbatch.WrapperError, match="both set"):
        build(["--signal=B:USR2@60", "--wrap", "true"], sig="USR1", grace=30)


def test_bad_user_exclude_is_a_clear_error() -> None:
    with pytest.raises(sbatch.WrapperError, match="not a valid hostlist"):
        build(["-x", "n[1-", "--wrap", "true"], excluded=["n3"])


def test_active_exclusions_skip_expired_and_survive_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   world: dict[str, object]) -> None:
    import json
    import time

    cfg = world["cfg"]
    rows = [{"node": "n1", "expires_epoch": None}, {"node": "n2", "expires_epoch": time.time() - 5},
            {"node": "n3", "expires_epoch": time.time() + 600}]
    (tmp_path / "x.json").write_text(json.dumps({"generated_epoch": time.time() - 100_000, "exclusions": rows}))

    cfg.exclusions.data_file = str(tmp_path / "x.json")  # type: ignore[attr-defined]
    assert sbatch.active_exclusions(cfg) == []          # older than exclusions.max_age (a day)
    assert "are stale (written 100000s ago)" in capsys.readouterr().err
    (tmp_path / "x.json").write_text(json.dumps({"generated_epoch": time.time() - 10, "exclusions": rows}))
    assert sbatch.active_exclusions(cfg) == ["n1", "n3"]
    (tmp_path / "x.json").write_text("{not json")
    assert sbatch.active_exclusions(cfg) == []
    assert "cannot read the exclusions" in capsys.readouterr().err
    (tmp_path / "x.json").unlink()                      # never published yet (a new site): the normal empty state
    assert sbatch.active_exclusions(cfg) == []
    assert capsys.readouterr().err == ""


def test_checkpoint_advice_line_and_export(tmp_path: Path, world: dict[str, object]) -> None:
    """Jobs of >= advise.sbatch_min_nodes (8) get one line from the published summary; `export` puts the interval
    into the job's environment; `off`, small jobs, a missing file give nothing; a bad file gives one line."""
    import json

    from slurmtools.reports import model

    cfg = world["cfg"]
    summary = tmp_path / "advice.json"
    # one interruption every 6 h on 512 GPUs = 512 x 6 h GPU-seconds per interruption; 5-minute saves, 10-min restarts
    summary.write_text(json.dumps({"gpu_seconds_per_interruption": 512 * 6 * 3600.0, "checkpoint_cost_s": 300.0,
                                   "restart_cost_s": 600.0, "mtti_from": "test", "mtti_n": 12}))
    cfg.advise.data_file, cfg.advise.sbatch = str(summary), "print"  # type: ignore[attr-defined]

    line, env = sbatch.checkpoint_advice(cfg, build(["-N", "64", "--gpus-per-node=8", "x.sh"]), None)
    assert line is not None and env == {}
    tau = model.best(300.0, 600.0, 6 * 3600.0)
    assert "checkpoint every 56m" in line and f"{model.goodput(tau, 300, 600, 6 * 3600) * 100:.1f}%" in line
    line, env = sbatch.checkpoint_advice(cfg, build(["--nodes=64-128", "x.sh"]), "export")
    assert env == {"SLURMTOOLS_CHECKPOINT_INTERVAL": str(round(tau))} and line
    line, env = sbatch.checkpoint_advice(cfg, build(["-N", "64", "--export=NONE", "x.sh"]), "export")
    assert env == {} and line is not None and "not exported" in line
    assert sbatch.checkpoint_advice(cfg, build(["-N", "4", "x.sh"]), None) == (None, {})      # below 8 nodes
    assert sbatch.checkpoint_advice(cfg, build(["-N", "64", "x.sh"]), "off") == (None, {})
    cfg.advise.sbatch = "off"  # type: ignore[attr-defined]
    assert sbatch.checkpoint_advice(cfg, build(["-N", "64", "x.sh"]), None) == (None, {})
    with pytest.raises(sbatch.WrapperError, match="--advice must be one of"):
        sbatch.checkpoint_advice(cfg, build(["-N", "64", "x.sh"]), "loud")
    cfg.advise.sbatch = "print"  # type: ignore[attr-defined]
    summary.write_text("{not json")
    line, env = sbatch.checkpoint_advice(cfg, build(["-N", "64", "x.sh"]), None)
    assert line is not None and line.startswith("slurmtools sbatch: no checkpoint advice (") and env == {}
    summary.unlink()
    assert sbatch.checkpoint_advice(cfg, build(["-N", "64", "x.sh"]), None) == (None, {})
    script = tmp_path / "job.sh"       # the size from the script's own #SBATCH lines
    script.write_text("#!/bin/sh\n#SBATCH --nodes=16\necho\n")
    assert build([str(script)]).size["nodes"] == "16"
