"""The environment a user's command gets when root runs it for them (the controller's resubmission).

A submission record is written by the user (`slurmtools sbatch`, or by hand: the drop directory is
world-writable), so every name and value in its `env` is hostile. Root never runs anything with it: the
environment is built here from a documented keep-list, every loader, locale, resolver and shell start-up
variable is refused (when the record is ingested and again when it is used), and the process that receives it
has already dropped to the user (`run_as`: setgroups/setgid/setuid in the child before exec, the working
directory entered as the user). docs/security.md (F0) and docs/sbatch.md say what is kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

#: Kept from the record: what shapes how a job runs (docs/sbatch.md). HOME, USER, LOGNAME and SHELL are not
#: taken from the record: root sets them from the user's passwd entry; SLURM_CONF is the controller's own.
KEEP_PREFIXES = ("SLURM_", "SBATCH_", "CUDA_", "NCCL_", "OMP_", "CONDA_")
KEEP = frozenset({"PATH", "LANG", "LC_ALL", "LANGUAGE", "VIRTUAL_ENV", "MODULEPATH", "LOADEDMODULES", "MANPATH"})

#: Refused whatever the keep-list says. glibc's own list for set-user-ID programs (sysdeps/generic/unsecvars.h:
#: GCONV_PATH GETCONF_DIR GLIBC_TUNABLES HOSTALIASES LD_* LOCALDOMAIN LOCPATH MALLOC_TRACE NIS_PATH NLSPATH
#: RESOLV_HOST_CONF RES_OPTIONS TMPDIR TZDIR), every LD_* and MALLOC_*, the shells' start-up and parsing
#: variables, the interpreters' load paths and options, and what names the credentials or the cluster.
REFUSED = frozenset({
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "NIS_PATH", "NLSPATH",
    "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR", "TZ",
    "BASH_ENV", "ENV", "IFS", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS4", "GLOBIGNORE", "PROMPT_COMMAND",
    "PERL5LIB", "PERLLIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS", "NODE_PATH", "LUA_PATH", "LUA_CPATH",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "OPENSSL_CONF", "OPENSSL_ENGINES", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "KRB5_CONFIG", "KRB5CCNAME", "KRB_CONF", "MUNGE_SOCKET", "SLURM_CONF", "HOME", "USER", "LOGNAME", "SHELL",
})
REFUSED_PREFIXES = ("LD_", "MALLOC_", "GLIBC_", "PYTHON", "BASH_FUNC_", "DYLD_", "_RLD", "LIBPATH")

#: Bounds: a name is a shell identifier; a value has no NUL and is short; the whole is small.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_VALUE = 8192
MAX_VARS = 256
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def refused(name: str) -> str | None:
    """Why NAME may not come from a user's record; None when it may (kept) or is simply not kept ("")."""
    if not NAME.fullmatch(name):
        return "not a variable name"
    if name in REFUSED or name.startswith(REFUSED_PREFIXES):
        return "a loader, locale, resolver, shell or identity variable"
    return None


def kept(name: str) -> bool:
    return refused(name) is None and (name in KEEP or name.startswith(KEEP_PREFIXES))


#: Set by root (`for_user`), never taken from a record: passed through at use.
ROOT_SET = frozenset({"HOME", "USER", "LOGNAME", "SHELL", "SLURM_CONF"})


def at_use(env: Mapping[str, str]) -> dict[str, str]:
    """ENV checked again just before it is used: the keep-list and what root set, strings without a NUL."""
    return {k: v for k, v in env.items()
            if (k in ROOT_SET or kept(k)) and isinstance(v, str) and "\0" not in v and len(v) <= MAX_VALUE}


def clean(env: object) -> tuple[dict[str, str], list[str]]:
    """(what is kept of ENV, the names left out and why). ENV is anything a record held: only a mapping of
    strings to strings is read; a value with a NUL or over MAX_VALUE is left out, and at most MAX_VARS kept."""
    out: dict[str, str] = {}
    dropped: list[str] = []
    if not isinstance(env, Mapping):
        return out, ([] if env is None else ["env: not a mapping"])
    for key, value in env.items():
        name = str(key)[:130]
        why = refused(name) if isinstance(key, str) else "not a variable name"
        if why is None and not kept(name):
            why = "not in the keep-list"
        elif why is None and not isinstance(value, str):
            why = "not a string"
        elif why is None and ("\0" in value or len(value) > MAX_VALUE):
            why = f"a NUL or over {MAX_VALUE} characters"
        elif why is None and len(out) >= MAX_VARS:
            why = f"over {MAX_VARS} variables"
        if why is None:
            out[name] = value
        else:
            dropped.append(f"{name!r}: {why}")
    return out, dropped


def for_user(record_env: object, user: str, home: str, shell: str = "/bin/sh",
             slurm_conf: str | None = None) -> dict[str, str]:
    """The environment root builds for USER's command: the keep-list from RECORD_ENV (cleaned again here),
    PATH's absolute entries only, identity from the passwd entry, and the controller's own SLURM_CONF."""
    env, _ = clean(record_env)
    path = ":".join(p for p in env.get("PATH", "").split(":") if p.startswith("/"))
    env["PATH"] = path or FALLBACK_PATH
    env.update(HOME=home, USER=user, LOGNAME=user, SHELL=shell)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    return env


def run_as(user: str, argv: list[str], *, env: Mapping[str, str], cwd: str | None, timeout: float,
           input: str | None = None) -> tuple[int, str, str]:
    """Run ARGV as USER (root only): the child takes the user's groups, gid and uid before exec, so nothing of
    the user's (environment, working directory, the program's loader) ever runs as root; ENV is cleaned
    again (a record stored before this check) and the working directory is entered by `env --chdir` as the
    user. (rc, stdout, stderr); subprocess's TimeoutExpired and OSError pass through."""
    import pwd
    import shutil
    import subprocess

    pw = pwd.getpwnam(user)
    safe = at_use(env)
    tool = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"
    full = [tool, *([f"--chdir={cwd}"] if cwd else []), "--", *argv]
    proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input, env=safe, cwd="/",
                          user=pw.pw_uid, group=pw.pw_gid, extra_groups=os.getgrouplist(pw.pw_name, pw.pw_gid),
                          stdin=None if input is not None else subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr
