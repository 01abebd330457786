"""The XID catalog shipped with the package (data/xid_catalog.json), plus operator overrides."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

UNKNOWN = {"name": "XID not in the catalog", "action": "investigate", "category": "unknown",
           "severity": "warning", "why": "not in NVIDIA's catalog as shipped: never silently ignored"}


@lru_cache(maxsize=1)
def _packaged() -> dict[str, dict[str, Any]]:
    text = resources.files("slurmtools").joinpath("data/xid_catalog.json").read_text()
    xids: dict[str, dict[str, Any]] = json.loads(text)["xids"]
    return xids


def xids() -> list[int]:
    """Every XID in the packaged catalog."""
    return sorted(int(x) for x in _packaged())


def lookup(xid: int, overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Our verdict for an XID: action, category, severity, name. Missing -> investigate."""
    entry = dict(_packaged().get(str(xid)) or {**UNKNOWN, "xid": xid})
    if overrides and str(xid) in overrides:
        entry.update({k: v for k, v in overrides[str(xid)].items() if v})
        entry["why"] = "operator override"
    return entry


#: What completes a fault's recovery, when only a GPU reset or a reboot does: NVIDIA's immediate action for the
#: XID (RESET_GPU; RESTART_BM/RESTART_VM: the machine restarted), or our own action. A reboot resets GPUs too.
_NEEDS_BY_NVIDIA = {"RESET_GPU": "reset", "RESTART_BM": "reboot", "RESTART_VM": "reboot"}
_NEEDS_BY_ACTION = {"reset_gpu": "reset", "reboot_node": "reboot"}


def needs(xid: int | None, action: str | None) -> str | None:
    """"reboot", "reset" or None: what must happen on the node before a passing health check means anything."""
    found = _NEEDS_BY_ACTION.get(action or "")
    if xid is not None:
        nvidia = (_packaged().get(str(xid)) or {}).get("nvidia") or {}
        by_nvidia = _NEEDS_BY_NVIDIA.get(str(nvidia.get("immediate") or ""))
        if by_nvidia == "reboot" or found is None:
            found = by_nvidia or found
    return found
