"""Score `slurmtools diagnose` on a corpus of real log lines: per-kind recall, exact XID, false alarms.

    python bench/corpus_score.py [tests/data/kernel/real_corpus.tsv] [--markdown] [--misses]

Each line is diagnosed alone, as `slurmtools diagnose --kernel-log -` would see it. A fault line is found when
the most serious finding has the expected kind (and the expected XID, where one is given); a benign line
(kind "-") is a false alarm when any finding has severity warning or above.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from slurmtools.diagnosis import diagnose

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "data" / "kernel" / "real_corpus.tsv"
SEVERE = {"warning", "error", "critical"}


def rows(path: Path = DEFAULT) -> list[tuple[str, str, str, str]]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        kind, xid, source, line = raw.split("\t", 3)
        out.append((kind, xid, source, line))
    return out


def score(path: Path = DEFAULT) -> dict[str, Any]:
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    xid_total = xid_exact = 0
    misses: list[dict[str, Any]] = []
    alarms: list[dict[str, Any]] = []
    sources: set[str] = set()
    benign = 0
    for kind, xid, source, line in rows(path):
        sources.add(source)
        findings = diagnose(line.encode())
        if kind == "-":
            benign += 1
            severe = [f for f in findings if f.severity in SEVERE]
            if severe:
                alarms.append({"line": line, "source": source,
                               "got": [(f.kind, f.severity, f.details.get("rule")) for f in severe]})
            continue
        top = findings[0] if findings else None
        ok = top is not None and top.kind == kind and (xid == "-" or top.xid == int(xid))
        per_kind[kind][1] += 1
        per_kind[kind][0] += ok
        if xid != "-":
            xid_total += 1
            xid_exact += top is not None and top.xid == int(xid)
        if not ok:
            misses.append({"kind": kind, "xid": xid, "line": line, "source": source,
                           "got": None if top is None else (top.kind, top.xid, top.details.get("rule"))})
    found = sum(v[0] for v in per_kind.values())
    total = sum(v[1] for v in per_kind.values())
    return {"fault_lines": total, "found": found, "recall": found / total if total else None,
            "per_kind": {k: {"found": v[0], "lines": v[1], "recall": v[0] / v[1]} for k, v in sorted(per_kind.items())},
            "xid_lines": xid_total, "xid_exact": xid_exact, "benign_lines": benign, "false_alarms": alarms,
            "misses": misses, "sources": len(sources)}


def markdown(result: dict[str, Any]) -> str:
    lines = ["| kind | lines | found | recall |", "| --- | ---: | ---: | ---: |"]
    for kind, v in result["per_kind"].items():
        lines.append(f"| `{kind}` | {v['lines']} | {v['found']} | {v['recall']:.1%} |")
    lines.append(f"| **all** | {result['fault_lines']} | {result['found']} | {result['recall']:.1%} |")
    lines.append("")
    lines.append(f"Exact XID: {result['xid_exact']} of {result['xid_lines']}. Benign lines: {result['benign_lines']}, "
                 f"false alarms (warning or above): {len(result['false_alarms'])}. Sources: {result['sources']}.")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--misses", action="store_true", help="list the lines not found and the false alarms")
    args = ap.parse_args()
    result = score(Path(args.path))
    if args.misses:
        for m in result["misses"] + result["false_alarms"]:
            print(json.dumps(m))
    print(markdown(result) if args.markdown else json.dumps({k: v for k, v in result.items()
                                                              if k not in ("misses", "false_alarms")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
