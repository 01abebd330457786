"""Slurm's job_submit/lua and cli_filter/lua plugins, rendered from the templates next to this file.

`job_submit.lua` runs inside slurmctld for every job (sbatch, srun, salloc, REST): it adds the active soft
exclusions to the job's excluded nodes and applies per-partition defaults (requeue, the retry marker the
controller reads). `cli_filter.lua` runs in every client command: it sets `--open-mode` where configured
and warns a user who asks for an excluded node with `-w`.

Neither calls out to Python, a database or the network. They read the exclusions from `exclusions.
plugin_file`, a small line-oriented file `slurmtools.controller.exclusions.publish` rewrites atomically whenever the
exclusions change (the controller refreshes it at least every minute). The file is parsed, never executed
as Lua, so a node name or reason cannot inject code into slurmctld; both are still validated here, where
they are written: a node name outside Slurm's hostname grammar is rejected, a reason loses its control
characters. Everything interpolated into the Lua templates is validated or escaped at render time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.config import Config

#: Slurm node and partition names as we accept them: letters, digits, '-', '_', '.', starting with a letter or
#: digit (what hostnames allow, plus '_'), at most 64 characters. Anything else cannot reach a Lua file.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")   # used with fullmatch
DATA_HEADER = "slurmtools-exclusions 1"
#: The plugins refuse a data file larger than this (bytes): a runaway file must not slow every submission.
DATA_MAX_BYTES = 1 << 20
SCOPES = ("soft", "drain")
FILES = ("job_submit.lua", "cli_filter.lua")
SLURM_CONF_LINES = "JobSubmitPlugins=lua\nCliFilterPlugins=lua\n"


class PluginError(ValueError):
    """A value cannot be rendered safely (the message names it), or the files cannot be written."""


def valid_name(name: str) -> bool:
    return bool(NAME_RE.fullmatch(name))


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not valid_name(name):
        raise PluginError(f"{what} {name!r} is not a valid Slurm name (letters, digits, '-', '_', '.'; at most "
                          f"64 characters, starting with a letter or digit): refused")
    return name


def clean_text(text: str, limit: int = 200) -> str:
    """A reason as the data file carries it: one line, no control characters, at most LIMIT characters."""
    flat = "".join(ch if ch.isprintable() and ch != "\t" else " " for ch in str(text))
    return " ".join(flat.split())[:limit]


def lua_string(value: object) -> str:
    """VALUE as a double-quoted Lua 5.1 string literal that reads back byte for byte: quotes, backslashes
    and every byte outside printable ASCII are escaped (decimal `\\ddd`), so nothing can close the string."""
    out = ['"']
    for byte in str(value).encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03d}")
    out.append('"')
    return "".join(out)


# ------------------------------------------------------------------------------------------ data file
@dataclass(frozen=True)
class DataRow:
    node: str
    scope: str
    expires_epoch: float | None
    reason: str


def render_data(rows: Iterable[Mapping[str, Any]], generated_epoch: float) -> tuple[str, list[str]]:
    """The plugins' data file for ROWS (dicts with node, scope, reason, expires_epoch). Returns the text and
    the problems: rows with a node name outside the grammar or an unknown scope are left out and named."""
    lines = [DATA_HEADER, f"generated\t{int(generated_epoch)}"]
    problems: list[str] = []
    for row in rows:
        node, scope = str(row.get("node", "")), str(row.get("scope", ""))
        if not valid_name(node):
            problems.append(f"node name {node!r} refused (not a valid Slurm node name)")
            continue
        if scope not in SCOPES:
            problems.append(f"{node}: scope {scope!r} refused")
            continue
        expires = row.get("expires_epoch")
        lines.append("\t".join(["node", node, scope, str(int(float(expires))) if expires else "-",
                                clean_text(str(row.get("reason", ""))) or "-"]))
    lines.append("end")
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > DATA_MAX_BYTES:
        raise PluginError(f"{len(lines) - 3} exclusions make a data file over {DATA_MAX_BYTES} bytes")
    return text, problems


def parse_data(text: str) -> tuple[float, list[DataRow]]:
    """Read a data file back (what the Lua does; used by tests and `plugins status`). Raises PluginError."""
    lines = text.splitlines()
    if not lines or lines[0] != DATA_HEADER or lines[-1] != "end":
        raise PluginError("not a complete slurmtools exclusions file")
    generated: float | None = None
    rows: list[DataRow] = []
    for line in lines[1:-1]:
        parts = line.split("\t")
        if parts[0] == "generated" and len(parts) == 2:
            generated = float(parts[1])
        elif parts[0] == "node" and len(parts) == 5 and valid_name(parts[1]) and parts[2] in SCOPES:
            rows.append(DataRow(parts[1], parts[2], None if parts[3] == "-" else float(parts[3]), parts[4]))
        else:
            raise PluginError(f"malformed line {line!r}")
    if generated is None:
        raise PluginError("no 'generated' line")
    return generated, rows


# ----------------------------------------------------------------------------------------- templates
def partition_defaults(cfg: Config) -> dict[str, dict[str, Any]]:
    """[plugins.partitions.NAME] merged over [plugins.partition_defaults], names checked, markers built."""
    from slurmtools.jobs.marker import RetryAsk

    out: dict[str, dict[str, Any]] = {}
    for name, d in sorted(cfg.plugins.partitions.items()):     # complete: [plugins.partition_defaults] under
        if name != "*":
            check_name(name, "partition")
        if d.max_retries < 0:
            raise PluginError(f"plugins.partitions.{name}.max_retries must be >= 0")
        out[name] = {"requeue": d.requeue, "open_mode": d.open_mode,
                     "marker": RetryAsk(d.max_retries, d.retry_on).marker() if d.max_retries else ""}
    return out


def context(cfg: Config) -> dict[str, Any]:
    data_file = cfg.exclusions.plugin_file
    if not os.path.isabs(data_file) or not data_file.isprintable():
        raise PluginError(f"exclusions.plugin_file {data_file!r} must be an absolute path")
    default_partition = cfg.plugins.default_partition
    if default_partition:
        check_name(default_partition, "plugins.default_partition")
    max_age = cfg.exclusions.max_age
    if max_age < 0:
        raise PluginError("exclusions.max_age must be >= 0")
    return {"data_file": data_file, "max_age": int(max_age), "max_bytes": DATA_MAX_BYTES,
            "default_partition": default_partition, "add_exclusions": cfg.plugins.add_exclusions,
            "warn_nodelist": cfg.plugins.warn_nodelist,
            "partitions": partition_defaults(cfg)}


def render(cfg: Config) -> dict[str, str]:
    """{file name: text} for job_submit.lua, cli_filter.lua and the slurm.conf lines. Raises PluginError."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["lua"] = lua_string
    ctx = context(cfg)
    out = {name: env.get_template(f"{name}.j2").render(**ctx) for name in FILES}
    out["slurm.conf.lines"] = ("# Add to slurm.conf (a slurmctld restart is needed the first time; later renders "
                               "are reloaded by the plugins when the files change):\n" + SLURM_CONF_LINES)
    return out


def default_dir() -> str:
    """Where Slurm looks for job_submit.lua and cli_filter.lua: next to slurm.conf."""
    return os.path.dirname(os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf")


def write(files: Mapping[str, str], out_dir: str) -> list[str]:
    """Write FILES into OUT_DIR atomically (0644: clients read cli_filter.lua as the user). Returns paths."""
    from slurmtools.fsutil import write_atomic

    os.makedirs(out_dir, mode=0o755, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        write_atomic(path, text, 0o644, durable=True)
        paths.append(path)
    return paths


def configured(slurm_conf: str) -> dict[str, bool]:
    """Which of our plugin lines SLURM_CONF already has (read as text; includes are not followed)."""
    found = {"JobSubmitPlugins": False, "CliFilterPlugins": False}
    try:
        with open(slurm_conf, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.split("#", 1)[0].strip().partition("=")
                if key.strip().lower() in ("jobsubmitplugins", "clifilterplugins") and \
                        "lua" in [v.strip() for v in value.split(",")]:
                    found["JobSubmitPlugins" if key.strip().lower() == "jobsubmitplugins" else "CliFilterPlugins"] \
                        = True
    except OSError:
        pass
    return found
