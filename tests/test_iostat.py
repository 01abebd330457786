"""The mountstats reader on recorded real files (kernels 4.18 to recent, NFSv3/v4.x, TCP and RDMA, nconnect),
its refusal of garbled and truncated files, the rates between two readings (a replayed sequence) with the
verdict on what limits a mount, and `slurmtools io`."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from slurmtools.cli import main
from slurmtools.iostat import mountstats, rates

DATA = Path(__file__).parent / "data" / "mountstats"
FILES = sorted(DATA.glob("*.txt"))
KUBELET = DATA / "procfs-nfs41-tcp-kubelet.txt"
RDMA16 = DATA / "procfs-nfs3-rdma-nconnect16.txt"


def test_the_recorded_files_are_many_and_varied() -> None:
    assert len(FILES) >= 8
    mounts = [m for f in FILES for m in mountstats.parse(f.read_text())]
    assert {m.fstype for m in mounts} == {"nfs", "nfs4"}
    assert {t["proto"] for m in mounts for t in m.transports} >= {"tcp", "rdma"}
    assert {m.rpc_version for m in mounts} == {"1.0", "1.1"}
    assert {m.opts.get("vers") for m in mounts} >= {"3", "4.1", "4.2"}
    assert mountstats.parse((DATA / "pcp-nonfsmounts.txt").read_text()) == []


def test_the_counters_are_read_as_the_kernel_printed_them() -> None:
    (m,) = mountstats.parse(KUBELET.read_text())
    assert m.device == "fs.example.com:/volume4/apps/home-automation/node-red-data" and m.fstype == "nfs4"
    assert m.opts["vers"] == "4.1" and m.age == 83520
    assert m.ops["READ"] == {"ops": 34096, "trans": 34096, "timeouts": 0, "bytes_sent": 7103096,
                             "bytes_recv": 1792122744, "queue_ms": 2272, "rtt_ms": 464840, "execute_ms": 467945,
                             "errors": 0}
    assert m.ops["OPEN"]["errors"] == 394
    assert m.bytes["normal_write"] == 39056395530 and m.bytes["server_write"] == 39087991255
    assert m.transports == [{"proto": "tcp", "srcport": 940, "bind_count": 0, "connect_count": 2,
                             "connect_time": 0, "idle_time": 1, "sends": 938505, "recvs": 938504, "bad_xids": 0,
                             "req_u": 12756069, "bklog_u": 0, "max_slots": 32, "sending_u": 254729,
                             "pending_u": 10823602}]
    (r,) = mountstats.parse(RDMA16.read_text())
    assert len(r.transports) == 16 and r.opts["nconnect"] == "16"
    totals = r.transport_totals()
    assert totals["sends"] == sum(t["sends"] for t in r.transports) > 7_000_000_000
    assert all(len(t["more"]) == 7 for t in r.transports)      # the newer RDMA counters, kept, not guessed at
    old = [m for m in mountstats.parse((DATA / "pcp-mountstats-4.18.0-80.el8-rpc-v1.0.txt").read_text())]
    assert old and all(len(m.ops["READ"]) == 9 and m.ops["READ"]["errors"] == 0 for m in old)  # 8 counters read


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_cut_file_gives_an_error_or_the_same_numbers(path: Path) -> None:
    """Cut anywhere: either the cut fell between lines (the mounts read so far are exact) or a clear error."""
    text = path.read_text()
    full = {m.key: m for m in mountstats.parse(text)}
    rng = random.Random(path.name)
    for cut in sorted(rng.sample(range(1, len(text)), min(60, len(text) - 1))):
        try:
            part = mountstats.parse(text[:cut])
        except mountstats.MountstatsError as exc:
            assert re.match(r"line \d+: ", str(exc)), exc
            continue
        assert text[cut - 1] == "\n"
        for m in part:
            whole = full[m.key]
            assert all(whole.ops[op] == counters for op, counters in m.ops.items())
            assert m.transports == whole.transports[:len(m.transports)]


@pytest.mark.parametrize("garble, message", [
    ("\t\t\tREAD: 34096 34096 0 7103096 1792122744 2272 464840", "expected 9 counters (RPC iostats version 1.1)"),
    ("\t\t\tREAD: 34096 34096 0 7103096 1792122744 2272 464840 467945", "expected 9 counters"),
    ("\t\t\tREAD: 34096 34096 0 7103x96 1792122744 2272 464840 467945 0", "expected numbers"),
    ("\t\t\tREAD: -5 34096 0 7103096 1792122744 2272 464840 467945 0", "negative"),
    ("\txprt:\ttcp 940 0 2 0 1", "needs at least 10 fields"),
    ("\txprt:\tsctp 1 2 3 4 5 6 7 8 9 10", "unknown transport"),
    ("\tbytes:\t1 2 3", "bytes: expected 8"),
    ("device fs.example.com:/x mounted at /y with fstype nfs4", "not a `device"),
])
def test_a_garbled_file_gives_a_clear_error(garble: str, message: str) -> None:
    lines = KUBELET.read_text().splitlines()
    where = {"READ:": 13, "xprt:": 10, "bytes:": 8, "device ": 0}
    lines[next(i for k, i in where.items() if k in garble)] = garble
    with pytest.raises(mountstats.MountstatsError) as err:
        mountstats.parse("\n".join(lines) + "\n")
    assert message in str(err.value) and str(err.value).startswith("line ")


def _later(text: str, seconds: float, *, write_ops: int, queue_ms_per_op: float, rtt_ms_per_op: float,
           backlog_per_send: float) -> str:
    """A replayed second reading: the first one with a window's WRITEs (and their RPCs) added to its counters."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("WRITE:"):
            v = [int(x) for x in stripped.split()[1:]]
            add = [write_ops, write_ops, 0, write_ops * (1 << 20), write_ops * 200,
                   int(write_ops * queue_ms_per_op), int(write_ops * rtt_ms_per_op),
                   int(write_ops * (queue_ms_per_op + rtt_ms_per_op + 1)), 0]
            line = "\t\t\tWRITE: " + " ".join(str(a + b) for a, b in zip(v, add, strict=True))
        elif stripped.startswith("xprt:"):
            f = stripped.split()
            v = [int(x) for x in f[2:]]
            v[5] += write_ops                       # sends
            v[6] += write_ops                       # recvs
            v[8] += write_ops * 32                  # req_u: 32 in flight at each send
            v[9] += int(write_ops * backlog_per_send)
            line = "\txprt:\ttcp " + " ".join(map(str, v))
        elif stripped.startswith("bytes:"):
            v = [int(x) for x in stripped.split()[1:]]
            v[1] += write_ops * (1 << 20)
            line = "\tbytes:\t" + " ".join(map(str, v))
        out.append(line)
    return "\n".join(out) + "\n"


