"""`slurmtools plugins render|install|status`: Slurm's job_submit/cli_filter Lua plugins."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config

if TYPE_CHECKING:
    from slurmtools.config import Config


def _render(cfg: Config) -> dict[str, str]:
    from slurmtools import plugins

    try:
        return plugins.render(cfg)
    except plugins.PluginError as exc:
        fail(f"cannot render the plugins: {exc}")


@click.group("plugins")
def plugins_group() -> None:
    """Slurm's job_submit.lua and cli_filter.lua: exclusions and retry defaults for every job."""


@plugins_group.command("render")
@click.option("--out", "out_dir", default=".", show_default=True, help="Write the files into this directory.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def plugins_render(out_dir: str, as_json: bool) -> None:
    """Render job_submit.lua, cli_filter.lua and the slurm.conf lines from the configuration (to review them)."""
    from slurmtools import plugins

    files = _render(get_config())
    try:
        paths = plugins.write(files, out_dir)
    except OSError as exc:
        fail(f"cannot write into {out_dir}: {exc}")
    if as_json:
        emit_json({"written": paths})
        return
    for path in paths:
        echo(f"wrote {path}")


@plugins_group.command("install")
@click.option("--dir", "target", help="Where Slurm reads them (default plugins.dir, else next to slurm.conf).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def plugins_install(target: str | None, as_json: bool) -> None:
    """Install job_submit.lua and cli_filter.lua next to slurm.conf and publish the exclusions file they read.

    Slurm reloads a changed script by itself; enabling the plugins the first time needs the slurm.conf lines
    this prints and a slurmctld restart (`scontrol reconfigure` does not load a new plugin type)."""
    from slurmtools import plugins
    from slurmtools.controller import exclusions

    cfg = get_config()
    files = _render(cfg)
    out_dir = target or cfg.plugins.dir or plugins.default_dir()
    try:
        paths = plugins.write({k: v for k, v in files.items() if k in plugins.FILES}, out_dir)
    except OSError as exc:
        fail(f"cannot write into {out_dir}: {exc}")
    published: bool | str
    try:
        from sqlalchemy.orm import Session

        from slurmtools.ledger import api, schema

        engine = api.engine_for(cfg)
        schema.ensure(engine)
        from slurmtools.slurm import SlurmError, get_client

        try:
            known = exclusions.known_nodes(get_client(cfg))
        except SlurmError:
            known = None
        with Session(engine) as session:
            exclusions.publish(cfg, session, known=known)
        published = True
    except Exception as exc:  # noqa: BLE001 - the files are in place; the plugins fail open until it works
        published = f"cannot publish the exclusions yet: {str(exc).splitlines()[0] if str(exc) else exc!r}"
    slurm_conf = os.path.join(out_dir, "slurm.conf")
    have = plugins.configured(slurm_conf)
    if as_json:
        emit_json({"written": paths, "published": published, "slurm_conf": slurm_conf, "configured": have})
        return
    for path in paths:
        echo(f"installed {path}")
    if published is not True:
        echo(f"slurmtools: warning: {published}", err=True)
    missing = [k for k, ok in have.items() if not ok]
    if missing:
        echo(f"\n{slurm_conf} does not enable them yet: add these lines and restart slurmctld:")
        for key in missing:
            echo(f"  {key}=lua")


@plugins_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins_status(as_json: bool) -> None:
    """What the plugins see now: the exclusions file (age, rows, stale or not) and whether they are enabled."""
    from slurmtools import plugins

    cfg = get_config()
    path = cfg.exclusions.plugin_file
    max_age = cfg.exclusions.max_age
    state: dict[str, Any] = {"plugin_file": path, "max_age": max_age}
    try:
        with open(path, encoding="utf-8") as fh:
            generated, rows = plugins.parse_data(fh.read(plugins.DATA_MAX_BYTES + 1))
        age = time.time() - generated
        state.update(age_s=round(age, 1), stale=bool(max_age) and age > max_age,
                     exclusions=[{"node": r.node, "scope": r.scope, "reason": r.reason,
                                  "expires_epoch": r.expires_epoch} for r in rows])
        state["state"] = "stale" if state["stale"] else "ok"
    except OSError as exc:
        state.update(state="missing", error=str(exc))
    except (plugins.PluginError, ValueError) as exc:
        state.update(state="unreadable", error=str(exc))
    out_dir = cfg.plugins.dir or plugins.default_dir()
    state["configured"] = plugins.configured(os.path.join(out_dir, "slurm.conf"))
    state["installed"] = {name: os.path.exists(os.path.join(out_dir, name)) for name in plugins.FILES}
    if as_json:
        emit_json(state)
    else:
        echo(f"exclusions file {path}: {state['state']}"
             + (f", written {state['age_s']:.0f}s ago" if "age_s" in state else f" ({state.get('error')})"))
        for row in state.get("exclusions", []):
            echo(f"  {row['node']}  {row['scope']}  {row['reason']}")
        for name, ok in state["installed"].items():
            echo(f"{os.path.join(out_dir, name)}: {'installed' if ok else 'missing'}")
        for key, ok in state["configured"].items():
            echo(f"{key}=lua: {'set' if ok else 'not set'} in slurm.conf")
    if state["state"] != "ok":
        raise SystemExit(1)
