"""Blame within a stalled job: compare its nodes; the one that differs is the suspect.

Each kind of evidence names at most one node, and only when that node alone stands out:

* GPUs: the one node idle while its peers spin (the stopped rank does not poll; the ranks waiting on it do);
  with three nodes or more, also the one node whose signature differs from all the others sharing one;
* D-state: the one node whose job processes sit in uninterruptible sleep (a filesystem, a driver call);
* kernel: the one node with node-level kernel findings since the attempt began;
* network: the one node whose IB/RoCE links went down (the link-flap evidence `detect` scores:
  slurmtools.detect.links, read by slurmtools.stalls.signals.network_events), when known.

The suspect is the node named by the most kinds of evidence, if exactly one node has that most; a tie, or no
evidence, is no suspect: the job's own bug is as likely, and nobody is excluded. Pure functions."""

from __future__ import annotations

from collections import Counter
from typing import Any


def _odd_one(values: dict[str, Any]) -> str | None:
    """The one node whose value differs from all the others, which share one value (3 nodes or more)."""
    if len(values) < 3:
        return None
    counts = Counter(values.values())
    if len(counts) != 2:
        return None
    _, (rare, n_rare) = counts.most_common(2)
    if n_rare != 1:
        return None
    return next(n for n, v in values.items() if v == rare)


def _only_positive(values: dict[str, float]) -> str | None:
    """The one node with a positive value while every other node (at least one) has none."""
    if len(values) < 2:
        return None
    hits = [n for n, v in values.items() if v and v > 0]
    return hits[0] if len(hits) == 1 else None


def gpu_suspect(classes: dict[str, str]) -> str | None:
    known = {n: c for n, c in classes.items() if c != "none"}
    idle = [n for n, c in known.items() if c == "idle"]
    if set(known.values()) <= {"spin", "idle"}:
        # waiting ranks spin, a stopped one idles: a lone spinner among idle nodes is a waiter, not the cause
        return idle[0] if len(idle) == 1 and len(known) > 1 else None
    return _odd_one(known)


def blame(nodes: list[str], gpu_classes: dict[str, str], dstate: dict[str, float], kernel: dict[str, float],
          network: dict[str, float] | None = None) -> tuple[str | None, dict[str, list[str]]]:
    """The suspect among NODES (or None) and, per node, the kinds of evidence that name it."""
    named: dict[str, list[str]] = {n: [] for n in nodes}
    inside = set(nodes)
    for kind, who in (("gpu", gpu_suspect({n: c for n, c in gpu_classes.items() if n in inside})),
                      ("dstate", _only_positive({n: dstate.get(n, 0.0) for n in nodes} if dstate else {})),
                      ("kernel", _only_positive({n: kernel.get(n, 0.0) for n in nodes} if kernel else {})),
                      ("network", _only_positive({n: (network or {}).get(n, 0.0) for n in nodes}
                                                 if network else {}))):
        if who is not None:
            named[who].append(kind)
    ranked = sorted(((len(k), n) for n, k in named.items() if k), reverse=True)
    if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
        return None, {n: k for n, k in named.items() if k}
    return ranked[0][1], {n: k for n, k in named.items() if k}
