"""`slurmtools doctor`: on a live cluster, check what the loop needs and say how to fix each miss (docs/install.md).

Reads; changes nothing (the controller check takes the leader lock for an instant only when nobody holds it,
which is what it reports). Exit 1 when a check fails, 0 otherwise (warnings included)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import echo, emit_json, get_config

if TYPE_CHECKING:
    from slurmtools.config import Config

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


def _slurm_config(slurm: Any) -> dict[str, str]:  # Any: both backends are CliSlurm; `run` is not in `Slurm`
    """`scontrol show config` as {key: value} (slurm/features.py: show_config)."""
    from slurmtools.slurm.features import show_config

    return show_config(slurm)


def _ours(path: str) -> bool:
    """A hook path that runs slurmtools: our script, or a wrapper that names it."""
    if os.path.basename(path) == "50-slurmtools":
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "slurmtools" in fh.read(65536)
    except OSError:
        return False


def slurm_checks(conf: dict[str, str]) -> list[Check]:
    from slurmtools.fsutil import UntrustedPath, check_trusted

    out: list[Check] = []
    share = "/usr/local/share/slurmtools"
    for key, script in (("Prolog", "prolog.d"), ("Epilog", "epilog.d"), ("EpilogSlurmctld", "epilog.d")):
        value = conf.get(key, "(null)")
        fix = f"slurm.conf: {key}={share}/{script}/50-slurmtools, then restart slurmctld"
        paths = [p for p in value.split(",") if p and p != "(null)"]
        mine = [p for p in paths if _ours(p)]
        if not mine:
            out.append(Check(f"slurm.conf {key}", FAIL, f"{key} = {value}: not slurmtools' hook", fix))
            continue
        try:
            check_trusted(mine[0], owners={0}, what="hook")
            out.append(Check(f"slurm.conf {key}", OK, f"{key} = {mine[0]}"))
        except (UntrustedPath, OSError) as exc:
            out.append(Check(f"slurm.conf {key}", FAIL, str(exc), "chown root and chmod go-w the hook and its "
                                                                  "directories (docs/security.md)"))
    flags = {f.strip().lower() for f in conf.get("PrologFlags", "").split(",")}
    out.append(Check("slurm.conf PrologFlags", OK if "alloc" in flags else FAIL, f"PrologFlags = "
                     f"{conf.get('PrologFlags', '(null)')}", "" if "alloc" in flags else
                     "slurm.conf: PrologFlags=Alloc (the gate runs on every node at allocation)"))
    sched = {p.strip().split("=")[0] for p in conf.get("SchedulerParameters", "").split(",")}
    ok = "nohold_on_prolog_fail" in sched
    out.append(Check("slurm.conf nohold_on_prolog_fail", OK if ok else FAIL,
                     f"SchedulerParameters = {conf.get('SchedulerParameters', '(null)')}", "" if ok else
                     "slurm.conf: SchedulerParameters=nohold_on_prolog_fail (else a job whose prolog failed is held, "
                     "not started elsewhere)"))
    requeue = conf.get("JobRequeue", "")
    out.append(Check("slurm.conf JobRequeue", OK if requeue == "0" else WARN, f"JobRequeue = {requeue or '?'}",
                     "" if requeue == "0" else "slurm.conf: JobRequeue=0 (jobs that ask are requeued by the "
                                               "controller, away from the failed node)"))
    for key, level in (("JobSubmitPlugins", FAIL), ("CliFilterPlugins", WARN)):
        on = "lua" in [v.strip() for v in conf.get(key, "").split(",")]
        out.append(Check(f"slurm.conf {key}", OK if on else level, f"{key} = {conf.get(key, '(null)')}",
                         "" if on else f"slurm.conf: {key}=lua (slurmtools plugins install prints the lines)"))
    hc = conf.get("HealthCheckProgram", "(null)")
    out.append(Check("slurm.conf HealthCheckProgram", OK if "slurmtools" in hc else WARN, f"HealthCheckProgram = {hc}",
                     "" if "slurmtools" in hc else "slurm.conf: HealthCheckProgram=/usr/local/bin/slurmtools-hook, "
                                                   "HealthCheckInterval=300"))
    return out


def _seconds(text: str) -> int | None:
    """`scontrol show config`'s "60 sec" (or "60") -> 60; None for anything else."""
    head = text.split()[0] if text.split() else ""
    return int(head) if head.isascii() and head.isdigit() else None


