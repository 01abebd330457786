"""The scan's prefilter: which lines of a buffer can matter, found in one pass over the raw bytes.

A line is a candidate when it holds a rule's keyword (each literal's suffix from its rarest byte: `rules.
prefilter_key`), or a failure word (`subsystems.ERROR_WORDS`, any case) together with a subsystem's tag
(`subsystems.TAG_LITERALS`): a hardware failure no rule knows yet. No other line is ever decoded.

Engines, by the buffer's size: Hyperscan (PyPI `hyperscan`, x86_64; Vectorscan is its ARM port) from
`HYPERSCAN_MIN_BYTES`: one SIMD pass for every keyword and failure word, each candidate line reported once at its
end (`KEYWORD[^\\n]*\\n`), so Python sees only candidate lines; GNU `grep -F` (keywords) and `grep -F -i` (failure
words), one per CPU each, from `GREP_MIN_BYTES` (and above Hyperscan's size where it is missing); Python's
`bytes.find` for each literal below. All give the same lines (tests/test_diagnosis_engine.py forces each).
"""

from __future__ import annotations

import hashlib
import heapq
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from slurmtools.diagnosis.lines import MAX_JSON
from slurmtools.diagnosis.subsystems import ERROR_WORDS, TAG_LITERALS
from slurmtools.fsutil import ROOT_CACHE_DIR, check_trusted, private, read_safely, trusted_dir, write_atomic

#: Hyperscan on buffers of this size or more (its database is compiled once, 9-16 s for ~3,500 keywords, and then
#: loaded from the cache below in under a millisecond; below this size grep, which starts in milliseconds, is as
#: fast); `None` turns it off.
HYPERSCAN_MIN_BYTES: int | None = 16 << 20
#: GNU grep -F (a process per CPU) from this size; below, Python's bytes.find for each literal.
GREP_MIN_BYTES = 64 << 10

_TAGS = tuple(t.encode() for t in TAG_LITERALS)
_WORDS = tuple(w.encode() for w in ERROR_WORDS)
#: The subsystems' tags as one pattern over bytes (a kind-1 candidate is kept when this finds one in its line).
TAG_PATTERN = _TAG_RE = re.compile(b"|".join(re.escape(t) for t in sorted(_TAGS, key=len, reverse=True)))
_WORD_RE = re.compile(b"|".join(re.escape(w) for w in _WORDS), re.I)
#: How far into a line a subsystem's tag is looked for: no line is read further (lines.normalise decodes a JSON line
#: from at most MAX_JSON bytes and cuts every message to MAX_LINE), so a tag beyond could never be read; bounding the
#: search keeps a 4 MiB line of failure words (a job's progress output) at a 64 KiB search instead of seconds.
TAG_SPAN = MAX_JSON


def tagged(data: bytes, start: int, stop: int) -> bool:
    """Whether data[start:stop] (one line) holds a subsystem's tag within the part of it that is ever read."""
    return _TAG_RE.search(data, start, min(stop, start + TAG_SPAN)) is not None


