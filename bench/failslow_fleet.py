"""How well the fail-slow probe's relative judgement separates a slowed GPU from healthy peers (issue 33).

A simulated fleet of NODES x 8 H100s whose figures are the real H100's (device-to-device 2,975 GB/s, H2D
54.8, D2H 55.1 GB/s, FP32 57.1 TFLOPS), each GPU's result drawn with a relative spread (the real GPU repeated
within 0.3 %; larger spreads show how the margins hold when GPUs of a model differ more). One more GPU is
slowed by 5, 10 or 20 % on one kind of figure (HBM: d2d; PCIe: H2D and D2H; compute: FP32). Each trial runs the
project's own judgement (checks/perf.py: `baseline` = the fleet's median per model over every GPU's result,
`shortfalls` against it with the default margins, 10 % on bandwidth and 8 % on compute) and counts:

* found: the slowed GPU flagged (per trial), and drained (flagged in two scans in a row: `perf_drain_after`);
* false flags: healthy GPUs flagged in a scan (their count per scan, and the share of scans with any), and
  healthy GPUs drained (flagged twice in a row).

The first trial of each row also measures every GPU through the probe's own code (`perfprobe.measure` over
`SimulatedDriver`, the driver's calls answered from the figures), to show the measurement path returns the
figures it is given; the other trials draw the figures directly (the judgement is what is scored).

    python bench/failslow_fleet.py [--nodes 64] [--trials 200] [--spreads 0.003 0.01 0.02] [--json]
    python bench/failslow_fleet.py --recorded tests/data/h200/gpu_probe.json   # a real GPU's figures and spread

With --recorded (bench/gpu_probe.py's output on a real GPU), the fleet is of that GPU's model at the medians of its
probe runs, and the first spread is the one measured there (the largest relative standard deviation of a metric
over the runs) unless --spreads is given.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurmtools.checks import cudadrv, perf, perfprobe

#: The fleet's figures and model: the real H100's, unless --recorded sets a recorded GPU's (main).
FIGURES = {"d2d_gbps": 2975.0, "h2d_gbps": 54.8, "d2h_gbps": 55.1, "fp32_tflops": 57.1}
MODEL = "NVIDIA H100 80GB HBM3"
KINDS = {"HBM (d2d)": ("d2d_gbps",), "PCIe (H2D+D2H)": ("h2d_gbps", "d2h_gbps"), "compute (FP32)": ("fp32_tflops",)}
MARGIN = {"bandwidth": 0.10, "compute": 0.08}


def draw(rng: random.Random, n: int, spread: float, slow: tuple[str, ...], factor: float) -> list[dict[str, Any]]:
    """N healthy GPUs and, last, one slowed on SLOW metrics by FACTOR."""
    rows = []
    for i in range(n + 1):
        row: dict[str, Any] = {"model": MODEL, "gpu": i}
        for metric, value in FIGURES.items():
            f = factor if (i == n and metric in slow) else 1.0
            row[metric] = value * f * (1.0 + rng.gauss(0.0, spread))
        rows.append(row)
    return rows


def through_probe(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    """Every GPU measured by perfprobe.measure over SimulatedDriver: the figures it returns, wall seconds."""
    devices = [{"pci_bus_id": f"0000:{i // 256:02x}:{i % 256:02x}.0", "sms": 132,
                **{m: r[m] for m in FIGURES}} for i, r in enumerate(rows)]
    drv = cudadrv.SimulatedDriver(devices)
    t0 = time.perf_counter()
    out = []
    for i, r in enumerate(rows):
        figs = perfprobe.measure(drv, i, perfprobe.Limits())
        out.append({"model": MODEL, "gpu": r["gpu"], **{m: figs[m] for m in FIGURES}})
    return out, time.perf_counter() - t0


def flagged(rows: list[dict[str, Any]]) -> set[int]:
    fleet = perf.baseline(rows)[MODEL]
    ref = {m: fleet[m] for m in FIGURES}
    return {r["gpu"] for r in rows if perf.shortfalls(r, ref, MARGIN)}


def row_for(n: int, trials: int, spread: float, kind: str, slow: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    found = drained = scans_with_false = false_total = false_drained = 0
    max_false = 0
    probe_check: dict[str, Any] = {}
    for t in range(trials):
        rounds = []
        for _ in range(2):           # two scans in a row: perf_drain_after = 2
            rows = draw(rng, n, spread, KINDS[kind], 1.0 - slow)
            if t == 0 and not probe_check:
                measured, wall = through_probe(rows)
                worst = max(abs(m[k] / r[k] - 1) for m, r in zip(measured, rows, strict=True) for k in FIGURES)
                probe_check = {"worst_relative_error": worst, "wall_s_per_gpu": wall / len(rows),
                               "same_flags": flagged(measured) == flagged(rows)}
            rounds.append(flagged(rows))
        first, second = rounds
        found += n in first
        drained += n in first and n in second
        false = first - {n}
        false_total += len(false)
        scans_with_false += bool(false)
        max_false = max(max_false, len(false))
        false_drained += len((first & second) - {n})
    return {"spread": spread, "kind": kind, "slowed_by": slow, "trials": trials, "healthy": n,
            "found": found / trials, "drained": drained / trials, "false_flags_per_scan": false_total / trials,
            "max_false_flags": max_false, "scans_with_a_false_flag": scans_with_false / trials,
            "healthy_drained": false_drained, "probe_path": probe_check}


def recorded(path: str) -> tuple[str, dict[str, float], float]:
    """(model, median figures, measured spread) of GPU 0 in bench/gpu_probe.py's output at PATH."""
    import statistics

    data = json.loads(Path(path).read_text())
    runs = [r["gpus"]["0"] for r in data["probe"]["runs"]]
    figures = {m: statistics.median(float(r[m]) for r in runs) for m in FIGURES}
    spread = max(statistics.stdev(float(r[m]) for r in runs) / figures[m] for m in FIGURES)
    return str(data["devices"][0]["name"]), figures, spread


