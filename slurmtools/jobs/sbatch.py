"""`slurmtools sbatch`: sbatch with exclusions, automatic retries and a checkpoint signal.

Everything the user passes goes to sbatch unchanged, as an argv list (never through a shell); we only
add: the active exclusions merged with the user's own `--exclude`, `--requeue`, `--open-mode=append`
(unless the user chose), the retry marker the controller reads (in `--comment`, merged with the
user's comment), and `--signal=B:SIG@GRACE` for `--checkpoint-signal`. The script's own `#SBATCH`
lines count as the user's choices. Runs as the user: it reads the exclusions from the published data
file (world-readable, no database credentials) and drops the submission record where the controller
picks it up.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slurmtools.jobs.marker import OPT_OUT, RetryAsk

if TYPE_CHECKING:
    from slurmtools.config import Config

#: Long options that take a value although 22.05's `sbatch --help` does not list them (or lists the
#: value as optional: --wrap's is required).
EXTRA_VALUE_LONG = frozenset({"open-mode", "wrap", "comment", "exclude", "nodelist", "signal", "chdir", "output",
                              "error", "export", "gres", "partition", "account", "time", "job-name", "nodes",
                              "ntasks", "dependency", "qos", "reservation", "constraint", "mem", "cpus-per-task",
                              "gpus", "gpus-per-node", "array", "begin", "acctg-freq", "cpu-freq", "mail-type",
                              "mail-user", "kill-on-invalid-dep", "mem-bind", "cpu-bind", "hint", "network",
                              "prefer", "tres-per-task", "uid", "gid", "wckey", "switches"})
EXTRA_VALUE_SHORT = frozenset("aAbcCdDeFGiJLmMnNopqStwx")
_HELP_LINE = re.compile(r"^\s+(?:-(\w), )?--([\w-]+)(\[?=)?")


class WrapperError(ValueError):
    """Our own options are wrong (sbatch's are sbatch's business)."""


def value_options(sbatch: str = "sbatch") -> tuple[frozenset[str], frozenset[str]]:
    """(short, long) options that take a value: from the installed sbatch's --help, plus known extras."""
    short, long = set(EXTRA_VALUE_SHORT), set(EXTRA_VALUE_LONG)
    try:
        text = subprocess.run([sbatch, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    for line in text.splitlines():
        m = _HELP_LINE.match(line)
        if m and m.group(3) == "=":
            if m.group(1):
                short.add(m.group(1))
            long.add(m.group(2))
    return frozenset(short), frozenset(long)


@dataclass(frozen=True)
class Opt:
    """One sbatch option as the user gave it: ("-x", "n1"), ("--exclude=n1",) or ("--hold",)."""

    tokens: tuple[str, ...]
    name: str               # the long name (short letters through SHORT_TO_LONG, else the letter)
    value: str | None       # None: a flag (or a value option with nothing after it)


SHORT_TO_LONG = {"x": "exclude", "w": "nodelist", "o": "output", "e": "error", "D": "chdir", "J": "job-name"}


def scan(argv: Sequence[str], short_v: frozenset[str], long_v: frozenset[str]) -> tuple[list[Opt], int]:
    """The options before the script, as sbatch's getopt reads them, and the index where they stop
    (the script, `--`, or the end)."""
    opts: list[Opt] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            takes, attached = name in long_v, value if eq else None
        else:
            name = SHORT_TO_LONG.get(arg[1], arg[1])
            takes, attached = arg[1] in short_v, (arg[2:] if len(arg) > 2 else None)
        if attached is not None and (takes or arg.startswith("--")):
            opts.append(Opt((arg,), name, attached))
        elif takes and i + 1 < len(argv):
            opts.append(Opt((arg, argv[i + 1]), name, argv[i + 1]))
            i += 1
        else:
            opts.append(Opt((arg,), name, None))
        i += 1
    return opts, i


def flat(opts: Iterable[Opt]) -> list[str]:
    return [t for o in opts for t in o.tokens]


@dataclass
class Parsed:
    """The user's command line split: sbatch options (as given), the script and its arguments."""

    opts: list[Opt] = field(default_factory=list)
    script_and_args: list[str] = field(default_factory=list)

    @property
    def values(self) -> dict[str, list[str]]:
        """Long name -> the values given, in order."""
        out: dict[str, list[str]] = {}
        for o in self.opts:
            if o.value is not None:
                out.setdefault(o.name, []).append(o.value)
        return out

    @property
    def flags(self) -> set[str]:
        return {o.name for o in self.opts if o.value is None}


def split_argv(argv: Sequence[str], short_v: frozenset[str], long_v: frozenset[str]) -> Parsed:
    """Find where sbatch's options end and the script begins, as sbatch's getopt would."""
    opts, stop = scan(argv, short_v, long_v)
    return Parsed(opts, list(argv[stop + 1:] if stop < len(argv) and argv[stop] == "--" else argv[stop:]))


def script_directives(path: str, short_v: frozenset[str], long_v: frozenset[str]) -> Parsed:
    """The `#SBATCH` lines at the top of the script (sbatch stops at the first command)."""
    found: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh):
                line = line.strip()
                if n == 0 and line.startswith("#!"):
                    continue
                if line.startswith("#SBATCH"):
                    import shlex

                    try:
                        found += shlex.split(line[len("#SBATCH"):], comments=True)
                    except ValueError:
                        continue
                elif line and not line.startswith("#"):
                    break
    except OSError:
        return Parsed()
    return split_argv(found, short_v, long_v)


@dataclass
class Plan:
    argv: list[str]                 # what we run: sbatch + options + script + args
    added: list[str]                # what we added, for --dry-run and the record
    ask: RetryAsk | None
    exclude: list[str]
    script: str | None = None
    checkpoint: dict[str, Any] | None = None   # {"signal": "USR1", "grace": 120}: the controller's evacuation
    size: dict[str, str] = field(default_factory=dict)   # the job's nodes, gpus, gpus-per-node, export as asked


def build(user_argv: Sequence[str], *, ask: RetryAsk | None, excluded: Sequence[str], ckpt_signal: str | None,
          ckpt_grace: int | None, sbatch: str = "sbatch",
          value_opts: tuple[frozenset[str], frozenset[str]] | None = None, comment_tag: str | None = None,
          job_name: str | None = None, begin: str | None = None) -> Plan:
    """The sbatch command line for USER_ARGV. The controller's resubmission also passes COMMENT_TAG (a
    token added to the comment, to find the job again), JOB_NAME and BEGIN (each unless the user chose)."""
    from slurmtools.slurm.parse import collect, expand

    short_v, long_v = value_opts or value_options(sbatch)
    p = split_argv(user_argv, short_v, long_v)
    script = p.script_and_args[0] if p.script_and_args else None
    d = script_directives(script, short_v, long_v) if script and "wrap" not in p.values else Parsed()

    def given(name: str) -> bool:
        return name in p.values or name in p.flags or name in d.values or name in d.flags

    added: list[str] = []
    mine: set[str] = set()
    for value in p.values.get("exclude") or d.values.get("exclude") or []:
        try:
            mine.update(expand(value))
        except Exception as exc:  # noqa: BLE001 - python-hostlist's errors as a clear message
            raise WrapperError(f"--exclude={value!r} is not a valid hostlist ({exc})") from None
    from slurmtools.plugins import valid_name

    exclude = sorted(mine | {n for n in excluded if valid_name(n)})   # ours: only names Slurm could have
    options = list(p.opts)
    if set(exclude) != mine:        # ours to add: one merged list replaces the user's (theirs is in it)
        options = [o for o in options if o.name != "exclude"]
        try:
            added.append(f"--exclude={collect(exclude)}")
        except Exception as exc:  # noqa: BLE001 - python-hostlist's errors as a clear message
            raise WrapperError(f"cannot write the exclusions {exclude[:5]} as a hostlist ({exc})") from None
    if ask is not None and not ask.opted_out:
        if not given("requeue") and not given("no-requeue"):
            added.append("--requeue")
        if not given("open-mode"):
            added.append("--open-mode=append")
        comment = (p.values.get("comment") or d.values.get("comment") or [""])[-1]
        if OPT_OUT not in comment.split():
            options = [o for o in options if o.name != "comment"]
            added.append("--comment=" + " ".join(x for x in (comment, ask.marker(), comment_tag) if x))
    if job_name and not given("job-name"):
        added.append(f"--job-name={job_name}")
    if begin and not given("begin"):
        added.append(f"--begin={begin}")
    if ckpt_signal:
        import signal as _signal

        name = ckpt_signal.upper().removeprefix("SIG")
        if f"SIG{name}" not in _signal.Signals.__members__ or name in ("KILL", "STOP"):
            raise WrapperError(f"--checkpoint-signal {ckpt_signal!r} is not a signal a job can trap (e.g. USR1)")
        ckpt_signal = name
        if ckpt_grace is not None and ckpt_grace < 0:
            raise WrapperError("--checkpoint-grace must be >= 0 seconds")
        if given("signal"):
            raise WrapperError("--checkpoint-signal and sbatch's own --signal both set: use one")
        added.append(f"--signal=B:{ckpt_signal}@{int(ckpt_grace or 120)}")
    size = {k: (p.values.get(k) or p.values.get(alias) or d.values.get(k) or d.values.get(alias) or [""])[-1]
            for k, alias in (("nodes", "N"), ("gpus", "G"), ("gpus-per-node", "gpus-per-node"),
                             ("export", "export"))}
    return Plan([sbatch, *flat(options), *added, *p.script_and_args], added, ask, exclude,
                None if "wrap" in p.values else script,
                {"signal": ckpt_signal, "grace": int(ckpt_grace or 120)} if ckpt_signal else None,
                {k: v for k, v in size.items() if v})


#: Our own options (each takes a value), taken out of the option part of the command line.
OURS = {"max-retries", "retry-on", "checkpoint-signal", "checkpoint-grace", "advice"}
ADVICE_MODES = ("off", "print", "export")


def take_ours(argv: Sequence[str], short_v: frozenset[str], long_v: frozenset[str]) -> tuple[dict[str, str],
                                                                                            list[str]]:
    """Split ARGV into our options and the rest (sbatch's options, the script, its arguments untouched)."""
    opts, stop = scan(argv, short_v, long_v | OURS)
    ours: dict[str, str] = {}
    for o in opts:
        if o.name in OURS:        # long options only: no short letter maps to these names
            if o.value is None:
                raise WrapperError(f"--{o.name} needs a value")
            ours[o.name] = o.value
    return ours, flat(o for o in opts if o.name not in OURS) + list(argv[stop:])


def active_exclusions(cfg: Config) -> list[str]:
    """Nodes to avoid, from the published data file (readable by every user). Missing, stale or unreadable:
    none, with a warning; a row that is not a valid Slurm node name is left out (never a traceback, never a
    name that makes sbatch refuse the job)."""
    from slurmtools.plugins import valid_name

    path = cfg.exclusions.data_file
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return []       # nothing ever published (a new site): the normal empty state, not a warning
    except (OSError, ValueError, RecursionError):
        print(f"slurmtools sbatch: warning: cannot read the exclusions ({path}); submitting without them",
              file=sys.stderr)
        return []
    now = time.time()
    max_age = cfg.exclusions.max_age
    generated = data.get("generated_epoch") if isinstance(data, dict) else None
    age = now - generated if isinstance(generated, (int, float)) else float("inf")
    if max_age and not age <= max_age:
        when = f"stale (written {age:.0f}s ago)" if isinstance(generated, (int, float)) else "undated"
        print(f"slurmtools sbatch: warning: the exclusions in {path} are {when}; submitting without them",
              file=sys.stderr)
        return []
    rows = data.get("exclusions") if isinstance(data, dict) else None
    out: set[str] = set()
    skipped = 0
    for x in rows if isinstance(rows, list) else []:
        node = x.get("node") if isinstance(x, dict) else None
        expires = x.get("expires_epoch") if isinstance(x, dict) else None
        if not isinstance(node, str) or not valid_name(node) or (
                expires is not None and not isinstance(expires, (int, float))):
            skipped += 1        # written by hand or by something else: left out
            continue
        if not expires or expires > now:
            out.add(node)
    if skipped or not isinstance(rows, list):
        print(f"slurmtools sbatch: warning: {path}: " + (f"{skipped} exclusion(s) not valid, left out" if skipped
              else "no list of exclusions"), file=sys.stderr)
    return sorted(out)


def record_submission(cfg: Config, job_id: int, plan: Plan, user_argv: Sequence[str], cwd: str) -> str | None:
    """Drop the chain's root record for the controller (which checks that the file's owner is the job's
    user before it believes it). Returns the path, or None when the drop directory is not usable."""
    drop = cfg.controller.submit_dir
    script = plan.script
    copy = None
    if script and os.path.isfile(script):
        try:
            with open(script, encoding="utf-8", errors="replace") as fh:
                copy = fh.read(cfg.controller.script_copy_max_bytes)
        except OSError:
            copy = None
    from slurmtools.slurm.userenv import clean

    keep, _ = clean(dict(os.environ))     # the documented keep-list; the controller checks it again
    record = {"job_id": job_id, "uid": os.getuid(), "user_argv": list(user_argv), "argv": plan.argv,
              "added": plan.added, "cwd": cwd, "env": keep, "script": copy, "time": time.time(),
              "max_retries": plan.ask.max_retries if plan.ask else 0,
              "retry_on": plan.ask.retry_on if plan.ask else "node", "checkpoint": plan.checkpoint}
    path = os.path.join(drop, f"{job_id}.json")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
    except OSError:
        return None
    return path


def _leading_int(text: str) -> int | None:
    """`8` -> 8, `8-16` -> 8, `a100:4` -> 4 (a GRES count is its last field); None for anything else."""
    head = text.split("-")[0] if ":" not in text else text.rsplit(":", 1)[1]
    head = head.strip()
    return int(head) if head.isascii() and head.isdigit() and len(head) <= 9 else None


def checkpoint_advice(cfg: Config, plan: Plan, mode: str | None) -> tuple[str | None, dict[str, str]]:
    """One line of `slurmtools advise checkpoint` for a job of advise.sbatch_min_nodes nodes or more, from the
    published summary (the wrapper runs as the user, without the database), and the environment to export
    (MODE `export`: advise.env_var = the interval in whole seconds). (None, {}) when off, small, or unknown."""
    mode = mode or cfg.advise.sbatch
    if mode not in ADVICE_MODES:
        raise WrapperError(f"--advice must be one of {', '.join(ADVICE_MODES)} (got {mode[:20]!r})")
    nodes = _leading_int(plan.size.get("nodes", ""))
    if mode == "off" or nodes is None or nodes < cfg.advise.sbatch_min_nodes:
        return None, {}
    gpus = _leading_int(plan.size.get("gpus", ""))
    if gpus is None:
        gpn = _leading_int(plan.size.get("gpus-per-node", "")) or cfg.reports.gpus_per_node
        gpus = nodes * gpn
    from slurmtools.reports import advice, model

    path = cfg.advise.data_file
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(1_000_000))
        out = advice.compose(advice.from_summary(data, gpus), gpus=gpus, nodes=nodes)
    except FileNotFoundError:
        return None, {}
    except (OSError, ValueError, advice.AdviceError, model.ModelError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else exc.__class__.__name__
        return f"slurmtools sbatch: no checkpoint advice ({why})", {}
    env: dict[str, str] = {}
    line = "slurmtools sbatch: " + advice.hint(out)
    if mode == "export":
        var = cfg.advise.env_var
        export = plan.size.get("export", "")
        if export and export.split(",")[0].upper() not in ("ALL", ""):
            line += f" ({var} not exported: --export={export[:40]} does not pass the environment)"
        else:
            env[var] = str(round(out["interval_s"]))
    return line, env
