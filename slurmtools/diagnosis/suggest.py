"""`slurmtools diagnose --suggest-rules FILE`: a TOML rule skeleton for each distinct message the subsystem
fallback caught (a hardware subsystem's error line that no rule knows), ready to review and add to a site's
`[[diagnosis.rules]]`.

Messages are grouped by their family (fallback.normalise_message: numbers, hex, PCI addresses, UUIDs, IP
addresses and device names replaced), and each skeleton's pattern is the family with the placeholders turned back
into patterns, anchored at the message's start; its literal is the family's longest fixed part; its example the
first line seen. Every skeleton is checked the way a site's rule is (it must compile and match its example).
"""

from __future__ import annotations

import json
import re
from typing import Any

from slurmtools.diagnosis.rules import RuleError, compile_rule

#: Skeletons printed at most (the most frequent families first).
MAX_SUGGESTIONS = 200

_HOLES = {"<pci>": r"[0-9a-fA-F:.]+", "<uuid>": r"[\w-]+", "<hex>": r"(?:0x)?[0-9a-fA-F]+", "<ip>": r"[\d.]+(?:@\w+)?",
          "<dev>": r"[\w.-]+", "<n>": r"\d+"}
_SPLIT = re.compile(r"(<pci>|<uuid>|<hex>|<ip>|<dev>|<n>|\s+)")


def _pattern(family: str) -> str:
    parts = []
    for piece in _SPLIT.split(family):
        if not piece:
            continue
        if piece in _HOLES:
            parts.append(_HOLES[piece])
        elif piece.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(piece).replace("'", r"\x27"))
    return "^" + "".join(parts)


def _literal(family: str, message: str) -> str | None:
    """The family's longest fixed part that the message holds verbatim (at least 4 characters, with a letter)."""
    chunks = [c.strip(" ,.:;()[]{}<>=/-'\"") for c in re.split(r"<pci>|<uuid>|<hex>|<ip>|<dev>|<n>", family)]
    good = [c for c in chunks if len(c) >= 4 and re.search(r"[A-Za-z]", c) and c in message]
    return max(good, key=len) if good else None


def suggest(data: bytes, rules: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One rule skeleton (a dict, as a site's `[[diagnosis.rules]]` entry) per distinct unrecognised message in
    DATA, the most frequent first, with `count`, `subsystem` and `nodes` for the reader (not rule fields)."""
    from slurmtools.diagnosis import kernel
    from slurmtools.diagnosis.rules import ruleset

    found, _ = kernel.scan(data, {"ruleset": ruleset(rules)})
    families: dict[str, dict[str, Any]] = {}
    for f in found:
        if not f.details.get("unrecognised"):
            continue
        family = str(f.details.get("family") or f.message)
        entry = families.setdefault(family, {"finding": f, "count": 0})
        entry["count"] += f.count
    out: list[dict[str, Any]] = []
    taken: set[str] = set()
    for family, entry in sorted(families.items(), key=lambda kv: (-kv[1]["count"], kv[0]))[:MAX_SUGGESTIONS]:
        f = entry["finding"]
        sub = str(f.details.get("subsystem") or f.kind)
        stem = re.sub(r"[^a-z0-9]+", "_", sub.lower()).strip("_")[:20] or "site"
        number = 1
        while f"site_{stem}_{number}" in taken:
            number += 1
        name = f"site_{stem}_{number}"
        literal = _literal(family, f.message) or f.message[:40].strip()
        raw = {"name": name, "kind": f.kind, "category": f.category, "action": "investigate", "severity": "warning",
               "literals": [literal], "pattern": _pattern(family), "examples": [f.message],
               "doc": f"drafted by slurmtools diagnose --suggest-rules from {entry['count']} line(s) of {sub}"}
        if f.trust != "kernel":     # a daemon's or a library's line: the rule keeps its trust (never a drain)
            raw["trust"] = f.trust
        try:
            compile_rule(raw, "suggested rule")
        except RuleError:
            # a family the placeholders do not cover cleanly: match the example itself (escaped)
            raw["pattern"] = "^" + re.escape(f.message).replace("'", r"\x27")
            raw["literals"] = [f.message[:60].strip() or f.message]
            try:
                compile_rule(raw, "suggested rule")
            except RuleError:
                continue
        taken.add(name)
        out.append({**raw, "count": entry["count"], "subsystem": sub})
    return out


def to_toml(suggestions: list[dict[str, Any]]) -> str:
    """The skeletons as TOML for a site's configuration, each with a comment saying what it was drafted from."""
    if not suggestions:
        return "# no unrecognised messages: nothing to suggest\n"
    out = ["# Rule skeletons drafted from unrecognised messages (slurmtools diagnose --suggest-rules).",
           "# Review each one (kind, category, action, severity, pattern) before adding it to [[diagnosis.rules]];",
           "# a rule with trust = \"kernel\" and a node action drains nodes: give one only to a message you know.", ""]
    for s in suggestions:
        out += [f"# {s['count']} line(s), subsystem {s['subsystem']}",
                "[[diagnosis.rules]]"]
        for key in ("name", "kind", "category", "action", "severity", "trust"):
            if key in s:
                out.append(f"{key} = {json.dumps(s[key])}")
        out.append("literals = [" + ", ".join(json.dumps(lit, ensure_ascii=False) for lit in s["literals"]) + "]")
        out.append(f"pattern = '''{s['pattern']}'''")
        out.append("examples = [" + ", ".join(json.dumps(e, ensure_ascii=False) for e in s["examples"]) + "]")
        out.append(f"doc = {json.dumps(s['doc'])}")
        out.append("")
    return "\n".join(out)
