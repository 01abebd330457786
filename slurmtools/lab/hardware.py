"""What a lab node's fake hardware shows its probes (its replayed snapshot, $LAB/nodes/NODE/snapshot.json), and how
an injected fault changes it the way the real fault would: after XID 79 one GPU is gone from NVML and the PCI bus,
after a double-bit ECC error the volatile counter and a pending row remap say so, after XID 154 the driver's
recovery action asks for a reboot, and so on. Only a reboot (`lab inject NODE reboot`: a new boot id, the hardware
healthy again) clears them, as on a real node; so the return-to-service deep check sees what hardware would show."""

from __future__ import annotations

import copy
import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BOOT_ID = "proc/sys/kernel/random/boot_id"
Snapshot = dict[str, Any]


def load(path: Path) -> Snapshot | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save(path: Path, snap: Snapshot) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def boot_id(snap: Snapshot | None) -> str | None:
    text = ((snap or {}).get("files") or {}).get(BOOT_ID)
    return str(text).strip() or None if text else None


def with_boot_id(snap: Snapshot, boot: str | None) -> Snapshot:
    """SNAP as booted BOOT (a new boot when None)."""
    out = copy.deepcopy(snap)
    out.setdefault("files", {})[BOOT_ID] = (boot or str(uuid.uuid4())) + "\n"
    return out


def devices(snap: Snapshot | None) -> list[dict[str, Any]]:
    return list(((snap or {}).get("nvml") or {}).get("devices") or [])


def pci_of(device: dict[str, Any]) -> str:
    """NVML's bus id ("00000000:2A:00.0") as the driver prints it in an XID line ("0000:2a:00")."""
    domain, bus, rest = str(device.get("pci_bus_id", "0:0:0.0")).split(":", 2)
    return f"{int(domain, 16):04x}:{bus.lower()}:{rest.split('.')[0].lower()}"


def _device(snap: Snapshot, pci: str) -> dict[str, Any] | None:
    return next((d for d in devices(snap) if pci_of(d) == pci), None)


def _gone(snap: Snapshot, pci: str, _line: str) -> None:
    """Fallen off the bus: not in NVML, not on the PCI bus."""
    snap["nvml"]["devices"] = [d for d in devices(snap) if pci_of(d) != pci]
    files = snap.get("files") or {}
    for key in [k for k in files if k.startswith(f"sys/bus/pci/devices/{pci}.")]:
        del files[key]


def _dbe(snap: Snapshot, pci: str, _line: str) -> None:
    """A double-bit ECC error: counted, and a row remap pending until the GPU is reset."""
    dev = _device(snap, pci)
    if dev is not None:
        dev["ecc_uncorrected_volatile"] = int(dev.get("ecc_uncorrected_volatile") or 0) + 1
        rows = list(dev.get("remapped_rows") or [0, 0, 0, 0])
        rows[1], rows[2] = rows[1] + 1, 1
        dev["remapped_rows"] = rows


def _remap(field: int) -> Callable[[Snapshot, str, str], None]:
    def effect(snap: Snapshot, pci: str, _line: str) -> None:
        dev = _device(snap, pci)
        if dev is not None:
            rows = list(dev.get("remapped_rows") or [0, 0, 0, 0])
            rows[1] += 1
            rows[field] = 1     # 2: pending (a reset activates it), 3: failure (no spare row left)
            dev["remapped_rows"] = rows
    return effect


def _recovery(action: int) -> Callable[[Snapshot, str, str], None]:
    """The driver's recovery action for the GPU (1: GPU reset, 2: node reboot), as NVML reports it."""
    def effect(snap: Snapshot, pci: str, _line: str) -> None:
        dev = _device(snap, pci)
        if dev is not None:
            dev["recovery_action"] = action
    return effect


def _uncontained(snap: Snapshot, pci: str, line: str) -> None:
    """An uncontained ECC error: counted, and the driver asks for a GPU reset."""
    _dbe(snap, pci, line)
    _recovery(1)(snap, pci, line)


def _nvlink(snap: Snapshot, pci: str, line: str) -> None:
    """The link the driver named goes inactive."""
    dev = _device(snap, pci) or next(iter(devices(snap)), None)
    m = re.search(r"link (\d+)", line)
    if dev is not None and m and int(m.group(1)) < len(dev.get("nvlink_state") or []):
        dev["nvlink_state"][int(m.group(1))] = 0


def _ib_port(state: str, phys: str, downs: int = 0) -> Callable[[Snapshot, str, str], None]:
    """The first InfiniBand port: its state (down), or its link_downed counter (a flap: down and up again)."""
    def effect(snap: Snapshot, _pci: str, _line: str) -> None:
        files = snap.get("files") or {}
        ports = sorted(k[: -len("/state")] for k in files
                       if k.startswith("sys/class/infiniband/") and k.endswith("/ports/1/state"))
        if not ports:
            return
        base = ports[0]
        if downs:
            key = f"{base}/counters/link_downed"
            files[key] = f"{int(str(files.get(key, '0')).strip() or 0) + downs}\n"
        else:
            files[f"{base}/state"], files[f"{base}/phys_state"] = state + "\n", phys + "\n"
    return effect


#: Fault name -> how the node's hardware looks after it (the faults not here leave the hardware as it was:
#: application XIDs, OOM, NFS).
EFFECTS: dict[str, Callable[[Snapshot, str, str], None]] = {
    "xid79": _gone,
    "xid48": _dbe,
    "xid95": _uncontained,
    "xid63": _remap(2),
    "xid64": _remap(3),
    "xid74": _nvlink,
    "nvlink": _nvlink,
    "xid119": _recovery(1),
    "xid154": _recovery(2),
    "ib-down": _ib_port("1: DOWN", "3: Disabled"),
    "ib-flap": _ib_port("", "", downs=2),
}


def apply(path: Path, fault: str, pci: str, lines: list[str]) -> bool:
    """Change the node's snapshot at PATH as FAULT would change the hardware; False when it leaves it alone."""
    effect = EFFECTS.get(fault)
    snap = load(path)
    if effect is None or snap is None:
        return False
    effect(snap, pci, "\n".join(lines))
    save(path, snap)
    return True
