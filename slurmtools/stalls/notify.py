"""Telling people about a job's stall, requeue or give-up through `apprise` (one URL scheme for Slack,
Mattermost, Teams, e-mail and the rest; an optional dependency: `pip install slurmtools[notify]`).

The URLs: `stalls.notify`, plus the job's partition's (`[stalls.partitions.NAME] notify`). Sending never blocks
the caller: each message goes to one background thread that tries it up to `stalls.notify_retries` times with
back-off (2, 4, 8 ... seconds, at most 5 minutes); a message that is never delivered is logged, not raised."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.config import Config

log = logging.getLogger(__name__)

Sender = Callable[[list[str], str, str], bool]


def apprise_send(urls: list[str], title: str, body: str) -> bool:
    import apprise

    a = apprise.Apprise()
    for url in urls:
        a.add(url)
    return bool(a.notify(title=title, body=body))


class Notifier:
    """`send(urls, title, body)` queues a message; a daemon thread delivers it with retries and back-off."""

    def __init__(self, retries: int = 4, sender: Sender | None = None, base_delay: float = 2.0) -> None:
        self.retries = max(1, retries)
        self.sender = sender or apprise_send
        self.base_delay = base_delay
        self.q: queue.Queue[tuple[list[str], str, str]] = queue.Queue(maxsize=1000)
        self.delivered: list[str] = []
        self.failed: list[str] = []
        self.thread = threading.Thread(target=self._loop, name="slurmtools-notify", daemon=True)
        self.thread.start()

    def send(self, urls: list[str], title: str, body: str) -> bool:
        """Queue it (False: no URL, or the queue is full: dropped and logged)."""
        if not urls:
            return False
        try:
            self.q.put_nowait((list(urls), title[:200], body[:4000]))
        except queue.Full:
            log.error("stalls: notification dropped (queue full): %s", title)
            return False
        return True

    def _loop(self) -> None:
        while True:
            urls, title, body = self.q.get()
            for attempt in range(self.retries):
                try:
                    ok = self.sender(urls, title, body)
                except Exception as exc:  # noqa: BLE001 - a broken channel must not stop the others
                    log.warning("stalls: notification %r failed: %s: %s", title, type(exc).__name__, exc)
                    ok = False
                if ok:
                    self.delivered.append(title)
                    break
                if attempt + 1 < self.retries:
                    time.sleep(min(300.0, self.base_delay * 2 ** attempt))
            else:
                self.failed.append(title)
                log.error("stalls: notification not delivered after %d tries: %s", self.retries, title)
            self.q.task_done()

    def wait(self, timeout: float = 10.0) -> bool:
        """Until everything queued was tried (tests, `stalls run --once`). True when the queue emptied."""
        deadline = time.monotonic() + timeout
        while self.q.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self.q.unfinished_tasks


def urls_for(cfg: Config, partition: str) -> list[str]:
    part = cfg.stalls.partitions.get(partition, cfg.stalls.partition_defaults)
    return list(dict.fromkeys([*cfg.stalls.notify, *part.notify]))


def message(outcome: dict[str, Any]) -> tuple[str, str]:
    """The title and body for one job's outcome (stalled, requeued, gave_up, ...)."""
    job, what = outcome["job_id"], outcome["outcome"]
    where = f" on {','.join(outcome.get('nodes') or [])}" if outcome.get("nodes") else ""
    title = {"requeued": f"job {job} stalled: requeued", "gave_up": f"job {job} stalled: retry budget spent, "
             "cancelled"}.get(what, f"job {job} stalled")
    body = (f"Job {job}{where} made no progress for {outcome.get('quiet_s', 0):.0f}s while its GPUs were "
            f"{outcome.get('gpu', '?')}. Suspect node: {outcome.get('suspect') or 'none'}. Action: {what}"
            + (f" ({outcome['detail']})" if outcome.get("detail") else "") + f". See `slurmtools why {job}`.")
    return title, body