def health_check_checks(conf: dict[str, str], cfg: Config, root: str = "/") -> list[Check]:
    """The health-check settings the running Slurm has (slurm/features.py: detected, not guessed from the version):
    HealthCheckTimeout where it lists one (26.05+) and HealthCheckNodeState=START_ONLY where its parser knows it
    (25.11+)."""
    from slurmtools.slurm import features

    feats = features.detect(conf, root)
    budget = features.health_check_budget(len(cfg.checks.health), cfg.checks.timeout, cfg.slurm.timeout)
    interval = _seconds(conf.get("HealthCheckInterval", "")) or 0
    states = conf.get("HealthCheckNodeState", "?")
    out: list[Check] = []
    if feats.health_check_timeout:
        timeout = _seconds(conf["HealthCheckTimeout"])
        bad = []
        if timeout is not None and timeout < budget:
            bad.append(f"below the {budget} s our health hook may need (it would be killed mid-check)")
        if timeout is not None and interval and timeout >= interval:
            bad.append(f"not below HealthCheckInterval ({interval} s)")
        out.append(Check("slurm.conf HealthCheckTimeout", WARN if bad else OK,
                         f"HealthCheckTimeout = {conf['HealthCheckTimeout']}" + (": " + "; ".join(bad) if bad else ""),
                         f"slurm.conf: HealthCheckTimeout={features.health_check_timeout(budget)}" if bad else ""))
    else:
        out.append(Check("slurm.conf HealthCheckTimeout", OK, f"Slurm {feats.version} has no HealthCheckTimeout "
                                                              "(it kills the program after 60 s)"))
    if feats.start_only is None:
        out.append(Check("slurm.conf HealthCheckNodeState", OK, f"HealthCheckNodeState = {states}; whether "
                         f"START_ONLY exists here: cannot tell ({feats.why})"))
    elif "START_ONLY" in states.upper():
        out.append(Check("slurm.conf HealthCheckNodeState", OK, "HealthCheckNodeState = START_ONLY: the health hook "
                         "runs only as slurmd starts; between jobs only the prolog gate checks a node"))
    else:
        out.append(Check("slurm.conf HealthCheckNodeState", OK, f"HealthCheckNodeState = {states}" + (
            " (START_ONLY is available: check a node only as slurmd starts)" if feats.start_only else
            f" (Slurm {feats.version} has no START_ONLY)")))
    return out


def plugin_checks(cfg: Config, conf_dir: str) -> list[Check]:
    from slurmtools import plugins

    out: list[Check] = []
    want = plugins.render(cfg)
    out_dir = cfg.plugins.dir or conf_dir
    for name in plugins.FILES:
        path = os.path.join(out_dir, name)
        try:
            with open(path, encoding="utf-8") as fh:
                have = fh.read()
        except OSError:
            out.append(Check(f"plugin {name}", FAIL, f"{path}: missing", "slurmtools plugins install"))
            continue
        current = have == want.get(name)
        out.append(Check(f"plugin {name}", OK if current else WARN, f"{path}: " + ("current" if current else
                         "differs from what this configuration renders"), "" if current else
                         "slurmtools plugins install (then scontrol reconfigure)"))
    return out


