"""Text that a user or a remote service wrote, made harmless where it is stored and where it is shown.

Job output, Prometheus labels, comments and reasons reach terminals (`ledger events`, `status`, `why`,
`detect scan`, `exclude list`), spreadsheets (CSV) and JSON readers. This module is the one place that
neutralises them; every printer and the ledger's writer use it, none has its own copy:

* `clean`: C0 and C1 control characters (ESC, CSI, OSC, BEL, CR, DEL, ...), the bidirectional overrides and
  isolates (Trojan Source) and the Unicode line/paragraph separators are replaced by a visible escape
  (`\\x1b`, `\\u202e`), so a terminal never acts on them and a reader sees that they were there. Newlines
  and tabs are kept only where asked (our own multi-line output), never inside a field.
* `cell`: a CSV cell that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) is
  quoted with a leading `'` (OWASP's advice); numbers stay numbers.
* `finite` / `dumps`: JSON never carries NaN or Infinity (not JSON: most parsers refuse it); a non-finite
  number is written as null, and `json.dumps(..., allow_nan=False)` guards the rest.

`str.translate` with a precomputed table: linear in the text, no regex."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

#: Bidirectional embeddings, overrides, isolates and marks, and the Unicode line/paragraph separators.
FORMAT_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)
CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *FORMAT_CONTROLS)
#: What a spreadsheet reads as the start of a formula (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


_TABLE = {cp: _escape(cp) for cp in CONTROLS}
_TABLE_LINES = {cp: v for cp, v in _TABLE.items() if cp not in (0x0A, 0x09)}


def clean(text: object, *, lines: bool = False) -> str:
    """TEXT (anything: str() of it) with every control character replaced by a visible escape. LINES keeps
    newlines and tabs (for a whole block of our own output); a field is cleaned without it. Idempotent."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable():      # the usual case, checked in C: nothing to replace
        return s
    return s.translate(_TABLE_LINES if lines else _TABLE)


def clean_any(value: object, *, lines: bool = True, depth: int = 0) -> Any:
    """VALUE with every string in it (keys too) cleaned, through dicts, lists and tuples (a JSON column)."""
    if isinstance(value, str):
        return clean(value, lines=lines)
    if depth > 64:      # deeper than anything we write: kept as text, cleaned
        return clean(json.dumps(value, default=str), lines=lines)
    if isinstance(value, Mapping):
        return {clean(k, lines=False) if isinstance(k, str) else k: clean_any(v, lines=lines, depth=depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_any(v, lines=lines, depth=depth + 1) for v in value]
    return value


def cell(value: object) -> Any:
    """One CSV cell: a number as it is; text cleaned, and quoted with `'` when a spreadsheet would run it."""
    if value is None or isinstance(value, bool):
        return "" if value is None else value
    if isinstance(value, (int, float)):
        return value if not isinstance(value, float) or math.isfinite(value) else ""
    text = str(value)
    if text.startswith(FORMULA_START):
        text = "'" + text
    return clean(text)


def finite(value: object, depth: int = 0) -> Any:
    """VALUE with every non-finite float (NaN, +-Infinity, numpy's too) replaced by None, through dicts, lists
    and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int)) or value is None:
        return value
    if depth > 200:
        return value
    if isinstance(value, Mapping):
        return {k: finite(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, depth + 1) for v in value]
    try:                      # numpy scalars and anything else that is a real number
        f = float(value)  # type: ignore[arg-type]  # a TypeError says it is not a number
    except (TypeError, ValueError):
        return value
    if not math.isfinite(f):
        return None
    return value


def dumps(value: object, **kwargs: Any) -> str:  # Any: json.dumps's own keywords, passed on
    """JSON text for VALUE: non-finite numbers as null, never NaN or Infinity; unknown types as str()."""
    kwargs.setdefault("default", str)
    return json.dumps(finite(value), allow_nan=False, **kwargs)
