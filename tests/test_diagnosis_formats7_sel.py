"""Round 7 (sel): a BMC's event log and the tools admins paste, read from their printers (ipmitool's and FreeIPMI's
event tables, ipmievd, OpenBMC's Redfish registry, Dell's and HPE's BMC messages, nvidia-smi -q, dcgmi, smartctl,
mlxlink, systemd's unit lines): each fault line is found as its kind, its benign twin stays below warning, and none
of them (a BMC's or a tool's line) ever drains a node."""

from __future__ import annotations

from .rule_cases import table_tests

FOUND = [
    # ipmitool lib/ipmi_sel.c: the CSV form (-c) of `sel elist`, ipmievd's log_event(), `sel get`'s Description
    ("1a,01/02/2024,10:11:12,Memory #0x87,Uncorrectable ECC,Asserted", "mce", "critical"),
    ("ipmievd: Memory sensor DIMM_A1 Uncorrectable ECC Asserted", "mce", "critical"),
    ("ipmievd: Memory sensor - Uncorrectable ECC", "mce", "critical"),
    (" Description           : Uncorrectable ECC", "mce", "critical"),
    ("Memory ECC uncorrectable error. Socket=0 Channel=A DIMM=1 Rank=0.", "mce", "critical"),
    # ipmi_get_event_desc()'s OEM suffix "%s (%s)" (Supermicro's DIMM location) in the CSV and ipmievd shapes
    ("1a,01/02/2024,10:11:12,Memory #0x87,Uncorrectable ECC (@DIMMA1(CPU1)),Asserted", "mce", "critical"),
    ("ipmievd: Memory sensor DIMM_A1 Uncorrectable ECC (@DIMMA1(CPU1)) Asserted", "mce", "critical"),
    # FreeIPMI ipmi-sensors: each event in single quotes, the threshold state in its own words
    ("12 | CPU1 Temp        | Temperature              | 95.00      | C     | "
     "'At or Above (>=) Upper Critical Threshold'", "thermal", "warning"),
    ("40 | HDD0 Status      | Drive Slot               | N/A        | N/A   | 'Drive Presence' 'Drive Fault'",
     "disk", "warning"),
    ("41 | CPU1 Status      | Processor                | N/A        | N/A   | 'Processor Presence detected' 'IERR'",
     "mce", "warning"),
    # processor offsets (ipmitool and FreeIPMI words), OpenBMC's CPUError, Dell CPU0000
    ("ipmievd[1234]: Processor sensor CPU1 Status IERR Asserted", "mce", "warning"),
    ("3   | Jan-11-2024 | 09:52:01 | CPU1 Status      | Processor                   | IERR", "mce", "warning"),
    ("  2e | 01/02/2024 | 10:11:12 | Processor #0x01 | Machine Check Exception | Asserted", "mce", "warning"),
    ("CPU Error Occurred: IERR.", "mce", "warning"),
    ("CPU0000: Internal error has occurred check for additional logs.", "mce", "warning"),
    ("Memory parity error. Socket=1 Channel=B DIMM=0 ChannelValid=1 DIMMValid=1.", "mce", "warning"),
    # the Critical Interrupt sensor's bus errors, OpenBMC's legacy PCI and PCIe fatal messages, Dell PCI1304
    ("5   | Jan-11-2024 | 09:52:01 | PCIe Error       | Critical Interrupt          | PCI SERR", "aer", "warning"),
    ("ipmievd: Critical Interrupt sensor PCIe Error Bus Fatal Error Asserted", "aer", "warning"),
    ("20,01/02/2024,10:11:12,Critical Interrupt #0x02,PCI PERR,Asserted", "aer", "warning"),
    ("Legacy PCI SERR. Bus=59 Device=0 Function=0.", "aer", "warning"),
    # the Critical Interrupt sensor's "Bus Degraded": a bus below its performance (fail-slow, kind pcie)
    ("  14 | 01/11/2024 | 09:52:01 | Critical Interrupt #0x18 | Bus Degraded | Asserted", "pcie", "warning"),
    ("5   | Jan-11-2024 | 09:52:01 | PCIe Error       | Critical Interrupt          | "
     "Bus Degraded (bus operating in a degraded performance state)", "pcie", "warning"),
    # ipmitool sdr elist: the sensor's current states, comma-joined, after its status column
    ("HDD0 Status      | 60h | cr  | 4.0 | Drive Present, Drive Fault", "disk", "warning"),
    ("CPU1 Status      | 70h | cr  |  3.1 | Presence detected, IERR", "mce", "warning"),
    ("PCIe Status      | A1h | cr  |  7.1 | PCI SERR", "aer", "warning"),
    ("PCIe Fatal Surprise Link Down Error. Bus=59 Device=0 Function=0.", "aer", "warning"),
    ("PCI1304: An I/O channel check error was detected.", "aer", "warning"),
    # temperature thresholds and thermal trips in ipmievd's, FreeIPMI's and OpenBMC's shapes
    ("ipmievd: Temperature sensor CPU1 Temp Upper Critical going high Asserted "
     "(Reading 95 > Threshold 90 degrees C)", "thermal", "warning"),
    ("4   | Jan-11-2024 | 09:52:01 | CPU1 Temp        | Temperature                 | Upper Critical - going high ; "
     "Sensor Reading = 95.00 C ; Threshold = 90.00 C", "thermal", "warning"),
    ("ipmievd: Processor sensor CPU1 Status Thermal Trip Asserted", "thermal", "warning"),
    ("CPU 1 Thermal Trip.", "thermal", "warning"),
    ("Memory ThermTrip asserted: DIMM_A1.", "thermal", "warning"),
    # the Drive Slot sensor, OpenBMC's DriveError, HPE iLO's IML drive status
    ("  23 | 01/02/2024 | 10:11:12 | Drive Slot #0x60 | Drive Fault | Asserted", "disk", "warning"),
    ("6   | Jan-11-2024 | 09:52:01 | HDD0             | Drive Slot                  | Drive Fault", "disk", "warning"),
    ("  31 | 01/02/2024 | 10:11:12 | Drive Slot #0x60 | Predictive failure | Asserted", "disk", "warning"),
    ("ipmievd: Drive Slot sensor HDD3 In Failed Array Asserted", "disk", "warning"),
    ("Drive Error Occurred: NVMe drive 2 failed.", "disk", "warning"),
    ("Drive Array Physical Drive Status Change. The physical drive in Port 1I, Box 1, Bay 2 with serial number "
     "\"S3Z1NX0K\", has a new status of Failed.", "disk", "warning"),
    # nvidia-smi -q: a remap pending, non-zero uncorrectable counters
    ("        Pending                           : Yes", "xid", "warning"),
    ("            DRAM Uncorrectable            : 2", "xid", "error"),
    ("            Double Bit ECC                : 3", "xid", "warning"),
    # nvidia-smi -q -x: the same fields as XML
    ("      <remapped_row_failure>Yes</remapped_row_failure>", "xid", "error"),
    ("        <dram_uncorrectable>4</dram_uncorrectable>", "xid", "error"),
    ("      <remapped_row_pending>Yes</remapped_row_pending>", "xid", "warning"),
    ("    <gpu_recovery_action>GPU Reset</gpu_recovery_action>", "xid", "warning"),
    ("      <clocks_event_reason_hw_thermal_slowdown>Active</clocks_event_reason_hw_thermal_slowdown>",
     "thermal", "warning"),
    # dcgmi diag's test rows and dcgmi health -c's overall verdict
    ("| Memory                    | Fail - GPU: 0                                  |", "xid", "warning"),
    ("| Targeted Stress           | Fail - GPU: 1                                  |", "xid", "warning"),
    ("| Overall Health            | Failure                                        |", "xid", "warning"),
    ("|                           | Fail - GPU: 0                                  |", "xid", "warning"),
    ("| targeted_stress           | Fail                                           |", "xid", "warning"),
    ("| Persistence Mode          | Fail                                           |", "gpu_init", "warning"),
    # smartctl's self-test log and execution status
    ("# 1  Extended offline    Completed: read failure       90%     12345         123456789", "disk", "warning"),
    (" 0   Extended            Completed: failed segments    12345  0x1  -  -  -  -", "disk", "warning"),
    ("                                        the read element of the test failed.", "disk", "warning"),
    # mlxlink's post-FEC BER
    ("Effective Physical BER          : 15E-8", "ib", "warning"),
    # systemd's lines for the GPU and RDMA daemons
    ("systemd[1]: nvidia-persistenced.service: Failed with result 'exit-code'.", "gpu_init", "warning"),
    ("systemd[1]: Failed to start NVIDIA DCGM service.", "gpu_init", "warning"),
    ("systemd[1]: openibd.service: Failed with result 'exit-code'.", "ib", "warning"),
]

