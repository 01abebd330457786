"""Reading Prometheus: range queries over its HTTP API (`/api/v1/query_range`), split into chunks of time so
that a week of a large cluster never asks for one huge response, merged back per series.

Only the standard library (urllib, json); numpy arrays out. Errors are `PromError` with the URL and what the
server said, never a traceback.

Whoever answers at the configured address is not trusted: an answer is read up to `max_bytes` (more is refused),
a query may give at most `max_series` label sets (each costs a row of the grid) and a series at most one sample
per point of its chunk; a series with no sample costs nothing. A body that is not what Prometheus writes (a
string or a list where an object belongs, nesting too deep for the parser) is one `PromError` line."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Prometheus refuses a range query of more than 11,000 points per series.
MAX_POINTS = 11_000
#: Defaults of detect.max_answer_bytes and detect.max_series (docs/detection.md).
MAX_BYTES = 256 << 20
MAX_SERIES = 10_000


class PromError(RuntimeError):
    """Prometheus could not be read (unreachable, bad query, bad answer)."""


@dataclass
class Series:
    labels: dict[str, str]
    values: np.ndarray            # on the grid: NaN where Prometheus had no sample

    def put_segment(self, seg: bytes, first: int, last: int, grid: Grid, what: str = "Prometheus") -> None:
        """SEG: the inside of one series' "values" array (`[t,"v"],[t,"v"]...`) for grid points FIRST..LAST.
        A sample at every point (the usual case) needs no timestamps: the quoted values are read as they come.
        More samples than points: PromError (WHAT names the query)."""
        parts = seg.split(b'"')
        vals = parts[1::2]
        _samples(len(vals), last - first + 1, what)
        if len(vals) == last - first + 1:
            try:
                self.values[first:last + 1] = np.array(vals, dtype=float)
                return
            except ValueError:
                pass
        try:
            pairs = json.loads(b"[" + seg + b"]")
        except (ValueError, RecursionError):
            return
        _put(self.values, pairs, grid)


class _Out(dict[tuple[tuple[str, str], ...], Series]):
    """The series of one query by label set, at most MAX_SERIES of them."""

    def __init__(self, max_series: int, what: str) -> None:
        super().__init__()
        self.max_series = max_series
        self.what = what


def _series(out: _Out, labels: dict[str, str], grid: Grid) -> Series:
    key = tuple(sorted(labels.items()))
    s = out.get(key)
    if s is None:
        if len(out) >= out.max_series:
            raise PromError(f"{out.what} gave more than {out.max_series} series (detect.max_series): refused")
        s = out[key] = Series(labels, np.full(grid.n, np.nan))
    return s


def _samples(n: int, points: int, what: str) -> None:
    if n > points:
        raise PromError(f"{what} gave a series with {n} samples for {points} points: refused")


_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['


def _matrix(raw: bytes) -> list[tuple[dict[str, str], bytes]] | None:
    """A range query's answer cut into (labels, values segment) per series without building a Python object per
    sample (json.loads spends most of a large scan doing that: docs/performance.md). None when the answer is
    not laid out as Prometheus writes it (`{"metric":{...},"values":[...]}` per series): the caller then
    parses it as JSON. A JSON string cannot hold an unescaped quote, so `,"values":[` is only ever the key."""
    if not raw.startswith(_HEAD):
        return None
    out: list[tuple[dict[str, str], bytes]] = []
    pos = len(_HEAD)
    while raw[pos:pos + 1] != b"]":
        if not raw.startswith(b'{"metric":', pos):
            return None
        v = raw.find(b',"values":[', pos)
        if v < 0:
            return None
        try:
            labels = {str(k): str(x) for k, x in json.loads(raw[pos + 10:v]).items()}
        except (ValueError, AttributeError, RecursionError):
            return None
        a = v + 11
        end = a if raw[a:a + 1] == b"]" else raw.find(b"]]", a) + 1
        if end <= 0 or raw[end:end + 2] not in (b"]}",):
            return None
        out.append((labels, raw[a:end]))
        pos = end + 2
        if raw[pos:pos + 1] == b",":
            pos += 1
    return out


def _data(raw: bytes, url: str, path: str) -> Any:
    try:
        body = json.loads(raw)
    except ValueError:
        raise PromError(f"{url}: the answer to {path} is not JSON") from None
    except RecursionError:
        raise PromError(f"{url}: the answer to {path} is nested too deep") from None
    if not isinstance(body, dict) or body.get("status") != "success":
        said = body.get("error") if isinstance(body, dict) else body
        raise PromError(f"{url}: {path} failed: {str(said)[:200]}")
    return body.get("data")


@dataclass
class Grid:
    start: float                  # epoch seconds, first sample
    step: float
    n: int

    @property
    def times(self) -> np.ndarray:
        return self.start + self.step * np.arange(self.n)

    def index(self, t: float) -> int:
        return round((t - self.start) / self.step)


@dataclass
class Client:
    url: str
    timeout: float = 30.0
    chunk_s: float = 6 * 3600.0
    max_bytes: int = MAX_BYTES
    max_series: int = MAX_SERIES
    queries: int = field(default=0, init=False)

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        return _data(self._fetch(path, params), self.url, path)

    def _fetch(self, path: str, params: dict[str, Any]) -> bytes:
        full = f"{self.url.rstrip('/')}{path}?{urllib.parse.urlencode(params)}"
        self.queries += 1
        try:
            with urllib.request.urlopen(full, timeout=self.timeout) as resp:
                raw: bytes = resp.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read(65536)).get("error", "")
            except (ValueError, OSError, AttributeError, RecursionError):
                detail = ""
            raise PromError(f"{self.url}: HTTP {exc.code} for {params.get('query', path)!r}: "
                            f"{str(detail)[:200]}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise PromError(f"{self.url}: cannot reach Prometheus: {getattr(exc, 'reason', exc)}") from None
        if len(raw) > self.max_bytes:
            raise PromError(f"{self.url}: the answer to {params.get('query', path)!r} is larger than "
                            f"{self.max_bytes} bytes (detect.max_answer_bytes): refused")
        return raw

    def range(self, query: str, grid: Grid) -> list[Series]:
        """QUERY evaluated at every point of GRID, in chunks of `chunk_s`. One Series per label set."""
        per_chunk = max(1, min(MAX_POINTS - 1, int(self.chunk_s // grid.step)))
        what = f"{self.url}: {query[:200]!r}"
        out = _Out(self.max_series, what)
        for first in range(0, grid.n, per_chunk):
            last = min(grid.n, first + per_chunk) - 1
            raw = self._fetch("/api/v1/query_range", {
                "query": query, "start": f"{grid.start + first * grid.step:.3f}",
                "end": f"{grid.start + last * grid.step:.3f}", "step": f"{grid.step:g}"})
            fast = _matrix(raw)
            if fast is not None:
                for labels, seg in fast:
                    if seg:                     # a series with no sample costs nothing
                        _series(out, labels, grid).put_segment(seg, first, last, grid, what)
                continue
            data = _data(raw, self.url, "/api/v1/query_range")
            if not isinstance(data, dict) or data.get("resultType") != "matrix":
                raise PromError(f"{what} did not give a range vector")
            result = data.get("result") or []
            if not isinstance(result, list):
                raise PromError(f"{what}: the result is not a list")
            for item in result:
                metric = (item.get("metric") or {}) if isinstance(item, dict) else None
                values = (item.get("values") or []) if isinstance(item, dict) else None
                if not isinstance(metric, dict) or not isinstance(values, list):
                    raise PromError(f"{what}: a series is not {{\"metric\": {{...}}, \"values\": [...]}}")
                if values:
                    _samples(len(values), last - first + 1, what)
                    labels = {str(k): str(v) for k, v in metric.items()}
                    _put(_series(out, labels, grid).values, values, grid)
        for s in out.values():
            s.values[~np.isfinite(s.values)] = np.nan
        return list(out.values())

    def names(self, selector: str, start: float, end: float) -> list[str]:
        """Metric names matching SELECTOR (the generic mode's series list)."""
        data = self._get("/api/v1/series", {"match[]": selector, "start": f"{start:.3f}", "end": f"{end:.3f}"})
        if not isinstance(data or [], list) or not all(isinstance(d, dict) for d in data or []):
            raise PromError(f"{self.url}: the series of {selector!r} are not a list of label sets")
        names = sorted({str(d.get("__name__")) for d in data or [] if d.get("__name__")})
        if len(names) > self.max_series:
            raise PromError(f"{self.url}: {selector!r} matched more than {self.max_series} metrics "
                            "(detect.max_series): refused")
        return names


def _put(into: np.ndarray, pairs: list[Any], grid: Grid) -> None:
    """[[t, "value"], ...] (Prometheus's matrix values) onto the grid, vectorised; a malformed pair is skipped."""
    if not pairs:
        return
    try:
        ts = np.fromiter((p[0] for p in pairs), dtype=float, count=len(pairs))
        vs = np.array([p[1] for p in pairs], dtype=float)
    except (TypeError, ValueError, IndexError, KeyError):
        ok = []
        for p in pairs:
            try:
                ok.append((float(p[0]), float(p[1])))
            except (TypeError, ValueError, IndexError, KeyError):
                continue
        if not ok:
            return
        ts, vs = np.array(ok, dtype=float).T
    idx = np.rint((ts - grid.start) / grid.step).astype(np.int64)
    inside = (idx >= 0) & (idx < grid.n)
    into[idx[inside]] = vs[inside]


def grid_for(start: float, end: float, step: float) -> Grid:
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        raise PromError(f"empty time range: start {start} is not before end {end}")
    if step <= 0:
        raise PromError(f"step must be positive, got {step}")
    return Grid(start, step, int((end - start) // step) + 1)
