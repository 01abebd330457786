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
    ("Jun  3 10:00:00 node7 sensors[4411]: Core 2: +99.0°C (high = +84.0°C, crit = +100.0°C)", "thermal", "warning"),
]
TWINS = [
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

globals().update(table_tests(other=OTHER_FAULTS, twins=TWINS))


def test_a_reading_past_its_limit_names_the_limit_and_the_values() -> None:
    f = diagnose("Core 5:        +101.0°C  (high = +84.0°C, crit = +100.0°C)".encode())[0]
    assert (f.kind, f.severity, f.trust) == ("thermal", "error", "syslog")
    assert f.details["past"] == "crit" and f.details["reading"] == 101.0 and f.details["limit_high"] == 84.0


def test_an_alarm_line_stays_the_alarm_rules() -> None:
    # a line that ends in ALARM is read by the rules that read the chip's own flag, not by the comparison
    f = diagnose(b"fan2:            0 RPM  (min =  600 RPM)  ALARM")[0]
    assert f.details["rule"] == "rules13_sensors_alarm"
