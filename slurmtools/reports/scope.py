"""What a report covers (cluster, window, partition, fleet size) and the SQL pieces every section shares:
epoch seconds from a timestamp column on each dialect, and order statistics computed by the database."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.sql.elements import TextClause

from slurmtools.ledger.models import INFRA_CATEGORIES, UTCDateTime

#: Finding categories that make an incident an infrastructure failure (the ledger's own list: the attempts it marks
#: as interrupted use the same).
INFRA = INFRA_CATEGORIES


@dataclass
class Scope:
    cluster: str
    since: datetime
    until: datetime
    partition: str | None = None
    #: Nodes in the fleet (0: the nodes the ledger knows for this cluster).
    nodes: int = 0
    gpus_per_node: float = 8
    #: Out-of-service periods on one node closer than this many seconds are one incident.
    merge_gap_s: float = 600.0
    #: An incident's cause: the first infrastructure finding on its node this long before it opened.
    lookback_s: float = 3600.0
    #: A new job by the same user with the same name within this long after a failure is a manual retry.
    manual_window_s: float = 21600.0
    multi_node_min: int = 2
    projected_gpus: tuple[int, ...] = (8, 64, 512, 1024, 16384)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hours(self) -> float:
        return max((self.until - self.since).total_seconds(), 0.0) / 3600.0

    def params(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "t0": self.since, "t1": self.until,
                "e0": self.since.timestamp(), "e1": self.until.timestamp(),
                "gap": self.merge_gap_s, "lookback": self.lookback_s, "partition": self.partition,
                "gpn": self.gpus_per_node, "manual": self.manual_window_s, "multi": self.multi_node_min}


class Sql:
    """Dialect snippets for text SQL: the only place SQLite and PostgreSQL differ in the reports."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.name = conn.dialect.name

    def epoch(self, col: str) -> str:
        """Seconds since 1970 (UTC) of a timestamp column, as a float."""
        if self.name == "sqlite":   # whole seconds, plus the stored microseconds (julianday() would round them)
            return f"(CAST(strftime('%s', {col}) AS REAL) + CAST(substr({col}, 20) AS REAL))"
        return f"date_part('epoch', {col})"   # float8 directly: EXTRACT's numeric costs ~1 us a row

    def floor(self, expr: str) -> str:
        """The integer part of a non-negative number (PostgreSQL's integer cast rounds; SQLite's truncates)."""
        if self.name == "sqlite":
            return f"CAST({expr} AS INTEGER)"
        return f"CAST(FLOOR({expr}) AS INTEGER)"

    def shift(self, col: str, seconds: str) -> str:
        """A timestamp column moved by SECONDS (a bound parameter name or a number), comparable to the column."""
        if self.name == "sqlite":   # the stored text's shape (microseconds), so that text comparison is exact
            return f"(strftime('%Y-%m-%d %H:%M:%f', {col}, ({seconds}) || ' seconds') || '000')"
        return f"({col} + make_interval(secs => {seconds}))"

    def bytewise(self, col: str) -> str:
        """COL compared byte by byte, for grouping and ordering text (PostgreSQL's locale-aware comparison costs
        several times more in big sorts; SQLite's default is bytewise already). Groups are the same either way."""
        return f'{col} COLLATE "C"' if self.name == "postgresql" else col

    @contextmanager
    def probing(self, table: str, rows: int) -> Iterator[None]:
        """On PostgreSQL, plan the statements inside as index probes (no hash or merge join) when ROWS outer rows
        are fewer than a sixteenth of TABLE's (its statistics' row count): a probe costs about what scanning and
        hashing 10-16 of TABLE's rows costs (measured on the 1M-attempt bench), and the planner, costing random
        reads at four sequential ones, prefers a full scan long after the probes are cheaper on a cached table.
        Elsewhere, or with more rows or no statistics, the planner chooses."""
        probe = False
        if self.name == "postgresql":
            est = self.one("SELECT reltuples AS n FROM pg_class WHERE oid = to_regclass(:t)", {"t": table})
            probe = float(est.get("n") or -1) > 16 * rows
        if not probe:
            yield
            return
        old = self.one("SELECT current_setting('enable_hashjoin') AS h, current_setting('enable_mergejoin') AS m", {})
        self.conn.exec_driver_sql("SET LOCAL enable_hashjoin = off")
        self.conn.exec_driver_sql("SET LOCAL enable_mergejoin = off")
        try:
            yield
        finally:
            self.run("SELECT set_config('enable_hashjoin', :h, true), set_config('enable_mergejoin', :m, true)", old)

    def query(self, sql: str) -> TextClause:
        stmt = text(sql)
        times = [p for p in ("t0", "t1") if re.search(rf":{p}\b", sql)]
        if times:
            stmt = stmt.bindparams(*(bindparam(p, type_=UTCDateTime()) for p in times))
        return stmt

    def rows(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        stmt = self.query(sql)
        used = {k: v for k, v in params.items() if re.search(rf":{k}\b", sql)}
        return [dict(r) for r in self.conn.execute(stmt, used).mappings()]

    def run(self, sql: str, params: dict[str, Any]) -> None:
        used = {k: v for k, v in params.items() if re.search(rf":{k}\b", sql)}
        self.conn.execute(self.query(sql), used)

    def temp(self, table: str, select: str, params: dict[str, Any], analyze: bool | tuple[str, ...] = False) -> None:
        """(Re)create the temporary table TABLE from SELECT. ANALYZE: on PostgreSQL, gather its statistics (a
        temporary table has none, and the queries that read it are planned for a guess): worth it for a table
        that several queries join or group, a loss for one read once (measured on the 1M-row bench). A tuple of
        columns: only theirs (and the row count), far cheaper than a text column's."""
        self.conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        self.run(f"CREATE TEMPORARY TABLE {table} AS {select}", params)
        if analyze and self.name == "postgresql":
            cols = f" ({', '.join(analyze)})" if isinstance(analyze, tuple) else ""
            self.conn.exec_driver_sql(f"ANALYZE {table}{cols}")

    def one(self, sql: str, params: dict[str, Any]) -> dict[str, Any]:
        rows = self.rows(sql, params)
        return rows[0] if rows else {}

    def stats(self, values_sql: str, params: dict[str, Any]) -> dict[str, Any]:
        """n, mean, median, p25, p75, p90, min and max of the column `v` of VALUES_SQL, by the database.

        Median: the middle value (the mean of the two middle ones for an even n). Quartiles and p90:
        nearest rank (the smallest value with at least that share of values at or below it). PostgreSQL has both
        as ordered-set aggregates (percentile_cont(0.5), percentile_disc), one pass instead of two window passes."""
        if self.name == "postgresql":
            row = self.one(f"""
                SELECT COUNT(v) AS n, AVG(v) AS mean, MIN(v) AS min, MAX(v) AS max,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS median,
                       percentile_disc(ARRAY[0.25, 0.75, 0.9]) WITHIN GROUP (ORDER BY v) AS q
                FROM ({values_sql}) t WHERE v IS NOT NULL""", params)
            q = row.pop("q", None) or [None, None, None]
            row.update(p25=q[0], p75=q[1], p90=q[2])
        else:
            row = self._stats_windows(values_sql, params)
        n = int(row.get("n") or 0)
        out: dict[str, Any] = {"n": n}
        for key in ("mean", "median", "p25", "p75", "p90", "min", "max"):
            out[key] = None if n == 0 or row.get(key) is None else float(row[key])
        return out

    def stats_many(self, values: dict[str, str], from_sql: str, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """`stats` of several expressions over the same rows (VALUES: name -> expression over FROM_SQL, a `FROM
        ... WHERE ...` clause), each over the rows where it is not NULL. PostgreSQL: one pass (one scan, one sort
        per expression); SQLite: one `stats` each."""
        if self.name != "postgresql":
            return {k: self.stats(f"SELECT {expr} AS v {from_sql}", params) for k, expr in values.items()}
        cols = [f"""COUNT(v{i}) AS n{i}, AVG(v{i}) AS mean{i}, MIN(v{i}) AS min{i}, MAX(v{i}) AS max{i},
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY v{i}) AS median{i},
                    percentile_disc(ARRAY[0.25, 0.75, 0.9]) WITHIN GROUP (ORDER BY v{i}) AS q{i}"""
                for i in range(len(values))]
        each = ", ".join(f"{expr} AS v{i}" for i, expr in enumerate(values.values()))
        row = self.one(f"SELECT {', '.join(cols)} FROM (SELECT {each} {from_sql}) t", params)
        out: dict[str, dict[str, Any]] = {}
        for i, name in enumerate(values):
            n = int(row.get(f"n{i}") or 0)
            q = row.get(f"q{i}") or [None, None, None]
            got = {"mean": row.get(f"mean{i}"), "median": row.get(f"median{i}"), "p25": q[0], "p75": q[1],
                   "p90": q[2], "min": row.get(f"min{i}"), "max": row.get(f"max{i}")}
            out[name] = {"n": n, **{k: None if n == 0 or v is None else float(v) for k, v in got.items()}}
        return out

    def _stats_windows(self, values_sql: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.one(f"""
            WITH v AS ({values_sql}),
                 r AS (SELECT v, ROW_NUMBER() OVER (ORDER BY v) AS rn, COUNT(*) OVER () AS n FROM v WHERE v IS NOT NULL)
            SELECT MAX(n) AS n, AVG(v) AS mean, MIN(v) AS min, MAX(v) AS max,
                   AVG(CASE WHEN rn = (n + 1) / 2 OR rn = (n + 2) / 2 THEN v END) AS median,
                   MIN(CASE WHEN rn * 4 >= n THEN v END) AS p25,
                   MIN(CASE WHEN rn * 4 >= n * 3 THEN v END) AS p75,
                   MIN(CASE WHEN rn * 10 >= n * 9 THEN v END) AS p90
            FROM r""", params)


def ratio(num: float | None, den: float | None) -> float | None:
    """NUM / DEN, or None when there is nothing to divide by (a report says so; it never divides by zero)."""
    if num is None or not den:
        return None
    return num / den


def column_time(value: datetime | str) -> datetime:
    """A timestamp column read by a text query: PostgreSQL gives a datetime, SQLite its stored UTC text."""
    if isinstance(value, str):
        from slurmtools.timeutil import aware

        return aware(value.replace(" ", "T", 1))
    return value


def iso(value: datetime | float | str | None) -> str | None:
    """UTC ISO 8601 with a Z, to the second, from a datetime, epoch seconds or SQLite's stored text."""
    if value is None:
        return None
    if isinstance(value, str):
        value = column_time(value)
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(round(value), UTC)
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
