"""Error counters judged by their increase, with strikes in a window (healthagent's window/strikes).

A link's lifetime CRC count says little; a count that grows between two gate runs says the link is
degrading now. Each counter's last value and its recent strikes live in one small JSON file in the
node's state_dir, updated under a lock (prologs of concurrent jobs may run at once).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time

from slurmtools._plain import Plain
from slurmtools.fsutil import write_atomic

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any


class Observation(Plain):
    """One counter reading: its rise since the last (None: first reading), whether that is a strike, and
    the strikes within the window, this one included."""

    def __init__(self, key: str, value: int, delta: int | None, strike: bool, strikes: int) -> None:
        self.key, self.value, self.delta, self.strike, self.strikes = key, value, delta, strike, strikes


class Counters:
    def __init__(self, path: str | None, window: float, now: float | None = None,
                 seed: dict[str, Any] | None = None) -> None:
        self.path = path
        self.window = window
        self.now = time.time() if now is None else now
        self.lock = threading.Lock()
        self.state: dict[str, dict[str, Any]] = self._load()
        self.updated: dict[str, dict[str, Any]] = {}
        seed = seed or {}
        seed_time = self.now - float(seed.get("age_s") or 0)
        for key, value in (seed.get("counters") or {}).items():
            self.state.setdefault(key, {"v": int(value), "t": seed_time, "strikes": []})

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path:
            return {}
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}  # no state yet, or a torn file: start over (first readings compare with nothing)

    def observe(self, key: str, value: int, per_run: int) -> Observation:
        """Record VALUE for KEY; a rise above PER_RUN since the last reading is a strike."""
        with self.lock:
            prev = self.state.get(key)
            strikes = [t for t in (prev or {}).get("strikes", []) if self.now - t <= self.window]
            delta = None
            if prev is not None:
                delta = value - int(prev["v"]) if value >= int(prev["v"]) else value  # counter reset
            strike = delta is not None and delta > per_run
            if strike:
                strikes.append(self.now)
            entry = {"v": int(value), "t": self.now, "strikes": strikes}
            self.state[key] = self.updated[key] = entry
            return Observation(key, value, delta, strike, len(strikes))

    def save(self) -> None:
        """Merge our readings into the file (others may have written theirs meanwhile)."""
        if not self.path or not self.updated:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self._load()
            current.update(self.updated)
            cutoff = self.now - 30 * 86400      # forget counters not seen for a month (hardware swapped)
            current = {k: v for k, v in current.items() if float(v.get("t", 0)) >= cutoff}
            write_atomic(self.path, json.dumps(current, separators=(",", ":")))
