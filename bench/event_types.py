"""What typing the ledger's events costs a hook (issue 31): the import of msgspec or dataclasses against the
stdlib-only field tables of ledger/fields.py and the enums of ledger/events.py, each in a fresh interpreter
(-X importtime, the minimum of N runs, cumulative microseconds of the top module), and the time to build, check
and write one epilog's batch of events (checked or not).

    PYTHONPATH=. python bench/event_types.py [N]
"""

from __future__ import annotations

import subprocess
import sys
import time


def import_us(module: str, runs: int) -> int:
    best = None
    for _ in range(runs):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                             text=True, check=True).stderr
        total = sum(int(line.split("|")[1]) for line in err.splitlines()
                    if line.startswith("import time:") and line.split("|")[2].strip() == module)
        best = total if best is None else min(best, total)
    return best or 0


def after_json_ms(module: str, runs: int) -> float:
    """The import of MODULE in a fresh interpreter once json (and so enum and re) is loaded, as in a hook."""
    code = f"import json, time, slurmtools.ledger; t = time.perf_counter(); import {module}; " \
           "print(time.perf_counter() - t)"
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(runs)) * 1000


def batch_us(runs: int, checked: bool = True) -> float:
    from slurmtools.ledger.spool import Event

    data = {"node": "n1", "job_id": 42, "restart_count": 0, "source": "kernel", "kind": "xid", "xid": 79,
            "pci": "0000:3b:00", "gpu": None, "category": "hardware", "severity": "critical",
            "action": "drain_node", "trust": "kernel", "message": "GPU has fallen off the bus", "details": {}}
    t0 = time.perf_counter()
    for _ in range(runs):
        "".join(Event("finding", dict(data), cluster="c", checked=checked).to_json() for _ in range(10))
    return (time.perf_counter() - t0) / runs * 1e6


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for module in ("msgspec", "dataclasses", "enum", "slurmtools.ledger.fields", "slurmtools.ledger.events"):
        try:
            print(f"import {module}: {import_us(module, runs) / 1000:.1f} ms alone, "
                  f"{after_json_ms(module, runs):.2f} ms after json (min of {runs})")
        except subprocess.CalledProcessError:
            print(f"import {module}: not installed")
    for checked in (False, True, False, True):
        print(f"10 finding events built{', checked' if checked else ''} and written as JSON: "
              f"{batch_us(500, checked):.0f} us")


if __name__ == "__main__":
    main()
