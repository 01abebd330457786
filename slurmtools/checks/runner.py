"""One runner for every use of the checks: the prolog gate, the epilog profile, HealthCheckProgram's
cached status, `slurmtools check` and the deep return-to-service check.

Checks run in parallel threads, each with a hard time limit: a check that does not finish (a driver
call stuck in the kernel) is reported `unknown` and its thread is abandoned; the runner returns.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time

from slurmtools._plain import Plain
from slurmtools.checks import CHECKS, FAIL, OK, UNKNOWN, WARN, Context, Result, unknown
from slurmtools.checks.counters import Counters
from slurmtools.checks.system import System, boot_id, system_for
from slurmtools.fsutil import write_atomic

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.config import Config


def _log() -> Any:
    """The module's logger, imported on first use (logging costs ~6 ms of a healthy prolog's start)."""
    import logging

    return logging.getLogger(__name__)

_now = time.time
PROFILES = ("prolog", "epilog", "health", "deep")
STATUS_FILE = "gate-status.json"


class Report(Plain):
    """One run of a profile on one node."""

    def __init__(self, node: str, profile: str, results: list[Result], duration_ms: float,
                 unknown_fails: bool = False, replay: str = "", time: float | None = None) -> None:
        self.node = node
        self.profile = profile
        self.results = results
        self.duration_ms = duration_ms
        self.unknown_fails = unknown_fails
        self.replay = replay
        self.time = _now() if time is None else time

    @property
    def verdict(self) -> str:
        statuses = {r.status for r in self.results}
        if FAIL in statuses or (UNKNOWN in statuses and self.unknown_fails):
            return FAIL
        if UNKNOWN in statuses:
            return UNKNOWN
        return WARN if WARN in statuses else OK

    @property
    def exit_code(self) -> int:
        """slurmtools check: 0 healthy (ok/warn), 1 failed, 2 unknown."""
        return {OK: 0, WARN: 0, FAIL: 1, UNKNOWN: 2}[self.verdict]

    @property
    def failures(self) -> list[Result]:
        bad = {FAIL, UNKNOWN} if self.unknown_fails else {FAIL}
        return [r for r in self.results if r.status in bad]

    def worst(self) -> Result | None:
        """The result a drain reason names: the first failure of the most severe kind."""
        hard = [r for r in self.results if r.status == FAIL] or self.failures
        return hard[0] if hard else None

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "profile": self.profile, "verdict": self.verdict,
                "duration_ms": round(self.duration_ms, 2), "time": self.time, "replay": self.replay,
                "unknown_fails": self.unknown_fails, "results": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Report:
        return cls(node=raw["node"], profile=raw["profile"], duration_ms=float(raw["duration_ms"]),
                   results=[Result.from_dict(r) for r in raw["results"]], time=float(raw["time"]),
                   unknown_fails=bool(raw.get("unknown_fails")), replay=raw.get("replay", ""))


def _run_one(name: str, system: System, ctx: Context, out: dict[str, list[Result]]) -> None:
    start = time.perf_counter()
    try:
        module = importlib.import_module(f"slurmtools.checks.{name}")
        results = module.run(system, ctx)
        if not isinstance(results, list) or not all(isinstance(r, Result) for r in results):
            raise TypeError(f"check {name} returned {type(results).__name__}, not a list of results")
    except Exception as exc:  # noqa: BLE001 - our bug or an unexpected probe error: unknown, never a drain
        _log().exception("check %s failed internally", name)
        results = [unknown(name, f"internal error: {type(exc).__name__}: {exc}")]
    elapsed = (time.perf_counter() - start) * 1000
    for r in results:
        r.duration_ms = elapsed
    out[name] = results


#: Checks that put load on the GPUs: they run one after another in one thread, in the profile's order (the probe
#: measures an idle GPU, the stress follows it). Run side by side, the stress's kernel halved the probe's figures
#: on a real H200 (d2d 174 GB/s instead of 4,218; the probe warned "fail-slow"): issue 33.
GPU_LOAD = ("perf", "stress")


def _run_serial(names: list[str], system: System, ctx: Context, out: dict[str, list[Result]]) -> None:
    for name in names:
        _run_one(name, system, ctx, out)


def run(cfg: Config, profile: str, *, node: str, replay: str | None = None, system: System | None = None,
        job_gpus: set[int] | None = None, persist: bool = True) -> Report:
    """Run PROFILE's checks for NODE. REPLAY (a snapshot file) overrides the node's configured replay;
    PERSIST keeps counter readings in the node's state_dir (False: this run only)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    start = time.perf_counter()
    settings = cfg.checks
    ncfg = cfg.node_for(node)
    replay = ncfg.replay if replay is None else replay
    if system is None:
        system = system_for(replay)
    state_dir = ncfg.state_dir
    counters = Counters(os.path.join(state_dir, "counters.json") if persist and state_dir else None,
                        settings.window, seed=system.seed_counters)
    ctx = Context(node=node, profile=profile, settings=settings, hardware=cfg.hardware_for(node), counters=counters,
                  job_gpus=job_gpus)
    names = [n for n in settings.profile(profile) if n not in settings.disabled]
    unknown_names = [n for n in names if n not in CHECKS]
    if unknown_names:
        raise ValueError(f"checks.{profile} names unknown checks: {', '.join(unknown_names)}")
    out: dict[str, list[Result]] = {}
    threads = [threading.Thread(target=_run_one, args=(n, system, ctx, out), daemon=True, name=f"check-{n}")
               for n in names if n not in GPU_LOAD]
    loads = [n for n in names if n in GPU_LOAD]
    if loads:
        threads.append(threading.Thread(target=_run_serial, args=(loads, system, ctx, out), daemon=True,
                                        name="check-" + "+".join(loads)))
    timeout = float(settings.deep_timeout if profile == "deep" else settings.timeout)
    if "perf" in names:     # the fail-slow probe: its measurements, CUDA's start-up, and the threads' joins
        timeout = max(timeout, settings.perf_seconds * 3 + 10)
    if "stress" in names:   # after the probe, in the same thread: its load, capped at 1.5 x its time + 10 s
        timeout = max(timeout, settings.perf_seconds * 3 + 10 + settings.perf_stress_seconds * 1.5 + 10)
    deadline = time.monotonic() + timeout
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    results: list[Result] = []
    for name in names:
        if name in out:
            results.extend(out[name])
        else:
            results.append(unknown(name, f"no result within {timeout:g}s (probe hung?)"))
    try:
        counters.save()
    except OSError as exc:
        _log().warning("cannot save check counters in %s: %s", state_dir, exc)
    if all(not t.is_alive() for t in threads):
        system.close()
    return Report(node=node, profile=profile, results=results, duration_ms=(time.perf_counter() - start) * 1000,
                  unknown_fails=bool(settings.unknown_fails), replay=replay or "")


