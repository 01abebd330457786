"""Round 9's GPU-stack printers (rules9-GPU): what tests/data/kernel/printers/gpu2.tsv cannot say about the rules it
needed. The NVIDIA driver's module-load, DMA and capability-device failures no rule read, nvidia-uvm's other init
steps, the NVSwitch driver's words without an error word, Slurm's GPU autodetection without its library, amdgpu's hangs,
failed resets and uncorrectable RAS errors, and systemd's lines for the IMEX daemon.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A daemon's text never drains; the
same printers' healthy lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

KERNEL = [
    # kernel-open/nvidia nv.c, nv-dma.c, nv-caps*.c (gpu_init, error)
    ("NVRM: nvidia_stack_t cache allocation failed.", "gpu_init", "error"),
    ("NVRM: nvidia_p2p_page_t cache allocation failed.", "gpu_init", "error"),
    ("NVRM: numa memblock size of zero found during device start", "gpu_init", "error"),
    ("NVRM: GPU 0000:3b:00.0: DMA address not in addressable range of device (0x100000000-0x1ffffffff, "
     "0x0-0xffffffffff)", "gpu_init", "error"),
    ("NVRM: GPU 0000:3b:00.0: DMA mapping request too large!", "gpu_init", "error"),
    ("nv-caps-drv failed to create cdev region.", "gpu_init", "error"),
    ("nv-caps-imex failed to create channel0.", "gpu_init", "error"),
    # nvidia-uvm's init_gpu steps (the extended nvidia_uvm_init: gpu_init, error)
    ("nvidia-uvm: uvm_gpu.c:1301 init_gpu[pid:48213] Creating RM address space failed: Invalid state, GPU "
     "GPU-5e3f1c2a-1111-2222-3333-444455556666", "gpu_init", "error"),
    ("nvidia-uvm: uvm_gpu.c:1355 init_gpu[pid:48213] Failed to get GPU ECC info: Timeout, GPU "
     "GPU-5e3f1c2a-1111-2222-3333-444455556666", "gpu_init", "error"),
    ("nvidia-uvm: uvm_gpu.c:1190 init_parent_gpu[pid:48213] Failed to init GPU GPU-5e3f1c2a-1111-2222-3333-"
     "444455556666. UVM is not supported in legacy virtualization mode", "gpu_init", "error"),
    # linux_nvswitch.c (sxid, warning)
    ("nvidia-nvswitch3: Interrupts disabled to avoid a storm", "sxid", "warning"),
    ("nvidia-nvswitch3: Blacklisted nvswitch device", "sxid", "warning"),
    ("nvidia-nvswitch: Version mismatch, kernel version 550.54.14 user version 550.90.07", "sxid", "warning"),
    # amdgpu (gpu_init, error)
    ("amdgpu 0000:c1:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=123456, emitted seq=123458", "gpu_init",
     "error"),
    ("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=8812, emitted seq=8814", "gpu_init",
     "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: GPU reset(2) failed", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: GPU reset end with ret = -110", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: ASIC reset failed with error, -110 for drm dev, 0000:c1:00.0", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: 2 uncorrectable hardware errors detected in umc block", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: socket: 0, die: 1, 2 new uncorrectable hardware errors detected in umc block",
     "gpu_init", "error"),
    ("[drm:amdgpu_ib_ring_tests [amdgpu]] *ERROR* IB test failed on gfx_0.0.0 (-110).", "gpu_init", "error"),
    # the RM's state init/load steps (rules9_nvrm_state_init, placed before nvrm_internal: gpu_init, error)
    ("NVRM: GPU0 gpuStateInit_IMPL: Failing GPU Init for Engine ID 0x10 (16)", "gpu_init", "error"),
    ("NVRM: GPU0 gpuStateLoad_IMPL: Failing GPU PostLoad for Engine ID 0x2a (42)", "gpu_init", "error"),
    ("NVRM: GPU0 kbusStateInitLockedKernel_IMPL: Failed to modify CPU-RM's BAR1 PDB to GSP-RM's BAR1 PDB.", "gpu_init",
     "error"),
]

DAEMON = [
    # Slurm's GPU autodetection (gpu_init, warning, trust syslog)
    ("Nov 26 10:11:12 gpu01 slurmd[2211]: We were configured with nvml functionality, but that lib wasn't found on "
     "the system.", "gpu_init", "warning"),
    ("slurmd: We were configured to autodetect nvml functionality, but we weren't able to find that lib when Slurm "
     "was configured.", "gpu_init", "warning"),
    ("slurmd: warning: Ignoring file-less GPU gpu:(null) from final GRES list", "gpu_init", "warning"),
    # systemd's lines for nvidia-imex (fabric_manager, warning, trust syslog)
    ("Nov 26 10:11:12 gpu01 systemd[1]: nvidia-imex.service: Main process exited, code=exited, status=1/FAILURE",
     "fabric_manager", "warning"),
    ("Nov 26 10:11:12 gpu01 systemd[1]: nvidia-imex.service: Failed with result 'exit-code'.", "fabric_manager",
     "warning"),
]


BENIGN_TWINS = [
    # the driver going on without an optional feature (rules9_nvrm_fallback_note, placed before nvrm_init_text)
    "[    5.123456] NVRM: GPU 0000:3b:00.0: Failed to enable MSI; falling back to PCIe virtual-wire interrupts.",
    "[   12.345678] NVRM: RmInitAdapter: Failed to load gsp_log_*.bin, no GSP-RM logs will be printed (non-fatal)",
    # a Confidential Computing GPU's teardown note (rules9_gsp_cc_cleanup_note, placed before gsp_report)
    "[ 9912.345678] NVRM: GPU0 kgspFreeSuspendResumeData_GH100: CC secret cleanup successful!",
    # amdgpu's recovery and counts
    "[ 8812.104113] amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!",
    "[ 8812.504113] amdgpu 0000:c1:00.0: amdgpu: GPU reset(2) succeeded!",
    "[ 8812.504113] amdgpu 0000:c1:00.0: amdgpu: GPU reset end with ret = 0",
    "[ 8812.004113] amdgpu 0000:c1:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered",
    "[ 8812.004113] amdgpu 0000:c1:00.0: amdgpu: 1 correctable hardware errors detected in gfx block",
    "[ 8812.004113] amdgpu 0000:c1:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block",
    "[    7.123456] kfd kfd: amdgpu: added device 1002:74a1",
    # the NVSwitch driver's notes, Slurm's plugin banners, the IMEX unit starting
    "[ 9912.004113] nvidia-nvswitch0: removing device 0000:05:00.0",
    "[ 9912.004113] nvidia-nvswitch0: open (major=508)",
    "slurmd: GPU NVML plugin loaded",
    "Nov 26 10:11:12 gpu01 systemd[1]: Started nvidia-imex.service - NVIDIA IMEX service.",
    "Nov 26 10:11:12 gpu01 systemd[1]: nvidia-imex.service: Main process exited, code=exited, status=0/SUCCESS",
]


# kernel_investigated_lines: The new kernel rules say investigate: a driver's or an AMD GPU's failure is looked at, not
# a drain by itself.
globals().update(table_tests(found=KERNEL, other=DAEMON, kernel_investigated_lines=[line for line, _, _ in KERNEL],
                             twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


def test_a_process_name_in_amdgpus_process_line_cannot_forge_a_hang() -> None:
    """amdgpu prints the guilty process's name after a ring timeout; the rule reads only the message's start after the
    driver's prefix, so a process named like the timeout is not a second finding."""
    line = (b"amdgpu 0000:c1:00.0: amdgpu:  Process information: process ring gfx timeout, signaled seq=1, emitted "
            b"seq=2 pid 48213 thread python3 pid 48213")
    assert not [f for f in diagnose(line) if f.severity in ("warning", "error", "critical")]


