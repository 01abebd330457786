"""The failure ledger's schema: SQLAlchemy 2.0 typed models, the source of truth.

`sql/schema.*.sql` are generated from these (python -m slurmtools.ledger.schema --write) and
Alembic migrations (slurmtools/ledger/migrations) create them; tests fail when either drifts.

Every event row carries `idempotency_key` (unique): shipping the same spooled event twice is one row.
Indexed columns hold what reports filter on; the rest goes to `details` (JSON).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always read back timezone-aware (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the ledger stores aware times only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime()}  # noqa: RUF012


def _key() -> Mapped[str]:
    return mapped_column(String(64), unique=True, nullable=False)


class Meta(Base):
    """Small key/value state: import watermarks and such."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Node(Base):
    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("cluster", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]


class RetryChain(Base):
    """A job as the researcher submitted it, and every attempt since (requeues keep the job id)."""

    __tablename__ = "retry_chains"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    root_job_id: Mapped[int] = mapped_column(BigInteger, index=True)
    user: Mapped[str | None] = mapped_column(String(64))
    created: Mapped[datetime]
    max_retries: Mapped[int] = mapped_column(Integer, default=0)
    retry_on: Mapped[str] = mapped_column(String(16), default="node")
    status: Mapped[str] = mapped_column(String(16), default="active", index=True)
    retries_used: Mapped[int] = mapped_column(Integer, default=0)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)  # argv, script copy, workdir, env


class ChainJob(Base):
    """A job id that continues a retry chain under a new id: the controller resubmitted the chain's job
    from its `slurmtools sbatch` record because the old one had left slurmctld's memory. (The root job
    is found by the chain's own key; requeues keep the id.)"""

    __tablename__ = "chain_jobs"
    __table_args__ = (UniqueConstraint("cluster", "job_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[int] = mapped_column(BigInteger)
    chain_id: Mapped[int] = mapped_column(ForeignKey("retry_chains.id"), index=True)
    created: Mapped[datetime]
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)  # the attempt it replaces


class JobAttempt(Base):
    """One run of a job. Slurm reuses job ids, so the natural key includes the submit time.

    Hooks do not see the submit time (22.05 hook environments lack it): their rows have NULL
    submit_time until `ledger import-sacct` fills it in.
    """

    __tablename__ = "job_attempts"
    __table_args__ = (
        UniqueConstraint("cluster", "job_id", "restart_count", "submit_time"),
        Index("ix_job_attempts_job", "cluster", "job_id", "restart_count"),
        Index("ix_job_attempts_end", "end_time"),
        Index("ix_job_attempts_user_name", "cluster", "user", "name", "submit_time"),  # manual retries (reports)
        Index("ix_job_attempts_sluid", "cluster", "sluid"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[int] = mapped_column(BigInteger)
    restart_count: Mapped[int] = mapped_column(Integer, default=0)
    #: SLURM_JOB_SLUID (Slurm 25.11+): this run's own id, new at each requeue and never reused with the job id;
    #: NULL where the release or the writer has none (then job_id, restart_count and the times identify the run).
    sluid: Mapped[str | None] = mapped_column(String(16))
    submit_time: Mapped[datetime | None]
    start_time: Mapped[datetime | None]
    end_time: Mapped[datetime | None]
    state: Mapped[str | None] = mapped_column(String(32), index=True)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    exit_signal: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[str | None] = mapped_column(Text)  # a Slurm hostlist
    node_count: Mapped[int | None] = mapped_column(Integer)  # len(expand(nodes)), set when the row is stored
    user: Mapped[str | None] = mapped_column(String(64))
    name: Mapped[str | None] = mapped_column(String(256))
    partition: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(32))  # sacct, epilog, controller, ...
    chain_id: Mapped[int | None] = mapped_column(ForeignKey("retry_chains.id"), index=True)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: Kept by the ledger as rows are stored (ledger/derived.py): an InterruptedAttempt names this attempt; some
    #: attempt of this (user, name) has failed (a FailedJobName). Read by the report (docs/performance.md).
    #: (`info` derived: no event carries them; ledger/fields.py leaves them out.)
    interrupted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(), info={"derived": True})
    name_failed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(), info={"derived": True})


