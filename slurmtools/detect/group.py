"""Flags that start together are one event, not many device faults.

* Several devices of one node (`node_devices` or more GPUs or ports) raising flags of the same kind within
  `together` of each other: one node-level flag (device None) that names them: a failed fan, a PSU, a
  bad riser or an overheating chassis is the node's fault, and one finding says so.
* The same kind starting on `fleet_nodes` or more nodes within `together`: a fleet event (a room's cooling,
  a firmware roll-out, a job phase that the workload state did not catch), reported apart and never turned
  into findings or exclusions: excluding the fleet helps nobody, and the circuit breaker should not be the
  only thing that says so.

Hard flags (a fatal XID, a double-bit error, a row-remap failure) are facts about one device: never merged,
never folded into a fleet event."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from slurmtools.detect.score import Flag


@dataclass
class FleetEvent:
    kind: str
    start_i: int
    end_i: int
    nodes: list[str]
    flags: int
    devices: dict[str, list[str]] = field(default_factory=dict)


def _bursts(flags: list[Flag], window: int) -> list[list[Flag]]:
    """Flags sorted by start, cut where a start is more than WINDOW samples after the burst's first."""
    out: list[list[Flag]] = []
    for f in sorted(flags, key=lambda f: f.start_i):
        if out and f.start_i - out[-1][0].start_i <= window:
            out[-1].append(f)
        else:
            out.append([f])
    return out


def merge_nodes(flags: list[Flag], min_devices: int, window: int) -> list[Flag]:
    """Per node and kind, a burst of MIN_DEVICES or more device flags becomes one node-level flag."""
    keep = [f for f in flags if f.hard or f.device is None]
    soft: dict[tuple[str, str], list[Flag]] = {}
    for f in flags:
        if not f.hard and f.device is not None:
            soft.setdefault((f.node, f.kind), []).append(f)
    for group in soft.values():
        for burst in _bursts(group, window):
            devices = sorted({f.device for f in burst if f.device is not None})
            if min_devices <= 0 or len(devices) < min_devices:
                keep.extend(burst)
                continue
            top = max(burst, key=lambda f: f.score)
            signals = [{**s, "device": f.device} for f in sorted(burst, key=lambda f: -f.score)
                       for s in f.signals[:2]]
            keep.append(replace(top, device=None, start_i=min(f.start_i for f in burst),
                                end_i=max(f.end_i for f in burst),
                                first_evidence_i=min(f.first_evidence_i for f in burst), signals=signals,
                                devices=devices))
    return sorted(keep, key=lambda f: (f.node, f.device or "", f.start_i))


def fleet(flags: list[Flag], min_nodes: int, window: int) -> tuple[list[Flag], list[FleetEvent]]:
    """Bursts of one kind over MIN_NODES or more nodes: taken out of FLAGS and returned as fleet events."""
    if min_nodes <= 0:
        return flags, []
    by_kind: dict[str, list[Flag]] = {}
    for f in flags:
        if not f.hard:
            by_kind.setdefault(f.kind, []).append(f)
    dropped: set[int] = set()
    events: list[FleetEvent] = []
    for kind, group in by_kind.items():
        for burst in _bursts(group, window):
            nodes = sorted({f.node for f in burst})
            if len(nodes) < min_nodes:
                continue
            dropped.update(id(f) for f in burst)
            devs: dict[str, list[str]] = {}
            for f in burst:
                devs.setdefault(f.node, []).extend(f.devices or ([f.device] if f.device else []))
            events.append(FleetEvent(kind, min(f.start_i for f in burst), max(f.end_i for f in burst), nodes,
                                     len(burst), {n: sorted(v) for n, v in devs.items() if v}))
    return [f for f in flags if id(f) not in dropped], sorted(events, key=lambda e: e.start_i)


def apply(flags: list[Flag], node_devices: int, fleet_nodes: int, window: int) -> tuple[list[Flag], list[FleetEvent]]:
    return fleet(merge_nodes(flags, node_devices, window), fleet_nodes, window)
