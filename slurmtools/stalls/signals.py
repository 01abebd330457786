"""Where the GPU signal comes from (`stalls.gpu_source`):

* `prometheus`: DCGM's exporter (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_POWER_USAGE`, `DCGM_FI_PROF_SM_ACTIVE`,
  `DCGM_FI_DEV_POWER_MGMT_LIMIT`), with its HPC job mapping label (`stalls.dcgm_job_label`, `hpc_job`) when it
  is there, else our sampler's textfile metrics as node_exporter serves them (`slurmtools_stalls_gpu_*`); the
  median of each GPU over the last `gpu_window`;
* `textfile`: our sampler's files read directly (`metrics.textfile_dir`, `{node}` filled in): a shared
  directory, or the lab, where every node is on one host; a file older than `gpu_max_age` says nothing;
* `none`: no GPU signal (jobs are judged on progress alone, with the longer margin).

A GPU owned by another job (the job label says so) is left out; without a job label a node's GPUs all count."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from slurmtools.stalls.gpu import GpuSample

if TYPE_CHECKING:
    from slurmtools.config import Config
    from slurmtools.detect import prom

#: What our sampler writes (sampler.py) and the textfile collector serves.
FILENAME = "slurmtools_stalls.prom"
UTIL, POWER, LIMIT, SAMPLED = ("slurmtools_stalls_gpu_utilization_percent", "slurmtools_stalls_gpu_power_watts",
                               "slurmtools_stalls_gpu_power_limit_watts", "slurmtools_stalls_sample_time_seconds")
DCGM = {"util": "DCGM_FI_DEV_GPU_UTIL", "power_w": "DCGM_FI_DEV_POWER_USAGE", "sm_active": "DCGM_FI_PROF_SM_ACTIVE",
        "power_limit_w": "DCGM_FI_DEV_POWER_MGMT_LIMIT"}
OURS = {"util": UTIL, "power_w": POWER, "power_limit_w": LIMIT}


class SignalError(RuntimeError):
    """The GPU signal could not be read (Prometheus unreachable, ...): jobs are then judged without it."""


def textfile_path(cfg: Config, node: str) -> str | None:
    where = str(cfg.metrics.textfile_dir or "").replace("{node}", node)
    return os.path.join(where, FILENAME) if where else None


def parse_textfile(text: str, node: str, now: float, max_age: float) -> list[GpuSample]:
    """Our sampler's file for NODE as GpuSamples; [] when it is older than MAX_AGE seconds."""
    from prometheus_client.parser import text_string_to_metric_families

    per: dict[str, dict[str, Any]] = {}
    sampled = None
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == SAMPLED:
                    sampled = float(s.value)
                    continue
                field = next((k for k, v in OURS.items() if v == s.name), None)
                if field is None or "gpu" not in s.labels:
                    continue
                row = per.setdefault(s.labels["gpu"], {})
                row[field] = float(s.value)
                if s.labels.get("job"):
                    row["job"] = s.labels["job"]
    except ValueError:
        return []
    if sampled is None or now - sampled > max_age:
        return []
    return [GpuSample(node, gpu, r.get("util"), r.get("power_w"), r.get("power_limit_w"), None, r.get("job"),
                      "textfile") for gpu, r in sorted(per.items())]


def from_textfiles(cfg: Config, nodes: list[str], now: float | None = None) -> dict[str, list[GpuSample]]:
    from slurmtools.timeutil import parse_duration

    now = time.time() if now is None else now
    max_age = parse_duration(cfg.stalls.gpu_max_age).total_seconds()
    out: dict[str, list[GpuSample]] = {}
    for node in nodes:
        path = textfile_path(cfg, node)
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read(1 << 20)
        except OSError:
            continue
        got = parse_textfile(text, node, now, max_age)
        if got:
            out[node] = got
    return out