#: Finding categories and severities that mark an attempt as interrupted by the infrastructure (with a trust other
#: than the job's own output): what `interrupted_attempts` keeps and the reports count as infrastructure failures.
INFRA_CATEGORIES = ("hardware", "driver", "network", "filesystem")
INFRA_SEVERITIES = ("error", "critical")


def infra_finding_where(alias: str = "") -> str:
    """SQL: a finding of INFRA_CATEGORIES and INFRA_SEVERITIES with a trust other than `job` (ALIAS: the table's
    alias in the query). The predicate of `ix_findings_infra`: a query that states it (the report's incidents) can
    read that index."""
    p = f"{alias}." if alias else ""
    cats, sevs = (", ".join(f"'{v}'" for v in vs) for vs in (INFRA_CATEGORIES, INFRA_SEVERITIES))
    return f"{p}category IN ({cats}) AND {p}trust <> 'job' AND {p}severity IN ({sevs})"


class Finding(Base):
    """One diagnosed fault or observation: a kernel line, an NVML reading, a job exit, an admin note."""

    __tablename__ = "findings"
    __table_args__ = (
        Index("ix_findings_node_time", "cluster", "node", "time"),
        Index("ix_findings_job", "cluster", "job_id", "restart_count"),
        # the report's unrecognised messages: the fallback's findings only (a few), not a scan of every finding
        Index("ix_findings_investigate", "cluster", "time", postgresql_where=text("action = 'investigate'"),
              sqlite_where=text("action = 'investigate'")),
        # the report's incidents: each incident's first infrastructure finding on its node (a probe per incident) is
        # the first entry of this index in its range, without a sort or reading the table (migration 0009)
        Index("ix_findings_infra", "cluster", "node", "time", "id", postgresql_where=text(infra_finding_where()),
              sqlite_where=text(infra_finding_where())),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str | None] = mapped_column(String(128))
    time: Mapped[datetime]
    job_id: Mapped[int | None] = mapped_column(BigInteger)
    restart_count: Mapped[int | None] = mapped_column(Integer)
    sluid: Mapped[str | None] = mapped_column(String(16))  # the run's SLURM_JOB_SLUID where Slurm gives one
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("job_attempts.id"))
    source: Mapped[str] = mapped_column(String(32))     # kernel, nvml, sysfs, job-exit, job-log, slurm, admin
    kind: Mapped[str] = mapped_column(String(32), index=True)
    xid: Mapped[int | None] = mapped_column(Integer, index=True)
    pci: Mapped[str | None] = mapped_column(String(32))
    gpu: Mapped[str | None] = mapped_column(String(64))  # index or UUID
    category: Mapped[str] = mapped_column(String(16), index=True)  # hardware, driver, network, ...
    severity: Mapped[str] = mapped_column(String(16))   # info, warning, error, critical
    action: Mapped[str] = mapped_column(String(16))     # none, restart_app, reset_gpu, ...
    trust: Mapped[str] = mapped_column(String(16))      # kernel, nvml, sysfs, job, admin
    message: Mapped[str] = mapped_column(Text)          # the evidence
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class GateRun(Base):
    """A health-gate run that did not pass (warn/fail/unknown), with the results that mattered."""

    __tablename__ = "gate_runs"
    __table_args__ = (Index("ix_gate_runs_node_time", "cluster", "node", "time"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    time: Mapped[datetime]
    job_id: Mapped[int | None] = mapped_column(BigInteger)
    profile: Mapped[str] = mapped_column(String(16))
    verdict: Mapped[str] = mapped_column(String(16), index=True)
    duration_ms: Mapped[int] = mapped_column(Integer)
    failed_checks: Mapped[str] = mapped_column(Text, default="")  # comma-separated check names
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)   # the non-ok results only


class GatePassCount(Base):
    """Passing gate runs, counted per node, profile and day: passes must not bloat the database."""

    __tablename__ = "gate_pass_counts"
    __table_args__ = (UniqueConstraint("cluster", "node", "profile", "day"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    profile: Mapped[str] = mapped_column(String(16))
    day: Mapped[str] = mapped_column(String(10))  # YYYY-MM-DD (UTC)
    passes: Mapped[int] = mapped_column(Integer, default=0)
    total_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    last_pass: Mapped[datetime]


class ShippedKey(Base):
    """Idempotency keys of events that update counters rather than insert rows (gate passes)."""

    __tablename__ = "shipped_keys"
    idempotency_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    time: Mapped[datetime]


class NodeStateChange(Base):
    """A drain, resume, exclusion or its end, by whom and why (observe mode: recorded, not done)."""

    __tablename__ = "node_state_changes"
    __table_args__ = (Index("ix_node_state_node_time", "cluster", "node", "time"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    time: Mapped[datetime]
    action: Mapped[str] = mapped_column(String(16), index=True)  # drain, resume, exclude, unexclude, blocked
    actor: Mapped[str] = mapped_column(String(64))                # prolog, epilog, controller, admin:<user>
    reason: Mapped[str] = mapped_column(Text)
    applied: Mapped[bool] = mapped_column(default=True)           # false in observe mode / breaker open
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class NodeEvent(Base):
    """A node fault period from Slurm (sacctmgr events) or an imported trace: MTBF/MTTR input."""

    __tablename__ = "node_events"
    __table_args__ = (Index("ix_node_events_node_start", "cluster", "node", "start"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    start: Mapped[datetime]
    end: Mapped[datetime | None]
    state: Mapped[str] = mapped_column(String(32))
    category: Mapped[str | None] = mapped_column(String(64), index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(64))  # sacctmgr, trace:<file>
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Exclusion(Base):
    """A node kept out of jobs: drained in Slurm (scope drain) or avoided by our submissions (soft)."""

    __tablename__ = "exclusions"
    __table_args__ = (Index("ix_exclusions_node", "cluster", "node", "start"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    scope: Mapped[str] = mapped_column(String(8))      # drain, soft
    reason: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(64))    # auto, admin:<user>
    start: Mapped[datetime]
    expires: Mapped[datetime | None]
    end: Mapped[datetime | None] = mapped_column(index=True)
    outcome: Mapped[str | None] = mapped_column(String(16))  # confirmed, refuted, expired, removed
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)  # evidence: finding ids


class ControllerDecision(Base):
    """What the controller decided for one ended attempt, with a timestamp for each step."""

    __tablename__ = "controller_decisions"
    __table_args__ = (Index("ix_decisions_job", "cluster", "job_id", "restart_count"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[int] = mapped_column(BigInteger)
    restart_count: Mapped[int] = mapped_column(Integer)
    chain_id: Mapped[int | None] = mapped_column(ForeignKey("retry_chains.id"))
    classification: Mapped[str] = mapped_column(String(16))  # node_fault, app_fault, unknown
    decision: Mapped[str] = mapped_column(String(16))        # retry, no_retry, observe, ...
    reason: Mapped[str] = mapped_column(Text)
    excluded_nodes: Mapped[str] = mapped_column(Text, default="")
    #: controller.state.Status (acting, evacuating, observed, done, failed), written only through its values;
    #: `details` is read and written through controller.state.load/dump (the state's one serialisation).
    status: Mapped[str] = mapped_column(String(16), index=True)
    t_ended: Mapped[datetime | None]
    t_detected: Mapped[datetime | None]
    t_decided: Mapped[datetime | None]
    t_requeued: Mapped[datetime | None]
    t_released: Mapped[datetime | None]
    t_verified: Mapped[datetime | None]
    t_running: Mapped[datetime | None]
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class IoSummary(Base):
    """One job's NFS I/O on one node and mount: the mountstats delta between the prolog and the epilog."""

    __tablename__ = "io_summaries"
    __table_args__ = (Index("ix_io_job", "cluster", "job_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(255), index=True)
    job_id: Mapped[int] = mapped_column(BigInteger)
    restart_count: Mapped[int] = mapped_column(Integer, default=0)
    time: Mapped[datetime] = mapped_column(index=True)          # the end of the window (the epilog)
    mountpoint: Mapped[str] = mapped_column(Text)
    device: Mapped[str] = mapped_column(Text)
    seconds: Mapped[float] = mapped_column(Float)
    read_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    write_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    read_ops: Mapped[int] = mapped_column(BigInteger, default=0)
    write_ops: Mapped[int] = mapped_column(BigInteger, default=0)
    rtt_ms: Mapped[float | None] = mapped_column(Float)        # per READ/WRITE, mean
    queue_ms: Mapped[float | None] = mapped_column(Float)
    mean_backlog: Mapped[float | None] = mapped_column(Float)
    retransmissions: Mapped[int] = mapped_column(Integer, default=0)
    limit: Mapped[str | None] = mapped_column(String(24))       # client_rpc_queue, server_or_network
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class CheckpointEvent(Base):
    """One checkpoint save or load a job marked (slurmtools checkpoint begin/end), as its epilog recorded it."""

    __tablename__ = "checkpoint_events"
    __table_args__ = (Index("ix_checkpoint_job", "cluster", "job_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(255), index=True)
    job_id: Mapped[int] = mapped_column(BigInteger)
    restart_count: Mapped[int] = mapped_column(Integer, default=0)
    kind: Mapped[str] = mapped_column(String(8))                 # save, load
    time: Mapped[datetime] = mapped_column(index=True)          # the checkpoint's start
    seconds: Mapped[float | None] = mapped_column(Float)      # None: the log line gave no time
    source: Mapped[str] = mapped_column(String(32), default="marks")   # marks, or the framework whose line it was
    nbytes: Mapped[int | None] = mapped_column(BigInteger)
    bytes_source: Mapped[str | None] = mapped_column(String(16))  # given, mountstats, log
    rpcs: Mapped[int | None] = mapped_column(BigInteger)          # READ (load) or WRITE (save) RPCs in the window
    queue_ms_per_op: Mapped[float | None] = mapped_column(Float)  # mean wait for an RPC slot (the study's limit)
    rtt_ms_per_op: Mapped[float | None] = mapped_column(Float)    # mean round trip (server + network)
    gbytes_per_s: Mapped[float | None] = mapped_column(Float)   # achieved, GB/s (10^9 bytes)
    utilisation: Mapped[float | None] = mapped_column(Float)     # of the filesystem's nominal bandwidth
    mountpoint: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class InterruptedAttempt(Base):
    """An attempt that an infrastructure fault interrupted: a `node_fault` controller decision, or a finding of
    INFRA_CATEGORIES and INFRA_SEVERITIES with a trust other than `job`, names it. Insert-only, kept as those rows
    are stored (ledger/derived.py); migration 0008 filled it from the rows already there."""

    __tablename__ = "interrupted_attempts"
    cluster: Mapped[str] = mapped_column(String(64), primary_key=True)
    job_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    restart_count: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)


class FailedJobName(Base):
    """A (user, job name) of which some attempt ended in a failed state (derived.FAILED_STATES): only such names
    can hold a manual retry (a job resubmitted by hand after a failure). Insert-only, like InterruptedAttempt."""

    __tablename__ = "failed_job_names"
    cluster: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(256), primary_key=True)


class PerfResult(Base):
    """One GPU's fail-slow probe (checks/perf.py): its figures, the readings while it ran, and the node's judgement
    at the time. Every probe result is recorded: the fleet's medians per model are computed from these."""

    __tablename__ = "perf_results"
    __table_args__ = (Index("ix_perf_gpu_time", "cluster", "uuid", "time"),
                      Index("ix_perf_model_time", "model", "time"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idempotency_key: Mapped[str] = _key()
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(255), index=True)
    time: Mapped[datetime] = mapped_column()
    profile: Mapped[str] = mapped_column(String(16))
    gpu_index: Mapped[int] = mapped_column(Integer)
    uuid: Mapped[str] = mapped_column(String(96))
    model: Mapped[str] = mapped_column(String(96))
    pci_bus_id: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(8))            # ok, warn (fail-slow), unknown (the probe failed)
    d2d_gbps: Mapped[float | None] = mapped_column(Float)
    h2d_gbps: Mapped[float | None] = mapped_column(Float)
    d2h_gbps: Mapped[float | None] = mapped_column(Float)
    fp32_tflops: Mapped[float | None] = mapped_column(Float)
    sm_mhz_min: Mapped[int | None] = mapped_column(Integer)
    power_w_max: Mapped[int | None] = mapped_column(Integer)
    clocks_event_reasons: Mapped[int | None] = mapped_column(BigInteger)
    seconds: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)

