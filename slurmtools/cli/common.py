"""What every command group shares: the configuration, `--json` output, one-line errors, the ledger
(engine, session, spool-then-flush) and option parsing. Imports nothing from the command groups."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any, NoReturn

import click


def emit_json(data: object) -> None:
    """Print one JSON document and nothing else on stdout: ASCII (every control character escaped), and a
    non-finite number as null (never NaN or Infinity, which are not JSON)."""
    from slurmtools.textsafe import dumps

    click.echo(dumps(data, indent=None, sort_keys=False))


def echo(message: object = "", err: bool = False, nl: bool = True) -> None:
    """click.echo for text output: every control character that a terminal would act on (escape sequences,
    carriage returns, bidi overrides) is shown as a visible escape; newlines and tabs are kept (a field that
    may hold a newline is cleaned on its own with `textsafe.clean`). Every command prints through this."""
    from slurmtools.textsafe import clean

    click.echo(clean(message, lines=True), err=err, nl=nl)


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr, then exit CODE (2: bad input or an error of ours; 1: the thing checked failed)."""
    from slurmtools.textsafe import clean

    echo(f"slurmtools: error: {clean(message)}", err=True)
    sys.exit(code)


def get_config() -> Any:
    """The effective configuration, or a one-line error."""
    from slurmtools import config

    try:
        return config.get()
    except config.ConfigError as exc:
        fail(str(exc))


def since_option(value: str | None) -> datetime | None:
    """A `--since` value (7d, 12h, 2026-11-01) as a time; a bad one is a usage error."""
    from slurmtools.timeutil import parse_since

    if value is None:
        return None
    try:
        return parse_since(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def ledger_engine() -> Any:
    from slurmtools.ledger import api
    from slurmtools.ledger.db import LedgerError

    try:
        return api.engine_for(get_config())
    except LedgerError as exc:
        fail(str(exc))


def ledger_session() -> Any:
    """A session on the ledger with its schema in place, or a one-line error."""
    from sqlalchemy.orm import Session

    from slurmtools.ledger import schema

    engine = ledger_engine()
    try:
        schema.ensure(engine)
    except Exception as exc:  # noqa: BLE001 - a clear message, not a traceback
        fail(f"ledger database unavailable: {str(exc).splitlines()[0]}")
    return Session(engine)


def spool_and_flush(events: list[Any], quiet: bool = False) -> dict[str, Any]:
    """Spool (durable), then try to ship now. A database outage leaves events in the spool: exit 0."""
    import os

    from slurmtools.ledger import api
    from slurmtools.ledger.spool import SpoolError

    cfg = get_config()
    try:
        api.record(events, cfg)
    except SpoolError as exc:
        if os.geteuid() == 0:
            fail(str(exc), 1)
        # the spool is root's: an admin-group member's change goes straight to the database, or not at all
        try:
            api.store_now(events, cfg)
        except Exception as exc2:  # noqa: BLE001 - one line, not a traceback
            fail(f"cannot record: the spool is root's ({exc}) and the ledger database refused: "
                 f"{exc2.__class__.__name__}: {str(exc2).splitlines()[0] if str(exc2) else ''}", 1)
        return {"spooled": 0, "shipped": len(events), "left": 0, "direct": True}
    try:
        result = api.flush(cfg, wait_lock=True).to_dict()
    except Exception as exc:  # noqa: BLE001 - the events are safe in the spool
        result = {"shipped": 0, "left": len(events), "error": str(exc).splitlines()[0]}
    if result.get("error") and not quiet:
        echo(f"slurmtools: ledger database unavailable ({result['error']}); "
             f"{result.get('left', 0)} event(s) kept in the spool, `slurmtools ledger flush` ships them",
             err=True)
    return {"spooled": len(events), **result}
