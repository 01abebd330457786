"""Benign lines of whole public logs that once raised a warning or worse: the fourth sweep (whole public logs none of
the earlier sweeps used: server, VM, laptop and ChromeOS dmesg, kern.log, /var/log/messages and journals, Megatron-LM
runs on a Slurm GPU cluster, a LUMI (AMD GPU) inference job, Slurm job output, Nagios state logs, nvidia-installer
logs, nvidia-smi and lspci output; docs/diagnosis.md). Each family's benign line, verbatim with its source, stays
below warning, and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
LUMI = f"{GH}/metno/bris-inference/blob/58ad615060d33d365143f1b399e32530ff5f3191/logs/full.out"
LAPTOP_NV = f"{GH}/priyanshu-kun/debug-info/blob/c739e2ce353392443f1ec3692aad391efcbcdff7/dmesg.txt"
ARCH = f"{GH}/tatejuan12/refresh-logs/blob/985ca3e0c958aff9e66b30196a6b1ddcb4be60c3/journalctl.log"
NUMA = f"{GH}/lwapet/linux_dynamic_numa/blob/635b37a339d08ed05d7816215fd8ad0bc89a533c/dmesg"
BTRFS = f"{GH}/SGResearch/200OK/blob/4048343005254bb3453fdbe78ee4e99568177e90/dmesg"
CHROMEOS = f"{GH}/CRYP70N1CZ/syslogs/blob/004d7b062812e9aee7165acd8f097441eb7ed5d5/messages"

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep4_*`)
BENIGN = [
    # RCCL's start-up advisory about the kernel command line, every rank of every run (sweep4_rccl_config_advisory,
    # before nccl_net and nccl_error)
    (LUMI, "nid005237:28666:28666 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/"
           "src/init.cpp:120 NCCL WARN Missing \"amd_iommu=on\" from kernel command line which can lead to system"
           " instablity or hang!"),
    (LUMI, "nid005967:48655:48655 [2] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/"
           "src/init.cpp:122 NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system"
           " instablity or hang!"),
    # a display client's GEM export ioctl naming a handle that is no NVKMS object (sweep4_nvidia_drm_client_handle,
    # before nvidia_display_error)
    (LAPTOP_NV, "[19308.652438] [drm:nv_drm_gem_export_nvkms_memory_ioctl [nvidia_drm]] *ERROR* [nvidia-drm]"
                " [GPU ID 0x00000100] Failed to lookup NVKMS gem object for export: 0x00000001"),
    # boot notes that reached the subsystem fallback (sweep4_boot_fallback_notes, before unrecognised)
    (LAPTOP_NV, "[    0.388251] ACPI: thermal: [Firmware Bug]: Invalid critical threshold (0)"),
    (ARCH, "Jun 22 13:16:49 archlinux kernel: ACPI: thermal: [Firmware Bug]: Invalid critical threshold (0)"),
    (NUMA, "[    8.077584] mce: Unable to init device /dev/mcelog (rc: -16)"),
    # filesystem refusals with no I/O behind them (sweep4_fs_refusal_notes, before unrecognised)
    (BTRFS, "[82777.413199] BTRFS error (device sda3): deleting default subvolume 259 is not allowed"),
    (CHROMEOS, "2026-05-22T02:41:55.326387Z ERR kernel: [290528.012268] EXT4-fs (loop14): VFS: Can't find ext4"
               " filesystem"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    ("gpu46:78367:78492 [0] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'", "nccl", "error"),
    ("nid005237:28666:28666 [0] init.cc:244 NCCL WARN Missing peer info for rank 3", "nccl", "error"),
    ("[19308.652438] [drm:nv_drm_atomic_commit [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to apply"
     " atomic modeset.  Error code: -22", "gsp", "warning"),
    ("[19308.652438] [drm:nv_drm_gem_export_nvkms_memory_ioctl [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100]"
     " Failed to export memory from NVKMS GEM object: 0x00000001", "gsp", "warning"),
    ("[    0.388251] ACPI: thermal: Critical temperature reached (105 C), shutting down", "thermal", "critical"),
    ("[82777.413199] BTRFS error (device sda3): bdev /dev/sda3 errs: wr 1, rd 0, flush 0, corrupt 0, gen 0", "disk",
     "error"),
]

# failures of the claimed families that no rule names: the fallback still reports them
UNCLAIMED = [
    ("[    8.077584] mce: Unable to init device /dev/mcelog (rc: -12)", "mce"),
    ("[290528.012268] EXT4-fs (nvme0n1p1): VFS: Can't find ext4 filesystem", "disk"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for s, ln in BENIGN if s == LUMI]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS: list[tuple[str, str, bool]] = []

# Nagios/Icinga alert lines (`SERVICE ALERT: host;service;STATE;HARD|SOFT;attempt;output`): the state field is the
# monitor's verdict, not a word of the output, so the library fallback no longer reads `;CRITICAL;HARD;1;` as the
# failure word (subsystems.reported_error_word); bench/envelope_matrix.py's Nagios envelope had 14 benign rules-half
# messages warn through it. The real logs' alerts (three Nagios logs, 9,304 alert lines) raised nothing before or after.
NAGIOS_LOG = f"{GH}/cawan1/ranklog/blob/f073176a8c261f197d3c73f66d7d24cbea1df003/nagios.log"
NAGIOS_REAL = [
    "[Tue Jan 12 00:00:00 2016] CURRENT SERVICE STATE: bredt1-svldbp03;app :: apache;CRITICAL;HARD;3;NRPE: Unable to"
    " read output",
]
# bench/envelope_matrix.py's Nagios envelope around benign messages of the field corpus's rules half
NAGIOS_WRAPPED = [
    "[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;rdma_rxe: loaded",
    "[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;openib BTL: rdmacm CPC unavailable for use on mlx5_0:1;"
    " skipped",
    "[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;NVIDIA-SMI 545.23.08              Driver Version:"
    " 545.23.08    CUDA Version: 12.3     |",
    "[1704966721] HOST ALERT: gpu017;DOWN;SOFT;1;rdma_rxe: loaded",
]
