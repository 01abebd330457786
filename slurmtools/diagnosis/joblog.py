"""The job's own output -> findings with trust "job": they may decide a retry, never drain a node.

The rules are the `trust = "job"` entries of the diagnosis rules (data/diagnosis_rules.toml, and a site's
`[[diagnosis.rules]]`): NCCL and CUDA failures, host OOM as slurmstepd, srun and launchers print it. A line that no
job rule claims and that holds a fabric library's tag (data/subsystems.toml, trust `job`: UCX, libibverbs, libfabric,
PSM, ...) and a failure word is the library fallback's (`fallback.classify_job`): a warning, `unrecognised: true`.
"""

from __future__ import annotations

import re
from typing import Any, cast

from slurmtools.diagnosis import fallback
from slurmtools.diagnosis.findings import Finding
from slurmtools.diagnosis.handlers import HANDLERS, plain
from slurmtools.diagnosis.lines import MAX_LINE, Line, normalise
from slurmtools.diagnosis.prefilter import Prefilter
from slurmtools.diagnosis.rules import Rule, RuleSet, keywords_of, prefilter_key, ruleset
from slurmtools.diagnosis.subsystems import LIBRARIES

#: The fabric libraries' tag literals: a line holding one is read for the library fallback.
_LIBRARY_LITERALS = tuple(sorted({lit for s in LIBRARIES for lit in s.literals}))


def scan(lines: list[str], rs: RuleSet | None = None, ctx: dict[str, Any] | None = None) -> list[Finding]:
    rs = rs or ruleset()
    job_rules = [r for r in rs.rules if r.trust == "job"]
    out: list[Finding] = []
    literals = {lit for rule in job_rules for lit in rule.literals} | set(_LIBRARY_LITERALS)
    for number in _candidates(lines, job_rules):
        raw = lines[number - 1]
        text = raw.rstrip("\r\n")[:MAX_LINE].strip()
        if not text.isascii():            # a lone surrogate (a caller's surrogateescape) is no text RE2 can take
            text = text.encode("utf-8", "replace").decode("utf-8")
        if not any(lit in text for lit in literals):
            continue
        text = normalise(text).message    # without its envelope (rank tags, stamps, a shipper's JSON)
        for rule in job_rules:
            if not any(lit in text for lit in rule.literals):
                continue
            m = rule.pattern.search(text)
            if m:
                line = Line(number, text, None, None, None)
                f = HANDLERS.get(rule.handler or "", plain)(rule, cast("re.Match[str]", m), line, ctx or {})
                if f is not None:
                    f.trust = "job"
                    out.append(f)
                break
        else:
            unknown = fallback.classify_job(text, number)
            if unknown is not None:
                out.append(unknown)
    return out


def _candidates(lines: list[str], job_rules: list[Rule]) -> list[int] | range:
    """The numbers of the lines that can give a finding, found by the scan's one-pass prefilter (`prefilter`: C's
    bytes.find, grep or Hyperscan over the joined output) for the job rules' keywords and, for the library fallback, a
    subsystem's tag with a failure word: a superset of the lines holding a job rule's literal or a library's tag and a
    failure word, which the loop then checks exactly. Every line when a line holds a newline of its own."""
    texts = [raw.rstrip("\r\n") for raw in lines]
    if any("\n" in text for text in texts):
        return range(1, len(lines) + 1)
    keys = tuple(sorted({prefilter_key(lit) for rule in job_rules for lit in keywords_of(rule)}))
    data = "\n".join(texts).encode("utf-8", "replace")
    return [number for number, _, _ in Prefilter(keys).spans(data)]


def exit_finding(code: int, signal: int, state: str | None = None,
                 no_requeue_code: int = 93) -> Finding | None:
    """The job's exit as a finding (trust job). None for a clean exit."""
    if code == 0 and signal == 0 and state in (None, "COMPLETED"):
        return None
    what = f"signal {signal}" if signal else f"exit code {code}"
    details: dict[str, object] = {"exit_code": code, "signal": signal}
    if state:
        details["state"] = state
    if code == no_requeue_code:
        details["do_not_requeue"] = True
    return Finding(kind="exit", category="application", action="none", severity="warning", trust="job",
                   message=f"job ended with {what}" + (f" ({state})" if state else ""), details=details)