def main(argv: list[str] | None = None) -> int:
    global MODEL     # the fleet's model, with FIGURES: what every row draws
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=64, help="nodes of 8 GPUs (64: 512 healthy GPUs)")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--spreads", type=float, nargs="+")
    ap.add_argument("--recorded", help="bench/gpu_probe.py's JSON from a real GPU: its model, figures and spread")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    spreads = args.spreads or [0.003, 0.01, 0.02]
    if args.recorded:
        MODEL, figures, measured = recorded(args.recorded)
        FIGURES.update(figures)
        spreads = args.spreads or [round(measured, 5), 0.01, 0.02]
        print(f"{MODEL} as recorded in {args.recorded}: " + ", ".join(f"{k} {v:g}" for k, v in figures.items())
              + f"; measured spread {measured * 100:.3f} %")
    n = args.nodes * 8
    rows = [row_for(n, args.trials, spread, kind, slow, args.seed + i)
            for i, (spread, kind, slow) in enumerate((s, k, x) for s in spreads for k in KINDS
                                                     for x in (0.05, 0.10, 0.20))]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{n} healthy {MODEL} + 1 slowed, {args.trials} trials per row (two scans each), margins 10 % bandwidth, "
          f"8 % compute")
    print("| spread | slowed | by | found | drained (2 in a row) | false flags / scan | max | scans with one "
          "| healthy drained |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['spread'] * 100:.1f} % | {r['kind']} | {r['slowed_by'] * 100:.0f} % | {r['found'] * 100:.0f} % "
              f"| {r['drained'] * 100:.0f} % | {r['false_flags_per_scan']:.2f} | {r['max_false_flags']} "
              f"| {r['scans_with_a_false_flag'] * 100:.1f} % | {r['healthy_drained']} |")
    worst = max(r["probe_path"]["worst_relative_error"] for r in rows)
    same = all(r["probe_path"]["same_flags"] for r in rows)
    wall = max(r["probe_path"]["wall_s_per_gpu"] for r in rows)
    print(f"through the probe's code (perfprobe.measure over SimulatedDriver): worst relative error "
          f"{worst:.2e}, same flags: {same}, CPU time per simulated GPU {wall * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
