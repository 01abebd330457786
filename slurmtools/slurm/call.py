"""One `Slurm` method called on a named backend, its result (or its error) as one line of JSON:

    python -m slurmtools.slurm.call BACKEND METHOD '{"kwargs": ...}'

The backend conformance suite (tests/integration/test_backend_conformance.py) calls a backend that can only run
where its Slurm library is (pyslurm inside the lab's Debian root) through it, and the CLI backend through the same
`call()`, so both answer in the same form."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from slurmtools.slurm.base import Slurm
from slurmtools.slurm.cli_backend import CliSlurm
from slurmtools.slurm.types import SlurmError

METHODS = ("version", "nodes", "drain", "resume", "job", "jobs", "submit", "requeue", "update_job", "release",
           "cancel", "signal", "job_history", "node_events")


def backend(name: str, bin_dir: str = "", timeout: float = 30.0) -> Slurm:
    if name == "cli":
        return CliSlurm(bin_dir=bin_dir, timeout=timeout)
    if name == "pyslurm":
        from slurmtools.slurm import pyslurm_backend

        cli = CliSlurm(bin_dir=bin_dir, timeout=timeout)
        why = pyslurm_backend.unusable_reason(cli.version)
        if why:
            raise SlurmError(why)
        return pyslurm_backend.PyslurmSlurm(bin_dir=bin_dir, timeout=timeout)
    raise ValueError(f"unknown backend {name!r} (cli, pyslurm)")


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def call(slurm: Slurm, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """{"ok": result} or {"error": the exception's class name, "message": its one line}."""
    if method not in METHODS:
        return {"error": "ValueError", "message": f"not a Slurm method: {method!r}"}
    for key in ("since",):
        if isinstance(kwargs.get(key), str):
            kwargs[key] = datetime.fromisoformat(kwargs[key])
    try:
        return {"ok": _plain(getattr(slurm, method)(**kwargs))}
    except (SlurmError, ValueError) as exc:
        bases = [c.__name__ for c in type(exc).__mro__]
        return {"error": type(exc).__name__, "bases": bases, "message": str(exc).splitlines()[0] if str(exc) else ""}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m slurmtools.slurm.call BACKEND METHOD [JSON-KWARGS]", file=sys.stderr)
        return 2
    try:
        slurm = backend(argv[0])
    except (SlurmError, ValueError) as exc:
        print(json.dumps({"error": type(exc).__name__, "bases": ["SlurmError"], "message": str(exc)}))
        return 1
    print(json.dumps(call(slurm, argv[1], json.loads(argv[2]) if len(argv) > 2 else {})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
