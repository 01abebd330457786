"""`slurmtools detect`: read the signals from Prometheus, score every device, and turn the evidence into flags.

`scan` reads [start - baseline, end] (the baseline is the history each device is compared with) and reports the
flags raised in [start, end]; `explain` shows every signal of one node at one moment; `flag_events` turns flags
into ledger findings (kind `anomaly`, trust `metrics`) and soft exclusions through the safety rails."""

from __future__ import annotations

import math
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from slurmtools import timeutil
from slurmtools.detect import group, prom, score
from slurmtools.detect.score import SETTLING, Evidence, Flag, Params, Signal

if TYPE_CHECKING:
    from slurmtools.config import Config


@dataclass
class Setup:
    """What the detector reads and how it names things, from `[detect]` in the configuration."""
    signals: list[Signal]
    params: Params
    node_labels: list[str] = field(default_factory=lambda: ["Hostname", "nodename", "node", "instance"])
    gpu_labels: list[str] = field(default_factory=lambda: ["gpu"])
    port_labels: list[str] = field(default_factory=lambda: ["device", "port", "export"])
    peer_labels: list[str] = field(default_factory=lambda: ["modelName"])
    busy_query: str = "DCGM_FI_DEV_GPU_UTIL"
    busy_threshold: float = 30.0
    settle: int = 10
    generic: list[str] = field(default_factory=list)


def packaged_signals() -> list[dict[str, Any]]:
    text = resources.files("slurmtools").joinpath("data/detect_signals.toml").read_text()
    return list(tomllib.loads(text)["signal"])


