"""The requeue controller: the pure rules (policy), the queue, and the engine against an in-memory Slurm
that behaves like 22.05 does for requeuehold/update/release (tests/integration/test_controller_lab.py
runs the same flow on the real lab)."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.controller import policy, queue
from slurmtools.controller.engine import Controller
from slurmtools.jobs import marker
from slurmtools.ledger import api, models
from slurmtools.ledger.spool import Event
from slurmtools.slurm.types import ExitStatus

from .fakes import FakeSlurm

DATA = Path(__file__).parent / "data" / "hook-env"   # recorded on the lab (shared/reference/slurm-hook-env)
RULES = policy.Rules(node_fault_actions=frozenset({"reset_gpu", "reboot_node", "drain_node"}),
                     node_fault_states=frozenset({"NODE_FAIL", "BOOT_FAIL"}),
                     final_states=frozenset({"CANCELLED", "COMPLETED", "DEADLINE", "PREEMPTED"}),
                     node_fault_exit_codes=frozenset({42}))


def ev(node: str | None = "n1", action: str = "drain_node", trust: str = "kernel", **kw: Any) -> policy.Evidence:
    return policy.Evidence(node=node, kind=kw.pop("kind", "xid"), category=kw.pop("category", "hardware"),
                           action=action, trust=trust, message=kw.pop("message", "XID 79"), **kw)


def attempt(state: str | None = "FAILED", code: int = 0, sig: int = 9, nodes: str = "n1,n2") -> policy.Attempt:
    return policy.Attempt(7, 0, nodes.split(","), state, ExitStatus(code, sig))


# ---------------------------------------------------------------------------------- policy
@pytest.mark.parametrize(("comment", "expected"), [
    ("", None),
    ("my run", None),
    ("slurmtools=retry", marker.RetryAsk(3, "node")),
    ("exp-12 slurmtools=retry:5", marker.RetryAsk(5, "node")),
    ("a,slurmtools=retry:1:any;b", marker.RetryAsk(1, "any")),
    ("slurmtools=retry:x", None),
    ("slurmtools=retry:2:sometimes", None),
    ("slurmtools=retryish", None),
    ("slurmtools=retry:2 slurmtools=off", marker.RetryAsk(0, "node", opted_out=True)),
])
def test_parse_marker(comment: str, expected: marker.RetryAsk | None) -> None:
    assert marker.parse_marker(comment) == expected


def test_marker_round_trips() -> None:
    ask = marker.RetryAsk(4, "any")
    assert marker.parse_marker(f"x {ask.marker()}") == ask


def test_kernel_fault_implicates_its_node_only() -> None:
    cls = policy.classify(attempt(), [ev("n2", id=5), ev("n1", action="none", kind="oom", id=6)], RULES)
    assert (cls.kind, cls.implicated, cls.evidence) == ("node_fault", ["n2"], [5])


def test_job_output_never_implicates_a_node() -> None:
    cls = policy.classify(attempt(code=1, sig=0), [ev("n1", trust="job", kind="nccl", category="network")], RULES)
    assert (cls.kind, cls.implicated) == ("app_fault", [])


def test_superseded_and_foreign_findings_do_not_count() -> None:
    assert policy.classify(attempt(code=1, sig=0), [ev("n1", superseded=True), ev("n9")], RULES).kind == "app_fault"


def test_no_requeue_exit_code_wins_over_node_faults() -> None:
    cls = policy.classify(attempt(code=93, sig=0), [ev("n1")], RULES)
    assert cls.kind == "no_requeue"


def test_cancelled_is_final() -> None:
    assert policy.classify(attempt("CANCELLED", 0, 15), [ev("n1")], RULES).kind == "final"


def test_completed_is_success_even_when_slurm_forgot_the_state() -> None:
    assert policy.classify(attempt("COMPLETED", 0, 0), [], RULES).kind == "success"
    assert policy.classify(attempt(None, 0, 0), [], RULES).kind == "success"


def test_node_fail_state_implicates_the_down_nodes() -> None:
    cls = policy.classify(attempt("NODE_FAIL", 0, 0), [], RULES, down_nodes=["n2"])
    assert (cls.kind, cls.implicated) == ("node_fault", ["n2"])


def test_failed_gate_is_a_node_fault() -> None:
    cls = policy.classify(attempt(), [], RULES, gate_failures=[("n1", "gpu")])
    assert (cls.kind, cls.implicated) == ("node_fault", ["n1"])


def test_site_exit_code_is_a_node_fault_without_exclusion() -> None:
    cls = policy.classify(attempt(code=42, sig=0), [], RULES)
    assert (cls.kind, cls.implicated) == ("node_fault", [])


def test_a_restart_app_xid_is_transient_retried_without_exclusion() -> None:
    rules = dataclasses.replace(RULES, transient_actions=frozenset({"restart_app"}),
                                transient_kinds=frozenset({"xid", "nccl"}))
    f = ev("n1", action="restart_app", category="application", message="XID 13", id=9)
    cls = policy.classify(attempt(code=1, sig=0), [f], rules)
    assert (cls.kind, cls.implicated, cls.evidence) == ("transient", [], [9])
    d = policy.decide(cls, marker.RetryAsk(2, "node"), 0)                # retried even on "node faults only"
    assert (d.action, d.exclude) == ("retry", [])
    assert policy.decide(cls, marker.RetryAsk(2, "node"), 2).action == "no_retry"     # within the budget
    # a node fault on the same attempt wins
    assert policy.classify(attempt(code=1, sig=0), [f, ev("n2")], rules).kind == "node_fault"
    # the job's own output (an NCCL watchdog timeout) decides a retry, never an exclusion
    job = ev("n1", action="restart_app", trust="job", kind="nccl", category="network")
    assert (policy.classify(attempt(code=1, sig=0), [job], rules).kind,
            policy.classify(attempt(code=1, sig=0), [job], rules).implicated) == ("transient", [])
    # an OOM kill says restart_app too, but the same job would be killed again: not transient
    oom = ev("n1", action="restart_app", kind="oom", category="application")
    assert policy.classify(attempt("OUT_OF_MEMORY", 0, 9), [oom], rules).kind == "app_fault"


def test_unknown_when_nothing_explains() -> None:
    assert policy.classify(policy.Attempt(7, 0, ["n1"], None, None), [], RULES).kind == "unknown"


NODE = policy.Classification("node_fault", "XID 79", ["n2"])
APP = policy.Classification("app_fault", "exit 1")


def test_decide_node_fault_retries_away_from_the_node_keeping_existing_exclusions() -> None:
    d = policy.decide(NODE, marker.RetryAsk(3), 0, already_excluded=["n4"], soft_excluded=["n3"])
    assert (d.action, d.exclude, d.delay_s) == ("retry", ["n2", "n3", "n4"], 0.0)
    assert "retry 1 of 3" in d.reason


@pytest.mark.parametrize(("cls", "ask", "used", "action", "chain"), [
    (NODE, None, 0, "no_retry", "ended"),                                  # not managed
    (NODE, marker.RetryAsk(0, opted_out=True), 0, "no_retry", "ended"),
    (APP, marker.RetryAsk(3, "node"), 0, "no_retry", "failed"),            # app faults: not by default
    (APP, marker.RetryAsk(3, "any"), 0, "retry", "active"),
    (APP, marker.RetryAsk(3, "any"), 3, "no_retry", "failed"),             # budget spent
    (NODE, marker.RetryAsk(2), 2, "no_retry", "failed"),
    (policy.Classification("no_requeue", "93"), marker.RetryAsk(3, "any"), 0, "no_retry", "ended"),
    (policy.Classification("success", ""), marker.RetryAsk(3), 0, "no_retry", "completed"),
])
def test_decide(cls: policy.Classification, ask: marker.RetryAsk | None, used: int, action: str, chain: str) -> None:
    d = policy.decide(cls, ask, used)
    assert (d.action, d.chain_status) == (action, chain)


def test_backoff_doubles_caps_and_jitters() -> None:
    rng = random.Random(1)
    assert policy.backoff(0, 0.0, 600, 0.2, rng) == 0.0
    assert [policy.backoff(n, 10, 60, 0.0, rng) for n in range(4)] == [10, 20, 40, 60]
    spread = [policy.backoff(1, 10, 600, 0.2, rng) for _ in range(200)]
    assert 16 <= min(spread) < 18 and 22 < max(spread) <= 24


# ----------------------------------------------------------------------------------- queue
def reference_env(name: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DATA / name).read_text().splitlines() if "=" in line)
    return dict(pairs)


def test_queue_item_from_a_real_epilog_slurmctld_environment(tmp_path: Path) -> None:
    env = reference_env("epilog_slurmctld-gpujob-exit3-ctld.env")
    item = queue.item_from_env(env, "lab")
    assert (item["job_id"], item["restart_count"], item["exit_raw"], item["nodes"]) == (16, 0, 768, "n[1-2]")
    path = queue.enqueue(str(tmp_path / "q"), item)
    assert Path(path).name == "16.0.json"
    assert [i["job_id"] for _, i in queue.pending(str(tmp_path / "q"))] == [16]
    queue.done(path)
    assert queue.pending(str(tmp_path / "q")) == []


@pytest.mark.parametrize(("given", "kept"), [("sA1B2C3D4E5F6G", True), ("s123", False), ("$(reboot)", False),
                                             ("", False)])
def test_queue_item_keeps_the_runs_sluid_only_in_its_form(given: str, kept: bool) -> None:
    env = {**reference_env("epilog_slurmctld-gpujob-exit3-ctld.env"), "SLURM_JOB_SLUID": given}
    item = queue.item_from_env(env, "lab")
    assert item.get("sluid") == (given if kept else None)


def test_queue_rejects_a_bad_env_and_quarantines_a_bad_file(tmp_path: Path) -> None:
    with pytest.raises(queue.QueueError, match="SLURM_JOB_ID"):
        queue.item_from_env({}, "lab")
    (tmp_path / "3.0.json").write_text("{not json")
    assert queue.pending(str(tmp_path)) == []
    assert (tmp_path / "bad" / "3.0.json").exists()


# ---------------------------------------------------------------------------------- engine
def controller(w: dict[str, Any], **kw: Any) -> Controller:
    return Controller(w["cfg"], slurm=w["slurm"], rng=random.Random(0), recovery=kw.pop("recovery", False), **kw)


def ended(w: dict[str, Any], job_id: int = 7, restart: int = 0, nodes: str = "n[1-2]", comment: str = "",
          exit_raw: int = 9, epilogs: tuple[str, ...] = ("n1", "n2"), xid_on: str | None = "n2",
          enqueued: float | None = None, sluid: str | None = None) -> None:
    """What the hooks leave behind: each node's epilog attempt (+ an XID 79 finding), the queue item."""
    cfg = w["cfg"]
    events = [Event("attempt", {"job_id": job_id, "restart_count": restart, "nodes": nodes, "source": "epilog",
                                "details": {"epilog": {n: {"findings": int(n == xid_on)}}}},
                    cluster=cfg.cluster, key=f"att-{job_id}-{restart}-{n}") for n in epilogs]
    if xid_on:
        events.append(Event("finding", {"node": xid_on, "job_id": job_id, "restart_count": restart,
                                        "source": "kernel", "kind": "xid", "xid": 79, "category": "hardware",
                                        "severity": "critical", "action": "drain_node", "trust": "kernel",
                                        "message": "GPU has fallen off the bus"}, cluster=cfg.cluster))
    api.record(events, cfg)
    api.flush(cfg)
    item = {"job_id": job_id, "restart_count": restart, "exit_raw": exit_raw, "nodes": nodes, "comment": comment,
            "user": "alice", "enqueued": enqueued if enqueued is not None else datetime.now(UTC).timestamp()}
    if sluid is not None:
        item["sluid"] = sluid
    queue.enqueue(cfg.controller.queue_dir, item)


