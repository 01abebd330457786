"""The GPU signature of a job, per GPU and per node, from utilisation, power and (where DCGM gives it) SM activity.

Utilisation alone cannot tell a hung job from a working one: a rank waiting in a collective runs a kernel that
polls a flag, and the GPU reports 100 % "utilisation" (a kernel was resident all the time). Power and SM
activity can. Measured on an H100 (docs/stalls.md): idle 132 W; a kernel polling a flag 100 % at 133 W (one
block) to 153 W (every SM); a matrix multiply 100 % at 682 W. So, per GPU:

* `spin`: utilisation >= busy_util and power below spin_power_ratio x its power limit (spin_power_w where the
  limit is unknown), or SM activity below sm_spin_max where DCGM gives it: the classic collective hang;
* `idle`: utilisation <= idle_util;
* `work`: utilisation >= busy_util and power (or SM activity) says real work;
* `partial`: in between (a job between phases, a light kernel): neither hung nor proof of work.

A node's signature is the class most of its GPUs share (`mixed` when none has a majority); a node without a
sample is `none`. Pure functions over plain data."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.config import Config

CLASSES = ("spin", "idle", "work", "partial")


@dataclass(frozen=True)
class GpuSample:
    """One GPU of one node over the recent window (medians): utilisation in %, power in W, SM activity 0..1."""

    node: str
    gpu: str
    util: float | None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_active: float | None = None
    job: str | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Thresholds:
    busy_util: float = 90.0
    idle_util: float = 10.0
    spin_power_ratio: float = 0.35
    spin_power_w: float = 250.0
    sm_spin_max: float = 0.3

    @classmethod
    def from_config(cls, cfg: Config) -> Thresholds:
        s = cfg.stalls
        return cls(s.busy_util, s.idle_util, s.spin_power_ratio, s.spin_power_w, s.sm_spin_max)


def classify(s: GpuSample, th: Thresholds) -> str | None:
    """`spin`, `idle`, `work`, `partial`, or None when the sample says nothing (no utilisation)."""
    if s.util is None:
        return None
    if s.util <= th.idle_util:
        return "idle"
    if s.util < th.busy_util:
        return "partial"
    if s.sm_active is not None and s.sm_active < th.sm_spin_max and (s.power_w is None or _low_power(s, th)):
        return "spin"
    if s.power_w is None:
        if s.sm_active is not None:
            return "work"
        return "partial"          # full utilisation and nothing else: cannot tell a spin from work
    return "spin" if _low_power(s, th) else "work"


def _low_power(s: GpuSample, th: Thresholds) -> bool:
    assert s.power_w is not None
    if s.power_limit_w and s.power_limit_w > 0:
        return s.power_w < th.spin_power_ratio * s.power_limit_w
    return s.power_w < th.spin_power_w


def node_signature(samples: list[GpuSample], th: Thresholds) -> dict[str, Any]:
    """{class, gpus: {gpu: class}, counts}: the class most of the node's GPUs share; `none` without a sample."""
    per = {s.gpu: classify(s, th) for s in samples}
    known = [c for c in per.values() if c is not None]
    if not known:
        return {"class": "none", "gpus": per, "counts": {}}
    counts = Counter(known)
    top, n = counts.most_common(1)[0]
    return {"class": top if n * 2 > len(known) else "mixed", "gpus": per, "counts": dict(counts)}


def job_signature(by_node: dict[str, list[GpuSample]], nodes: list[str], th: Thresholds) -> dict[str, Any]:
    """The job's GPU verdict over its NODES: `none` (no node has a sample: judge on progress alone), `working`
    (a node's GPUs do real work: not a hang whatever the output says), `hung` (every node with a sample spins
    or is idle, one at least spinning: the collective hang's signature), `idle` (every node idle: a hang in D
    state, but also a checkpoint or a job loading its data: weaker), or `unclear` (partial or mixed, no work)."""
    sigs = {n: node_signature(by_node.get(n, []), th) for n in nodes}
    classes = [s["class"] for s in sigs.values() if s["class"] != "none"]
    if not classes:
        verdict = "none"
    elif "work" in classes or any(s["counts"].get("work", 0) for s in sigs.values()):
        verdict = "working"
    elif all(c == "idle" for c in classes):
        verdict = "idle"
    elif all(c in ("spin", "idle") for c in classes):
        verdict = "hung"
    else:
        verdict = "unclear"
    return {"verdict": verdict, "nodes": sigs}
