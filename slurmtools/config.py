"""Configuration: packaged defaults plus an operator TOML file plus environment overrides.

The packaged ``defaults.toml`` is also the schema: every key an operator sets must exist there
and have the same type. Errors name the key and the file.
"""

from __future__ import annotations

import os

from slurmtools.fsutil import ROOT_CACHE_DIR, private
from slurmtools.settings import Settings, Table

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from slurmtools.settings import HardwareProfile, Node

DEFAULT_PATH = "/etc/slurmtools/slurmtools.toml"
#: A configuration file larger than this is refused unread (a FIFO or /dev/zero must not hang or fill memory).
MAX_FILE_BYTES = 4 << 20
#: Hooks cache the parsed configuration here (SLURMTOOLS_CACHE_DIR overrides; must be owned by root, 0755).
CACHE_DIR = ROOT_CACHE_DIR

#: Environment variables that override one key each (applied last).
ENV_OVERRIDES: dict[str, str] = {
    "SLURMTOOLS_LEDGER_URL": "ledger.url",
    "SLURMTOOLS_SPOOL_DIR": "ledger.spool_dir",
    "SLURMTOOLS_SLURM_BACKEND": "slurm.backend",
    "SLURMTOOLS_SLURM_BIN_DIR": "slurm.bin_dir",
}

#: Keys whose value must be one of a fixed set (named tables: keyed by their schema table).
CHOICES: dict[str, tuple[str, ...]] = {
    "slurm.backend": ("auto", "cli", "pyslurm"),
    "general.log_level": ("debug", "info", "warning", "error"),
    "controller.retry_on": ("node", "any"),
    "advise.sbatch": ("off", "print", "export"),
    "plugins.partition_defaults.retry_on": ("node", "any"),
    "partition_defaults.retry_on": ("node", "any"),
    "plugins.partition_defaults.open_mode": ("", "append", "truncate"),
    "partition_defaults.open_mode": ("", "append", "truncate"),
    "xid_override.action": ("", "none", "restart_app", "investigate", "reset_gpu", "reboot_node", "drain_node"),
    "xid_override.category": ("", "hardware", "driver", "network", "filesystem", "application", "unknown"),
    "xid_override.severity": ("", "info", "warning", "error", "critical"),
    "hardware_profile.pcie_slow": ("warn", "fail", "off"),
}

#: Numbers: every number in the schema must be >= 0 unless listed here as (lowest, highest, lowest allowed
#: itself?). `-1` means "not checked" for the hardware counts; a time budget, a size or a timeout of 0 would
#: silently switch a stage off, so those must be positive.
RANGES: dict[str, tuple[float, float | None, bool]] = {
    "hardware_profile.gpus": (-1, None, True), "hardware_profile.nvlinks_per_gpu": (-1, None, True),
    "hardware_profile.ib_ports": (-1, None, True),
    "hardware_profile.pcie_min_gen": (0, 7, True), "hardware_profile.pcie_min_width": (0, 32, True),
    "checks.perf_seconds": (0, 60, False), "checks.perf_memory_mib": (64, 65536, True),
    "checks.perf_bandwidth_margin": (0, 1, False), "checks.perf_compute_margin": (0, 1, False),
    "checks.perf_min_fleet": (1, None, True), "checks.perf_window": (0, None, False),
    "checks.perf_drain_after": (1, None, True), "checks.perf_stress_seconds": (0, 3600, True),
    "checks.perf_clock_margin": (0, 1, False),
    "safety.max_drain_fraction": (0, 1, True), "controller.backoff_jitter": (0, 1, True),
    "safety.settle": (0, 300, True),
    "slurm.timeout": (0, None, False), "checks.timeout": (0, None, False), "checks.probe_timeout": (0, None, False),
    "detect.max_answer_bytes": (4096, None, True), "detect.max_series": (1, None, True),
    "checks.deep_timeout": (0, None, False), "checks.strikes": (1, None, True), "checks.dcgm_level": (0, 4, True),
    "diagnosis.max_bytes": (4096, None, True), "diagnosis.job_log_max_bytes": (4096, None, True),
    "diagnosis.time_budget": (0, None, False),
    "diagnosis.job_time_budget": (0, None, False), "diagnosis.no_requeue_exit_code": (0, 255, True),
    "controller.poll_interval": (0, None, False), "controller.verify_attempts": (1, None, True),
    "controller.requeue_min_delay": (0, 60, False),
    "controller.recovery_passes": (1, None, True), "controller.deep_check_timeout": (0, None, False),
    "controller.failslow_checks": (0, None, True),
    "controller.script_copy_max_bytes": (0, None, True), "exclusions.max_nodes": (1, 100000, True),
    "partition_defaults.max_retries": (0, 1000, True), "controller.max_retries": (0, 1000, True),
    "controller.retry_limit": (0, 1000, True),
    "reports.gpus_per_node": (1, 1024, True), "reports.multi_node_min": (1, None, True),
    "reports.recovery_target": (0, None, False), "reports.connections": (1, 4, True),
    "advise.sbatch_min_nodes": (1, None, True),
    "io.max_mounts": (1, 1000, True),
    "stalls.margin": (1, None, True), "stalls.no_gpu_factor": (1, None, True),
    "stalls.idle_factor": (1, None, True), "stalls.probe_timeout": (0, None, False),
}

