"""Hostile users and bad input (docs/security.md lists each case with its test). Run as root, as CI does:
root is who must not be turned."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmtools import config
from slurmtools.cli import main
from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.findings import NODE_TRUST
from slurmtools.ledger.spool import Event, Spool, SpoolError

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="ownership checks are root's (CI runs as root)")


def write_config(path: Path, text: str, uid: int = 0, mode: int = 0o644) -> Path:
    path.write_text(text)
    os.chown(path, uid, 0)
    path.chmod(mode)
    return path


def fake_sinfo(bin_dir: Path, marker: Path) -> None:
    bin_dir.mkdir()
    for tool in ("sinfo", "scontrol", "squeue"):
        (bin_dir / tool).write_text(f"#!/bin/sh\ntouch {marker}\necho '{{}}'\n")
        (bin_dir / tool).chmod(0o755)


# ------------------------------------------------------------------ 1. configuration written by someone else
@root_only
@pytest.mark.parametrize("uid, mode, where", [(NOBODY, 0o644, "file"), (0, 0o664, "file"), (0, 0o646, "file"),
                                             (0, 0o644, "dir")])
def test_root_refuses_a_config_someone_else_could_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        uid: int, mode: int, where: str) -> None:
    etc = tmp_path / "etc"
    etc.mkdir(mode=0o755)
    marker = tmp_path / "ran-as-root"
    fake_sinfo(tmp_path / "bin", marker)
    cfg = write_config(etc / "slurmtools.toml", f'[slurm]\nbin_dir = "{tmp_path}/bin"\n'
                                                f'[checks]\ndeep_commands = [["touch", "{marker}"]]\n', uid, mode)
    if where == "dir":
        etc.chmod(0o777)
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg))
    with pytest.raises(config.ConfigError, match="refused"):
        config.load()
    # the hooks: one line on stderr, exit 0 (the job runs), nothing run from the file, no drain
    from slurmtools.hooks import runner

    env = {**os.environ, "SLURMTOOLS_CONFIG": str(cfg), "SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7",
           "PYTHONPATH": str(Path(__file__).parent.parent)}
    for context in ("prolog_slurmd", "epilog_slurmd", "healthcheck"):
        proc = subprocess.run([sys.executable, "-c", "import sys; from slurmtools.hooks.runner import main; "
                               f"sys.exit(main(['{context}']))"], env=env, capture_output=True, text=True)
        assert proc.returncode == 0 and "refused" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert runner.HANDLERS  # the dispatch table is what ran above
    result = CliRunner().invoke(main, ["check", "--profile", "deep"])
    assert result.exit_code == 2 and "refused" in result.output
    assert not marker.exists()


@root_only
def test_root_takes_a_root_owned_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write_config(tmp_path / "ok.toml", "[general]\ncluster = \"c1\"\n")
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg))
    assert config.load().cluster == "c1"


# ------------------------------------------------------------------ 2. spool and queue trees
@root_only
def test_a_world_writable_spool_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "spool"
    root.mkdir(mode=0o755)
    root.chmod(0o777)
    with pytest.raises(SpoolError, match="writable by"):
        Spool(root).write(Event("node_event", {"node": "n1"}))
    root.chmod(0o755)
    (root / "pending").mkdir()
    os.chown(root / "pending", NOBODY, NOBODY)       # a user made the subdirectory first
    with pytest.raises(SpoolError, match="owned by uid"):
        Spool(root).write(Event("node_event", {"node": "n1"}))


@root_only
def test_planted_spool_files_and_links_are_refused(world: dict[str, Any], tmp_path: Path) -> None:
    from slurmtools.ledger import api

    cfg = world["cfg"]
    spool = Spool(cfg.get("ledger.spool_dir"))
    spool.ensure()
    forged = Event("finding", {"node": "n1", "kind": "xid", "xid": 79, "category": "hardware", "action":
                               "drain_node", "severity": "critical", "trust": "kernel", "message": "forged"})
    planted = spool.pending / "00000000000000000001-forged.json"
    planted.write_text(forged.to_json() + "\n")
    os.chown(planted, NOBODY, NOBODY)
    victim = tmp_path / "root-only"
    victim.write_text("secret\n")
    victim.chmod(0o600)
    (spool.pending / "00000000000000000002-link.json").symlink_to(victim)
    (spool.bad / "00000000000000000002-link.json.why").symlink_to(victim)
    lock_target = tmp_path / "made-by-root"
    (Path(spool.root) / ".flush.lock").unlink(missing_ok=True)
    (Path(spool.root) / ".flush.lock").symlink_to(lock_target)
    with pytest.raises(OSError):
        api.flush(cfg)
    (Path(spool.root) / ".flush.lock").unlink()
    result = api.flush(cfg)
    assert result.shipped == 0 and result.quarantined == 2
    assert victim.read_text() == "secret\n" and not lock_target.exists()
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import models

    with Session(api.engine_for(cfg)) as s:
        assert s.scalars(select(models.Finding)).all() == []


@root_only
def test_controller_queue_written_by_a_user_is_refused(tmp_path: Path) -> None:
    from slurmtools.controller import queue
    from slurmtools.fsutil import UntrustedPath

    qdir = tmp_path / "queue"
    qdir.mkdir(mode=0o755)
    queue.enqueue(str(qdir), {"job_id": 1, "restart_count": 0})
    forged = qdir / "2.0.json"
    forged.write_text(json.dumps({"job_id": 2, "restart_count": 0}))
    os.chown(forged, NOBODY, NOBODY)
    assert [item["job_id"] for _, item in queue.pending(str(qdir))] == [1]
    assert (qdir / "bad" / "2.0.json").exists()
    qdir.chmod(0o777)
    with pytest.raises(UntrustedPath):
        queue.pending(str(qdir))
    with pytest.raises(UntrustedPath):
        queue.enqueue(str(qdir), {"job_id": 3, "restart_count": 0})


# ------------------------------------------------------------------ 3. job-controlled text in the kernel log
TASK_FIRST_FORMATS = [
    "{name}[4242]: segfault at 0 ip 00007f7487974219 sp 00007ffcc3f9d3d8 error 4 in libc.so.6[7f7487844000+156000]",
    "traps: {name}[4242] general protection fault ip:7f0 sp:7ffd error:0 in libc.so.6[7f0+1000]",
    "{name} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
    "{name}: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)",
    "{name} (4242): drop_caches: 3",
    "CPU: 3 PID: 4242 Comm: {name} Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1",
]
HOSTILE = ["EDAC x: 1 UE ", "NVRM: gspFail", "NVRM: Xid (PCI:", "mce: [Hardware ", "nfs: server x ",
           "Out of memory: ", "BUG: soft lockup", "mlx5_core 0000", "Linux version 6"]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("fmt", TASK_FIRST_FORMATS)
def test_a_process_name_never_makes_a_kernel_finding(fmt: str, name: str) -> None:
    """A name that spells a kernel message makes no finding of its own: the only kernel finding a task line
    can give is the line's own (the OOM report's first line: an OOM, never a node fault)."""
    line = f"[ 1573.121407] {fmt.format(name=name[:15])}"
    own = {"oom"} if "invoked oom-killer" in fmt or "page allocation failure" in fmt else set()
    findings = diagnose(line.encode())
    assert {f.kind for f in findings if f.trust in NODE_TRUST} <= own
    assert not [f for f in findings if f.node_fault]


@settings(max_examples=300, deadline=None)
@given(name=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=15),
       fmt=st.sampled_from([
           *TASK_FIRST_FORMATS, "INFO: task {name}:4242 blocked for more than 120 seconds.",
           "Memory cgroup out of memory: Killed process 4242 ({name}) total-vm:1kB, anon-rss:1kB",
           "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name={name}, Graphics Exception: ESR 0x404490"]))
def test_any_process_name_in_any_task_line(name: str, fmt: str) -> None:
    """Wherever the kernel prints a task's name, the finding (if any) is the line's own, never one the name
    spells: no drain from a name, and the hung-task, OOM and XID lines stay what they are."""
    findings = diagnose(f"[ 1.000000] {fmt.format(name=name)}".encode())
    own = {"INFO: task": {"hung_task"}, "Memory cgroup": {"oom"}, "NVRM: Xid": {"xid"}, "{name} invoked": {"oom"},
           "{name}: page allocation failure": {"oom"}}
    expected = next((kinds for prefix, kinds in own.items() if fmt.startswith(prefix)), set())
    assert {f.kind for f in findings if f.trust in NODE_TRUST} <= expected
    assert not [f for f in findings if f.node_fault and not fmt.startswith("NVRM")]


# ------------------------------------------------------------------ 4. one huge hostlist
def test_a_huge_hostlist_is_refused_before_anything_is_stored(world: dict[str, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    result = CliRunner().invoke(main, ["exclude", "add", "n[1-100000]", "--soft", "--reason", "oops"])
    assert result.exit_code == 2 and "exclusions.max_nodes" in result.output and "Traceback" not in result.output
    spool = Spool(world["cfg"].get("ledger.spool_dir"))
    assert spool.counts()["pending"] == 0


def test_a_publish_too_big_for_the_plugins_never_blocks_later_ones(world: dict[str, Any]) -> None:
    from sqlalchemy.orm import Session

    from slurmtools.controller import exclusions, safety
    from slurmtools.ledger import api
    from slurmtools.plugins import PluginError

    cfg = world["cfg"]
    events = [safety.exclusion_event(cfg, f"n{i}", "soft", "x" * 40, "admin:root", ttl_s=None) for i in range(30000)]
    api.record(events, cfg)
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s, pytest.raises(PluginError):
        exclusions.publish(cfg, s)
    data = json.loads(Path(cfg.get("exclusions.data_file")).read_text())
    assert len(data["exclusions"]) == 30000          # the JSON is current all the same
    with Session(api.engine_for(cfg)) as s:
        for x in exclusions.active(s, cfg.cluster)[:29990]:
            api.record([exclusions.end_event(cfg, x, "removed")], cfg)
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.publish(cfg, s)
    assert Path(cfg.get("exclusions.plugin_file")).read_text().count("\nnode\t") == 10


# ------------------------------------------------------------------ 5. diagnose reads a bounded input
def bounded(tmp_path: Path, max_bytes: int = 4096) -> None:
    cfg = write_config(tmp_path / "small.toml", f"[diagnosis]\nmax_bytes = {max_bytes}\ntime_budget = 2.0\n")
    os.environ["SLURMTOOLS_CONFIG"] = str(cfg)


def test_diagnose_reads_the_newest_part_of_a_big_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", "")
    bounded(tmp_path)
    log = tmp_path / "kern.log"
    with log.open("wb") as fh:
        fh.write(b"[1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n")
        fh.truncate(1 << 30)                     # 1 GB, sparse
        fh.seek(0, 2)
        fh.write(b"\n[2.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=p, DBE\n")
    result = CliRunner().invoke(main, ["diagnose", "--kernel-log", str(log), "--json"])
    assert result.exit_code == 0, result.output
    assert [f["xid"] for f in json.loads(result.stdout)] == [48]


@pytest.mark.parametrize("kind", ["fifo", "dir", "dev", "missing"])
def test_diagnose_refuses_what_is_not_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", "")
    bounded(tmp_path)
    path = {"fifo": tmp_path / "fifo", "dir": tmp_path, "dev": Path("/dev/zero"), "missing": tmp_path / "no"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    result = CliRunner().invoke(main, ["diagnose", "--kernel-log", str(path)])
    assert result.exit_code == 2 and result.output.startswith("slurmtools: error:"), result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_diagnose_stream_is_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", "")
    bounded(tmp_path)
    result = CliRunner().invoke(main, ["diagnose", "--kernel-log", "/dev/zero", "--stream"])
    assert result.exit_code == 2 and "no end after 2 s" in result.output


# ------------------------------------------------------------------ 6. values that silently break the loop
@pytest.mark.parametrize("text, key", [
    ("[diagnosis]\nmax_bytes = -1\n", "diagnosis.max_bytes"), ("[diagnosis]\ntime_budget = -5\n", "time_budget"),
    ("[diagnosis]\ntime_budget = 0\n", "time_budget"), ("[safety]\nmax_drain_fraction = -0.1\n", "max_drain"),
    ("[safety]\nmax_drain_fraction = 1.5\n", "max_drain"), ("[safety]\nmin_drain_nodes = -1\n", "min_drain"),
    ("[safety]\nsettle = -1.0\n", "settle"), ("[controller]\nbackoff = -3.0\n", "backoff"),
    ("[checks]\ntimeout = nan\n", "finite"), ("[hardware.x]\ngpus = -2\n", "hardware.x.gpus"),
    ("[controller]\nverify_attempts = 0\n", "verify_attempts")])
def test_config_values_out_of_range_are_refused(tmp_path: Path, text: str, key: str) -> None:
    path = write_config(tmp_path / "c.toml", text)
    with pytest.raises(config.ConfigError, match=key):
        config.check_file(path)
    result = CliRunner().invoke(main, ["config", "check", str(path)])
    assert result.exit_code == 1 and key.split(".")[-1] in result.output


# ------------------------------------------------------------------ 7. a user reads the SQLite ledger
@root_only
@pytest.mark.parametrize("writing", [True, False], ids=["while-root-writes", "idle"])
def test_a_user_lists_the_sqlite_ledger(world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        writing: bool) -> None:
    import sqlite3

    from slurmtools.ledger import api

    cfg = world["cfg"]
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    api.record([Event("finding", {"node": "n1", "kind": "note", "category": "unknown", "action": "none",
                                  "severity": "info", "trust": "admin", "source": "admin", "message": "first"},
                      cluster="t")], cfg)
    api.flush(cfg)
    db = Path(cfg.get("ledger.url").removeprefix("sqlite:///"))
    for p in (*tmp_path.parents[:2], tmp_path, db.parent, Path(world["path"])):   # pytest's dirs are 0700
        p.chmod(0o755 if p.is_dir() else 0o644)
    writer = sqlite3.connect(db)           # a writer holds it open: -wal and -shm exist, root's
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
    writer.commit()
    if not writing:
        writer.close()
        api.engine_for(cfg).dispose()      # no connection left: SQLite removes the -wal and -shm files
    for p in db.parent.glob(db.name + "*"):
        p.chmod(0o644)
    # the reader: a fork that becomes nobody, with the modules it needs already imported
    import sqlalchemy.dialects.sqlite
    import sqlalchemy.orm  # noqa: F401

    import slurmtools.cli.ledger
    import slurmtools.ledger.schema  # noqa: F401

    runner = CliRunner()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            api.forget_engines()           # a user's own process opens the ledger afresh
            res = runner.invoke(main, ["ledger", "events", "--json"])
            out = {"rc": res.exit_code, "out": res.output}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            out = {"rc": -1, "out": repr(exc)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    writer.close()
    out = json.loads(data)
    assert out["rc"] == 0, out["out"]
    assert [e["message"] for e in json.loads(out["out"])] == ["first"]


# ------------------------------------------------------------------ 8. one-line errors, never a traceback
@pytest.mark.parametrize("body", [
    "[" * 100000 + "]" * 100000,
    json.dumps({"format": "slurmtools-snapshot/1", "files": {}, "nvml": {"devices": 5}}),
    json.dumps({"format": "slurmtools-snapshot/1", "files": {}, "nvml": {"devices": [1, 2]}}),
    json.dumps({"format": "slurmtools-snapshot/1", "files": {}, "nvml": {}, "previous": 3}),
    json.dumps({"format": "slurmtools-snapshot/1", "files": {"/x": 5}, "nvml": {}}),
])
def test_check_replay_of_a_bad_snapshot(tmp_path: Path, body: str) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(body)
    result = CliRunner().invoke(main, ["check", "--replay", str(snap)])
    assert result.exit_code == 2 and result.output.startswith("slurmtools: error:"), result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("raw", [b"[general]\ncluster = \"\xff\xfe\"\n", b"\x00\x01\x02garbage", b"[general\n",
                                 b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n"])
def test_a_bad_config_file_is_one_line_from_every_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           raw: bytes) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(raw)
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(path))
    for argv in (["config", "show"], ["nodes"], ["ledger", "events"], ["diagnose", "--kernel-log", "/dev/null"]):
        config.reset()
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 2 and result.output.startswith("slurmtools: error:"), (argv, result.output)
        assert len(result.output.strip().splitlines()) == 1


@root_only
@pytest.mark.parametrize("state", ["missing-parent", "a-file", "read-only"])
def test_ledger_flush_with_an_unusable_spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str) -> None:
    spool = {"missing-parent": tmp_path / "file" / "spool", "a-file": tmp_path / "file",
             "read-only": tmp_path / "ro"}[state]
    (tmp_path / "file").write_text("x")
    if state == "read-only":
        spool.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(spool)], check=False)
    cfg = write_config(tmp_path / "c.toml", f'[ledger]\nurl = "sqlite:///{tmp_path}/l.db"\nspool_dir = "{spool}"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg))
    try:
        result = CliRunner().invoke(main, ["ledger", "flush"])
    finally:
        if state == "read-only":
            subprocess.run(["umount", str(spool)], check=False)
    assert result.exit_code == 2 and result.output.startswith("slurmtools: error:"), result.output
    assert "Traceback" not in result.output


def test_a_spooled_job_id_that_is_not_a_number_is_set_aside(world: dict[str, Any]) -> None:
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    cfg = world["cfg"]
    api.record([Event("finding", {"node": "n1", "job_id": "12; DROP", "kind": "xid", "category": "hardware",
                                  "action": "none", "severity": "info", "trust": "kernel", "message": "m"},
                      cluster="t")], cfg)
    result = api.flush(cfg)
    assert result.quarantined == 1 and result.shipped == 0
    with Session(api.engine_for(cfg)) as s:
        assert s.scalars(select(models.Finding)).all() == []
    spool = Spool(cfg.get("ledger.spool_dir"))
    whys = [p.read_text() for p in spool.bad.iterdir() if p.name.endswith(".why")]
    assert whys and "must be an integer" in whys[0]
    assert stat.S_IMODE(spool.bad.stat().st_mode) & 0o022 == 0
