"""`slurmtools config show|check`: the effective configuration and the check of an operator file."""

from __future__ import annotations

import json

import click

from slurmtools.cli.common import echo, emit_json, fail, get_config


@click.group("config")
def config_group() -> None:
    """Show or check the configuration."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def config_show(as_json: bool) -> None:
    """Print the effective configuration (defaults + operator file + environment)."""
    cfg = get_config()
    data = cfg.to_dict()
    if as_json:
        emit_json({"sources": cfg.sources, "config": data})
        return
    echo("# sources: " + ", ".join(cfg.sources))
    for section, values in data.items():
        echo(f"\n[{section}]")
        for key, value in values.items():
            echo(f"{key} = {json.dumps(value)}")


@config_group.command("check")
@click.argument("path", required=False)
def config_check(path: str | None) -> None:
    """Validate an operator file (default: SLURMTOOLS_CONFIG or /etc/slurmtools/slurmtools.toml)."""
    from slurmtools import config

    target = path or config.config_path()
    try:
        config.check_file(target)
    except config.ConfigError as exc:
        fail(str(exc), 1)
    echo(f"{target}: ok")
