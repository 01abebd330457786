"""Bench: the job-output stage's rules (`joblog.scan`) over the tail of a training job's output.

    python bench/joblog_scan.py [--mb 4] [--repeat 3] [--json]

The output: a training loop's progress lines (benign, no rule's literal), with a fault every 5,000 lines (a UCX
error, a verbs completion error, an NCCL watchdog timeout, a fabric library's line only the library fallback reads)
and NCCL INFO lines. `--mb 4` is `[diagnosis] job_log_max_bytes`' default, the most the epilog reads. Reported: the
best of the repeats, in seconds, and the findings (which must not change between runs of the same rules).
"""

from __future__ import annotations

import argparse
import json
import time

BENIGN = "step {n} loss 0.{m:02d} lr 3.0e-04 tokens/s 12345.6 grad_norm 1.{k} mem 61.2GiB"
INFO = "gpu{g:02d}:1234:1300 [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> {p}[{p}] [send] via NET/IB/0/GDRDMA"
FAULTS = [
    "[1700000000.123456] [node1:1234 :0]     ucp_worker.c:1866 UCX  ERROR failed to connect to 10.0.0.2:13337 via "
    "rc_mlx5/mlx5_0:1: Endpoint timeout",
    "[node1:1234:0:1234] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 "
    "hw_synd 0/0)",
    "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600347 milliseconds before timing out.",
    "node01.12345hfi_userinit: assign_context command failed: Network is down",
]


def make_lines(size: int) -> list[str]:
    lines: list[str] = []
    total = n = 0
    while total < size:
        if n % 5000 == 4999:
            line = FAULTS[(n // 5000) % len(FAULTS)]
        elif n % 100 == 99:
            line = INFO.format(g=n % 8, r=n % 8, p=(n + 1) % 8)
        else:
            line = BENIGN.format(n=n, m=n % 97, k=n % 13)
        lines.append(line)
        total += len(line) + 1
        n += 1
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from slurmtools.diagnosis import joblog
    from slurmtools.diagnosis.rules import ruleset

    lines = make_lines(int(args.mb * (1 << 20)))
    rs = ruleset()
    joblog.scan(lines[:100], rs)          # compile what the first call compiles, outside the timing
    best = float("inf")
    found: list[tuple[str, str, str]] = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        findings = joblog.scan(lines, rs)
        best = min(best, time.perf_counter() - t0)
        found = [(f.kind, f.severity, str(f.details.get("rule") or "")) for f in findings]
    result = {"lines": len(lines), "mb": args.mb, "repeat": args.repeat, "best_s": round(best, 3),
              "lines_per_s": round(len(lines) / best), "findings": len(found),
              "kinds": sorted({f"{k}/{s}/{r}" for k, s, r in found})}
    print(json.dumps(result, indent=1) if args.json else
          f"{result['lines']} lines ({args.mb} MiB): best {result['best_s']} s of {args.repeat}, "
          f"{result['findings']} findings: {', '.join(result['kinds'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