class Prefilter:
    """The candidate lines of a buffer for one rule set's keywords."""

    def __init__(self, keywords: tuple[bytes, ...]) -> None:
        self.keywords = keywords
        self._literals = tuple(sorted(set(keywords)))
        self._keyword_re: re.Pattern[bytes] | None = None
        self._hs: Any = None

    def wanted(self, line: bytes) -> bool:
        """Whether LINE is a candidate (the rule every engine applies)."""
        if self._keyword_re is None:
            self._keyword_re = re.compile(b"|".join(re.escape(k) for k in self._literals))
        return self._keyword_re.search(line) is not None or (
            tagged(line, 0, len(line)) and _WORD_RE.search(line) is not None)

    def spans(self, data: bytes) -> Iterator[tuple[int, int, int]]:
        """(line number, start, stop) of every candidate line, in order: data[start:stop] is the line without
        its newline; line numbers are 1-based."""
        stops, kinds = self.candidates(data)
        number, counted_to = 1, 0
        rfind, count = data.rfind, data.count
        for stop, kind in zip(stops, kinds, strict=True):
            start = rfind(b"\n", 0, stop) + 1
            if kind and not tagged(data, start, stop):
                continue
            number += count(b"\n", counted_to, start)
            counted_to = start
            yield number, start, stop

    def candidates(self, data: bytes) -> tuple[list[int], list[int]]:
        """Where the candidate lines end (their newline's offset, or the buffer's end), in order, each with a kind:
        0 a candidate, 1 a candidate only if it holds a subsystem's tag (`TAG_PATTERN`: the caller checks, so that
        the fastest engine hands over two flat lists and no per-line object)."""
        if HYPERSCAN_MIN_BYTES is not None and len(data) >= HYPERSCAN_MIN_BYTES:
            found = self._hyperscan(data)
            if found is not None:
                return found
        if len(data) >= GREP_MIN_BYTES:
            grepped = _grep(data, [(self.keywords, False), (_WORDS, True)])
            if grepped is not None:
                keyword_rows, word_rows = grepped
                with_keyword = {number for number, _, _ in keyword_rows}
                with_tag = [row for row in word_rows if row[0] not in with_keyword and tagged(data, row[1], row[2])]
                stops = [stop for _, _, stop in heapq.merge(keyword_rows, with_tag)]
                return stops, [0] * len(stops)
        stops = [stop for _, stop in self._python(data)]
        return stops, [0] * len(stops)

    def _python(self, data: bytes) -> list[tuple[int, int]]:
        """Each literal found with bytes.find (C, linear, much faster than one regex alternation of hundreds of
        literals in Python's engine): the lines with a keyword, and the lines with a failure word (in a lowercased
        copy) that hold a subsystem's tag."""
        find, rfind = data.find, data.rfind
        starts = _line_starts(data, self._literals, find, rfind)
        low = data.lower()
        worded = _line_starts(low, _WORDS, low.find, low.rfind) - starts
        end = len(data)
        for start in worded:
            stop = find(b"\n", start)
            if tagged(data, start, end if stop < 0 else stop):
                starts.add(start)
        out = []
        for start in sorted(starts):
            stop = find(b"\n", start)
            out.append((start, end if stop < 0 else stop))
        return out

    def _hyperscan(self, data: bytes) -> tuple[list[int], list[int]] | None:
        db = self._database()
        if db is None:
            return None
        stops: list[int] = [-1]
        kinds: list[int] = [0]

        def on_match(ident: int, _from: int, to: int, _flags: int, offset: int) -> None:
            stop = offset + to - 1        # the line's newline
            if stop == stops[-1]:         # the line's other pattern, reported at the same newline
                if ident == 0:
                    kinds[-1] = 0
                return
            stops.append(stop)
            kinds.append(ident)

        db.scan(data, match_event_handler=on_match, context=0)
        tail = data.rfind(b"\n") + 1
        if tail < len(data):                  # a last line without its newline
            db.scan(data[tail:] + b"\n", match_event_handler=on_match, context=tail)
        del stops[0], kinds[0]
        return stops, kinds

    def _database(self) -> Any:
        if self._hs is None:
            self._hs = False
            try:
                import hyperscan  # type: ignore[import-not-found,unused-ignore]
            except ImportError:
                return None
            # each a line's rest to its newline: one report per candidate line, at its end
            # the keywords' alternation in pieces of at most HS_PATTERN_CHUNK bytes (Hyperscan refuses a pattern over
            # 16,000 characters), all with id 0; the words' with id 1
            expressions = [b"(?:" + chunk + rb")[^\n]*\n"
                           for chunk in _alternations([_hs_literal(k) for k in sorted(set(self.keywords))])]
            expressions.append(b"(?:" + b"|".join(_hs_literal(w) for w in _WORDS) + rb")[^\n]*\n")
            ids = [0] * (len(expressions) - 1) + [1]
            flags = [0] * (len(expressions) - 1) + [hyperscan.HS_FLAG_CASELESS]
            key = hashlib.sha256(repr((getattr(hyperscan, "__version__", ""), platform.machine(), expressions, ids,
                                       flags)).encode()).hexdigest()[:40]
            db = _cache_load(hyperscan, key)
            if db is None:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                try:
                    db.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
                except hyperscan.error:
                    return None
                _cache_store(hyperscan, key, db)
            self._hs = db
        return self._hs or None


