"""`slurmtools checkpoint begin|end`: a job marks its checkpoint saves and loads (docs/io.md#checkpoints)."""

from __future__ import annotations

import os

import click

from slurmtools.cli.common import emit_json, fail, get_config


@click.group("checkpoint")
def checkpoint_group() -> None:
    """Mark a checkpoint's start and end from inside a job; the epilog records its duration and bandwidth."""


def _mark(event: str, kind: str, path: str | None, nbytes: int | None, as_json: bool) -> None:
    from slurmtools.iostat import checkpoints

    if nbytes is not None and nbytes < 0:
        fail("--bytes must be 0 or more")
    cfg = get_config()
    try:
        record = checkpoints.mark(event, kind, path or os.getcwd(), nbytes, dict(os.environ), cfg.io.mountstats)
    except checkpoints.CheckpointError as exc:
        fail(str(exc))
    if as_json:
        emit_json(record)


_KIND = click.option("--kind", type=click.Choice(["save", "load"]), required=True)
_PATH = click.option("--path", help="Where the checkpoint is written or read (default: the working directory); "
                                    "its NFS mount gives the bytes when --bytes is not given.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the mark.")


@checkpoint_group.command("begin")
@_KIND
@_PATH
@_JSON
def begin_cmd(kind: str, path: str | None, as_json: bool) -> None:
    """A checkpoint save or load starts now."""
    _mark("begin", kind, path, None, as_json)


@checkpoint_group.command("end")
@_KIND
@_PATH
@click.option("--bytes", "nbytes", type=int, help="The checkpoint's size (default: what the mount moved).")
@_JSON
def end_cmd(kind: str, path: str | None, nbytes: int | None, as_json: bool) -> None:
    """The checkpoint save or load that began last has ended."""
    _mark("end", kind, path, nbytes, as_json)
