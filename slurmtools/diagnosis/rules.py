"""The diagnosis rules as data: the packaged `data/diagnosis_rules.toml` plus a site's `[[diagnosis.rules]]`.

One rule per message family: the literals a line must contain (the prefilter's keywords are derived from them,
never kept by hand), a regular expression in RE2 syntax searched in the message (after the envelope: stamps,
host, tags), run by google-re2 in time linear in the line (no lookaround, no backreferences), the verdict
(kind, category, action, severity) or a named verdict function, and optional grouping (`group`, `role`,
`within`: header + detail lines make one event) and rate (`rate = "10/1h"`: corrected errors become a
warning above that many events on one device in the job's window). Every rule carries `examples`: lines it
must match, each holding one of its literals, checked whenever the rules are loaded, so a bad site rule is
refused by `slurmtools config check` with its name and the reason.

A site rule whose name is a packaged rule's changes only the fields it gives (`enabled = false` turns it
off); a new name is tried before every packaged rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from slurmtools.diagnosis.findings import ACTIONS, CATEGORIES, NODE_ACTIONS, SEVERITIES

if TYPE_CHECKING:
    from slurmtools.diagnosis.prefilter import Prefilter

#: `trust` of a rule: kernel (the kernel's own message, anchored at its prefix), syslog (a daemon's line,
#: forgeable with logger(1)), job (what a job prints). Findings of the last two never drain, whatever their action.
TRUSTS = ("kernel", "syslog", "job")
ROLES = ("header", "detail")
#: `anchor = "task"`: the message begins with a task's name (`NAME invoked oom-killer`), which a job chooses.
ANCHORS = ("prefix", "task")
HANDLERS = ("xid", "sxid", "aer", "aer_detail", "mce", "link_down", "link_up", "module", "nfs", "boot", "ignore",
            "ib_counters", "port_state", "dcgm_health", "unrecognised", "pcie_bandwidth", "nvrm_print",
            "sensor_reading")
FIELDS = {"name": str, "kind": str, "category": str, "action": str, "severity": str, "literals": list,
          "pattern": str, "handler": str, "trust": str, "anchor": str, "group": str, "role": str, "within": int,
          "retype": str, "once": bool, "holds_verdict": bool, "rate": str, "xid": int, "examples": list,
          "enabled": bool, "doc": str, "prefilter": str}
REQUIRED = ("name", "kind", "literals", "pattern", "examples")
#: The handler of the subsystem fallback's rules (no literals: `_vocabulary`).
FALLBACK_HANDLER = "unrecognised"
#: `prefilter = "subsystem"`: the rule reads messages that begin at a subsystem's tag (data/subsystems.toml); those
#: of its literals that are an error word of that table (any case) are checked in the message but are not the
#: prefilter's keywords: the prefilter passes such lines by the tag and the word (a bare "failed" would pass every
#: failing line of the log). Its other literals are keywords as usual.
PREFILTERS = ("literals", "subsystem")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: A site's own rules (`[[diagnosis.rules]]` beyond the packaged ones' overrides): at most this many. The packaged set
#: is not counted (it passed 1,000 rules in round 15).
MAX_SITE_RULES = 500


class RuleError(ValueError):
    """A rule is invalid; the message names the rule and the field."""


class Match(Protocol):
    def group(self, *names: int | str) -> Any: ...
    def groupdict(self) -> dict[str, str | None]: ...
    def start(self, group: int | str = 0) -> int: ...
    def end(self, group: int | str = 0) -> int: ...


class Pattern(Protocol):
    """A compiled rule pattern: google-re2's (linear time in the text; what every rule runs on)."""

    def search(self, text: str, pos: int = ..., endpos: int = ...) -> Match | None: ...


def linear(source: str) -> Pattern:
    """SOURCE compiled by RE2 (a DFA/NFA simulation: time linear in the text whatever the pattern, so a hostile
    line or a careless site pattern cannot backtrack). Raises ValueError with RE2's reason when RE2 cannot take
    the pattern (lookaround, backreferences, possessive quantifiers, or a pattern too big)."""
    import re2  # lazy: the prolog and most epilogs never compile a rule

    options = re2.Options()
    options.log_errors = False          # the reason goes into the error, not to stderr
    try:
        return re2.compile(source, options)  # type: ignore[no-any-return]
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        raise ValueError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None


