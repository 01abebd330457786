"""The stall detector over a replay of training jobs: the time from a stall to the action, and the false-stall rate
on healthy jobs' quiet phases (docs/stalls.md, "How it is measured"; figures in docs/performance.md).

The jobs come from a model of real training loops (ours; its parameters are written here and in docs/stalls.md):

* 2, 4 or 8 nodes of 8 GPUs (700 W limit); 24 h each, judged every `stalls.interval` (60 s) like `stalls run`;
* start: data loading and compilation, silent, GPUs idle: lognormal, median 6 min, 5 % of jobs 25-50 min;
* training: one log line every p seconds, p log-uniform in [5 s, 10 min] (10 % of jobs log every 20-60 min: an
  epoch logger), each interval x U(0.7, 1.4); GPUs 95-100 % at 420-660 W; once a day a slow spell of 2-8 min
  (a filesystem hiccup: the input pipeline waits, GPUs idle, nothing printed);
* checkpoints every 1-4 h, silent, GPUs idle (util 0-5 %, 80-120 W): lognormal, median 4 min; 10 % of jobs
  save big checkpoints, median 14 min, at most 45 min; 60 % of jobs run a framework that prints its checkpoint
  lines (an open checkpoint is seen, finished ones give their durations), the others only leave a gap;
* evaluation (half the jobs) every 0.5-3 h for 2-15 min: GPUs 90-100 % at 230-460 W (forward only: some look
  like spinning), silent for half of those jobs;
* 70 % of jobs print a date and time on their lines (the judge learns gaps from them); the others only from the
  files' modification times between two passes (a gap seen as the time between two passes that saw growth);
* 30 % of jobs hang once, at a uniform time in [1 h, 20 h]: one rank stops and the others wait in a collective
  (50 %: that node idle, its peers spinning at 120-160 W), every rank spins (30 %: a deadlock in the
  collective), or every rank idles in D state (20 %: a filesystem). Nothing more is printed.

GPU samples are medians of the last 5 minutes per GPU (what `stalls.gpu_window` reads from Prometheus). The
judge, the GPU signature and blame are slurmtools' own (stalls/judge.py, gpu.py, blame.py); only the files and
Prometheus are replaced by the model. Variants: the defaults; no GPU signal (progress alone, the longer margin);
a shorter `min_quiet`.

    python bench/stall_replay.py [--jobs 400] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurmtools.stalls import blame, gpu, judge
from slurmtools.stalls.progress import Progress

STEP = 60.0           # stalls.interval
DAY = 86400.0
LIMIT_W = 700.0


@dataclass
class Phase:
    start: float
    end: float
    kind: str             # startup, train, slow, ckpt, eval, hang
    prints: bool          # output grows during it
    detail: str = ""


@dataclass
class Job:
    nodes: int
    print_s: float
    stamped: bool
    ckpt_lines: bool
    phases: list[Phase] = field(default_factory=list)
    hang_at: float | None = None
    hang_kind: str = ""
    stopped: int = 0


def lognorm(rng: random.Random, median: float, sigma: float, hi: float) -> float:
    return min(hi, median * math.exp(rng.gauss(0.0, sigma)))


def make_job(rng: random.Random) -> Job:
    j = Job(nodes=rng.choice([2, 4, 8]), print_s=math.exp(rng.uniform(math.log(5), math.log(600))),
            stamped=rng.random() < 0.7, ckpt_lines=rng.random() < 0.6)
    if rng.random() < 0.1:
        j.print_s = rng.uniform(1200, 3600)
    startup = rng.uniform(1500, 3000) if rng.random() < 0.05 else lognorm(rng, 360, 0.7, 1500)
    t = startup
    j.phases.append(Phase(0, startup, "startup", False))
    ckpt_every, big = rng.uniform(3600, 4 * 3600), rng.random() < 0.1
    evals = rng.random() < 0.5
    eval_every, eval_silent = rng.uniform(1800, 3 * 3600), rng.random() < 0.5
    next_ckpt, next_eval = t + ckpt_every, t + eval_every
    slow_at = rng.uniform(t, DAY)
    while t < DAY:
        nxt = min(next_ckpt, next_eval if evals else DAY, DAY)
        if slow_at < nxt and slow_at > t:
            j.phases.append(Phase(t, slow_at, "train", True))
            d = rng.uniform(120, 480)
            j.phases.append(Phase(slow_at, slow_at + d, "slow", False))
            t, slow_at = slow_at + d, DAY * 2
            continue
        j.phases.append(Phase(t, nxt, "train", True))
        t = nxt
        if t >= DAY:
            break
        if t == next_ckpt:
            d = lognorm(rng, 840 if big else 240, 0.5, 2700)
            j.phases.append(Phase(t, t + d, "ckpt", False))
            next_ckpt = t + d + ckpt_every
        else:
            d = rng.uniform(120, 900)
            j.phases.append(Phase(t, t + d, "eval", not eval_silent))
            next_eval = t + d + eval_every
        t += d
    if rng.random() < 0.3:
        j.hang_at = rng.uniform(3600, 20 * 3600)
        j.hang_kind = rng.choices(["one-stopped", "all-spin", "d-state"], [0.5, 0.3, 0.2])[0]
        j.stopped = rng.randrange(j.nodes)
    return j


def phase_at(j: Job, t: float) -> Phase:
    if j.hang_at is not None and t >= j.hang_at:
        return Phase(j.hang_at, DAY, "hang", False)
    for p in j.phases:
        if p.start <= t < p.end:
            return p
    return j.phases[-1]


def gpu_values(j: Job, t: float, rng: np.random.Generator) -> np.ndarray:
    """(util %, power W) of every GPU of every node at T: shape (nodes, 8, 2)."""
    p = phase_at(j, t)
    out = np.empty((j.nodes, 8, 2))
    for node in range(j.nodes):
        if p.kind == "hang":
            idle = j.hang_kind == "d-state" or (j.hang_kind == "one-stopped" and node == j.stopped)
            lo, hi = ((0, 70), (2, 95)) if idle else ((100, 120), (100, 160))
        elif p.kind in ("startup", "ckpt", "slow"):
            lo, hi = (0, 75), (5, 120)
        elif p.kind == "eval":
            lo, hi = (90, 230), (100, 460)
        else:
            lo, hi = (95, 420), (100, 660)
        out[node] = rng.uniform(lo, hi, size=(8, 2))
    return out


def prints_between(j: Job, a: float, b: float, rng: random.Random) -> list[float]:
    """The times of log lines in [a, b)."""
    out: list[float] = []
    for p in j.phases:
        if not p.prints or p.end <= a or p.start >= b:
            continue
        t = max(p.start, a)
        while True:
            t += j.print_s * rng.uniform(0.7, 1.4)
            if t >= min(p.end, b) or (j.hang_at is not None and t >= j.hang_at):
                break
            out.append(t)
    return out


def replay(j: Job, lim: judge.Limits, th: gpu.Thresholds, with_gpu: bool, rng: random.Random) -> dict[str, Any]:
    """Judge J every STEP; the first flag (its time, the phase it fell in, the suspect)."""
    lines = prints_between(j, 0, DAY, rng)
    ends = [p for p in j.phases if p.kind == "ckpt"]
    window: list[np.ndarray] = []      # per pass: (nodes, 8 GPUs, util and power)
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    gaps_seen: list[float] = []
    last_mtime: float | None = None
    line_gaps: list[float] = []
    li = 0
    t = STEP
    while t < DAY:
        while li < len(lines) and lines[li] <= t:
            if li:
                line_gaps.append(lines[li] - lines[li - 1])
            li += 1
        mtime = lines[li - 1] if li else None
        if mtime is not None and last_mtime is not None and mtime > last_mtime:
            gaps_seen.append(mtime - last_mtime)
        last_mtime = mtime
        gaps = line_gaps if j.stamped else gaps_seen
        done = [c.end - c.start for c in ends if c.end <= t and (j.hang_at is None or c.end <= j.hang_at)] \
            if j.ckpt_lines else []
        ph = phase_at(j, t)
        open_ckpt = ph.start if ph.kind == "ckpt" and j.ckpt_lines else None
        prog = Progress(mtime, li, gaps, done, open_ckpt, [{"path": "job.out"}])
        window.append(gpu_values(j, t, nrng))
        window = window[-5:]
        verdict = "none"
        classes: dict[str, str] = {}
        if with_gpu:
            med = np.median(np.stack(window), axis=0).tolist()
            by_node = {f"n{n}": [gpu.GpuSample(f"n{n}", str(g), med[n][g][0], med[n][g][1], LIMIT_W)
                                 for g in range(8)] for n in range(j.nodes)}
            sig = gpu.job_signature(by_node, list(by_node), th)
            verdict = sig["verdict"]
            classes = {n: s["class"] for n, s in sig["nodes"].items()}
        v = judge.judge(1, t, 0.0, prog, verdict, lim)
        if v.stalled:
            hung = j.hang_at is not None and t >= j.hang_at
            suspect, _ = blame.blame(list(classes) or [f"n{n}" for n in range(j.nodes)], classes, {}, {})
            return {"at": t, "hung": hung, "phase": ph.kind if not hung else "hang", "suspect": suspect,
                    "delay": t - j.hang_at if hung and j.hang_at is not None else None,
                    "right_suspect": suspect == f"n{j.stopped}" if j.hang_kind == "one-stopped" else suspect is None}
        if j.hang_at is not None and t - j.hang_at > 6 * 3600:
            break
        t += STEP
    return {"at": None}


def run(jobs: list[Job], lim: judge.Limits, th: gpu.Thresholds, with_gpu: bool, seed: int) -> dict[str, Any]:
    rng = random.Random(seed * 7919)
    t0 = time.monotonic()
    delays: list[float] = []
    false: dict[str, int] = {}
    missed = right = one_stopped = 0
    healthy_h = 0.0
    for j in jobs:
        r = replay(j, lim, th, with_gpu, rng)
        healthy_h += (j.hang_at if j.hang_at is not None else DAY) / 3600.0
        if r["at"] is not None and not r["hung"]:
            false[r["phase"]] = false.get(r["phase"], 0) + 1
            continue
        if j.hang_at is not None:
            if r["at"] is None:
                missed += 1
                continue
            delays.append(r["delay"])
            one_stopped += j.hang_kind == "one-stopped"
            right += bool(r["right_suspect"]) and j.hang_kind == "one-stopped"
    hangs = sum(1 for j in jobs if j.hang_at is not None)
    q = statistics.quantiles(delays, n=10) if len(delays) >= 2 else [0.0] * 9
    return {"jobs": len(jobs), "hangs": hangs, "found": len(delays), "missed": missed,
            "delay_min": {"median": round(statistics.median(delays) / 60, 1) if delays else None,
                          "p90": round(q[8] / 60, 1), "max": round(max(delays) / 60, 1) if delays else None},
            "false_stalls": sum(false.values()), "false_by_phase": false,
            "false_per_1000_job_hours": round(1000 * sum(false.values()) / healthy_h, 2),
            "healthy_job_hours": round(healthy_h), "one_stopped_named": f"{right}/{one_stopped}",
            "seconds": round(time.monotonic() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    jobs = [make_job(rng) for _ in range(args.jobs)]
    base = judge.Limits()       # data/defaults.toml's values (tests/test_stalls.py checks they agree)
    th = gpu.Thresholds()
    variants = {"defaults": (base, True), "no GPU signal": (base, False),
                "min_quiet 10m": (replace(base, min_quiet=600.0), True)}
    out = {name: run(jobs, lim, th, with_gpu, args.seed) for name, (lim, with_gpu) in variants.items()}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for name, r in out.items():
        print(f"{name:<14} hangs {r['hangs']:>3}: found {r['found']}, missed {r['missed']}; stall->action median "
              f"{r['delay_min']['median']} min, p90 {r['delay_min']['p90']}, max {r['delay_min']['max']}; "
              f"false stalls {r['false_stalls']} ({r['false_per_1000_job_hours']} per 1000 job-hours over "
              f"{r['healthy_job_hours']} h; {r['false_by_phase']}); one stopped node named {r['one_stopped_named']}"
              f"; {r['seconds']}s")


if __name__ == "__main__":
    main()