def test_a_window_where_the_rpc_queue_is_the_limit() -> None:
    before_text = KUBELET.read_text()
    after_text = _later(before_text, 10, write_ops=2000, queue_ms_per_op=40.0, rtt_ms_per_op=5.0,
                        backlog_per_send=12.5)
    (before,), (after,) = mountstats.parse(before_text), mountstats.parse(after_text)
    r = rates.window(before, after, 10.0)
    w = r["ops"]["WRITE"]
    assert (w["ops"], w["ops_per_s"]) == (2000, 200.0)
    assert (w["queue_ms"], w["rtt_ms"], w["execute_ms"]) == (40.0, 5.0, 46.0)
    assert r["write_MBps"] == pytest.approx(2000 * (1 << 20) / 10 / 1e6)
    assert r["transport"]["mean_in_flight"] == 32 and r["transport"]["mean_backlog"] == 12.5
    assert r["transport"]["max_slots"] == 32
    assert r["verdict"]["limit"] == "client_rpc_queue" and r["verdict"]["queue_share"] == pytest.approx(40 / 45)
    assert any("nconnect" in a["setting"] for a in r["verdict"]["advice"])
    assert all(a["reference"] for a in r["verdict"]["advice"])
    slow = mountstats.parse(_later(before_text, 10, write_ops=500, queue_ms_per_op=0.5, rtt_ms_per_op=30.0,
                                   backlog_per_send=0))[0]
    assert rates.window(before, slow, 10.0)["verdict"]["limit"] == "server_or_network"
    assert rates.window(before, before, 10.0)["verdict"]["limit"] is None


