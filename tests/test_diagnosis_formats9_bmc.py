"""Round 9's BMC printers (rules9-BMC), from their message texts: the server vendors' management-controller events that
tests/data/kernel/printers/bmc.tsv holds and no rule read before (Supermicro's `<event> @ <DIMM> - Asserted`, ipmitool's
power supply, power unit, redundancy and voltage offsets, the DMTF Redfish registries and the OpenBMC registry as bmcweb
ships them, Dell iDRAC's, HPE iLO's and Lenovo XCC's texts), and the twins beside them that must stay quiet (a
deassertion, a supply restored, a redundancy regained, a reading back in range, Lenovo's informational IDs).

Every line is a message text or format string of the source named in the comment above it (bmcweb 7debb89's registries,
ipmitool be11d94's include/ipmitool/ipmi_sel.h, the vendors' published event references) with its arguments filled in by
hand, not a line copied from a log or from the field corpus. The printer file checks the kind; this file checks what it
cannot: the severity, that a BMC's line is trust syslog and never drains a node, and the benign twins.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import never_drains, table_tests

FAULTS = [
    # Supermicro's health event log: an uncorrected ECC error is a warning here (a BMC's line), a corrected one info
    ("Uncorrectable ECC @ DIMMB2(CPU2) - Asserted", "mce", "warning"),
    ("Correctable ECC @ DIMMA1(CPU1) - Asserted", "mce", "info"),
    ("PS2 Status Power Supply AC lost - Asserted", "thermal", "warning"),
    # ipmitool lib/ipmi_sel.c `sel elist` rows of ipmi_sel.h's Power Supply (0x08), Power Unit (0x09), redundancy (0x0b)
    # and threshold (0x01) offsets on power and voltage sensors: filed under thermal (power and cooling)
    ("  21 | 11/26/2026 | 10:01:07 | Power Supply #0x51 | Failure detected | Asserted", "thermal", "warning"),
    ("  22 | 11/26/2026 | 10:01:07 | Power Supply #0x51 | Power Supply AC lost | Asserted", "thermal", "warning"),
    ("  2e | 11/26/2026 | 10:01:07 | Power Unit PS Redundancy | Redundancy Lost | Asserted", "thermal", "warning"),
    ("  32 | 11/26/2026 | 10:01:07 | Voltage #0x30 | Upper Critical going high | Asserted", "thermal", "warning"),
    # src/ipmievd.c log_event() "%s sensor %s %s %s"
    ("ipmievd[2211]: Power Supply sensor PS1 Status Failure detected Asserted", "thermal", "warning"),
    # bmcweb power_message_registry.hpp (DMTF Power): PowerSupplyFailed, LossOfInputPower, VoltageAboveUpperCritical...
    ("Power supply 'PSU1' has failed.", "thermal", "warning"),
    ("Loss of input power at 'PSU1 AC Input'.", "thermal", "warning"),
    ("Voltage 'P12V' reading of 13.4 volts is above the 13.2 upper critical threshold.", "thermal", "warning"),
    # environmental_message_registry.hpp: TemperatureCritical, LeakDetectedCritical
    ("Temperature 'DIMM A1 Temp' reading of 92 degrees (C) exceeds the critical level.", "thermal", "warning"),
    ("Leak detector 'ColdPlateLeak0' reports a critical level leak.", "thermal", "warning"),
    # openbmc_message_registry.hpp: PowerSupplyPowerLost, PowerUnitRedundancyLost, IntelUPILinkWidthReducedToHalf
    ("Power supply PSU2 power lost.", "thermal", "warning"),
    ("Power Unit Redundancy lost.", "thermal", "warning"),
    ("Intel UPI link width reduced to half. Node=1.", "mce", "warning"),
    # resource_event_message_registry.hpp: the kind is the resource's
    ("The resource property /redfish/v1/Systems/system/Memory/dimm3#/Status has detected errors of type "
     "'UncorrectableECC'.", "mce", "warning"),
    ("The resource property /redfish/v1/Chassis/chassis/PCIeDevices/gpu3#/Status has detected errors of type "
     "'FatalError'.", "aer", "warning"),
    ("The health of resource `/redfish/v1/Systems/system/Storage/1/Drives/nvme2` has changed to Critical.", "disk",
     "warning"),
    # storage_device_message_registry.hpp, network_device_message_registry.hpp
    ("A failure condition for the drive located in 'Slot 3' was detected.", "disk", "warning"),
    ("A cable was removed from network adapter 'NIC.Slot.1' port '2'.", "ib", "warning"),
    # Dell iDRAC PSU0003 / VLT0204, HPE iLO IML, Lenovo XCC
    ("PSU0003: Power supply 1 input lost.", "thermal", "warning"),
    ("Description: The system board 1.8V PG voltage is outside of the allowable range.", "thermal", "warning"),
    ("Uncorrectable Memory Error detected by ROM-based memory validation (Board 1, Memory Module 4)", "mce", "warning"),
    ("Network Adapter Link Down (Slot 1, Port 2)", "ib", "warning"),
    ("PCI Bus Error (Slot 3, Bus 94, Device 0, Function 0, Error status 0x00000000)", "aer", "warning"),
    ("FQXSFMA0001M: DIMM 3 has been disabled due to an error detected during POST.", "mce", "warning"),
    ("FQXSFIO0005M: An intra-board UPI connection failure has been detected between Processor 1 Port 1 and "
     "Processor 2 Port 1.", "mce", "warning"),
    ("FQXSPPW0007L: Power supply 1 has lost input.", "thermal", "warning"),
]


@pytest.mark.parametrize("line", [c[0] for c in FAULTS])
def test_a_bmc_line_is_trust_syslog_and_never_drains(line: str) -> None:
    never_drains(line)
    assert all(f.trust == "syslog" for f in diagnose(line.encode()))


@pytest.mark.parametrize("line", [
    # the same lines behind a syslog envelope (an iDRAC's or XCC's remote syslog, ipmievd through rsyslog)
    "Nov 26 10:01:07 idrac-node01 Severity: Warning, Category: Audit, MessageID: NIC100, Message: The NIC Slot 3 "
    "Port 1 network link is down.",
    "Nov 26 10:01:07 XCC-7X06-J300ABCD FQXSPPW0007L: Power supply 1 has lost input.",
    "Nov 26 10:01:07 node01 ipmievd[2211]: Voltage sensor P12V Lower Critical going low  Asserted (Reading 10.8 < "
    "Threshold 11.1 Volts)",
])
def test_an_envelope_does_not_make_a_bmc_line_drain(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings and findings[0].severity == "warning", line
    never_drains(line)


BENIGN_TWINS = [
    "Correctable ECC @ DIMMA1(CPU1) - Deasserted",
    "Uncorrectable ECC @ DIMMB2(CPU2) - Deasserted",
    "PS2 Status Power Supply AC lost - Deasserted",
    "  29 | 11/26/2026 | 10:01:07 | Power Supply #0x51 | Failure detected | Deasserted",
    "  31 | 11/26/2026 | 10:01:07 | Power Unit PS Redundancy | Fully Redundant | Asserted",
    "  28 | 11/26/2026 | 10:01:07 | Power Supply PS1 Status | Presence detected | Asserted",
    "Power supply 'PSU1' was restored.",
    "Power supply group 'PowerSupplyRedundancyGroup1' is operating normally.",
    "Line input power at 'PSU2 AC Input' was restored.",
    "Voltage 'P12V' reading of 12.1 volts is within normal operating range.",
    "Voltage 'P3V3' reading of 3.1 volts is now above the 3.0 lower critical threshold.",
    "Voltage 'CPU0_VCCIN' reading of 1.9 volts no longer exceeds the critical level.",
    "Temperature 'CPU0 Temp' reading of 93 degrees (C) is now below the 95 upper critical threshold.",
    "Leak detector 'ColdPlateLeak0' has returned to normal.",
    "Power Unit Redundancy regained.",
    "Fan redundancy regained.",
    "Power supply PSU2 power restored.",
    "CPU0_Temp sensor crossed a critical high threshold going low. Reading=96.000000 Threshold=100.000000.",
    "Mirroring redundancy state fully redundant. Socket=0 Channel=2 DIMM=0 Pair=1 Rank=0.",
    "The health of resource '/redfish/v1/Systems/system/Memory/dimm3' has changed to OK.",
    "A failure condition for the drive located in 'Slot 3' was cleared.",
    "A network cable was inserted into network adapter 'NIC.Slot.1' port '2'.",
    "The input power for power supply 3 has been restored.",
    "The power supplies are redundant.",
    "Power Supply Redundancy Restored",
    "Network Adapter Link Up (Slot 1, Port 2)",
    "Description: The NIC Integrated 1 Port 1 network link is started.",
    "FQXSPCA2002I: Fan Fan 3 Tach going low (lower critical) has deasserted.",
    "FQXSPPW0001I: Power supply 2 has been added.",
    # the kernel's IPMI driver that finds no BMC (drivers/char/ipmi/ipmi_si_intf.c try_smi_init())
    "ipmi_si IPI0001:00: There appears to be no BMC at this location",
]


# a long line of near-matches is decided, and is not the new rules' finding
HOSTILE = [
    "Power supply '" + "P" * 100_000 + " has failed",
    "The health of resource `/redfish/v1/" + "a/" * 50_000 + " has changed to Critical.",
    "Voltage 'P12V' reading of " + "1 " * 50_000 + "volts",
]


OTHER_SHAPES = [
    # FreeIPMI's words (libfreeipmi's power supply / power unit / generic tables) in ipmi-sel's and ipmi-sensors' tables
    ("12 | Nov-26-2026 | 10:01:07 | PS1 Status       | Power Supply                | Power Supply input lost (AC/DC)",
     "thermal"),
    ("118 | P12V             | Voltage                  | 10.80      | V     | 'At or Below (<=) Lower Critical "
     "Threshold'", "thermal"),
    # ipmitool's CSV form (-c) and a registry message inside a Redfish LogEntry's JSON
    ("2a,11/26/2026,10:01:07,Power Supply PS2 Status,Power Supply AC lost,Asserted", "thermal"),
    ('{"Message": "Fan redundancy lost.", "MessageId": "OpenBMC.0.1.FanRedundancyLost", "Severity": "Warning"}',
     "thermal"),
]


TWIN_LINES = [
    "1b | Nov-26-2026 | 10:01:07 | PS Redundancy    | Power Unit                  | Fully Redundant",
    "118 | P12V             | Voltage                  | 12.00      | V     | 'OK'",
    "2d,11/26/2026,10:01:07,Power Supply PS2 Status,Power Supply AC lost,Deasserted",
    '{"Message": "Fan redundancy regained.", "MessageId": "OpenBMC.0.1.FanRedundancyRegained", "Severity": "OK"}',
]


globals().update(table_tests(found=FAULTS, other=[(line, kind, "warning") for line, kind in OTHER_SHAPES],
                             twins=[*BENIGN_TWINS, *TWIN_LINES], unread=("rules9_bmc_", HOSTILE)))