def decisions(w: dict[str, Any]) -> list[models.ControllerDecision]:
    with Session(api.engine_for(w["cfg"])) as s:
        return list(s.scalars(select(models.ControllerDecision).order_by(models.ControllerDecision.id)))


def test_node_fault_is_requeued_held_excluded_released_and_verified(world: dict[str, Any]) -> None:
    world["slurm"].add_job(7, comment="slurmtools=retry:2")
    ended(world, comment="slurmtools=retry:2")
    report = controller(world).once()
    assert report["decisions"][0]["status"] == "done" and not report["alerts"]
    assert world["slurm"].actions() == [("requeue", 7, True), ("update", 7, ("n2",), "now+2"), ("release", 7)]
    (d,) = decisions(world)
    assert (d.classification, d.decision, d.excluded_nodes, d.status) == ("node_fault", "retry", "n2", "done")
    assert d.t_detected <= d.t_decided <= d.t_requeued <= d.t_released <= d.t_verified
    assert queue.pending(world["cfg"].controller.queue_dir) == []
    with Session(api.engine_for(world["cfg"])) as s:
        chain = s.scalar(select(models.RetryChain))
        assert chain is not None and (chain.root_job_id, chain.retries_used, chain.max_retries) == (7, 1, 2)
        att = s.scalar(select(models.JobAttempt))
        assert att is not None and att.chain_id == chain.id and set(att.details["epilog"]) == {"n1", "n2"}
    world["slurm"].start(7, ("n3", "n4"))
    running = controller(world).once()["running"]
    assert [(r["job_id"], r["restart_count"], r["nodes"]) for r in running] == [(7, 1, "n[3-4]")]
    assert decisions(world)[0].t_running is not None
    assert controller(world).once()["decisions"] == []        # nothing queued, nothing done twice


