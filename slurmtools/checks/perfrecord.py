"""Every fail-slow probe result as a ledger event (`perf` -> table `perf_results`): from the health hook's report
(hooks/prolog.py) and from the controller's deep checks (controller/recovery.py), so the fleet's medians per
model see every probe (controller/perf.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from slurmtools.checks.perfprobe import METRICS
from slurmtools.ledger.spool import Event, make_key

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.config import Config


def events(cfg: Config, node: str, profile: str, results: list[Any], when: float) -> list[Event]:
    """One event per `perf` result carrying a probe (checks.Result objects) of NODE's run at WHEN (Unix time)."""
    out = []
    stamp = datetime.fromtimestamp(when, UTC)
    for r in results:
        probe = r.evidence.get("probe") if r.check == "perf" else None
        if not isinstance(probe, dict) or not probe.get("uuid"):
            continue
        during = probe.get("during") or {}
        data = {"node": node, "time": stamp, "profile": profile, "gpu_index": int(r.gpus[0]) if r.gpus else -1,
                "uuid": str(probe["uuid"])[:96], "model": str(probe.get("model") or "")[:96],
                "pci_bus_id": str(probe.get("pci_bus_id") or "")[:32] or None, "status": r.status,
                **{m: _num(probe.get(m)) for m in METRICS}, "sm_mhz_min": _int(during.get("sm_mhz_min")),
                "power_w_max": _int(during.get("power_w_max")),
                "clocks_event_reasons": _int(during.get("clocks_event_reasons")), "seconds": _num(probe.get("seconds")),
                "details": {"during": during, "basis": r.evidence.get("basis"), "reason": r.reason[:500],
                            "error": probe.get("error")}}
        out.append(Event("perf", data, cluster=cfg.cluster, time=stamp,
                         key=make_key("perf", cfg.cluster, node, data["uuid"], when)))
    return out


def from_dicts(cfg: Config, node: str, profile: str, raw: list[object], when: float) -> list[Event]:
    """The same for the JSON of `slurmtools check --json` (a deep check run over ssh): what does not parse as a
    check result is left out (not ours to trust blindly)."""
    from slurmtools.checks import Result

    results = []
    for r in raw:
        if not isinstance(r, dict) or not isinstance(r.get("evidence") or {}, dict):
            continue
        try:
            results.append(Result.from_dict(r))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return events(cfg, node, profile, results, when)


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
