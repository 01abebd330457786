"""How long the epilog spends finding checkpoint lines in the job's output: the worst case it reads, the
[diagnosis] job_log_max_bytes tail (4 MiB by default) of a Megatron-style training log with a save every 200
iterations. Run: .venv/bin/python bench/ckptlog_scan.py"""

from __future__ import annotations

import statistics
import time

from slurmtools.iostat import ckptlog


def log_lines(max_bytes: int = 4 << 20) -> list[str]:
    lines, size, it = [], 0, 0
    while size < max_bytes:
        it += 1
        line = (f" [2026-01-01 00:{it // 60 % 60:02d}:{it % 60:02d}] iteration {it:8d}/ 500000 | consumed samples: "
                f"{it * 512:12d} | elapsed time per iteration (ms): 1234.5 | learning rate: 1.0E-04 | "
                f"lm loss: 2.345E+00 | loss scale: 1.0 | grad norm: 0.321 |")
        lines.append(line)
        size += len(line) + 1
        if it % 200 == 0:
            for extra in (f"saving checkpoint at iteration {it:7d} to /ckpt in torch_dist format",
                          f"  successfully saved checkpoint from iteration {it:7d} to /ckpt [ t 1/8, p 1/4 ]",
                          "(min, max) time across ranks (ms):",
                          "    save-checkpoint ................................: (21027.08, 21027.08)"):
                lines.append(extra)
                size += len(extra) + 1
    return lines


#: Issue 30, F4: a line of Lightning look-alikes that never ends its quote: the pattern the packaged file held
#: before RE2 (Python's engine, a lazy `.*?` and a backreference) tries every start, each to the end of the line.
UNIT = "Epoch 1, global step 1: "
OLD_LIGHTNING = r"""\bEpoch \d+, global step (?P<step>\d+): .*?saving model to (?P<q>['"])(?P<path>.+?)(?P=q)"""


def hostile(size: int) -> str:
    return UNIT * (size // len(UNIT)) + " checkpoint saving model to '"


def timed(fn: object, runs: int = 3) -> float:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    lines = log_lines()
    ckptlog.load_patterns()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        events = ckptlog.scan(lines, {})
        runs.append(time.perf_counter() - t0)
    print(f"{len(lines):,} lines, {sum(len(x) + 1 for x in lines) / 2**20:.1f} MiB, {len(events)} saves: "
          f"median {statistics.median(runs) * 1000:.0f} ms, max {max(runs) * 1000:.0f} ms over {len(runs)} runs")
    import re

    old = re.compile(OLD_LIGHTNING)
    for size in (4 << 10, 16 << 10, 64 << 10):
        line = hostile(size)
        took = timed(lambda line=line: old.search(line))
        print(f"F4 before (Python re, the line uncut): {size >> 10} KiB line: {took:.3f} s")
    for size in (4 << 10, 4 << 20):
        one = [hostile(size)]
        many = [hostile(4096)] * (size // 4096)
        print(f"F4 now (RE2, lines cut to {ckptlog.MAX_LINE}): one {size >> 10} KiB line "
              f"{timed(lambda one=one: ckptlog.scan(one, {})) * 1000:.1f} ms; {len(many)} lines of 4 KiB "
              f"{timed(lambda many=many: ckptlog.scan(many, {})) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
