"""Node-local metrics for node_exporter's textfile collector (`[metrics] textfile_dir`): the last health gate and
the last epilog on this node, written by the hooks themselves.

Stdlib only, on purpose: importing prometheus_client costs about 55 ms, more than the whole prolog gate, so the
hooks write the text exposition format (version 0.0.4) directly; the tests parse what they write with
prometheus_client's parser and the lab checks it with promtool. Two files, one per writer
(`slurmtools_gate.prom`, `slurmtools_epilog.prom`), each replaced whole (a temporary sibling, then rename: the
collector reads `*.prom` only and never sees half a file). Names start `slurmtools_hook_`, apart from the
central exporter's `slurmtools_node_*` series (those carry a node label; these get the scrape's instance).
The directory must be root's and writable by root only, like the spool: root writes there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.checks.runner import Report
    from slurmtools.config import Config

    Family = tuple[str, str, str, list[tuple[dict[str, str], float]]]   # name, type, help, samples

VERDICTS = ("ok", "warn", "fail", "unknown")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def render(families: Iterable[Family]) -> str:
    out = []
    for name, kind, help_, samples in families:
        out.append(f"# HELP {name} {help_.replace(chr(92), chr(92) * 2).replace(chr(10), chr(92) + 'n')}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            out.append(f"{name}{{{lab}}} {_number(value)}" if lab else f"{name} {_number(value)}")
    return "\n".join(out) + "\n"


def write(cfg: Config, filename: str, families: Iterable[Family], node: str) -> str | None:
    """Write FAMILIES to textfile_dir/FILENAME (`{node}` in textfile_dir: this node's name, for several nodes on
    one host as in the lab); None when textfile_dir is not set. Raises OSError (UntrustedPath for a directory
    someone else could write)."""
    from slurmtools.fsutil import check_trusted, write_atomic

    where = str(cfg.metrics.textfile_dir or "").replace("{node}", node)
    if not where:
        return None
    if not os.path.isabs(where):
        raise OSError(f"[metrics] textfile_dir {where!r} is not an absolute path")
    check_trusted(where, what="directory")
    path = os.path.join(where, filename)
    write_atomic(path, render(families), 0o644)
    return path


def gate_families(report: Report) -> list[Family]:
    verdict = report.verdict
    statuses: dict[str, str] = {}
    for r in report.results:          # a check with several results shows its worst
        order = {"ok": 0, "warn": 1, "unknown": 2, "fail": 3}
        if order.get(r.status, 2) >= order.get(statuses.get(r.check, "ok"), 0):
            statuses[r.check] = r.status
    return [
        ("slurmtools_hook_gate_verdict", "gauge", "1 for the verdict of this node's last health gate",
         [({"verdict": v, "profile": report.profile}, 1.0 if v == verdict else 0.0) for v in VERDICTS]),
        ("slurmtools_hook_gate_check_status", "gauge", "1 for each check's status in this node's last health gate",
         [({"check": c, "status": s}, 1.0 if s == st else 0.0) for c, st in sorted(statuses.items())
          for s in VERDICTS]),
        ("slurmtools_hook_gate_duration_seconds", "gauge", "How long this node's last health gate took",
         [({}, report.duration_ms / 1000.0)]),
        ("slurmtools_hook_gate_last_run_timestamp_seconds", "gauge", "When this node's last health gate ran",
         [({}, float(report.time))]),
    ]


def epilog_families(findings: list[Any], duration_s: float, internal_error: bool,
                    now: float | None = None) -> list[Family]:
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        key = (str(f.category), str(f.severity))
        counts[key] = counts.get(key, 0) + 1
    return [
        ("slurmtools_hook_epilog_findings", "gauge", "Findings of this node's last epilog, by category and severity",
         [({"category": c, "severity": s}, float(n)) for (c, s), n in sorted(counts.items())]),
        ("slurmtools_hook_epilog_internal_error", "gauge", "1 if this node's last epilog failed in slurmtools itself",
         [({}, 1.0 if internal_error else 0.0)]),
        ("slurmtools_hook_epilog_duration_seconds", "gauge", "How long this node's last epilog took",
         [({}, duration_s)]),
        ("slurmtools_hook_epilog_last_run_timestamp_seconds", "gauge", "When this node's last epilog ran",
         [({}, time.time() if now is None else now)]),
    ]