def test_slurmtools_io_on_recorded_files(tmp_path: Path) -> None:
    run = CliRunner().invoke
    one = run(main, ["io", "--mountstats", str(KUBELET)])
    assert one.exit_code == 0 and "averages since each mount" in one.output and "WRITE" in one.output
    assert "limit: client_rpc_queue" in one.output            # this real mount: writes queued 1.2 s for 31 ms
    later = tmp_path / "later.txt"
    later.write_text(_later(KUBELET.read_text(), 5, write_ops=1000, queue_ms_per_op=20.0, rtt_ms_per_op=2.0,
                            backlog_per_send=4.0))
    two = run(main, ["io", "--mountstats", str(KUBELET), "--mountstats", str(later), "--seconds", "5", "--json"])
    assert two.exit_code == 0
    (doc,) = json.loads(two.output)
    assert doc["ops"]["WRITE"]["ops_per_s"] == 200.0 and doc["verdict"]["limit"] == "client_rpc_queue"
    bad = tmp_path / "bad.txt"
    bad.write_text(KUBELET.read_text()[:-20])
    for args, message in ((["--mountstats", str(bad)], "truncated"),
                          (["--mountstats", str(KUBELET), "--mountstats", str(later)], "--seconds"),
                          (["--mountstats", str(tmp_path / "missing")], "cannot read")):
        result = run(main, ["io", *args])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    live = run(main, ["io", "--interval", "0.05"])             # this kernel has no NFS client
    assert live.exit_code == 0 and "no NFS mount" in live.output