@dataclass
class Rule:
    name: str
    kind: str
    literals: tuple[str, ...]
    source: str                      # the pattern, compiled on first use (most rules never see a candidate line)
    category: str = "unknown"
    action: str = "investigate"
    severity: str = "warning"
    handler: str | None = None
    trust: str = "kernel"
    anchor: str = "prefix"
    group: str | None = None
    role: str = "header"
    within: int = 30
    retype: str | None = None        # a detail that says what the event is (GHES `section_type: PCIe error`)
    once: bool = False               # a detail that joins an event at most once (a second one is a new event)
    holds_verdict: bool = False      # a header whose details add evidence but never raise its verdict (BERT's records)
    rate: tuple[int, float] | None = None   # (events, seconds)
    xid: int | None = None
    examples: tuple[str, ...] = ()
    doc: str = ""
    prefilter: str = "literals"      # or "subsystem" (PREFILTERS)
    index: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    _compiled: Pattern | None = field(default=None, repr=False)

    @property
    def pattern(self) -> Pattern:
        if self._compiled is None:
            self._compiled = linear(self.source)
        return self._compiled


def parse_rate(text: str) -> tuple[int, float]:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d*(?:\.\d+)?)\s*([smhd])\s*", text)
    if not m or int(m.group(1)) < 1:
        raise ValueError(f"rate must look like 10/1h (events per s, m, h or d), got {text!r}")
    return int(m.group(1)), float(m.group(2) or 1) * _UNITS[m.group(3)]