def test_waits_for_every_epilog_then_decides_without_the_missing_one(world: dict[str, Any]) -> None:
    world["slurm"].add_job(7, comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry", epilogs=("n1",), xid_on=None)
    report = controller(world).once()
    assert report["waiting"][0]["missing_epilogs"] == ["n2"] and world["slurm"].actions() == []
    path = Path(world["cfg"].controller.queue_dir) / "7.0.json"
    item = json.loads(path.read_text())
    item["enqueued"] -= 31                                   # past controller.evidence_wait
    path.write_text(json.dumps(item))
    (d,) = controller(world).once()["decisions"]
    assert (d["classification"], d["decision"]) == ("app_fault", "no_retry")
    assert decisions(world)[0].details["missing_epilogs"] == ["n2"]


def test_an_epilog_that_could_not_spool_still_counts_through_its_drain(world: dict[str, Any]) -> None:
    """n2's epilog found an XID and drained n2 naming the job, but its spool was full: the drain, on record in
    Slurm, is the evidence (a drain naming another job is not)."""
    world["slurm"].add_job(7, comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry", epilogs=("n1",), xid_on=None)
    world["slurm"].drain(["n1"], "slurmtools: hardware: XID 79 GPU 0000:3b:00.0: fallen off the bus [job 6]")
    world["slurm"].drain(["n2"], "slurmtools: hardware: XID 79 GPU 0000:3b:00.0: fallen off the bus [job 7]")
    path = Path(world["cfg"].controller.queue_dir) / "7.0.json"
    item = json.loads(path.read_text())
    item["enqueued"] -= 31                                   # past controller.evidence_wait
    path.write_text(json.dumps(item))
    (d,) = controller(world).once()["decisions"]
    assert (d["classification"], d["decision"], d["excluded_nodes"]) == ("node_fault", "retry", "n2")
    why = decisions(world)[0].details["classification"]["why"]
    assert "its epilog's findings not in the ledger: n2 (slurmtools: hardware: XID 79" in why


def test_unmanaged_job_is_recorded_not_requeued(world: dict[str, Any]) -> None:
    world["slurm"].add_job(7)
    ended(world)
    (d,) = controller(world).once()["decisions"]
    assert (d["classification"], d["decision"], d["status"]) == ("node_fault", "no_retry", "done")
    assert "not managed" in d["reason"] and world["slurm"].actions() == []


def test_restart_mid_flow_never_requeues_twice(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry")
    slurm.fail_next["update"] = 1                              # dies after the requeue, before the exclusion
    first = controller(world).once()
    assert first["decisions"][0]["status"] == "acting"
    assert decisions(world)[0].t_requeued is not None
    second = controller(world).once()                          # a fresh controller: the restart
    assert second["decisions"][0]["status"] == "done"
    assert [c[0] for c in slurm.actions()] == ["requeue", "update", "release"]
    assert slurm.job(7).restart_count == 1 and slurm.job(7).excluded_nodes == ("n2",)


def test_an_exclusion_that_does_not_take_is_retried_then_alerted(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry")
    slurm.ignore_exclude = True
    ended(world, comment="slurmtools=retry")
    reports = [controller(world).once() for _ in range(3)]
    assert [r["decisions"][0]["status"] for r in reports] == ["acting", "acting", "failed"]
    assert "not excluded: n2" in reports[-1]["alerts"][0]
    assert [c[0] for c in slurm.actions()].count("requeue") == 1
    assert queue.pending(world["cfg"].controller.queue_dir) == []


def test_observe_mode_decides_and_records_but_acts_on_nothing(world: dict[str, Any]) -> None:
    text = world["path"].read_text().replace('cluster = "t"', 'cluster = "t"\nobserve = true')
    world["path"].write_text(text)
    world["cfg"] = config.load(world["path"], env={})
    world["slurm"].add_job(7, comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry")
    (d,) = controller(world).once()["decisions"]
    assert (d["decision"], d["status"]) == ("retry", "observed") and world["slurm"].actions() == []


def test_slurm_requeued_job_only_gets_the_exclusion(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry")
    slurm.requeue(7, hold=False)                              # NODE_FAIL + --requeue: Slurm did it itself
    slurm.calls.clear()
    ended(world, comment="slurmtools=retry")
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "done" and [c[0] for c in slurm.actions()] == ["update"]
    assert decisions(world)[0].details["requeued_by"] == "slurm"


@pytest.mark.parametrize("evidence", ["accounting", "node down", "admin requeue"])
def test_an_attempt_slurm_requeued_itself_is_not_a_success(world: dict[str, Any], evidence: str) -> None:
    """A node dies: Slurm ends the attempt NODE_FAIL and requeues the job; EpilogSlurmctld reports exit 0 and the
    dead node never ran its epilog. That attempt did not complete: accounting (or the node's state) says why."""
    import types

    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry:2")
    slurm.requeue(7, hold=False)
    slurm.calls.clear()
    if evidence == "accounting":
        slurm.history = [types.SimpleNamespace(job_id_raw=7, attempt=0, state="NODE_FAIL")]
    elif evidence == "node down":
        slurm.node_list["n1"] = dataclasses.replace(slurm.node_list["n1"], state="down")
    else:
        slurm.history = [types.SimpleNamespace(job_id_raw=7, attempt=0, state="REQUEUED")]
    ended(world, exit_raw=0, xid_on=None, comment="slurmtools=retry:2",
          epilogs=("n2",) if evidence != "admin requeue" else ("n1", "n2"),
          enqueued=datetime.now(UTC).timestamp() - 3600)          # past the wait for n1's epilog
    assert len(controller(world).once()["decisions"]) == 1
    row = decisions(world)[0]
    if evidence == "admin requeue":
        assert (row.classification, row.decision) == ("requeued", "no_retry") and slurm.actions() == []
        with Session(api.engine_for(world["cfg"])) as s:
            chain = s.scalar(select(models.RetryChain))
            assert chain is not None and chain.status == "active"        # the job goes on
        return
    assert (row.classification, row.decision) == ("node_fault", "retry"), row.reason
    assert row.excluded_nodes == "n1" and [c[0] for c in slurm.actions()] == ["update"]   # Slurm requeued it


def test_budget_is_counted_across_attempts(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry:1")
    ended(world, comment="slurmtools=retry:1")
    assert controller(world).once()["decisions"][0]["decision"] == "retry"
    slurm.jobs_by_id[7] = dataclasses.replace(slurm.job(7), state="FAILED", state_reason="")
    ended(world, restart=1, nodes="n[3-4]", epilogs=("n3", "n4"), xid_on="n3", comment="slurmtools=retry:1")
    (d,) = controller(world).once()["decisions"]
    assert (d["decision"], d["reason"]) == ("no_retry", "retry budget spent (1 of 1 used)")
    with Session(api.engine_for(world["cfg"])) as s:
        chain = s.scalar(select(models.RetryChain))
        assert chain is not None and chain.status == "failed"


def test_lemon_node_gets_a_longer_exclusion(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    for job in (7, 8):
        slurm.add_job(job)
        ended(world, job_id=job)
    assert controller(world).once()["lemons"] == []            # two faults: not yet
    slurm.add_job(9)
    ended(world, job_id=9)
    (lemon,) = controller(world).once()["lemons"]
    assert (lemon["node"], lemon["faults"], lemon["ttl_s"], lemon["outcome"]) == ("n2", 3, 86400.0, "drained")
    assert slurm.node_list["n2"].reason.startswith("slurmtools: lemon: lemon node: 3 node faults")


def test_recovery_resumes_after_passes_and_judges_the_drain(world: dict[str, Any]) -> None:
    from slurmtools import drain

    slurm = world["slurm"]
    world["path"].write_text(world["path"].read_text().replace("[safety]", "[safety]\nmin_drain_nodes = 3"))
    cfg = world["cfg"] = config.load(world["path"], env={})
    verdicts = {"n1": ["ok", "ok"], "n2": ["fail", "ok", "ok"]}
    for node in ("n1", "n2"):
        _, evs = drain.request_drain(node, "hardware", "XID 79", job_id=7, actor="epilog", cfg=cfg, slurm=slurm)
        api.record(evs, cfg)
    _, evs = drain.request_drain("n3", "admin", "PSU", job_id=None, actor="admin:root", cfg=cfg, slurm=slurm)
    api.record(evs, cfg)
    api.flush(cfg)
    c = controller(world, recovery=True, deep_check=lambda node: (verdicts[node].pop(0), {}))
    rounds = [c.recover(force=True) for _ in range(3)]
    assert [(r["node"], r["verdict"], r["passes"]) for r in rounds[0]] == [("n1", "ok", 1), ("n2", "fail", 0)]
    assert rounds[1][0] == {"node": "n1", "verdict": "ok", "passes": 2, "resumed": "resumed", "outcome": "refuted",
                            "later_faults": 0}
    assert rounds[2][0]["outcome"] == "confirmed"             # n2 failed a deep check on the way
    assert slurm.node_list["n3"].drain                        # an admin's exclusion waits for the admin
    with Session(api.engine_for(cfg)) as s:
        outcomes = {x.node: x.outcome for x in s.scalars(select(models.Exclusion))}
    assert outcomes == {"n1": "refuted", "n2": "confirmed", "n3": None}


@pytest.mark.parametrize("superseded", [False, True])
def test_recovery_counts_only_later_faults_that_still_stand(world: dict[str, Any], superseded: bool) -> None:
    """A node fault found after the drain confirms it, unless a later finding superseded it (the same rule as the
    controller's classification: diagnosis.faults.is_node_fault)."""
    from slurmtools import drain

    slurm, cfg = world["slurm"], world["cfg"]
    _, evs = drain.request_drain("n1", "hardware", "XID 48", job_id=7, actor="controller", cfg=cfg, slurm=slurm)
    api.record(evs, cfg)
    api.flush(cfg)
    api.record([Event("finding", {"node": "n1", "job_id": 8, "restart_count": 0, "source": "kernel", "kind": "xid",
                                  "xid": 48, "category": "hardware", "severity": "critical", "action": "drain_node",
                                  "trust": "kernel", "message": "DBE",
                                  "details": {"superseded_by": 99} if superseded else {}}, cluster=cfg.cluster)],
               cfg)
    api.flush(cfg)
    c = controller(world, recovery=True, deep_check=lambda node: ("ok", {}))
    rows = [r for _ in range(2) for r in c.recover(force=True)]
    assert (rows[-1]["later_faults"], rows[-1]["outcome"]) == ((0, "refuted") if superseded else (1, "confirmed"))


def test_a_fault_only_a_reboot_clears_waits_for_the_reboot_and_is_never_refuted(world: dict[str, Any]) -> None:
    """XID 79 (NVIDIA: restart the machine): deep checks that pass in the boot the drain happened in count for
    nothing; after a reboot they return the node, and the drain is confirmed (the kernel's XID was real)."""
    from slurmtools import drain

    slurm, cfg = world["slurm"], world["cfg"]
    api.record([Event("finding", {"node": "n2", "job_id": 7, "restart_count": 0, "source": "kernel", "kind": "xid",
                                  "xid": 79, "category": "hardware", "severity": "critical", "action": "drain_node",
                                  "trust": "kernel", "message": "GPU has fallen off the bus"}, cluster=cfg.cluster)],
               cfg)
    _, evs = drain.request_drain("n2", "hardware", "XID 79", job_id=7, actor="epilog", cfg=cfg, slurm=slurm,
                                  evidence={"boot_id": "boot-A"})
    api.record(evs, cfg)
    api.flush(cfg)
    boots = ["boot-A", "boot-A", "boot-A", "boot-B", "boot-B"]
    c = controller(world, recovery=True, deep_check=lambda node: ("ok", {"boot_id": boots.pop(0)}))
    rounds = [c.recover(force=True) for _ in range(5)]
    assert [r[0]["verdict"] for r in rounds] == ["waiting", "waiting", "waiting", "ok", "ok"]
    assert [r[0]["passes"] for r in rounds] == [0, 0, 0, 1, 2]
    assert slurm.node_list["n2"].drain is False and rounds[4][0]["outcome"] == "confirmed"
    with Session(api.engine_for(cfg)) as s:
        (x,) = s.scalars(select(models.Exclusion))
        checks = [n.details for n in s.scalars(select(models.NodeStateChange).where(
            models.NodeStateChange.action == "deep_check"))]
    assert x.outcome == "confirmed" and x.details["boot_id"] == "boot-A"
    assert [c_["verdict"] for c_ in checks] == ["waiting", "waiting", "waiting", "ok", "ok"]
    assert checks[0]["waiting_for"] == "reboot"


def test_a_node_drain_that_failed_on_the_node_is_completed_by_the_controller(world: dict[str, Any]) -> None:
    """The epilog found XID 79 but could not reach Slurm (outcome `error`): the controller drains the node through
    the same rails, once; a node resumed or drained since is left alone."""
    from slurmtools import drain
    from slurmtools.slurm import SlurmError

    slurm, cfg = world["slurm"], world["cfg"]

    class Down:
        def nodes(self, names: list[str] | None = None) -> list[Any]:
            raise SlurmError("cannot run sinfo: [Errno 22] Invalid argument")

    for node in ("n1", "n3"):
        decision, evs = drain.request_drain(node, "hardware", "XID 79 GPU 0000:18:00: GPU has fallen off the bus",
                                             job_id=41, actor="epilog", cfg=cfg, slurm=Down())
        assert decision.outcome == "error"
        api.record(evs, cfg)
    slurm.drain(["n3"], "slurmtools: admin: reseated")
    _, ev = drain.request_resume("n3", cfg=cfg, slurm=slurm, actor="admin:root", why="fixed by hand")
    api.record([ev], cfg)
    api.flush(cfg)
    c = controller(world)
    assert c.once()["redrains"] == [{"node": "n1", "job_id": 41, "outcome": "drained"}]
    info = slurm.node_list["n1"]
    assert info.drain and info.reason == "slurmtools: hardware: XID 79 GPU 0000:18:00: GPU has fallen off the bus " \
                                        "[job 41]"
    assert not slurm.node_list["n3"].drain                     # resumed after its failed drain: left alone
    assert controller(world).once()["redrains"] == []           # once


def test_the_drain_records_the_boot_it_happened_in(world: dict[str, Any], tmp_path: Path) -> None:
    """A node's own drain (prolog, epilog) says which boot it happened in, as the node's checks see it."""
    from slurmtools import drain
    from slurmtools.checks.runner import node_boot_id

    slurm, cfg = world["slurm"], world["cfg"]
    real = node_boot_id(cfg, "n1")
    assert real == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    _, evs = drain.request_drain("n1", "hardware", "XID 79", job_id=7, actor="epilog", cfg=cfg, slurm=slurm)
    assert evs[0].data["details"]["boot_id"] == real and evs[1].data["details"]["boot_id"] == real
    _, evs = drain.request_drain("n3", "hardware", "x", job_id=None, actor="controller", cfg=cfg, slurm=slurm)
    assert "boot_id" not in evs[0].data["details"]              # not on the node: it cannot say


def test_breaker_status(world: dict[str, Any]) -> None:
    from slurmtools import drain

    slurm, cfg = world["slurm"], world["cfg"]
    assert drain.breaker_status(cfg, slurm)["open"] is False
    slurm.drain(["n1", "n2"], "slurmtools: hardware: x")
    status = drain.breaker_status(cfg, slurm)
    assert (status["open"], status["drained_by_us"], status["limit"]) == (True, ["n1", "n2"], 2)



class RacingSlurm(FakeSlurm):
    """Drains of several nodes landing at the same second, as epilogs on every node at once do."""

    def __init__(self, together: list[str]) -> None:
        super().__init__()
        self.together = together

    def drain(self, nodes: list[str], reason: str) -> None:
        when = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
        for n in self.together:
            self.node_list[n] = dataclasses.replace(self.node_list[n], flags=("DRAIN",), reason=reason,
                                                    reason_time=when)
        self.calls.append(("drain", tuple(nodes), reason))


@pytest.mark.parametrize(("me", "kept"), [("n1", True), ("n2", True), ("n3", False), ("n4", False)])
def test_simultaneous_drains_past_the_limit_undo_themselves(world: dict[str, Any], me: str, kept: bool) -> None:
    from slurmtools import drain

    world["path"].write_text(world["path"].read_text().replace("settle = 0.0", "settle = 0.01"))
    cfg = config.load(world["path"], env={})
    slurm = RacingSlurm(["n1", "n2", "n3", "n4"])
    decision, events = drain.request_drain(me, "hardware", "XID 79", job_id=1, actor="epilog", cfg=cfg, slurm=slurm)
    assert decision.applied is kept and decision.outcome == ("drained" if kept else "breaker_open")
    assert slurm.node_list[me].drain is kept
    assert [e.type for e in events] == (["node_state", "exclusion"] if kept else ["node_state"])


def test_mass_implication_is_not_retried(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, nodes=("n1", "n2", "n3", "n4"), comment="slurmtools=retry")
    cfg = world["cfg"]
    events = [Event("finding", {"node": n, "job_id": 7, "restart_count": 0, "source": "kernel", "kind": "xid",
                                "xid": 79, "category": "hardware", "severity": "critical", "action": "drain_node",
                                "trust": "kernel", "message": "XID 79"}, cluster=cfg.cluster)
              for n in ("n1", "n2", "n3")]
    api.record(events, cfg)
    ended(world, nodes="n[1-4]", epilogs=("n1", "n2", "n3", "n4"), xid_on="n4", comment="slurmtools=retry")
    report = controller(world).once()
    (d,) = report["decisions"]
    assert d["decision"] == "no_retry" and "4 nodes implicated at once" in d["reason"]
    assert report["alerts"] and slurm.actions() == []


def test_status_and_why_tell_the_chain(world: dict[str, Any]) -> None:
    from slurmtools.jobs import status as jobstatus

    slurm, cfg = world["slurm"], world["cfg"]
    slurm.add_job(7, comment="slurmtools=retry:2")
    ended(world, comment="slurmtools=retry:2")
    api.record([Event("node_state", {"node": "n2", "action": "drain", "actor": "epilog", "applied": True,
                                     "reason": "slurmtools: hardware: XID 79", "details": {"job_id": "7"}},
                      cluster=cfg.cluster)], cfg)
    controller(world).once()
    slurm.start(7, ("n3", "n4"))
    with Session(api.engine_for(cfg)) as s:
        status = jobstatus.chain(s, cfg.cluster, 7, slurm.job(7))
    assert status["chain"] == {"max_retries": 2, "retry_on": "node", "retries_used": 1, "status": "active"}
    (a,) = status["attempts"]
    assert (a["nodes"], a["drained"], a["decision"]["decision"], a["findings"][0]["xid"]) == ("n[1-2]", ["n2"],
                                                                                              "retry", 79)
    text = jobstatus.why(status)
    assert "Attempt 1 stopped at " in text and "on n[1-2]: XID 79 on n2." in text
    assert "n2 was taken out of service. The controller requeued the job at " in text and "away from n2." in text
    assert text.endswith("on n3,n4 and is running.")
    with Session(api.engine_for(cfg)) as s:
        assert jobstatus.why(jobstatus.chain(s, cfg.cluster, 99)) == "slurmtools has no record of job 99."
        (mine,) = jobstatus.mine(s, cfg.cluster, "alice", {7: slurm.job(7)})
        assert jobstatus.mine(s, cfg.cluster, "bob", {}) == []
    assert (mine["job_id"], mine["status"], mine["retries_used"], mine["last"], mine["now"]["state"]) == (
        7, "active", 1, "attempt 1: node_fault -> retry", "RUNNING")


@pytest.mark.parametrize("actions", ['["reset_gpu", "reboot_node", "drain_node"]', '["reset_gpu", "reboot_node"]'])
def test_why_agrees_with_the_controller_on_what_is_a_node_fault(world: dict[str, Any], actions: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`controller.node_fault_actions` is the one answer: without drain_node in it, an XID whose action is
    drain_node is no node fault for the controller (nothing excluded), and `slurmtools why` does not say the
    node was taken out for it either."""
    from click.testing import CliRunner

    from slurmtools.cli import main

    world["path"].write_text(world["path"].read_text().replace("[controller]",
                                                               f"[controller]\nnode_fault_actions = {actions}"))
    cfg = world["cfg"] = config.load(world["path"], env={})
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry:2:any")
    ended(world, comment="slurmtools=retry:2:any")
    api.record([Event("node_state", {"node": "n2", "action": "drain", "actor": "epilog", "applied": True,
                                     "reason": "slurmtools: hardware: XID 79", "details": {"job_id": "7"}},
                      cluster=cfg.cluster)], cfg)
    (d,) = controller(world).once()["decisions"]
    fault = "drain_node" in actions
    assert d["classification"] == ("node_fault" if fault else "app_fault")
    assert d["implicated"] == (["n2"] if fault else [])
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    monkeypatch.setattr("slurmtools.slurm.get_client", lambda cfg: slurm)
    config.reset()
    try:
        res = CliRunner().invoke(main, ["why", "7"])
    finally:
        config.reset()
    assert res.exit_code == 0, res.output
    assert ("n2 was taken out of service" in res.output) == fault


def test_a_completing_job_is_waited_for_not_failed(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, state="COMPLETING", comment="slurmtools=retry")
    ended(world, comment="slurmtools=retry")
    first = controller(world).once()
    assert first["waiting"][0]["completing"] and first["decisions"] == []
    slurm.jobs_by_id[7] = dataclasses.replace(slurm.job(7), state="FAILED")
    assert controller(world).once()["decisions"][0]["status"] == "done"
    # decided while the job was still completing (evidence_wait ran out): acting waits, tries not spent
    slurm.add_job(8, state="COMPLETING", comment="slurmtools=retry")
    ended(world, job_id=8, comment="slurmtools=retry", enqueued=0.0)
    for _ in range(4):
        assert controller(world).once()["decisions"][0]["status"] == "acting"
    slurm.jobs_by_id[8] = dataclasses.replace(slurm.job(8), state="FAILED")
    assert controller(world).once()["decisions"][0]["status"] == "done"


# ------------------------------------------------------------------------------ evacuation
def wrapped_job(w: dict[str, Any], job_id: int = 7, checkpoint: dict[str, Any] | None = None,
                nodes: tuple[str, ...] = ("n1", "n2")) -> None:
    """A running job submitted by `slurmtools sbatch` (its record dropped for the controller)."""
    import getpass
    import os

    w["slurm"].add_job(job_id, state="RUNNING", nodes=nodes, comment="slurmtools=retry:3:node")
    w["slurm"].jobs_by_id[job_id] = dataclasses.replace(w["slurm"].jobs_by_id[job_id], user=getpass.getuser())
    drop = w["cfg"].controller.submit_dir
    os.makedirs(drop, exist_ok=True)
    Path(drop, f"{job_id}.json").write_text(json.dumps({
        "job_id": job_id, "max_retries": 3, "retry_on": "node", "argv": ["sbatch", "train.sh"],
        "checkpoint": checkpoint}))


def admin_drain(w: dict[str, Any], node: str, reason: str = "slurmtools: admin: reseating cables") -> None:
    w["slurm"].drain([node], reason)
    w["slurm"].node_list[node] = dataclasses.replace(w["slurm"].node_list[node], state="mixed")   # busy: draining


def test_a_busy_node_taken_out_gets_its_job_signalled_then_requeued_away(world: dict[str, Any],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import time as _time

    from slurmtools.controller import engine

    wrapped_job(world, checkpoint={"signal": "USR1", "grace": 30})
    admin_drain(world, "n2")
    first = controller(world).once()["evacuations"]
    assert [(e["job_id"], e["status"]) for e in first] == [(7, "evacuating")]
    assert ("signal", 7, "USR1", True) in world["slurm"].calls and world["slurm"].actions() == []
    assert controller(world).once()["evacuations"][0]["waiting"] == "grace"       # a restart: no second signal
    assert sum(c[0] == "signal" for c in world["slurm"].calls) == 1
    now = _time.time()
    monkeypatch.setattr(engine.time, "time", lambda: now + 31)
    (done,) = controller(world).once()["evacuations"]
    assert done["status"] == "done"
    assert world["slurm"].actions() == [("requeue", 7, True), ("update", 7, ("n2",), "now+2"), ("release", 7)]
    (d,) = decisions(world)
    assert (d.classification, d.decision, d.excluded_nodes) == ("evacuation", "retry", "n2")
    assert "n2 taken out of service while the job ran (n2: slurmtools: admin: reseating cables)" in d.reason
    with Session(api.engine_for(world["cfg"])) as s:
        chain = s.scalar(select(models.RetryChain))
        assert chain is not None and chain.retries_used == 0      # planned, not a failure: no budget spent
    ended(world, job_id=7, restart=0, comment="slurmtools=retry:3:node")   # its EpilogSlurmctld item
    assert controller(world).once()["decisions"][0]["status"] == "done"
    assert len(world["slurm"].actions()) == 3                    # never requeued twice


def test_an_attempt_that_saves_and_exits_in_its_grace_is_still_moved(world: dict[str, Any]) -> None:
    wrapped_job(world, checkpoint={"signal": "USR1", "grace": 600})
    admin_drain(world, "n2")
    controller(world).once()
    world["slurm"].jobs_by_id[7] = dataclasses.replace(world["slurm"].jobs_by_id[7], state="COMPLETED",
                                                       exit=ExitStatus(0, 0))     # its trap saved and exited
    ended(world, job_id=7, exit_raw=0, comment="slurmtools=retry:3:node", xid_on=None)
    (d,) = controller(world).once()["decisions"]
    assert (d["classification"], d["status"]) == ("evacuation", "done")
    assert world["slurm"].actions()[0] == ("requeue", 7, True)


@pytest.mark.parametrize("on", [True, False])
def test_a_job_on_a_node_detect_flagged_is_evacuated_before_the_failure(world: dict[str, Any], on: bool) -> None:
    from slurmtools import drain

    wrapped_job(world, checkpoint={"signal": "USR1", "grace": 0})
    wrapped_job(world, job_id=8, nodes=("n2",), checkpoint={"signal": "USR1", "grace": 0})
    world["cfg"].detect.evacuate = on
    ev = drain.exclusion_event(world["cfg"], "n1", "soft", "slurmtools: hardware: anomaly thermal 3 (metrics)",
                                "detect", ttl_s=3600)
    api.store_now([ev], world["cfg"])
    admin = drain.exclusion_event(world["cfg"], "n2", "soft", "admin: watch it", "admin:root", ttl_s=3600)
    api.store_now([admin], world["cfg"])         # an admin's soft exclusion moves nobody
    first = controller(world).once()["evacuations"]
    if not on:
        assert first == [] and not [c for c in world["slurm"].calls if c[0] == "signal"]
        return
    assert [(e["job_id"], e["status"]) for e in first] == [(7, "evacuating")]
    controller(world).once()
    assert world["slurm"].actions()[:2] == [("requeue", 7, True), ("update", 7, ("n1", "n2"), "now+2")]
    (d,) = decisions(world)
    assert "flagged by detect" in d.reason and d.classification == "evacuation"


@pytest.mark.parametrize("case", ["no checkpoint signal", "admin's own drain", "evacuate off", "idle drained"])
def test_jobs_left_alone(world: dict[str, Any], case: str) -> None:
    wrapped_job(world, checkpoint=None if case == "no checkpoint signal" else {"signal": "USR1", "grace": 0})
    if case == "admin's own drain":
        admin_drain(world, "n2", reason="admin: replacing PSU")
    else:
        admin_drain(world, "n2")
    if case == "idle drained":
        world["slurm"].node_list["n2"] = dataclasses.replace(world["slurm"].node_list["n2"], state="idle")
    if case == "evacuate off":
        world["cfg"].controller.evacuate = False
    assert controller(world).once()["evacuations"] == []
    assert not [c for c in world["slurm"].calls if c[0] in ("signal", "requeue")]


# --------------------------------------------------------------------------- resubmission
TRAIN_SH = "#!/bin/bash\n#SBATCH --time=10\necho training \"$@\"\n"


def recorded_job(w: dict[str, Any], job_id: int = 7, script: str | None = TRAIN_SH, wrap: bool = False,
                 checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """A job submitted with `slurmtools sbatch` (its full record, as record_submission writes it), ingested
    by the controller while it ran."""
    import getpass
    import os

    user_argv = (["-N", "2", "--wrap", "python train.py"] if wrap else
                 ["-N", "2", "--exclude=n4", "/home/alice/train.sh", "--lr", "3e-4", "a b"])
    record = {"job_id": job_id, "uid": os.getuid(), "user_argv": user_argv, "argv": ["sbatch", *user_argv],
              "added": [], "cwd": "/home/alice/run", "env": {"PATH": "/opt/conda/bin:/usr/bin", "NCCL_DEBUG": "WARN"},
              "script": None if wrap else script, "max_retries": 3, "retry_on": "node", "checkpoint": checkpoint}
    w["slurm"].add_job(job_id, state="RUNNING", nodes=("n1", "n2"), comment="slurmtools=retry:3:node")
    w["slurm"].jobs_by_id[job_id] = dataclasses.replace(w["slurm"].jobs_by_id[job_id], user=getpass.getuser())
    drop = w["cfg"].controller.submit_dir
    os.makedirs(drop, exist_ok=True)
    Path(drop, f"{job_id}.json").write_text(json.dumps(record))
    assert controller(w).once()["submissions"] == [job_id]
    return record


def purged(w: dict[str, Any], job_id: int = 7) -> None:
    """The attempt failed on n2 (XID 79) and slurmctld forgot the job (MinJobAge) before the controller acted."""
    del w["slurm"].jobs_by_id[job_id]
    ended(w, job_id=job_id, comment="slurmtools=retry:3:node")


def submits(w: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [c for c in w["slurm"].calls if c[0] == "submit"]


def test_a_purged_job_is_resubmitted_from_its_record_and_keeps_its_chain(world: dict[str, Any]) -> None:
    import getpass
    import os

    from slurmtools.jobs import status as jobstatus

    slurm, cfg = world["slurm"], world["cfg"]
    record = recorded_job(world, checkpoint={"signal": "USR1", "grace": 30})
    purged(world)
    (d,) = controller(world).once()["decisions"]
    assert (d["classification"], d["decision"], d["status"]) == ("node_fault", "retry", "done"), d
    ((_, new, argv, env, cwd, user, body),) = submits(world)
    assert d["resubmitted_as"] == new and user == getpass.getuser() and cwd == "/home/alice/run"
    assert body == TRAIN_SH and not os.path.exists(argv[-4])            # the script copy, removed once submitted
    assert list(argv[-3:]) == ["--lr", "3e-4", "a b"]                    # the user's arguments, unchanged
    assert list(argv[:3]) == ["-N", "2", "--exclude=n[2,4]"]             # their exclude, merged with the faulty node
    assert "--comment=slurmtools=retry:3:node slurmtools=resubmit-of:7.0" in argv
    assert {"--requeue", "--open-mode=append", "--signal=B:USR1@30", "--job-name=train.sh"} <= set(argv)
    assert env["PATH"] == record["env"]["PATH"] and env["NCCL_DEBUG"] == "WARN"
    assert slurm.job(new).excluded_nodes == ("n2", "n4")
    with Session(api.engine_for(cfg)) as s:
        chain = s.scalar(select(models.RetryChain))
        assert chain is not None and (chain.retries_used, chain.status) == (1, "active")
        link = s.scalar(select(models.ChainJob))
        assert link is not None and (link.job_id, link.chain_id) == (new, chain.id)
    # the new job fails too: the same chain, its budget, a plain requeue of the new id away from both nodes
    slurm.jobs_by_id[new] = dataclasses.replace(slurm.job(new), state="FAILED", nodes=("n1", "n3"))
    ended(world, job_id=new, nodes="n1,n3", xid_on="n3", epilogs=("n1", "n3"), comment=slurm.job(new).comment)
    (d2,) = controller(world).once()["decisions"]
    assert (d2["job_id"], d2["decision"], d2["status"]) == (new, "retry", "done")
    assert set(slurm.job(new).excluded_nodes) == {"n2", "n3", "n4"} and len(submits(world)) == 1
    slurm.start(new, ("n1", "n4"))
    running = controller(world).once()["running"]
    assert {(r["job_id"], r.get("resubmitted_from")) for r in running} == {(new, 7), (new, None)}
    assert all(x.t_running is not None for x in decisions(world))   # both recoveries timed to the start
    with Session(api.engine_for(cfg)) as s:
        assert s.scalar(select(models.RetryChain)).retries_used == 2
        status = jobstatus.chain(s, cfg.cluster, 7, slurm.job(new))
        assert status == {**jobstatus.chain(s, cfg.cluster, new, slurm.job(new)), "job_id": 7}   # either id: all
    assert status["jobs"] == [7, new] and [(a["job_id"], a["restart_count"]) for a in status["attempts"]] == [
        (7, 0), (new, 0)]
    text = jobstatus.why(status)
    assert "Attempt 1 (job 7) stopped" in text and f"resubmitted it as job {new} at" in text, text
    assert f"Attempt 2 (job {new}) stopped" in text and "The controller requeued the job at" in text
    assert "Attempt 3 started at " in text and text.endswith("on n1,n4 and is running."), text


def test_a_wrap_job_is_resubmitted_without_a_script(world: dict[str, Any]) -> None:
    recorded_job(world, wrap=True)
    purged(world)
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "done"
    ((*_, argv, _env, _cwd, _user, body),) = submits(world)
    at = argv.index("--wrap")
    assert body is None and argv[at + 1] == "python train.py" and not any(a.startswith("--job-name") for a in argv)


@pytest.mark.parametrize("case", ["comment marker only", "no script copy", "script truncated", "resubmit off"])
def test_a_purged_job_that_cannot_be_resubmitted_is_not_retried(world: dict[str, Any], case: str) -> None:
    if case == "comment marker only":
        world["slurm"].add_job(7, comment="slurmtools=retry:3:node")
    else:
        recorded_job(world, script=None if case == "no script copy" else "#!/bin/bash\n" + "x" * 70000)
    if case == "resubmit off":
        world["cfg"].controller.resubmit = False
    purged(world)
    (d,) = controller(world).once()["decisions"]
    expected = {"comment marker only": "not submitted through `slurmtools sbatch`",
                "no script copy": "no copy of its batch script was kept",
                "script truncated": "larger than controller.script_copy_max_bytes",
                "resubmit off": "resubmission is off"}[case]
    assert (d["decision"], d["status"]) == ("no_retry", "done") and expected in d["reason"], d["reason"]
    assert "left slurmctld's memory" in d["reason"] and submits(world) == []


@pytest.mark.parametrize("where", ["command line", "script"])
def test_a_job_array_is_not_resubmitted(world: dict[str, Any], where: str) -> None:
    if where == "script":
        recorded_job(world, script="#!/bin/bash\n#SBATCH --array=0-99\necho $SLURM_ARRAY_TASK_ID\n")
    else:
        recorded_job(world)
        with Session(api.engine_for(world["cfg"])) as s:
            chain = s.scalar(select(models.RetryChain))
            chain.details = {**chain.details, "user_argv": ["-a", "0-99", *chain.details["user_argv"]]}
            s.commit()
    purged(world)
    report = controller(world).once()
    (d,) = report["decisions"]
    assert d["status"] == "failed" and "job array" in d["error"] and report["alerts"] and submits(world) == []


def test_a_refused_sbatch_is_tried_again(world: dict[str, Any]) -> None:
    recorded_job(world)
    purged(world)
    world["slurm"].fail_next["submit"] = 1             # sbatch said no: nothing was submitted
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "acting" and "submit failed" in d["error"]
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "done" and len(submits(world)) == 1


@pytest.mark.parametrize("submitted", [True, False])
def test_a_controller_that_died_in_sbatch_never_submits_twice(world: dict[str, Any], submitted: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from slurmtools.slurm.types import SlurmTimeout

    slurm = world["slurm"]
    recorded_job(world)
    purged(world)
    real = slurm.submit

    def timed_out(argv: list[str], **kw: Any) -> int:
        if submitted:
            real(argv, **kw)                               # slurmctld took it; the answer never came
        raise SlurmTimeout(["sbatch"], 60)

    monkeypatch.setattr(slurm, "submit", timed_out)
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "acting"
    monkeypatch.setattr(slurm, "submit", real)
    report = controller(world).once()                      # a restarted controller
    (d,) = report["decisions"]
    assert len(submits(world)) == int(submitted)
    if submitted:
        assert d["status"] == "done" and d["resubmitted_as"] == submits(world)[0][1]
    else:
        assert d["status"] == "failed" and "not submitted twice" in d["error"] and report["alerts"]
        with Session(api.engine_for(world["cfg"])) as s:
            assert s.scalar(select(models.RetryChain)).status == "failed"


def test_a_job_forgotten_between_the_decision_and_the_requeue_is_resubmitted(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    recorded_job(world)
    slurm.jobs_by_id[7] = dataclasses.replace(slurm.job(7), state="COMPLETING")
    ended(world, comment="slurmtools=retry:3:node", enqueued=0.0)   # decided while its epilogs still ran
    assert controller(world).once()["decisions"][0]["status"] == "acting" and submits(world) == []
    del slurm.jobs_by_id[7]
    (d,) = controller(world).once()["decisions"]
    assert d["status"] == "done" and d["resubmitted_as"] == submits(world)[0][1]
    assert [c[0] for c in slurm.calls if c[0] in ("requeue", "submit")] == ["submit"]


@pytest.mark.parametrize("accounted_user", ["owner", "someone else", None])
def test_a_controller_that_was_down_past_min_job_age_still_resubmits(world: dict[str, Any],
                                                                      accounted_user: str | None) -> None:
    """The submission record was dropped while the controller was down; by the time it runs, slurmctld has
    forgotten the job: the accounting says whose job it was (and the record's owner must be that user)."""
    import getpass
    import os
    from types import SimpleNamespace

    slurm = world["slurm"]
    recorded = {"job_id": 7, "uid": os.getuid(), "user_argv": ["--wrap", "python train.py"], "cwd": "/srv/run",
                "env": {}, "script": None, "max_retries": 1, "retry_on": "node", "checkpoint": None}
    drop = world["cfg"].controller.submit_dir
    os.makedirs(drop, exist_ok=True)
    Path(drop, "7.json").write_text(json.dumps(recorded))
    if accounted_user:
        user = getpass.getuser() if accounted_user == "owner" else "someone-else"
        slurm.history.append(SimpleNamespace(job_id_raw=7, user=user))
    ended(world, comment="slurmtools=retry:1:node")
    report = controller(world).once()
    (d,) = report["decisions"]
    if accounted_user == "owner":
        assert report["submissions"] == [7]
        assert (d["decision"], d["status"]) == ("retry", "done") and d["resubmitted_as"] == submits(world)[0][1]
    else:     # a record nobody can vouch for is not believed: the job is not resubmitted
        assert report["submissions"] == [] and submits(world) == []
        assert d["decision"] == "no_retry" and "not submitted through `slurmtools sbatch`" in d["reason"]
        assert Path(drop, "7.json").exists() == (accounted_user is None)   # kept a while in case it shows up


@pytest.mark.parametrize("theirs", ["s0000000000002", None])
def test_a_reused_job_id_is_never_requeued_for_another_runs_failure(world: dict[str, Any], theirs: str | None) -> None:
    """25.11+: the run that ended (its SLURM_JOB_SLUID) is not the run slurmctld shows under that job id and restart
    count (squeue's step_id.sluid): another job took the id. Left alone. Without squeue's SLUID (older releases,
    pyslurm), the job id and restart count decide as before: requeued."""
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry:2")
    slurm.jobs_by_id[7] = dataclasses.replace(slurm.job(7), sluid=theirs)
    ended(world, comment="slurmtools=retry:2", sluid="s0000000000001")
    controller(world).once()
    acted = [c for c in slurm.calls if c[0] in ("requeue", "update", "release")]
    assert (acted == []) == (theirs is not None)


def test_the_same_run_by_sluid_is_requeued(world: dict[str, Any]) -> None:
    slurm = world["slurm"]
    slurm.add_job(7, comment="slurmtools=retry:2")
    slurm.jobs_by_id[7] = dataclasses.replace(slurm.job(7), sluid="s0000000000001")
    ended(world, comment="slurmtools=retry:2", sluid="s0000000000001")
    assert controller(world).once()["decisions"][0]["status"] == "done"
    assert slurm.actions() == [("requeue", 7, True), ("update", 7, ("n2",), "now+2"), ("release", 7)]
