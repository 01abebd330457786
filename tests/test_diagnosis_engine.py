"""The diagnosis engine: every rule pattern runs on RE2 (linear time; a pattern RE2 cannot take is refused with
the rule's name), lines are cut to MAX_LINE before matching, the hostile shapes of job output complete with every
line scanned and every finding kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools.cli import main
from slurmtools.diagnosis import diagnose, joblog, kernel, rules
from slurmtools.diagnosis.lines import MAX_LINE

SITE = {"name": "site_gpfs", "kind": "nfs", "category": "filesystem", "action": "investigate",
        "severity": "error", "literals": ["mmfs:"], "pattern": r"^mmfs: .*(?:Lost membership|Unmounting)",
        "examples": ["mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems."]}


def test_every_packaged_pattern_is_compiled_by_re2() -> None:
    import re2

    for rule in rules.RuleSet.build(rules.merge(None)).rules:   # check=True: compiled and run on the examples
        assert isinstance(rule.pattern, re2._Regexp), rule.name


@pytest.mark.parametrize("pattern, why", [
    (r"^mmfs: (?!ok).*Unmounting", "cannot run in linear time"),        # lookahead
    (r"^mmfs: (?<=: )\[E\].*Unmounting", "cannot run in linear time"),  # lookbehind
    (r"^mmfs: (\[E\]) \1.*Unmounting", "cannot run in linear time"),    # backreference
    (r"^mmfs: (unclosed", "is not a valid regular expression"),
])
def test_a_site_rule_re2_cannot_take_is_refused_by_config_check(tmp_path: Path, pattern: str, why: str) -> None:
    with pytest.raises(rules.RuleError, match=f"rule 'site_gpfs': pattern {why}"):
        rules.validate([{**SITE, "pattern": pattern}])
    path = tmp_path / "site.toml"
    path.write_text("[[diagnosis.rules]]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                                      for k, v in {**SITE, "pattern": pattern}.items()))
    result = CliRunner().invoke(main, ["config", "check", str(path)])
    assert result.exit_code == 1 and "site_gpfs" in result.output and why in result.output
    assert "Traceback" not in result.output


def test_a_site_rule_in_re2_syntax_is_taken() -> None:
    rs = rules.ruleset([SITE])
    found = diagnose(b"[ 1.0] mmfs: [E] Lost membership in cluster gpfs01. Unmounting file systems.\n",
                     rules=[SITE])
    assert rs.rules[0].name == "site_gpfs" and [f.kind for f in found] == ["nfs"]


# The hostile job output of issue 30 F3: `NCCL WARN NCCL WARN ...` (a Python pattern backtracked ~27 ms a line
# on it and the epilog's budget expired, dropping every finding of the window).
NCCL = "NCCL WARN " * (MAX_LINE // 10 + 1)


@pytest.mark.parametrize("lines", [
    [NCCL[:4096]],                                      # 4 KiB: one line
    [NCCL[:4096]] * 1024,                               # 4 MiB: 1,024 lines of 4 KiB
    ["NCCL WARN " * (400 << 10)],                       # 4 MiB: one line, cut to MAX_LINE
    ["x" * MAX_LINE + " NCCL WARN"] * 1024,             # the literal past the cut
], ids=["4KiB", "4MiB-lines", "4MiB-one-line", "literal-last"])
def test_hostile_job_output_is_scanned_whole(lines: list[str]) -> None:
    found = joblog.scan(lines)
    if lines[0].startswith("x"):
        assert found == []                              # cut at MAX_LINE: the literal is past the cut
        return
    assert [f.line for f in found] == list(range(1, len(lines) + 1))      # every line scanned, every finding kept
    assert all(f.kind == "nccl" and f.trust == "job" and len(f.message) <= MAX_LINE for f in found)
    folded = [f for f in diagnose(b"", job_lines=lines) if f.kind == "nccl"]
    assert sum(f.count for f in folded) == len(lines)


def test_a_kernel_line_is_cut_before_matching() -> None:
    """A message longer than MAX_LINE is cut in every path (the `[ stamp]` fast path included): a literal past the
    cut is not seen, a fault before it is."""
    late = b"[ 1.000000] " + b"y" * MAX_LINE + b" NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, fallen off\n"
    early = b"[ 2.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus." + b"z" * (1 << 20)
    assert diagnose(late) == []
    found = diagnose(early + b"\n")
    assert [f.xid for f in found] == [79] and len(found[0].message) <= MAX_LINE
    assert all(len(kernel.normalise(x.decode()).message) <= MAX_LINE for x in (late, early))
