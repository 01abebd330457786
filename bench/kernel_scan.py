"""Bench: scan a 256 MB kernel log with a realistic mix, against GNU grep on the same file in the same run.

    python bench/kernel_scan.py [--mb 256] [--repeat 3] [--keep FILE] [--mix noisy|paired] [--engine auto|python]

The mix: mostly benign lines (systemd, audit, network, USB, driver banners, GPU identification,
NCCL INFO echoed by the kernel's printk users, corrected AER, link up), with rare faults (XIDs, NVLink,
mlx5 link down, OOM, NFS, hung tasks), about 1 fault line in 2,000. The scan is slurmtools' real
`diagnose()` over the bytes (the one-pass prefilter, then envelopes, rules and the noise policy). The yardstick is
`grep -c -F` with the keywords the prefilter derives from the rules (it only counts lines; we also decode and judge
them); also shown: with the failure words as well (`-i`), which our one pass looks for too. Timings interleave the
contenders per repeat; the first `diagnose()` of a process (which compiles the Hyperscan database, or loads it
from the cache of compiled databases) is reported apart, cold and cached.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile
import time

from slurmtools.diagnosis import diagnose

BENIGN = [
    "systemd[1]: Started Session {n} of user root.",
    "audit: type=1400 audit({n}.123:456): apparmor=\"STATUS\" operation=\"profile_load\" name=\"/usr/bin/man\"",
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "usb 1-1: new high-speed USB device number {n} using xhci_hcd",
    "NVRM: GPU at PCI:0000:18:00: GPU-5e3f1c2a-1111-2222-3333-4444{n:08d}",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    "pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
    "mlx5_core 0000:17:00.0 ibp23s0: Link up",
    "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
    "perf: interrupt took too long ({n} > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending cookies.",
    "bpfilter: Loaded bpfilter_umh pid {n}",
    "kauditd_printk_skb: {n} callbacks suppressed",
]
FAULTS = [
    "NVRM: Xid (PCI:0000:3b:00): 79, pid={n}, name=python3, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:4e:00): 13, pid={n}, name=python, Graphics Exception: ESR 0x404490=0x80000002",
    "NVRM: Xid (PCI:0000:9b:00): 95, pid={n}, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
    "NVRM: NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    "mlx5_core 0000:17:00.0 ibp23s0: Link down",
    "Memory cgroup out of memory: Killed process {n} (python3) total-vm:1000kB, anon-rss:900kB",
    "nfs: server fs01 not responding, still trying",
    "INFO: task python3:{n} blocked for more than 120 seconds.",
]


LINK_UP = "mlx5_core 0000:17:00.0 ibp23s0: Link up"


def make_log(path: str, size: int, seed: int = 7, mix: str = "noisy") -> None:
    """MIX noisy: `Link up` is one of the 13 benign lines (a line in 13: the worst case for our prefilter,
    which keeps `Link up` to pair it with a down); paired: it follows each `Link down`, as on real nodes."""
    rng = random.Random(seed)
    benign = BENIGN if mix == "noisy" else [b for b in BENIGN if b != LINK_UP]
    t, written = 1000.0, 0
    with open(path, "w") as fh:
        while written < size:
            chunk = []
            for _ in range(10000):
                t += rng.random() * 0.01
                pool = FAULTS if rng.random() < 0.0005 else benign
                chunk.append(f"[{t:12.6f}] " + rng.choice(pool).format(n=rng.randrange(10**6)))
                if mix == "paired" and chunk[-1].endswith("Link down"):
                    chunk.append(f"[{t + 0.5:12.6f}] {LINK_UP}")
            text = "\n".join(chunk) + "\n"
            fh.write(text)
            written += len(text)


def timed(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the generated log here and keep it")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mix", choices=("noisy", "paired"), default="noisy",
                    help="noisy: `Link up` as frequent benign noise (worst case); paired: after each `Link down`")
    ap.add_argument("--engine", choices=("auto", "python"), default="auto",
                    help="python: the prefilter without Hyperscan (grep -F, as on a node without the wheel)")
    args = ap.parse_args()
    from slurmtools.diagnosis import prefilter
    from slurmtools.diagnosis.rules import ruleset
    from slurmtools.diagnosis.subsystems import ERROR_WORDS

    if args.engine == "python":
        prefilter.HYPERSCAN_MIN_BYTES = None
    path = args.keep or tempfile.mktemp(suffix=".kern.log")
    if not os.path.exists(path):
        make_log(path, args.mb << 20, mix=args.mix)
    size = os.path.getsize(path)
    env = {**os.environ, "LC_ALL": "C"}
    keywords = ruleset().keywords  # the prefilter's keywords: derived from the rules' literals
    kw = ["-e", "\n".join(k.decode() for k in keywords)]
    kw_words = ["-i", "-e", "\n".join([k.decode() for k in keywords] + list(ERROR_WORDS))]
    counts: dict[str, int] = {}

    def ours() -> None:
        with open(path, "rb") as fh:
            data = fh.read()
        found = diagnose(data)
        counts.update({"findings": len(found), "fault_lines": sum(f.count for f in found)})

    runs: dict[str, list[float]] = {"grep_nvrm": [], "grep_F": [], "grep_F_words": [], "ours": []}
    from slurmtools.diagnosis import rules

    # an empty cache of compiled databases (the cold first call), in the user's home: a cache directory must sit in a
    # directory no one else can write (fsutil.check_trusted; /tmp, sticky as it is, is refused for a cache's parent)
    with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as cache:
        os.environ[prefilter.CACHE_ENV] = cache
        t0 = time.perf_counter()
        ours()                           # the first call in a process compiles the rules' prefilter
        first = time.perf_counter() - t0
        rules._SETS.clear()              # as a new process: the rules read again, the database from the cache
        t0 = time.perf_counter()
        ours()
        first_cached = time.perf_counter() - t0
    os.environ.pop(prefilter.CACHE_ENV)
    for _ in range(args.repeat):         # interleaved: a load that drifts touches every contender alike
        runs["grep_nvrm"].append(timed(lambda: subprocess.run(["grep", "-c", "NVRM", path], env=env,
                                                              capture_output=True, check=False)))
        runs["grep_F"].append(timed(lambda: subprocess.run(["grep", "-c", "-F", *kw, path], env=env,
                                                           capture_output=True, check=False)))
        runs["ours"].append(timed(ours))
        runs["grep_F_words"].append(timed(lambda: subprocess.run(["grep", "-c", "-F", *kw_words, path], env=env,
                                                                 capture_output=True, check=False)))
    med = {k: statistics.median(v) for k, v in runs.items()}
    engine = "hyperscan" if ruleset().prefilter._hs not in (None, False) else "grep/python"
    result = {"bytes": size, "mix": args.mix, "engine": engine, "repeat": args.repeat, "cpus": os.cpu_count(),
              "load": os.getloadavg()[0], "grep_s": med["grep_nvrm"], "slurmtools_s": med["ours"],
              "slurmtools_first_s": first, "slurmtools_first_cached_s": first_cached,
              "grep_F_keywords_s": med["grep_F"],
              "grep_F_keywords_words_s": med["grep_F_words"], "slurmtools_MBps": size / med["ours"] / 2**20,
              "ratio_to_grep_F": med["grep_F"] / med["ours"],
              "ratio_to_grep_F_words": med["grep_F_words"] / med["ours"],
              "keywords": len(keywords), "words": len(ERROR_WORDS), **counts}
    if not args.keep:
        os.unlink(path)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{size / 2**20:.0f} MB kernel log ({args.mix}), median of {args.repeat}, prefilter: {engine}, "
              f"load {result['load']:.1f} on {result['cpus']} CPUs:")
        print(f"  LC_ALL=C grep -c NVRM                          {med['grep_nvrm']:6.2f} s")
        print(f"  grep -c -F, our {len(keywords)} keywords              {med['grep_F']:6.2f} s")
        print(f"  grep -c -F -i, keywords + {len(ERROR_WORDS)} failure words   {med['grep_F_words']:6.2f} s")
        print(f"  slurmtools diagnose                            {med['ours']:6.2f} s "
              f"({result['slurmtools_MBps']:.0f} MB/s; {counts['findings']} findings from {counts['fault_lines']} "
              f"fault lines; first call {first:.2f} s, "
              f"{first_cached:.2f} s with the compiled prefilter cached)")
        print(f"  speed relative to grep -F with our keywords: {result['ratio_to_grep_F']:.2f}x "
              f"(to keywords + words: {result['ratio_to_grep_F_words']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
