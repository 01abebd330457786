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

from .test_epilog import lab_like  # noqa: F401 - a fixture

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
    own = {"oom"} if "invoked oom-killer" in fmt else set()
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
    own = {"INFO: task": {"hung_task"}, "Memory cgroup": {"oom"}, "NVRM: Xid": {"xid"}, "{name} invoked": {"oom"}}
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


# ------------------------------------------------------------------ F0. root never runs with a user's environment
PRELOAD_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void who(void) {
    FILE *f = fopen(LOGFILE, "a");
    if (f) { fprintf(f, "%d\n", (int)geteuid()); fclose(f); }
}
"""


@pytest.fixture
def open_dir() -> Any:
    """A directory `nobody` can reach (pytest's tmp_path is root's, mode 0700)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="slurmtools-sec-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def preload_library(d: Path) -> tuple[Path, Path]:
    """A real shared library whose constructor appends the effective uid of whoever loads it to a log."""
    log = d / "uids"
    log.touch()
    log.chmod(0o666)
    (d / "who.c").write_text(PRELOAD_C.replace("LOGFILE", json.dumps(str(log))))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "who.so"), str(d / "who.c")], check=True)
    (d / "who.so").chmod(0o755)
    return d / "who.so", log


HOSTILE_ENV = {"LD_AUDIT": "{lib}", "GCONV_PATH": "/tmp/x", "LOCPATH": "/tmp/x", "NLSPATH": "/tmp/%N",
               "MALLOC_CHECK_": "3", "HOSTALIASES": "/tmp/h", "RES_OPTIONS": "debug", "TZDIR": "/tmp",
               "GLIBC_TUNABLES": "glibc.malloc.check=3", "PYTHONPATH": "/tmp", "PYTHONSTARTUP": "/tmp/s.py",
               "BASH_ENV": "/tmp/b", "ENV": "/tmp/e", "IFS": "/", "SLURM_CONF": "/tmp/slurm.conf",
               "LD_LIBRARY_PATH": "/tmp", "HOME": "/root", "BASH_FUNC_sbatch%%": "() { id; }",
               "NCCL_DEBUG": "WARN", "PATH": "/opt/conda/bin:relative:/usr/bin:/bin"}


