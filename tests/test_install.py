"""`slurmtools install units`: systemd units that run this installation, checked by systemd's own verifier."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmtools.cli import main


def test_units_run_this_installation_with_its_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "site.toml"
    conf.write_text("")
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(conf))
    res = CliRunner().invoke(main, ["install", "units", "--dest", str(tmp_path), "--interval", "2m", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    names = sorted(Path(p).name for p in out["written"])
    assert names == ["slurmtools-controller.service", "slurmtools-detect.service", "slurmtools-exporter.service",
                     "slurmtools-stalls-sampler.service", "slurmtools-stalls.service"]
    exe = out["exe"]
    assert Path(exe.split()[0]).is_file()
    units = {n: (tmp_path / n).read_text() for n in names}
    assert f"ExecStart={exe} controller run\n" in units["slurmtools-controller.service"]
    assert f"ExecStart={exe} exporter\n" in units["slurmtools-exporter.service"]
    assert f"ExecStart={exe} detect run --interval 2m\n" in units["slurmtools-detect.service"]
    assert f"ExecStart={exe} stalls run\n" in units["slurmtools-stalls.service"]
    assert f"ExecStart={exe} stalls sample\n" in units["slurmtools-stalls-sampler.service"]
    assert all(f"Environment=SLURMTOOLS_CONFIG={conf}\n" in u for u in units.values())
    assert all((tmp_path / n).stat().st_mode & 0o777 == 0o644 for n in names)
    if shutil.which("systemd-analyze"):
        # systemd's own parser: unknown keys or bad values fail here (the executable must exist: it does)
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", *(str(tmp_path / n) for n in names)],
                           capture_output=True, text=True, timeout=60)
        bad = [ln for ln in r.stderr.splitlines() if "slurmtools-" in ln and ".service" in ln]
        assert not bad, r.stderr
        # ... and it does notice a mistake (so the check above can fail)
        broken = tmp_path / "broken" / "slurmtools-detect.service"
        broken.parent.mkdir()
        broken.write_text(units["slurmtools-detect.service"].replace("[Service]\n", "[Service]\nRestartt=always\n"))
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(broken)], capture_output=True, text=True,
                           timeout=60)
        assert "Restartt" in r.stderr


def test_units_refuse_bad_input(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["install", "units", "--dest", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a directory" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["install", "units", "--dest", str(tmp_path), "--interval", "soon"])
    assert r.exit_code == 2 and "--interval" in r.output
    r = CliRunner().invoke(main, ["install", "units", "--print", "--only", "detect"])
    assert r.exit_code == 0 and "slurmtools-detect.service" in r.output and "controller run" not in r.output


def test_doctor_reads_the_hooks_of_both_show_config_formats() -> None:
    """22.05 prints `Prolog = a,b`; 23.02 and later one line per script, `Prolog[0] = a` (seen on the 24.11 lab)."""
    from slurmtools.cli.doctor import _slurm_config

    class Shown:
        def __init__(self, text: str) -> None:
            self.text = text

        def run(self, *args: str) -> str:
            return self.text

    old = _slurm_config(Shown("Prolog                  = /a/prolog,/b/50-slurmtools\nPrologFlags = Alloc\n"))
    new = _slurm_config(Shown("Prolog[0]               = /a/prolog\nProlog[1]               = /b/50-slurmtools\n"
                              "PrologEpilogTimeout     = 60\nEpilog[0]               = /c/epilog\n"))
    assert old["Prolog"] == new["Prolog"] == "/a/prolog,/b/50-slurmtools"
    assert new["Epilog"] == "/c/epilog" and new["PrologEpilogTimeout"] == "60" and old["PrologFlags"] == "Alloc"


def test_the_lab_wheels_an_installed_slurmtools_with_no_checkout(tmp_path: Path) -> None:
    """`lab up --slurm RELEASE` from `pip install .` (not editable): the wheel for the Debian root is made from the
    installed distribution, and installs as the checkout's would (modules, hook script, prolog.d/epilog.d, entry
    point)."""
    import os
    import sys
    import sysconfig

    repo = Path(__file__).resolve().parents[1]
    deps = sysconfig.get_paths()["purelib"]       # this environment's dependencies (jinja2, ...), not its slurmtools
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def venv(path: Path) -> Path:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
        python = path / "bin" / "python"
        purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True, env=env).stdout.strip()
        Path(purelib, "zz-deps.pth").write_text(deps + "\n")   # after its own site-packages; its .pth files unread
        return python

    def run(*argv: str | Path, cwd: Path = tmp_path) -> str:
        proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=300,
                              env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    site = venv(tmp_path / "site")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", repo)
    (built,) = (tmp_path / "dist").glob("slurmtools-*.whl")
    run(site, "-m", "pip", "install", "-q", "--no-deps", built)     # as `pip install .` does: a copy, not editable
    code = ("import sys; from pathlib import Path; from slurmtools.lab import wheel; "
            "assert wheel.checkout() is None, wheel.checkout(); print(wheel.build(Path(sys.argv[1])))")
    made = Path(run(site, "-c", code, tmp_path / "wheels", cwd=tmp_path).strip())
    assert made.name == "slurmtools-0.1.0-py3-none-any.whl"
    other = venv(tmp_path / "other")
    run(other, "-m", "pip", "install", "-q", "--no-deps", made)
    prefix = tmp_path / "other"
    hook = (prefix / "bin" / "slurmtools-hook").read_text()
    assert hook.startswith(f"#!{prefix}/bin/python")          # the installer set the shebang to its interpreter
    assert (prefix / "share" / "slurmtools" / "prolog.d" / "50-slurmtools").is_file()
    assert (prefix / "share" / "slurmtools" / "epilog.d" / "50-slurmtools").is_file()
    assert (prefix / "bin" / "slurmtools").is_file()           # the console script, made from entry_points.txt
    out = run(other, "-c", "import slurmtools; from importlib import resources; print(slurmtools.__file__, "
              "resources.files('slurmtools').joinpath('data/defaults.toml').is_file())")
    path, data_ok = out.split()
    assert Path(path).is_relative_to(prefix) and data_ok == "True"    # the installed copy, not this checkout
