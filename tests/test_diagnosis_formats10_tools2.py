"""Round 10's admin-tool printers (rules10-tools2): what tests/data/kernel/printers/tools2.tsv cannot say. Which rule
reads the tools' lines, that a tool's, a fabric manager's or a job's words never drain, that GPUDirect Storage's kernel
module is kernel evidence to investigate (never a drain), where the thresholds of the counters and BER fields lie, and
that the same printers' routine lines stay silent.

Every line below is a format string of the public source named in the comment above it (or, for the closed-source
tools, a text of the vendor's manual, as the comment says), with its conversions filled in by hand: no line is copied
from a log or from the field corpus.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import below_warning, reaches_fallback, table_tests, trust_kernel

# ---- one line per rule of the block: (line, kind, the rule that must read it)
READ_BY = [
    # rdma-core infiniband-diags/saquery.c, libibnetdisc/ibnetdisc.c IBND_ERROR("%s:%u; " fmt)
    ("Query SA failed: Connection timed out", "ib", "tools2_saquery_ibnetdisc"),
    ("ibnetdisc.c:660; Duplicate Port: Port with guid 0x0c42a10300abc123 already exists in ports DB", "ib",
     "tools2_saquery_ibnetdisc"),
    # infiniband-diags/vendstat.c config_counter_groups(), dump_fts.c dump_multicast_tables()
    ("config counter group query failure", "ib", "tools2_saquery_ibnetdisc"),
    ("SubnGet(MFT) failed on switch 'sw-spine02 QM8790' Lid 3 Node GUID 0x248a0703009b4e51 SMA LID 3; MAD status 0x1c "
     "AM 0x10000000", "ib", "tools2_saquery_ibnetdisc"),
    # infiniband-diags/scripts/ibcheckportwidth.in, ibcheckstate.in (the envelope parser drops the leading "# ")
    ("#warn: Link configured as 1X  lid 44 port 7", "ib", "tools2_ibcheck_scripts"),
    ("# Ca: nodeguid 0x0c42a10300abc123 failed", "ib", "tools2_ibcheck_scripts"),
    # ibdiagnet2 (NVIDIA's user manual): a PM counter warning and a summary stage with errors
    ("-W- lid=0x0031 dev=4129 gpu07/U1/P1 Performance Monitor counter : port_xmit_discard Value: 88 (threshold=1)",
     "ib", "tools2_ibdiagnet_warnings"),
    ("-I- Speed / Width checks        0          1", "ib", "tools2_ibdiagnet_warnings"),
    # mstflint mlxlink_commander.cpp showBer / operatingInfoPage / troubInfoPage
    ("Link Error Recovery Counter        : 41", "ib", "tools2_mlxlink_fields"),
    ("Physical state                     : Wait Config Enhanced", "ib", "tools2_mlxlink_fields"),
    ("Recommendation                     : Module temperature is too high", "ib", "tools2_mlxlink_fields"),
    # UFM's event log (the manual's events): a critical link event and a syslog-forwarded counter event
    ("2026-11-26 11:02:03.004 [2211] [329] CRITICAL [Fabric_Topology] IB Link [0c42a10300abc123_1]: Link went down: "
     "(Switch:sw-spine02 / 33)(Computer:gpu07 mlx5_1 / 1)", "ib", "tools2_ufm_event"),
    ("Nov 26 11:02:03 ufm01 UFM[2211]: [113] MINOR [Hardware] IB Port [0c42a10300abc123_1]: Port receive errors "
     "counter rate is 9, threshold is 5", "ib", "tools2_ufm_event"),
    # ROCm/rocm_smi_lib rocm_smi.py, ROCm/amdsmi amdsmi_cli, ROCm/rocminfo rocminfo.cc
    ("ERROR: No DRM devices available. Exiting", "gpu_init", "tools2_amd_tools"),
    ("ERROR:root:Drivers not loaded (amdgpu and amd_hsmp drivers not found in modules)", "gpu_init",
     "tools2_amd_tools"),
    ("Unable to open /dev/kfd read-write: Permission denied", "gpu_init", "tools2_amd_tools"),
    ("            UNCORRECTABLE_COUNT: 17", "gpu_init", "tools2_amd_tools"),
    # NVIDIA/gds-nvidia-fs src/nvfs-core.c nvfs_pin_gpu_pages(), nvfs_init()
    ("[ 8812.004113] nvidia-fs:nvfs_pin_gpu_pages:1261 gpu_info is in invalid state 3 mgroup_ref 2", "disk",
     "tools2_nvfs_error"),
    ("[    9.123456] nvidia_fs: Failed to create the device", "disk", "tools2_nvfs_error"),
    # cufile.log (GDS troubleshooting guide) and cufile.h's error strings
    (" 26-11-2026 11:02:03:004 [pid=5120 tid=5133] ERROR  cufio-fs:759 error getting volume attributes error for "
     "device: dev_no: 259:3", "disk", "tools2_cufile_error"),
    ("cuFileBufRegister failed : failed to obtain new file descriptor", "disk", "tools2_cufile_error"),
    # NVIDIA/DCGM dcgmlib/dcgm_errors.h
    ("GPU 6 requires peer-to-peer traffic to be quiesced. Recovery action: 3 (DRAIN_P2P).", "xid",
     "tools2_dcgm_fr_xid"),
    ("Max power of 402.0 did not reach desired power minimum targeted_power of 550.0 for GPU 6", "thermal",
     "tools2_dcgm_fr_thermal"),
    ("Detected symbol BER 2.50e-07 exceeds minimum threshold on GPU 6's NVLink.", "nvlink", "tools2_dcgm_fr_links"),
    ("GPU 6 unsuccessfully wrote data to GPU 2 in a peer-to-peer test: cudaMemcpyPeer failed", "pcie",
     "tools2_dcgm_fr_pcie"),
    ("Cannot get pointer to nvmlDeviceGetCount_v2 from libnvidia-ml.so", "gpu_init", "tools2_dcgm_fr_gpu_init"),
    ("Couldn't allocate at least 90.0% of GPU memory on GPU 6", "cuda", "tools2_dcgm_fr_cuda"),
    # DCGM_FR_FIELD_THRESHOLD_TS_MSG, by the field it names
    ("ecc_dbe_volatile_total met or exceeded the threshold of 1 per second: 3 at 12.5 seconds into the test.", "xid",
     "tools2_dcgm_fr_xid"),
    ("pcie_replay_counter met or exceeded the threshold of 8 per second: 30 at 12.5 seconds into the test.", "pcie",
     "tools2_dcgm_fr_pcie"),
]


# ---- tool, fabric-manager and job output: trust syslog or job, never a node fault
NEVER_DRAINS = [line for line, _, rule in READ_BY if rule not in ("tools2_nvfs_error",)] + [
    # the same words behind srun's rank tag and a pdsh host are still a tool's
    "3: cuFileRead failed : nvidia-fs driver ioctl error",
    "gpu07: Effective Physical Errors          : 1042",
    "gpu07: ERROR: Driver not initialized (amdgpu not found in modules)",
]


@pytest.mark.parametrize("line", [
    "[ 8812.004113] nvidia-fs:read IO failed :-5",
    "Nov 26 09:52:01 gpu01 kernel: nvidia-fs:nvfs_pin_gpu_pages:1336 Error ret -12 invoking "
    "nvidia_p2p_get_pages_persistent",
    "kern  :err   : [ 8812.004113] nvidia-fs:DMA Address chunks 16 != GPU Physical address chunks 32",
])
def test_nvidia_fs_lines_are_kernel_evidence_to_investigate(line: str) -> None:
    """GPUDirect Storage's kernel module is the kernel's own line (trust kernel), in every envelope; a failed GDS I/O or
    an unpinnable GPU page is investigated, never a drain (no policy names GDS a node fault)."""
    trust_kernel(line)
    findings = diagnose(line.encode())
    assert (findings[0].kind, findings[0].action, findings[0].details.get("rule")) == (
        "disk", "investigate", "tools2_nvfs_error")
    assert not any(is_node_fault(f, None) for f in findings)


BENIGN = [
    # nvidia-fs's nvfs_warn / nvfs_info notes (nvfs-pci.c, nvfs-core.c)
    "[    9.123456] nvidia-fs:detected pci-distance more than proc limit :12/8",
    "[ 8812.004113] nvidia-fs:truncate request size :65536",
    # nvfs_info (seen with the module's info parameter on) and nvfs_init's pr_info
    "[ 8812.004113] nvidia-fs:nvfs_free_gpu_info failed. for mgroup 00000000a1b2c3d4, ref cnt 2",
    "[    9.123456] nvidia_fs: Initializing nvfs driver module",
    # GDS's compat mode: a file or platform without GDS (cufile.h strings, cufile.log NOTICE)
    "cuFileHandleRegister failed : GPUDirect Storage not supported on current platform",
    " 26-11-2026 11:02:03:004 [pid=5120 tid=5120] NOTICE  cufio:293 cuFileHandleRegister GDS not supported or "
    "disabled by config, using cuFile posix read/write with compat mode enabled",
    # mlxlink: a healthy port's troubleshooting page and counters (zero, or a BER below 1E-11)
    "Recommendation                     : No issue was observed",
    "Recommendation                     : N/A",
    "Status Opcode                      : 0",
    "Symbol Errors                      : 0",
    "Effective Physical BER             : 1E-13",
    "Effective Physical BER             : 9E-12",
    "Physical state                     : LinkUp",
    # ibdiagnet2's summary: a clean stage and the header
    "-I- Temperature Sensing         0          0",
    "-I- Stage                     Warnings   Errors     Comment",
    # UFM's INFO events
    "2026-11-26 11:05:03.004 [2211] [328] INFO [Fabric_Topology] IB Link [0c42a10300abc123_1]: Link went up: "
    "(Switch:sw-spine02 / 33)(Computer:gpu07 mlx5_1 / 1)",
    # rocm-smi / amd-smi on a healthy GPU
    "GPU[6]        : XGMI Error count: 0 (No errors detected since last read)",
    "            UNCORRECTABLE_COUNT: 0",
    "ROCk module version 6.10.5 is loaded",
    # the ibcheck* scripts on a healthy fabric
    "## Summary: 12 nodes checked, 0 bad nodes found",
    "Port check lid 44 port 7: OK",
    # ibnetdiscover's topology (a tab written as 4 spaces)
    'Switch    41 "S-248a0703009b4e51"        # "sw-spine02 QM8790" enhanced port 0 lid 3 lmc 0',
]


globals().update(table_tests(found=[(line, kind, "warning") for line, kind, _ in READ_BY], no_drain=NEVER_DRAINS,
                             twins=BENIGN, rules=[(line, rule) for line, _, rule in READ_BY]))


@pytest.mark.parametrize("line,warn", [
    ("Effective Physical BER             : 3E-10", True),
    ("Effective Physical BER             : 1E-11", True),
    ("Effective Physical BER             : 15E-12", False),
    ("Effective Physical BER             : 15E-255", False),
])
def test_the_mlxlink_ber_threshold_is_1e_11(line: str, warn: bool) -> None:
    """mlxlink prints the BER as COEF E-MAGNITUDE (mlxlink_effective_ber reads it): a magnitude of 11 or less (1E-11 or
    worse) is a warning; the usual healthy link (E-15 and below, 15E-255 for none) stays silent. 15E-12 (1.5E-11) is
    under the line by design: the rule reads the magnitude only."""
    findings = [f for f in diagnose(line.encode()) if f.severity in ("warning", "error", "critical")]
    assert bool(findings) is warn, findings


def test_a_cufile_error_in_a_jobs_output_is_a_job_trust_disk_warning() -> None:
    """joblog.scan: a cuFile call's error behind srun's rank tag is the job's own words about its storage path."""
    found = joblog.scan(["2: cuFileBatchIOSubmit failed : failed to submit batch operation"])
    assert [(f.kind, f.severity, f.trust, f.details.get("rule")) for f in found] == [
        ("disk", "warning", "job", "tools2_cufile_error")]


def test_dcgms_cuda_api_text_is_left_to_the_fallback() -> None:
    """DCGM_FR_CUDA_API_MSG ("Error using CUDA API %s") is read by no rule (dcgmi diag prints it in its "| Warning |"
    table rows, which rules7-sel holds below warning); on its own line the cuda-stack fallback still reads it."""
    reaches_fallback("Error using CUDA API cuMemAlloc", "cuda")
    below_warning("| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |")
