"""Our light per-node GPU sampler, for sites without DCGM: every `stalls.sampler_interval` (30 s), NVML's
utilisation, power and enforced power limit of each GPU, with the job that owns it (its compute processes'
cgroup), into `slurmtools_stalls.prom` in node_exporter's textfile directory (`metrics.textfile_dir`). A few
values a GPU; no daemon of its own beyond `slurmtools stalls sample` (a systemd unit, or cron with `--once`).

A node without NVML (the lab) reads `stalls.gpu_replay` instead (`{node}` filled in): a JSON object
`{"mode": "spin" | "idle" | "busy", "gpus": N}` that `slurmtools lab inject NODE gpu-spin|gpu-idle|gpu-busy`
writes (`gpu-clear` removes it: no GPU signal), or `{"gpus": [{"util": .., "power_w": .., ...}, ...]}`."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from slurmtools.stalls.signals import FILENAME, LIMIT, POWER, SAMPLED, UTIL

if TYPE_CHECKING:
    from slurmtools.config import Config

#: What the lab's fake GPUs report in each mode (an H100 as measured: docs/stalls.md).
MODES: dict[str, dict[str, float]] = {
    "spin": {"util": 100.0, "power_w": 140.0, "power_limit_w": 700.0},
    "idle": {"util": 0.0, "power_w": 70.0, "power_limit_w": 700.0},
    "busy": {"util": 100.0, "power_w": 610.0, "power_limit_w": 700.0},
}


def replayed(path: str) -> list[dict[str, Any]] | None:
    """The GPUs a replay file describes; None when there is no file (no signal)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(1 << 16))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a GPU replay file: {exc}") from None
    gpus = data.get("gpus") if isinstance(data, dict) else None
    if isinstance(gpus, list):
        return [dict(g, gpu=str(g.get("gpu", i))) for i, g in enumerate(gpus) if isinstance(g, dict)]
    mode = MODES.get(str(data.get("mode")) if isinstance(data, dict) else "")
    if mode is None or not isinstance(gpus, int):
        raise ValueError(f"{path}: needs mode (spin, idle, busy) and gpus (a count), or a list of gpus")
    return [dict(mode, gpu=str(i)) for i in range(gpus)]


def nvml_gpus() -> list[dict[str, Any]]:
    """Each GPU's utilisation, power, enforced limit and owning job, from NVML (pynvml)."""
    import pynvml

    from slurmtools.stalls.evidence import job_of

    pynvml.nvmlInit()
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            row: dict[str, Any] = {"gpu": str(i), "util": float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)}
            try:
                row["power_w"] = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
                row["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0
            except pynvml.NVMLError:
                pass
            try:
                procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
            except pynvml.NVMLError:
                procs = []
            jobs = {j for j in (job_of(p.pid) for p in procs) if j}
            if len(jobs) == 1:
                row["job"] = jobs.pop()
            out.append(row)
        return out
    finally:
        pynvml.nvmlShutdown()


def families(gpus: list[dict[str, Any]], now: float) -> list[Any]:
    def samples(key: str) -> list[tuple[dict[str, str], float]]:
        return [({"gpu": g["gpu"], **({"job": str(g["job"])} if g.get("job") else {})}, float(g[key]))
                for g in gpus if g.get(key) is not None]

    return [(UTIL, "gauge", "GPU utilisation (NVML), percent", samples("util")),
            (POWER, "gauge", "GPU power draw, watts", samples("power_w")),
            (LIMIT, "gauge", "GPU enforced power limit, watts", samples("power_limit_w")),
            (SAMPLED, "gauge", "When slurmtools' GPU sampler last sampled (epoch seconds)", [({}, now)])]


def sample_once(cfg: Config, node: str) -> str | None:
    """Sample this node's GPUs and write the textfile; returns its path (None: no textfile_dir, or no signal)."""
    import os

    from slurmtools.hooks import textfile

    replay = str(cfg.stalls.gpu_replay or "").replace("{node}", node)
    gpus = replayed(replay) if replay else nvml_gpus()
    if gpus is None:                   # the lab's `gpu-clear`: no signal at all, not a stale one
        where = str(cfg.metrics.textfile_dir or "").replace("{node}", node)
        if where:
            try:
                os.unlink(os.path.join(where, FILENAME))
            except FileNotFoundError:
                pass
        return None
    return textfile.write(cfg, FILENAME, families(gpus, time.time()), node)
