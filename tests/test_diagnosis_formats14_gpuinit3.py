"""Round 14's printers (rules14-gpuinit), from their format strings: GPUs that do not come up, in the texts rounds 8, 9
and 11 left: amdgpu's device init, PSP, SMU, IP discovery and amdkfd, i915's probe and GuC/HuC firmware, NVIDIA's open
kernel modules' leftovers (nvidia-modeset's version check, FLR, the unbind lock), nvidia-smi's uninitialised NVML,
TensorFlow's CUDA diagnostics, numba's driver init, HIP's and PyTorch-ROCm's init errors, Apptainer's --nv/--rocm
binders, and Intel's Level Zero, SYCL, IPEX and xpu-smi, which tests/data/kernel/printers/gpuinit3.tsv holds.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's
linux-source-6.1 6.1.192 holds it, NVIDIA/open-gpu-kernel-modules 595.45.04, intel/xpumanager 34c32c6e, TensorFlow
2.16, numba 0.60, PyTorch 2.4, Apptainer 1.3, the Level Zero spec) with its conversions filled in by hand, not a line
copied from a log or from the field corpus. The printer file checks the kind; this file checks what it cannot: the
severity, the trust (a job's or a tool's line never drains; the kernel's own is trust kernel and no node fault), the
notes that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # drivers/gpu/drm/amd/amdgpu amdgpu_device.c amdgpu_device_init() dev_err (dev_fmt "amdgpu: ") "no vBIOS found\n",
    # "gpu post error!\n", "amdgpu_fence_driver_sw_init failed\n", "IB initialization failed (%d).\n"
    ("amdgpu 0000:c1:00.0: amdgpu: no vBIOS found", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: gpu post error!", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: amdgpu_fence_driver_sw_init failed", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: IB initialization failed (-110).", "gpu_init", "error"),
    # amdgpu_psp.c psp_hw_start()/psp_load_fw() "PSP load %s failed!\n", "PSP firmware is invalid\n", "invalid chip name
    # for sos microcode\n"
    ("amdgpu 0000:c1:00.0: amdgpu: PSP load kdb failed!", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: PSP firmware is invalid", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: invalid chip name for sos microcode", "gpu_init", "error"),
    # amdgpu_discovery.c "invalid ip discovery binary checksum\n"; amdgpu_xgmi.c "XGMI: Failed to add node %d, hive
    # 0x%llx ret: %d\n"
    ("amdgpu 0000:c1:00.0: amdgpu: invalid ip discovery binary checksum", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: XGMI: Failed to add node 3, hive 0x6d9c7c1e2a3b4c5d ret: -22", "gpu_init", "error"),
    # pm/swsmu amdgpu_smu.c smu_hw_init() "SMC engine is not correctly up!\n"; smu_cmn.c __smu_cmn_reg_print_error()
    # "SMU: response:0x%08X for index:%d param:0x%08X message:%s?"; smu_v13_0.c "Unsupported smu firmware version
    # %d.%d\n"
    ("amdgpu 0000:c1:00.0: amdgpu: SMC engine is not correctly up!", "gpu_init", "error"),
    ("amdgpu 0000:c1:00.0: amdgpu: SMU: response:0xFFFFFFFF for index:18 param:0x00000005 "
     "message:GetEnabledSmuFeaturesHigh?", "gpu_init", "warning"),
    ("amdgpu 0000:c1:00.0: amdgpu: Unsupported smu firmware version 85.90", "gpu_init", "error"),
    # DRM_ERROR ("[drm:FUNC [amdgpu]] *ERROR* "): amdgpu_device.c "hw_init %d failed %d\n", "allocate CSA failed %d\n";
    # amdgpu_ucode.c "Unknown PSP ucode version: %u.%u\n"; amdgpu_drv.c "amdgpu requires firmware installed\n" and its
    # pr_err_once "See https://wiki.debian.org/Firmware for information about missing firmware\n"
    ("[drm:amdgpu_device_ip_init [amdgpu]] *ERROR* hw_init 3 failed -110", "gpu_init", "error"),
    ("[drm:amdgpu_device_ip_init [amdgpu]] *ERROR* allocate CSA failed -12", "gpu_init", "error"),
    ("[drm:amdgpu_ucode_print_psp_hdr [amdgpu]] *ERROR* Unknown PSP ucode version: 3.1", "gpu_init", "error"),
    ("[drm:amdgpu_pci_probe [amdgpu]] *ERROR* amdgpu requires firmware installed", "gpu_init", "error"),
    ("amdgpu: See https://wiki.debian.org/Firmware for information about missing firmware", "gpu_init", "error"),
    # Debian's firmware_loader/main.c _request_firmware() "firmware: failed to load %s (%d)\n" for a required blob
    ("amdgpu 0000:c1:00.0: firmware: failed to load amdgpu/psp_13_0_6_sos.bin (-2)", "gpu_init", "error"),
    # amd/amdkfd kfd_device.c kgd2kfd_device_init() dev_err "Error initializing queue manager\n", "Error adding device
    # to topology\n"; kfd_module.c pr_err "KFD is disabled due to module initialization failure\n"
    ("kfd kfd: amdgpu: Error initializing queue manager", "gpu_init", "error"),
    ("kfd kfd: amdgpu: Error adding device to topology", "gpu_init", "error"),
    ("kfd kfd: amdgpu: GC IP 090402 MI210 not supported in kfd", "gpu_init", "error"),
    ("amdgpu: KFD is disabled due to module initialization failure", "gpu_init", "error"),
    # drivers/gpu/drm/i915: i915_driver.c i915_probe_error "Device initialization failed (%d)\n"; gt/intel_gt_pm.c
    # "Failed to initialize GPU, declaring it wedged!\n"; intel_uncore.c drm_err "LMEM not initialized by firmware\n";
    # i915_pci.c "Your graphics device %04x is not properly supported by i915 in this\n..."
    ("i915 0000:00:02.0: Device initialization failed (-5)", "gpu_init", "error"),
    ("i915 0000:00:02.0: Failed to initialize GPU, declaring it wedged!", "gpu_init", "error"),
    ("i915 0000:3a:00.0: [drm] *ERROR* LMEM not initialized by firmware", "gpu_init", "error"),
    ("i915 0000:3a:00.0: Failed to initialize Remote tile 1! (-5)", "gpu_init", "error"),
    ("i915 0000:3a:00.0: Your graphics device 0bd5 is not properly supported by i915 in this", "gpu_init", "error"),
    ("kernel version. To force driver probe anyway, use i915.force_probe=0bd5", "gpu_init", "error"),
    # gt/uc: intel_uc_fw.c "%s firmware %s: fetch failed with error %d\n", "Failed to load %s firmware %s (%d)\n";
    # intel_guc_fw.c drm_info "GuC load failed: status = 0x%08X\n"; intel_huc.c DRM_ERROR "HuC: Firmware not verified"
    # (warnings, as round 13's lead files the HuC's fetch failure)
    ("i915 0000:00:02.0: GuC firmware i915/tgl_guc_70.bin: fetch failed with error -2", "gpu_init", "warning"),
    ("i915 0000:00:02.0: Failed to load GuC firmware i915/tgl_guc_70.bin (-8)", "gpu_init", "warning"),
    ("i915 0000:00:02.0: [drm] GuC load failed: status = 0x0000020C", "gpu_init", "warning"),
    ("i915 0000:00:02.0: [drm] GuC firmware signature verification failed", "gpu_init", "warning"),
    ("[drm:intel_huc_auth [i915]] *ERROR* HuC: Firmware not verified -110", "gpu_init", "warning"),
    # open-gpu-kernel-modules 595.45.04 nvidia-modeset-linux.c nvkms_get_rm_ops() "Version mismatch: nvidia.ko(%s)
    # nvidia-modeset.ko(%s)\n", "Failed to register callbacks\n"; nv.c "NVRM: FLR not supported by the device!\n";
    # nv-procfs.c NV_DEV_PRINTF "Could not acquire UnbindLock\n"
    ("nvidia-modeset: Version mismatch: nvidia.ko(550.54.14) nvidia-modeset.ko(595.45.04)", "gpu_init", "error"),
    ("nvidia-modeset: Failed to register callbacks", "gpu_init", "error"),
    ("NVRM: FLR not supported by the device!", "gpu_init", "error"),
    ("NVRM: GPU 0000:41:00.0: Could not acquire UnbindLock", "gpu_init", "error"),
]

JOB_FAULTS = [
    # TensorFlow 2.16 cuda_diagnostics.cc "kernel version %s does not match DSO version %s -- cannot find working
    # devices in this configuration"
    ("2026-11-26 06:20:01.118512: E external/local_xla/xla/stream_executor/cuda/cuda_diagnostics.cc:256] kernel "
     "version 550.54.14 does not match DSO version 550.90.7 -- cannot find working devices in this configuration",
     "gpu_init", "warning"),
    # numba driver.py CudaSupportError("Error at driver init: ...")
    ("numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: CUDA driver library cannot be found.",
     "cuda", "error"),
    # PyTorch-ROCm torch/cuda/__init__.py _lazy_init "No HIP GPUs are available"; HIP hipGetErrorName
    ("RuntimeError: No HIP GPUs are available", "cuda", "error"),
    ("hipErrorNotInitialized: initialization error", "cuda", "error"),
    # Apptainer 1.3 --nv / --rocm binders
    ("INFO:    Could not find any nv binaries on this host!", "gpu_init", "warning"),
    ("WARNING: Could not find any rocm files on this host!", "gpu_init", "warning"),
    # Level Zero (spec ze_result_t), DPC++'s sycl::exception, IPEX
    ("zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED", "cuda", "error"),
    ("terminate called after throwing an instance of 'sycl::_V1::runtime_error'  what():  No device of requested type "
     "available. -1 (PI_ERROR_DEVICE_NOT_FOUND)", "cuda", "error"),
    ("RuntimeError: Can't initialize XPU device: No XPU devices are available.", "cuda", "error"),
]

DAEMON_FAULTS = [
    # intel/xpumanager hal/core/driver.cpp ERR "[Error] " "Failed to initialize Level Zero. Error code: 0x%X (%s)\n"
    ("[Error] Failed to initialize Level Zero. Error code: 0x78000001 (ZE_RESULT_ERROR_UNINITIALIZED)", "cuda",
     "error"),
    ("[Error] Failed to initialize ZES API: 0x78000001 (ZE_RESULT_ERROR_UNINITIALIZED)", "cuda", "error"),
    # nvidia-smi's device-handle failure with nvml.h's NVML_ERROR_UNINITIALIZED ("Uninitialized"): not a lost GPU
    ("Unable to determine the device handle for GPU0000:41:00.0: Uninitialized", "gpu_init", "warning"),
]

KERNEL_TWINS = [
    "amdgpu 0000:c1:00.0: amdgpu: Fetched VBIOS from VFCT",
    "amdgpu 0000:c1:00.0: amdgpu: RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]",
    "amdgpu 0000:c1:00.0: amdgpu: PSP runtime database doesn't exist",
    "amdgpu 0000:c1:00.0: amdgpu: cap microcode does not exist, skip",
    "amdgpu 0000:c1:00.0: amdgpu: get invalid ip discovery binary signature from vram",
    "amdgpu 0000:c1:00.0: amdgpu: SMU driver if version not matched",
    "amdgpu 0000:c1:00.0: amdgpu: SMU is initialized successfully!",
    "kfd kfd: amdgpu: Allocated 3969056 bytes on gart",
    "kfd kfd: amdgpu: added device 1002:740c",
    "i915 0000:00:02.0: [drm] GuC firmware i915/tgl_guc_70.bin version 70.5.1",
    "i915 0000:00:02.0: [drm] HuC authenticated",
    "i915 0000:00:02.0: [drm] GuC submission enabled",
    "i915 0000:00:02.0: [drm] GuC is uninitialized",
    "i915 0000:3a:00.0: I915 probe blocked for Device ID 0bd5.",
    "i915 0000:00:02.0: [drm] GuC firmware(s) can be downloaded from "
    "https://git.kernel.org/pub/scm/linux/kernel/git/firmware/linux-firmware.git/tree/i915",
    "[drm] Initialized i915 1.6.0 20201103 for 0000:00:02.0 on minor 0",
    "NVRM: GPU 0000:41:00.0: UnbindLock released",
    "nvidia 0000:41:00.0: firmware: direct-loading firmware nvidia/595.45.04/gsp_ga10x.bin",
]

JOB_NOTES = [
    "2026-11-26 06:20:01.118514: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some GPU "
    "libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use "
    "GPU.",
    "I0000 00:00:1732601201.118513   41234 cuda_diagnostics.cc:168] no NVIDIA GPU device is present: /dev/nvidia0 does "
    "not exist",
    "INFO:    Setting --writable-tmpfs (required by nvidia-container-cli)",
    "Intel XPU-SMI 1.3.0    Driver: 1.0.0    Level Zero: 1.17.6",
    "[level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Data Center GPU Max 1550 1.3 [1.3.29735]",
    "Found 8 CUDA devices",
]


def test_the_tf_device_node_note_is_gpu_init_at_info() -> None:
    # a CPU-only host prints it too: recorded as gpu_init evidence, never a warning on its own
    findings = diagnose(b"no NVIDIA GPU device is present: /dev/nvidia0 does not exist")
    assert findings and (findings[0].kind, findings[0].severity) == ("gpu_init", "info")


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "python3: saw 'amdgpu 0000:c1:00.0: amdgpu: no vBIOS found' in the log",
    "myjob: i915 0000:00:02.0: Device initialization failed (-5)",
    "echo nvidia-modeset: Version mismatch: nvidia.ko(550.54.14) nvidia-modeset.ko(595.45.04)",
    "grep 'kfd kfd: amdgpu: Error initializing queue manager' dmesg.txt",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "amdgpu 0000:c1:00.0: amdgpu: PSP " + "x" * 100_000 + " failed",
    "amdgpu 0000:c1:00.0: amdgpu: amdgpu_" + "a" * 100_000 + " failed",
    "[drm:" + "f" * 100_000 + " [amdgpu]] *ERROR* hw_init 3 failed -110",
    "i915 0000:00:02.0: GuC firmware " + "i" * 100_000 + ": fetch failed with error -2",
    "i915 0000:00:02.0: Failed to initialize " + "t" * 100_000 + "! (-5)",
    "kernel version " + "5" * 100_000 + " does not match DSO version 1 -- cannot find working devices",
    "amdgpu 0000:c1:00.0: firmware: failed to load amdgpu/" + "p" * 100_000 + "_sos.bin (-2)",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=JOB_FAULTS + DAEMON_FAULTS,
                             twins=KERNEL_TWINS + JOB_NOTES, not_kernels=ECHOED, unread=("rules14_", HOSTILE)))
