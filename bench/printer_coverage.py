"""How much of each printer's vocabulary the rules know: lines made from the printers' own format strings.

    python bench/printer_coverage.py [--dir DIR] [--misses] [--json]

Loads every `tests/data/kernel/printers/*.tsv` (columns as the field corpus: kind, xid, source, envelope, line).
Unlike the field corpus, these lines are not copied from logs: each is one format string of a public program (the
kernel, rdma-core, UCX, NCCL, nfs-utils, Lustre, the NVIDIA driver, ...) with plausible values filled in, and its
`source` names the program, file and function (`repo@ref:path:function`). They measure how much of a printer's
error vocabulary the rules cover (kind "-" rows: the same printer's informational twins, which must stay below
warning), so there is no rules/test split: every row is for writing rules from. The field corpus's test half stays
the figure that predicts what a site will see (bench/field_corpus.py).

Scoring is bench/field_corpus.py's `judge`: a fault row is found when the most serious finding has the row's kind
(and XID); a benign row is a false alarm when any finding is warning or above.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.field_corpus import Row, judge, load

PRINTERS = Path(__file__).resolve().parent.parent / "tests" / "data" / "kernel" / "printers"


def score(rows: list[Row]) -> dict[str, Any]:
    """Per file and per kind: rows, found; misses and false alarms with what the rules said instead."""
    per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])   # faults, found, benign, alarms
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[dict[str, Any]] = []
    alarms: list[dict[str, Any]] = []
    for row in rows:
        ok, got = judge(row, row.line)
        f = per_file[row.file]
        if row.kind == "-":
            f[2] += 1
            if not ok:
                f[3] += 1
                alarms.append({"file": row.file, "source": row.source, "line": row.line, "got": got})
            continue
        f[0] += 1
        f[1] += ok
        per_kind[row.kind][0] += 1
        per_kind[row.kind][1] += ok
        if not ok:
            misses.append({"file": row.file, "kind": row.kind, "source": row.source, "line": row.line, "got": got})
    faults = sum(v[0] for v in per_file.values())
    found = sum(v[1] for v in per_file.values())
    return {"fault_lines": faults, "found": found, "recall": found / faults if faults else None,
            "benign_lines": sum(v[2] for v in per_file.values()), "false_alarms": len(alarms),
            "per_file": {k: {"lines": v[0], "found": v[1], "benign": v[2], "false_alarms": v[3]}
                         for k, v in sorted(per_file.items())},
            "per_kind": {k: {"lines": v[0], "found": v[1]} for k, v in sorted(per_kind.items())},
            "misses": misses, "alarms": alarms}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=PRINTERS, help="a folder of printer *.tsv (default: the tree's)")
    ap.add_argument("--misses", action="store_true", help="list every miss and false alarm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = load([args.dir], real=None)
    if not rows:
        print(f"no printer rows in {args.dir}", file=sys.stderr)
        return 2
    result = score(rows)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if args.misses or k not in ("misses", "alarms")}, indent=1))
        return 0
    print(f"{result['found']}/{result['fault_lines']} fault rows found ({result['recall']:.1%}); "
          f"{result['false_alarms']} false alarms in {result['benign_lines']} benign rows")
    for name, v in result["per_file"].items():
        print(f"  {name}: {v['found']}/{v['lines']} found, {v['false_alarms']}/{v['benign']} false alarms")
    for kind, v in result["per_kind"].items():
        print(f"  kind {kind}: {v['found']}/{v['lines']}")
    if args.misses:
        for m in result["misses"]:
            print(f"MISS {m['file']} [{m['kind']}] got={m['got']} :: {m['line']}  <- {m['source']}")
        for a in result["alarms"]:
            print(f"ALARM {a['file']} got={a['got']} :: {a['line']}  <- {a['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
