"""The deep check of a fail-slow node (controller/failslow.py): `perf scan` soft-excludes a node whose GPU is below
its model's fleet median; the controller deep-checks it (once, only while idle in Slurm, at most
`controller.failslow_checks` a pass) and a pass at speed refutes the exclusion, a failure or the GPU slow again
drains through the rails, and a check that cannot run is reported, never a drain.

Slurm is the in-memory FakeSlurm; the deep check is the real `controller.deep_check_command` path
(run_deep_check) over `sh -c 'cat ...'` of the real deep profile's JSON, run over SimulatedDriver snapshots
against the baseline the scan published."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from slurmtools import config
from slurmtools.checks import runner
from slurmtools.checks import system as sysmod
from slurmtools.controller.engine import Controller
from slurmtools.ledger import api, models

from .test_perf import node_snapshot
from .test_perf_fleet import fleet, scan, with_settings

NOW = datetime.now(UTC) - timedelta(hours=2)


def setup(world: dict[str, Any], controller: str = "", general: str = "",
          slow: dict[tuple[str, int], float] | None = None) -> None:
    """20 nodes of 8 H100s in the ledger, GPU 3 of n7 (and SLOW) slow; one scan: soft exclusions, the baseline."""
    with_settings(world, "perf_stress_seconds = 0\n")
    path = world["path"]
    cmd = json.dumps(["sh", "-c", f"cat {world['tmp']}/deep-{{node}}.json; exit $(cat {world['tmp']}/rc-{{node}})"])
    path.write_text(path.read_text().replace("[controller]", f"[controller]\ndeep_check_command = {cmd}\n"
                                             + controller))
    world["cfg"] = config.load(path, env={})
    fleet(world["cfg"], when=NOW, slow={("n7", 3): 0.85, **(slow or {})})
    out = scan(world, NOW + timedelta(minutes=5))
    opened = {o["node"] for o in out["outcomes"] if o["outcome"] == "soft_excluded"}
    assert opened == {"n7", *(n for n, _ in slow or {})}
    if general:        # ([general] settings from now on: the scan opened the exclusions before)
        path.write_text(path.read_text().replace('cluster = "t"', 'cluster = "t"\n' + general))
        world["cfg"] = config.load(path, env={})


def deep_output(world: dict[str, Any], node: str, rc: int = 0, extra: list[dict[str, Any]] | None = None,
                **per_gpu: dict[str, float]) -> None:
    """What `slurmtools check --profile deep --json` prints on NODE (the real checks over a simulated 8x H100,
    judged against the published baseline), and its exit code RC."""
    snap = node_snapshot(**per_gpu)
    for dev in snap["nvml"]["devices"]:
        dev["uuid"] = f"GPU-{node}-{dev['index']}"      # the fleet's names for these GPUs (test_perf_fleet.fleet)
    report = runner.run(world["cfg"], "deep", node=node, system=sysmod.System.from_snapshot(snap, "t"),
                        persist=False)
    (world["tmp"] / f"deep-{node}.json").write_text(json.dumps([r.to_dict() for r in report.results]
                                                               + (extra or [])))
    (world["tmp"] / f"rc-{node}").write_text(str(rc))


def controller(world: dict[str, Any], **kw: Any) -> Controller:
    return Controller(world["cfg"], slurm=world["slurm"], rng=random.Random(0), recovery=False, **kw)


def exclusions(world: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    with Session(api.engine_for(world["cfg"])) as s:
        return [(x.node, x.scope, x.source, x.outcome) for x in
                s.scalars(select(models.Exclusion).order_by(models.Exclusion.id))]


def deep_checks(world: dict[str, Any]) -> list[dict[str, Any]]:
    with Session(api.engine_for(world["cfg"])) as s:
        return [n.details for n in s.scalars(select(models.NodeStateChange).where(
            models.NodeStateChange.action == "deep_check").order_by(models.NodeStateChange.id))]


def drains(world: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [c for c in world["slurm"].calls if c[0] == "drain"]


def test_a_deep_check_at_speed_refutes_the_soft_exclusion_once(world: dict[str, Any]) -> None:
    setup(world)
    deep_output(world, "n7")
    c = controller(world)
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "ok", "outcome": "refuted"}]
    assert exclusions(world) == [("n7", "soft", "perf", "refuted")]
    (check,) = deep_checks(world)
    assert (check["outcome"], check["gpu"], check["uuid"], check["slow_gpus"]) == ("refuted", 3, "GPU-n7-3", [])
    assert check["failslow"] and check["rc"] == 0
    with Session(api.engine_for(world["cfg"])) as s:      # the deep check's probes joined the fleet's results
        deep = s.scalars(select(models.PerfResult.status).where(models.PerfResult.profile == "deep")).all()
    assert list(deep) == ["ok"] * 8
    assert c.once()["failslow"] == [] and len(deep_checks(world)) == 1     # closed: never checked again
    assert drains(world) == []


def test_the_gpu_slow_again_drains_through_the_rails(world: dict[str, Any]) -> None:
    setup(world)
    deep_output(world, "n7", g3={"d2d_gbps": 0.85})
    c = controller(world)
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "ok", "outcome": "drain", "drain": "drained"}]
    ((_, nodes, reason),) = drains(world)
    assert nodes == ("n7",) and reason.startswith("slurmtools: hardware: fail-slow GPU 3: slow again in its deep "
                                                  "check (2 in a row)")
    assert exclusions(world) == [("n7", "soft", "perf", "confirmed"), ("n7", "drain", "perf", None)]
    assert c.once()["failslow"] == [] and len(drains(world)) == 1          # drained: recovery's or an admin's


def test_below_perf_drain_after_it_stays_excluded_and_is_not_checked_again(world: dict[str, Any]) -> None:
    setup(world)
    path = world["path"]
    path.write_text(path.read_text() + "perf_drain_after = 3\n")          # (the [checks] table comes last)
    world["cfg"] = config.load(path, env={})
    deep_output(world, "n7", g3={"d2d_gbps": 0.85})
    c = controller(world)
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "ok", "outcome": "still_slow"}]
    assert deep_checks(world)[0]["streak"] == 2
    assert exclusions(world) == [("n7", "soft", "perf", None)] and drains(world) == []
    assert c.once()["failslow"] == []


@pytest.mark.parametrize("observe", [False, True])
def test_a_failed_deep_check_drains_unless_observe_mode(world: dict[str, Any], observe: bool) -> None:
    setup(world, general="observe = true" if observe else "")    # (turned on after the scan opened it)
    stress = {"check": "stress", "status": "fail", "reason": "GPU 3: HW slowdown under load", "gpus": [3],
              "evidence": {}}
    deep_output(world, "n7", rc=1, extra=[stress])
    c = controller(world)
    (row,) = c.once()["failslow"]
    assert (row["verdict"], row["outcome"], row["drain"]) == ("fail", "drain", "observe" if observe else "drained")
    if observe:
        assert drains(world) == [] and ("n7", "soft", "perf", None) in exclusions(world)
    else:
        ((_, _, reason),) = drains(world)
        assert reason.startswith("slurmtools: hardware: fail-slow deep check failed: stress")
    assert c.once()["failslow"] == []             # one conclusive deep check per exclusion


def _soft(world: dict[str, Any], node: str) -> Any:
    from slurmtools import drain

    return drain.exclusion_event(world["cfg"], node, "soft", "slurmtools: hardware: fail-slow GPU 3", "perf",
                                 ttl_s=86400.0, evidence={"perf": {"gpu": 3, "uuid": f"GPU-{node}-3", "streak": 1},
                                                          "deep_check": True})


def test_never_on_a_node_with_a_job_or_drained_and_bounded_per_pass(world: dict[str, Any]) -> None:
    setup(world, slow={("n9", 1): 0.8})
    slurm = world["slurm"]
    for node in ("n7", "n9"):
        deep_output(world, node)
    asked: list[str] = []

    def check(node: str) -> tuple[str, dict[str, Any]]:
        from slurmtools.controller.recovery import run_deep_check

        asked.append(node)
        return run_deep_check(world["cfg"], node)

    c = controller(world, deep_check=check)
    slurm.node_list["n7"] = dataclasses.replace(slurm.node_list["n7"], state="allocated")
    slurm.node_list["n9"] = dataclasses.replace(slurm.node_list["n9"], state="mixed")
    assert c.once()["failslow"] == [{"node": "n7", "skipped": "Slurm state allocated"},
                                    {"node": "n9", "skipped": "Slurm state mixed"}]
    slurm.node_list["n7"] = dataclasses.replace(slurm.node_list["n7"], state="idle", flags=("COMPLETING",))
    slurm.node_list["n9"] = dataclasses.replace(slurm.node_list["n9"], state="idle", flags=("PLANNED",))
    assert c.once()["failslow"] == [{"node": "n7", "skipped": "Slurm flags COMPLETING"},
                                    {"node": "n9", "skipped": "Slurm flags PLANNED"}]
    assert asked == []
    slurm.node_list["n7"] = dataclasses.replace(slurm.node_list["n7"], flags=())
    slurm.node_list["n9"] = dataclasses.replace(slurm.node_list["n9"], flags=())
    first = c.once()["failslow"]            # controller.failslow_checks = 1: one deep check a pass
    assert [r.get("outcome") or r.get("skipped") for r in first] == ["refuted", "per-pass limit"]
    assert [r["outcome"] for r in c.once()["failslow"]] == ["refuted"]
    assert sorted(asked) == ["n7", "n9"] and drains(world) == []
    slurm.drain(["n3"], "slurmtools: admin: PSU")
    api.store_now([_soft(world, "n3")], world["cfg"])
    assert c.once()["failslow"] == [{"node": "n3", "skipped": "drained or draining"}] and len(asked) == 2


def test_off_with_zero_checks_a_pass(world: dict[str, Any]) -> None:
    setup(world, controller="failslow_checks = 0\n")
    deep_output(world, "n7")
    assert controller(world).once()["failslow"] == [] and deep_checks(world) == []


def test_a_check_that_cannot_run_is_reported_never_a_drain(world: dict[str, Any]) -> None:
    setup(world)
    c = controller(world)
    (world["tmp"] / "rc-n7").write_text("2")           # no output, exit 2: the deep check's "unknown"
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "unknown", "outcome": "unknown"}]

    def broken(node: str) -> tuple[str, dict[str, Any]]:
        raise RuntimeError("ssh: no route")

    c2 = controller(world, deep_check=broken)        # (recovery_interval = 0: due again at once)
    report = c2.once()
    assert report["failslow"] == [{"node": "n7", "verdict": "unknown", "outcome": "unknown"}]
    assert report["errors"] == [] and drains(world) == []
    assert deep_checks(world)[-1]["error"] == "RuntimeError: ssh: no route"
    assert exclusions(world) == [("n7", "soft", "perf", None)]
    # passed, but the probe could not measure the flagged GPU (a process appeared on it): inconclusive, kept
    deep_output(world, "n7")
    raw = json.loads((world["tmp"] / "deep-n7.json").read_text())
    raw = [r for r in raw if not (r["check"] == "perf" and r.get("gpus") == [3])]
    (world["tmp"] / "deep-n7.json").write_text(json.dumps(raw))
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "ok", "outcome": "inconclusive"}]
    deep_output(world, "n7")
    assert c.once()["failslow"] == [{"node": "n7", "verdict": "ok", "outcome": "refuted"}]
