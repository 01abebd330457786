"""Which hardware subsystem a kernel message comes from, and the words of a failure: one table, as data.

The table is `data/subsystems.toml` (the one definition; nothing else lists tags or error words):

- `[[subsystem]]`: name, kind, category, trust, `tags` (regular expressions matched at the message's start),
  `literals` (fixed strings one of which every tag's match holds), examples;
- `[errors] words`: the failure vocabulary (whole words, any case).

Three users read it: the envelope parser (`lines.py`: a tag is where a message starts: `ANY_TAG`), the scan's
prefilter (`prefilter.py`: a line holding a tag's literal, `TAG_LITERALS`, and an error word, `ERROR_WORDS`, is a
candidate although no rule's literal is in it) and the subsystem fallback (`fallback.py`: a message that starts at
a subsystem's tag (`subsystem_of`) and holds an error word (`ERROR_PATTERN`) that no rule claims is a warning of
the subsystem's kind). The prefilter therefore passes exactly the lines the fallback can need (its tag literals
and its words are the fallback's own, as substrings), and a benign line (no error word) stays silent.

A message that begins with a task's name (`TASK_FIRST`: `NAME[PID]: segfault`, `NAME invoked oom-killer`, ...)
has no kernel subsystem, whatever the name spells: a job chooses its process names. Only a subsystem with trust
`syslog` (a daemon tag too long to be a task's name, which has at most 15 bytes: `nvidia-fabricmanager[PID]:`) is
read on such a line; anyone could write it with logger(1), so such findings have trust `syslog` and never drain.

A subsystem with trust `job` is a user-space library's tag (UCX, libibverbs, libfabric, PSM, Open MPI's fabric
components, NCCL's net plugins, ...): a job prints it after its own prefixes (a rank tag, a host:pid, a logger's
header), so its tags are searched anywhere in the message (`library_of`), never where a message starts (the envelope
parser does not know them); a message that starts at no other subsystem's tag is that library's when one of its tags
is in it, and a line its `quiet` pattern matches (the library's own info and debug levels) is never a finding.
Findings of such a subsystem have trust `job`: they never drain.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: A subsystem's trust: the kernel's own prefix, or a daemon's tag (read on task-first lines, never drains).
TRUSTS = ("kernel", "syslog", "job")


@dataclass(frozen=True)
class Subsystem:
    name: str
    kind: str | None          # None: a tag the envelope parser knows, never a fallback finding
    category: str
    trust: str
    tags: tuple[str, ...]
    literals: tuple[str, ...]
    examples: tuple[str, ...]
    pattern: re.Pattern[str]  # the tags as one pattern, matched at the message's start (trust job: searched)
    quiet: re.Pattern[str] | None = None   # trust job: the library's info/debug lines, never a fallback finding


def load(raw: dict[str, Any]) -> tuple[tuple[Subsystem, ...], tuple[str, ...]]:
    """(subsystems, error words) from the table's TOML, checked: every tag compiles, every word is lower case."""
    subs = []
    for entry in raw.get("subsystem", []):
        name = str(entry.get("name", "?"))
        tags = tuple(entry.get("tags", ()))
        literals = tuple(entry.get("literals", ()))
        if not tags or not literals or entry.get("trust", "kernel") not in TRUSTS:
            raise ValueError(f"subsystem {name!r}: needs tags and literals, trust one of {TRUSTS}")
        if any(t.startswith("^") for t in tags):
            raise ValueError(f"subsystem {name!r}: tags are matched at the message's start already (no ^)")
        pattern = re.compile("(?:" + "|".join(tags) + ")")
        quiet = entry.get("quiet")
        if quiet is not None and entry.get("trust") != "job":
            raise ValueError(f"subsystem {name!r}: quiet is for a library's tags (trust job)")
        subs.append(Subsystem(name, entry.get("kind"), entry.get("category", "unknown"), entry.get("trust", "kernel"),
                              tags, literals, tuple(entry.get("examples", ())), pattern,
                              re.compile(quiet) if quiet else None))
    words = tuple(raw.get("errors", {}).get("words", ()))
    if not words or not all(re.fullmatch(r"[a-z][a-z' ]*[a-z]", w) for w in words):
        raise ValueError("[errors] words: a non-empty list of lower-case words (letters, blanks, apostrophes)")
    return tuple(subs), words