def test_a_job_echoing_an_amdgpu_failure_is_not_the_kernels() -> None:
    """The amdgpu rule is anchored at the driver's prefix: the same words later in a job's line are read at a lower
    trust (the engine's envelope parser may find the tag there), never as the kernel's, and never a node fault."""
    line = b"0: my_script.py: saw 'amdgpu 0000:c1:00.0: amdgpu: GPU reset(2) failed' in a paste"
    findings = diagnose(line)
    assert not any(is_node_fault(f, None) for f in findings)
    assert all(f.trust != "kernel" for f in findings if f.details.get("rule") == "rules9_amdgpu_gpu_failure")


def test_a_gsp_function_in_a_state_step_stays_gsp() -> None:
    """The state-init rule comes after the GSP rules: a GSP boot failure inside a state step is still gsp, and an RM
    function outside the state steps is still the driver's family (gsp)."""
    assert diagnose(b"NVRM: GPU0 kgspInitRm_IMPL: GSP-RM heartbeat timed out")[0].kind == "gsp"
    assert diagnose(b"NVRM: GPU0 memmgrInitFbRegions_IMPL: Failed to reserve vidmem for WPR and FRTS.")[0].kind == "gsp"
    assert diagnose(b"NVRM: GPU0 gpuStateInit_IMPL: Failing GPU Init for Engine ID 0x10 (16)")[0].kind == "gpu_init"


def test_a_cc_cleanup_failure_is_still_a_warning() -> None:
    """Only the success note is quiet: the cleanup's failure stays a GSP finding."""
    findings = diagnose(b"NVRM: GPU0 kgspFreeSuspendResumeData_GH100: CC secret cleanup failed! Status 0x65")
    assert findings and findings[0].kind == "gsp" and findings[0].severity in ("warning", "error", "critical")
