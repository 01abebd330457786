"""What each kind of ledger event may hold: its fields, one definition per kind (ledger/events.py has the
allowed values as enums and says how to add a field or a kind).

An event's `data` may hold only the fields its kind defines here: `spool.Event(...)` refuses any other where it
is written, and the shipper sends an event read from a spool file that holds one to `bad/` with the reason.
Plain strings and frozensets, no enum class: the prolog imports this before every job, and building the enums
costs it ~1.2 ms (docs/performance.md); a finding's values are checked against them only when a finding is built.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: Every kind's fields (its table's columns, less the id, key and cluster the event itself carries).
FIELDS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "finding": "node job_id restart_count sluid attempt_id time source kind xid pci gpu category severity action "
                       "trust message details",
    "attempt": "job_id restart_count sluid chain_id name user partition state submit_time start_time end_time "
                       "exit_code exit_signal nodes node_count source details",
    "gate_run": "node job_id time profile verdict duration_ms failed_checks details",
    "node_state": "node time action actor reason applied details",
    "node_event": "node start end state reason source category details",
    "exclusion": "node scope reason source start expires end outcome details",
    "exclusion_end": "exclusion_key node end outcome why",
    "chain": "root_job_id user created max_retries retries_used retry_on status details",
    "decision": "chain_id job_id restart_count classification decision reason excluded_nodes status "
                        "t_ended t_detected t_decided t_requeued t_released t_running t_verified details",
    "io": "node job_id restart_count time mountpoint device seconds read_bytes write_bytes read_ops "
                  "write_ops rtt_ms queue_ms retransmissions mean_backlog limit details",
    "checkpoint": "node job_id restart_count time kind seconds nbytes bytes_source gbytes_per_s utilisation "
                          "mountpoint source rpcs queue_ms_per_op rtt_ms_per_op details",
    "perf": "node time profile gpu_index uuid model pci_bus_id status h2d_gbps d2h_gbps d2d_gbps "
                    "fp32_tflops sm_mhz_min power_w_max clocks_event_reasons seconds details",
}.items()}
#: Fields any kind may carry that are kept under `details`: where the spool nulled a non-finite number.
EXTRAS = frozenset({"nonfinite"})


def unknown_fields(type: str, data: Mapping[str, Any]) -> list[str]:
    """The fields of DATA that an event of TYPE does not define (sorted; none: [])."""
    allowed = FIELDS.get(type)
    if allowed is None:
        return []
    return sorted(k for k in data if k not in allowed and k not in EXTRAS)


def check(type: str, data: Mapping[str, Any]) -> None:
    """Refuse an event that its kind does not define: an unknown kind or an unknown field. Raises ValueError naming
    what is wrong (a finding's values: events.check_finding)."""
    if type not in FIELDS:
        raise ValueError(f"unknown event type {type!r}")
    extra = unknown_fields(type, data)
    if extra:
        raise ValueError(f"a {type} event has no field {', '.join(map(repr, extra))} "
                         f"(slurmtools/ledger/fields.py defines its fields)")
