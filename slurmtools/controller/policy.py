"""Classify an ended attempt and decide whether to retry it: pure functions over plain data, so every
rule is tested without Slurm or a database. The engine (slurmtools.controller.engine) gathers the
evidence and carries the decision out.

Classification, first match wins:

* `success`    the attempt completed with exit 0;
* `no_requeue` the job exited with the do-not-requeue code (default 93) or said so in a finding;
* `final`      a state nobody wants retried (cancelled by the user or an admin, deadline, ...);
* `requeued`   Slurm requeued the attempt itself and no evidence says why (an admin's `scontrol requeue`;
               checked after the node-level classes): the job goes on by itself, its chain stays active;
* `node_fault` node-level evidence (kernel, NVML, sysfs findings with a node action; a failed health
               gate; NODE_FAIL/BOOT_FAIL; an exit code the site declared a node fault): the
               implicated nodes are excluded from the retry;
* `transient`  evidence whose action is to restart the application (an XID NVIDIA files under RESTART_APP: a
               contained memory error, a graphics exception with the application's failure; an NCCL watchdog
               timeout in the job's output): the job is retried within its budget whatever its `retry_on`, and
               no node is excluded or drained (so the job's own output may decide it: it costs only its budget);
* `app_fault`  the application failed (non-zero exit, a signal, timeout, out of memory);
* `unknown`    nothing explains the end.

Decision: retry when the job asked for it (a `slurmtools=retry` marker in its comment, or a chain
recorded by `slurmtools sbatch`), its chain has budget left, and the class is one it retries
(`node`: node faults only, the default; `any`: also application faults and unknown ends).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.jobs.marker import RetryAsk
from slurmtools.slurm.types import ExitStatus

if TYPE_CHECKING:
    from slurmtools.config import Config


@dataclass(frozen=True)
class Evidence:
    """One ledger finding, as the controller needs it."""

    node: str | None
    kind: str
    category: str
    action: str
    trust: str
    message: str
    superseded: bool = False
    do_not_requeue: bool = False
    id: int | None = None


@dataclass
class Attempt:
    """An ended attempt: what EpilogSlurmctld queued plus what Slurm still knows."""

    job_id: int
    restart_count: int
    nodes: list[str]
    state: str | None = None        # Slurm's final state when still known (22.05 hooks do not say)
    exit: ExitStatus | None = None
    comment: str = ""


@dataclass
class Rules:
    node_fault_actions: frozenset[str]
    node_fault_states: frozenset[str]
    final_states: frozenset[str]
    node_fault_exit_codes: frozenset[int]
    no_requeue_exit_code: int = 93
    transient_actions: frozenset[str] = frozenset({"restart_app"})
    transient_kinds: frozenset[str] = frozenset({"xid", "nccl"})

    @classmethod
    def from_config(cls, cfg: Config) -> Rules:
        return cls(node_fault_actions=frozenset(cfg.controller.node_fault_actions),
                   node_fault_states=frozenset(cfg.controller.node_fault_states),
                   final_states=frozenset(cfg.controller.final_states),
                   node_fault_exit_codes=frozenset(int(c) for c in cfg.controller.node_fault_exit_codes),
                   no_requeue_exit_code=int(cfg.diagnosis.no_requeue_exit_code),
                   transient_actions=frozenset(cfg.controller.transient_actions),
                   transient_kinds=frozenset(cfg.controller.transient_kinds))


@dataclass
class Classification:
    kind: str        # success, no_requeue, final, requeued, node_fault, transient, app_fault, unknown
    why: str
    implicated: list[str] = field(default_factory=list)   # nodes to exclude from the retry
    evidence: list[int] = field(default_factory=list)     # ledger finding ids

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "why": self.why, "implicated": self.implicated, "evidence": self.evidence}


def node_faults(findings: Iterable[Evidence], rules: Rules, nodes: Sequence[str]) -> list[Evidence]:
    """Findings that put a node of this attempt at fault (node-level trust only: job output never does)."""
    mine = set(nodes)
    return [f for f in findings if is_node_fault(f, None, actions=rules.node_fault_actions)
            and f.node is not None and (not mine or f.node in mine)]


def classify(attempt: Attempt, findings: Sequence[Evidence], rules: Rules, *,
             gate_failures: Sequence[tuple[str, str]] = (), down_nodes: Sequence[str] = (),
             drained_for_job: Sequence[tuple[str, str]] = ()) -> Classification:
    """GATE_FAILURES: (node, failed checks) of health gates that failed this job; DOWN_NODES: nodes of the
    attempt Slurm now has down or not responding; DRAINED_FOR_JOB: (node, reason) of nodes whose epilog's
    evidence never reached the ledger but which our epilog drained naming this job (its spool was full)."""
    exit_ = attempt.exit
    state = (attempt.state or "").upper()
    if (state == "COMPLETED" and (exit_ is None or exit_.ok)) or (state == "" and exit_ is not None and exit_.ok):
        return Classification("success", "the job completed")
    if exit_ is not None and exit_.signal == 0 and exit_.code == rules.no_requeue_exit_code:
        return Classification("no_requeue", f"exit code {exit_.code}: the job asked not to be requeued")
    if any(f.do_not_requeue for f in findings):
        return Classification("no_requeue", "the job asked not to be requeued")
    if state in rules.final_states:
        return Classification("final", f"the job ended {state}: not a failure to retry")
    faults = node_faults(findings, rules, attempt.nodes)
    if faults:
        implicated = sorted({f.node for f in faults if f.node})
        top = faults[0]
        return Classification("node_fault", f"{top.category} fault on {top.node}: {top.message}"[:300], implicated,
                              [f.id for f in faults if f.id is not None])
    if gate_failures:
        implicated = sorted({n for n, _ in gate_failures})
        return Classification("node_fault", "health gate failed on " + ", ".join(
            f"{n} ({checks})" for n, checks in gate_failures), implicated)
    if drained_for_job:
        implicated = sorted({n for n, _ in drained_for_job})
        return Classification("node_fault", ("drained for this job by slurmtools, its epilog's findings not in the "
                                             "ledger: " + "; ".join(f"{n} ({r})" for n, r in drained_for_job))[:300],
                              implicated)
    if state in rules.node_fault_states:
        return Classification("node_fault", f"Slurm ended the job {state}", sorted(set(down_nodes)))
    if exit_ is not None and exit_.signal == 0 and exit_.code in rules.node_fault_exit_codes:
        return Classification("node_fault", f"exit code {exit_.code} is a node fault by site rule (job's word: "
                                            "no node excluded)")
    mine = set(attempt.nodes)
    restart = [f for f in findings if f.action in rules.transient_actions and f.kind in rules.transient_kinds
               and not f.superseded and (not mine or f.node is None or f.node in mine)]
    if restart:
        top = restart[0]
        return Classification("transient", f"{top.message} on {top.node}: restart the application"[:300], [],
                              [f.id for f in restart if f.id is not None])
    if state == "REQUEUED":
        return Classification("requeued", "Slurm requeued the attempt itself: the job goes on, nothing to do")
    if exit_ is not None and not exit_.ok:
        what = f"signal {exit_.signal}" if exit_.signal else f"exit code {exit_.code}"
        return Classification("app_fault", f"the application failed ({what}" + (f", {state}" if state else "") +
                              ") with no node-level finding")
    if state in {"TIMEOUT", "OUT_OF_MEMORY", "FAILED"}:
        return Classification("app_fault", f"the job ended {state} with no node-level finding")
    return Classification("unknown", "nothing in the ledger or Slurm explains the end" +
                          (f" (state {state})" if state else ""))


@dataclass
class Decision:
    action: str            # retry, no_retry
    reason: str
    exclude: list[str] = field(default_factory=list)
    delay_s: float = 0.0
    chain_status: str = "active"   # active, completed, failed, ended

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "reason": self.reason, "exclude": self.exclude, "delay_s": self.delay_s,
                "chain_status": self.chain_status}


def backoff(retries_used: int, base: float, maximum: float, jitter: float, rng: random.Random) -> float:
    """min(maximum, base * 2^retries_used), spread by +-jitter so a fleet of retries does not stampede."""
    if base <= 0:
        return 0.0
    delay = min(maximum, base * (2 ** retries_used))
    return float(max(0.0, delay * (1 + jitter * rng.uniform(-1.0, 1.0))))


def decide(cls: Classification, ask: RetryAsk | None, retries_used: int, *, already_excluded: Sequence[str] = (),
           soft_excluded: Sequence[str] = (), base: float = 0.0, maximum: float = 600.0, jitter: float = 0.2,
           rng: random.Random | None = None) -> Decision:
    if cls.kind == "success":
        return Decision("no_retry", "completed", chain_status="completed")
    if ask is None:
        return Decision("no_retry", "not managed: no slurmtools=retry marker and no retry chain",
                        chain_status="ended")
    if ask.opted_out:
        return Decision("no_retry", "the job opted out (slurmtools=off)", chain_status="ended")
    if cls.kind in {"no_requeue", "final"}:
        return Decision("no_retry", cls.why, chain_status="ended")
    if cls.kind == "requeued":
        return Decision("no_retry", cls.why, chain_status="active")
    if cls.kind not in {"node_fault", "transient"} and ask.retry_on != "any":
        return Decision("no_retry", f"{cls.kind.replace('_', ' ')} and the job retries on node faults only",
                        chain_status="failed")
    if retries_used >= ask.max_retries:
        return Decision("no_retry", f"retry budget spent ({retries_used} of {ask.max_retries} used)",
                        chain_status="failed")
    exclude = sorted(set(already_excluded) | set(cls.implicated) | set(soft_excluded))
    delay = backoff(retries_used, base, maximum, jitter, rng or random.Random())
    why = f"{cls.kind.replace('_', ' ')}: retry {retries_used + 1} of {ask.max_retries}"
    if cls.implicated:
        why += ", away from " + ",".join(cls.implicated)
    return Decision("retry", why, exclude, delay)