def test_a_jobs_nfs_io_goes_from_the_prolog_to_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real prolog keeps the counters, the real epilog records the window, the ledger stores one row per
    job, node and mount; a replayed later reading stands in for the NFS traffic this kernel cannot make."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools import config
    from slurmtools.hooks import epilog, prolog
    from slurmtools.ledger import api, models

    live = tmp_path / "mountstats"
    live.write_text(KUBELET.read_text())
    kern = tmp_path / "kern.log"
    kern.write_text("")
    cfg_file = tmp_path / "slurmtools.toml"
    cfg_file.write_text(f"""
[general]
cluster = "t"
[ledger]
url = "sqlite:///{tmp_path}/ledger.db"
spool_dir = "{tmp_path}/spool"
[node]
kernel_log = "file:{kern}"
state_dir = "{tmp_path}/state"
[checks]
prolog = []
[io]
mountstats = "{live}"
""")
    cfg = config.load(cfg_file, env={})
    monkeypatch.setattr(epilog.api, "flush_in_background", lambda: None)
    e = {"SLURM_JOB_ID": "77", "SLURMD_NODENAME": "n1", "SLURM_NODELIST": "n1", "SLURM_JOB_EXIT_CODE": "0",
         "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_USER": "alice", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
    prolog.run(e, cfg)
    kept = tmp_path / "state" / "jobs" / "77.n1.io.json"
    assert kept.exists()
    live.write_text(_later(KUBELET.read_text(), 5, write_ops=3000, queue_ms_per_op=25.0, rtt_ms_per_op=3.0,
                           backlog_per_send=6.0))
    assert epilog.run({**e, "SLURM_SCRIPT_CONTEXT": "epilog_slurmd"}, cfg) == 0
    assert not kept.exists()
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        (row,) = s.scalars(select(models.IoSummary)).all()
    assert (row.node, row.job_id, row.mountpoint.endswith("pv0001"), row.write_ops, row.read_ops) == (
        "n1", 77, True, 3000, 0)
    assert row.write_bytes == 3000 * (1 << 20) and row.queue_ms == 25.0 and row.rtt_ms == 3.0
    assert row.mean_backlog == 6.0 and row.limit == "client_rpc_queue" and row.seconds > 0
    assert row.details["vers"] == "4.1"
    # no NFS mount at job start: the prolog keeps nothing and the epilog records nothing
    live.write_text((DATA / "pcp-nonfsmounts.txt").read_text())
    e2 = {**e, "SLURM_JOB_ID": "78"}
    prolog.run(e2, cfg)
    assert not (tmp_path / "state" / "jobs" / "78.n1.io.json").exists()


def test_checkpoint_marks_become_events_with_bandwidth_and_utilisation(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A job marks a save with `slurmtools checkpoint begin/end`; its bytes come from the mount's counters (a
    replayed reading); the epilog records the event with its bandwidth against the filesystem's nominal one."""
    import os

    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from slurmtools import config
    from slurmtools.hooks import epilog
    from slurmtools.iostat import checkpoints
    from slurmtools.ledger import api, models

    live = tmp_path / "mountstats"
    live.write_text(KUBELET.read_text())
    (mount,) = mountstats.parse(KUBELET.read_text())
    cfg_file = tmp_path / "slurmtools.toml"
    cfg_file.write_text(f"""
[general]
cluster = "t"
[ledger]
url = "sqlite:///{tmp_path}/ledger.db"
spool_dir = "{tmp_path}/spool"
[node]
kernel_log = "file:{tmp_path}/kern.log"
state_dir = "{tmp_path}/state"
[io]
mountstats = "{live}"
[io.filesystems."{mount.mountpoint}"]
write_gbps = 250.0
""")
    (tmp_path / "kern.log").write_text("")
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(cfg_file))
    job = {"SLURM_JOB_ID": "91", "SLURMD_NODENAME": "n1"}
    for k, v in job.items():
        monkeypatch.setenv(k, v)
    marks = Path(checkpoints.marks_path("91", os.getuid()))
    marks.unlink(missing_ok=True)
    run = CliRunner().invoke
    assert run(main, ["checkpoint", "begin", "--kind", "save", "--path", mount.mountpoint + "/ckpt"]).exit_code == 0
    live.write_text(_later(KUBELET.read_text(), 4, write_ops=4000, queue_ms_per_op=1.0, rtt_ms_per_op=1.0,
                           backlog_per_send=0))
    end = run(main, ["checkpoint", "end", "--kind", "save", "--path", mount.mountpoint + "/ckpt", "--json"])
    assert end.exit_code == 0 and json.loads(end.output)["mount"]["mountpoint"] == mount.mountpoint
    assert run(main, ["checkpoint", "end", "--kind", "nap"]).exit_code == 2
    cfg = config.load(cfg_file, env={})
    monkeypatch.setattr(epilog.api, "flush_in_background", lambda: None)
    e = {**job, "SLURM_NODELIST": "n1", "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_RESTART_COUNT": "0",
         "SLURM_JOB_UID": str(os.getuid()), "SLURM_SCRIPT_CONTEXT": "epilog_slurmd"}
    assert epilog.run(e, cfg) == 0
    assert not marks.exists()
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        (row,) = s.scalars(select(models.CheckpointEvent)).all()
    assert (row.kind, row.job_id, row.node, row.bytes_source, row.mountpoint) == (
        "save", 91, "n1", "mountstats", mount.mountpoint)
    assert row.nbytes == 4000 * (1 << 20) and row.seconds > 0
    assert row.gbytes_per_s == pytest.approx(row.nbytes / row.seconds / 1e9)
    assert row.utilisation == pytest.approx(row.gbytes_per_s / 250.0)
    # the checkpoint's own WRITE RPCs: 4000 of them, each 1 ms queued and 1 ms on the wire (the replayed reading)
    assert (row.source, row.rpcs) == ("marks", 4000)
    assert (row.queue_ms_per_op, row.rtt_ms_per_op) == (pytest.approx(1.0), pytest.approx(1.0))
    # a marks file someone else made is neither written into nor read
    marks.write_text("")
    os.chown(marks, 65534, 65534)
    try:
        bad = run(main, ["checkpoint", "begin", "--kind", "load"])
        assert bad.exit_code == 2 and "not yours" in bad.output
        assert checkpoints.read_marks("91", os.getuid()) == []
    finally:
        marks.unlink()


