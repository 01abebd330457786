"""A writer process for the concurrency tests: spool N epilog-like findings, then try to ship them.

    python tests/ledger_writer.py TAG N [--no-flush] [--loop]
Uses the configuration from the environment (SLURMTOOLS_LEDGER_URL, SLURMTOOLS_SPOOL_DIR).
"""

from __future__ import annotations

import sys

from slurmtools import config
from slurmtools.ledger import api
from slurmtools.ledger.spool import Event, make_key


def main() -> int:
    tag, count = sys.argv[1], int(sys.argv[2])
    cfg = config.get()
    i = 0
    while True:
        batch = [Event("finding", {"node": f"node{tag}", "job_id": 1000 + i, "source": "kernel", "kind": "xid",
                                   "xid": 79, "category": "hardware", "severity": "critical",
                                   "action": "drain_node", "trust": "kernel",
                                   "message": f"writer {tag} event {i + k}"},
                       cluster="test", key=make_key("writer", tag, i + k)) for k in range(count)]
        api.record(batch, cfg)
        i += count
        if "--loop" not in sys.argv:
            break
    if "--no-flush" not in sys.argv:
        api.flush(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
