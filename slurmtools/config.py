"""Configuration: packaged defaults plus an operator TOML file plus environment overrides.

The packaged ``defaults.toml`` is also the schema: every key an operator sets must exist there
and have the same type. Errors name the key and the file.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_PATH = "/etc/slurmtools/slurmtools.toml"

#: Environment variables that override one key each (applied last).
ENV_OVERRIDES: dict[str, str] = {
    "SLURMTOOLS_LEDGER_URL": "ledger.url",
    "SLURMTOOLS_SPOOL_DIR": "ledger.spool_dir",
    "SLURMTOOLS_SLURM_BACKEND": "slurm.backend",
    "SLURMTOOLS_SLURM_BIN_DIR": "slurm.bin_dir",
}

#: Keys whose value must be one of a fixed set (named tables: keyed by their schema table).
CHOICES: dict[str, tuple[str, ...]] = {
    "slurm.backend": ("auto", "cli", "pyslurm"),
    "general.log_level": ("debug", "info", "warning", "error"),
    "xid_override.action": ("", "none", "restart_app", "investigate", "reset_gpu", "reboot_node", "drain_node"),
    "xid_override.category": ("", "hardware", "driver", "network", "filesystem", "application", "unknown"),
    "xid_override.severity": ("", "info", "warning", "error", "critical"),
}

#: Tables whose sub-tables are free-form names, each validated against another table.
NAMED_TABLES: dict[str, str] = {"nodes": "node", "xid": "xid_override", "hardware": "hardware_profile"}


class ConfigError(ValueError):
    """A configuration file or value is invalid. The message names the key and the file."""


def _defaults() -> dict[str, Any]:
    # The packaged file, read by path (importlib.resources costs ~9 ms of import in a prolog).
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "defaults.toml"), encoding="utf-8") as fh:
        text = fh.read()
    return tomllib.loads(text)


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _check_value(key: str, value: Any, default: Any, origin: str, choice_key: str | None = None) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{origin}: {key} must be {_type_name(default)}, got {value!r}")
    choices = CHOICES.get(choice_key or key)
    if choices is not None and value not in choices:
        shown = ", ".join(c for c in choices if c)
        raise ConfigError(f"{origin}: {key} must be one of {shown}, got {value!r}")
    return value


def _merge(base: dict[str, Any], override: dict[str, Any], schema: dict[str, Any],
           origin: str, prefix: str = "", schema_name: str | None = None) -> None:
    for key, value in override.items():
        dotted = f"{prefix}{key}"
        if key not in schema:
            raise ConfigError(f"{origin}: unknown key {dotted!r}")
        default = schema[key]
        if dotted in NAMED_TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: {dotted} must be a table")
            sub_schema = schema[NAMED_TABLES[dotted]]
            for name, table in value.items():
                if not isinstance(table, dict):
                    raise ConfigError(f"{origin}: {dotted}.{name} must be a table")
                target = base[key].setdefault(str(name), {})
                _merge(target, table, sub_schema, origin, f"{dotted}.{name}.", NAMED_TABLES[dotted])
        elif isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: {dotted} must be a table")
            _merge(base[key], value, default, origin, f"{dotted}.")
        else:
            base[key] = _check_value(dotted, value, default, origin,
                                     f"{schema_name}.{key}" if schema_name else None)


@dataclass
class Config:
    """The effective configuration. ``get("ledger.url")``; ``node("n1")`` merges overrides."""

    data: dict[str, Any]
    sources: list[str] = field(default_factory=list)

    def get(self, dotted: str) -> Any:
        value: Any = self.data
        for part in dotted.split("."):
            value = value[part]
        return value

    def section(self, name: str) -> dict[str, Any]:
        section = self.data[name]
        assert isinstance(section, dict)
        return section

    def node(self, name: str | None) -> dict[str, Any]:
        merged = dict(self.data["node"])
        if name:
            merged.update(self.data["nodes"].get(name, {}))
        return merged

    def hardware(self, node: str | None) -> dict[str, Any]:
        """The hardware profile NODE should match (defaults where it names none). Raises ConfigError."""
        merged = dict(self.data["hardware_profile"])
        name = self.node(node).get("hardware") or ""
        if name:
            if name not in self.data["hardware"]:
                raise ConfigError(f"node {node}: hardware profile {name!r} is not defined ([hardware.{name}])")
            merged.update(self.data["hardware"][name])
        return merged

    @property
    def cluster(self) -> str:
        return str(self.data["general"]["cluster"] or os.environ.get("SLURM_CLUSTER_NAME") or "default")


def this_node(env: Mapping[str, str] | None = None) -> str:
    """The Slurm node this process runs on: SLURMD_NODENAME (lab nodes share a hostname), else hostname."""
    import socket

    env = dict(os.environ) if env is None else env
    return env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def config_path() -> str:
    return os.environ.get("SLURMTOOLS_CONFIG") or DEFAULT_PATH


def parse_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read one TOML file, with a ConfigError (never a traceback) when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def load(path: str | os.PathLike[str] | None = None, *, env: dict[str, str] | None = None) -> Config:
    """Defaults, then the operator file (if it exists, or if a path was given), then env."""
    env = dict(os.environ) if env is None else env
    defaults = _defaults()
    data = copy.deepcopy(defaults)
    sources = ["(packaged defaults)"]
    explicit = path is not None or bool(env.get("SLURMTOOLS_CONFIG"))
    file_path = Path(path or env.get("SLURMTOOLS_CONFIG") or DEFAULT_PATH)
    if explicit or file_path.exists():
        _merge(data, parse_file(file_path), defaults, str(file_path))
        sources.append(str(file_path))
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            section, key = dotted.split(".")
            data[section][key] = _check_value(dotted, env[var], defaults[section][key], f"${var}")
            sources.append(f"${var}")
    return Config(data, sources)


def check_file(path: str | os.PathLike[str]) -> None:
    """Validate one operator file against the schema; raises ConfigError."""
    defaults = _defaults()
    _merge(copy.deepcopy(defaults), parse_file(path), defaults, str(path))


_cached: Config | None = None


def get() -> Config:
    """The process-wide configuration, loaded once."""
    global _cached
    if _cached is None:
        _cached = load()
    return _cached


def reset() -> None:
    global _cached
    _cached = None