def _check(raw: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: each rule must be a table")
    name = raw.get("name", "?")
    for key, value in raw.items():
        if key not in FIELDS:
            raise RuleError(f"{where}: rule {name!r}: unknown field {key!r} (known: {', '.join(sorted(FIELDS))})")
        want = FIELDS[key]
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise RuleError(f"{where}: rule {name!r}: {key} must be {want.__name__}, got {value!r}")
    for key, allowed in (("category", CATEGORIES), ("action", ACTIONS), ("severity", SEVERITIES),
                         ("trust", TRUSTS), ("role", ROLES), ("anchor", ANCHORS), ("handler", HANDLERS),
                         ("prefilter", PREFILTERS)):
        if key in raw and raw[key] not in allowed:
            raise RuleError(f"{where}: rule {name!r}: {key} must be one of {', '.join(allowed)}, got {raw[key]!r}")
    return raw


def _vocabulary(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A fallback rule (`handler = "unrecognised"`) takes its pattern from the subsystem table's error words and has
    no literals of its own (the prefilter passes its lines by a subsystem's tag and an error word): one vocabulary."""
    if raw.get("handler") != FALLBACK_HANDLER:
        return raw
    if "literals" in raw or "pattern" in raw:
        raise RuleError(f"{where}: rule {raw.get('name', '?')!r}: a fallback rule takes its words from "
                        "data/subsystems.toml: give it no literals or pattern")
    from slurmtools.diagnosis.subsystems import ERROR_PATTERN

    return {**raw, "literals": [], "pattern": ERROR_PATTERN, "prefilter": "subsystem"}


def compile_rule(raw: dict[str, Any], where: str, index: int = 0, *, check: bool = True) -> Rule:
    """One validated rule (RuleError names what is wrong). CHECK: also compile the pattern now and match it
    against the examples (configuration loads and tests do; a hook trusts the checked file and compiles lazily)."""
    if isinstance(raw, dict):
        raw = _vocabulary(raw, where)
    if not check:
        return _rule(raw, index, None)
    _check(raw, where)
    name = raw.get("name")
    for key in REQUIRED:
        if not raw.get(key) and not (key == "literals" and raw.get("handler") == FALLBACK_HANDLER):
            raise RuleError(f"{where}: rule {name or '(no name)'!r}: {key} is required")
    literals = tuple(raw["literals"])
    if not all(isinstance(lit, str) and len(lit) >= 2 and "\n" not in lit for lit in literals):
        raise RuleError(f"{where}: rule {name!r}: literals must be strings of 2 or more characters")
    pattern: Pattern | None
    try:
        pattern = linear(raw["pattern"])
    except ValueError as exc:
        try:
            re.compile(raw["pattern"])
        except re.error as py_exc:
            raise RuleError(f"{where}: rule {name!r}: pattern is not a valid regular expression: {py_exc}") from None
        raise RuleError(f"{where}: rule {name!r}: pattern cannot run in linear time (RE2 syntax: no lookaround, "
                        f"no backreferences): {exc}") from None
    if raw.get("rate"):
        try:
            parse_rate(raw["rate"])
        except ValueError as exc:
            raise RuleError(f"{where}: rule {name!r}: {exc}") from None
    rule = _rule(raw, index, pattern)
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", rule.kind):
        raise RuleError(f"{where}: rule {name!r}: kind must be a short lowercase word, got {rule.kind!r}")
    if rule.trust == "kernel" and rule.anchor == "task" and (rule.action in NODE_ACTIONS or rule.handler):
        raise RuleError(f"{where}: rule {name!r}: a line that begins with a task's name is partly written by the "
                        f"job: give it trust = \"syslog\" or an action that is not {rule.action}")
    if not 1 <= rule.within <= 1000:
        raise RuleError(f"{where}: rule {name!r}: within must be 1..1000 lines")
    from slurmtools.diagnosis.lines import MAX_LINE, normalise

    for example in rule.examples:
        if not isinstance(example, str):
            raise RuleError(f"{where}: rule {name!r}: examples must be strings")
        if not _passes(rule, example):
            raise RuleError(f"{where}: rule {name!r}: example {example!r} holds none of the literals {list(literals)}"
                            " (the prefilter would never pass it)")
        if not rule.pattern.search(normalise(example[:MAX_LINE]).message):
            raise RuleError(f"{where}: rule {name!r}: pattern does not match its example {example!r}")
    return rule


def keywords_of(rule: Rule) -> tuple[str, ...]:
    """The literals of RULE that the prefilter looks for (`PREFILTERS`)."""
    if rule.prefilter != "subsystem":
        return rule.literals
    from slurmtools.diagnosis.subsystems import WORDS

    return tuple(lit for lit in rule.literals if lit.strip().lower() not in WORDS)


def _passes(rule: Rule, example: str) -> bool:
    """Whether the prefilter passes EXAMPLE for RULE: a keyword, or (`prefilter = "subsystem"`) a subsystem's tag
    and one of the rule's error-word literals."""
    if any(lit in example for lit in keywords_of(rule)):
        return True
    if rule.prefilter != "subsystem":
        return False
    from slurmtools.diagnosis.subsystems import ERROR_WORDS, TAG_LITERALS

    low = example.lower()
    return (any(t in example for t in TAG_LITERALS) and any(w in low for w in ERROR_WORDS)
            and (not rule.literals or any(lit in example for lit in rule.literals)))


def _rule(raw: dict[str, Any], index: int, pattern: Pattern | None) -> Rule:
    return Rule(name=str(raw["name"]), kind=raw["kind"], literals=tuple(raw["literals"]), source=raw["pattern"],
                category=raw.get("category", "unknown"), action=raw.get("action", "investigate"),
                severity=raw.get("severity", "warning"), handler=raw.get("handler"), trust=raw.get("trust", "kernel"),
                anchor=raw.get("anchor", "prefix"), group=raw.get("group"), role=raw.get("role", "header"),
                within=raw.get("within", 30), retype=raw.get("retype"), once=raw.get("once", False),
                holds_verdict=raw.get("holds_verdict", False),
                rate=parse_rate(raw["rate"]) if raw.get("rate") else None, xid=raw.get("xid"),
                examples=tuple(raw["examples"]), doc=raw.get("doc", ""), index=index, raw=raw, _compiled=pattern,
                prefilter=raw.get("prefilter", "literals"))


@lru_cache(maxsize=1)
def packaged() -> tuple[dict[str, Any], ...]:
    import tomllib
    from importlib import resources

    text = resources.files("slurmtools").joinpath("data/diagnosis_rules.toml").read_text(encoding="utf-8")
    return tuple(tomllib.loads(text)["rule"])


def merge(site: list[dict[str, Any]] | None, where: str = "[[diagnosis.rules]]") -> list[dict[str, Any]]:
    """The packaged rules with a site's overrides and additions (site additions first), as raw tables."""
    base = [dict(r) for r in packaged()]
    by_name = {r["name"]: r for r in base}
    added: list[dict[str, Any]] = []
    if site is not None and not isinstance(site, list):
        raise RuleError(f"{where}: must be an array of tables ([[diagnosis.rules]])")
    for raw in site or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw.get("name"):
            raise RuleError(f"{where}: every rule needs a name")
        _check(raw, where)
        if raw["name"] in by_name:
            by_name[raw["name"]].update(raw)
        elif any(a["name"] == raw["name"] for a in added):
            raise RuleError(f"{where}: rule {raw['name']!r} is given twice")
        else:
            added.append(dict(raw))
    if len(added) > MAX_SITE_RULES:
        raise RuleError(f"{where}: more than {MAX_SITE_RULES} rules of the site's own")
    return [r for r in added + base if r.get("enabled", True)]


def validate(site: list[dict[str, Any]] | None, where: str = "[[diagnosis.rules]]") -> None:
    """Raise RuleError if the site's rules (merged over the packaged ones) are invalid."""
    RuleSet.build(merge(site, where), where)


#: Bytes of real kernel logs from most to least frequent (measured on the real-world corpus and a boot log;
#: bytes not listed are rarer still). A multi-literal scan runs faster on keywords that begin with a rare byte.
COMMON_BYTES = b" 0er:1toiasn2cdl3f.54p8um967][\n-Cbhkgx,_PvIREMNy"


def prefilter_key(literal: str, shortest: int = 5) -> bytes:
    """The part of a literal the prefilter looks for: the longest suffix (at least SHORTEST bytes) that begins
    with the literal's rarest byte. A line holding the literal holds this suffix, so the prefilter passes every
    line a rule can match; it only passes a few more."""
    raw = literal.encode()
    if len(raw) <= shortest:
        return raw

    def commonness(i: int) -> int:
        at = COMMON_BYTES.find(raw[i:i + 1])
        return len(COMMON_BYTES) - at if at >= 0 else 0

    start = min(range(len(raw) - shortest + 1), key=lambda i: (commonness(i), i))
    key = raw[start:]
    return raw if len(key) < 8 and key.isalpha() else key   # a short plain word ("Error") passes too much


class RuleSet:
    """Compiled rules in the order they are tried, and the prefilter's keywords derived from them."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.keywords: tuple[bytes, ...] = tuple(sorted({prefilter_key(lit) for r in rules for lit in keywords_of(r)}))
        self._prefilter: Prefilter | None = None
        self.task_rules = [r for r in rules if r.anchor == "task" or r.trust != "kernel"]
        self.groups = {r.group for r in rules if r.group}

    @property
    def prefilter(self) -> Prefilter:
        """The one-pass prefilter over these rules' keywords and the subsystems' tags (`prefilter`)."""
        if self._prefilter is None:
            from slurmtools.diagnosis.prefilter import Prefilter

            self._prefilter = Prefilter(self.keywords)
        return self._prefilter

    @classmethod
    def build(cls, raws: list[dict[str, Any]], where: str = "rules", *, check: bool = True) -> RuleSet:
        names: set[str] = set()
        rules = []
        for i, raw in enumerate(raws):
            rule = compile_rule(raw, where, i, check=check)
            if rule.name in names:
                raise RuleError(f"{where}: rule {rule.name!r} is given twice")
            names.add(rule.name)
            rules.append(rule)
        return cls(rules)


_SETS: dict[str, RuleSet] = {}


def ruleset(site: list[dict[str, Any]] | None = None) -> RuleSet:
    """The compiled rules for a site's configuration (cached per distinct configuration)."""
    import json

    key = json.dumps(site or [], sort_keys=True)
    found = _SETS.get(key)
    if found is None:
        # checked where the rules are written (config check and load, tests); here compiled as they are needed
        found = _SETS[key] = RuleSet.build(merge(site), "[[diagnosis.rules]]" if site else "packaged rules",
                                           check=False)
        if len(_SETS) > 8:
            _SETS.pop(next(iter(_SETS)))
    return found
