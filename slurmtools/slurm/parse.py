"""Parsers for what Slurm's commands print. Pure functions, tested against recorded lab output."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import hostlist

from slurmtools.jobstate import is_sluid
from slurmtools.slurm.types import ExitStatus, JobInfo, JobRecord, NodeEvent, NodeInfo, SlurmParseError

_EMPTY = {"", "(null)", "None", "None assigned", "N/A", "Unknown"}


def expand(nodes: str | None) -> tuple[str, ...]:
    """Expand a Slurm hostlist (`n[1-3],gpu07`) with python-hostlist; empty/None -> ()."""
    if nodes is None or nodes.strip() in _EMPTY:
        return ()
    try:
        return tuple(hostlist.expand_hostlist(nodes.strip()))
    except hostlist.BadHostlist as exc:
        raise SlurmParseError(f"bad hostlist {nodes!r}: {exc}") from None


def collect(nodes: Iterable[str]) -> str:
    """Compress node names into one Slurm hostlist (`n[1-2,4]`); '' for none."""
    names = sorted({n for n in nodes if n})
    return str(hostlist.collect_hostlist(names)) if names else ""


def epoch(value: Any) -> datetime | None:  # Any: Slurm's JSON time, a number or {set, number}
    """Slurm JSON time (epoch seconds; 0 means unset) -> aware datetime."""
    if value in (None, 0, ""):
        return None
    if isinstance(value, dict):  # newer openapi versions: {"set": true, "number": N}
        if not value.get("set", True):
            return None
        value = value.get("number")
        if value in (None, 0, ""):     # {"set": true, "number": 0}: 23.02+'s "never" (a node never given a reason)
            return None
    return datetime.fromtimestamp(int(value), tz=UTC)


def local_time(text: str) -> datetime | None:
    """sacct/scontrol local time `2026-11-22T03:12:44` -> aware datetime; Unknown/None -> None."""
    text = text.strip()
    if text in _EMPTY:
        return None
    try:
        return datetime.fromisoformat(text).astimezone()
    except ValueError:
        raise SlurmParseError(f"not a Slurm time: {text!r}") from None


def _load_json(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SlurmParseError(f"{what}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SlurmParseError(f"{what}: expected a JSON object")
    errors = [e for e in data.get("errors") or [] if e]
    if errors:
        raise SlurmParseError(f"{what}: Slurm reported errors: {errors}")
    return data


def _user(value: object) -> str | None:
    if value in (None, ""):
        return None
    return str(value)


def parse_sinfo_json(text: str) -> list[NodeInfo]:
    """`sinfo --json` -> nodes, sorted by name. A drained idle node is state idle + DRAIN flag."""
    data = _load_json(text, "sinfo --json")
    out = []
    for node in data.get("nodes", []):
        state = node.get("state", "")
        if isinstance(state, list):  # newer versions: ["IDLE", "DRAIN"]
            flags = tuple(str(s).upper() for s in state[1:])
            state = state[0] if state else ""
        else:
            flags = tuple(str(s).upper() for s in node.get("state_flags") or [])
        out.append(NodeInfo(
            name=node["name"],
            state=str(state).lower(),
            flags=flags,
            reason=node.get("reason") or "",
            reason_user=_user(node.get("reason_set_by_user")),
            reason_time=epoch(node.get("reason_changed_at")),
            partitions=tuple(node.get("partitions") or ()),
            gres=node.get("gres") or "",
        ))
    return sorted(out, key=lambda n: _natural(n.name))


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _int_or_none(value: object) -> int | None:
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) else None
    return None if value in (None, "") else int(value)  # type: ignore[call-overload]  # Slurm's JSON: not a number raises


def _exit_from_json(value: object) -> ExitStatus:
    """squeue --json exit_code: a raw wait status in 22.05; an object in newer versions."""
    if isinstance(value, dict):
        rc = _int_or_none(value.get("return_code")) or 0
        sig = value.get("signal") or {}
        signo = _int_or_none(sig.get("id")) if isinstance(sig, dict) else 0
        return ExitStatus(code=rc, signal=signo or 0)
    return ExitStatus.from_wait_status(int(value or 0))  # type: ignore[call-overload]  # Slurm's JSON: not a number raises


#: The order in which Slurm 22.05's job_state_string() names a job by its flags before its base state.
_JOB_FLAGS = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
              "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING")


def job_state(value: object) -> str:
    """A job's state as one word, as 22.05 names it. 23.02+ give a list, base state first, then flags:
    ["FAILED", "COMPLETING"] while the epilogs run is COMPLETING (22.05's word), as the controller expects."""
    if not isinstance(value, list):
        return str(value or "")
    names = [str(s).upper() for s in value]
    return next((f for f in _JOB_FLAGS if f in names[1:]), names[0] if names else "")


def job_from_json(job: dict[str, Any]) -> JobInfo:
    state = job_state(job.get("job_state", ""))
    return JobInfo(
        job_id=int(job["job_id"]),
        name=job.get("name") or "",
        user=job.get("user_name") or "",
        state=str(state),
        state_reason=job.get("state_reason") or "",
        nodes=expand(job.get("nodes")),
        excluded_nodes=expand(job.get("excluded_nodes")),
        restart_count=int(job.get("restart_cnt") or 0),
        exit=_exit_from_json(job.get("exit_code")),
        comment=job.get("comment") or "",
        requeue=bool(job.get("requeue")),
        batch_host=job.get("batch_host") or "",
        partition=job.get("partition") or "",
        submit_time=epoch(job.get("submit_time")),
        start_time=epoch(job.get("start_time")),
        end_time=epoch(job.get("end_time")) if str(state) not in {"RUNNING", "PENDING"} else None,
        work_dir=job.get("current_working_directory") or "",
        stdout=job.get("standard_output") or "",
        stderr=job.get("standard_error") or "",
        array_job_id=_int_or_none(job.get("array_job_id")) or None,
        array_task_id=_int_or_none(job.get("array_task_id")),
        sluid=_sluid_of(job),
    )


def _sluid_of(job: dict[str, Any]) -> str | None:
    """The run's SLUID: 25.11+ put it in the job's `step_id` object (data_parser v0.0.44's SLURM_STEP_ID); older
    releases have no such object, or no such key. Anything not in SLUID form is no SLUID."""
    step = job.get("step_id")
    value = step.get("sluid") if isinstance(step, dict) else None
    return value if isinstance(value, str) and is_sluid(value) else None


def parse_squeue_json(text: str) -> list[JobInfo]:
    """`squeue --json` -> jobs. Note: 22.05 ignores `-j`/`-u` filters with --json; filter here."""
    data = _load_json(text, "squeue --json")
    return [job_from_json(j) for j in data.get("jobs", [])]


_KV = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def parse_scontrol_oneliner(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` record -> {key: value}. Values may contain spaces."""
    out: dict[str, str] = {}
    matches = list(_KV.finditer(line.strip()))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line.strip())
        out[m.group(1)] = line.strip()[m.end():end].strip()
    return out


SACCT_FIELDS = ["JobIDRaw", "JobID", "JobName", "User", "State", "ExitCode", "DerivedExitCode", "NodeList",
                "Submit", "Start", "End", "ElapsedRaw", "Partition", "AllocNodes", "Reason", "WorkDir", "Comment"]


def parse_sacct(text: str) -> list[JobRecord]:
    """`sacct -P -X --duplicates -o <SACCT_FIELDS>` (with header) -> one record per attempt.

    sacct's text exit codes are right where 22.05's `sacct --json` says 0 for failed jobs.
    Attempts of a requeued job share JobIDRaw; they are numbered in submit-time order.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    missing = [f for f in ("JobIDRaw", "JobID", "State", "ExitCode", "NodeList", "Submit") if f not in header]
    if missing:
        raise SlurmParseError(f"sacct output lacks fields {missing}; header was {lines[0]!r}")
    rows = []
    for ln in lines[1:]:
        parts = ln.split("|")
        if len(parts) > len(header):  # a "|" inside the last field, the free-text Comment
            parts = [*parts[:len(header) - 1], "|".join(parts[len(header) - 1:])]
        if len(parts) != len(header):
            raise SlurmParseError(f"sacct line has {len(parts)} fields, header {len(header)}: {ln!r}")
        rows.append(dict(zip(header, parts, strict=False)))
    by_job: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_job[row["JobIDRaw"]].append(row)
    out = []
    for row in rows:
        siblings = sorted(by_job[row["JobIDRaw"]], key=lambda r: (r["Submit"], r.get("Start", "")))
        out.append(JobRecord(
            job_id=row["JobID"],
            job_id_raw=int(row["JobIDRaw"].split(".")[0]),
            attempt=next(i for i, r in enumerate(siblings) if r is row),
            name=row.get("JobName", ""),
            user=row.get("User", ""),
            state=row["State"].split()[0] if row["State"].strip() else "",
            exit=ExitStatus.from_pair(row["ExitCode"] or "0:0"),
            derived_exit=ExitStatus.from_pair(row.get("DerivedExitCode") or "0:0"),
            nodes=expand(row["NodeList"]),
            submit_time=local_time(row["Submit"]),
            start_time=local_time(row.get("Start", "")),
            end_time=local_time(row.get("End", "")),
            elapsed_s=int(row.get("ElapsedRaw") or 0),
            partition=row.get("Partition", ""),
            comment=row.get("Comment", ""),
            reason=row.get("Reason", ""),
            work_dir=row.get("WorkDir", ""),
            sluid=row["SLUID"] if is_sluid(row.get("SLUID", "")) else None,
        ))
    return out


EVENT_FIELDS = ["NodeName", "TimeStart", "TimeEnd", "State", "Reason", "User"]


def parse_sacctmgr_events(text: str) -> list[NodeEvent]:
    """`sacctmgr -P -n show event format=<EVENT_FIELDS>` -> node events (cluster events skipped)."""
    out = []
    for ln in text.splitlines():
        if not ln.strip():
            continue
        parts = ln.split("|")
        if len(parts) < len(EVENT_FIELDS):
            raise SlurmParseError(f"sacctmgr event line has {len(parts)} fields: {ln!r}")
        if len(parts) > len(EVENT_FIELDS):  # '|' in the reason
            parts = [*parts[:4], "|".join(parts[4:-1]), parts[-1]]
        node, start, end, state, reason, user = parts
        if not node:
            continue  # cluster-level events ("Cluster Registered TRES")
        start_dt = local_time(start)
        if start_dt is None:
            raise SlurmParseError(f"sacctmgr event without a start: {ln!r}")
        for name in expand(node):
            out.append(NodeEvent(node=name, start=start_dt, end=local_time(end), state=state,
                                 reason=reason, user=user))
    return out


def parse_sbatch_parsable(text: str) -> int:
    """`sbatch --parsable` prints `123` or `123;cluster`."""
    first = text.strip().splitlines()[-1] if text.strip() else ""
    try:
        return int(first.split(";")[0])
    except ValueError:
        raise SlurmParseError(f"sbatch --parsable printed {text!r}") from None
