"""Round 18's rules from the rules halves' misses (lead18_* in slurmtools/data/diagnosis_rules.toml): each family's
lines in words the collections' rows do not quote (other chips, labels and values), the benign twins of the same
printers, and the trust that keeps a tool's line from draining a node. The collections' own rows are scored by
tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

OTHER_FAULTS = [
    # lm-sensors: a reading past its own limit with no ALARM flag (prog/sensors/chips.c print_chip_temp/print_chip_fan)
    ("Package id 1:  +101.0°C  (high = +84.0°C, crit = +100.0°C)", "thermal", "error"),
    ("Core 17:       +92.0°C  (high = +88.0°C, crit = +98.0°C)", "thermal", "warning"),
    ("temp2:         +76.5°C  (high = +75.0°C, hyst = +70.0°C)  sensor = thermistor", "thermal", "warning"),
    ("Composite:     +84.9°C  (low  = -273.1°C, high = +81.8°C)", "thermal", "warning"),
    ("Tctl:          +96.1°C  (high = +70.0°C, crit = +95.0°C)", "thermal", "error"),
    ("fan4:          420 RPM  (min = 1800 RPM)", "thermal", "warning"),
    # network and FUSE filesystem clients: cvmfs's debug log, NFS locking, fusermount, mfsmount
    ("(download) Verify downloaded url /.cvmfspublished, proxy http://sq2.example.org:3128 (curl error 35)    "
     "[02-03-2025 04:05:06 UTC]", "nfs", "warning"),
    ("(download) switching proxy from http://sq2:3128 to http://sq3:3128 (failed proxy)    [02-03-2025 04:05:06 UTC]",
     "nfs", "warning"),
    ("I0203 04:05:06.000001 11 automount.go:142] automount[12]: >> (cvmfs) failed to download repository manifest "
     "(9 - host data transfer cut short) [02-03-2025 04:05:06 UTC]", "nfs", "warning"),
    ("mount.nfs4: Either use '-o nolock' to keep locks local, or start statd.", "nfs", "warning"),
    ("flock: /scratch/u/job.lock: No locks available", "nfs", "warning"),
    ("fusermount: failed to open /dev/fuse: No such file or directory", "nfs", "warning"),
    ("2025-02-03 04:05:06.7 E | mount: fusermount3 exited with code 2", "nfs", "warning"),
    ("read_data: 'connect(chunkserver)' timed out", "nfs", "warning"),
    ("Jun  3 10:00:00 node7 sensors[4411]: Core 2: +99.0°C (high = +84.0°C, crit = +100.0°C)", "thermal", "warning"),
]
KERNEL_FAULTS = [
    # a board's supply monitor (raspberrypi-hwmon.c, the older firmware driver with its status word)
    ("raspberrypi-hwmon raspberrypi-hwmon: Undervoltage detected!", "thermal", "warning"),
    ("Under-voltage detected! (0x00010001)", "thermal", "warning"),
]
TWINS = [
    "cvmfs2[4242]: (lhcb.cern.ch) (manager 'standard') switching proxy from (none) to http://sq9:3128 (sq9). Reason: "
    "set random start proxy from the first proxy group",
    "(download) Verify downloaded url /.cvmfspublished, proxy http://sq2:3128 (curl error 0)    [02-03-2025 04:05:06 UTC]",
    "(download) escape /.cvmfspublished    [02-03-2025 04:05:06 UTC]",
    "mount: fusermount exited with code 0",
    "raspberrypi-hwmon raspberrypi-hwmon: Voltage normalised",
    "Voltage normalised (0x00000000)",
    # readings within their limits, limits never set, k10temp's constant `high`, unwired inputs
    "Core 3:        +41.0°C  (high = +80.0°C, crit = +100.0°C)",
    "temp1:         +27.8°C  (crit = +105.0°C)",
    "Composite:     +38.9°C  (low  = -273.1°C, high = +81.8°C)",
    "temp4:         +55.0°C  (high =  +0.0°C, hyst =  +0.0°C)  sensor = thermistor",
    "Tdie:          +88.2°C  (high = +70.0°C)",
    "Tccd1:         +74.5°C  (high = +70.0°C)",
    "temp3:        +127.0°C  (high = +80.0°C, hyst = +75.0°C)",
    "temp6:        -128.0°C  (high = +80.0°C, hyst = +75.0°C)",
    "fan1:         1840 RPM  (min =  600 RPM)",
    "fan5:            0 RPM  (min =    0 RPM)",
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, twins=TWINS))


def test_a_reading_past_its_limit_names_the_limit_and_the_values() -> None:
    f = diagnose("Core 5:        +101.0°C  (high = +84.0°C, crit = +100.0°C)".encode())[0]
    assert (f.kind, f.severity, f.trust) == ("thermal", "error", "syslog")
    assert f.details["past"] == "crit" and f.details["reading"] == 101.0 and f.details["limit_high"] == 84.0


def test_an_alarm_line_stays_the_alarm_rules() -> None:
    # a line that ends in ALARM is read by the rules that read the chip's own flag, not by the comparison
    f = diagnose(b"fan2:            0 RPM  (min =  600 RPM)  ALARM")[0]
    assert f.details["rule"] == "rules13_sensors_alarm"
