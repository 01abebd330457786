"""How fast `slurmtools detect` is on a large cluster's week, read from a real Prometheus.

64 nodes x 8 GPUs, 12 metric families (10 of dcgm-exporter's, 2 of node_exporter's InfiniBand collector) at
60 s for 7 days (plus the 7 h of history the first scanned sample is compared with), written by
tests/scenarios.py (planted failures and confounders included), loaded a day at a time with
`promtool tsdb create-blocks-from openmetrics` and served by Debian's prometheus. Then:

* `scan`: the whole week (`detect scan`'s code path: scan.run_scan over [start + 7 h, end]), once, its flags
  scored against the planted failures as bench/detect_score.py does;
* `run`: one evaluation of `detect run --interval 5m` (the newest 5 minutes plus `together`, with the
  baseline that needs), the median of 5, at the end of the week.

Targets (issue 16): scan under 60 s, a 5-minute evaluation under 5 s, on this machine.

    python bench/detect_speed.py [--nodes 64] [--gpus 8] [--days 7] [--keep DIR] [--repeat 5]

--keep DIR keeps (and reuses) the TSDB: generating and loading a week takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import detect_score
import scenarios

from slurmtools import config
from slurmtools.detect import prom, scan

FAMILIES = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_XID_ERRORS", "node_infiniband_link_downed_total", "node_infiniband_symbol_error_total"]


def build(out: Path, nodes: int, gpus: int, days: float, history_h: float) -> dict[str, float]:
    """Generate and load the scenario into OUT/tsdb (skipped when OUT/labels.json says it is there)."""
    done = out / "labels.json"
    if done.exists():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    c = scenarios.Cluster(nodes=nodes, gpus=gpus, hours=days * 24 + history_h, seed=7)
    m, labels = scenarios.generate(c)
    m = {k: v for k, v in m.items() if k in FAMILIES}
    gen_s = time.monotonic() - t
    per_day = int(86400 / scenarios.STEP)
    samples = 0
    t = time.monotonic()
    for a in range(0, c.n, per_day):
        om = out / "day.om"
        samples += scenarios.write_openmetrics(c, m, om, (a, a + per_day))
        scenarios.load(om, out / "tsdb")
        om.unlink()
    labels.update({"samples": samples, "series": sum(len(v) for v in m.values()), "families": len(m),
                   "generate_s": round(gen_s, 1), "load_s": round(time.monotonic() - t, 1)})
    done.write_text(json.dumps(labels, indent=1))
    return labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="Keep (and reuse) the scenario's TSDB here.")
    a = ap.parse_args()
    cfg = config.load()
    setup = scan.setup_from(cfg)
    p = setup.params
    history_h = (p.baseline_s + p.gap_s) / 3600
    work = a.keep or Path(tempfile.mkdtemp(prefix="detect-speed-"))
    labels = build(work, a.nodes, a.gpus, a.days, history_h)
    start, end = labels["start"] + p.baseline_s + p.gap_s, labels["end"]
    with scenarios.serve(work / "tsdb") as url:
        client = prom.Client(url, chunk_s=3600.0 * 6)
        res = scan.run_scan(client, setup, start, end)
        scan_s = res.seconds
        flags = len(res.flags)
        scored = detect_score.score([scan.flag_dict(f, res.grid) for f in res.flags], labels, start, end)
        runs = []
        for _ in range(a.repeat):
            r = scan.run_scan(prom.Client(url), setup, end - 300 - p.together_s, end)
            runs.append(r.seconds)
    print(json.dumps({
        "nodes": a.nodes, "gpus_per_node": a.gpus, "days_scanned": round((end - start) / 86400, 2),
        "families": labels["families"], "series_loaded": labels["series"], "samples_loaded": labels["samples"],
        "generate_s": labels["generate_s"], "load_s": labels["load_s"],
        "scan": {"seconds": round(scan_s, 1), "series_read": res.series, "queries": res.queries, "flags": flags,
                 "fleet_events": len(res.fleet), "target_s": 60},
        "detection": {"found": f"{sum(f['found'] for f in scored['failures'])}/{len(scored['failures'])}",
                      "lead_min": [f["lead_min"] for f in scored["failures"]],
                      "false_positives": scored["false_positives"],
                      "fp_per_day_cluster": scored["fp_per_day_cluster"],
                      "confounder_flags": sum(c["flags"] for c in scored["confounders"])},
        "run_5min": {"median_s": round(statistics.median(runs), 2), "max_s": round(max(runs), 2),
                     "runs": [round(x, 2) for x in runs], "target_s": 5},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}, indent=1))


if __name__ == "__main__":
    main()