# POWER: the kernel's opal-hmi.c and opal.c, skiboot's console (the kernel's and the firmware's own lines)
POWER = [
    ("Fatal Hypervisor Maintenance interrupt [Not recovered]", "mce", "error"),
    ("Hardware platform error: Unrecoverable HMI exception", "mce", "error"),
    ("[ 1234.567890,0] OPAL: Reboot requested due to Platform error.", "mce", "error"),
]

BENIGN = [
    # deassertions: the condition cleared (ipmitool's row, ipmievd's line, FreeIPMI -v's direction column)
    "  25 | 01/02/2024 | 10:11:12 | Temperature #0x30 | Upper Critical going high | Deasserted",
    "  29 | 01/02/2024 | 10:11:12 | Memory #0x87 | Uncorrectable ECC | Deasserted",
    "  39 | 01/02/2024 | 10:11:12 | Processor #0x01 | Thermal Trip | Deasserted",
    "ipmievd: Temperature sensor CPU1 Temp Upper Critical going high Deasserted (Reading 85 < Threshold 90 degrees C)",
    "ipmievd: Memory sensor DIMM_A1 Uncorrectable ECC Deasserted",
    "9   | Jan-11-2024 | 09:52:01 | PS1 Status | Power Supply | Deassertion Event | Power Supply Failure detected",
    # informational offsets
    "  26 | 01/02/2024 | 10:11:12 | System Firmware Progress #0x01 | Motherboard initialization | Asserted",
    "  27 | 01/02/2024 | 10:11:12 | Event Logging Disabled #0x07 | Log area reset/cleared | Asserted",
    "  28 | 01/02/2024 | 10:11:12 | Power Supply #0x51 | Presence detected | Asserted",
    "  2f | 01/02/2024 | 10:11:12 | Processor #0x01 | Presence detected | Asserted",
    "  30 | 01/02/2024 | 10:11:12 | Drive Slot / Bay #0x60 | Drive Present | Asserted",
    "  3a | 01/02/2024 | 10:11:12 | System Event #0x83 | OEM System boot event | Asserted",
    "8   | Jan-11-2024 | 09:52:01 | SEL              | Event Logging Disabled      | Log Area Reset/Cleared",
    "ipmievd: Memory sensor DIMM_A1 Correctable ECC Asserted",
    "ipmievd: Critical Interrupt sensor PCIe Error Bus Correctable error Asserted",
    "PCIe Correctable Receiver Error. Bus=59 Device=0 Function=0.",
    "Memory ECC correctable error. Socket=0 Channel=A DIMM=1 Rank=0.",
    "  2d | 01/02/2024 | 10:11:12 | Critical Interrupt #0x02 | Bus Correctable error | Asserted",
    "Harmless Hypervisor Maintenance interrupt [Recovered]",
    " Hypervisor Maintenance interrupt [Recovered]",
    "12 | CPU1 Temp        | Temperature              | 45.00      | C     | 'OK'",
    "40 | HDD0 Status      | Drive Slot               | N/A        | N/A   | 'Drive Presence'",
    "  1a | 01/02/2024 | 10:11:12 | Memory #0x87 | Uncorrectable ECC (@DIMMA1(CPU1)) | Deasserted",
    "HDD0 Status      | 60h | ok  | 4.0 | Drive Present",
    "CPU1 Status      | 70h | ok  |  3.1 | Presence detected",
    # tools at rest
    "        Pending                           : No",
    "            DRAM Uncorrectable            : 0",
    "            Double Bit ECC                : 0",
    "      <remapped_row_failure>No</remapped_row_failure>",
    "        <dram_uncorrectable>0</dram_uncorrectable>",
    "    <gpu_recovery_action>None</gpu_recovery_action>",
    "    <gpu_recovery_action>N/A</gpu_recovery_action>",
    "      <clocks_throttle_reason_sw_thermal_slowdown>Not Active</clocks_throttle_reason_sw_thermal_slowdown>",
    "      <clocks_event_reason_sw_power_cap>Active</clocks_event_reason_sw_power_cap>",
    "| Memory                    | Pass - All                                     |",
    "| Overall Health            | Healthy                                        |",
    "|                           | Pass - GPU: 1                                  |",
    "| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |",
    "| Persistence Mode          | Pass                                           |",
    "# 1  Short offline       Completed without error       00%     12345         -",
    "Effective Physical BER          : 15E-255",
    "systemd[1]: Started NVIDIA Persistence Daemon.",
    "systemd[1]: openibd.service: Succeeded.",
]


# kernel_investigated_lines: An unrecovered HMI reboots the machine itself: the kernel's line, action investigate, no
# drain of its own.
globals().update(table_tests(found=POWER, other=FOUND, kernel_investigated_lines=[case[0] for case in POWER],
                             twins=BENIGN))
