"""The Lua plugins as rendered, run under the real Lua 5.1 interpreter with a fake `slurm` table (the boundary
slurmctld provides); slurmctld itself runs them in tests/integration/test_plugins_lab.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import hostlist
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmtools import config, plugins

LUA = shutil.which("lua5.1") or "lua5.1"   # installed by `slurmtools lab up` (Debian's lua5.1, as slurmctld links)
NOW = 1_790_000_000


def cfg_for(tmp_path: Path, extra: str = "") -> config.Config:
    path = tmp_path / "slurmtools.toml"
    path.write_text(f"""
[exclusions]
plugin_file = "{tmp_path}/exclusions.txt"
max_age = 600.0
[plugins]
default_partition = "gpu"
[plugins.partitions.train]
max_retries = 2
[plugins.partitions.gpu]
requeue = false
max_retries = 0
open_mode = ""
{extra}""")
    return config.load(path, env={})


def lua_value(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return plugins.lua_string(value)


def lua_table(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"[{plugins.lua_string(k)}] = {lua_value(v)}" for k, v in d.items()) + "}"


HARNESS = r"""
slurm = { SUCCESS = 0, ERROR = -1 }
function slurm.log_info(f, ...) io.write("LOG\tinfo\t", string.format(f, ...), "\n") end
function slurm.log_error(f, ...) io.write("LOG\terror\t", string.format(f, ...), "\n") end
local real_time = os.time
os.time = function(t) if t then return real_time(t) end return NOW end
"""


def run_lua(script: str) -> list[str]:
    out = subprocess.run([LUA, "-"], input=script, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def job_submit(tmp_path: Path, cfg: config.Config, jobs: list[dict[str, Any]], now: int = NOW,
               poison: bool = False) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Run the rendered job_submit.lua on JOBS (job_desc fields); returns the jobs as the plugin left them
    and what it logged."""
    (tmp_path / "job_submit.lua").write_text(plugins.render(cfg)["job_submit.lua"])
    lines = [HARNESS.replace("NOW", str(now)), f'dofile({plugins.lua_string(tmp_path / "job_submit.lua")})']
    for job in jobs:
        lines.append(f"local job = {lua_table(job)}")
        if poison:
            lines.append('setmetatable(job, {__index = function(t, k) if k == "comment" then '
                         'error("boom") end end})')
        lines.append("local rc = slurm_job_submit(job, {}, 1000)")
        lines.append('io.write("JOB\\t", rc, "\\t", tostring(rawget(job, "exc_nodes")), "\\t", '
                     'tostring(rawget(job, "comment")), "\\t", tostring(rawget(job, "requeue")), "\\n")')
    out, logs = [], []
    for line in run_lua("\n".join(lines)):
        kind, *rest = line.split("\t")
        if kind == "JOB":
            rc, exc, comment, requeue = rest
            out.append({"rc": int(rc), "exc_nodes": None if exc == "nil" else exc,
                        "comment": None if comment == "nil" else comment,
                        "requeue": None if requeue == "nil" else int(float(requeue))})
        elif kind == "LOG":
            logs.append((rest[0], rest[1]))
    return out, logs


def publish(tmp_path: Path, rows: list[dict[str, Any]], generated: float = NOW) -> None:
    text, problems = plugins.render_data(rows, generated)
    assert not problems
    (tmp_path / "exclusions.txt").write_text(text)


SOFT_N3 = [{"node": "n3", "scope": "soft", "reason": "lemon: 3 XID 79 in 7d", "expires_epoch": None}]


def test_soft_exclusions_merge_with_the_users_own(tmp_path: Path) -> None:
    publish(tmp_path, [*SOFT_N3, {"node": "n2", "scope": "drain", "reason": "XID 79", "expires_epoch": None},
                       {"node": "n4", "scope": "soft", "reason": "expired", "expires_epoch": NOW - 1},
                       {"node": "n5", "scope": "soft", "reason": "until tomorrow", "expires_epoch": NOW + 86400}])
    jobs, logs = job_submit(tmp_path, cfg_for(tmp_path), [
        {}, {"exc_nodes": "n1"}, {"exc_nodes": "n[1-3]"}, {"exc_nodes": ""}, {"req_nodes": "n[2-3]"},
        {"req_nodes": "n["}, {"comment": "debug slurmtools=off"}, {"comment": "notslurmtools=offline"},
        {"comment": "a,slurmtools=off;b"}])
    assert [j["exc_nodes"] for j in jobs] == ["n3,n5", "n1,n3,n5", "n[1-3],n5", "n3,n5", "n5", None, None, "n3,n5",
                                              None]   # the opt-out is a whole token (issue 30, F15)
    assert {j["rc"] for j in jobs} == {0}
    assert logs == [("info", f"slurmtools: job_submit: reading exclusions from {tmp_path}/exclusions.txt")]


