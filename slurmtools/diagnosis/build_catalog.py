"""Build slurmtools/data/xid_catalog.json from NVIDIA's XID catalog and other vendors' verdicts.

    python -m slurmtools.diagnosis.build_catalog tests/data/xid

Input: `xid_catalog_pivot.csv` (one row per XID with NVIDIA's resolution buckets and legacy cause
flags, Meta GCM, Azure, AWS, Google, gpud verdicts). Output: per XID our `action` (none,
restart_app, reset_gpu, reboot_node, drain_node, investigate), `category` (hardware, driver,
network, filesystem, application, unknown), `severity`, and the facts behind them (sources kept).

The rules, in order (an operator can still override any XID in config):
1. NVIDIA's immediate bucket decides the action: IGNORE -> none, RESTART_APP -> restart_app,
   RESET_GPU -> reset_gpu, RESTART_BM/RESTART_VM -> reboot_node, CHECK_MECHANICALS -> drain_node,
   anything else (CONTACT_SUPPORT, workflows, blank) -> investigate.
2. A reboot whose investigatory bucket is CONTACT_SUPPORT (XID 79: fallen off the bus) -> drain_node:
   the node needs a person, not just a reboot.
3. Tie-breaks where NVIDIA gives a workflow instead of an action: XID 48 (DBE) reset_gpu,
   XID 64 (row-remap failure) drain_node, XID 74 (NVLink) reset_gpu, XID 45 none (teardown noise),
   XID 154 from the message's recovery action (see kernel.py).
4. Category: investigatory INVESTIGATE_SW/UPDATE_SWFW/CHECK_UVM -> driver; legacy causes naming only
   UserApp (or a RESTART_APP whose causes include UserApp) -> application; HW/Thermal/BusError/
   FBCorruption -> hardware; Driver alone -> driver; otherwise unknown.
5. Severity: none -> info (warning when NVIDIA says to contact support later), restart_app ->
   warning, investigate -> warning, reset_gpu -> error, reboot/drain -> critical; raised to critical
   when Meta GCM and AWS both call it critical/fatal.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "data" / "xid_catalog.json"

BUCKET_ACTION = {"IGNORE": "none", "RESTART_APP": "restart_app", "RESET_GPU": "reset_gpu",
                 "RESTART_BM": "reboot_node", "RESTART_VM": "reboot_node", "CHECK_MECHANICALS": "drain_node"}
TIE_BREAKS: dict[int, dict[str, str]] = {
    48: {"action": "reset_gpu", "category": "hardware", "why": "double-bit ECC: NVIDIA WORKFLOW_XID_48; AWS reset"},
    64: {"action": "drain_node", "category": "hardware", "why": "row-remap failure: the GPU needs service"},
    74: {"action": "reset_gpu", "category": "hardware", "why": "NVLink error: NVIDIA WORKFLOW_NVLINK_ERR; AWS reset"},
    45: {"action": "none", "category": "application", "why": "preemptive cleanup: follows another XID or teardown"},
}
SEVERITY = {"none": "info", "restart_app": "warning", "investigate": "warning", "reset_gpu": "error",
            "reboot_node": "critical", "drain_node": "critical"}
HW_CAUSES = {"HW", "Thermal", "BusError", "FBCorruption"}


def _category(row: dict[str, str], action: str) -> str:
    inv = row["nvidia_investigatory_bucket"]
    causes = {c for c in row["nvidia_legacy_possible_causes"].split("|") if c and c != "none-listed"}
    if any(k in inv for k in ("INVESTIGATE_SW", "UPDATE_SWFW", "CHECK_UVM")):
        return "driver"
    if causes == {"UserApp"} or (action == "restart_app" and "UserApp" in causes):
        return "application"
    if causes & HW_CAUSES or action in {"reset_gpu", "reboot_node", "drain_node"}:
        return "hardware"
    if "Driver" in causes:
        return "driver"
    return "unknown"


def entry(row: dict[str, str]) -> dict[str, Any]:
    xid = int(row["xid"])
    immediate = row["nvidia_immediate_bucket"].strip()
    inv = row["nvidia_investigatory_bucket"].strip()
    action = BUCKET_ACTION.get(immediate, "investigate")
    why = f"NVIDIA immediate bucket {immediate or '(blank)'}"
    if action == "reboot_node" and inv == "CONTACT_SUPPORT":
        action, why = "drain_node", f"NVIDIA {immediate} then CONTACT_SUPPORT"
    category = _category(row, action)
    if xid in TIE_BREAKS:
        action, category, why = TIE_BREAKS[xid]["action"], TIE_BREAKS[xid]["category"], TIE_BREAKS[xid]["why"]
    severity = SEVERITY[action]
    if action == "none" and inv == "CONTACT_SUPPORT":
        severity = "warning"
    meta, aws = row["meta_gcm"].lower(), row["aws_healthcheck"].upper()
    if severity in {"warning", "error"} and action != "restart_app" and meta == "critical" \
            and aws.startswith(("RESET", "REBOOT", "ISOLATE")):
        severity = "critical"
    return {
        "xid": xid, "name": row["nvidia_name"], "mnemonic": row["nvidia_mnemonic"],
        "action": action, "category": category, "severity": severity, "why": why,
        "nvidia": {"immediate": immediate, "investigatory": inv, "causes": row["nvidia_legacy_possible_causes"]},
        "others": {k: row[k] for k in ("meta_gcm", "azure_aznhc", "k8s_device_plugin", "aws_healthcheck",
                                      "google_cloud", "gpud_event_and_action") if row.get(k)},
    }


def build(src: Path) -> dict[str, Any]:
    with open(src / "xid_catalog_pivot.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {
        "source": "NVIDIA XID catalog (docs.nvidia.com/deploy/xid-errors) with Meta GCM, Azure, AWS, Google Cloud, "
                  "gpud and k8s-device-plugin verdicts, from shared/data/xid; built by "
                  "slurmtools.diagnosis.build_catalog",
        "xids": {str(e["xid"]): e for e in (entry(r) for r in rows)},
    }


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "tests" / "data" / "xid"
    OUT.write_text(json.dumps(build(src), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
