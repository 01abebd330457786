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
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.findings import NODE_TRUST
from slurmtools.ledger.spool import Event, Spool, SpoolError

from .fakes import JsonHandler, serving
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
    spool = Spool(cfg.ledger.spool_dir)
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
    assert not [f for f in findings if is_node_fault(f, None)]


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
    assert not [f for f in findings if is_node_fault(f, None) and not fmt.startswith("NVRM")]


# ------------------------------------------------------------------ 4. one huge hostlist
def test_a_huge_hostlist_is_refused_before_anything_is_stored(world: dict[str, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    result = CliRunner().invoke(main, ["exclude", "add", "n[1-100000]", "--soft", "--reason", "oops"])
    assert result.exit_code == 2 and "exclusions.max_nodes" in result.output and "Traceback" not in result.output
    spool = Spool(world["cfg"].ledger.spool_dir)
    assert spool.counts()["pending"] == 0


def test_a_publish_too_big_for_the_plugins_never_blocks_later_ones(world: dict[str, Any]) -> None:
    from sqlalchemy.orm import Session

    from slurmtools import drain
    from slurmtools.controller import exclusions
    from slurmtools.ledger import api
    from slurmtools.plugins import PluginError

    cfg = world["cfg"]
    events = [drain.exclusion_event(cfg, f"n{i}", "soft", "x" * 40, "admin:root", ttl_s=None) for i in range(30000)]
    api.record(events, cfg)
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s, pytest.raises(PluginError):
        exclusions.publish(cfg, s)
    data = json.loads(Path(cfg.exclusions.data_file).read_text())
    assert len(data["exclusions"]) == 30000          # the JSON is current all the same
    with Session(api.engine_for(cfg)) as s:
        for x in exclusions.active(s, cfg.cluster)[:29990]:
            api.record([exclusions.end_event(cfg, x, "removed")], cfg)
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.publish(cfg, s)
    assert Path(cfg.exclusions.plugin_file).read_text().count("\nnode\t") == 10


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
    db = Path(cfg.ledger.url.removeprefix("sqlite:///"))
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
    spool = Spool(cfg.ledger.spool_dir)
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
    cfg.slurm.bin_dir = str(bin_dir)
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
    drop = Path(cfg.controller.submit_dir)
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
    sources.record_job_start(cfg, int(e["SLURM_JOB_ID"]), e["SLURMD_NODENAME"])
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
    cfg.diagnosis.job_time_budget = 5.0
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
    cfg.diagnosis.job_time_budget = 0.001
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

    drop = Path(world["cfg"].controller.submit_dir)
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


# ------------------------------------------------------------------ 9. text that drives a terminal (F5, F8, F12, F13)
#: What a job's output or a Prometheus label may hold: a window title (OSC 0), a hyperlink (OSC 8), a screen clear
#: and cursor-up (CSI), a bell, a carriage return, a C1 CSI, a right-to-left override and a line separator.
HOSTILE_TEXT = ("\x1b]0;pwned\x07\x1b[2J\x1b[1A\rroot# \x9b31m\u202edrow\u2028"
                "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ \x7f\x00end")


def raw_controls(text: str) -> list[str]:
    """The characters of TEXT a terminal or an editor acts on (newline and tab are our own layout)."""
    from slurmtools.textsafe import CONTROLS

    return sorted({hex(ord(c)) for c in text if ord(c) in CONTROLS and c not in "\n\t"})


def test_clean_makes_every_control_visible_and_is_idempotent() -> None:
    from slurmtools.textsafe import clean

    out = clean(HOSTILE_TEXT)
    assert raw_controls(out) == [] and "\n" not in clean("a\nb") and clean("a\nb", lines=True) == "a\nb"
    assert out.startswith("\\x1b]0;pwned\\x07\\x1b[2J") and "\\u202edrow\\u2028" in out and "\\x9b31m" in out
    assert clean(out) == out and clean("GPU 3: 81 °C, ok") == "GPU 3: 81 °C, ok"


def _hostile_job(world: dict[str, Any]) -> None:
    """Job 7's attempt on n1 and a finding from its output that holds HOSTILE_TEXT, in the ledger."""
    from slurmtools.ledger import api

    cfg = world["cfg"]
    api.record([Event("attempt", {"job_id": 7, "restart_count": 0, "nodes": "n1", "source": "epilog",
                                  "details": {"reason": HOSTILE_TEXT}}, cluster=cfg.cluster, key="att-7"),
                Event("finding", {"node": "n1", "job_id": 7, "restart_count": 0, "source": "job-log",
                                  "kind": "nccl" + HOSTILE_TEXT[:9], "category": "application", "severity": "error",
                                  "action": "restart_app", "trust": "job", "message": "NCCL WARN " + HOSTILE_TEXT,
                                  "details": {"line": HOSTILE_TEXT, HOSTILE_TEXT[:5]: [HOSTILE_TEXT]}},
                      cluster=cfg.cluster)], cfg)
    assert api.flush(cfg).shipped == 2


def test_job_output_is_stored_without_controls(world: dict[str, Any]) -> None:
    """F5, where it is stored: the ledger's text columns and JSON details hold no control character."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    _hostile_job(world)
    with Session(api.engine_for(world["cfg"])) as s:
        (f,) = s.scalars(select(models.Finding)).all()
        (a,) = s.scalars(select(models.JobAttempt)).all()
    assert raw_controls(f.message) == [] and f.message.startswith("NCCL WARN \\x1b]0;pwned\\x07")
    assert raw_controls(f.kind) == [] and raw_controls(json.dumps(f.details, ensure_ascii=False)) == []
    assert raw_controls(json.dumps(a.details, ensure_ascii=False)) == []


@pytest.mark.parametrize("argv", [["ledger", "events"], ["ledger", "show", "1"], ["status", "7"], ["why", "7"],
                                  ["ledger", "events", "--json"], ["ledger", "export", "--table", "findings"]])
def test_stored_escapes_never_reach_the_terminal(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                 argv: list[str]) -> None:
    """F5, where it is printed: even a row stored before the fix (written here straight into the database) is
    printed with its controls made visible, and a newline in a field never starts a line of its own."""
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    _hostile_job(world)
    with Session(api.engine_for(world["cfg"])) as s:
        s.execute(update(models.Finding).values(message="NCCL WARN " + HOSTILE_TEXT + "\nn2 drained: forged",
                                                node="n1\x1b[8m\nn2 drained: forged", trust="syslog"))
        s.commit()
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    monkeypatch.setenv("PATH", "/nonexistent")           # no Slurm here: status and why answer from the ledger
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert raw_controls(result.output) == [] and "\\x1b]0;pwned" in result.output
    assert not [ln for ln in result.output.splitlines() if ln.startswith("n2 drained")]


def test_csv_cells_that_a_spreadsheet_would_run_are_quoted() -> None:
    """F12: a node name or reason that starts like a formula is quoted with ', numbers stay numbers."""
    import csv
    import io

    from slurmtools.reports.render import csv_text

    report = {"concentration": {"top": [{"node": "=HYPERLINK(\"http://evil\",\"x\")", "n": 3},
                                        {"node": "+1+cmd|' /C calc'!A0", "n": -2.5},
                                        {"node": "@SUM(A1)", "n": 1}, {"node": "-2+3", "n": 0},
                                        {"node": "\tx", "n": 0}, {"node": "\r=1", "n": 0}]},
              "mttr": {"median_s": float("inf")}}
    rows = list(csv.reader(io.StringIO(csv_text(report))))
    cells = [r[2] for r in rows[1:]]
    assert [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")] == ["-2.5"]   # a number stays one
    assert "'=HYPERLINK(\"http://evil\",\"x\")" in cells and "'\\x09x" in cells and "'\\x0d=1" in cells
    assert rows[-1] == ["mttr", "median_s", ""]          # a non-finite number is no number


def test_json_never_holds_infinity(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """F13, output side: a non-finite duration in the ledger (a row stored before values were bounded at
    ingest) gives null in `report --json`, never `Infinity` (which is not JSON)."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models

    with Session(api.engine_for(world["cfg"])) as s:
        s.add(models.CheckpointEvent(idempotency_key="k1", cluster="t", node="n1", job_id=7, kind="save",
                                     time=datetime.now(UTC) - timedelta(hours=1), seconds=float("inf")))
        s.commit()
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))

    def strict(text: str) -> Any:
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))

    result = CliRunner().invoke(main, ["report", "--json", "--section", "checkpoints"])
    assert result.exit_code == 0, result.output
    assert strict(result.stdout)["checkpoints"]["slowest"][0]["seconds"] is None
    out = tmp_path / "r.json"
    assert CliRunner().invoke(main, ["report", "--json", "--section", "checkpoints", "-o", str(out)]).exit_code == 0
    assert strict(out.read_text())["checkpoints"]["slowest"][0]["seconds"] is None


def test_the_html_report_escapes_what_the_ledger_holds(world: dict[str, Any]) -> None:
    """Jinja's autoescape stays on: markup from the ledger (a cluster, a note) is text in the HTML report."""
    from datetime import UTC, datetime, timedelta

    from slurmtools.ledger import api
    from slurmtools.reports.build import build_report
    from slurmtools.reports.html import render_html
    from slurmtools.reports.scope import Scope

    now = datetime.now(UTC)
    r = build_report(api.engine_for(world["cfg"]), Scope(cluster="t", since=now - timedelta(days=1), until=now,
                                                         nodes=4, gpus_per_node=8), charts=True)
    bad = "<svg onload=alert(1)>"
    r["report"]["cluster"], r["notes"] = bad, [bad]
    html = render_html(r)
    assert bad not in html and "&lt;svg onload=alert(1)&gt;" in html


def test_exporter_labels_are_escaped_as_the_exposition_format_requires(world: dict[str, Any]) -> None:
    """A finding's kind with a quote, a backslash and a newline (stored before the fix, written here straight
    into the database) is one sample line whose label reads back exactly: prometheus_client escapes it."""
    from datetime import UTC, datetime

    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from sqlalchemy.orm import Session

    from slurmtools.ledger import api, models
    from slurmtools.reports.exporter import LedgerCollector

    kind = 'x"} 1\nslurmtools_forged{a="b\\'
    engine = api.engine_for(world["cfg"])
    with Session(engine) as s:
        s.add(models.Finding(idempotency_key="k1", cluster="t", node="n1", time=datetime.now(UTC), source="job-log",
                             kind=kind, category="application", severity="error", action="none", trust="job",
                             message="m"))
        s.commit()
    registry = CollectorRegistry()
    registry.register(LedgerCollector(world["cfg"], engine))
    text = generate_latest(registry).decode()
    assert not [ln for ln in text.splitlines() if ln.startswith("slurmtools_forged")]
    found = [s for fam in text_string_to_metric_families(text) if fam.name == "slurmtools_findings"
             for s in fam.samples if s.name == "slurmtools_findings_total"]
    assert [s.labels["kind"] for s in found] == [kind]


# ------------------------------------------------------------------ 10. names Slurm does not know (F6, F7)
#: What a hostile exporter's labels may name: a hostlist, an address, markup, a newline, Lua and shell text.
HOSTILE_NODES = ["n[1-500]", "10.0.0.5", "<svg onload=alert(1)>", "n1\nn2", "n9", "x\x1b[2J", "a\"]] os.exit() --"]


def _detect_cfg(**over: Any) -> Any:
    from .test_detect import _Cfg

    return _Cfg(**{"general.reason_prefix": "slurmtools:", **over})


def _flag(node: str, hard: bool = False) -> dict[str, Any]:
    from .test_detect import _flag as flag

    return flag(node, hard)


def test_detect_excludes_and_drains_only_nodes_slurm_lists(world: dict[str, Any]) -> None:
    """F6: every flag is recorded, but only a name Slurm lists (as it is, or in lower case: `N2`) is acted on;
    a hard signal on an unknown name drains nothing; with no answer from Slurm nothing is excluded."""
    from slurmtools.detect import act

    slurm = world["slurm"]
    known = {n.name for n in slurm.nodes()}                 # n1..n4
    flags = [_flag(n) for n in [*HOSTILE_NODES, "N2"]] + [_flag("10.0.0.5", hard=True)]
    events, outcomes = act.events_for(_detect_cfg(**{"safety.min_drain_nodes": 100}), flags, known=known,
                                      excluded=set(), slurm=slurm)
    assert [o["outcome"] for o in outcomes] == ["unknown_node"] * len(HOSTILE_NODES) + ["soft_excluded",
                                                                                       "unknown_node"]
    assert [e.data["node"] for e in events if e.type == "exclusion"] == ["n2"]
    assert slurm.calls == []                              # no drain, not even asked
    findings = [e for e in events if e.type == "finding"]
    assert len(findings) == len(flags) and all("not acted on" in f.data["message"] for f in findings[:-2])
    assert all(raw_controls(f.data["node"]) == [] and len(f.data["node"]) <= 64 for f in findings)
    _, none = act.events_for(_detect_cfg(), [_flag("n1")], known=None, excluded=set())
    assert none[0]["outcome"] == "slurm_unavailable"


def test_the_soft_exclusion_limit_counts_every_active_detect_exclusion() -> None:
    """F7: the breaker's limit (max(2, 10 % of 16) here) holds across passes: with two detect exclusions still
    active, the next pass opens none, where it opened two more before."""
    from slurmtools.detect import act

    known = {f"n{i}" for i in range(16)}
    flags = [_flag(f"n{i}") for i in range(5, 9)]
    _, first = act.events_for(_detect_cfg(), flags, known=known, excluded=set(), active_detect=0)
    assert [o["outcome"] for o in first] == ["soft_excluded"] * 2 + ["breaker_open"] * 2
    _, later = act.events_for(_detect_cfg(), flags, known=known, excluded=set(), active_detect=2)
    assert [o["outcome"] for o in later] == ["breaker_open"] * 4


def _store_exclusions(world: dict[str, Any], nodes: list[str]) -> None:
    """Soft exclusions for NODES, as a ledger written before the fix holds them."""
    from slurmtools import drain
    from slurmtools.ledger import api

    cfg = world["cfg"]
    api.record([drain.exclusion_event(cfg, n, "soft", "slurmtools: hardware: anomaly", "detect", ttl_s=3600)
                for n in nodes], cfg)
    assert api.flush(cfg).shipped == len(nodes)


def test_publish_leaves_out_names_slurm_does_not_know(world: dict[str, Any]) -> None:
    """F6: neither published file (JSON for `slurmtools sbatch`, lines for the Lua plugins) names a node that
    is no valid name or that Slurm does not list; the ledger keeps them."""
    from sqlalchemy.orm import Session

    from slurmtools import plugins
    from slurmtools.controller import exclusions
    from slurmtools.ledger import api

    cfg = world["cfg"]
    _store_exclusions(world, [*HOSTILE_NODES, "n2"])
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.publish(cfg, s, known={"n1", "n2", "n3", "n4"})
        assert len(exclusions.active(s, cfg.cluster)) == len(HOSTILE_NODES) + 1
    data = json.loads(Path(cfg.exclusions.data_file).read_text())
    assert [x["node"] for x in data["exclusions"]] == ["n2"]
    _, rows = plugins.parse_data(Path(cfg.exclusions.plugin_file).read_text())
    assert [r.node for r in rows] == ["n2"]
    with Session(api.engine_for(cfg)) as s:       # Slurm not asked: the name grammar alone
        assert exclusions.publish(cfg, s, known=None)     # a changed set: rewritten at once
    data = json.loads(Path(cfg.exclusions.data_file).read_text())
    assert sorted(x["node"] for x in data["exclusions"]) == ["10.0.0.5", "n2", "n9"]
    assert all(plugins.valid_name(x["node"]) for x in data["exclusions"])


@pytest.mark.parametrize("body", [
    {"generated_epoch": "now", "exclusions": [{"node": "n1"}]}, {"generated_epoch": 0, "exclusions": "n1"},
    [1, 2], "[" * 100000, {"exclusions": [5, {"node": ["n1"]}, {"node": "n[1-500]"}, {"node": "n1,n2"},
                                          {"node": "<svg onload=alert(1)>"}, {"node": "n3", "expires_epoch": "x"},
                                          {"node": "n2"}]}])
def test_sbatch_never_dies_on_a_bad_exclusions_file(world: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                                    body: Any) -> None:
    """F6: whatever the published file holds, `slurmtools sbatch` submits with the valid names alone (a
    warning says what was left out), never with a traceback (hostlist.BadHostlist) or a name sbatch refuses."""
    import time

    from slurmtools.jobs import sbatch

    cfg = world["cfg"]
    if isinstance(body, dict) and "generated_epoch" not in body:
        body["generated_epoch"] = time.time()
    Path(cfg.exclusions.data_file).write_text(body if isinstance(body, str) else json.dumps(body))
    excluded = sbatch.active_exclusions(cfg)
    assert excluded in ([], ["n2"]) and "warning" in capsys.readouterr().err
    plan = sbatch.build(["--wrap", "true"], ask=None, excluded=[*excluded, "n[1-500]", "a,b", "x y"],
                        ckpt_signal=None, ckpt_grace=None, value_opts=(frozenset(), frozenset({"wrap"})))
    assert [a for a in plan.argv if a.startswith("--exclude")] == (["--exclude=n2"] if excluded else [])


def test_an_admin_ends_exclusions_whose_names_are_no_hostlist(world: dict[str, Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """F6, and F8 for `exclude list`: the listing shows each stored name with its controls made visible, and
    `exclude remove` takes that name as it is shown (or the exclusion's key), where `n[1-500]` is no hostlist
    Slurm knows and `x\\x1b[2J` no hostlist at all."""
    from sqlalchemy.orm import Session

    from slurmtools.controller import exclusions
    from slurmtools.ledger import api

    cfg = world["cfg"]
    _store_exclusions(world, ["n[1-500]", "x\x1b[2J", "n1\nn2", "<svg onload=alert(1)>"])
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    monkeypatch.setenv("PATH", "/nonexistent")          # Slurm is not asked about names it cannot have
    listed = CliRunner().invoke(main, ["exclude", "list"])
    assert listed.exit_code == 0 and raw_controls(listed.output) == [] and "x\\x1b[2J" in listed.output
    assert len(listed.output.splitlines()) == 4
    for name in ("n[1-500]", "x\\x1b[2J", "<svg onload=alert(1)>"):
        result = CliRunner().invoke(main, ["exclude", "remove", name, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["results"][0]["outcome"] == "ended"
    with Session(api.engine_for(cfg)) as s:
        (left,) = exclusions.active(s, cfg.cluster)
    result = CliRunner().invoke(main, ["exclude", "remove", "--key", left.idempotency_key])
    assert result.exit_code == 0, result.output
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.active(s, cfg.cluster) == []
    bad = CliRunner().invoke(main, ["exclude", "remove", "n[1-"])
    assert bad.exit_code == 2 and "not a valid hostlist" in bad.output and "Traceback" not in bad.output


# ------------------------------------------------------------------ 11. a hostile metrics server (F8, F9, F10)
class _Hostile:
    """What the hostile server sends: BODY for every path (bytes, or a callable of the query's parameters)."""
    body: Any = b""


@pytest.fixture()
def hostile_prom() -> Any:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self.reply(200, _Hostile.body(self.query()) if callable(_Hostile.body) else _Hostile.body)

    with serving(Handler) as url:
        yield url


def _matrix(series: str) -> bytes:
    return ('{"status":"success","data":{"resultType":"matrix","result":[' + series + "]}}").encode()


WEEK = (1_790_000_000.0, 1_790_000_000.0 + 7 * 86400)     # 10,081 points at 60 s: 80 KB per series


def test_many_label_sets_with_no_sample_cost_nothing(hostile_prom: str) -> None:
    """F9: 100,000 label sets with empty `values` (3.6 MB; 8 GB of grid before the fix) make no series."""
    from slurmtools.detect import prom

    _Hostile.body = _matrix(",".join(f'{{"metric":{{"a":"{i}"}},"values":[]}}' for i in range(100_000)))
    assert prom.Client(hostile_prom, chunk_s=7 * 86400).range("m", prom.grid_for(*WEEK, 60)) == []


@pytest.mark.parametrize("case", ["series", "samples", "bytes", "names"])
def test_every_prometheus_answer_is_bounded(hostile_prom: str, case: str) -> None:
    """F9: more label sets than detect.max_series, more samples than the query has points, an answer over
    detect.max_answer_bytes, more metric names than max_series: each one clear PromError, nothing built."""
    from slurmtools.detect import prom

    client = prom.Client(hostile_prom, chunk_s=7 * 86400, max_series=100, max_bytes=1 << 20)
    grid = prom.grid_for(WEEK[0], WEEK[0] + 3600, 60)          # 61 points
    if case == "series":
        _Hostile.body = _matrix(",".join(f'{{"metric":{{"a":"{i}"}},"values":[[{WEEK[0]},"1"]]}}' for i in range(101)))
        match = "more than 100 series"
    elif case == "samples":
        _Hostile.body = _matrix('{"metric":{"a":"1"},"values":[' + ",".join([f'[{WEEK[0]},"1"]'] * 62) + "]}")
        match = "62 samples for 61 points"
    elif case == "bytes":
        _Hostile.body = _matrix('{"metric":{"a":"' + "x" * (1 << 20) + '"},"values":[]}')
        match = "larger than 1048576 bytes"
    else:
        _Hostile.body = json.dumps({"status": "success", "data": [{"__name__": f"m{i}"} for i in range(101)]}).encode()
        with pytest.raises(prom.PromError, match="more than 100 metrics"):
            client.names("{job=~'.+'}", *WEEK)
        return
    with pytest.raises(prom.PromError, match=match):
        client.range("m", grid)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("body", [
    '"a string"', "[1, 2]", '{"status": "success", "data": "x"}', '{"status": "error", "error": "' + "e" * 5000 + '"}',
    '{"status": "success", "data": {"resultType": "matrix", "result": "x"}}',
    '{"status": "success", "data": {"resultType": "matrix", "result": [1, "x"]}}',
    '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": [], "values": {}}]}}',
    '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [{"a": 1}]}]}}',
    DEEP, '{"status":"success","data":{"resultType":"matrix","result":[{"metric":' + DEEP + ',"values":[]}]}}',
    '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[' + DEEP + "]}]}}",
], ids=["string", "list", "data-string", "long-error", "result-string", "items-not-objects", "wrong-types",
        "pairs-objects", "deep", "deep-labels", "deep-values"])
def test_malformed_prometheus_json_is_one_line(hostile_prom: str, world: dict[str, Any],
                                               monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """F10: `detect scan` on any of these answers exits with one line (or reads what is readable), never a
    traceback."""
    _Hostile.body = body.encode()
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    result = CliRunner().invoke(main, ["detect", "scan", "--prometheus", hostile_prom, "--start", "2h"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code:
        assert result.exit_code == 1 and result.output.startswith("slurmtools: error:"), result.output
        assert len(result.output.strip().splitlines()) == 1 and len(result.output) < 600


def test_labels_reach_the_terminal_cleaned(hostile_prom: str, world: dict[str, Any],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """F8: a GPU label with a screen clear and a title, printed by `detect explain`, shows as text."""
    def answer(q: dict[str, str]) -> bytes:
        start, end, step = float(q["start"]), float(q["end"]), float(q["step"])
        n = int((end - start) // step) + 1
        values = ",".join(f'[{start + i * step},"50"]' for i in range(n))
        labels = json.dumps({"Hostname": "n1", "gpu": HOSTILE_TEXT, "modelName": "H100"})
        return _matrix(f'{{"metric":{labels},"values":[{values}]}}')

    _Hostile.body = answer
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    result = CliRunner().invoke(main, ["detect", "explain", "n1", "--prometheus", hostile_prom])
    assert result.exit_code == 0, result.output
    assert raw_controls(result.output) == [] and "\\x1b]0;pwned" in result.output


def test_the_controller_requeues_away_from_known_nodes_only(world: dict[str, Any]) -> None:
    """F6 in the controller: soft exclusions for names Slurm does not list (an old ledger's) never reach a
    requeued job's ExcNodeList, where one name Slurm refuses fails the update at every pass."""
    from .test_controller import controller, decisions, ended

    _store_exclusions(world, [*HOSTILE_NODES, "n3"])
    world["slurm"].add_job(7, comment="slurmtools=retry:2")
    ended(world, comment="slurmtools=retry:2")
    report = controller(world).once()
    assert report["decisions"][0]["status"] == "done" and not report["alerts"]
    assert world["slurm"].actions() == [("requeue", 7, True), ("update", 7, ("n2", "n3"), "now+2"), ("release", 7)]
    assert decisions(world)[0].excluded_nodes == "n[2-3]"


def test_detect_record_counts_the_exclusions_earlier_passes_opened(world: dict[str, Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """F7 through `detect scan --record`'s own path: two detect exclusions from earlier passes still active on a
    4-node cluster (limit 2) leave no room for a third (counted per pass, it opened)."""
    import slurmtools.slurm
    from slurmtools.cli.detect import _record

    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(world["path"]))
    monkeypatch.setattr(slurmtools.slurm, "get_client", lambda cfg=None: world["slurm"])
    _store_exclusions(world, ["n1", "n2"])
    outcomes = _record(world["cfg"], None, [_flag("n3")])
    assert [o["outcome"] for o in outcomes] == ["breaker_open"]


def test_the_background_flush_never_imports_a_module_from_its_working_directory(tmp_path: Path) -> None:
    """A hook runs as root from whatever directory Slurm gives it; `python -m` would put that directory first on
    sys.path. A planted `logging.py` (the package imports it first thing) must not run under the flush's command (the
    lab's chroot met a helper's /tmp/enum.py the same way)."""
    from slurmtools.ledger.api import flush_argv

    marker = tmp_path / "pwned"
    (tmp_path / "logging.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(7)\n")
    argv = flush_argv()
    assert argv[1] == "-P"
    probe = [*argv[:4], "--version"]          # the same interpreter, flags and module, a command that needs no config
    done = subprocess.run(probe, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not marker.exists(), done.stderr[-400:]
    # and the test can fail: without -P the planted module runs
    bare = subprocess.run([argv[0], *argv[2:4], "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert marker.exists() and bare.returncode == 7
