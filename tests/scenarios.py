"""Scenario generator for `slurmtools detect`: a small GPU cluster running multi-node training, written as
OpenMetrics with the real exporters' metric and label names (NVIDIA dcgm-exporter's DCGM_FI_DEV_* with
gpu/UUID/modelName/Hostname; node_exporter's node_infiniband_*, node_network_carrier_changes_total,
node_load1, node_memory_MemAvailable_bytes with instance), with planted failures and benign confounders,
and a labels file that says what was planted where and when.

Failure physics (what precedes what), from public accounts: thermal runaway (temperature climbing over an
hour or more, then the GPU falls off the bus, XID 79), rising single-bit ECC errors ending in a double-bit
error (XID 48) or a row-remap failure, PCIe replays rising before the link drops (XID 79), NVLink CRC
errors before an NVLink fatal error (XID 74), an InfiniBand link flapping before it stays down, the
hardware power brake (clock event reason 0x80) pulling power and clocks down, SM clock sag, and sudden
failures with no precursor (XID 79, 95, 119). Confounders: fleet-wide job starts and stops, a warm aisle
(several nodes a few degrees warmer for hours), a noisy but healthy node, a node rebooted for maintenance
(gone, then back idle with reset counters), an exporter that stops reporting for a while.

    python tests/scenarios.py --seed 1 --out /tmp/scn     # writes scenario.om and labels.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

STEP = 60.0
PRECURSOR_KINDS = ["thermal", "ecc", "pcie", "nvlink", "ib_flap", "power_brake", "clock_sag", "row_remap"]
SUDDEN = [("sudden_xid79", 79), ("sudden_xid95", 95), ("sudden_xid119", 119)]


@dataclass
class Cluster:
    nodes: int = 16
    gpus: int = 8
    hours: float = 24.0
    start: float = 1_790_000_000.0     # 2026-09-21, a fixed epoch so runs are reproducible
    seed: int = 1
    model: str = "NVIDIA H100 80GB HBM3"
    names: list[str] = field(default_factory=list)     # node names (default gpu001, gpu002, ...)

    @property
    def n(self) -> int:
        return int(self.hours * 3600 / STEP) + 1

    def node(self, i: int) -> str:
        return self.names[i] if self.names else f"gpu{i + 1:03d}"


def generate(c: Cluster, precursors: list[str] | None = None, sudden: int = 1,
             confounders: bool = True) -> tuple[dict[str, Any], dict]:
    """Arrays per metric: {metric: {(node, device): values}} plus the labels (failures, confounders).
    PRECURSORS: the failure kinds with a precursor to plant (default: 5 of the 8, rotating with the seed, so
    a few seeds cover them all; each failure and each confounder on a node of its own)."""
    rng = np.random.default_rng(c.seed)
    T, N, G = c.n, c.nodes, c.gpus
    t = np.arange(T)
    # fleet-wide workload: two jobs, each on half the nodes, running 2-6 h with 10-40 min gaps
    busy = np.zeros((N, T))
    for half in (0, 1):
        i = int(rng.integers(0, 60))
        while i < T:
            run = int(rng.integers(120, 360))
            busy[half::2, i:i + run] = 1.0
            i += run + int(rng.integers(10, 40))
    m: dict[str, dict[tuple[str, str], np.ndarray]] = {k: {} for k in (
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_XID_ERRORS", "node_infiniband_link_downed_total",
        "node_infiniband_symbol_error_total", "node_network_carrier_changes_total", "node_infiniband_state_id",
        "node_network_up", "node_load1", "node_memory_MemAvailable_bytes")}
    ambient = 1.0 * np.sin(2 * np.pi * t / (24 * 60))          # the room's day cycle, every node alike
    offsets: dict[tuple[str, str], float] = {}
    # --- healthy base
    for ni in range(N):
        node = c.node(ni)
        b = busy[ni]
        ramp = _smooth(b, 8)                                    # temperatures follow the load in minutes
        for g in range(G):
            off = rng.normal(0, 2.5)                            # this GPU's slot runs warmer or cooler
            offsets[(node, str(g))] = off
            util = np.where(b > 0, np.clip(rng.normal(96, 2, T), 0, 100), np.clip(rng.normal(0.5, 0.5, T), 0, 100))
            temp = 34 + off / 2 + ramp * (30 + off) + ambient + rng.normal(0, 0.6, T)
            power = 70 + ramp * (560 + rng.normal(0, 10)) + rng.normal(0, 8, T) * (0.3 + ramp)
            clock = np.where(b > 0, 1980 - rng.exponential(6, T), 345 + rng.normal(0, 5, T))
            m["DCGM_FI_DEV_GPU_UTIL"][(node, str(g))] = util
            m["DCGM_FI_DEV_GPU_TEMP"][(node, str(g))] = temp
            m["DCGM_FI_DEV_MEMORY_TEMP"][(node, str(g))] = temp + 6 + rng.normal(0, 0.4, T)
            m["DCGM_FI_DEV_POWER_USAGE"][(node, str(g))] = power
            m["DCGM_FI_DEV_SM_CLOCK"][(node, str(g))] = clock
            m["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"][(node, str(g))] = np.where(
                b > 0, np.where(rng.random(T) < 0.05, 4.0, 0.0), 1.0)        # SW power cap now and then; idle
            for name, rate in (("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 1 / 2000),
                               ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 1 / 3000),
                               ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 1 / 1500)):
                m[name][(node, str(g))] = np.cumsum(rng.random(T) < rate).astype(float)
            for name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_PENDING",
                         "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_XID_ERRORS"):
                m[name][(node, str(g))] = np.zeros(T)
            port = f"mlx5_{g}:1"
            m["node_infiniband_link_downed_total"][(node, port)] = np.zeros(T)
            m["node_infiniband_symbol_error_total"][(node, port)] = np.cumsum(rng.random(T) < 1 / 4000).astype(float)
            m["node_network_carrier_changes_total"][(node, f"ib{g}")] = np.full(T, 2.0)
            m["node_infiniband_state_id"][(node, port)] = np.full(T, 4.0)          # active
            m["node_network_up"][(node, f"ib{g}")] = np.ones(T)
        m["node_load1"][(node, "")] = np.maximum(0, 2 + 60 * _smooth(b, 3) + rng.normal(0, 3, T))
        m["node_memory_MemAvailable_bytes"][(node, "")] = 1.9e12 - 1.2e12 * _smooth(b, 5) + rng.normal(0, 2e10, T)
    labels: dict[str, Any] = {"step_s": STEP, "start": c.start, "end": c.start + (T - 1) * STEP, "nodes": N,
                              "gpus_per_node": G, "seed": c.seed, "failures": [], "confounders": []}
    used: set[int] = set()

    def pick_node() -> int:
        if len(used) >= N:
            raise ValueError(f"{N} nodes are too few for the failures and confounders asked for")
        ni = int(rng.integers(0, N))
        while ni in used:
            ni = int(rng.integers(0, N))
        used.add(ni)
        return ni

    # --- confounders (on their own nodes)
    if confounders:
        _confound(c, m, labels, rng, pick_node, G, T, busy)
    _plant(c, m, labels, rng, pick_node, G, T, busy, offsets, ambient, precursors, sudden)
    if confounders and len(used) < N:
        _link_reset(c, m, labels, sorted(set(range(N)) - used), G, T)
    return m, labels


def _link_reset(c: Cluster, m: dict, labels: dict[str, Any], free: list[int], G: int, T: int) -> None:
    """A planned reset of one IB link (a cable reseated, a switch port bounced): one down and back. A generator of
    its own, so the other series are those of the seed without it."""
    rng = np.random.default_rng(c.seed + 7919)
    node = c.node(free[int(rng.integers(0, len(free)))])
    g = int(rng.integers(0, G))
    i = int(rng.integers(int(T * 0.4), int(T * 0.9)))
    _flap(m, node, g, np.arange(T) == i)
    labels["confounders"].append({"kind": "link_reset", "nodes": [node], "start": c.start + i * STEP,
                                  "end": c.start + min(T - 1, i + 60) * STEP})


def _flap(m: dict, node: str, g: int, flaps: np.ndarray) -> None:
    """The link of NODE's GPU G goes down and back at each sample where FLAPS is set: the IB port counts a down,
    its state reads down at that scrape, the netdev's carrier changes twice (down, up) and reads down."""
    dev = f"mlx5_{g}:1"
    m["node_infiniband_link_downed_total"][(node, dev)] += np.cumsum(flaps)
    m["node_network_carrier_changes_total"][(node, f"ib{g}")] += 2 * np.cumsum(flaps)
    m["node_infiniband_state_id"][(node, dev)][flaps > 0] = 1.0
    m["node_network_up"][(node, f"ib{g}")][flaps > 0] = 0.0


