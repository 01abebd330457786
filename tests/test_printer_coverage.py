"""The printers' vocabularies (bench/printer_coverage.py): lines made from public programs' format strings.
Every fault row is found with its kind and every benign twin stays below warning, file by file, so a rule change
that loses a printer's family fails here with the line it lost."""

from __future__ import annotations

import pytest

from bench.field_corpus import load
from bench.printer_coverage import PRINTERS, score

FILES = sorted(PRINTERS.glob("*.tsv"))


def test_there_are_printer_files() -> None:
    assert FILES, f"no printer files in {PRINTERS}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_printer_row_is_read_right(path) -> None:
    rows = [r for r in load([PRINTERS], real=None) if r.file == path.name]
    assert rows, path
    assert all(r.source.strip() and r.source != "-" for r in rows), "every row names its printer"
    result = score(rows)
    assert result["misses"] == [], result["misses"][:10]
    assert result["alarms"] == [], result["alarms"][:10]
