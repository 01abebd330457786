"""The configuration's typed model: one class per table of ``data/defaults.toml``, one attribute per key.

``config.load()`` validates the packaged defaults, the operator's file and the environment (unknown keys,
types, CHOICES, RANGES: errors name the key and the file) and returns a ``config.Config``, a ``Settings``:
``cfg.controller.submit_dir`` is a ``str``, ``cfg.safety.max_drain_fraction`` a ``float``. A named table
(``[nodes.NAME]``, ``[hardware.NAME]``, ``[xid.N]``, ``[plugins.partitions.NAME]``, ...) is a ``dict`` of
complete entries: its defaults table (``[node]``, ``[hardware_profile]``, ...) with the entry's keys over it.

To add a key: add it, commented, to ``data/defaults.toml`` and as an annotated attribute of its table's class here
(tests/test_config.py fails while they differ); its range or fixed values go in ``config.RANGES``/``CHOICES``.

Plain classes: the prolog builds this model at every job start, and ``dataclasses`` or ``msgspec`` cost more of
its import budget than the whole model (docs/performance.md). The annotations (strings) are read, never evaluated.
"""

from __future__ import annotations

from slurmtools._plain import Table, list_items, plain, tables

__all__ = ["Settings", "Table", "list_items", "plain", "tables"]

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar

class General(Table):
    """[general]: the cluster's name, the reason prefix, the kill switch, observe mode, logging."""
    cluster: str
    reason_prefix: str
    enabled: bool
    observe: bool
    log_level: str


class Safety(Table):
    """[safety]: the circuit breaker on our drains."""
    max_drain_fraction: float
    min_drain_nodes: int
    settle: float

    def drain_limit(self, total_nodes: int) -> int:
        """How many of TOTAL_NODES nodes may carry our drain reason (or a soft exclusion) at once."""
        import math  # built in: no import cost

        return max(self.min_drain_nodes, math.floor(total_nodes * self.max_drain_fraction))


class Ledger(Table):
    """[ledger]: the database and the local spool."""
    url: str
    spool_dir: str


class Slurm(Table):
    """[slurm]: how Slurm is reached."""
    backend: str
    timeout: float
    bin_dir: str


class Node(Table):
    """[node], and each complete [nodes.NAME]: per-node settings."""
    kernel_log: str
    replay: str
    state_dir: str
    hardware: str


class Checks(Table):
    """[checks]: the health gate's profiles and thresholds."""
    prolog: list[str]
    epilog: list[str]
    health: list[str]
    deep: list[str]
    disabled: list[str]
    unknown_fails: bool
    timeout: float
    probe_timeout: float
    health_max_age: float
    deep_commands: list[str]
    deep_timeout: float
    dcgm_level: int
    max_gpu_temp_c: int
    require_persistence_mode: bool
    stray_memory_mib: int
    window: float
    strikes: int
    nvlink_errors_per_run: int
    ib_errors_per_run: int
    ib_link_downed_strikes: int
    perf_seconds: float
    perf_memory_mib: int
    perf_interval: float
    perf_bandwidth_margin: float
    perf_compute_margin: float
    perf_min_fleet: int
    perf_baseline_file: str
    perf_window: float
    perf_soft_ttl: float
    perf_drain_after: int
    perf_stress_seconds: float
    perf_clock_margin: float

    def profile(self, name: str) -> list[str]:
        """The checks profile NAME runs (prolog, epilog, health, deep)."""
        return {"prolog": self.prolog, "epilog": self.epilog, "health": self.health, "deep": self.deep}[name]


class HardwareProfile(Table):
    """[hardware_profile], and each complete [hardware.NAME]: what a node should have."""
    gpus: int
    driver_version: str
    cuda_version: str
    nvlinks_per_gpu: int
    ib_ports: int
    ib_rate_gbps: int
    ib_link_layer: str
    ib_exclude: list[str]
    mounts: list[str]
    writable: list[str]
    disk_paths: list[str]
    min_disk_free_mib: int
    min_mem_available_mib: int
    daemons: list[str]
    dstate_fail_count: int
    pcie_slow: str
    pcie_min_gen: int
    pcie_min_width: int
    perf_d2d_gbps: float
    perf_h2d_gbps: float
    perf_d2h_gbps: float
    perf_fp32_tflops: float
    perf_sm_mhz: float


class Diagnosis(Table):
    """[diagnosis]: the epilog's reading of the kernel log and the job's output."""
    max_bytes: int
    job_log_max_bytes: int
    time_budget: float
    job_time_budget: float
    no_requeue_exit_code: int
    drain: bool
    rules: list[dict[str, Any]]


class Exclusions(Table):
    """[exclusions]: exclusions and their published files."""
    auto_ttl: float
    admin_ttl: float
    max_nodes: int
    admin_group: str
    sync_grace: float
    data_file: str
    plugin_file: str
    max_age: float


class PartitionDefaults(Table):
    """[plugins.partition_defaults], and each complete [plugins.partitions.NAME]."""
    requeue: bool
    max_retries: int
    retry_on: str
    open_mode: str