def _packaged() -> dict[str, Any]:
    text = resources.files("slurmtools").joinpath("data/subsystems.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


SUBSYSTEMS, WORDS = load(_packaged())
#: The subsystems a fallback finding can come from (those with a kind).
FALLBACK = tuple(s for s in SUBSYSTEMS if s.kind)

#: The subsystems whose tags stand where a message starts (kernel and daemon tags), and the libraries whose tags a
#: job prints anywhere in its line (trust job: `library_of`).
ANCHORED = tuple(s for s in SUBSYSTEMS if s.trust != "job")
LIBRARIES = tuple(s for s in SUBSYSTEMS if s.trust == "job")
#: Every message-start tag as one pattern source without groups (the envelope parser embeds it), and as one pattern
#: with each subsystem a named group `g<index>` (`subsystem_of`).
TAG_SOURCE = "|".join(s.pattern.pattern for s in ANCHORED)
ANY_TAG = re.compile("|".join(f"(?P<g{i}>{s.pattern.pattern})" for i, s in enumerate(ANCHORED)))
#: The failure vocabulary as the fallback matches it: whole words, any case (linear: an alternation of literals).
ERROR_PATTERN = r"(?i)\b(?:" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")\b"
_ERROR = re.compile(ERROR_PATTERN)
#: What the prefilter looks for without case: the shortest words (a word holding another is found by it).
ERROR_WORDS: tuple[str, ...] = tuple(sorted(w for w in WORDS if not any(o != w and o in w for o in WORDS)))
#: What the prefilter looks for as a subsystem's tag: the literals of the subsystems the fallback reads.
TAG_LITERALS: tuple[str, ...] = tuple(sorted({lit for s in FALLBACK for lit in s.literals}))

#: Messages that the kernel begins with a task's name (at most 15 bytes, anything a job chooses with prctl):
#: `NAME[PID]: segfault at`, `traps: NAME[PID] general protection`, `NAME invoked oom-killer`, `NAME (PID):
#: drop_caches`, `NAME: page allocation failure`, and the `CPU: N PID: N Comm: NAME` dump header. Only rules
#: that say so (`anchor = "task"`, or a syslog or job rule) read such a line, and none of them drains.
TASK_FIRST = re.compile(
    r"^(?:traps: |process '|audit: )"
    r"|^.{1,15}?(?:\[\d+\](?::| )| \(\d+\): | invoked oom-killer|: page allocation failure|: Corrupted page table"
    r"|: potentially unexpected fatal signal)"
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: "
    r"|^[\w./-]+\[\d+\]: ", re.S)   # and a userspace program's syslog line, `TAG[PID]: ` (logger -t TAG ...)


def subsystem_of(message: str) -> Subsystem | None:
    """The hardware subsystem MESSAGE (a message after its envelope) starts at, or None: no known tag at its start,
    or the message begins with a task's name and no daemon's (trust `syslog`) tag; failing those, the library whose
    tag the message holds anywhere (`library_of`)."""
    if TASK_FIRST.match(message):
        found = next((s for s in ANCHORED if s.trust == "syslog" and s.pattern.match(message)), None)
    else:
        m = ANY_TAG.match(message)
        found = ANCHORED[int(m.lastgroup[1:])] if m and m.lastgroup else None
    return found or library_of(message)


def library_of(message: str) -> Subsystem | None:
    """The user-space library (a subsystem with trust `job`) one of whose tags MESSAGE holds anywhere, or None.
    MESSAGE is bounded (lines are cut to `lines.MAX_LINE`) and each tag is an alternation of words: linear."""
    return next((s for s in LIBRARIES if s.pattern.search(message)), None)


def error_word(text: str) -> str | None:
    """The first word of a failure in TEXT (`[errors] words`, whole words, any case), or None."""
    m = _ERROR.search(text)
    return m.group(0) if m else None


#: A failure word that a library's line denies rather than reports (`no error`, `without failure`, `non-fatal`,
#: `error: none`, `error 0 (Success)`, a compiler's `-Wno-error` in a build log): a library's status line, not a
#: failure. "down" as a verb's particle (`slow down`, `shutting down` at exit, `scaling down`) and a timeout that is a
#: setting (`TIMEOUT(ms): 600000`, `timeout=1800`, `transition timeout set to 60 seconds`) report nothing either.
_DENIED = re.compile(r"(?i)(?:\b(?:no|0|zero|without|not an?)\s+|\b(?:non|W?no)-"
                     r"|\b(?:slow(?:s|ing|ed)?|shutting|winding|counting|cooling|scaling|breaking|stepping|backing)\s+)$")
_NOTHING = re.compile(r"(?i)\W{0,3}(?:none|0|ok|success|no error)\b")
_SETTING = re.compile(r"(?i)\s*(?:\(\w{1,8}\))?\s*(?:[:=]|(?:is\s+)?set\s+to)\s*\d")
#: A monitor's state field, not the message's word (public-log sweep 4): Nagios and Icinga write an alert as
#: `SERVICE ALERT: host;service;STATE;HARD|SOFT;attempt;output` (`HOST ALERT: host;STATE;...`, `CURRENT SERVICE
#: STATE: ...`), so `;CRITICAL;HARD;3;` or `;DOWN;SOFT;1;` is the check's verdict on whatever the output says; the
#: output's own words are still read.
_MONITOR_STATE = re.compile(r";(?:HARD|SOFT);\d{1,4};")


def _is_setting(text: str, m: re.Match[str]) -> bool:
    """Whether the failure word M is a timeout that TEXT sets (`timeout=1800`, `timeout set to 60 seconds`)."""
    return m.group(0).lower() == "timeout" and _SETTING.match(text, m.end()) is not None


def only_settings(text: str) -> bool:
    """Whether every failure word in TEXT is a timeout it sets (`alua: transition timeout set to 60 seconds`)."""
    words = list(_ERROR.finditer(text))
    return bool(words) and all(_is_setting(text, m) for m in words)


def reported_error_word(text: str) -> str | None:
    """The first failure word in TEXT that the text does not deny (`no error`, `error: none`), or None: what the
    library fallback asks of a job's line, whose libraries print their status words on healthy paths too."""
    for m in _ERROR.finditer(text):
        if _DENIED.search(text[max(0, m.start() - 12):m.start()]) or _NOTHING.match(text, m.end()):
            continue
        if _is_setting(text, m):
            continue
        if text[m.start() - 1:m.start()] == ";" and _MONITOR_STATE.match(text, m.end()):
            continue
        return m.group(0)
    return None