def node_boot_id(cfg: Config, node: str) -> str | None:
    """NODE's boot id as its checks see it (the machine, or the node's replayed snapshot); None when unreadable.
    Recorded with every drain a node makes of itself: a fault that needs a reboot is cleared only by one."""
    try:
        return boot_id(system_for(cfg.node_for(node).replay))
    except Exception:  # noqa: BLE001 - a fact for the record, never a reason for a drain to fail
        return None


def touches_job(report: Report, job_gpus: set[int] | frozenset[int]) -> bool:
    """Does a failure concern the job's own resources? Node-wide failures always do; a failure of one
    GPU does only if that GPU (its minor number, /dev/nvidiaN, which SLURM_JOB_GPUS lists) is the job's."""
    for r in report.failures:
        if not r.gpus:
            return True
        if job_gpus & set(r.evidence.get("minors") or r.gpus):
            return True
    return False


def write_status(state_dir: str, report: Report) -> bool:
    """Cache the last gate result, for HealthCheckProgram (write, rename). A cache: a failure is logged,
    never raised (the gate's verdict stands without it)."""
    try:
        os.makedirs(state_dir, exist_ok=True)
        write_atomic(os.path.join(state_dir, STATUS_FILE), json.dumps(report.to_dict(), separators=(",", ":")))
    except OSError as exc:
        _log().warning("cannot cache the gate status in %s: %s", state_dir, exc)
        return False
    return True


def read_status(state_dir: str, max_age: float | None = None) -> Report | None:
    """The cached result, or None if there is none (or it is older than MAX_AGE seconds)."""
    try:
        with open(os.path.join(state_dir, STATUS_FILE), encoding="utf-8") as fh:
            report = Report.from_dict(json.load(fh))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if max_age is not None and time.time() - report.time > max_age:
        return None
    return report