@root_only
@pytest.mark.skipif(not Path("/usr/bin/gcc").exists(), reason="needs gcc to build the library")
def test_a_record_with_ld_preload_runs_nothing_as_root(world: dict[str, Any], open_dir: Path) -> None:
    """F0: a submission record (written by hand into the world-writable drop directory) whose environment
    holds LD_PRELOAD and every loader, locale, resolver and shell variable: the controller resubmits the job
    through the real CLI backend (a stub sbatch is the boundary), and the library never runs as root, nor at
    all: refused when ingested, and again when used (a record stored before the check)."""
    import dataclasses

    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models
    from slurmtools.slurm import CliSlurm, JobInfo

    from .test_controller import controller, ended, submits

    lib, uids = preload_library(open_dir)
    subprocess.run(["/bin/true"], env={"LD_PRELOAD": str(lib)}, check=True)     # the library works: as root, 0
    assert uids.read_text() == "0\n"
    uids.write_text("")
    out, run_dir, bin_dir = open_dir / "out", open_dir / "run", open_dir / "bin"
    for d in (out, run_dir, bin_dir):
        d.mkdir()
    out.chmod(0o777)
    run_dir.chmod(0o777)
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\n[ "$1" = --help ] && exit 0\n'
                                    f'id -u > {out}/uid; env > {out}/env; pwd > {out}/cwd; echo 4242\n')
    (bin_dir / "sbatch").chmod(0o755)
    cfg, fake = world["cfg"], world["slurm"]
    cfg.data["slurm"]["bin_dir"] = str(bin_dir)
    real = CliSlurm(bin_dir=str(bin_dir))

    def submit(argv: list[str], *, env: Any = None, cwd: Any = None, user: Any = None) -> int:
        job_id = real.submit(argv, env=env, cwd=cwd, user=user)      # the real backend, down to the stub sbatch
        fake.calls.append(("submit", job_id, tuple(argv), dict(env or {}), cwd, user, None))
        fake.jobs_by_id[job_id] = JobInfo(job_id, state="PENDING", user=user or "", excluded_nodes=("n2",))
        return job_id

    fake.submit = submit
    env = {k: v.replace("{lib}", str(lib)) for k, v in HOSTILE_ENV.items()} | {"LD_PRELOAD": str(lib)}
    record = {"job_id": 7, "uid": NOBODY, "user_argv": ["--wrap", "python train.py"], "argv": [], "added": [],
              "cwd": str(run_dir), "env": env, "script": None, "max_retries": 3, "retry_on": "node"}
    fake.add_job(7, state="RUNNING", nodes=("n1", "n2"), comment="slurmtools=retry:3:node")
    fake.jobs_by_id[7] = dataclasses.replace(fake.jobs_by_id[7], user="nobody")
    drop = Path(cfg.get("controller.submit_dir"))
    drop.mkdir(parents=True, exist_ok=True)
    (drop / "7.json").write_text(json.dumps(record))
    os.chown(drop / "7.json", NOBODY, NOBODY)
    assert controller(world).once()["submissions"] == [7]
    with Session(api.engine_for(cfg)) as s:
        chain = s.scalar(select(models.RetryChain))
        assert chain is not None and chain.user == "nobody"
        assert set(chain.details["env"]) == {"NCCL_DEBUG", "PATH"}                 # refused at ingest
        assert any("LD_PRELOAD" in r for r in chain.details["env_refused"])
        chain.details = {**chain.details, "env": env}                               # stored before the check
        s.commit()
    del fake.jobs_by_id[7]
    ended(world, job_id=7, comment="slurmtools=retry:3:node")
    (d,) = controller(world).once()["decisions"]
    assert (d["decision"], d["status"]) == ("retry", "done") and len(submits(world)) == 1, d
    assert uids.read_text() == ""                       # the library never loaded: not as root, not at all
    assert (out / "uid").read_text().strip() == str(NOBODY)   # sbatch ran as the user
    assert (out / "cwd").read_text().strip() == str(run_dir)
    seen = dict(line.split("=", 1) for line in (out / "env").read_text().splitlines() if "=" in line)
    assert not {k for k in seen if k.startswith(("LD_", "GCONV", "LOCPATH", "NLSPATH", "MALLOC_", "GLIBC_",
                                                 "PYTHON", "BASH_FUNC", "HOSTALIASES", "RES_OPTIONS", "TZDIR"))
                } and "BASH_ENV" not in seen and "IFS" not in seen, seen
    assert seen["NCCL_DEBUG"] == "WARN" and seen["HOME"] == "/nonexistent" and seen["USER"] == "nobody"
    assert seen["PATH"] == "/opt/conda/bin:/usr/bin:/bin" and seen.get("SLURM_CONF") != "/tmp/slurm.conf"


@root_only
@pytest.mark.skipif(not Path("/usr/bin/gcc").exists(), reason="needs gcc to build the library")
def test_the_user_is_dropped_to_before_the_loader_runs(open_dir: Path) -> None:
    """F0, the second rail: even an environment that reached the spawn uncleaned is loaded as the user. The
    library is given to the process that starts sbatch the only way that bypasses the keep-list (the
    constructor's uid is what the loader ran as)."""
    from slurmtools.slurm import userenv

    lib, uids = preload_library(open_dir)
    rc, out, _ = userenv.run_as("nobody", ["/usr/bin/id", "-u"], env={"NCCL_DEBUG": "1"}, cwd=str(open_dir),
                                timeout=10)
    assert (rc, out.strip()) == (0, str(NOBODY))
    orig = userenv.kept
    try:      # the keep-list switched off: LD_PRELOAD now reaches the environment of the spawned process
        userenv.kept = lambda name: True  # type: ignore[assignment]
        rc, out, _ = userenv.run_as("nobody", ["/usr/bin/id", "-u"], env={"LD_PRELOAD": str(lib)},
                                    cwd=str(open_dir), timeout=10)
    finally:
        userenv.kept = orig  # type: ignore[assignment]
    assert rc == 0 and uids.read_text().split() and set(uids.read_text().split()) == {str(NOBODY)}


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_DEBUG_OUTPUT", "LD_ANYTHING",
                                  "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN",
                                  "LOCPATH", "MALLOC_TRACE", "MALLOC_CHECK_", "NIS_PATH", "NLSPATH",
                                  "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR", "PYTHONPATH",
                                  "PYTHONHOME", "BASH_ENV", "ENV", "IFS", "BASH_FUNC_x%%", "SLURM_CONF", "HOME",
                                  "PERL5OPT", "NODE_OPTIONS", "A=B", "", "X" * 200])
