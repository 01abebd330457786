"""The Alertmanager rules (docs/prometheus/slurmtools-alerts.rules.yml) are valid for Prometheus, fire on the
series that should fire them (promtool's own rule unit tests, slurmtools-alerts.test.yml), and name metrics
our exporter really serves; the leaders' heartbeat reaches the exporter."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from slurmtools.controller.leader import Leader
from slurmtools.reports.exporter import LedgerCollector

RULES = Path(__file__).resolve().parent.parent / "docs" / "prometheus"


def test_promtool_checks_the_rules_and_their_unit_tests() -> None:
    # Debian's prometheus package (promtool): a missing promtool fails this test, it is not skipped
    check = subprocess.run(["promtool", "check", "rules", "slurmtools-alerts.rules.yml"], cwd=RULES,
                           capture_output=True, text=True)
    assert check.returncode == 0 and "SUCCESS: 9 rules found" in check.stdout, check.stdout + check.stderr
    test = subprocess.run(["promtool", "test", "rules", "slurmtools-alerts.test.yml"], cwd=RULES,
                          capture_output=True, text=True)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


def test_the_rules_name_what_the_exporter_serves_and_the_heartbeat_gets_there(tmp_path: Path) -> None:
    from slurmtools.ledger.db import make_engine

    from .reports_data import CLUSTER, fill

    engine = make_engine(f"sqlite:///{tmp_path}/l.db")
    fill(engine)                                     # findings, decisions, drains: the counters have samples
    leader = Leader(engine, CLUSTER, role="controller")
    assert leader.hold()
    Leader(engine, "other", role="stalls").hold()                     # another cluster's: not ours
    from slurmtools import config

    cfg = config.load(env={})
    cfg.general.cluster, cfg.ledger.spool_dir = CLUSTER, str(tmp_path / "spool")
    cfg.controller.queue_dir = str(tmp_path / "queue")
    registry = CollectorRegistry()
    registry.register(LedgerCollector(cfg, engine))
    text = generate_latest(registry).decode()
    beats = [line for line in text.splitlines() if line.startswith("slurmtools_leader_heartbeat")]
    assert len(beats) == 1 and beats[0].startswith('slurmtools_leader_heartbeat_timestamp_seconds{role="controller"}')
    names = set(re.findall(r"^([a-z_]+)[{ ]", text, re.M))             # the samples served
    used = set(re.findall(r"\b(slurmtools_[a-z_]+)\b", (RULES / "slurmtools-alerts.rules.yml").read_text()))
    assert used - names <= {"slurmtools_drain_breaker_open"}, used - names    # that one needs Slurm (tests below)
    leader.release()


def test_the_breaker_metric_the_rules_use_is_served_with_slurm(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    from slurmtools import config
    from slurmtools.ledger import schema

    from .fakes import FakeSlurm

    engine = create_engine(f"sqlite:///{tmp_path}/l.db")
    schema.ensure(engine)
    f = tmp_path / "c.toml"
    f.write_text(f'[ledger]\nspool_dir = "{tmp_path}/spool"\n')
    registry = CollectorRegistry()
    registry.register(LedgerCollector(config.load(f, env={}), engine, FakeSlurm()))
    assert "slurmtools_drain_breaker_open 0.0" in generate_latest(registry).decode()
