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

    class C:
        def get(self, key: str) -> object:
            return str(tmp_path / "x.json") if key == "exclusions.data_file" else cfg.get(key)  # type: ignore[attr-defined]

    assert sbatch.active_exclusions(C()) == []          # older than exclusions.max_age (a day)
    assert "are stale (written 100000s ago)" in capsys.readouterr().err
    (tmp_path / "x.json").write_text(json.dumps({"generated_epoch": time.time() - 10, "exclusions": rows}))
    assert sbatch.active_exclusions(C()) == ["n1", "n3"]
    (tmp_path / "x.json").write_text("{not json")
    assert sbatch.active_exclusions(C()) == []
    assert "cannot read the exclusions" in capsys.readouterr().err
    (tmp_path / "x.json").unlink()                      # never published yet (a new site): the normal empty state
    assert sbatch.active_exclusions(C()) == []
    assert capsys.readouterr().err == ""