#: Compiled Hyperscan databases kept between processes: compiling the rules' ~3,500 keywords takes 9-16 s on a 2-CPU
#: machine, loading one under a millisecond (docs/performance.md). Where: $SLURMTOOLS_CACHE_DIR (the directory the
#: hooks' configuration cache uses too), else root's /run/slurmtools (fsutil.ROOT_CACHE_DIR), else
#: $XDG_CACHE_HOME/slurmtools or ~/.cache/slurmtools. A database is read only from a directory and a file owned by this
#: user that no one else can write, and only if its SHA-256 (written before it) matches: a loader fed a crafted database
#: runs native code on it.
CACHE_ENV = "SLURMTOOLS_CACHE_DIR"
#: Databases kept per directory (each rule set's keywords make one, about 0.4 MB): the newest stay.
CACHE_KEEP = 4
_CACHE_MAGIC = b"slurmtools-hsdb-1\n"


def cache_dir() -> str:
    """The directory of compiled prefilter databases."""
    value = os.environ.get(CACHE_ENV)
    if value:
        return value
    if os.geteuid() == 0:
        return ROOT_CACHE_DIR
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "slurmtools")


def _cache_load(hyperscan: ModuleType, key: str) -> object:
    """The cached database for KEY, or None (no cache, no file, not ours, damaged, another platform's)."""
    where = cache_dir()
    try:
        check_trusted(where, owners={os.geteuid()}, what="directory")
        blob, st = read_safely(os.path.join(where, f"prefilter-{key}.hsdb"), 1 << 30, owners={os.geteuid()},
                               whole=True)
    except OSError:          # UntrustedPath too
        return None
    head = len(_CACHE_MAGIC) + 32
    if not private(st) or not blob.startswith(_CACHE_MAGIC) \
            or hashlib.sha256(blob[head:]).digest() != blob[len(_CACHE_MAGIC):head]:
        return None
    try:
        db = hyperscan.loadb(blob[head:], hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)   # compile() allocates one; a loaded database has none
        db.scan(b"\n")                       # an unusable database shows here, not in the scan
        return db
    except (hyperscan.error, TypeError, ValueError):   # another Hyperscan's or CPU's database: compiled again
        return None