def from_prometheus(cfg: Config, nodes: list[str], job_of: dict[tuple[str, str], str] | None = None,
                    client: prom.Client | None = None, now: float | None = None) -> dict[str, list[GpuSample]]:
    """Per node, its GPUs' medians over the window: DCGM where a node has it, else our sampler's metrics."""
    import numpy as np

    from slurmtools.detect import prom
    from slurmtools.detect.scan import node_of
    from slurmtools.timeutil import parse_duration

    now = time.time() if now is None else now
    window = parse_duration(cfg.stalls.gpu_window).total_seconds()
    url = str(cfg.stalls.prometheus or cfg.detect.prometheus)
    client = client or prom.Client(url, timeout=15.0)
    grid = prom.grid_for(now - window, now, 30.0)
    labels = list(cfg.detect.node_labels)
    job_label = str(cfg.stalls.dcgm_job_label or "")
    wanted = set(nodes)
    out: dict[str, list[GpuSample]] = {}
    for source, names, jlabel in (("dcgm", DCGM, job_label), ("sampler", OURS, "job")):
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for field, metric in names.items():
            try:
                series = client.range(metric, grid)
            except prom.PromError as exc:
                raise SignalError(str(exc)) from None
            for s in series:
                node = node_of(s.labels, labels)
                gpu = s.labels.get("gpu")
                if node is None or gpu is None or node not in wanted or node in out:
                    continue
                vals = s.values[np.isfinite(s.values)]
                if not len(vals):
                    continue
                row = rows.setdefault((node, gpu), {})
                row[field] = float(np.median(vals))
                if jlabel and s.labels.get(jlabel):
                    row["job"] = s.labels[jlabel]
        for (node, gpu), r in sorted(rows.items()):
            if "util" not in r:
                continue
            out.setdefault(node, []).append(GpuSample(node, gpu, r["util"], r.get("power_w"), r.get("power_limit_w"),
                                                      r.get("sm_active"), r.get("job"), source))
    return out


def gpu_samples(cfg: Config, nodes: list[str], *, client: prom.Client | None = None,
                now: float | None = None) -> tuple[dict[str, list[GpuSample]], str | None]:
    """Per node its GPU samples, and a warning when the source could not be read (then: no samples)."""
    source = cfg.stalls.gpu_source
    if source == "none" or not nodes:
        return {}, None
    if source == "textfile":
        return from_textfiles(cfg, nodes, now), None
    try:
        return from_prometheus(cfg, nodes, client=client, now=now), None
    except SignalError as exc:
        return {}, f"no GPU signal: {exc}"


def for_job(samples: dict[str, list[GpuSample]], job_id: int, nodes: list[str]) -> dict[str, list[GpuSample]]:
    """The job's GPUs on its nodes: those the job label gives to it, or every GPU of a node without labels."""
    out: dict[str, list[GpuSample]] = {}
    for node in nodes:
        rows = samples.get(node, [])
        labelled = [s for s in rows if s.job]
        mine = [s for s in rows if s.job == str(job_id)] if labelled else rows
        if mine:
            out[node] = mine
    return out


def network_events(cfg: Config, nodes: list[str], since: float, now: float | None = None,
                   client: prom.Client | None = None) -> dict[str, float] | None:
    """Per node, how many times its IB/RoCE links went down since SINCE (at most 6 h back), from Prometheus: the
    same link-flap evidence `detect` scores (slurmtools.detect.links), in link downs: per source (the IB ports'
    LinkDownedCounter, their state changes, the network devices' carrier downs, their operstate changes) the
    sum over the node's ports, and the node's figure the largest source (one flap is seen by several of them).
    A counter that grows steadily (background symbol errors) is not evidence here: on every node alike it would
    name nobody, on one node it would name the wrong one. None where Prometheus cannot be read (no network
    evidence, not zero)."""
    from slurmtools.detect import links, prom
    from slurmtools.detect.scan import node_of

    if cfg.stalls.gpu_source != "prometheus" or not nodes:
        return None
    now = time.time() if now is None else now
    window = int(max(60.0, min(now - since, 6 * 3600.0)))
    url = str(cfg.stalls.prometheus or cfg.detect.prometheus)
    client = client or prom.Client(url, timeout=15.0)
    grid = prom.grid_for(now - 60.0, now, 60.0)
    labels = list(cfg.detect.node_labels)
    out = {n: 0.0 for n in nodes}
    try:
        for name in links.FLAPS:
            per_node = {n: 0.0 for n in nodes}
            for s in client.range(links.query(name, f"{window}s"), grid):
                node = node_of(s.labels, labels)
                last = s.values[-1] if len(s.values) else float("nan")
                if node in per_node and last == last:
                    per_node[node] += max(0.0, float(last)) * links.PER_DOWN[name]
            for n, v in per_node.items():
                out[n] = max(out[n], v)
    except prom.PromError:
        return None
    return out
