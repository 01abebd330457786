"""Round 8's tool printers (rules8-tools): the output admins run and paste, from the tools' own fields and messages:
nvidia-smi -q (GPU Reset Status, GPU Recovery Action, Fabric, ECC's SRAM threshold) and nvlink -e, dcgmi without
its host engine, ibstat, ethtool / ip link, smartctl's NVMe critical-warning bullets, ipmitool's fans, Dell iDRAC's
CPU IERR, LBNL NHC's failed checks (mej/nhc scripts/lbnl_hw.nhc, lbnl_fs.nhc, lbnl_nv.nhc, csc_nvidia_smi.nhc), GCM's
health checks (facebookresearch/gcm gcm/health_checks/checks) and Slurm's gres count reason (src/common/gres.c).
tests/data/kernel/printers/tools.tsv holds every row with its envelope; this file holds what a row cannot say: the
verdict, the trust, that a tool's output never drains, and that every rule of the block is exercised there.

Every line below is a format string or field of the public source named in the comment above it, its values filled
in by hand: no line is copied from a log or from the field corpus.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from bench.field_corpus import load
from bench.printer_coverage import PRINTERS
from slurmtools.diagnosis import diagnose

from .rule_cases import found_as, table_tests

FAULTS = [
    # ---- nvidia-smi -q: GPU Reset Status, GPU Recovery Action (r550+), ECC Errors' SRAM threshold, Fabric
    ("        Drain and Reset Recommended       : Yes", "xid"),
    ("        Reset Required                    : Yes", "xid"),
    ("    GPU Recovery Action                   : Drain and Reset", "xid"),
    ("            SRAM Threshold Exceeded       : Yes", "xid"),
    ("        Status                            : Failure", "fabric_manager"),
    ("        State                             : Not Started", "fabric_manager"),
    # ---- nvidia-smi nvlink -e: "Link %d: Replay|Recovery|CRC Errors: %llu"
    ("     Link 3: Replay Errors: 17", "nvlink"),
    # ---- dcgmi/Command.cpp
    ("Error: unable to establish a connection to the specified host: localhost", "gpu_init"),
    # ---- ibstat, ethtool, ethtool -S (mlx5 en_stats.c), ip link
    ("        Physical state: PortConfigurationTraining", "ib"),
    ("    Link detected: no", "ib"),
    ("     rx_symbol_err_phy: 77", "ib"),
    ("4: ens1f0np0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 4200 qdisc mq state DOWN mode DEFAULT group default "
     "qlen 1000", "ib"),
    # ---- smartctl nvmeprint.cpp, ipmitool sensor / sel, Dell iDRAC
    ("- media has been placed in read only mode", "disk"),
    ("FAN4             | 0.000      | RPM        | cr    | 300.000   | 500.000   | 700.000   | 25300.000 | "
     "25400.000 | 25500.000 ", "thermal"),
    ("  1b | 11/26/2026 | 10:01:09 | Fan FAN4 | Lower Critical going low  | Asserted", "thermal"),
    ("Description: CPU 1 has an internal error (IERR).", "mce"),
    # ---- LBNL NHC die() by check name, and the node reason it sets
    ("ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec).", "ib"),
    ("ERROR:  nhc:  Health check failed:  check_hw_mcelog:  MCEs detected - 1 UNcorrected memory errors detected "
     "(limit of 0/day).", "mce"),
    ("ERROR:  nhc:  Health check failed:  check_fs_mount:  /scratch not mounted", "nfs"),
    ("ERROR:  nhc:  Health check failed:  check_nvsmi_healthmon:  nvidia-smi:  InfoROM is corrupted", "xid"),
    ("ERROR:  nhc:  Health check failed:  check_nv_healthmon:  nvidia-healthmon returned failure code 1", "gpu_init"),
    ("   Reason=NHC: check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec). [root@2026-11-26T10:01:07]",
     "ib"),
    # ---- GCM check_nvidia_smi.py, check_iblink.py, check_hca.py, check_pci.py
    ("row_remap_failed check: exit_code: ExitCode.CRITICAL, GPU 3 has failed row remaps: "
     "pending/failure/correctable/uncorrectable: 0/1/0/5.", "xid"),
    ("gpu_temp check: exit_code: ExitCode.CRITICAL, GPU 3 has temperature: 93, higher than critical threshold of 85.",
     "thermal"),
    ("gpu_num check: exit_code: ExitCode.CRITICAL, Number of GPUs present, 7, is different than expected, 8",
     "gpu_init"),
    ("0000:3b:00.0(ib0) has degraded link 200 Gb/sec (4X HDR)", "ib"),
    ("Exit Code 2: Node gpu-node07 reports 7 HCAs found, but expected 8", "ib"),
    ("GPU3 has degraded PCIe link (current: 'x8 @ 16.0 GT/s PCIe', expected: 'x16 @ 32.0 GT/s PCIe').", "pcie"),
    ("ib link flap detected.", "ib"),
    ("Directory /checkpoint: directory is not mounted.", "nfs"),
    # ---- Dell iDRAC FAN0002
    ("Description: Fan 1 RPM is less than the lower critical threshold.", "thermal"),
    # ---- Slurm src/common/gres.c, as scontrol show node prints the reason
    ("   Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2026-11-26T10:01:07]", "gpu_init"),
]


@pytest.mark.parametrize(("line", "kind"), FAULTS, ids=lambda v: str(v)[:50])
def test_a_tools_fault_line_is_a_warning_of_its_kind(line: str, kind: str) -> None:
    found_as(line, kind, "warning")
    assert diagnose(line.encode())[0].action == "investigate"


# dcgmi/Health.cpp's subsystems dcgm_health did not name (SM, PMU, MCU, NVSwitch Fatal / Non-Fatal): a failure is an
# error, a warning a warning, as for the others
HEALTH_ROWS = [
    ("|       -> SM system        | Failure - Detected a miscompare failure in the  |", "xid", "error"),
    ("|       -> PMU system       | Warning - Detected a PMU error on GPU 3         |", "xid", "warning"),
    ("|       -> NVSwitch Fatal system | Failure - Detected fatal errors on NvSwitch 2 |", "sxid", "error"),
    ("|       -> NVSwitch Non-Fatal system | Warning - Detected nonfatal errors on NvSwitch 2 |", "sxid", "warning"),
]


BENIGN_TWINS = [
    "        Drain and Reset Recommended       : No",
    "    GPU Recovery Action                   : None",
    "            SRAM Threshold Exceeded       : No",
    "        Status                            : Success",
    "        State                             : Completed",
    "        State                             : In Progress",
    "     Link 3: CRC Errors: 0",
    "    Link detected: yes",
    "     link_down_events_phy: 0",
    "     rx_packets_phy: 123456789",
    "4: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4200 qdisc mq state UP mode DEFAULT group default qlen 1000",
    "FAN4             | 9800.000   | RPM        | ok    | 300.000   | 500.000   | 700.000   | 25300.000 | 25400.000 | "
    "25500.000 ",
    "  1e | 11/26/2026 | 10:05:09 | Fan FAN4 | Lower Critical going low  | Deasserted",
    "Node Health Check completed successfully (2s).",
    "gpu_num check: exit_code: ExitCode.OK, Number of GPUs present is the same as expected, 8",
    "row_remap check: exit_code: ExitCode.OK, all GPUs do not have row remap failures or pending remaps.",
    "No link flaps were detected",
    "Directory /checkpoint: directory is mounted.",
    "|       -> SM system        | Healthy                                         |",
    # an unplugged onboard port in `ip link`; a CI summary's "Status: Failure" is not nvidia-smi's padded field
    "3: eno2: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc mq state DOWN mode DEFAULT group default qlen 1000",
    "Status: Failure",
    "State: Not Started",
    # a user's prose that names a check or a field is not the tool's line
    "see check_fs_mount in the NHC docs for how to list /scratch",
    "the Fabric Status field reads Success on a healthy node",
]


PASTED = [
    "Nov 26 10:01:07 gpu-node07 nhc[4242]: Health check failed:  check_fs_mount:  /home not mounted",
    "[rank0]: ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec).",
    "Jan 11 09:52:01 gpu12 python[4242]:         Drain and Reset Recommended       : Yes",
]


globals().update(table_tests(other=HEALTH_ROWS, no_drain=[*[line for line, _ in FAULTS], *PASTED], twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def _block_rules() -> list[str]:
    text = resources.files("slurmtools").joinpath("data/diagnosis_rules.toml").read_text(encoding="utf-8")
    start = text.index("(rules8-tools):")
    end = text.index("# (end of rules8-tools)")
    return [r["name"] for r in tomllib.loads(text[text.rindex("\n", 0, start) + 1:end])["rule"]]


def test_every_rule_of_the_block_reads_a_row_of_the_printer_file() -> None:
    """A rule no printer row needs is a rule nobody can say the source of: each one wins some row of tools.tsv."""
    names = _block_rules()
    assert len(names) >= 15 and all(n.startswith("tools8_") for n in names), names
    rows = [r for r in load([PRINTERS], real=None) if r.file == "tools.tsv"]
    assert len(rows) >= 200
    used = {f[0].details.get("rule") for f in (diagnose(r.line.encode()) for r in rows if r.kind != "-") if f}
    assert set(names) <= used, sorted(set(names) - used)
