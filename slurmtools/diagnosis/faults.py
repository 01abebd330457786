"""The one answer to "is this finding a node fault?": evidence a user cannot write (trust kernel, NVML, sysfs),
an action in `controller.node_fault_actions` (default reset_gpu, reboot_node, drain_node), and not superseded by a
later finding. The epilog's drain, the controller's classification, its lemons and recovery, and
`slurmtools status`/`why` all ask here, so changing the setting changes every one of them.

Light on purpose: the epilog imports it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from slurmtools.diagnosis.findings import NODE_ACTIONS, NODE_TRUST

if TYPE_CHECKING:
    from slurmtools.config import Config


class FindingLike(Protocol):
    """What is read of a finding: a diagnosis `Finding`, a ledger `models.Finding` row, the controller's
    `policy.Evidence` (which says `superseded` itself)."""

    @property
    def trust(self) -> str: ...

    @property
    def action(self) -> str: ...


def node_fault_actions(cfg: Config | None) -> frozenset[str]:
    """The actions that make node-level evidence a node fault (`controller.node_fault_actions`; without a CFG,
    the shipped default, data/defaults.toml's)."""
    if cfg is None:
        return NODE_ACTIONS
    return frozenset(str(a) for a in cfg.controller.node_fault_actions)


def superseded(finding: FindingLike) -> bool:
    """A later finding took this one's place (its `details.superseded_by`, or the controller's flag)."""
    flag = getattr(finding, "superseded", None)
    if isinstance(flag, bool):
        return flag
    details = getattr(finding, "details", None)
    return bool(details.get("superseded_by")) if isinstance(details, dict) else False


def is_node_fault(finding: FindingLike, cfg: Config | None, *, actions: frozenset[str] | None = None) -> bool:
    """FINDING puts its node at fault under CFG's `controller.node_fault_actions` (ACTIONS: that set, read once by
    a caller that asks for many findings)."""
    wanted = node_fault_actions(cfg) if actions is None else actions
    return finding.trust in NODE_TRUST and finding.action in wanted and not superseded(finding)