def test_marks_pair_in_order_and_given_bytes_win() -> None:
    from slurmtools.iostat import checkpoints

    marks = [{"event": "begin", "kind": "load", "time": 10.0}, {"event": "end", "kind": "load", "time": 14.0,
                                                                 "bytes": 4_000_000_000},
             {"event": "end", "kind": "save", "time": 20.0},            # an end without a begin: dropped
             {"event": "begin", "kind": "save", "time": 30.0}]          # a begin without an end: dropped
    (load,) = checkpoints.pair(marks, {})
    assert (load["seconds"], load["bytes"], load["bytes_source"], load["gbytes_per_s"], load["utilisation"]) == (
        4.0, 4_000_000_000, "given", 1.0, None)


def test_node_exporter_serves_each_mount_under_node_exporters_names(tmp_path: Path) -> None:
    """`slurmtools exporter --node`: a real HTTP scrape of a recorded nconnect=16 RDMA mount; names, labels and
    units as node_exporter's mountstats collector, values equal to the file's; an unreadable file is up=0."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from slurmtools import config
    from slurmtools.reports.exporter import serve

    src = DATA / "procfs-nfs3-rdma-nconnect16.txt"
    (mount,) = mountstats.parse(src.read_text())
    cfg_file = tmp_path / "slurmtools.toml"
    cfg_file.write_text(f'[ledger]\nspool_dir = "{tmp_path}/spool"\n[io]\nmountstats = "{src}"\n')
    cfg = config.load(cfg_file, env={})
    server, _thread = serve(cfg, "127.0.0.1:0", None, node=True)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        server.shutdown()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}
    base = {"export": mount.device, "mountpoint": mount.mountpoint, "protocol": "rdma",
            "mountaddr": mount.opts.get("mountaddr") or mount.opts.get("addr", "")}

    def value(name: str, **extra: str) -> float:
        return samples[(name, tuple(sorted({**base, **extra}.items())))]

    assert samples[("slurmtools_mountstats_up", ())] == 1.0
    assert samples[("slurmtools_mountstats_nfs_mounts", ())] == 1.0
    assert value("slurmtools_mountstats_nfs_read_bytes_total") == mount.bytes["normal_read"]
    backlog = [k for k in samples if k[0] == "slurmtools_mountstats_nfs_transport_backlog_queue_total"]
    assert len(backlog) == len(mount.transports) == 16
    assert value("slurmtools_mountstats_nfs_transport_backlog_queue_total", transport="3") == \
        mount.transports[3]["bklog_u"]
    read = mount.ops["READ"]
    assert value("slurmtools_mountstats_nfs_operations_requests_total", operation="READ") == read["ops"]
    assert value("slurmtools_mountstats_nfs_operations_queue_time_seconds_total", operation="READ") == \
        pytest.approx(read["queue_ms"] / 1000)
    assert value("slurmtools_mountstats_nfs_operations_response_time_seconds_total", operation="READ") == \
        pytest.approx(read["rtt_ms"] / 1000)
    # operations the mount never used are left out (bounded series); SETATTR is all zeros in this file
    assert not any(k[0].startswith("slurmtools_mountstats_nfs_operations") and ("operation", "SETATTR") in k[1]
                   for k in samples)
    assert "slurmtools_spool_files" in text
    # the node side never touches a ledger or Slurm
    assert "slurmtools_ledger_up" not in text and "slurmtools_slurm_up" not in text

    from slurmtools.iostat.metrics import MountstatsCollector

    cfg.io.mountstats = str(tmp_path / "missing")
    up = next(f for f in MountstatsCollector(cfg).collect() if f.name == "slurmtools_mountstats_up")
    assert up.samples[0].value == 0.0


PROCFS_NFS40 = DATA / "procfs-nfs40-fixture-26231.txt"


def test_procfs_fixture_bytes_by_position_and_a_wrapped_queue_time() -> None:
    """prometheus/procfs's fixture (NFSv4.0, age 13968 s): `bytes: 1207640230 0 0 0 1210214218 0 295483 0` is 1.2 GB
    read by the application (normal reads) and 1.21 GB from the server; ACCESS's queue counter 18446743919241604546
    (2^64 - 154467947070) is a time sum that went negative: missing, and said so, not 6.3 million s per op."""
    (m,) = mountstats.parse(PROCFS_NFS40.read_text())
    assert (m.fstype, m.statvers, m.rpc_version, m.age) == ("nfs4", "1.1", "1.0", 13968)
    assert m.bytes == {"normal_read": 1207640230, "normal_write": 0, "direct_read": 0, "direct_write": 0,
                       "server_read": 1210214218, "server_write": 0, "read_pages": 295483, "write_pages": 0}
    assert "queue_ms" not in m.ops["ACCESS"] and m.ops["ACCESS"]["rtt_ms"] == 1667369447
    assert m.notes == ["line 19: ACCESS: queue_ms 18446743919241604546 is a wrapped 64-bit value: treated as missing"]
    r = rates.since_mount(m)
    assert r["read_bytes"] == 1207640230 and r["write_bytes"] == 0
    assert r["read_MBps"] == pytest.approx(1207640230 / 13968 / 1e6)
    assert r["wire_read_MBps"] == pytest.approx(1210292152 / 13968 / 1e6)      # READ's bytes received
    assert r["ops"]["ACCESS"]["queue_ms"] is None
    assert r["ops"]["ACCESS"]["rtt_ms"] == pytest.approx(1667369447 / 2927395007)
    assert r["transport"]["sends"] == 6428 and r["transport"]["mean_in_flight"] == pytest.approx(12154 / 6428)
    assert r["missing"] == m.notes and r["verdict"]["limit"] == "server_or_network"


def _nfsiostat(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """nfs-utils' `mountstats iostat -f FILE` output (recorded): per mount, ops/s, rpc bklog, read and write rows."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    lines = path.read_text().splitlines()
    cur: dict[str, Any] = {}
    for i, line in enumerate(lines):
        if line.endswith(":") and " mounted on " in line:
            dev, mnt = line[:-1].split(" mounted on ", 1)
            cur = out.setdefault((dev, mnt), {})
        elif line.strip() == "ops/s       rpc bklog":
            cur["ops_s"], cur["bklog"] = (float(x) for x in lines[i + 1].split())
        elif line.startswith(("read:", "write:")):
            v = lines[i + 1].replace("(", " ").replace(")", " ").replace("%", " ").split()
            # ops/s kB/s kB/op retrans (pct) rtt exe queue [errors (pct)]
            cur[line.split(":")[0]] = {"ops_s": float(v[0]), "kb_s": float(v[1]), "kb_op": float(v[2]),
                                       "retrans": int(v[3]), "rtt": float(v[5]), "exe": float(v[6]),
                                       "queue": float(v[7]), "errors": int(v[8]) if len(v) > 8 else None}
    return out