def _confound(c: Cluster, m: dict, labels: dict[str, Any], rng: np.random.Generator, pick_node: Any, G: int,
              T: int, busy: np.ndarray) -> None:
    N = c.nodes
    warm = [pick_node() for _ in range(4)] if N >= 12 else [pick_node() for _ in range(2)]
    w0 = int(rng.integers(int(T * 0.35), int(T * 0.6)))
    w1 = min(T, w0 + int(rng.integers(240, 420)))
    bump = np.zeros(T)
    bump[w0:w1] = 3.0
    bump = _smooth(bump, 30)
    for ni in warm:
        for g in range(G):
            for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"):
                m[name][(c.node(ni), str(g))] = m[name][(c.node(ni), str(g))] + bump
    labels["confounders"].append({"kind": "warm_aisle", "nodes": [c.node(i) for i in warm],
                                  "start": c.start + w0 * STEP, "end": c.start + w1 * STEP})
    noisy = pick_node()
    nn = c.node(noisy)
    for g in range(G):
        key = (nn, str(g))
        m["DCGM_FI_DEV_GPU_TEMP"][key] = m["DCGM_FI_DEV_GPU_TEMP"][key] + rng.normal(0, 2.5, T)
        m["DCGM_FI_DEV_POWER_USAGE"][key] = m["DCGM_FI_DEV_POWER_USAGE"][key] + rng.normal(0, 40, T)
        dips = rng.random(T) < 0.03
        m["DCGM_FI_DEV_SM_CLOCK"][key] = m["DCGM_FI_DEV_SM_CLOCK"][key] - dips * rng.uniform(50, 300, T)
        m["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"][key] = np.cumsum(rng.random(T) < 1 / 400).astype(float)
    labels["confounders"].append({"kind": "noisy_node", "nodes": [nn], "start": c.start, "end": labels["end"]})
    reboot = pick_node()
    rn = c.node(reboot)
    r0 = int(rng.integers(int(T * 0.4), int(T * 0.8)))
    r1, r2 = r0 + 20, min(T, r0 + 20 + 60)
    for name, series in m.items():
        for key in list(series):
            if key[0] != rn:
                continue
            v = series[key].copy()
            v[r0:r1] = np.nan                                     # gone
            if name.endswith("_TOTAL") or name.endswith("_total") or name == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER":
                v[r1:] = v[r1:] - v[r1]                            # counters restart at zero
            series[key] = v
    busy[reboot, r1:r2] = 0.0
    for g in range(G):
        key = (rn, str(g))
        m["DCGM_FI_DEV_GPU_UTIL"][key][r1:r2] = 0.0
        m["DCGM_FI_DEV_GPU_TEMP"][key][r1:r2] = 33 + rng.normal(0, 0.5, r2 - r1)
        m["DCGM_FI_DEV_MEMORY_TEMP"][key][r1:r2] = 39 + rng.normal(0, 0.5, r2 - r1)
        m["DCGM_FI_DEV_POWER_USAGE"][key][r1:r2] = 65 + rng.normal(0, 3, r2 - r1)
        m["DCGM_FI_DEV_SM_CLOCK"][key][r1:r2] = 345.0
        m["node_network_carrier_changes_total"][(rn, f"ib{g}")][r1:] = 2.0
    labels["confounders"].append({"kind": "maintenance_reboot", "nodes": [rn], "start": c.start + r0 * STEP,
                                  "end": c.start + r2 * STEP})
    gap = pick_node()
    gn = c.node(gap)
    g0 = int(rng.integers(int(T * 0.3), int(T * 0.8)))
    for name, series in m.items():
        if name.startswith("DCGM_"):
            for key in series:
                if key[0] == gn:
                    series[key][g0:g0 + 45] = np.nan
    labels["confounders"].append({"kind": "metrics_missing", "nodes": [gn], "start": c.start + g0 * STEP,
                                  "end": c.start + (g0 + 45) * STEP})


