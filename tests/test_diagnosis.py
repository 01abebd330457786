"""Epilog diagnosis: the parser on a corpus of real-format lines, the noise policy, job evidence,
windowed sources (the real /dev/kmsg included), the CLI contract, and the epilog hook itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmtools.cli import main
from slurmtools.diagnosis import build_catalog, catalog, diagnose, joblog, kernel, prefilter, sources
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.findings import ACTIONS, CATEGORIES, SEVERITIES

DATA = Path(__file__).parent / "data"
SEVERE = {"warning", "error", "critical"}


def corpus() -> list[tuple[str, str, str]]:
    rows = []
    for raw in (DATA / "kernel" / "corpus.tsv").read_text().splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        kind, xid, line = raw.split("\t", 2)
        rows.append((kind, xid, line))
    return rows


@pytest.mark.parametrize("kind, xid, line", corpus(), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_corpus_line(kind: str, xid: str, line: str) -> None:
    findings = diagnose(line.encode())
    if kind == "-":
        assert not [f for f in findings if f.severity in SEVERE], findings
        return
    assert findings, f"no finding for {line!r}"
    top = findings[0]
    assert top.kind == kind
    assert top.xid == (None if xid == "-" else int(xid))
    # a daemon's syslog line (`nv-fabricmanager[PID]: ...`) is evidence anyone could forge with logger(1)
    syslog = re.match(r"[\w./-]+\[\d+\]: ", top.message)
    assert top.line == 1 and top.trust == ("syslog" if syslog else "kernel") and top.message in line
    assert top.category in CATEGORIES and top.action in ACTIONS and top.severity in SEVERITIES


def test_verdicts_that_matter() -> None:
    def one(line: str, **kw: object) -> tuple[str, str, str]:
        f = diagnose(line.encode(), **kw)[0]  # type: ignore[arg-type]
        return f.category, f.action, f.severity

    assert one("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.") == (
        "hardware", "drain_node", "critical")
    assert one("NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=p, DBE")[1] == "reset_gpu"
    assert one("NVRM: Xid (PCI:0000:3b:00): 94, pid=1, name=p, Contained")[1] == "restart_app"
    assert one("NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=p, new")[:2] == ("unknown", "investigate")
    assert one("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
               "(Node Reboot Required)")[1] == "reboot_node"
    assert one("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up")[1] == "drain_node"
    assert one("pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0")[1] == "drain_node"
    assert one("mce: [Hardware Error]: Machine check events logged")[1] == "none"
    assert one("Memory cgroup out of memory: Killed process 1 (p)")[:2] == ("application", "restart_app")
    aer = diagnose(b"pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0")[0]
    assert aer.pci == "0000:01:00"  # the device that erred, not the reporting port


def test_operator_override() -> None:
    line = b"NVRM: Xid (PCI:0000:3b:00): 94, pid=1, name=p, Contained"
    f = diagnose(line, overrides={"94": {"action": "reset_gpu", "severity": "error"}})[0]
    assert (f.action, f.severity, f.details["why"]) == ("reset_gpu", "error", "operator override")


def test_catalog_covers_every_xid_and_rebuilds_from_source() -> None:
    built = build_catalog.build(DATA / "xid")
    shipped = json.loads((Path(build_catalog.__file__).parents[1] / "data" / "xid_catalog.json").read_text())
    assert built == shipped, "run: python -m slurmtools.diagnosis.build_catalog tests/data/xid"
    assert set(shipped["xids"]) == {str(i) for i in range(1, 174)}
    assert catalog.lookup(500)["action"] == "investigate"


def test_storms_fold_and_app_xids_with_app_failure() -> None:
    storm = "\n".join(f"[ {100 + i}.0] NVRM: Xid (PCI:0000:9b:00): 95, pid=5, name=p, Uncontained: FBHUB"
                      for i in range(20000))
    found = diagnose(storm.encode())
    assert len(found) == 1 and found[0].count == 20000 and found[0].details["last_line"] == 20000
    teardown = "\n".join(["[1.0] NVRM: Xid (PCI:0000:4e:00): 13, pid=5, name=p, Graphics Exception"] +
                         ["[2.0] NVRM: Xid (PCI:0000:4e:00): 45, pid=5, name=p, Ch 00000008"] * 500).encode()
    with_failure = diagnose(teardown, exit_code=1)
    xids = {f.xid: f for f in with_failure if f.kind == "xid"}
    assert xids[13].category == "application" and xids[45].count == 500
    assert not any(is_node_fault(f, None) for f in with_failure)
    without = diagnose(b"[1.0] NVRM: Xid (PCI:0000:4e:00): 43, pid=5, name=p, Ch 00000008")
    assert without[0].category == "driver"
    with_fail = diagnose(b"[1.0] NVRM: Xid (PCI:0000:4e:00): 43, pid=5, name=p, Ch 00000008", exit_code=1)
    assert with_fail[0].category == "application"


def test_later_xid_supersedes_on_the_same_gpu() -> None:
    log = (b"[1.0] NVRM: Xid (PCI:0000:ca:00): 48, pid=1, name=p, DBE\n"
           b"[2.0] NVRM: Xid (PCI:0000:ca:00): 63, pid=1, name=p, Row Remapper: New row\n"
           b"[3.0] NVRM: Xid (PCI:0000:ca:00): 64, pid=1, name=p, Row Remapper Error\n"
           b"[4.0] NVRM: Xid (PCI:0000:3b:00): 63, pid=1, name=p, another GPU\n")
    found = {(f.pci, f.xid): f for f in diagnose(log)}
    assert found[("0000:ca:00", 64)].action == "drain_node" and "superseded_by" not in found[("0000:ca:00", 64)].details
    assert found[("0000:ca:00", 48)].details["superseded_by"] == 64 and found[("0000:ca:00", 48)].severity == "info"
    assert not is_node_fault(found[("0000:ca:00", 48)], None)
    assert "superseded_by" not in found[("0000:3b:00", 63)].details


def test_xids_before_the_last_boot_do_not_count() -> None:
    log = (b"[ 5000.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n"
           b"[    0.0] Linux version 6.1.0 (gcc) #1 SMP\n"
           b"[   10.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=p, Graphics Exception\n")
    assert [f.xid for f in diagnose(log)] == [13]
    no_banner = (b"[ 5000.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n"
                 b"[   20.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=p, Graphics Exception\n")
    assert [f.xid for f in diagnose(no_banner)] == [13]  # monotonic time went backwards


def test_nfs_recovery_and_link_flaps() -> None:
    nfs = {f.details.get("ok"): f for f in diagnose(b"nfs: server a not responding, still trying\nnfs: server a OK\n")}
    assert nfs[False].severity == "warning" and nfs[False].details["recovered"]
    flap = b"\n".join([b"mlx5_core 0000:17:00.0 ibp23s0: Link down", b"mlx5_core 0000:17:00.0 ibp23s0: Link up"] * 3)
    down = next(f for f in diagnose(flap) if f.details.get("link") == "down")
    assert down.count == 3 and down.details["flapping"] == 3 and down.action == "drain_node"
    once = diagnose(b"mlx5_core 0000:17:00.0 ibp23s0: Link down\nmlx5_core 0000:17:00.0 ibp23s0: Link up\n")
    assert not any(is_node_fault(f, None) for f in once)


def test_job_evidence_is_trust_job_and_never_a_node_fault() -> None:
    out = ["NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
           "[rank3]:[E ProcessGroupNCCL.cpp:563] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
           "RuntimeError: CUDA error: an illegal memory access was encountered",
           "RuntimeError: CUDA error: uncorrectable ECC error encountered",
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error "
           "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3 ncclSystemError"]
    found = joblog.scan(out)
    assert [f.kind for f in found] == ["nccl", "cuda", "cuda", "nccl"]
    assert all(f.trust == "job" and not is_node_fault(f, None) for f in found)
    assert found[2].category == "hardware" and found[1].category == "application"
    assert found[0].line == 2


@pytest.mark.parametrize("raw, code, sig", [(768, 3, 0), (9, 0, 9), (93 << 8, 93, 0)])
def test_exit_from_wait_status(raw: int, code: int, sig: int) -> None:
    from slurmtools.slurm import ExitStatus

    status = ExitStatus.from_wait_status(raw)
    f = diagnose(b"", exit_code=status.code, exit_signal=status.signal)[0]
    assert f.kind == "exit" and f.details["exit_code"] == code and f.details["signal"] == sig
    assert f.details.get("do_not_requeue", False) == (code == 93)
    assert diagnose(b"", exit_code=0) == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096))
def test_binary_input_never_crashes(data: bytes) -> None:
    for f in diagnose(data):
        assert f.line is None or f.line >= 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_random_text_never_crashes(text: str) -> None:
    diagnose(("NVRM: Xid (PCI:" + text + "\n" + text).encode("utf-8", "surrogatepass"))


def test_huge_line_and_nul_bytes() -> None:
    big = b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, " + b"A" * (1 << 20) + b"\n\x00\x00\xff\xfe\n"
    found = diagnose(big)
    assert found[0].xid == 79 and len(found[0].message) <= kernel.MAX_LINE


def test_cli_json_contract(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(b"[1.0] NVRM: GPU at PCI:0000:18:00: GPU-5e3f\n"
                    b"[2.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n\xff\xfe\n")
    job = tmp_path / "job.out"
    job.write_text("NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12\n")
    result = CliRunner().invoke(main, ["diagnose", "--kernel-log", str(log), "--job-log", str(job),
                                       "--wait-status", "768", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    required = {"kind", "xid", "pci", "category", "action", "severity", "trust", "line", "message"}
    assert all(required <= set(r) for r in rows)
    assert [(r["kind"], r["xid"], r["line"], r["trust"]) for r in rows] == [
        ("xid", 79, 2, "kernel"), ("nccl", None, 1, "job"), ("exit", None, None, "job")]
    stdin = CliRunner().invoke(main, ["diagnose", "--kernel-log", "-", "--json"], input=log.read_bytes())
    assert json.loads(stdin.stdout)[0]["xid"] == 79
    bad = CliRunner().invoke(main, ["diagnose", "--kernel-log", str(log), "--exit-code", "x"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_file_source_reads_only_the_job_window(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(b"[1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, before the job\n")
    marker = sources.mark(f"file:{log}")
    with open(log, "ab") as fh:
        fh.write(b"[2.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=p, during the job\n")
    data, how = sources.read_window(f"file:{log}", marker)
    assert [f.xid for f in diagnose(data)] == [13] and how["how"] == "since job start"
    rotated = tmp_path / "kern.log.1"
    shutil.move(log, rotated)
    log.write_bytes(b"[3.0] NVRM: Xid (PCI:0000:18:00): 31, pid=1, name=p, after rotation\n")
    data, how = sources.read_window(f"file:{log}", marker)
    assert [f.xid for f in diagnose(data)] == [31] and how["how"] == "file replaced since job start"
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 5000 + b"\n[9.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=p, tail\n")
    data, how = sources.read_window(f"file:{big}", None, max_bytes=100)
    assert len(data) <= 100 and [f.xid for f in diagnose(data)] == [13]


def test_real_kmsg_window() -> None:
    """The real kernel log: the suite runs as root (like the lab), which may write /dev/kmsg."""
    tag = f"slurmtools-test-{os.getpid()}-{time.time_ns()}"
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(f"<4>NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name={tag}-before, GPU has fallen off the bus.\n")
    time.sleep(0.05)
    marker = sources.mark("kmsg")
    time.sleep(0.05)
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(f"<4>NVRM: Xid (PCI:0000:18:00): 13, pid=1, name={tag}-during, Graphics Exception\n")
    data, _how = sources.read_window("kmsg", marker)
    mine = [f for f in diagnose(data) if tag in f.message]
    assert [(f.xid, f.pci) for f in mine] == [(13, "0000:18:00")]
    everything, _ = sources.read_window("kmsg", None)  # no marker: the whole ring, both lines
    assert f"{tag}-before".encode() in everything and f"{tag}-during".encode() in everything
    assert f"{tag}-before".encode() not in data


def test_grep_prefilter_agrees_with_python(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [kernel.normalise(line).message for _, _, line in corpus() if "Linux version" not in line]
    data = "\n".join(f"[{i:6d}.000000] {m}" for i, m in enumerate(messages * 3)).encode()  # time moves on
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", None)
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", len(data) + 1)
    python_path = [(f.kind, f.xid, f.line, f.count) for f in diagnose(data)]
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", 0)
    assert [(f.kind, f.xid, f.line, f.count) for f in diagnose(data)] == python_path
    assert len(python_path) > 30 and all(count % 3 == 0 for *_, count in python_path)  # three copies each