class Plugins(Table):
    """[plugins]: Slurm's job_submit and cli_filter Lua plugins."""
    dir: str
    add_exclusions: bool
    warn_nodelist: bool
    default_partition: str
    partition_defaults: PartitionDefaults
    partitions: dict[str, PartitionDefaults]


class Controller(Table):
    """[controller]: the requeue controller."""
    queue_dir: str
    queue_user: str
    poll_interval: float
    leader_election: bool
    evidence_wait: float
    max_retries: int
    retry_on: str
    retry_limit: int
    node_fault_actions: list[str]
    transient_actions: list[str]
    transient_kinds: list[str]
    node_fault_states: list[str]
    final_states: list[str]
    node_fault_exit_codes: list[int]
    backoff: float
    backoff_max: float
    backoff_jitter: float
    requeue_min_delay: float
    verify_attempts: int
    evacuate: bool
    resubmit: bool
    lemon_findings: int
    lemon_window: float
    lemon_ttl: float
    lemon_ttl_max: float
    recovery: bool
    recovery_passes: int
    recovery_interval: float
    deep_check_command: list[str]
    deep_check_timeout: float
    failslow_checks: int
    submit_dir: str
    script_copy_max_bytes: int


class Filesystem(Table):
    """[io.filesystem_defaults], and each complete [io.filesystems."MOUNT"]."""
    read_gbps: float
    write_gbps: float


class Io(Table):
    """[io]: NFS I/O and checkpoint filesystems."""
    mountstats: str
    mounts: list[str]
    max_mounts: int
    filesystem_defaults: Filesystem
    filesystems: dict[str, Filesystem]


class Detect(Table):
    """[detect]: detection over Prometheus."""
    prometheus: str
    step: str
    chunk: str
    max_answer_bytes: int
    max_series: int
    baseline: str
    baseline_gap: str
    min_history: int
    min_peers: int
    peer_z: float
    threshold: float
    clear: float
    persist: int
    persist_of: int
    clear_samples: int
    cooldown: str
    node_labels: list[str]
    gpu_labels: list[str]
    port_labels: list[str]
    peer_labels: list[str]
    busy_query: str
    busy_threshold: float
    settle: str
    node_devices: int
    fleet_nodes: int
    together: str
    generic: list[str]
    signals: list[dict[str, Any]]
    soft_ttl: str
    drain_on_hard: bool
    evacuate: bool


class StallThresholds(Table):
    """What [stalls] and each partition's table both set: how long a job may be quiet."""
    min_quiet: str
    margin: float
    max_learned: str
    checkpoint_min_quiet: str
    startup_grace: str
    no_gpu_factor: float
    idle_factor: float


class StallPartition(StallThresholds):
    """[stalls.partition_defaults], and each complete [stalls.partitions.NAME] ("" or 0: the [stalls] value)."""
    enabled: bool
    notify: list[str]


class Stalls(StallThresholds):
    """[stalls]: the stall detector."""
    act: bool
    interval: str
    history_bytes: int
    gpu_source: str
    prometheus: str
    gpu_window: str
    gpu_max_age: str
    dcgm_job_label: str
    busy_util: float
    idle_util: float
    spin_power_ratio: float
    spin_power_w: float
    sm_spin_max: float
    sampler_interval: str
    gpu_replay: str
    probe_command: list[str]
    probe_timeout: float
    pyspy_timeout: float
    state_file: str
    deep_check: bool
    notify: list[str]
    notify_retries: int
    partition_defaults: StallPartition
    partitions: dict[str, StallPartition]


class Reports(Table):
    """[reports]: figures from the ledger."""
    nodes: int
    gpus_per_node: int
    recovery_target: float
    merge_gap: float
    lookback: float
    manual_retry_window: float
    multi_node_min: int
    connections: int


class Advise(Table):
    """[advise]: checkpoint advice."""
    data_file: str
    sbatch: str
    sbatch_min_nodes: int
    env_var: str


class Metrics(Table):
    """[metrics]: the Prometheus exporter and the hooks' textfiles."""
    listen: str
    textfile_dir: str


class XidOverride(Table):
    """[xid_override], and each complete [xid.N] ("": the catalog's value)."""
    action: str
    category: str
    severity: str


class Settings(Table):
    """The whole configuration: one attribute per section of defaults.toml."""

    _attrs: ClassVar[dict[str, str]] = {"node": "node_defaults", "hardware": "hardware_profiles"}
    general: General
    safety: Safety
    ledger: Ledger
    slurm: Slurm
    node_defaults: Node
    checks: Checks
    hardware_profile: HardwareProfile
    hardware_profiles: dict[str, HardwareProfile]
    diagnosis: Diagnosis
    exclusions: Exclusions
    plugins: Plugins
    controller: Controller
    io: Io
    detect: Detect
    stalls: Stalls
    reports: Reports
    advise: Advise
    metrics: Metrics
    xid_override: XidOverride
    xid: dict[str, XidOverride]
    nodes: dict[str, Node]