def setup_from(cfg: Config) -> Setup:
    """The detector's setup from the configuration: packaged signals, the site's replacing them by name."""
    from slurmtools.diagnosis import catalog

    d = cfg.detect
    merged = {s["name"]: s for s in packaged_signals()}
    for s in d.signals:
        merged[str(s.get("name"))] = dict(s)
    signals = [Signal.from_dict(s) for s in merged.values() if s.get("query")]
    overrides = cfg.xid_overrides() or None
    hard = frozenset(x for x in catalog.xids() if catalog.lookup(x, overrides).get("action")
                     in {"reset_gpu", "reboot_node", "drain_node"})

    def parse_duration(text: str) -> float:
        return timeutil.parse_duration(text).total_seconds()

    p = Params(threshold=d.threshold, clear=d.clear, persist=d.persist, persist_of=d.persist_of,
               clear_samples=d.clear_samples, cooldown_s=parse_duration(d.cooldown), peer_z=d.peer_z,
               min_peers=d.min_peers, baseline_s=parse_duration(d.baseline), gap_s=parse_duration(d.baseline_gap),
               min_history=d.min_history, step_s=parse_duration(d.step), node_devices=d.node_devices,
               fleet_nodes=d.fleet_nodes, together_s=parse_duration(d.together), hard_xids=hard)
    return Setup(signals, p, node_labels=list(d.node_labels), gpu_labels=list(d.gpu_labels),
                 port_labels=list(d.port_labels), peer_labels=list(d.peer_labels), busy_query=d.busy_query,
                 busy_threshold=d.busy_threshold, settle=int(parse_duration(d.settle) // p.step_s),
                 generic=list(d.generic))


def node_of(labels: dict[str, str], names: list[str]) -> str | None:
    for name in names:
        value = labels.get(name)
        if value:
            if name == "instance":      # host:port, [v6 address]:port
                if value.startswith("[") and "]" in value:
                    value = value[1:value.index("]")]
                elif value.count(":") == 1:
                    value = value.rsplit(":", 1)[0]
            return value.split(".")[0] if not value.replace(".", "").isdigit() else value
    return None


def device_of(labels: dict[str, str], level: str, setup: Setup) -> str | None:
    if level == "node":
        return None
    names = setup.gpu_labels if level == "gpu" else setup.port_labels
    parts = [labels[n] for n in names if labels.get(n)]
    return ":".join(parts) if parts else None


@dataclass
class Result:
    grid: prom.Grid
    first: int
    evidence: list[Evidence]
    flags: list[Flag]
    series: int
    queries: int
    seconds: float
    missing: list[str]
    fleet: list[group.FleetEvent] = field(default_factory=list)


def run_scan(client: prom.Client, setup: Setup, start: float, end: float) -> Result:
    t0 = time.monotonic()
    p = setup.params
    # The grid starts on a multiple of block x step: the same moment is the same sample, and the own baselines
    # the same blocks, in every run (a flag keeps its start, so `detect run` records it once).
    align = p.step_s * p.block
    grid = prom.grid_for(math.floor((start - p.baseline_s - p.gap_s) / align) * align, end, p.step_s)
    first = max(0, math.ceil((start - grid.start) / p.step_s))
    gpu_state, node_state = _states(client, setup, grid)
    evs: list[Evidence] = []
    missing: list[str] = []
    n_series = 0
    signals = setup.signals + _generic(client, setup, grid)
    # The next signal is read while this one is scored: Prometheus evaluates on one core, numpy here on the other.
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = [pool.submit(client.range, signals[0].query, grid)] if signals else []
        for i, sig in enumerate(signals):
            answer = ahead.pop().result()
            if i + 1 < len(signals):
                ahead.append(pool.submit(client.range, signals[i + 1].query, grid))
            ev = _evidence(sig, answer, setup, grid, gpu_state, node_state)
            if ev is None:
                missing.append(sig.name)
                continue
            n_series += len(ev.keys)
            evs.append(ev)
    found, fleet = group.apply(score.flags(evs, p, first), p.node_devices, p.fleet_nodes,
                               int(p.together_s // p.step_s))
    return Result(grid, first, evs, found, n_series, client.queries, time.monotonic() - t0, missing, fleet)


def _evidence(sig: Signal, answer: list[prom.Series], setup: Setup, grid: prom.Grid,
              gpu_state: dict[tuple[str, str | None], np.ndarray],
              node_state: dict[str, np.ndarray]) -> Evidence | None:
    """One signal's series keyed by (node, device), with each one's workload state, scored; None if none."""
    rows: dict[tuple[str, str | None], np.ndarray] = {}
    groups: dict[tuple[str, str | None], str] = {}
    for s in answer:
        node = node_of(s.labels, setup.node_labels)
        if node is None:
            continue
        key = (node, device_of(s.labels, sig.level, setup))
        if sig.level == "gpu" and key[1] is None:
            continue
        old = rows.get(key)
        rows[key] = s.values if old is None else np.fmax(old, s.values)
        groups[key] = "|".join(s.labels.get(n, "") for n in setup.peer_labels) if sig.level == "gpu" else ""
    if not rows:
        return None
    keys = sorted(rows, key=lambda k: (k[0], k[1] or ""))
    X = np.vstack([rows[k] for k in keys])
    W = np.vstack([gpu_state.get(k, node_state.get(k[0], np.full(grid.n, np.nan))) if sig.level == "gpu"
                   else node_state.get(k[0], np.full(grid.n, np.nan)) for k in keys])
    return score.evaluate(sig, keys, X, W, [groups[k] for k in keys], setup.params)


def _states(client: prom.Client, setup: Setup,
            grid: prom.Grid) -> tuple[dict[tuple[str, str | None], np.ndarray], dict[str, np.ndarray]]:
    """Busy (1) or idle (0) per GPU and per node (most of its GPUs busy); NaN where utilisation is unknown;
    score.SETTLING for the first `settle` samples after a GPU's change of state (a node: while any of its GPUs
    settles)."""
    if not setup.busy_query:
        return {}, {}
    gpus: dict[tuple[str, str | None], np.ndarray] = {}
    for s in client.range(setup.busy_query, grid):
        node = node_of(s.labels, setup.node_labels)
        if node is None:
            continue
        gpus[(node, device_of(s.labels, "gpu", setup))] = settled(s.values >= setup.busy_threshold,
                                                                  np.isnan(s.values), setup.settle)
    nodes: dict[str, list[np.ndarray]] = {}
    for (node, _), v in gpus.items():
        nodes.setdefault(node, []).append(v)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_node = {}
        for n, rows in nodes.items():
            M = np.vstack(rows)
            moving = np.any(M == SETTLING, axis=0)
            M = np.where(M == SETTLING, np.nan, M)
            state = np.where(np.all(np.isnan(M), axis=0), np.nan, (np.nanmean(M, axis=0) >= 0.5).astype(float))
            per_node[n] = np.where(moving, SETTLING, state)
    return gpus, per_node


def settled(busy: np.ndarray, unknown: np.ndarray, settle: int) -> np.ndarray:
    """1 busy, 0 idle, NaN unknown (utilisation missing), score.SETTLING during the first SETTLE samples after a
    change between busy and idle or after a gap in the utilisation (temperatures, power and host memory follow
    a job's start or stop over minutes, each device at its own pace; a gap may hide a start or stop).
    score.evaluate leaves settling samples out of everything (the device is not scored, nor a peer, nor its own
    baseline); it skips unknown samples for busy-only signals and scores the others with the busy."""
    out = busy.astype(float)
    out[unknown] = np.nan
    if settle > 0 and out.size:
        was = np.concatenate([[np.nan], out[:-1]])
        # a change of state, or the first sample after a gap (what happened in the gap is not known)
        gap = np.isnan(was)
        start = ~unknown & ((~gap & (was != out)) | (gap & (np.arange(out.size) > 0)))
        for i in np.flatnonzero(start):
            out[i:i + settle] = SETTLING
        out[unknown] = np.nan
    return out


def _generic(client: prom.Client, setup: Setup, grid: prom.Grid) -> list[Signal]:
    """Every metric a generic selector matches, scored in both directions against a relative floor."""
    out: list[Signal] = []
    known = {s.query for s in setup.signals}
    for selector in setup.generic:
        for name in client.names(selector, grid.start, grid.start + grid.step * (grid.n - 1)):
            query = f"rate({name}[5m]) * 60" if name.endswith("_total") else name
            if query in known or name in known:
                continue
            level = "gpu" if name.startswith("DCGM_") else "node"
            out.append(Signal.from_dict({"name": f"generic:{name}", "query": query, "level": level,
                                         "direction": "both", "floor": 1e-9, "rel_floor": 0.1, "weight": 0.7,
                                         "kind": "anomaly", "category": "hardware"}))
    return out


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def flag_dict(f: Flag, grid: prom.Grid) -> dict[str, Any]:
    at = grid.times
    return {"node": f.node, "device": f.device, "start": iso(at[f.start_i]), "end": iso(at[f.end_i]),
            "score": f.score, "kind": f.kind, "category": f.category, "hard": f.hard,
            "evidence_since": iso(at[f.first_evidence_i]), **({"devices": f.devices} if f.devices else {}),
            "signals": [{**{k: v for k, v in s.items() if k != "at_i"}, "at": iso(at[s["at_i"]])}
                        for s in f.signals]}


def fleet_dict(e: group.FleetEvent, grid: prom.Grid) -> dict[str, Any]:
    at = grid.times
    return {"kind": e.kind, "start": iso(at[e.start_i]), "end": iso(at[e.end_i]), "nodes": e.nodes,
            "flags": e.flags, "devices": e.devices}


def explain(res: Result, node: str, at: float) -> list[dict[str, Any]]:
    """Every signal of NODE's devices at time AT: value, peers' median, own baseline, z-scores, evidence."""
    i = min(max(res.grid.index(at), 0), res.grid.n - 1)
    rows = []
    for ev in res.evidence:
        for r, (n, dev) in enumerate(ev.keys):
            if n != node:
                continue
            sig = ev.signal
            rows.append({"signal": sig.name, "device": dev, "kind": sig.kind, "unit": sig.unit,
                         "value": score._num(ev.values[r, i]), "hard": bool(ev.hard[r, i]),
                         "peer_median": score._num(ev.peer_median[r, i]),
                         "own_baseline": score._num(ev.self_median[r, i] + ev.peer_median[r, i]),
                         "z_peer": score._num(ev.z_peer[r, i], 2), "z_self": score._num(ev.z_self[r, i], 2),
                         "evidence": score._num(ev.evidence[r, i], 2)})
    rows.sort(key=lambda x: (-float(x["evidence"] or 0.0), str(x["signal"]), str(x["device"] or "")))
    return rows
