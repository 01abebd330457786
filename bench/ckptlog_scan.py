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


if __name__ == "__main__":
    main()