NFSIOSTAT = sorted((DATA / "nfsiostat").glob("*.txt"))


@pytest.mark.parametrize("recorded", NFSIOSTAT, ids=[p.name for p in NFSIOSTAT])
def test_averages_since_the_mount_match_nfsiostat(recorded: Path) -> None:
    """Every figure nfsiostat prints for a mount, against ours from the same file (it rounds to 3 decimals)."""
    want = _nfsiostat(recorded)
    mounts = mountstats.parse((DATA / recorded.name).read_text())
    assert want and len(want) == len({m.key for m in mounts})

    def near(x: float) -> Any:
        return pytest.approx(x, abs=1.5e-3)

    for m in {m.key: m for m in mounts}.values():     # a mount listed twice: nfsiostat keeps the last, as here
        w, r = want[(m.device, m.mountpoint)], rates.since_mount(m)
        if len(m.transports) == 1:     # nfsiostat keeps one xprt line's counters; with nconnect we sum them all
            assert r["transport"]["sends_per_s"] == near(w["ops_s"])
        for op in ("read", "write"):
            o, x = r["ops"].get(op.upper()), w[op]
            if o is None:
                assert x["ops_s"] == 0.0 and x["kb_s"] == 0.0
                continue
            assert (o["ops_per_s"], o["ops_per_s"] * o["kb_per_op"], o["kb_per_op"]) == (
                near(x["ops_s"]), near(x["kb_s"]), near(x["kb_op"]))
            assert (o["rtt_ms"], o["execute_ms"], o["queue_ms"]) == (near(x["rtt"]), near(x["exe"]), near(x["queue"]))
            assert o["retransmissions"] == x["retrans"]
            if x["errors"] is not None:
                assert o["errors"] == x["errors"]


