"""Round 12's printers (rules12-tools), from their format strings: the verdict lines of monitoring systems (the
Monitoring Plugins' check_disk, check_ide_smart and check_sensors, thomas-krenn's check_ipmi_sensor, check_smart,
check_raid, GPU, InfiniBand, mount and temperature checks, Zabbix's template triggers, node_exporter's node-mixin
alerts, dcgm-exporter's metric lines, Netdata's alarms) and the admin tools' table rows rounds 8 and 10 left (ipmitool
sdr elist, storcli/perccli/MegaCli, smartctl's SCSI health, nvme-cli smart-log's critical-warning bits, ibstat's Sleep,
edac-util, ras-mc-ctl's AER rows), which tests/data/kernel/printers/tools3.tsv holds.

Every line is a format string or field of the source named in the comment above it, with its values filled in by hand,
not a line copied from a log or from the field corpus. The printer file checks the kind; this file checks what it
cannot: the severity, that a monitoring or tool line never drains (trust syslog), the twins and recovery notices that
must stay quiet, the monitoring servers' wrappers, and linear time on hostile lines.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import never_drains, table_tests

NAGIOS = "[1764151267] SERVICE ALERT: gpu-node-07;{svc};{state};HARD;3;"

TOOL_FAULTS = [
    # monitoring-plugins plugins/check_disk.c main() "DISK %s - free space: ..."; stat_path() "is not accessible: %s"
    ("DISK CRITICAL - free space: /scratch 812 MiB (0.4% inode=91%);| /scratch=2940731MiB;2480000;2790000;0;3100000",
     "disk"),
    ("DISK WARNING - free space: /var 1843 MiB (8% inode=97%);", "disk"),
    ("DISK CRITICAL - /data is not accessible: Input/output error", "disk"),
    # plugins/check_ide_smart.c nagios(): "CRITICAL - %d Harddrive PreFailure%cDetected! ...", "WARNING - %d Harddrive
    # Advisor%s Detected. ..."
    ("CRITICAL - 1 Harddrive PreFailure Detected! 1/30 tests failed.", "disk"),
    ("WARNING - 3 Harddrive Advisories Detected. 3/30 tests failed.", "disk"),
    # check_ipmi_sensor v3 "IPMI Status: <State> [<sensor> = <State> (...)]", filed by the sensor
    ("IPMI Status: Critical [CPU1 Temp = Critical (96.00 C)]", "thermal"),
    ("IPMI Status: Critical [FAN4 = Critical (0.00 RPM)]", "thermal"),
    ("IPMI Status: Critical [PS2 Status = Critical ('Presence detected' 'Power Supply input lost (AC/DC)')]",
     "thermal"),
    ("IPMI Status: Critical [DIMM_B1 = Critical ('Uncorrectable memory error')]", "mce"),
    ("IPMI Status: Critical [Drive 3 = Critical ('Drive Presence' 'Drive Fault')]", "disk"),
    ("IPMI Status: Critical [PCIe Slot 3 = Critical ('Bus Uncorrectable Error')]", "aer"),
    # plugins-scripts/check_sensors.sh, check_lm_sensors, check_temp
    ("SENSOR CRITICAL - Sensor alarm detected!", "thermal"),
    ("LM_SENSORS CRITICAL - Package id 0=98", "thermal"),
    ("TEMPERATURE WARNING - Inlet temperature 41 C", "thermal"),
    # check_smart.pl "<STATE>: Drive <model> S/N <serial>: <findings>"
    ("WARNING: Drive ST4000NM0035-1V4107 S/N ZC1A2B3C: 197 Current_Pending_Sector is non-zero (8), 198 "
     "Offline_Uncorrectable is non-zero (8)", "disk"),
    # check_raid "<STATE>: <plugin>:[...]"; the md checks
    ("CRITICAL: mdstat:[md0(1.82 TiB raid1):F:sdb1:_U]", "disk"),
    ("CRITICAL: megacli:[Volumes(1): DISK0.0:Degraded; Devices(2): 11=Failed 12=Online]", "disk"),
    ("RAID CRITICAL - md127 degraded (2/3 devices active)", "disk"),
    # GPU checks
    ("CRITICAL - GPU 3: 2 uncorrectable ECC errors (volatile)", "xid"),
    ("CRITICAL - GPU 2: row remapping failure occurred", "xid"),
    ("CRITICAL - GPU 0 (NVIDIA A100-SXM4-80GB) temperature 93 C (critical 90 C)", "thermal"),
    ("GPU CRITICAL - GPU 5: HW Thermal Slowdown active", "thermal"),
    ("CRITICAL - 7 GPUs found, 8 expected", "gpu_init"),
    # InfiniBand and mount checks
    ("CRITICAL - mlx5_0 port 1 state Down (physical state Polling)", "ib"),
    ("WARNING - mlx5_0 port 1 rate 100 Gb/sec (4X EDR), expected 400 Gb/sec", "ib"),
    ("CRITICAL - /home: stat timed out after 10 seconds", "nfs"),
    ("CRITICAL - /lustre is not mounted", "nfs"),
    ("CRITICAL - stale NFS mounts: /home /projects", "nfs"),
    # Zabbix 7.0 templates' triggers as "Problem: {EVENT.NAME}"
    ("Problem: Linux: FS [/scratch]: Space is critically low (used > 90%, total 3.5TB)", "disk"),
    ("Problem: Linux: FS [/home]: Filesystem has become read-only", "disk"),
    ("Problem: SMART [sda]: Disk self-test is not passed", "disk"),
    ("Problem: SMART [nvme0]: Average disk temperature is critical (over 65°C for 5m)", "thermal"),
    ("Problem: Chassis by IPMI: Sensor [FAN4] value is below lower critical threshold", "thermal"),
    # node_exporter node-mixin: Alertmanager's title, amtool's row, the description annotations
    ("[FIRING:1] NodeRAIDDegraded (gpu-node-07:9100 md0 node-exporter critical)", "disk"),
    ("NodeRAIDDiskFailure  2026-11-26 10:01:07 UTC  Failed device in RAID array.", "disk"),
    ("RAID array 'md0' at gpu-node-07:9100 is in degraded state due to one or more disks failures. Number of spare "
     "drives is insufficient to fix issue automatically.", "disk"),
    ("Filesystem on /dev/nvme0n1p1, mounted on /scratch, at gpu-node-07:9100 has only 2.31% available space left.",
     "disk"),
    # dcgm-exporter's memory-health fields non-zero
    ('DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="3",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-07"} 1', "xid"),
    ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="3",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-07"} 2', "xid"),
    # Netdata's alarm-notify.sh subject
    ("gpu-node-07 is critical - mdstat disks - md.md0_disks", "disk"),
    ("gpu-node-07 is critical - ipmi sensor state - ipmi.sensor_state_CPU1_Temp", "thermal"),
    # ipmitool sdr elist (cr / nr), storcli / perccli / MegaCli, smartctl, nvme-cli, ibstat, ras-mc-ctl
    ("FAN3             | 32h | nr  | 29.3 | 0 RPM", "thermal"),
    ("252:3     3 Failed  0 3.637 TB SATA HDD N   N  512B ST4000NM0035-1V4107 U  -", "disk"),
    ("0/0   RAID1 Dgrd  RW     Yes     RWBD  -   ON  1.818 TB data", "disk"),
    ("Predictive Failure Count = 3", "disk"),
    ("Firmware state: Failed", "disk"),
    ("State               : Degraded", "disk"),
    ("Event Description: State change on PD 04(e0xfc/s4) from ONLINE(18) to FAILED(11)", "disk"),
    ("SMART Health Status: FAILURE PREDICTION THRESHOLD EXCEEDED [asc=5d, ascq=10]", "disk"),
    ("      NVM subsystem Reliability[2]       : 1", "disk"),
    ("      Temp. Threshold[1]                 : 1", "thermal"),
    ("        Physical state: Sleep", "ib"),
    ("1 2026-11-26 10:01:07 +0000 error: 0000:3b:00.0 Uncorrected (Fatal) Surprise Down Error", "aer"),
]

ENVELOPED = [
    # Nagios's log and syslog wrappers, Icinga 2's mail body: the plugin's output behind the monitoring server's words
    (NAGIOS.format(svc="Disk /tmp", state="CRITICAL") + "DISK CRITICAL - free space: /tmp 96 MiB (0.3% inode=99%);",
     "disk"),
    (NAGIOS.format(svc="IPMI Sensors", state="CRITICAL") + "IPMI Status: Critical [CPU1 Temp = Critical (96.00 C)]",
     "thermal"),
    (NAGIOS.format(svc="RAID", state="CRITICAL") + "CRITICAL: mdstat:[md0(1.82 TiB raid1):F:sdb1:_U]", "disk"),
    ("Nov 26 10:01:07 mon01 nagios: SERVICE ALERT: gpu-node-07;IPMI;CRITICAL;HARD;3;IPMI Status: Critical [FAN4 = "
     "Critical (0.00 RPM)]", "thermal"),
    ("Info:    WARNING - 1 Harddrive Advisory Detected. 1/30 tests failed.", "disk"),
    ("[1764151267] SERVICE NOTIFICATION: hpc-admins;gpu-node-07;GPU;CRITICAL;notify-service-by-email;CRITICAL - GPU 3: "
     "2 uncorrectable ECC errors (volatile)", "xid"),
]

TWINS = [
    # the same printers' healthy states
    "DISK OK - free space: / 40123 MiB (62% inode=95%);| /=24577MiB;51680;58140;0;64600",
    "OK - Operational (30/30 tests passed)",
    "sensor ok",
    "SENSOR UNKNOWN - Sensor reported fault",
    "IPMI Status: OK",
    "IPMI Status: Critical [1 system event log (SEL) entry present]",
    "OK: Drive ST4000NM0035-1V4107 S/N ZC1A2B3C: no SMART errors detected.",
    "OK: mdstat:[md0(1.82 TiB raid1):UU, md1(7.28 TiB raid6):UUUU]",
    "OK - 8 GPUs, max temperature 61 C, no ECC errors",
    "OK - mlx5_0 port 1: Active, LinkUp, 400 Gb/sec (4X NDR)",
    "OK - all 4 NFS mounts responding",
    NAGIOS.format(svc="Disk /tmp", state="OK") + "DISK OK - free space: /tmp 31052 MiB (97% inode=99%);",
    "Problem: SMART [sdb]: Disk has been replaced",
    "Problem: Chassis by IPMI: Sensor [Inlet Temp] value is above upper non-critical threshold",
    "[FIRING:1] NodeCPUHighUsage (gpu-node-07:9100 node-exporter info)",
    'DCGM_FI_DEV_XID_ERRORS{gpu="3",modelName="NVIDIA H100 80GB HBM3"} 0',
    'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="3",modelName="NVIDIA H100 80GB HBM3"} 0',
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="3",modelName="NVIDIA H100 80GB HBM3"} 14',
    "CPU2 Temp        | 02h | nc  |  3.2 | 88 degrees C",
    "FAN3             | 32h | ok  | 29.3 | 5880 RPM",
    "252:0     0 Onln    0 3.637 TB SATA HDD N   N  512B ST4000NM0035-1V4107 U  -",
    "0/0   RAID1 Optl  RW     Yes     RWBD  -   ON  1.818 TB os",
    "Predictive Failure Count = 0",
    "Firmware state: Online, Spun Up",
    "State               : Optimal",
    "Event Description: Rebuild complete on VD 00/0",
    "SMART Health Status: OK",
    "      NVM subsystem Reliability[2]       : 0",
    "        Physical state: LinkUp",
    "mc0: 0 Uncorrected Errors with no DIMM info",
    "No PCIe AER errors.",
    "1 2026-11-26 10:01:07 +0000 error: 0000:3b:00.0 Corrected Receiver Error",
]

RECOVERED = [
    # Zabbix's "Resolved in {EVENT.DURATION}: {EVENT.NAME}", Alertmanager's [RESOLVED], Netdata's "recovered": the
    # problem's own words behind a recovery notice (thermal_text would read the first as a finding)
    "Resolved in 8m 40s: Nvidia: [3]: Temperature is above critical threshold",
    "Resolved in 1h 2m: SMART [sda]: Disk self-test is not passed",
    "Resolved: Linux: FS [/scratch]: Space is critically low (used > 90%, total 3.5TB)",
    "[RESOLVED] NodeRAIDDegraded (gpu-node-07:9100 md0 node-exporter critical)",
    "gpu-node-07 recovered - mdstat disks - md.md0_disks",
]


@pytest.mark.parametrize("line", [c[0] for c in TOOL_FAULTS + ENVELOPED])
def test_a_monitoring_or_tool_line_never_drains(line: str) -> None:
    never_drains(line)
    assert diagnose(line.encode())[0].trust == "syslog"


@pytest.mark.parametrize(("line", "xid", "severity"), [
    # dcgm-exporter's last-XID gauge is read through the XID catalog (48: a double-bit ECC error; 94: a contained one)
    ('DCGM_FI_DEV_XID_ERRORS{gpu="3",err_code="48",err_msg="DBE (Double Bit Error) ECC Error"} 48', 48, "critical"),
    ('DCGM_FI_DEV_XID_ERRORS{gpu="3",err_code="94",err_msg="Contained ECC error"} 94', 94, "warning"),
])
def test_dcgm_exporters_xid_gauge_is_the_xid(line: str, xid: int, severity: str) -> None:
    top = diagnose(line.encode())[0]
    assert (top.kind, top.xid, top.severity, top.trust) == ("xid", xid, severity, "syslog")
    never_drains(line)


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "DISK CRITICAL - " + "/" * 100_000 + " is not accessible: fine",
    "IPMI Status: Critical [" + "x" * 100_000 + " = Fine",
    "CRITICAL: Drive " + "a" * 100_000 + " S/N fine",
    "RAID CRITICAL - md0 " + "x " * 50_000 + "fine",
    "CRITICAL - GPU 1 " + "x" * 100_000 + " fine",
    'DCGM_FI_DEV_XID_ERRORS{' + 'a="b",' * 20_000 + '} 0',
    "252:3     3 Failed  0 " + "9" * 100_000 + " TB SATA HDD",
    "Event Description: Unexpected sense: PD " + "0" * 100_000 + " Sense: 1/",
    "gpu-node-07 is critical - " + "mdstat " * 20_000 + "- md",
]


globals().update(table_tests(found=[(line, kind, "warning") for line, kind in TOOL_FAULTS + ENVELOPED],
                             twins=TWINS + RECOVERED, unread=("rules12_tool_", HOSTILE)))
