"""The pyslurm backend: reads through libslurm where a matching pyslurm is installed.

pyslurm is built against one Slurm release (PyPI has 25.11 only), so it is used only when it
imports *and* its version matches the running Slurm; actions still go through the CLI, whose
behaviour is the same on every version. Not exercised by the lab (Debian bookworm ships 22.05).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from slurmtools.slurm.cli_backend import CliSlurm
from slurmtools.slurm.types import NodeInfo

log = logging.getLogger(__name__)


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = version.replace("-", ".").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def unusable_reason(slurm_version: Callable[[], str]) -> str | None:
    """Why pyslurm cannot be used here, or None when it can (asks Slurm's version only if needed)."""
    try:
        import pyslurm
    except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
        return f"pyslurm does not import: {exc}"
    have = _major_minor(str(getattr(pyslurm, "__version__", "")))
    running = slurm_version()
    want = _major_minor(running)
    if have is None or want is None or have != want:
        return f"pyslurm {getattr(pyslurm, '__version__', '?')} does not match Slurm {running}"
    return None


class PyslurmSlurm(CliSlurm):
    """Node and job reads via pyslurm (>= 25.11 API); everything else as CliSlurm."""

    name = "pyslurm"

    def nodes(self, names: Sequence[str] | None = None) -> list[NodeInfo]:
        import pyslurm

        loaded: Any = pyslurm.Nodes.load()
        out = []
        for name, node in sorted(loaded.items()):
            if names is not None and name not in names:
                continue
            states = [str(s).upper() for s in (getattr(node, "state", "") or "").split("+")]
            out.append(NodeInfo(
                name=name,
                state=states[0].lower() if states else "",
                flags=tuple(states[1:]),
                reason=getattr(node, "reason", "") or "",
                reason_user=getattr(node, "reason_user", None),
                partitions=tuple(getattr(node, "partitions", []) or []),
            ))
        return out
