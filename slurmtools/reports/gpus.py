"""GPUs per node for a report: Slurm's GRES of each node (`gpu:4`, `gpu:a100:4(S:0-1)`, several types summed),
kept in the ledger's `meta` table as it was last read, so that a report run where Slurm cannot be reached uses the
last reading; then the configuration's `reports.gpus_per_node`. Every figure per GPU rests on this number."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, delete, insert, select

from slurmtools.ledger.models import Meta

#: One GPU entry of a node's GRES: `gpu:N` or `gpu:TYPE:N`, at the start or after a comma (linear, bounded).
_GPU = re.compile(r"(?:^|,)gpu(?::[^:,()]{1,64})?:(\d{1,6})(?=$|[(,])")
MAX_GRES = 4096


def gres_gpus(gres: str) -> int:
    """The GPUs in one node's GRES string (0 for none or a string that names none)."""
    return sum(int(m.group(1)) for m in _GPU.finditer((gres or "")[:MAX_GRES]))


def meta_key(cluster: str) -> str:
    return f"reports.fleet_gres.{cluster}"[:128]


def from_slurm(nodes: list[Any]) -> dict[str, Any] | None:
    """{gpus, nodes, gpus_per_node} from Slurm's nodes (NodeInfo), or None when no node has a GPU GRES."""
    counts = [gres_gpus(n.gres) for n in nodes]
    if not counts or not any(counts):
        return None
    total = sum(counts)
    return {"gpus": total, "nodes": len(counts), "gpus_per_node": round(total / len(counts), 3),
            "read": datetime.now(UTC).isoformat(timespec="seconds")}


def remember(engine: Engine, cluster: str, fleet: dict[str, Any]) -> None:
    """Keep Slurm's reading in the ledger (best effort: a read-only ledger keeps the older one)."""
    with engine.begin() as conn:
        conn.execute(delete(Meta).where(Meta.key == meta_key(cluster)))
        conn.execute(insert(Meta).values(key=meta_key(cluster), value=json.dumps(fleet)))


def recalled(engine: Engine, cluster: str) -> dict[str, Any] | None:
    """The last reading kept in the ledger, or None."""
    with engine.connect() as conn:
        value = conn.execute(select(Meta.value).where(Meta.key == meta_key(cluster))).scalar_one_or_none()
    try:
        data = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("gpus_per_node"), (int, float)) \
            or not 0 < float(data["gpus_per_node"]) <= 1024:
        return None
    return data


def gpus_per_node(engine: Engine, cluster: str, slurm_nodes: list[Any] | None, configured: float) -> tuple[float,
                                                                                                         str]:
    """(GPUs per node, where it came from): Slurm's GRES (then kept in the ledger), else the ledger's last
    reading, else CONFIGURED."""
    fleet = from_slurm(slurm_nodes) if slurm_nodes else None
    if fleet is not None:
        try:
            remember(engine, cluster, fleet)
        except Exception:  # noqa: BLE001 - a read-only ledger: the report does not need the copy
            pass
        return float(fleet["gpus_per_node"]), f"Slurm GRES: {fleet['gpus']} GPUs on {fleet['nodes']} nodes"
    try:
        kept = recalled(engine, cluster)
    except Exception:  # noqa: BLE001 - no meta table yet: the configuration
        kept = None
    if kept is not None:
        return float(kept["gpus_per_node"]), (f"ledger: Slurm GRES as read {kept.get('read', '?')} "
                                              f"({kept.get('gpus', '?')} GPUs on {kept.get('nodes', '?')} nodes)")
    return float(configured), "configuration (reports.gpus_per_node)"