def test_every_loader_locale_resolver_and_shell_variable_is_refused(name: str) -> None:
    from slurmtools.slurm import userenv

    kept, dropped = userenv.clean({name: "/tmp/x", "NCCL_DEBUG": "INFO", "SBATCH_PARTITION": "gpu"})
    assert kept == {"NCCL_DEBUG": "INFO", "SBATCH_PARTITION": "gpu"} and len(dropped) == 1
    built = userenv.for_user({name: "/tmp/x"}, "alice", "/home/alice", slurm_conf="/etc/slurm/slurm.conf")
    assert built.get(name) in (None, "/home/alice", "/etc/slurm/slurm.conf")


@pytest.mark.parametrize("env", [None, "LD_PRELOAD=/x", ["LD_PRELOAD"], {"PATH": 5}, {"PATH": "a\0b"},
                                 {"NCCL_X": "y" * 10000}, {f"NCCL_{i}": "1" for i in range(1000)}])
def test_a_record_environment_of_the_wrong_shape_is_bounded(env: Any) -> None:
    from slurmtools.slurm import userenv

    kept, _ = userenv.clean(env)
    assert len(kept) <= userenv.MAX_VARS and all(isinstance(v, str) and "\0" not in v and len(v) <= 8192
                                                 for v in kept.values())


# ------------------------------------------------ F1 F2 F4 F15: node evidence first, the job's word after
def _epilog_world(node: dict[str, Path], **extra: str) -> tuple[Any, dict[str, str]]:
    """An attempt on n1 whose window holds an XID 79 (its prolog ran: the marker is written first)."""
    from slurmtools.diagnosis import sources

    from .test_epilog import XID79, append, env

    cfg = config.load(node["cfg"], env={})
    e = env(**extra)
    sources.record_job_start(cfg, e)
    append(node["kern"], f"[20.0] {XID79}")
    return cfg, e


def _xid79_recorded_and_drained(node: dict[str, Path]) -> list[dict[str, Any]]:
    from .test_epilog import calls, spooled

    events = spooled(node)
    assert [ev["xid"] for ev in events if ev.get("kind") == "xid"] == [79]
    assert any(ev["type"] == "attempt" for ev in events)
    assert "state=drain" in calls(node) and "nodename=n1" in calls(node)
    assert not [ev for ev in events if ev.get("kind") == "internal" and ev["details"].get("stage") == "diagnosis"]
    return events