#: Tables whose sub-tables are free-form names, each validated against another table.
NAMED_TABLES: dict[str, str] = {"nodes": "node", "xid": "xid_override", "hardware": "hardware_profile",
                                "plugins.partitions": "partition_defaults", "io.filesystems": "filesystem_defaults",
                                "stalls.partitions": "partition_defaults"}


class ConfigError(ValueError):
    """A configuration file or value is invalid. The message names the key and the file."""


def _defaults() -> dict[str, Any]:
    # The packaged file, read by path (importlib.resources costs ~9 ms of import in a prolog).
    with open(_defaults_path(), encoding="utf-8") as fh:
        text = fh.read()
    import tomllib  # here: a hook with a cached configuration never imports it

    return tomllib.loads(text)


def _type_name(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _check_value(key: str, value: object, default: object, origin: str, choice_key: str | None = None) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value  # type: ignore[arg-type]  # ok: an int or a float
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{origin}: {key} must be {_type_name(default)}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_range(key, value, origin, choice_key or key)
    choices = CHOICES.get(choice_key or key)
    if choices is not None and value not in choices:
        shown = ", ".join(c for c in choices if c)
        raise ConfigError(f"{origin}: {key} must be one of {shown}, got {value!r}")
    return value


def _check_lists(data: Mapping[str, Any], model: type[Table], origin: str, prefix: str = "") -> None:
    """Every list holds items of its declared type (``list[str]`` in settings.py): TOML allows mixed lists."""
    from slurmtools.settings import list_items, tables

    for key, item in list_items(model).items():
        value = data.get(key)
        if isinstance(value, list) and not all(isinstance(v, item) and not isinstance(v, bool) for v in value):
            what = {str: "strings", int: "integers", dict: "tables"}[item]
            raise ConfigError(f"{origin}: {prefix}{key} must be a list of {what}, got {value!r}")
    for key, (kind, table) in tables(model).items():
        sub = data.get(key)
        if not isinstance(sub, dict):
            continue
        entries = sub.items() if kind == "named" else [("", sub)]
        for name, entry in entries:
            if isinstance(entry, dict):
                _check_lists(entry, table, origin, f"{prefix}{key}.{name}." if name else f"{prefix}{key}.")


def _check_rules(value: Any, origin: str) -> list[dict[str, Any]]:  # Any: raw TOML, `validate` checks it
    """A site's [[diagnosis.rules]], compiled and checked against their examples now (not in an epilog)."""
    from slurmtools.diagnosis.rules import RuleError, validate

    try:
        validate(value, f"{origin}: [[diagnosis.rules]]")
    except RuleError as exc:
        raise ConfigError(str(exc)) from None
    return list(value)


def _check_range(key: str, value: float, origin: str, schema_key: str) -> None:
    import math

    lo, hi, lo_ok = RANGES.get(schema_key, (0, None, True))
    if math.isnan(value) or math.isinf(value):
        raise ConfigError(f"{origin}: {key} must be a finite number, got {value!r}")
    if value < lo or (value == lo and not lo_ok) or (hi is not None and value > hi):
        lowest = f">= {lo:g}" if lo_ok else f"> {lo:g}"
        raise ConfigError(f"{origin}: {key} must be {lowest}" + (f" and <= {hi:g}" if hi is not None else "")
                          + f", got {value!r}")


def _merge(base: dict[str, Any], override: dict[str, Any], schema: dict[str, Any],
           origin: str, prefix: str = "", schema_name: str | None = None) -> None:
    for key, value in override.items():
        dotted = f"{prefix}{key}"
        if key not in schema:
            raise ConfigError(f"{origin}: unknown key {dotted!r}")
        default = schema[key]
        if dotted in NAMED_TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: {dotted} must be a table")
            sub_schema = schema[NAMED_TABLES[dotted]]
            for name, table in value.items():
                if not isinstance(table, dict):
                    raise ConfigError(f"{origin}: {dotted}.{name} must be a table")
                target = base[key].setdefault(str(name), {})
                _merge(target, table, sub_schema, origin, f"{dotted}.{name}.", NAMED_TABLES[dotted])
        elif isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: {dotted} must be a table")
            _merge(base[key], value, default, origin, f"{dotted}.")
        elif dotted == "diagnosis.rules":
            base[key] = _check_rules(value, origin)
        else:
            base[key] = _check_value(dotted, value, default, origin,
                                     f"{schema_name}.{key}" if schema_name else None)


class Config(Settings):
    """The effective configuration: the typed tables of ``settings.Settings`` (``cfg.controller.submit_dir``,
    ``cfg.node_for(name).state_dir``), and ``sources``, what it was read from, in order.

    ``get("a.b")``, ``section``, ``node`` and ``hardware`` are the old dotted-string API, kept for the modules
    not yet converted (tests/test_config.py lists them): they return plain copies of the typed values."""

    def __init__(self, data: Mapping[str, Any], sources: list[str] | None = None) -> None:
        super().__init__(data)
        self.sources = list(sources or [])

    # -- values derived from several keys, defined once --

    @property
    def cluster(self) -> str:
        """The cluster's name in the ledger: general.cluster, else SLURM_CLUSTER_NAME, else "default"."""
        return self.general.cluster or os.environ.get("SLURM_CLUSTER_NAME") or "default"

    @property
    def reason_prefix(self) -> str:
        """What every drain reason we write starts with; we only ever resume nodes whose reason carries it."""
        return self.general.reason_prefix

    def drain_limit(self, total_nodes: int) -> int:
        """The circuit breaker: how many of TOTAL_NODES nodes may carry our drain reason at once."""
        return self.safety.drain_limit(total_nodes)

    def node_for(self, name: str | None) -> Node:
        """NAME's settings: [node] with its [nodes.NAME] over it."""
        return self.nodes.get(name, self.node_defaults) if name else self.node_defaults

    def state_dir(self, node: str | None) -> str:
        """NODE's small state directory (kernel-log markers, counters, the gate's status)."""
        return self.node_for(node).state_dir

    def hardware_for(self, node: str | None) -> HardwareProfile:
        """The hardware profile NODE should match (the defaults where it names none). Raises ConfigError."""
        name = self.node_for(node).hardware
        if not name:
            return self.hardware_profile
        if name not in self.hardware_profiles:
            raise ConfigError(f"node {node}: hardware profile {name!r} is not defined ([hardware.{name}])")
        return self.hardware_profiles[name]

    def xid_overrides(self) -> dict[str, dict[str, str]]:
        """The operator's [xid.N] tables as ``diagnosis.catalog.lookup`` takes them ("": the catalog's value)."""
        return {xid: entry.to_dict() for xid, entry in self.xid.items()}


def this_node() -> str:
    """The Slurm node this process runs on: SLURMD_NODENAME (lab nodes share a hostname), else hostname. A hook
    takes it from its JobContext (hooks/context.py) instead."""
    if os.environ.get("SLURMD_NODENAME"):
        return os.environ["SLURMD_NODENAME"]
    import socket  # only without SLURMD_NODENAME: socket costs ~3 ms of a prolog's import

    return socket.gethostname().split(".")[0]


def config_path() -> str:
    return os.environ.get("SLURMTOOLS_CONFIG") or DEFAULT_PATH


def parse_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read one TOML file, with a ConfigError (never a traceback) when it cannot be read."""
    import stat
    import tomllib

    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes: not a configuration file")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None


def check_owner(path: str) -> None:
    """Root acts on the configuration (the Slurm commands it runs from `slurm.bin_dir`, the deep checks'
    commands, where it writes): as root, refuse a file that anyone but root could have written, the way sshd
    treats its files (StrictModes). Raises ConfigError with one line."""
    if os.geteuid() != 0:
        return                      # a user's own configuration harms only that user
    from slurmtools.fsutil import check_trusted

    try:
        check_trusted(path, owners={0}, what="configuration file")
    except OSError as exc:
        raise ConfigError(str(exc) if exc.strerror is None else f"{path}: cannot read: {exc.strerror}") from None


def _defaults_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "defaults.toml")


def _fingerprint(paths: list[str]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([p, st.st_ino, st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([p, None])
    return out


def _cache_file() -> str | None:
    """Where the parsed configuration is cached for hooks: a root-only directory (a user who could write
    it could change what root's prolog believes), else nowhere."""
    directory = os.environ.get("SLURMTOOLS_CACHE_DIR") or CACHE_DIR
    try:
        st = os.stat(directory)
    except OSError:
        return None
    if not private(st):
        return None
    return os.path.join(directory, "config-cache.json")


def _read_cache(fingerprint: list[list[Any]]) -> tuple[dict[str, Any], dict[str, Any], list[str]] | None:
    import json

    path = _cache_file()
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as fh:
            st = os.fstat(fh.fileno())
            if not private(st):
                return None
            raw = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("fingerprint") != fingerprint:
        return None
    return raw["data"], raw["defaults"], raw["sources"]


def _write_cache(fingerprint: list[list[Any]], data: dict[str, Any], defaults: dict[str, Any],
                 sources: list[str]) -> None:
    import json

    path = _cache_file()
    if path is None:
        return
    from slurmtools.fsutil import write_atomic

    try:
        write_atomic(path, json.dumps({"fingerprint": fingerprint, "data": data, "defaults": defaults,
                                       "sources": sources}), mode=0o600)
    except OSError:
        pass  # a cache: the next run parses again


def load(path: str | os.PathLike[str] | None = None, *, env: dict[str, str] | None = None,
         cache: bool = False) -> Config:
    """Defaults, then the operator file (if it exists, or if a path was given), then env.

    CACHE (hooks): reuse the parsed files from a root-only cache while neither file changed (saves the
    ~20 ms tomllib costs on every job start); the environment is applied afresh every time."""
    env = dict(os.environ) if env is None else env
    explicit = path is not None or bool(env.get("SLURMTOOLS_CONFIG"))
    file_path = str(path or env.get("SLURMTOOLS_CONFIG") or DEFAULT_PATH)
    if explicit or os.path.exists(file_path):
        check_owner(file_path)      # every time, cached or not: a chmod leaves the cache's fingerprint as it was
    fingerprint = [*_fingerprint([_defaults_path(), file_path]), [bool(explicit)]] if cache else []
    hit = _read_cache(fingerprint) if cache else None
    if hit is not None:
        data, defaults, sources = hit
    else:
        import copy  # here: copy (and weakref) cost ~1 ms of a cached hook's start

        defaults = _defaults()
        data = copy.deepcopy(defaults)
        sources = ["(packaged defaults)"]
        if explicit or os.path.exists(file_path):
            operator = parse_file(file_path)
            _merge(data, operator, defaults, file_path)
            _check_lists(operator, Settings, file_path)
            sources.append(file_path)
        if cache:
            _write_cache(fingerprint, data, defaults, sources)
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            section, key = dotted.split(".")
            data[section][key] = _check_value(dotted, env[var], defaults[section][key], f"${var}")
            sources.append(f"${var}")
    try:
        return Config(data, sources)
    except ValueError:
        if hit is None:
            raise           # defaults.toml and settings.py disagree: our bug (tests/test_config.py)
    stale = _cache_file()       # a cache that does not fit this version's model: parse the files, cache anew
    try:
        os.unlink(stale or "")
    except OSError:
        return load(path, env=env)
    return load(path, env=env, cache=True)


def check_file(path: str | os.PathLike[str]) -> None:
    """Validate one operator file against the schema; raises ConfigError."""
    import copy

    check_owner(str(path))
    defaults = _defaults()
    operator = parse_file(path)
    _merge(copy.deepcopy(defaults), operator, defaults, str(path))
    _check_lists(operator, Settings, str(path))


_cached: Config | None = None


def get() -> Config:
    """The process-wide configuration, loaded once."""
    global _cached
    if _cached is None:
        _cached = load(cache=True)
    return _cached


def reset() -> None:
    global _cached
    _cached = None
