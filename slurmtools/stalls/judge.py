"""Is a running job stalled? Progress stopped for longer than it may, and the GPU signature agrees.

How long it may be quiet (`allowed_s`):

* `max(min_quiet, margin x its own longest normal quiet time)`: the learned time is the longest gap between two
  signs of progress in its history, or its longest checkpoint (progress.Progress.learned_quiet);
* during a checkpoint it has begun and not ended (its framework's line): at least `checkpoint_min_quiet`;
* at its start (no progress yet since the attempt began: loading data, compiling): at least `startup_grace`;
* with every GPU idle (a hang in D state looks so, but so do a checkpoint write and a job loading its data):
  everything above times `idle_factor`; without any GPU signal: times `no_gpu_factor` (progress alone is weaker
  evidence). Spinning GPUs are the collective hang's own signature: no factor.

The GPU signature must agree (gpu.job_signature): `hung` (spinning, some nodes maybe idle), `idle` or `none`; a
job whose GPUs do real work (`working`) is never stalled, however quiet its output; `unclear` waits.

The thresholds are configuration (`[stalls]`), overridden per partition (`[stalls.partitions.NAME]`) and per job:
`slurmtools=stall:off` in the job's comment turns the detector off for it, `slurmtools=stall:2h` sets its
minimum quiet time (a job that is silent for long on purpose). Pure functions over plain data."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from slurmtools.stalls.progress import Progress

if TYPE_CHECKING:
    from slurmtools.config import Config

TOKEN = "slurmtools=stall:"


@dataclass(frozen=True)
class Limits:
    min_quiet: float = 1200.0
    margin: float = 1.5
    no_gpu_factor: float = 3.0
    idle_factor: float = 2.0
    startup_grace: float = 1800.0
    checkpoint_min_quiet: float = 2700.0
    max_learned: float = 21600.0
    enabled: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_KEYS = ("min_quiet", "margin", "no_gpu_factor", "idle_factor", "startup_grace", "checkpoint_min_quiet",
         "max_learned")
_DURATIONS = {"min_quiet", "startup_grace", "checkpoint_min_quiet", "max_learned"}


def _value(key: str, raw: str | float) -> float:
    from slurmtools.timeutil import parse_duration

    if key in _DURATIONS:
        return parse_duration(str(raw)).total_seconds()
    return float(raw)


def limits_for(cfg: Config, partition: str = "", comment: str = "", quiet_override: float | None = None) -> Limits:
    """The limits of one job: [stalls], then its partition's table, then its comment, then `--quiet`.
    Raises ValueError for a bad value in the configuration (named); a bad comment token is ignored."""
    part = cfg.stalls.partitions.get(partition, cfg.stalls.partition_defaults)
    base: dict[str, float] = {}
    for k in _KEYS:                                 # "" or 0 in the partition's table: the [stalls] value
        raw = getattr(part, k)
        base[k] = _value(k, raw if raw not in ("", 0, 0.0) else getattr(cfg.stalls, k))
    lim = Limits(**base, enabled=part.enabled)
    for token in (comment or "").replace(",", " ").replace(";", " ").split()[:64]:
        if not token.startswith(TOKEN):
            continue
        arg = token[len(TOKEN):]
        if arg == "off":
            lim = replace(lim, enabled=False)
            continue
        try:
            lim = replace(lim, min_quiet=max(60.0, _value("min_quiet", arg[:32])))
        except ValueError:
            continue
    if quiet_override is not None:
        lim = replace(lim, min_quiet=quiet_override)
    return lim


@dataclass
class Verdict:
    job_id: int
    stalled: bool
    quiet_s: float
    allowed_s: float
    why: str
    gpu: str
    suspect: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(job_id: int, now: float, start: float | None, progress: Progress, gpu_verdict: str,
          lim: Limits) -> Verdict:
    """The verdict for one job. START: when this attempt began (epoch), None if unknown."""
    if not lim.enabled:
        return Verdict(job_id, False, 0.0, 0.0, "stall detection off for this job", gpu_verdict)
    learned = progress.learned_quiet(lim.max_learned)
    allowed = max(lim.min_quiet, lim.margin * learned)
    since = progress.last_progress
    phase = "running"
    if since is None or (start is not None and since < start):
        since, phase = start, "startup"
        allowed = max(allowed, lim.startup_grace)
    elif progress.in_checkpoint_since is not None:
        phase = "checkpoint"
        allowed = max(allowed, lim.checkpoint_min_quiet, lim.margin * max([0.0, *progress.checkpoint_s]))
    if gpu_verdict == "none":
        allowed *= lim.no_gpu_factor
    elif gpu_verdict == "idle":
        allowed *= lim.idle_factor
    if since is None:
        return Verdict(job_id, False, 0.0, allowed, "no start time and no progress seen yet", gpu_verdict)
    quiet = max(0.0, now - since)
    detail = f"quiet {quiet:.0f}s ({phase}), allowed {allowed:.0f}s (learned {learned:.0f}s), GPUs {gpu_verdict}"
    if quiet <= allowed:
        return Verdict(job_id, False, quiet, allowed, "progressing: " + detail, gpu_verdict)
    if gpu_verdict == "working":
        return Verdict(job_id, False, quiet, allowed, "quiet but its GPUs work: " + detail, gpu_verdict)
    if gpu_verdict == "unclear":
        return Verdict(job_id, False, quiet, allowed, "quiet, GPU signature unclear: " + detail, gpu_verdict)
    return Verdict(job_id, True, quiet, allowed, "stalled: " + detail, gpu_verdict)
