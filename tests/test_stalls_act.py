"""Acting on a stalled job through the rails (stalls/act.py): the finding with its evidence, observe mode, the
requeue the controller finishes (counted against the chain's budget, the suspect excluded for the chain), the
give-up, the breaker, the suspect's deep check; notifications in the background (stalls/notify.py)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.controller.engine import Controller
from slurmtools.ledger import api, models
from slurmtools.stalls import act, notify

from .fakes import FakeSlurm


class Slurm(FakeSlurm):
    def cancel(self, job_id: int) -> None:
        self.calls.append(("cancel", job_id))


def setup(world: dict[str, Any], extra: str = "") -> tuple[Any, Slurm]:
    path = world["path"]
    path.write_text(path.read_text() + f"[stalls]\nact = true\nstate_file = \"{world['tmp']}/st.json\"\n" + extra)
    cfg = config.load(path, env={})
    slurm = Slurm()
    return cfg, slurm


def result(job_id: int, suspect: str | None = "n2", nodes: tuple[str, ...] = ("n1", "n2")) -> dict[str, Any]:
    return {"job_id": job_id, "restart_count": 0, "stalled": True, "suspect": suspect, "quiet_s": 1900.0,
            "allowed_s": 1200.0, "gpu": "hung", "nodes": list(nodes), "last_progress": time.time() - 1900,
            "partition": "gpu", "evidence": {"why": "stalled", "gpu": {}, "limits": {},
                                              "blame": {suspect: ["gpu"]} if suspect else {},
                                              "nodes": {"n2": {"stacks": {"1": "x" * 400_000}}}}}


def decisions(cfg: Any, job_id: int) -> list[models.ControllerDecision]:
    with Session(api.engine_for(cfg)) as s:
        return list(s.scalars(select(models.ControllerDecision).where(models.ControllerDecision.job_id == job_id)))


def test_observe_mode_records_the_stall_with_its_evidence_and_does_nothing(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world, "")
    cfg.stalls.act = False
    slurm.add_job(5, state="RUNNING", comment="slurmtools=retry")
    events, out = act.act_on(cfg, slurm, api.engine_for(cfg), [result(5)])
    assert [o["outcome"] for o in out] == ["observe"] and slurm.calls == []
    (ev,) = events
    assert ev.data["kind"] == "stall" and ev.data["node"] == "n2" and ev.data["trust"] == "metrics"
    assert "suspect n2 (gpu differ)" in ev.data["message"]
    assert len(str(ev.data["details"])) < act.MAX_EVIDENCE + 10_000       # the huge stack was cut
    api.record(events, cfg)
    api.flush(cfg)
    api.record(events, cfg)                                               # the same stall seen twice: one finding
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        assert len(list(s.scalars(select(models.Finding).where(models.Finding.kind == "stall")))) == 1


def test_act_mode_requeues_through_the_controller_away_from_the_suspect(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world)
    slurm.add_job(6, state="RUNNING", nodes=("n1", "n2"), comment="slurmtools=retry:2")
    engine = api.engine_for(cfg)
    _, out = act.act_on(cfg, slurm, engine, [result(6)])
    (o,) = out
    assert o["outcome"] == "requeued" and o["excluded"] == ["n2"]
    (d,) = decisions(cfg, 6)
    assert (d.classification, d.decision, d.status) == ("stall", "retry", "evacuating")
    with Session(engine) as s:
        (chain,) = s.scalars(select(models.RetryChain))
        assert chain.retries_used == 1                                    # counted against the budget
    again = act.act_on(cfg, slurm, engine, [result(6)])[1]
    assert again[0]["outcome"] == "already"                               # one decision per attempt
    Controller(cfg, slurm=slurm, engine=engine, recovery=False).once()   # the controller finishes it
    assert [c[0] for c in slurm.actions()] == ["requeue", "update", "release"]
    assert slurm.job(6).restart_count == 1 and slurm.job(6).excluded_nodes == ("n2",)
    (d,) = decisions(cfg, 6)
    assert d.status == "done" and d.t_requeued is not None and d.t_verified is not None


def test_the_checkpoint_signal_first_and_no_suspect_no_exclusion(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world)
    slurm.add_job(7, state="RUNNING", comment="slurmtools=retry")
    engine = api.engine_for(cfg)
    with Session(engine) as s:
        chain = models.RetryChain(idempotency_key="c7", cluster=cfg.cluster, root_job_id=7, created=models_now(),
                                  max_retries=3, retry_on="node", status="active", retries_used=0,
                                  details={"checkpoint": {"signal": "USR1", "grace": 300}})
        s.add(chain)
        s.flush()
        s.add(models.ChainJob(cluster=cfg.cluster, job_id=7, chain_id=chain.id, created=models_now()))
        s.commit()
    _, out = act.act_on(cfg, slurm, engine, [result(7, suspect=None)])
    assert out[0]["outcome"] == "requeued" and out[0]["excluded"] == []
    assert ("signal", 7, "USR1", True) in slurm.calls
    Controller(cfg, slurm=slurm, engine=engine, recovery=False).once()
    assert slurm.actions() == []                                          # within its grace: not yet requeued


def models_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_budget_spent_cancels_and_unmanaged_jobs_are_only_told(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world)
    slurm.add_job(8, state="RUNNING", comment="slurmtools=retry:0")
    slurm.add_job(9, state="RUNNING", comment="")
    _, out = act.act_on(cfg, slurm, api.engine_for(cfg), [result(8), result(9)])
    assert [o["outcome"] for o in out] == ["gave_up", "not_managed"]
    assert ("cancel", 8) in slurm.calls and ("cancel", 9) not in slurm.calls
    (d,) = decisions(cfg, 8)
    assert d.decision == "no_retry" and "budget spent" in d.reason


def test_never_more_than_the_breaker_allows(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world)
    for j in (10, 11, 12):
        slurm.add_job(j, state="RUNNING", comment="slurmtools=retry")
    _, out = act.act_on(cfg, slurm, api.engine_for(cfg), [result(10), result(11), result(12)])
    assert {o["outcome"] for o in out} == {"shared_cause"} and slurm.calls == []     # 3 stalls > limit 2
    slurm.drain(["n3", "n4"], "slurmtools: hardware: x")
    _, out = act.act_on(cfg, slurm, api.engine_for(cfg), [result(10)])
    assert out[0]["outcome"] == "breaker_open"


def test_the_suspect_is_deep_checked_once_free_and_a_failure_drains_it(world: dict[str, Any]) -> None:
    cfg, slurm = setup(world)
    pending: dict[str, Any] = {}
    act.schedule(pending, [{"outcome": "requeued", "suspect": "n2", "job_id": 6}], cfg)
    seen: list[str] = []

    def check(c: Any, node: str) -> tuple[str, dict[str, Any]]:
        seen.append(node)
        return "fail", {"failed": ["gpu"]}

    events, done = act.run_deep_checks(cfg, slurm, pending, busy={"n2"}, check=check)
    assert seen == [] and events == [] and "n2" in pending                  # a job runs there: not yet
    events, done = act.run_deep_checks(cfg, slurm, pending, busy=set(), check=check)
    assert seen == ["n2"] and pending == {} and done[0]["drain"] == "drained"
    assert slurm.node_list["n2"].reason.startswith("slurmtools: hardware: deep check failed after job 6")


def test_notifications_retry_in_the_background_and_never_block() -> None:
    tries: list[str] = []

    def flaky(urls: list[str], title: str, body: str) -> bool:
        tries.append(title)
        if len(tries) < 3:
            raise ConnectionError("down")
        return True

    n = notify.Notifier(retries=4, sender=flaky, base_delay=0.01)
    t0 = time.monotonic()
    assert n.send(["json://localhost"], "job 6 stalled", "body")
    assert time.monotonic() - t0 < 0.05
    assert n.wait(5.0) and n.delivered == ["job 6 stalled"] and len(tries) == 3
    never = notify.Notifier(retries=2, sender=lambda *a: False, base_delay=0.01)
    never.send(["x://"], "t", "b")
    assert never.wait(5.0) and never.failed == ["t"]
    assert not never.send([], "t", "b")
    title, body = notify.message({"job_id": 6, "outcome": "requeued", "quiet_s": 1900, "gpu": "hung",
                                  "suspect": "n2", "nodes": ["n1", "n2"]})
    assert title == "job 6 stalled: requeued" and "Suspect node: n2" in body and "slurmtools why 6" in body


def test_why_tells_the_stall_and_where_its_evidence_is(world: dict[str, Any]) -> None:
    from slurmtools.jobs import status

    cfg, slurm = setup(world)
    slurm.add_job(6, state="RUNNING", nodes=("n1", "n2"), comment="slurmtools=retry:2")
    engine = api.engine_for(cfg)
    events, _ = act.act_on(cfg, slurm, engine, [result(6)])
    api.record(events, cfg)
    api.flush(cfg)
    Controller(cfg, slurm=slurm, engine=engine, recovery=False).once()
    with Session(engine) as s:
        text = status.why(status.chain(s, cfg.cluster, 6))
    assert "Attempt 1 hung while holding its GPUs (stalled: no progress for 1900s while its GPUs were hung; " \
           "suspect n2; requeued away from n2)." in text
    assert "away from n2." in text and "Seen: stalled: no progress for 1900s (allowed 1200s), GPUs hung; " \
                                      "suspect n2 (gpu differ)" in text


def test_the_report_s_stalls_section(world: dict[str, Any]) -> None:
    from datetime import UTC, datetime, timedelta

    from slurmtools.reports import render
    from slurmtools.reports.build import build_report
    from slurmtools.reports.html import render_html
    from slurmtools.reports.scope import Scope

    cfg, slurm = setup(world)
    slurm.add_job(6, state="RUNNING", nodes=("n1", "n2"), comment="slurmtools=retry:2")
    slurm.add_job(9, state="RUNNING", nodes=("n3",), comment="")
    engine = api.engine_for(cfg)
    events, outcomes = act.act_on(cfg, slurm, engine, [result(6), result(9, suspect=None, nodes=("n3",))])
    Controller(cfg, slurm=slurm, engine=engine, recovery=False).once()
    pending: dict[str, Any] = {}
    act.schedule(pending, outcomes, cfg)
    evs, _ = act.run_deep_checks(cfg, slurm, pending, set(), check=lambda c, n: ("ok", {}))
    api.record(events + evs, cfg)
    api.flush(cfg)
    now = datetime.now(UTC)
    rep = build_report(engine, Scope(cluster=cfg.cluster, since=now - timedelta(hours=1), until=now +
                                     timedelta(minutes=1)))
    st = rep["stalls"]
    assert st["stalls"] == 2 and st["by_outcome"] == {"observed": 1, "requeued": 1} and st["with_suspect"] == 1
    assert st["time_to_detect_median_s"] == 1900.0
    # job 6: 2 nodes x 8 GPUs from its last progress (1900 s before) to its requeue; job 9: 1 x 8 to the finding
    assert 2 * 8 * 1900 / 3600 + 8 * 1900 / 3600 <= st["gpu_hours_lost"] <= 2 * 8 * 1960 / 3600 + 8 * 1960 / 3600
    assert (st["suspects_checked"], st["suspects_confirmed"], st["suspects_refuted"]) == (1, 0, 1)
    assert st["worst"][0]["job_id"] == 6 and st["worst"][0]["suspect"] == "n2"
    assert "12. Stalls" in render.text(rep) and "refuted 1" in render.text(rep)
    assert '<h2 id="stalls">12. Stalls</h2>' in render_html(rep)


def test_apprise_delivers_to_a_json_endpoint() -> None:
    """The real apprise (the `notify` extra) against a local HTTP endpoint: what a Mattermost or Slack URL gets."""
    import http.server
    import json
    import threading

    got: list[dict[str, Any]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        n = notify.Notifier(retries=2, base_delay=0.01)
        title, body = notify.message({"job_id": 6, "outcome": "requeued", "quiet_s": 1900, "gpu": "hung",
                                      "suspect": "n2", "nodes": ["n1", "n2"]})
        assert n.send([f"json://127.0.0.1:{server.server_address[1]}/"], title, body)
        assert n.wait(20.0) and n.delivered == [title]
        assert got and got[0]["title"] == title and "Suspect node: n2" in got[0]["message"]
    finally:
        server.shutdown()
