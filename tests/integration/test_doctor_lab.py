"""`slurmtools doctor` on the lab: it passes on the lab as set up, and names each deliberate misconfiguration
(an unsafe spool mode, a hook others can write, a slurm.conf line missing, a stale plugin, no controller)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from slurmtools.lab import Lab


def doctor() -> tuple[int, dict[str, dict[str, Any]]]:
    out = subprocess.run(["slurmtools", "doctor", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, {c["name"]: c for c in json.loads(out.stdout)}


def test_the_lab_passes(lab: Lab, controller: subprocess.Popen[str]) -> None:
    import time

    time.sleep(2)                                     # the controller takes the leader lock on its first pass
    rc, checks = doctor()
    fails = {k: v for k, v in checks.items() if v["status"] == "fail"}
    assert rc == 0 and not fails, fails
    for name in ("slurm.conf Prolog", "slurm.conf EpilogSlurmctld", "slurm.conf nohold_on_prolog_fail",
                 "plugin job_submit.lua", "ledger", "clock", "spool", "controller queue", "controller", "exporter"):
        assert checks[name]["status"] == "ok", checks[name]


def test_the_lab_follows_the_install_guide(lab: Lab) -> None:
    """docs/install.md steps 3, 5 and 6 as the lab ran them: the schema at head, the plugins current (doctor, above),
    the units written by `slurmtools install units`, and the exporter running exactly what its unit says."""
    from slurmtools.lab.install import service

    units = lab.root / "systemd"
    assert sorted(p.name for p in units.glob("*.service")) == [
        "slurmtools-controller.service", "slurmtools-detect.service", "slurmtools-exporter.service",
        "slurmtools-stalls-sampler.service", "slurmtools-stalls.service"]
    argv, env = service(units / "slurmtools-exporter.service")
    assert env == {"SLURMTOOLS_CONFIG": str(lab.etc / "slurmtools.toml")}
    pid = (lab.root / "run" / "exporter.pid").read_text().strip()
    running = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    assert running[-len(argv) + 1:] == argv[1:] and Path(running[-len(argv)]).name == Path(argv[0]).name
    environ = dict(x.split("=", 1) for x in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if x)
    assert environ["SLURMTOOLS_CONFIG"] == env["SLURMTOOLS_CONFIG"] and "SLURMTOOLS_LEDGER_URL" not in environ
    again = subprocess.run(["slurmtools", "ledger", "init"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr                    # step 3 again: idempotent


@pytest.fixture
def restore() -> Iterator[Callable[[Callable[[], None]], None]]:
    undo: list[Callable[[], None]] = []
    yield undo.append
    for fn in reversed(undo):
        fn()


def test_each_misconfiguration_is_named(lab: Lab, controller: subprocess.Popen[str],
                                        restore: Callable[[Callable[[], None]], None]) -> None:
    import time

    time.sleep(2)
    cfg = json.loads(subprocess.run(["slurmtools", "config", "show", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    spool = Path(cfg["config"]["ledger"]["spool_dir"])
    mode = spool.stat().st_mode & 0o7777
    spool.chmod(0o777)
    restore(lambda: spool.chmod(mode))
    hook = lab.root / "hooks" / "prolog"
    hmode = hook.stat().st_mode & 0o7777
    hook.chmod(hmode | 0o002)
    restore(lambda: hook.chmod(hmode))
    conf = lab.slurm_conf.read_text()
    lab.slurm_conf.write_text(re.sub(r"nohold_on_prolog_fail,?", "", conf))
    subprocess.run(["scontrol", "reconfigure"], check=True, capture_output=True)
    restore(lambda: (lab.slurm_conf.write_text(conf),
                     subprocess.run(["scontrol", "reconfigure"], check=True, capture_output=True)))
    lua = lab.root / "etc" / "job_submit.lua"
    text = lua.read_text()
    lua.write_text(text + "\n-- an old copy\n")
    restore(lambda: lua.write_text(text))
    rc, checks = doctor()
    assert rc == 1
    assert checks["spool"]["status"] == "fail" and "writable by group and other" in checks["spool"]["detail"]
    prolog = checks["slurm.conf Prolog"]
    assert prolog["status"] == "fail" and "writable by other" in prolog["detail"]
    assert checks["slurm.conf nohold_on_prolog_fail"]["status"] == "fail"
    assert "nohold_on_prolog_fail" in checks["slurm.conf nohold_on_prolog_fail"]["fix"]
    lua_check = checks["plugin job_submit.lua"]
    assert lua_check["status"] == "warn" and "plugins install" in lua_check["fix"]
    assert checks["controller"]["status"] == "ok"
    # and the controller stopped: nobody holds the leader lock
    controller.terminate()
    controller.wait(20)
    _, checks = doctor()
    assert checks["controller"]["status"] == "fail" and "slurmtools-controller" in checks["controller"]["fix"]
    assert os.path.exists(spool)