@pytest.mark.parametrize("line, message", [
    ("\tage:\t-5", "age: '-5' is not a number of seconds >= 0"),
    ("\tage:\t" + "9" * 4000, "is not a mount's age"),
    ("\tage:\tsoon", "age: 'soon'"),
])
def test_a_bad_age_is_one_line(line: str, message: str, tmp_path: Path) -> None:
    """F11 (issue 30): a negative or 4,000-digit age gave a traceback in `slurmtools io`."""
    text = PROCFS_NFS40.read_text().replace("\tage:\t13968", line)
    with pytest.raises(mountstats.MountstatsError, match="line 7: age: "):
        mountstats.parse(text)
    f = tmp_path / "ms"
    f.write_text(text)
    res = CliRunner().invoke(main, ["io", "--mountstats", str(f)])
    assert res.exit_code == 2 and message in res.output and len(res.output.strip().splitlines()) == 1
    assert "Traceback" not in res.output


def test_huge_counters_are_missing_not_figures(tmp_path: Path) -> None:
    """F11: 4,000-digit counters in the per-op, bytes and xprt lines become missing values with a note each (the
    rest of the mount stays usable); nothing overflows, in JSON or text."""
    huge = "7" * 4000
    text = PROCFS_NFS40.read_text()
    text = text.replace("READ: 1298 1298 0 207680 1210292152 6 79386 79407",
                        f"READ: 1298 1298 0 207680 1210292152 {huge} 79386 79407")
    text = text.replace("bytes:\t1207640230 0 0 0", f"bytes:\t{huge} 0 0 0")
    text = text.replace("tcp 832 0 1 0 11 6428 6428 0 12154", f"tcp 832 0 1 0 11 {huge} 6428 0 12154")
    (m,) = mountstats.parse(text)
    assert "normal_read" not in m.bytes and "queue_ms" not in m.ops["READ"] and "sends" not in m.transports[0]
    assert len(m.notes) == 4 and all("not a 64-bit counter: treated as missing" in n for n in m.notes[:3])
    assert "(4000 digits)" in m.notes[0] and len(m.notes[0]) < 200
    r = rates.since_mount(m)
    assert r["read_bytes"] is None and r["read_MBps"] is None and r["ops"]["READ"]["queue_ms"] is None
    assert r["transport"]["sends"] is None and r["verdict"]["limit"] is None
    assert "times missing" in r["verdict"]["why"] or "missing" in r["verdict"]["why"]
    f = tmp_path / "ms"
    f.write_text(text)
    for args in ([], ["--json"]):
        res = CliRunner().invoke(main, ["io", "--mountstats", str(f), *args])
        assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    assert "missing: line 14" in CliRunner().invoke(main, ["io", "--mountstats", str(f)]).output


def test_wrapped_counter_between_two_readings_is_missing() -> None:
    """A window whose reading holds a wrapped value: that op's time is missing, the other figures are not."""
    text = PROCFS_NFS40.read_text()
    (b,) = mountstats.parse(text)
    (c,) = mountstats.parse(text.replace("READ: 1298 1298 0 207680", "READ: 1398 1398 0 207680")
                            .replace("ACCESS: 2927395007 2927394995", "ACCESS: 2927395017 2927395005"))
    r = rates.window(b, c, 10.0)
    assert (r["ops"]["READ"]["ops"], r["ops"]["ACCESS"]["ops"]) == (100, 10)
    assert r["ops"]["ACCESS"]["queue_ms"] is None and r["ops"]["READ"]["queue_ms"] == 0.0
    assert r["ops"]["ACCESS"]["retransmissions"] == 0 and r["missing"] == c.notes