def ledger_checks(cfg: Config) -> list[Check]:
    from slurmtools.ledger import api, schema

    try:
        engine = api.engine_for(cfg)
        current = schema.is_current(engine)
    except Exception as exc:  # noqa: BLE001 - any failure to reach the database is the finding
        return [Check("ledger", FAIL, f"{cfg.ledger.url}: cannot be reached: {exc}"[:400],
                      "check ledger.url and the database; then slurmtools ledger init")]
    out = [Check("ledger", OK if current else FAIL, "reachable, schema " + ("current" if current else "not current"),
                 "" if current else "slurmtools ledger init")]
    if engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with engine.connect() as conn:
            server = float(conn.execute(text("SELECT extract(epoch FROM clock_timestamp())")).scalar() or 0)
        skew = time.time() - server
        out.append(Check("clock", OK if abs(skew) <= 2 else WARN, f"this host is {skew:+.1f}s from the database "
                         "server", "" if abs(skew) <= 2 else "run chrony/ntpd on every host (findings, attempts "
                                                             "and decisions are ordered by time)"))
    return out


def directory_checks(cfg: Config) -> list[Check]:
    from slurmtools.fsutil import UntrustedPath, check_trusted

    out: list[Check] = []
    for path, what in ((cfg.ledger.spool_dir, "spool"), (cfg.controller.queue_dir, "controller queue")):
        try:
            check_trusted(path, what="directory")
            out.append(Check(what, OK, f"{path}: root-owned, writable by root only"))
        except FileNotFoundError:
            out.append(Check(what, FAIL, f"{path}: missing", f"install -d -m 0700 -o root {path}"))
        except (UntrustedPath, OSError) as exc:
            out.append(Check(what, FAIL, str(exc), f"chown root {path}; chmod go-w {path} (docs/security.md)"))
    return out


def service_checks(cfg: Config) -> list[Check]:
    import urllib.request

    from slurmtools.controller.leader import Leader
    from slurmtools.ledger import api

    out: list[Check] = []
    import logging

    quiet = logging.getLogger("slurmtools.controller.leader")
    try:
        quiet.disabled = True                 # the probe's own "now the leader" is not news
        probe = Leader(api.engine_for(cfg), cfg.cluster)
        free = probe.hold()
        probe.release()
        out.append(Check("controller", FAIL if free else OK, "no controller holds the leader lock" if free else
                         "a controller holds the leader lock (it is running)", "systemctl enable --now "
                         "slurmtools-controller (slurmtools install units)" if free else ""))
    except Exception as exc:  # noqa: BLE001
        out.append(Check("controller", WARN, f"cannot tell: {exc}"[:300]))
    finally:
        quiet.disabled = False
    listen = cfg.metrics.listen
    try:
        with urllib.request.urlopen(f"http://{listen}/metrics", timeout=3) as resp:
            ok = resp.status == 200 and b"slurmtools_" in resp.read(1 << 20)
        out.append(Check("exporter", OK if ok else WARN, f"http://{listen}/metrics " +
                         ("answers" if ok else "answers without slurmtools metrics")))
    except OSError as exc:
        out.append(Check("exporter", WARN, f"http://{listen}/metrics: {exc}", "systemctl enable --now "
                                                                           "slurmtools-exporter"))
    return out


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of checks.")
def doctor_cmd(as_json: bool) -> None:
    """Check this cluster's set-up for the loop and say how to fix each miss (exit 1 if a check fails)."""
    from slurmtools.plugins import default_dir
    from slurmtools.slurm import SlurmError, get_client

    cfg = get_config()
    checks: list[Check] = []
    try:
        slurm = get_client(cfg)
        conf = _slurm_config(slurm)
        checks += slurm_checks(conf) + health_check_checks(conf, cfg)
    except (SlurmError, OSError) as exc:
        checks.append(Check("slurm", FAIL, f"cannot read Slurm's configuration: {exc}"[:400],
                            "run on a host with the Slurm client and munge"))
    checks += plugin_checks(cfg, default_dir())
    checks += ledger_checks(cfg) + directory_checks(cfg) + service_checks(cfg)
    if as_json:
        emit_json([asdict(c) for c in checks])
    else:
        mark = {OK: "ok  ", WARN: "WARN", FAIL: "FAIL"}
        for c in checks:
            echo(f"{mark[c.status]} {c.name}: {c.detail}" + (f"\n     fix: {c.fix}" if c.fix else ""))
    if any(c.status == FAIL for c in checks):
        raise SystemExit(1)
