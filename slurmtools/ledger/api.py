"""What writers call: spool an event, then ship it now or in the background."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from slurmtools.ledger.spool import Event, Spool

if TYPE_CHECKING:
    from slurmtools.config import Config

log = logging.getLogger(__name__)

_engines: dict[str, Any] = {}


def spool_for(cfg: Config) -> Spool:
    return Spool(cfg.ledger.spool_dir)


def engine_for(cfg: Config) -> Any:
    from slurmtools.ledger.db import make_engine

    url = cfg.ledger.url
    if url not in _engines:
        _engines[url] = make_engine(url)
    return _engines[url]


def forget_engines() -> None:
    """Dispose of the engines made so far (a process that changed user, a test): the next use makes new ones."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()


def record(events: Iterable[Event], cfg: Config) -> str:
    """Durably spool events as one batch (never touches the database). Raises SpoolError."""
    return spool_for(cfg).write_many(list(events))


def store_now(events: Iterable[Event], cfg: Config) -> None:
    """Store events in the database in one transaction, without the spool (a non-root admin, who cannot write
    the root-only spool). Raises whatever the database raises; nothing is stored then."""
    from slurmtools.ledger import schema
    from slurmtools.ledger.ship import store

    engine = engine_for(cfg)
    schema.ensure(engine)
    with engine.begin() as conn:
        store(conn, list(events))


def flush(cfg: Config, *, wait_lock: bool = False) -> Any:
    from slurmtools.ledger.ship import flush as ship_flush

    return ship_flush(spool_for(cfg), engine_for(cfg), wait_lock=wait_lock)


def flush_argv() -> list[str]:
    """The background flush's command. `-P` (Python 3.11+): `-m` would put the working directory first on sys.path, and
    a hook's process (root) must not import a module someone left there (an `enum.py` in /tmp shadows the standard
    library's for every import after it)."""
    return [sys.executable, "-P", "-m", "slurmtools", "ledger", "flush", "--quiet"]


def flush_in_background() -> None:
    """Start `slurmtools ledger flush` detached, so a hook returns without waiting on the database."""
    try:
        subprocess.Popen(flush_argv(),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, env=dict(os.environ))
    except OSError as exc:  # the events are spooled; the next flush ships them
        log.warning("ledger: cannot start a background flush: %s", exc)