@pytest.fixture
def node(lab_like: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:  # noqa: F811
    """test_epilog's node (kernel log, state, spool, fake sinfo/scontrol), with no background flush."""
    from slurmtools.hooks import epilog

    monkeypatch.setattr(epilog.api, "flush_in_background", lambda: None)
    return lab_like


@pytest.mark.parametrize("when", ["1e300", "NaN", "Infinity", "-1e300", "3e11", '"1700000000"', "1e-300",
                                  "9" * 5000, "true"])
def test_a_hostile_marks_time_never_erases_the_node_evidence(node: dict[str, Path], when: str) -> None:
    """F1: a checkpoint-marks file whose "time" is 1e300, NaN, 3e11 (OverflowError in the epilog, after its try)...
    The XID 79 of the window is still recorded and drained; the marks give no event."""
    from slurmtools.hooks import epilog
    from slurmtools.iostat import checkpoints

    cfg, e = _epilog_world(node, SLURM_JOB_ID="4242")
    now = __import__("time").time()
    marks = Path(checkpoints.marks_path("4242", os.getuid()))
    marks.write_text(f'{{"event": "begin", "kind": "save", "path": "/x", "time": {when}}}\n'
                     f'{{"event": "end", "kind": "save", "path": "/x", "time": {now}, "bytes": {"9" * 400}}}\n'
                     f'{{"event": "begin", "kind": "load", "path": "/x", "time": {now - 5}}}\n'
                     f'{{"event": "end", "kind": "load", "path": "/x", "time": {when}}}\n')
    try:
        assert epilog.run(e, cfg) == 0
    finally:
        marks.unlink(missing_ok=True)
    events = _xid79_recorded_and_drained(node)
    assert [ev for ev in events if ev["type"] == "checkpoint"] == []
    assert [ev for ev in events if ev.get("kind") == "internal"] == []


def test_marks_outside_the_attempt_or_out_of_bounds_are_left_out() -> None:
    from slurmtools.iostat import checkpoints

    good = [{"event": "begin", "kind": "save", "time": 1.7e9}, {"event": "end", "kind": "save", "time": 1.7e9 + 10,
                                                                  "bytes": 10**9, "mount": {"mountpoint": 5}}]
    clean = [checkpoints.clean_mark(m) for m in good]
    assert all(clean) and clean[1] is not None and clean[1]["bytes"] == 10**9 and "mount" not in clean[1]
    (ev,) = checkpoints.pair([m for m in clean if m], {})
    assert ev["seconds"] == 10 and ev["gbytes_per_s"] == pytest.approx(0.1)
    assert checkpoints.pair([m for m in clean if m], {}, window=(1.7e9 + 60, 1.7e9 + 120)) == []
    for bad in ({"event": "end", "kind": "save", "time": float("nan")}, {"event": "end", "kind": "save", "time": 3e11},
                {"event": "end", "kind": "save", "time": True}, {"event": "x", "kind": "save", "time": 1.7e9}, [1]):
        assert checkpoints.clean_mark(bad) is None
    huge = checkpoints.clean_mark({"event": "end", "kind": "save", "time": 1.7e9, "bytes": 10**400,
                                   "mount": {"mountpoint": "/m", "write": -1, "WRITE": {"ops": 10**30}}})
    assert huge is not None and huge["bytes"] is None
    assert huge["mount"]["write"] is None and "WRITE" not in huge["mount"]


NEMO = "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Global Checkpoint Save : Rank : 0 : Iteration : 5 : "


@pytest.mark.parametrize("start, seconds", [("99999999999999999999", "1.0"), ("1" + "0" * 400, "1.0"),
                                            ("1744382925.0", "9" * 400), ("1744382925.0", "1" + "0" * 20)])
def test_a_hostile_checkpoint_line_never_erases_the_node_evidence(node: dict[str, Path], start: str,
                                                                 seconds: str) -> None:
    """F2 (and F13 where it enters): a NeMo-style line `Start time: 99999999999999999999s` in the job's output, or
    a number of 400 digits (`inf` once read): the XID 79 is recorded and drained; the line gives no event, and no
    infinity reaches the spool."""
    from slurmtools.hooks import epilog

    out = node["root"] / "job.out"
    out.write_text(f"{NEMO}Start time : {start}s : Save duration : {seconds}s\n")
    cfg, e = _epilog_world(node, SLURM_JOB_STDOUT=str(out))
    assert epilog.run(e, cfg) == 0
    events = _xid79_recorded_and_drained(node)
    assert [ev for ev in events if ev["type"] == "checkpoint"] == []
    assert [ev for ev in events if ev.get("kind") == "internal"] == []
    for path in (node["spool"] / "pending").iterdir():
        json.loads(path.read_text().splitlines()[0], parse_constant=lambda c: pytest.fail(f"{c} in the spool"))


@pytest.mark.parametrize("size", [4 << 10, 4 << 20])
def test_a_long_line_of_checkpoint_lookalikes_costs_its_length(node: dict[str, Path], size: int) -> None:
    """F4: one line of repeated `Epoch 1, global step 1: ` (a quadratic pattern's worst case on Python's engine,
    tens of minutes at 4 MiB), at 4 KiB and 4 MiB: lines are cut to MAX_LINE and the patterns run on RE2, so the
    checkpoint-lines stage ends inside its own budget (no internal error), and the node's evidence is recorded."""
    from slurmtools.hooks import epilog
    from slurmtools.iostat import ckptlog

    unit = "Epoch 1, global step 1: "
    line = unit * (size // len(unit)) + " checkpoint saving model to "
    out = node["root"] / "job.out"
    out.write_text((line + "\n") * 2 + "\n".join([line[:4096]] * (size // 4096)) + "\n")
    cfg, e = _epilog_world(node, SLURM_JOB_STDOUT=str(out))
    cfg.data["diagnosis"]["job_time_budget"] = 5.0
    assert epilog.run(e, cfg) == 0
    events = _xid79_recorded_and_drained(node)
    assert [ev["details"]["stage"] for ev in events if ev.get("kind") == "internal"] == []
    import re2

    assert all(isinstance(p.regex, re2._Regexp) for p in ckptlog.load_patterns())   # every pattern: linear


def test_a_stage_over_its_budget_costs_only_its_records(node: dict[str, Path]) -> None:
    """A later stage that runs out of its own budget (here: reading 4 MiB of output within 1 ms) is recorded as an
    internal error of that stage; the node's evidence was spooled and the drain decided before it started."""
    from slurmtools.hooks import epilog

    out = node["root"] / "job.out"
    out.write_text("CUDA error: an illegal memory access was encountered\n" * 80000)
    cfg, e = _epilog_world(node, SLURM_JOB_STDOUT=str(out))
    cfg.data["diagnosis"]["job_time_budget"] = 0.001
    assert epilog.run(e, cfg) == 0
    events = _xid79_recorded_and_drained(node)
    internal = [ev for ev in events if ev.get("kind") == "internal"]
    assert internal and {ev["details"]["stage"] for ev in internal} <= {
        "job output", "job output rules", "NFS I/O", "checkpoint marks", "checkpoint lines"}
    assert all(ev["action"] == "none" and "time budget" in ev["message"] for ev in internal)


@pytest.mark.parametrize("comment", ["notslurmtools=offline", "slurmtools=off", "x,slurmtools=off;y"])
def test_the_opt_out_never_switches_off_the_kernel_diagnosis(node: dict[str, Path],
                                                              monkeypatch: pytest.MonkeyPatch, comment: str) -> None:
    """F15: `slurmtools=off` anywhere in the comment (a substring: `notslurmtools=offline`) skipped the whole
    epilog. Now it matches whole tokens, opts out of the prolog's gate and of reading the job's own output only:
    the kernel diagnosis of the window runs, records and drains."""
    from slurmtools.hooks import runner
    from slurmtools.jobs import marker

    out = node["root"] / "job.out"
    out.write_text("CUDA error: an illegal memory access was encountered\n")
    _, e = _epilog_world(node, SLURM_JOB_STDOUT=str(out), SLURM_JOB_COMMENT=comment)
    for k, v in e.items():
        monkeypatch.setenv(k, v)
    os.chown(node["cfg"], 0, 0)
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(node["cfg"]))
    config.reset()
    assert runner.main(["epilog_slurmd"]) == 0
    events = _xid79_recorded_and_drained(node)
    out_read = any(ev.get("kind") == "cuda" for ev in events)
    assert out_read is not marker.opted_out(comment)
    assert marker.opted_out(comment) is (comment != "notslurmtools=offline")


# ------------------------------------------------------------- F13 F14: values bounded where they enter
@pytest.mark.parametrize("comment, asked", [("slurmtools=retry:99999999999999999999", 20),
                                            ("slurmtools=retry:1000000", 20), ("slurmtools=retry:100000", 20),
                                            ("slurmtools=retry:²", None), ("slurmtools=retry:٣", None),
                                            ("slurmtools=retry:5", 5), ("slurmtools=retry", 3)])
def test_a_retry_count_is_a_bounded_number(world: dict[str, Any], comment: str, asked: int | None) -> None:
    """F14: a 20-digit retry count in a comment made the controller fail on that job at every pass (the ledger's
    integer overflows), and `retry:1000000` was accepted. A count is ASCII digits, capped at
    `controller.retry_limit` (20); anything else is no marker. Every pass succeeds."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.jobs import marker
    from slurmtools.ledger import api, models

    from .test_controller import controller, ended

    ask = marker.parse_marker(comment, 3, limit=20)
    assert (ask.max_retries if ask else None) == asked
    world["slurm"].add_job(7, comment=comment)
    ended(world, comment=comment)
    for _ in range(2):
        controller(world).once()
    with Session(api.engine_for(world["cfg"])) as s:
        chains = s.scalars(select(models.RetryChain)).all()
        assert [c.max_retries for c in chains] == ([asked] if asked is not None else [])


@pytest.mark.parametrize("field, value", [("max_retries", "abc"), ("max_retries", 2.5), ("max_retries", -1),
                                          ("retry_on", "always"), ("user_argv", "sbatch x"), ("cwd", "relative"),
                                          ("checkpoint", {"signal": "USR1", "grace": 10**20}),
                                          ("user_argv", ["a\0b"])])
def test_a_malformed_submission_record_is_refused_and_never_stops_a_pass(world: dict[str, Any], field: str,
                                                                        value: Any) -> None:
    """A hand-written record with a count or field of the wrong shape made the ingest raise at every pass (the file
    was never removed). It is refused with one line and removed; the next record is ingested."""
    import getpass

    from .test_controller import controller

    drop = Path(world["cfg"].get("controller.submit_dir"))
    drop.mkdir(parents=True, exist_ok=True)
    for job_id, bad in ((7, True), (8, False)):
        world["slurm"].add_job(job_id, state="RUNNING")
        world["slurm"].jobs_by_id[job_id] = __import__("dataclasses").replace(world["slurm"].jobs_by_id[job_id],
                                                                              user=getpass.getuser())
        record = {"job_id": job_id, "user_argv": ["--wrap", "true"], "cwd": "/tmp", "max_retries": 2,
                  "retry_on": "node", "env": {}, "script": None}
        if bad:
            record[field] = value
        (drop / f"{job_id}.json").write_text(json.dumps(record))
    assert controller(world).once()["submissions"] == [8]
    assert list(drop.iterdir()) == []


def test_a_huge_record_count_is_capped() -> None:
    from slurmtools.controller.ingest import checked_record

    for count in (10**20, "9" * 20, "100000"):
        kept, why = checked_record({"max_retries": count, "retry_on": "any"}, 20)
        assert why is None and kept["max_retries"] == 20


def test_no_infinity_or_nan_reaches_the_ledger(world: dict[str, Any]) -> None:
    """F13 (ingest side): a non-finite number in an event is written to the spool as null (strict JSON, no
    `Infinity`), with the places named in `nonfinite`; the shipper does the same for what did not pass the spool."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    cfg = world["cfg"]
    ev = Event("checkpoint", {"node": "n1", "job_id": 7, "restart_count": 0, "kind": "save",
                              "seconds": float("inf"), "gbytes_per_s": float("nan"), "source": "nemo",
                              "details": {"rates": [1.0, float("-inf")]}}, cluster="t", key="ck-1")
    text = ev.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))
    assert json.loads(text)["data"]["nonfinite"] == ["seconds", "gbytes_per_s", "details.rates[1]"]
    api.record([ev], cfg)
    api.flush(cfg)
    direct = Event("checkpoint", {"node": "n1", "job_id": 7, "restart_count": 0, "kind": "load", "seconds": 10**400,
                                  "utilisation": float("inf"), "source": "x"}, cluster="t", key="ck-2")
    api.store_now([direct], cfg)
    with Session(api.engine_for(cfg)) as s:
        rows = {r.kind: r for r in s.scalars(select(models.CheckpointEvent))}
    assert rows["save"].seconds is None and rows["save"].gbytes_per_s is None
    assert set(rows["save"].details["nonfinite"]) == {"seconds", "gbytes_per_s", "details.rates[1]"}
    assert rows["load"].seconds is None and rows["load"].utilisation is None
    assert set(rows["load"].details["nonfinite"]) == {"seconds", "utilisation"}


@pytest.mark.parametrize("count, ok", [("1000", False), ("9" * 5000, False), ("20", True)])
def test_sbatch_refuses_more_retries_than_the_site_allows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         count: str, ok: bool) -> None:
    """F14 at the wrapper: `slurmtools sbatch --max-retries` above `controller.retry_limit` is one line, exit 2,
    and nothing is submitted."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\n[ "$1" = --help ] && exit 0\necho "$@" >> {tmp_path}/submitted\n'
                                    'echo 5\n')
    (bin_dir / "sbatch").chmod(0o755)
    cfg = write_config(tmp_path / "c.toml", f'[slurm]\nbin_dir = "{bin_dir}"\n[controller]\n'
                                            f'submit_dir = "{tmp_path}/drop"\n[exclusions]\n'
                                            f'data_file = "{tmp_path}/none.json"\n')
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg))
    result = CliRunner().invoke(main, ["sbatch", "--max-retries", count, "--wrap", "true"])
    assert (tmp_path / "submitted").exists() is ok, result.output
    if not ok:
        assert result.exit_code == 2 and result.output.startswith("slurmtools: error:"), result.output
        assert len(result.output.strip().splitlines()) == 1
    else:
        assert "slurmtools=retry:20:node" in (tmp_path / "submitted").read_text()