def _cache_store(hyperscan: ModuleType, key: str, db: object) -> None:
    """Keep DB for the next process (best effort: a cache that cannot be written is no error)."""
    where = cache_dir()
    try:
        trusted_dir(where, 0o700, owners={os.geteuid()})
        payload = hyperscan.dumpb(db)
        write_atomic(os.path.join(where, f"prefilter-{key}.hsdb"),
                     _CACHE_MAGIC + hashlib.sha256(payload).digest() + payload, 0o600)
        kept = sorted((e for e in os.scandir(where) if e.name.startswith("prefilter-") and e.name.endswith(".hsdb")),
                      key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
        for old in kept[CACHE_KEEP:]:
            os.unlink(old.path)
    except (OSError, hyperscan.error):   # UntrustedPath too: the next process compiles again
        return


HS_PATTERN_CHUNK = 8000


def _alternations(patterns: list[bytes]) -> list[bytes]:
    """PATTERNS joined by "|" into pieces of at most HS_PATTERN_CHUNK bytes (a longer pattern is a piece alone)."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for pattern in patterns:
        if current and size + 1 + len(pattern) > HS_PATTERN_CHUNK:
            pieces.append(b"|".join(current))
            current, size = [], 0
        current.append(pattern)
        size += len(pattern) + 1
    if current:
        pieces.append(b"|".join(current))
    return pieces


def _hs_literal(literal: bytes) -> bytes:
    """LITERAL as a Hyperscan pattern: re.escape, with a non-ASCII byte (a UTF-8 keyword such as systemd's "×") written
    as \\xHH, which Hyperscan's parser takes where it refuses a backslash before a raw high byte."""
    return b"".join(b"\\x%02x" % byte if byte >= 0x80 else re.escape(bytes((byte,))) for byte in literal)


def _line_starts(data: bytes, literals: tuple[bytes, ...], find: Callable[..., int],
                 rfind: Callable[..., int]) -> set[int]:
    """The starts of the lines of DATA that hold one of LITERALS (none holds a newline)."""
    starts: set[int] = set()
    for literal in literals:
        pos = find(literal)
        while pos >= 0:
            starts.add(rfind(b"\n", 0, pos) + 1)
            nl = find(b"\n", pos + len(literal))
            if nl < 0:
                break
            pos = find(literal, nl + 1)
    return starts


def _grep(data: bytes, jobs: list[tuple[tuple[bytes, ...], bool]]) -> list[list[tuple[int, int, int]]] | None:
    """For each job (literals, ignore case): the lines holding one of its literals, through `grep -a -b -n -F`,
    every job's greps running at once, one per CPU (at most 4) on line-aligned parts of the buffer, each reading
    from and writing to an in-memory file: [[(number, start, stop)] per job], or None if grep is missing or fails
    (then Python does it)."""
    grep = shutil.which("grep") or ("/bin/grep" if os.access("/bin/grep", os.X_OK) else None)
    if grep is None or not hasattr(os, "memfd_create"):
        return None
    parts = max(1, min(os.cpu_count() or 1, 4, len(data) // max(GREP_MIN_BYTES, 1 << 20)))
    bounds = [0]
    for i in range(1, parts):
        cut = data.find(b"\n", len(data) * i // parts)
        if cut < 0 or cut + 1 <= bounds[-1]:
            break
        bounds.append(cut + 1)
    bounds.append(len(data))
    fds: list[int] = []
    procs: list[tuple[int, int, subprocess.Popen[bytes], int]] = []   # (job, part, grep, its output)
    try:
        view = memoryview(data)
        inputs = []
        for i in range(len(bounds) - 1):
            fd_in = os.memfd_create("slurmtools-scan-in")
            fds.append(fd_in)
            part, written = view[bounds[i]:bounds[i + 1]], 0
            while written < len(part):
                written += os.write(fd_in, part[written:])
            inputs.append(fd_in)
        for j, (literals, ignore_case) in enumerate(jobs):
            argv = [grep, "-a", "-b", "-n", "-F", *(["-i"] if ignore_case else []),
                    "-e", b"\n".join(literals).decode("utf-8", "replace")]
            for i, fd_in in enumerate(inputs):
                fd_out = os.memfd_create("slurmtools-scan-out")
                fd_read = os.open(f"/proc/self/fd/{fd_in}", os.O_RDONLY)   # its own offset: greps share the part
                fds += [fd_out, fd_read]
                procs.append((j, i, subprocess.Popen(argv, stdin=fd_read, stdout=fd_out, stderr=subprocess.DEVNULL,
                                                     env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}), fd_out))
        offsets = [0]      # the parts' first line numbers, counted while the greps run
        for i in range(len(bounds) - 2):
            offsets.append(offsets[-1] + data.count(b"\n", bounds[i], bounds[i + 1]))
        out: list[list[tuple[int, int, int]]] = [[] for _ in jobs]
        for j, i, proc, fd_out in procs:
            if proc.wait(timeout=120) not in (0, 1):
                return None
            size = os.lseek(fd_out, 0, os.SEEK_END)
            os.lseek(fd_out, 0, os.SEEK_SET)
            chunks, left = [], size
            while left > 0:
                chunk = os.read(fd_out, min(left, 1 << 26))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            for row in b"".join(chunks).split(b"\n"):
                number, _, rest = row.partition(b":")
                offset, sep, text = rest.partition(b":")
                if sep:
                    start = bounds[i] + int(offset)
                    out[j].append((offsets[i] + int(number), start, start + len(text)))
        return out
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    finally:
        for _, _, proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for fd in fds:
            os.close(fd)