def _plant(c: Cluster, m: dict, labels: dict[str, Any], rng: np.random.Generator, pick_node: Any, G: int, T: int,
           busy: np.ndarray, offsets: dict[tuple[str, str], float], ambient: np.ndarray,
           precursors: list[str] | None, sudden: int) -> None:
    # --- failures
    if precursors is None:
        k0 = (c.seed * 5) % len(PRECURSOR_KINDS)
        precursors = [PRECURSOR_KINDS[(k0 + i) % len(PRECURSOR_KINDS)] for i in range(5)]
    chosen = [(k, None) for k in precursors] + [SUDDEN[(c.seed + i) % len(SUDDEN)] for i in range(sudden)]
    for kind, xid in chosen:
        ni = pick_node()
        node = c.node(ni)
        g = int(rng.integers(0, G))
        fail = int(rng.integers(int(T * 0.45), int(T * 0.95)))
        lead = 0 if xid is not None else int(rng.integers(60, 240))
        pre = fail - lead
        busy_node = busy[ni]
        busy_node[max(0, pre - 30):fail] = 1.0                     # the failing node is in a job
        _make_busy(m, node, G, busy_node, max(0, pre - 30), fail, rng, offsets, ambient)
        dev = str(g)
        x = np.linspace(0, 1, max(lead, 1))
        if kind == "thermal":
            for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"):
                m[name][(node, dev)][pre:fail] += 28 * x ** 1.5
            xid = 79
        elif kind == "ecc":
            rate = 0.02 * np.exp(x * np.log(400))                  # errors per minute, rising 400-fold
            _add_counter(m["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"][(node, dev)], pre, fail, rate, rng)
            m["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"][(node, dev)][fail:] += 1
            xid = 48
        elif kind == "pcie":
            _add_counter(m["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"][(node, dev)], pre, fail, 0.05 + 30 * x ** 2, rng)
            xid = 79
        elif kind == "nvlink":
            _add_counter(m["DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"][(node, dev)], pre, fail,
                         0.1 + 60 * x ** 2, rng)
            xid = 74
        elif kind == "ib_flap":
            dev = f"mlx5_{g}:1"
            flaps = np.zeros(T)
            k = pre
            while k < fail:
                flaps[k] = 1
                k += int(rng.integers(4, 16))
            _flap(m, node, g, flaps)
            _add_counter(m["node_infiniband_symbol_error_total"][(node, dev)], pre, fail, 5 + 50 * x, rng)
            xid = 0
        elif kind == "power_brake":
            on = (rng.random(lead) < (0.2 + 0.7 * x)).astype(float)
            m["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"][(node, dev)][pre:fail] = np.where(on > 0, 128.0, 0.0)
            m["DCGM_FI_DEV_POWER_USAGE"][(node, dev)][pre:fail] -= on * rng.uniform(150, 300, lead)
            m["DCGM_FI_DEV_SM_CLOCK"][(node, dev)][pre:fail] -= on * rng.uniform(300, 700, lead)
            xid = 79
        elif kind == "clock_sag":
            m["DCGM_FI_DEV_SM_CLOCK"][(node, dev)][pre:fail] -= 260 * x
            m["DCGM_FI_DEV_POWER_USAGE"][(node, dev)][pre:fail] -= 90 * x
            xid = 119
        elif kind == "row_remap":
            _add_counter(m["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"][(node, dev)], pre, fail, 0.05 + 5 * x, rng)
            m["DCGM_FI_DEV_ROW_REMAP_PENDING"][(node, dev)][pre + lead // 2:] = 1.0
            m["DCGM_FI_DEV_ROW_REMAP_FAILURE"][(node, dev)][fail:] = 1.0
            xid = 64
        if xid:
            xk = (node, str(g))
            m["DCGM_FI_DEV_XID_ERRORS"][xk][fail:min(T, fail + 30)] = float(xid)
            if xid in (79, 95, 119, 74, 48):                      # the GPU is gone: its series stop
                for name, series in m.items():
                    if name.startswith("DCGM_") and name != "DCGM_FI_DEV_XID_ERRORS":
                        series[xk][fail + 2:] = np.nan
        else:
            m["node_infiniband_link_downed_total"][(node, dev)][fail:] += 1         # down for good
            m["node_network_carrier_changes_total"][(node, f"ib{g}")][fail:] += 1
            m["node_infiniband_state_id"][(node, dev)][fail:] = 1.0
            m["node_network_up"][(node, f"ib{g}")][fail:] = 0.0
        labels["failures"].append({"kind": kind, "node": node, "device": dev, "xid": xid or None,
                                   "precursor_start": c.start + pre * STEP if lead else None,
                                   "failure": c.start + fail * STEP})


def _smooth(x: np.ndarray, tau: float) -> np.ndarray:
    out = np.empty_like(x, dtype=float)
    acc = float(x[0])
    a = 1.0 / tau
    for i, v in enumerate(x):
        acc += a * (float(v) - acc)
        out[i] = acc
    return out


def _make_busy(m: dict, node: str, G: int, b: np.ndarray, a: int, z: int, rng: np.random.Generator,
               offsets: dict[tuple[str, str], float], ambient: np.ndarray) -> None:
    """Keep NODE in a job from sample A to Z (the healthy physics of the base, recomputed)."""
    ramp = _smooth(b, 8)[a:z]
    for g in range(G):
        key = (node, str(g))
        off = offsets[key]
        m["DCGM_FI_DEV_GPU_UTIL"][key][a:z] = np.clip(rng.normal(96, 2, z - a), 0, 100)
        temp = 34 + off / 2 + ramp * (30 + off) + ambient[a:z] + rng.normal(0, 0.6, z - a)
        m["DCGM_FI_DEV_GPU_TEMP"][key][a:z] = temp
        m["DCGM_FI_DEV_MEMORY_TEMP"][key][a:z] = temp + 6 + rng.normal(0, 0.4, z - a)
        m["DCGM_FI_DEV_POWER_USAGE"][key][a:z] = 70 + ramp * 560 + rng.normal(0, 8, z - a) * (0.3 + ramp)
        m["DCGM_FI_DEV_SM_CLOCK"][key][a:z] = 1980 - rng.exponential(6, z - a)
        m["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"][key][a:z] = 0.0


def _add_counter(series: np.ndarray, a: int, z: int, per_min: np.ndarray, rng: np.random.Generator) -> None:
    per_min = np.broadcast_to(per_min, (z - a,))
    inc = rng.poisson(per_min * STEP / 60.0)
    series[a:z] += np.cumsum(inc)
    series[z:] += inc.sum()


def write_openmetrics(c: Cluster, m: dict[str, dict[tuple[str, str], np.ndarray]], path: Path,
                      span: tuple[int, int] | None = None) -> int:
    """One OpenMetrics file for `promtool tsdb create-blocks-from openmetrics` (only samples SPAN[0]:SPAN[1]
    when given: a week is loaded a day at a time). Returns the samples written."""
    a, z = span or (0, c.n)
    ts = c.start + STEP * np.arange(c.n)
    stamps = [f"{x:.0f}" for x in ts]
    n = 0
    with open(path, "w") as fh:
        for name, series in m.items():
            counter = name.endswith("_total") or name.endswith("_TOTAL") or name.endswith("_COUNTER")
            family = name[:-6] if name.endswith("_total") else name
            fh.write(f"# TYPE {family} {'counter' if name.endswith('_total') else 'gauge'}\n")
            for (node, dev), values in series.items():
                lab = _labels(c, name, node, dev)
                for i, v in enumerate(values[a:z].tolist(), start=a):
                    if v != v:                                  # NaN: no sample
                        continue
                    fh.write(f"{name}{{{lab}}} {v:.6g} {stamps[i]}\n" if not counter
                             else f"{name}{{{lab}}} {int(v)} {stamps[i]}\n")
                    n += 1
        fh.write("# EOF\n")
    return n


def _labels(c: Cluster, name: str, node: str, dev: str) -> str:
    if name.startswith("DCGM_"):
        return (f'gpu="{dev}",UUID="GPU-{node}-{dev}",device="nvidia{dev}",modelName="{c.model}",'
                f'Hostname="{node}",job="dcgm",instance="{node}:9400"')
    inst = f'instance="{node}:9100",job="node"'
    if name.startswith("node_infiniband_"):
        d, p = dev.split(":")
        return f'device="{d}",port="{p}",{inst}'
    if name.startswith("node_network_"):
        return f'device="{dev}",{inst}'
    return inst


def load(om: Path, tsdb: Path) -> None:
    """OpenMetrics -> Prometheus TSDB blocks, with Debian's promtool."""
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(tsdb)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=900)


@contextlib.contextmanager
def serve(tsdb: Path, port: int = 0) -> Iterator[str]:
    """A real Prometheus (Debian's package) on TSDB, on loopback, scraping nothing; yields its URL."""
    if not port:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    conf = tsdb.parent / "prometheus-scenario.yml"
    conf.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
    log = open(tsdb.parent / "prometheus-scenario.log", "w")
    proc = subprocess.Popen(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={tsdb}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus on {tsdb} did not start: see {log.name}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    c = Cluster(nodes=a.nodes, gpus=a.gpus, hours=a.hours, seed=a.seed)
    m, labels = generate(c)
    a.out.mkdir(parents=True, exist_ok=True)
    n = write_openmetrics(c, m, a.out / "scenario.om")
    (a.out / "labels.json").write_text(json.dumps(labels, indent=1))
    print(json.dumps({"samples": n, "out": str(a.out)}))


if __name__ == "__main__":
    main()
