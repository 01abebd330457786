"""Score `slurmtools detect` on generated scenarios in a real Prometheus, over several seeds.

For each seed: tests/scenarios.py writes a 16-node x 8-GPU cluster running multi-node training for 24 h at 60 s
(planted failures with and without precursors, benign confounders, a labels file); promtool turns it into TSDB
blocks; Debian's prometheus serves them; `detect scan` runs over the last 18 h (the first 6 h are the baseline);
the flags are scored against the labels:

* found: a flag on the failing device (GPU, or the IB port) that overlaps [precursor start (the failure for
  a sudden one), failure + 10 min]; lead time = failure - flag start (0 if the flag came after);
* related: a flag on another device of a failing node in that window (neither a hit nor a false positive);
* false positive: every other flag; per node-day over the scanned time; those on a confounder's nodes during
  the confounder are also counted apart.

    python bench/detect_score.py --seeds 1 2 3 4 5 [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import scenarios

from slurmtools import config
from slurmtools.detect import prom, scan

GRACE = 600.0


def score(flags: list[dict[str, Any]], labels: dict[str, Any], t0: float, t1: float) -> dict[str, Any]:
    def ts(s: str) -> float:
        from datetime import datetime

        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

    used: set[int] = set()
    found = []
    for f in labels["failures"]:
        lo = f["precursor_start"] or f["failure"]
        hi = f["failure"] + GRACE
        hits = [i for i, x in enumerate(flags) if x["node"] == f["node"] and x["device"] == f["device"]
                and ts(x["start"]) <= hi and ts(x["end"]) >= lo]
        related = [i for i, x in enumerate(flags) if x["node"] == f["node"] and i not in hits
                   and ts(x["start"]) <= hi and ts(x["end"]) >= lo]
        used.update(hits + related)
        first = min((ts(flags[i]["start"]) for i in hits), default=None)
        found.append({"kind": f["kind"], "node": f["node"], "device": f["device"], "found": bool(hits),
                      "precursor": f["precursor_start"] is not None,
                      "lead_min": None if first is None else round(max(0.0, f["failure"] - first) / 60, 1),
                      "flag_kind": flags[hits[0]]["kind"] if hits else None})
    fps = [x for i, x in enumerate(flags) if i not in used]
    conf = []
    for c in labels["confounders"]:
        on = [x for x in fps if x["node"] in c["nodes"] and ts(x["start"]) <= c["end"] + GRACE
              and ts(x["end"]) >= c["start"]]
        conf.append({"kind": c["kind"], "flags": len(on)})
    node_days = labels["nodes"] * (t1 - t0) / 86400
    return {"seed": labels["seed"], "failures": found, "false_positives": len(fps),
            "fp_per_node_day": round(len(fps) / node_days, 4),
            "fp_per_day_cluster": round(len(fps) / ((t1 - t0) / 86400), 3),
            "confounders": conf, "fp_flags": fps}


def run_seed(seed: int, work: Path, nodes: int, gpus: int, hours: float) -> dict[str, Any]:
    out = work / f"seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    c = scenarios.Cluster(nodes=nodes, gpus=gpus, hours=hours, seed=seed)
    m, labels = scenarios.generate(c)
    scenarios.write_openmetrics(c, m, out / "scenario.om")
    (out / "labels.json").write_text(json.dumps(labels, indent=1))
    t = time.monotonic()
    scenarios.load(out / "scenario.om", out / "tsdb")
    load_s = time.monotonic() - t
    (out / "scenario.om").unlink()
    setup = scan.setup_from(config.load())
    t0 = labels["start"] + setup.params.baseline_s
    with scenarios.serve(out / "tsdb") as url:
        res = scan.run_scan(prom.Client(url), setup, t0, labels["end"])
    flags = [scan.flag_dict(f, res.grid) for f in res.flags]
    (out / "flags.json").write_text(json.dumps(flags, indent=1))
    r = score(flags, labels, t0, labels["end"])
    r.update({"scan_s": round(res.seconds, 2), "load_s": round(load_s, 1), "series": res.series})
    return r


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    fails = [f for r in runs for f in r["failures"]]
    leads = [f["lead_min"] for f in fails if f["precursor"] and f["found"]]
    by_kind: dict[str, list[bool]] = {}
    for f in fails:
        by_kind.setdefault(f["kind"], []).append(f["found"])
    return {"seeds": [r["seed"] for r in runs], "failures": len(fails), "found": sum(f["found"] for f in fails),
            "recall_by_kind": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())},
            "lead_min_median": statistics.median(leads) if leads else None,
            "lead_min_per_seed_median": [statistics.median([f["lead_min"] for f in r["failures"]
                                                            if f["precursor"] and f["found"]] or [0]) for r in runs],
            "lead_min_min": min(leads) if leads else None,
            "fp_per_day_cluster": [r["fp_per_day_cluster"] for r in runs],
            "fp_per_node_day": [r["fp_per_node_day"] for r in runs],
            "confounder_flags": sum(c["flags"] for r in runs for c in r["confounders"]),
            "scan_s": [r["scan_s"] for r in runs]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--keep", type=Path, help="Keep the scenarios, TSDBs and flags here.")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="detect-score-"))
    runs = [run_seed(s, work, a.nodes, a.gpus, a.hours) for s in a.seeds]
    print(json.dumps({"summary": summary(runs), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
