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
