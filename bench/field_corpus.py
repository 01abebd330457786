"""Score `slurmtools diagnose` on the field corpus, split by source into a rule-writing half and a test half.

    python bench/field_corpus.py [--half rules|test|both] [--markdown] [--field DIR ...] [--misses]

Loads every `tests/data/kernel/field/*.tsv` (columns: kind, xid, source, envelope, line; CORPUS.md) and
`tests/data/kernel/real_corpus.tsv` (kind, xid, source, line: all of it in the rules half, envelope
"real_corpus"). The split is by source, never by line: a row is in the "rules" half when
`int(sha256(source).hexdigest()[0], 16) % 2 == 0`, else in the "test" half. Rules are written and tuned only
from the rules half; the test half is scored, and only its aggregate figures are printed (`--misses` refuses
the test half).

Scoring is bench/corpus_score.py's: each line is diagnosed alone; a fault line is found when the most serious
finding has the expected kind (and XID, where one is given); a benign line (kind "-") is a false alarm when any
finding has severity warning or above. A missed fault line is also tried from every later start (after each
blank, `]`, `:`, `|` or `>`, the first 64): found there, the rules know the message and the miss is the envelope
parser's (column "rules, any start"); not found from any start, the miss is the rules'.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "kernel" / "real_corpus.tsv"
FIELD = ROOT / "tests" / "data" / "kernel" / "field"
SEVERE = {"warning", "error", "critical"}
HALVES = ("rules", "test")


@dataclass(frozen=True)
class Row:
    kind: str
    xid: str
    source: str
    envelope: str
    line: str
    file: str

    @property
    def half(self) -> str:
        return half_of(self.source, real=self.file == REAL.name)


def half_of(source: str, *, real: bool = False) -> str:
    """The half a source belongs to: all of real_corpus.tsv is in the rules half (rules were written from it)."""
    if real:
        return "rules"
    return "rules" if int(hashlib.sha256(source.encode()).hexdigest()[0], 16) % 2 == 0 else "test"


def load(field_dirs: list[Path] | None = None, real: Path | None = REAL) -> list[Row]:
    """Every row of the field corpus (all field/*.tsv in FIELD_DIRS) and of the real corpus, in file order."""
    out: list[Row] = []
    if real is not None and real.exists():
        for raw in real.read_text(encoding="utf-8").splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            kind, xid, source, line = raw.split("\t", 3)
            out.append(Row(kind, xid, source, "real_corpus", line, real.name))
    for folder in field_dirs if field_dirs is not None else [FIELD]:
        for path in sorted(folder.glob("*.tsv")):
            for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if raw.startswith("#") or not raw.strip():
                    continue
                parts = raw.split("\t", 4)
                if len(parts) != 5:
                    raise ValueError(f"{path}:{number}: expected 5 tab-separated columns, got {len(parts)}")
                kind, xid, source, envelope, line = parts
                out.append(Row(kind, xid, source, envelope, line, path.name))
    return out


def split(rows: list[Row]) -> dict[str, list[Row]]:
    halves: dict[str, list[Row]] = {h: [] for h in HALVES}
    for row in rows:
        halves[row.half].append(row)
    return halves


def unseen(halves: dict[str, list[Row]]) -> list[Row]:
    """The test half's rows whose line the rules half does not hold verbatim. Two pages can quote the same log line (a
    mail and its archive mirror, a forum post and the issue it copies, a message with no number in it), and a split by
    source puts such twins in both halves: a rule written from the rules half's copy reads the test half's. Their
    figure is the one that counts no line a rule was written from."""
    seen = {row.line for row in halves["rules"]}
    return [row for row in halves["test"] if row.line not in seen]


def unseen_score(halves: dict[str, list[Row]], test: dict[str, Any]) -> dict[str, Any]:
    """`score(unseen(halves))`'s counts, derived from TEST (`score(halves["test"])`) without diagnosing a line again:
    an unseen row's miss or false alarm is one whose line the rules half does not hold."""
    rows = unseen(halves)
    lines = {row.line for row in rows}
    faults = sum(row.kind != "-" for row in rows)
    found = faults - sum(m["line"] in lines for m in test["misses"])
    return {"rows": len(rows), "left_out": len(halves["test"]) - len(rows), "fault_lines": faults, "found": found,
            "recall": found / faults if faults else None, "benign_lines": len(rows) - faults,
            "false_alarms": sum(a["line"] in lines for a in test["alarms"])}


def judge(row: Row, text: str) -> tuple[bool, Any]:
    """(right, what the top finding was) for one line diagnosed alone."""
    from slurmtools.diagnosis import diagnose

    findings = diagnose(text.encode("utf-8", "replace"))
    if row.kind == "-":
        severe = [f for f in findings if f.severity in SEVERE]
        return not severe, [(f.kind, f.severity, f.details.get("rule")) for f in severe]
    top = findings[0] if findings else None
    ok = top is not None and top.kind == row.kind and (row.xid in ("-", "") or top.xid == int(row.xid))
    return ok, None if top is None else (top.kind, top.xid, top.details.get("rule"))


_STARTS = re.compile(r"[\s\]:|>]+")


def any_start(row: Row, tries: int = 64) -> bool:
    """Whether the rules find the row's kind from some later start of the line (an oracle envelope parser)."""
    for i, m in enumerate(_STARTS.finditer(row.line)):
        if i >= tries:
            break
        rest = row.line[m.end():]
        if rest and judge(row, rest)[0]:
            return True
    return False


def score(rows: list[Row]) -> dict[str, Any]:
    """Per kind and per envelope: fault lines found (whole line and message only), benign lines and false alarms."""
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    per_env: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])   # faults, found, msg found, benign, alarms
    misses: list[dict[str, Any]] = []
    alarms: list[dict[str, Any]] = []
    sources: set[str] = set()
    for row in rows:
        sources.add(row.source)
        ok, got = judge(row, row.line)
        ok_msg = ok or (row.kind != "-" and any_start(row))
        env = per_env[row.envelope]
        if row.kind == "-":
            env[3] += 1
            if not ok:
                env[4] += 1
                alarms.append({"line": row.line, "source": row.source, "envelope": row.envelope, "got": got})
            continue
        k = per_kind[row.kind]
        k[0] += 1
        k[1] += ok
        k[2] += ok_msg
        env[0] += 1
        env[1] += ok
        env[2] += ok_msg
        if not ok:
            misses.append({"kind": row.kind, "xid": row.xid, "envelope": row.envelope, "line": row.line,
                           "source": row.source, "got": got, "message_found": ok_msg})
    faults = sum(v[0] for v in per_kind.values())
    found = sum(v[1] for v in per_kind.values())
    found_msg = sum(v[2] for v in per_kind.values())
    return {"fault_lines": faults, "found": found, "recall": found / faults if faults else None,
            "found_message": found_msg, "recall_message": found_msg / faults if faults else None,
            "benign_lines": sum(v[3] for v in per_env.values()), "false_alarms": len(alarms),
            "sources": len(sources), "envelopes": len(per_env),
            "per_kind": {k: {"lines": v[0], "found": v[1], "found_message": v[2]} for k, v in sorted(per_kind.items())},
            "per_envelope": {e: {"lines": v[0], "found": v[1], "found_message": v[2], "benign": v[3],
                                 "false_alarms": v[4]} for e, v in sorted(per_env.items())},
            "misses": misses, "alarms": alarms}


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def markdown(half: str, result: dict[str, Any]) -> str:
    out = [f"**{half} half**: {result['fault_lines']} fault lines, {result['benign_lines']} benign lines, "
           f"{result['sources']} sources, {result['envelopes']} envelopes. Recall "
           f"{_pct(result['found'], result['fault_lines'])} (rules, any start: "
           f"{_pct(result['found_message'], result['fault_lines'])}); false alarms (warning or above): "
           f"{result['false_alarms']}.", "",
           "| kind | lines | found | recall | rules, any start |", "| --- | ---: | ---: | ---: | ---: |"]
    for kind, v in result["per_kind"].items():
        out.append(f"| `{kind}` | {v['lines']} | {v['found']} | {_pct(v['found'], v['lines'])} | "
                   f"{_pct(v['found_message'], v['lines'])} |")
    out += ["", "| envelope | fault lines | found | recall | rules, any start | benign | false alarms |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for env, v in result["per_envelope"].items():
        out.append(f"| {env} | {v['lines']} | {v['found']} | {_pct(v['found'], v['lines'])} | "
                   f"{_pct(v['found_message'], v['lines'])} | {v['benign']} | {v['false_alarms']} |")
    return "\n".join(out)


def provenance(halves: dict[str, list[Row]]) -> str:
    """When, at which commit, on which files: the line docs/diagnosis.md carries above the tables."""
    import datetime
    import subprocess

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        commit = "?"
    files = sorted({r.file for rows in halves.values() for r in rows})
    return (f"Generated by `python bench/field_corpus.py --markdown` on {datetime.date.today().isoformat()} at "
            f"commit {commit} (rules and rules' files), from {', '.join(files)}.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", choices=(*HALVES, "both"), default="both")
    ap.add_argument("--field", action="append", type=Path, help="a folder of field/*.tsv (default: the tree's)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--misses", action="store_true",
                    help="the rules half's misses and false alarms (never the test half)")
    args = ap.parse_args()
    halves = split(load(args.field))
    chosen = HALVES if args.half == "both" else (args.half,)
    if args.misses and "test" in chosen:
        ap.error("--misses is for the rules half only: the test half's lines are never read when writing rules")
    if args.markdown:
        print(provenance(halves) + "\n")
    for half in chosen:
        result = score(halves[half])
        if args.misses:
            for m in result["misses"] + result["alarms"]:
                print(json.dumps(m, ensure_ascii=False))
        if args.markdown:
            print(markdown(half, result) + "\n")
            if half == "test":
                res = unseen_score(halves, result)
                print(f"**test half, lines the rules half does not hold verbatim** (`unseen`): {res['fault_lines']} "
                      f"fault lines ({res['left_out']} test-half rows left out, faults and benign), "
                      f"{res['benign_lines']} benign lines. Recall {_pct(res['found'], res['fault_lines'])}; false "
                      f"alarms (warning or above): {res['false_alarms']}.\n")
        else:
            print(json.dumps({"half": half, **{k: v for k, v in result.items() if k not in ("misses", "alarms")}},
                             indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
