"""`slurmtools exclude` on the lab: drains with our reason, soft exclusions, admin drains untouchable,
sync reconciles and is a no-op when nothing changed."""

from __future__ import annotations

import json
import subprocess

from slurmtools.slurm import CliSlurm


def st(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, check=False)


def active(node: str) -> list[dict[str, object]]:
    out = st("exclude", "list", "--json")
    assert out.returncode == 0, out.stderr
    return [x for x in json.loads(out.stdout) if x["node"] == node]


def test_add_list_remove_drain_and_soft(slurm: CliSlurm, resume_after: list[str]) -> None:
    resume_after.extend(["n2", "n3"])
    out = st("exclude", "add", "n2", "--reason", "reseating cables", "--ttl", "2h", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"] == [{"node": "n2", "scope": "drain", "outcome": "drained", "detail": ""}]
    n2 = slurm.nodes(["n2"])[0]
    assert n2.drain and n2.reason == "slurmtools: admin: reseating cables"
    assert st("exclude", "add", "n3", "--soft", "--reason", "flaky NCCL").returncode == 0
    assert not slurm.nodes(["n3"])[0].drain
    (x2,), (x3,) = active("n2"), active("n3")
    assert (x2["scope"], x2["expires"] is not None, x3["scope"], x3["expires"]) == ("drain", True, "soft", None)
    assert st("exclude", "sync").stdout.strip() == "in sync: nothing to do"
    assert st("exclude", "remove", "n[2-3]", "--reason", "fixed").returncode == 0
    assert not slurm.nodes(["n2"])[0].drain
    assert active("n2") == [] and active("n3") == []
    history = json.loads(st("exclude", "history", "n2", "--json").stdout)
    assert [c["action"] for c in history["state_changes"]][-2:] == ["drain", "resume"]
    assert history["exclusions"][-1]["outcome"] == "removed"


def test_admin_drain_is_untouchable(slurm: CliSlurm, resume_after: list[str]) -> None:
    resume_after.append("n4")
    slurm.drain(["n4"], "admin: replacing PSU")
    try:
        out = st("exclude", "add", "n4", "--reason", "mine now")
        assert out.returncode == 1 and "not_ours" in out.stdout
        assert st("exclude", "remove", "n4").returncode == 0
        sync = st("exclude", "sync", "--json")
        assert json.loads(sync.stdout)["actions"] == []
        n4 = slurm.nodes(["n4"])[0]
        assert n4.drain and n4.reason == "admin: replacing PSU"
    finally:
        slurm.resume(["n4"])


def test_sync_redrains_an_excluded_node_someone_resumed(slurm: CliSlurm, resume_after: list[str]) -> None:
    resume_after.append("n1")
    assert st("exclude", "add", "n1", "--reason", "bad DIMM").returncode == 0
    slurm.resume(["n1"])                       # behind our back
    sync = json.loads(st("exclude", "sync", "--json").stdout)
    assert sync["actions"] == [{"node": "n1", "action": "drain", "outcome": "drained"}]
    n1 = slurm.nodes(["n1"])[0]
    assert n1.drain and n1.reason == "slurmtools: admin: bad DIMM"
    assert json.loads(st("exclude", "sync", "--json").stdout)["actions"] == []   # now a no-op
    assert len(active("n1")) == 1             # re-draining did not open a second exclusion


def test_changing_exclusions_needs_admin(slurm: CliSlurm) -> None:
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "slurmtools", "exclude",
                          "add", "n1", "--reason", "x"], capture_output=True, text=True, check=False)
    assert out.returncode == 1 and "only root" in out.stderr
    assert not slurm.nodes(["n1"])[0].drain
