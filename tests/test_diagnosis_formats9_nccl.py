"""Round 9's collective-communication printers (rules9-nccl): what tests/data/kernel/printers/nccl.tsv cannot say about
the rules it needed. The collective layers around NCCL in their own words: Gloo's transport, torchelastic's worker table
and agent, ProcessGroupNCCL's heartbeat, Horovod's stall inspector, JAX's coordination service, Ray's collective group,
NVSHMEM's error prints; and the `collectives` subsystem of data/subsystems.toml for their failures no rule names.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's text never drains (trust
job); the launchers' shutdown-on-a-signal lines and c10d's info-level lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import below_warning, table_tests

FAULTS = [
    # Gloo's TCP transport (nccl, warning)
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= "
     "op.nbytes. 881571776 vs 4", "nccl", "warning"),
    ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
     "nccl", "warning"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:394] writev [10.1.0.6]:38002: Broken pipe",
     "nccl", "warning"),
    # torchelastic: a worker's failure (nccl, warning)
    ("  exitcode  : -6 (pid: 48214)", "nccl", "warning"),
    ("  exitcode  : 1 (pid: 48214)", "nccl", "warning"),
    ("[2026-11-26 10:11:12,123] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group FAILED. "
     "3/3 attempts left; will restart worker group", "nccl", "warning"),
    ("W1126 10:11:12.123000 48213 torch/distributed/elastic/multiprocessing/api.py:917] Unable to shutdown process "
     "48214 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL", "nccl", "warning"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousError: Rendezvous timeout", "nccl", "warning"),
    # ProcessGroupNCCL's watchdog without a heartbeat (nccl, error)
    ("[rank3]:[E1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1649] [PG ID 0 PG GUID "
     "0(default_pg) Rank 3] First PG on this rank that detected no heartbeat of its watchdog.", "nccl", "error"),
    # Horovod, JAX, Ray: a rank missing or unreachable (nccl, warning)
    ("[1,0]<stderr>:Missing ranks:", "nccl", "warning"),
    ("[2026-11-26 10:11:12.123456: E /tmp/pip-install-abc/horovod/common/stall_inspector.cc:131] One or more rank (0) "
     "exceeded the stall timeout (300 seconds), shutting down Horovod.", "nccl", "warning"),
    ("E1126 10:11:12.123456 48213 coordination_service_agent.cc:332] Failed to connect to coordination service: "
     "DEADLINE_EXCEEDED: Deadline Exceeded", "nccl", "warning"),
    ("jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
     "ipv4:10.1.0.5:1234: Failed to connect to remote host: Connection refused", "nccl", "warning"),
    ("RuntimeError: Unable to meet other processes at the rendezvous store. If you are using P2P communication, "
     "please check if tensors are put in the correct GPU.", "nccl", "warning"),
    # NVSHMEM (nccl, error), including the source-located print (its path is kept in the message)
    ("/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/host/transport/transport.cpp:420: non-zero status: 7 "
     "connect EPS failed", "nccl", "error"),
    # (the IBGDA transport's print keeps its path since round 11: the fabric's, lead10_nvshmem_ib_transport)
    ("/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/modules/transport/ibgda/ibgda.cpp:2916: non-zero "
     "status: 7 create DCT share err.", "ib", "error"),
    ("nvshmem initialization failed, exiting", "nccl", "error"),
    # RCCL's missing iommu=pt: a node's configuration advisory that every rank prints on healthy LUMI jobs (the fourth
    # public-log sweep, sweep4_rccl_config_advisory): nccl, info, like the performance advisories
    ('gpu01:48213:48213 [0] NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system '
     'instablity or hang!', "nccl", "info"),
]


BENIGN_TWINS = [
    # a launcher shutting its workers down on a signal (scancel, time limit, preemption): info
    "W1126 10:11:12.123000 48213 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death "
    "signal, shutting down workers",
    "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 48213 got signal: 15",
    "W1126 10:11:12.123000 48213 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 48214 closing "
    "signal SIGTERM",
    "[2026-11-26 10:11:12,123] [INFO] [launch.py:316:sigkill_handler] Killing subprocess 48214",
    # the SIGTERM/SIGINT/SIGHUP exit of a worker in torchelastic's table: the job was stopped, not failed
    "  exitcode  : -15 (pid: 48214)",
    "E1126 10:11:12.123000 48213 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -15) "
    "local_rank: 0 (pid: 48214) of binary: /usr/bin/python3",
    # c10d's info-level teardown lines
    "[rank0]:[I1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1247] [PG ID 0 PG GUID "
    "0(default_pg) Rank 0] future is successfully executed for: ProcessGroup abort",
    "[I1126 10:11:12.123456 48213 torch/csrc/distributed/c10d/ProcessGroupGloo.cpp:712] [Rank 0]: Rank 0 using 2 Gloo "
    "threads",
    # the collective layers' healthy lines
    "I1126 10:11:12.123000 48213 torch/distributed/elastic/agent/server/api.py:879] [default] worker group "
    "successfully finished. Waiting 300 seconds for other agents to finish.",
    "INFO:jax._src.distributed:Connecting to JAX distributed service on 10.1.0.5:1234",
    "[1,0]<stdout>:INFO:root:[0]: Elastic driver: discovered 4 hosts, 32 slots",
    "# Out of bounds values : 0 OK",
    # RCCL's performance advisories at start (placed before nccl_error, which reads any NCCL WARN)
    'gpu01:48213:48213 [0] NCCL WARN NUMA auto balancing enabled which can lead to variability in the RCCL '
    'performance! Disable by "sudo sysctl kernel.numa_balancing=0"',
    'gpu01:48213:48213 [0] init.cc:168 NCCL WARN Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from environment which can '
    'lead to low RCCL performance, system instablity or hang!',
    "gpu01:48213:48213 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
]


# The `collectives` subsystem: a failure word on a line of a collective layer no rule claims is a warning of kind nccl,
# flagged unrecognised, trust job.
FALLBACK_LINES = [
    "torch.distributed.DistError: the frobnicator failed on rank 3",
    "MSCCL++ connection setup failed",
    "[2026-11-26 10:11:12.123456: E horovod/common/controller.cc:12] Horovod controller hit a fatal condition",
]


globals().update(table_tests(other=FAULTS, no_drain=FALLBACK_LINES, twins=BENIGN_TWINS,
                             fallback=[(line, "nccl") for line in FALLBACK_LINES], ids=lambda v: str(v)[:50]))


def test_the_collectives_subsystem_is_quiet_at_info_level() -> None:
    """An info-level line of the same layers keeps its failure words to itself (glog `I`, `[INFO]`, `INFO:`)."""
    for line in ("I1126 10:11:12.123000 48213 torch/distributed/elastic/agent/server/api.py:879] [default] previous "
                 "attempt failed, retrying",
                 "[2026-11-26 10:11:12,123] torch.distributed.elastic: [INFO] last round failed, joining the next"):
        below_warning(line)


def test_the_new_rules_never_drain_even_as_the_kernels_lines() -> None:
    """A collective layer's words are never a node fault, whatever envelope carries them."""
    for line in (b"Nov 26 10:11:12 gpu01 kernel: nvshmem initialization failed, exiting",
                 b"[ 812.1] Missing ranks:",
                 b"[ 812.1]   exitcode  : -6 (pid: 48214)",
                 b"[ 812.1] RuntimeError: Gloo connectFullMesh failed with [pair.cc:144] no error"):
        assert not any(is_node_fault(f, None) for f in diagnose(line)), line
