"""Retry chains and controller decisions as the ledger names them: the idempotency keys, and the lookup of
the chain a job belongs to (by its root job id, which requeues keep, or through `chain_jobs` for a job the
controller resubmitted). Used by the controller, the sbatch wrapper's readers (status, why) and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import case, or_, select
from sqlalchemy.orm import Session

from slurmtools.ledger import models
from slurmtools.ledger.spool import make_key

if TYPE_CHECKING:
    from sqlalchemy import Select


def decision_key(cluster: str, job_id: int, restart_count: int) -> str:
    return make_key("decision", cluster, job_id, restart_count)


def chain_key(cluster: str, job_id: int) -> str:
    """A retry chain is named by its job id (requeues keep it); `slurmtools sbatch` uses the same key."""
    return make_key("chain", cluster, job_id)


def chain_lookups(cluster: str, job_id: int, what: Select[Any]) -> tuple[Select[Any], Select[Any]]:
    """WHAT (a select on retry_chains) narrowed to JOB_ID's chain, in the order to try: by the chain's own key
    (its root job, which requeues keep), then through `chain_jobs` (a job resubmitted for the chain)."""
    C, J = models.RetryChain, models.ChainJob
    return (what.where(C.idempotency_key == chain_key(cluster, job_id)),
            what.join(J, J.chain_id == C.id).where(J.cluster == cluster, J.job_id == job_id))


def find_chain(s: Session, cluster: str, job_id: int) -> models.RetryChain | None:
    """The retry chain JOB_ID belongs to (see `chain_lookups`), in one query: by its key first."""
    C, J = models.RetryChain, models.ChainJob
    key = chain_key(cluster, job_id)
    resubmitted = select(J.chain_id).where(J.cluster == cluster, J.job_id == job_id)
    chain: models.RetryChain | None = s.scalar(
        select(C).where(or_(C.idempotency_key == key, C.id.in_(resubmitted)))
        .order_by(case((C.idempotency_key == key, 0), else_=1)).limit(1))
    return chain