def test_partition_defaults_unless_the_user_chose(tmp_path: Path) -> None:
    publish(tmp_path, [])
    no_val16 = 65534
    jobs, _ = job_submit(tmp_path, cfg_for(tmp_path), [
        {"partition": "train", "requeue": no_val16},
        {"partition": "train", "requeue": 0, "comment": "exp-7"},
        {"partition": "train", "comment": "slurmtools=retry:9:any"},
        {"partition": "gpu,train", "requeue": no_val16},
        {"partition": "other", "requeue": no_val16},
        {"requeue": no_val16, "comment": "x"},
        {"partition": "train", "requeue": no_val16, "comment": "slurmtools=off"}])
    assert [(j["requeue"], j["comment"]) for j in jobs] == [
        (1, "slurmtools=retry:2:node"), (0, "exp-7 slurmtools=retry:2:node"), (1, "slurmtools=retry:9:any"),
        (no_val16, None),            # gpu comes first in the list and has no defaults
        (no_val16, None), (no_val16, "x"),   # no partition: the default partition (gpu)
        (no_val16, "slurmtools=off")]


@pytest.mark.parametrize("content,state", [
    (None, "cannot read"),
    ("", "is empty"),
    ("garbage\n", "has no slurmtools header"),
    ("slurmtools-exclusions 1\ngenerated\t1790000000\nnode\tn3\tsoft\t-\tx\n", "is incomplete"),
    ('slurmtools-exclusions 1\ngenerated\t1790000000\nnode\tn3"]] os.exit(1) --\tsoft\t-\tx\nend\n',
     "has a malformed line"),
    (f"slurmtools-exclusions 1\ngenerated\t{NOW - 601}\nnode\tn3\tsoft\t-\tx\nend\n", "is stale"),
])
def test_a_bad_data_file_fails_open_with_one_line(tmp_path: Path, content: str | None, state: str) -> None:
    if content is not None:
        (tmp_path / "exclusions.txt").write_text(content)
    jobs, logs = job_submit(tmp_path, cfg_for(tmp_path), [{"partition": "train", "requeue": 65534}] * 3)
    assert [(j["rc"], j["exc_nodes"], j["requeue"]) for j in jobs] == [(0, None, 1)] * 3   # defaults still apply
    assert len(logs) == 1 and logs[0][0] == "error", logs          # one line, not one per job
    assert state in logs[0][1] and logs[0][1].endswith("jobs are accepted without exclusions")


def test_recovery_is_logged_and_errors_repeat_every_ten_minutes(tmp_path: Path) -> None:
    cfg = cfg_for(tmp_path)
    (tmp_path / "job_submit.lua").write_text(plugins.render(cfg)["job_submit.lua"])
    data = tmp_path / "exclusions.txt"
    fresh = plugins.lua_string(plugins.render_data(SOFT_N3, NOW + 601)[0])
    script = [HARNESS.replace("os.time = function(t) if t then return real_time(t) end return NOW end",
                              "CLOCK = NOW\nos.time = function(t) if t then return real_time(t) end return CLOCK end")
              .replace("NOW", str(NOW)),
              f'dofile({plugins.lua_string(tmp_path / "job_submit.lua")})',
              "local function submit() local job = {} slurm_job_submit(job, {}, 0) io.write('JOB\\t', "
              "tostring(job.exc_nodes), '\\n') end",
              "submit()", "CLOCK = CLOCK + 300", "submit()", "CLOCK = CLOCK + 301", "submit()",
              f"local fh = io.open({plugins.lua_string(data)}, 'w') fh:write({fresh}) fh:close()",
              "submit()", "submit()"]
    lines = run_lua("\n".join(script))
    assert [line.split("\t")[1] for line in lines if line.startswith("JOB")] == ["nil", "nil", "nil", "n3", "n3"]
    assert [line.split("\t")[1] for line in lines if line.startswith("LOG")] == ["error", "error", "info"]


