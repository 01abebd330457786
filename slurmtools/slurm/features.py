"""What the running Slurm supports, detected from it, never guessed from its version string (docs/compatibility.md).

- `HealthCheckTimeout` (26.05; 25.11 has none: slurm-25.11.7 src/common/read_config.c has no such option, 26.05.3
  has it): supported where `scontrol show config` lists the key (src/api/config_info.c lists every option the
  release has, set or not).
- `HealthCheckNodeState=START_ONLY` (25.11 and 26.05; not 22.05 nor 24.11, whose parsers log "Invalid
  HealthCheckNodeState value START_ONLY ignored" and run the check in any state): `scontrol show config` shows the
  value set, never the values the release knows, so the release's option list is read where it is: the parser's
  token in the running Slurm's `libslurmfull.so` (in its `PluginDir`), that library checked to be the running
  Slurm's by its version string. Where that cannot be read (Slurm in another root, no such file): None, said as
  such, and nothing that depends on it is suggested.

Reads files and one `scontrol show config`; changes nothing.
"""

from __future__ import annotations

import math
import mmap
import os
from typing import TYPE_CHECKING

from slurmtools._plain import Plain

if TYPE_CHECKING:
    from slurmtools.slurm.cli_backend import CliSlurm

#: The library whose string table holds the release's option tokens (lib/slurm/ in a source build, Debian's
#: slurm-wlm/ directory: each is the release's PluginDir).
LIBRARY = "libslurmfull.so"
#: The tokens looked up in it, as Slurm's config parser spells them (NUL-terminated C strings).
TOKENS = {"start_only": b"\0START_ONLY\0"}


class Features(Plain):
    """What one running Slurm supports. None: could not tell (`why` says why)."""

    def __init__(self, *, version: str, health_check_timeout: bool, start_only: bool | None,
                 why: str = "") -> None:
        self.version = version
        self.health_check_timeout = health_check_timeout
        self.start_only = start_only
        self.why = why


def show_config(slurm: CliSlurm) -> dict[str, str]:
    """`scontrol show config` as {key: value}. 23.02+ list several Prolog/Epilog scripts as `Prolog[0] = ...`,
    `Prolog[1] = ...`: joined with commas under `Prolog`, as 22.05 shows them."""
    out: dict[str, str] = {}
    for line in slurm.run("scontrol", "show", "config").splitlines():
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key or " " in key:
            continue
        base, bracket, _ = key.partition("[")
        if bracket and key.endswith("]"):
            out[base] = f"{out[base]},{value.strip()}" if base in out else value.strip()
        else:
            out[key] = value.strip()
    return out


def _library_tokens(conf: dict[str, str], root: str = "/") -> tuple[dict[str, bool] | None, str]:
    """Which TOKENS the running Slurm's libslurmfull.so holds, or (None, why not)."""
    version = conf.get("SLURM_VERSION", "")
    plugin_dir = conf.get("PluginDir", "")
    if not version or not plugin_dir or plugin_dir == "(null)":
        return None, "scontrol show config gives no SLURM_VERSION or PluginDir"
    path = os.path.join(root, plugin_dir.split(":")[0].lstrip("/"), LIBRARY)
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(b"\0" + version.encode() + b"\0") < 0:
                return None, f"{path} is not Slurm {version}'s library (another Slurm's, or Slurm runs in another root)"
            return {name: data.find(token) >= 0 for name, token in TOKENS.items()}, ""
    except (OSError, ValueError) as exc:     # ValueError: an empty file cannot be mapped
        return None, f"cannot read {path}: {exc.__class__.__name__}: {exc}"[:300]


def detect(conf: dict[str, str], root: str = "/") -> Features:
    """The features of the Slurm whose `scontrol show config` is CONF; ROOT: where its files are (a chroot)."""
    states = {s.strip().upper() for s in conf.get("HealthCheckNodeState", "").split(",")}
    tokens, why = _library_tokens(conf, root)
    start_only = True if "START_ONLY" in states else (tokens["start_only"] if tokens is not None else None)
    return Features(version=conf.get("SLURM_VERSION", "?"), health_check_timeout="HealthCheckTimeout" in conf,
                    start_only=start_only, why=why if start_only is None else "")


def health_check_budget(checks: int, check_timeout: float, slurm_timeout: float) -> int:
    """The longest our HealthCheckProgram can run, in whole seconds: each check of the health profile to its time
    limit, one after the other, then one Slurm command (a drain) to its own."""
    return math.ceil(checks * check_timeout + slurm_timeout)


def health_check_timeout(budget: int) -> int:
    """HealthCheckTimeout to suggest: Slurm's default (60 s) unless our budget needs more."""
    return max(60, budget)


def slurm_conf_lines(features: Features, *, hook: str, interval: int, budget: int) -> list[str]:
    """slurm.conf's health-check lines for this Slurm: what it supports, and a comment for what it does not."""
    lines = [f"HealthCheckProgram={hook}", f"HealthCheckInterval={interval}"]
    if features.health_check_timeout:
        lines.append(f"HealthCheckTimeout={health_check_timeout(budget)}   # our health hook needs at most "
                     f"{budget} s; below HealthCheckInterval")
    else:
        lines.append(f"# no HealthCheckTimeout in Slurm {features.version} (it kills the program after 60 s)")
    if features.start_only:
        lines.append("# HealthCheckNodeState=START_ONLY   # instead of the interval: check a node only as slurmd "
                     "starts (the prolog still gates every job)")
    elif features.start_only is None:
        lines.append(f"# HealthCheckNodeState=START_ONLY: cannot tell whether Slurm {features.version} has it "
                     f"({features.why})")
    else:
        lines.append(f"# no HealthCheckNodeState=START_ONLY in Slurm {features.version}")
    return lines
