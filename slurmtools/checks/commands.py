"""Deep-check commands (return to service only): DCGM's diagnostic where `dcgmi` exists, then the site's
own commands (an NCCL test, a burn-in). Each must exit 0 within `deep_timeout` seconds."""

from __future__ import annotations

import shlex
import shutil
import subprocess

from slurmtools.checks import Context, Result, fail, ok
from slurmtools.checks import system as sysmod

NAME = "commands"


def commands(ctx: Context) -> list[str]:
    cmds = [str(c) for c in ctx.settings.deep_commands]
    level = ctx.settings.dcgm_level
    if level and shutil.which("dcgmi") and not any(c.split()[:1] == ["dcgmi"] for c in cmds):
        cmds.insert(0, f"dcgmi diag -r {level}")
    return cmds


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    cmds = commands(ctx)
    if system.replay or not cmds:
        return [ok(NAME, "no deep commands configured" if not cmds else "replay: commands not run")]
    results: list[Result] = []
    timeout = ctx.settings.deep_timeout
    for cmd in cmds:
        try:
            proc = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            results.append(fail(NAME, f"{cmd}: no result within {timeout:g}s", command=cmd))
            continue
        except OSError as exc:
            results.append(fail(NAME, f"{cmd}: cannot run: {exc.strerror}", command=cmd))
            continue
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            results.append(fail(NAME, f"{cmd}: exit {proc.returncode}: {' | '.join(tail)[:150]}", command=cmd,
                                output_tail=tail))
    if not results:
        results.append(ok(NAME, f"{len(cmds)} commands passed", commands=cmds))
    return results
