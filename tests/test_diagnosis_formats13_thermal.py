"""Round 13's printers (rules13-thermal), from their format strings: the THERMAL and POWER families that
tests/data/kernel/printers/thermal.tsv holds and no rule read before: the hardware-protection shutdown's watchdog,
amdgpu's thermal interrupts (SW and HW CTF, under-temperature, Aldebaran's throttling warning), thinkpad_acpi's EC
thermal alarms, the thermal core's and sensor drivers' set-up notes, Intel thermald's critical trip, lm-sensors' fan,
voltage and power alarms, FreeIPMI's fan and voltage thresholds and DCGM's power and clock texts.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's
linux-source-6.1 holds it; thermald's thd_log_* texts; lm-sensors 3.6.0 prog/sensors/chips.c; FreeIPMI's documented
output formats; NVIDIA DCGM dcgm_errors.h at 18b87c71) with its conversions filled in by hand, not a line copied from a
log or from the field corpus. The printer file checks the kind; this file checks the severity, the trust (a daemon's
or tool's line never drains; a critical trip's kernel line drains), the notes that must stay quiet, and linear time on
hostile lines.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

KERNEL_DRAINS = [
    # kernel/reboot.c hw_failure_emergency_poweroff_func pr_emerg("Hardware protection timed-out. Trying forced
    # poweroff\n"), "Hardware protection shutdown failed. Trying emergency restart\n"
    ("reboot: Hardware protection timed-out. Trying forced poweroff", "thermal", "critical"),
    ("reboot: Hardware protection shutdown failed. Trying emergency restart", "thermal", "critical"),
    # drivers/gpu/drm/amd/pm amdgpu_smu.c smu_swctf_delayed_work_handler, smu13/smu_v13_0.c smu_v13_0_irq_process,
    # powerplay/hwmgr/smu_helper.c phm_irq_process: dev_emerg "ERROR: GPU over temperature range(SW CTF) detected!\n",
    # "ERROR: GPU HW Critical Temperature Fault(aka CTF) detected!\n", "ERROR: System is going to shutdown due to GPU
    # SW|HW CTF!\n"
    ("amdgpu 0000:c1:00.0: ERROR: GPU over temperature range(SW CTF) detected!", "thermal", "critical"),
    ("amdgpu 0000:29:00.0: ERROR: GPU HW Critical Temperature Fault(aka CTF) detected!", "thermal", "critical"),
    ("amdgpu 0000:c1:00.0: ERROR: System is going to shutdown due to GPU SW CTF!", "thermal", "critical"),
    ("amdgpu 0000:29:00.0: ERROR: System is going to shutdown due to GPU HW CTF!", "thermal", "critical"),
]

KERNEL_FAULTS = [
    # smu_v13_0_irq_process / phm_irq_process "ERROR: GPU under temperature range detected[!]\n", "... unknown src id
    # (%d)\n"; aldebaran_ppt.c and arcturus_ppt.c "WARN: GPU thermal throttling temperature reached, expect performance
    # decrease. %s.\n"
    ("amdgpu 0000:29:00.0: ERROR: GPU under temperature range detected", "thermal", "warning"),
    ("amdgpu 0000:03:00.0: ERROR: GPU under temperature range detected!", "thermal", "warning"),
    ("amdgpu 0000:29:00.0: ERROR: GPU under temperature range unknown src id (2)", "thermal", "warning"),
    ("amdgpu 0000:c1:00.0: WARN: GPU thermal throttling temperature reached, expect performance decrease. GPU and HBM.",
     "thermal", "warning"),
    # v6.12 smu13/smu_v13_0_6_ppt.c (MI300) "WARN: GPU is throttled, expect performance decrease. %s.\n"
    ("amdgpu 0000:05:00.0: WARN: GPU is throttled, expect performance decrease. PPT.", "thermal", "warning"),
    ("amdgpu 0000:26:00.0: WARN: GPU is throttled, expect performance decrease. Prochot and SOC.", "thermal",
     "warning"),
    # v6.12 thermal_core.c thermal_zone_broken_disable dev_crit("Disabled thermal zone with critical trip point\n"): a
    # zone left unwatched, no heat (warning; thermal_critical's drain is for a trip reached)
    ("thermal thermal_zone3: Disabled thermal zone with critical trip point", "thermal", "warning"),
    # drivers/platform/x86/thinkpad_acpi.c pr_crit("THERMAL ALARM: ...\n"), pr_alert("THERMAL EMERGENCY: ...\n")
    ("thinkpad_acpi: THERMAL ALARM: a sensor reports something is too hot!", "thermal", "warning"),
    ("thinkpad_acpi: THERMAL EMERGENCY: battery is extremely hot!", "thermal", "warning"),
]

DAEMON_FAULTS = [
    # intel thermald thd_trip_point.cpp thd_log_warn("critical temp reached \n") before sync() and reboot(RB_POWER_OFF)
    ("Nov 26 10:08:56 gpu-node07 thermald[1187]: critical temp reached", "thermal", "error"),
    # lm-sensors 3.6.0 prog/sensors/chips.c print_chip_fan, print_chip_in, print_chip_power ("ALARM", "FAULT")
    ("fan1:           0 RPM  (min =  600 RPM)  ALARM", "thermal", "warning"),
    ("fan3:         212 RPM  (min = 1200 RPM, div = 8)  ALARM", "thermal", "warning"),
    ("fan2:        FAULT  (min =  600 RPM)", "thermal", "warning"),
    ("in1:          10.80 V  (min = +11.40 V, max = +12.60 V)  ALARM", "thermal", "warning"),
    ("+12V:         +10.92 V  (min = +11.40 V, max = +12.60 V)  ALARM", "thermal", "warning"),
    ("power1:      412.00 W  (crit = 350.00 W)  ALARM (CRIT)", "thermal", "warning"),
    ("temp3:        FAULT  (high = +80.0°C, crit = +100.0°C)", "thermal", "warning"),
    # FreeIPMI ipmi-sel (threshold event text) and ipmi-sensors ('At or Below (<=) Lower Critical Threshold')
    ("26 | Nov-26-2026 | 10:01:14 | FAN4             | Fan                         | Lower Critical - going low ; "
     "Sensor Reading = 0.00 RPM ; Threshold = 500.00 RPM", "thermal", "warning"),
    ("28 | Nov-26-2026 | 10:01:14 | FAN4             | Fan                         | Critical | Lower Critical - going "
     "low ; Sensor Reading = 0.00 RPM ; Threshold = 500.00 RPM", "thermal", "warning"),
    ("61  | FAN4             | Fan                      | 0.00       | RPM   | 'At or Below (<=) Lower Critical "
     "Threshold'", "thermal", "warning"),
    ("62  | FAN5             | Fan                      | Critical | 0.00       | RPM   | 'At or Below (<=) Lower "
     "Non-Recoverable Threshold'", "thermal", "warning"),
    # DCGM dcgm_errors.h DCGM_FR_CLOCK_THROTTLE_POWER_MSG, DCGM_FR_THROTTLING_VIOLATION_MSG,
    # DCGM_FR_ENFORCED_POWER_LIMIT_MSG, DEBUG_COOLING_MSG
    ("Detected clock throttling due to power violation in GPU 5.", "thermal", "warning"),
    ("Clocks are being throttled for GPU 2 because of clock throttling starting 44.0 seconds into the test. "
     "HW Slowdown is engaged", "thermal", "warning"),
    ("Enforced power limit on GPU 1 set to 350.0, which is too low to attempt to achieve target power 700.0",
     "thermal", "warning"),
    ("Verify that the cooling on this machine is functional, including external, thermal material interface, fans, "
     "and any other components.", "thermal", "warning"),
]

TWINS = [
    # the set-up notes rules13_thermal_setup_notes keeps at info (thermal_core.c, thermal_helpers.c, thermal_of.c,
    # acpi/thermal.c, coretemp.c, amdgpu's fan and power set-up)
    "thermal thermal_zone0: binding zone acpitz with cdev Processor failed:-22",
    "thermal thermal_zone3: Failed to set trips: -22",
    "thermal_sys: Failed to find thermal zone for cpu-thermal id=0",
    "ACPI: thermal: Critical threshold 105 C",
    "ACPI: thermal: Medion 41700 detected: disabling all critical thermal trip point actions.",
    "coretemp coretemp.0: Unable to access MSR 0x17, assuming desktop CPU",
    "coretemp coretemp.0: Unable to access MSR 0xEE, for Tjmax, left at default",
    "coretemp coretemp.0: Unable to read TjMax from CPU 0",
    "coretemp coretemp.1: Adding Core 7 failed",
    "amdgpu 0000:29:00.0: Failed to set manual fan control mode",
    "amdgpu 0000:c1:00.0: Board power calibration failed!",
    # v6.12 thermal_core.c: the recheck, the broken zone's first line, the bind error
    "thermal thermal_zone7: Temperature check failed (-61)",
    "thermal thermal_zone7: Unable to get temperature, disabling!",
    "thermal thermal_zone0: binding cdev Processor to trip 1 failed: -22",
    # thermal_core.c update_temperature: benign_noise's (a wireless card's zone while it is down)
    "thermal thermal_zone9: failed to read out thermal zone (-61)",
    # the informational twins of the same printers
    "CPU42: Core temperature/speed normal (total events = 18)",
    "amdgpu 0000:29:00.0: Recover soft CTF limit to 100",
    "intel_powerclamp: Start idle injection to reduce power",
    "power_meter ACPI000D:00: Capping in progress.",
    "thermald[1187]: Thermal Daemon is disabled",
    "fan1:        1850 RPM  (min =  600 RPM)",
    "in1:          12.05 V  (min = +11.40 V, max = +12.60 V)",
    "PPT:          72.00 W  (cap = 300.00 W)",
    "45  | CPU1 Temp        | Temperature              | 52.00      | C     | 'OK'",
    "61  | FAN4             | Fan                      | Nominal  | 8400.00    | RPM   | 'OK'",
    "   d | 11/26/2026 | 10:07:41 | Fan FAN6 | Lower Critical going low  | Deasserted | Reading 4200 < Threshold "
    "600 RPM",
    "        SW Power Cap                      : Active",
    "            HW Thermal Slowdown           : Not Active",
    "|       -> Power system     | Healthy                                        |",
    "Monitor the power conditions. This GPU can still perform workload.",
]


@pytest.mark.parametrize("line", [
    "[ 9324.010872] reboot: Hardware protection timed-out. Trying forced poweroff",
    "Nov 26 10:01:07 gpu-node07 kernel: amdgpu 0000:29:00.0: ERROR: GPU HW Critical Temperature Fault(aka CTF) "
    "detected!",
    "0,5109,7134567803,-;amdgpu 0000:c1:00.0: ERROR: System is going to shutdown due to GPU SW CTF!",
])
def test_an_enveloped_kernel_line_is_read_the_same(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings and findings[0].kind == "thermal" and findings[0].trust == "kernel", line


# a job echoing a kernel text does not drain
ECHOED = [
    "python3: saw 'amdgpu 0000:c1:00.0: ERROR: GPU over temperature range(SW CTF) detected!' in the log",
    "myjob: reboot: Hardware protection timed-out. Trying forced poweroff",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "fan1: " + "1 " * 50_000 + "RPM  (min = 600 RPM)  ALARM",
    "x" * 100_000 + ":  FAULT  (min = 600 RPM)",
    "| Fan |" + " |" * 50_000 + " 'At or Below (<=) Lower Critical Threshold'",
    "| Fan |" + " " * 100_000 + "Critical x",
    "fan1: " + " " * 100_000 + "FAULT x",
    "amdgpu 0000:c1:00.0: " + "ERROR: " * 20_000 + "GPU",
    "Enforced power limit on GPU 1 set to " + "9" * 100_000 + ", which",
]


globals().update(table_tests(found=KERNEL_DRAINS, kernel_quiet=KERNEL_FAULTS, other=DAEMON_FAULTS,
                             kernel_drains_lines=[c[0] for c in KERNEL_DRAINS], no_fault=ECHOED, twins=TWINS,
                             unread=("rules13_", HOSTILE)))