def test_an_error_of_ours_never_rejects_a_job(tmp_path: Path) -> None:
    publish(tmp_path, SOFT_N3)
    jobs, logs = job_submit(tmp_path, cfg_for(tmp_path), [{}, {}], poison=True)
    assert [j["rc"] for j in jobs] == [0, 0]
    assert len(logs) == 1 and "internal error, job left as it was" in logs[0][1] and "boom" in logs[0][1]


def cli_filter(tmp_path: Path, cfg: config.Config, options: dict[str, Any], comm: str = "sbatch",
               env_job: bool = False) -> tuple[dict[str, str], str]:
    (tmp_path / "cli_filter.lua").write_text(plugins.render(cfg)["cli_filter.lua"])
    job_id = '"7"' if env_job else "nil"
    script = [HARNESS.replace("NOW", str(NOW)),
              # the command's name, as /proc/self/comm would say it in sbatch/srun
              f"local real_open = io.open\nio.open = function(p, m) if p == '/proc/self/comm' then "
              f"local f = io.tmpfile() f:write({plugins.lua_string(comm)}, '\\n') f:seek('set') return f end "
              f"return real_open(p, m) end",
              f"local real_getenv = os.getenv\nos.getenv = function(k) if k == 'SLURM_JOB_ID' then return "
              f"{job_id} end return real_getenv(k) end",
              f'dofile({plugins.lua_string(tmp_path / "cli_filter.lua")})',
              f"local options = {lua_table(options)}",
              "assert(slurm_cli_setup_defaults(options, true) == 0)",
              "assert(slurm_cli_pre_submit(options, 0) == 0)",
              "for k, v in pairs(options) do io.write('OPT\\t', k, '\\t', v, '\\n') end"]
    out = subprocess.run([LUA, "-"], input="\n".join(script), capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    opts = {k: v for kind, k, v in (line.split("\t") for line in out.stdout.splitlines()) if kind == "OPT"}
    return opts, out.stderr


def test_cli_filter_warns_about_excluded_nodes_named_with_w(tmp_path: Path) -> None:
    publish(tmp_path, [*SOFT_N3, {"node": "n2", "scope": "drain", "reason": "slurmtools: hardware: XID 79",
                                  "expires_epoch": None}])
    cfg = cfg_for(tmp_path)
    _, err = cli_filter(tmp_path, cfg, {"nodelist": "n[1-3]"}, comm="srun")
    assert err.splitlines() == [
        "srun: slurmtools: warning: n3 is excluded by slurmtools (soft: other jobs avoid it); it may have a "
        "fault: lemon: 3 XID 79 in 7d",
        "srun: slurmtools: warning: n2 is out of service (drained by slurmtools); the job waits until it "
        "returns: slurmtools: hardware: XID 79"]
    assert cli_filter(tmp_path, cfg, {"nodelist": "n1"})[1] == ""
    assert cli_filter(tmp_path, cfg, {"nodelist": "n3"}, env_job=True)[1] == ""     # a step inside a job
    assert cli_filter(tmp_path, cfg, {"nodelist": "n3", "comment": "slurmtools=off"})[1] == ""
    (tmp_path / "exclusions.txt").write_text("garbage")
    assert cli_filter(tmp_path, cfg, {"nodelist": "n3"}) == ({"nodelist": "n3"}, "")   # advisory: silent


def test_cli_filter_sets_open_mode_for_sbatch_in_configured_partitions(tmp_path: Path) -> None:
    publish(tmp_path, [])
    cfg = cfg_for(tmp_path)
    assert cli_filter(tmp_path, cfg, {"partition": "train"})[0] == {"partition": "train", "open-mode": "append"}
    assert cli_filter(tmp_path, cfg, {"partition": "train", "open-mode": "truncate"})[0]["open-mode"] == "truncate"
    assert "open-mode" not in cli_filter(tmp_path, cfg, {"partition": "train"}, comm="srun")[0]
    assert "open-mode" not in cli_filter(tmp_path, cfg, {})[0]            # default partition gpu: no open_mode
    assert "open-mode" not in cli_filter(tmp_path, cfg, {"partition": "train", "comment": "slurmtools=off"})[0]


# ------------------------------------------------------------------------------ what reaches the Lua
@pytest.mark.parametrize("name", ['gpu"]] os.execute("touch /tmp/pwned") --', "gpu\n", "", "-gpu", "a" * 65,
                                  "gpu[1-2]", "gpu,cpu", "gpü"])
def test_hostile_partition_names_are_refused_at_render_time(tmp_path: Path, name: str) -> None:
    cfg = cfg_for(tmp_path, f"[plugins.partitions.{json.dumps(name)}]\nmax_retries = 1\n")
    with pytest.raises(plugins.PluginError, match="not a valid Slurm name"):
        plugins.render(cfg)
    cfg = cfg_for(tmp_path)
    cfg.plugins.default_partition = name
    if name:
        with pytest.raises(plugins.PluginError, match="not a valid Slurm name"):
            plugins.render(cfg)


def test_hostile_node_names_and_reasons_never_reach_the_plugins(tmp_path: Path) -> None:
    rows = [{"node": 'n3"]] os.execute("touch /tmp/pwned") --', "scope": "soft", "reason": "x"},
            {"node": "n4\tdrain", "scope": "soft", "reason": "x"},
            {"node": "n5", "scope": "everything", "reason": "x"},
            {"node": "n6", "scope": "soft", "reason": "bad\nnode\tn9\tsoft\t-\tinjected\nend\n\x00\x1b[31m"}]
    text, problems = plugins.render_data(rows, NOW)
    assert len(problems) == 3 and "refused" in problems[0]
    _, parsed = plugins.parse_data(text)
    assert [(r.node, r.scope) for r in parsed] == [("n6", "soft")]
    assert parsed[0].reason == "bad node n9 soft - injected end [31m"
    (tmp_path / "exclusions.txt").write_text(text)
    jobs, logs = job_submit(tmp_path, cfg_for(tmp_path), [{}])
    assert jobs[0]["exc_nodes"] == "n6" and logs[0][0] == "info"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_lua_string_reads_back_byte_for_byte(text: str) -> None:
    out = subprocess.run([LUA, "-e", f"io.write({plugins.lua_string(text)})"], capture_output=True, timeout=10)
    assert out.returncode == 0 and out.stdout == text.encode("utf-8", "surrogatepass")


def expander(tmp_path: Path) -> str:
    """The rendered Lua hostlist expander, alone."""
    src = plugins.render(cfg_for(tmp_path))["job_submit.lua"]
    return src[src.index("local HOSTLIST_LIMIT"):src.index("local function as_set")]


@pytest.mark.parametrize("spec", ["n1", "n[1-3]", "n[1-3,7],gpu01", "gpu[01-12]", "r[1-2]n[08-10]",
                                  "a-b.c_d,n[9-11]x", "n[098-101]"])
def test_lua_hostlist_expansion_matches_python_hostlist(tmp_path: Path, spec: str) -> None:
    lines = run_lua(f"{expander(tmp_path)}\nfor _, n in ipairs(expand({plugins.lua_string(spec)})) do print(n) end")
    assert lines == hostlist.expand_hostlist(spec)


@pytest.mark.parametrize("spec", ["n[", "n]", "n[a-b]", "n[3-1]", "n[[1]]", "n[1-999999999]"])
def test_lua_hostlist_expansion_refuses_malformed_lists(tmp_path: Path, spec: str) -> None:
    assert run_lua(f"{expander(tmp_path)}\nprint(expand({plugins.lua_string(spec)}) == nil)") == ["true"]


def test_render_writes_the_files_and_slurm_conf_lines(tmp_path: Path) -> None:
    files = plugins.render(cfg_for(tmp_path))
    assert sorted(files) == ["cli_filter.lua", "job_submit.lua", "slurm.conf.lines"]
    assert "JobSubmitPlugins=lua\nCliFilterPlugins=lua\n" in files["slurm.conf.lines"]
    paths = plugins.write(files, str(tmp_path / "out"))
    assert all(Path(p).stat().st_mode & 0o777 == 0o644 for p in paths)
    for name in plugins.FILES:   # valid Lua 5.1
        assert run_lua(f"assert(loadfile({plugins.lua_string(tmp_path / 'out' / name)})) print('ok')") == ["ok"]


def test_publish_writes_the_plugin_file_with_the_json(world: dict[str, Any]) -> None:
    from sqlalchemy.orm import Session

    from slurmtools import drain
    from slurmtools.controller import exclusions
    from slurmtools.ledger import api

    cfg = world["cfg"]
    api.record([drain.exclusion_event(cfg, "n3", "soft", "lemon", "admin:root", ttl_s=None)], cfg)
    api.flush(cfg)
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.publish(cfg, s)
    generated, rows = plugins.parse_data(Path(cfg.exclusions.plugin_file).read_text())
    assert [(r.node, r.scope, r.reason) for r in rows] == [("n3", "soft", "lemon")]
    assert abs(generated - time.time()) < 5
    Path(cfg.exclusions.plugin_file).unlink()        # a lost file is rewritten at the next publish
    with Session(api.engine_for(cfg)) as s:
        assert exclusions.publish(cfg, s)
    assert Path(cfg.exclusions.plugin_file).exists()


def test_cli_render_status_and_hostile_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from slurmtools.cli import main

    cfg_for(tmp_path)
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(tmp_path / "slurmtools.toml"))
    config.reset()
    runner = CliRunner()
    out = runner.invoke(main, ["plugins", "render", "--out", str(tmp_path / "r"), "--json"])
    assert out.exit_code == 0, out.output
    assert sorted(Path(p).name for p in json.loads(out.output)["written"]) == [
        "cli_filter.lua", "job_submit.lua", "slurm.conf.lines"]
    status = runner.invoke(main, ["plugins", "status", "--json"])
    assert status.exit_code == 1 and json.loads(status.output)["state"] == "missing"
    publish(tmp_path, SOFT_N3, generated=time.time())
    status = runner.invoke(main, ["plugins", "status", "--json"])
    assert status.exit_code == 0, status.output
    state = json.loads(status.output)
    assert state["state"] == "ok" and [x["node"] for x in state["exclusions"]] == ["n3"]
    publish(tmp_path, SOFT_N3, generated=time.time() - 3600)          # max_age 600 in this configuration
    assert json.loads(runner.invoke(main, ["plugins", "status", "--json"]).output)["state"] == "stale"
    with (tmp_path / "slurmtools.toml").open("a") as fh:
        fh.write('[plugins.partitions."gpu\\"]] os.execute(\\"id\\") --"]\nmax_retries = 1\n')
    config.reset()
    bad = runner.invoke(main, ["plugins", "render", "--out", str(tmp_path / "r2")])
    assert bad.exit_code == 2 and "cannot render the plugins: partition" in bad.output and "refused" in bad.output
    assert not (tmp_path / "r2").exists()
    hostile = runner.invoke(main, ["exclude", "add", "n1;reboot", "--soft", "--reason", "x"])
    assert hostile.exit_code == 2 and "not a valid node name: 'n1;reboot'" in hostile.output


def test_cli_install_with_the_ledger_down_installs_and_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/install.md installs the plugins before the ledger may be up (the lab does it in that order): the files
    go in, the exclusions are published later, and the command says so without failing."""
    from click.testing import CliRunner

    from slurmtools.cli import main

    cfg_for(tmp_path)
    monkeypatch.setenv("SLURMTOOLS_CONFIG", str(tmp_path / "slurmtools.toml"))
    monkeypatch.setenv("SLURMTOOLS_LEDGER_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")
    config.reset()
    out = CliRunner().invoke(main, ["plugins", "install", "--dir", str(tmp_path / "etc"), "--json"])
    assert out.exit_code == 0, out.output
    said = json.loads(out.output)
    assert sorted(Path(p).name for p in said["written"]) == ["cli_filter.lua", "job_submit.lua"]
    assert said["published"].startswith("cannot publish the exclusions yet: ")
