"""Round 11's printers (rules11-gpuinit), from their format strings: a GPU node whose GPUs, driver or GPU software stack
do not come up or cannot be reached, as nvidia-persistenced, systemd's units and modules-load, the kernel's module
loader, DKMS and nvidia-installer, nvidia-smi's device-handle failures, DCGM's nv-hostengine, nvidia-container-toolkit,
the Kubernetes device plugin, the GPU operator's validator, the MIG manager, amdgpu/amdkfd, rocm-smi and HIP print it,
which tests/data/kernel/printers/gpuinit2.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (NVIDIA/nvidia-persistenced
595.71.05, NVIDIA/nvidia-container-toolkit, NVIDIA/k8s-device-plugin, NVIDIA/gpu-operator's nvidia-validator,
NVIDIA/mig-parted, DCGM's hostengine main.cpp, dkms 3.0, systemd 252, Linux 6.1, ROCm's rocm_smi.py and HIP) with its
conversions filled in by hand, not a line copied from a log or from the field corpus. The printer file checks the kind;
this file checks what it cannot: the severity, the trust (a daemon's, tool's or job's line never drains; the kernel's
own is trust kernel and no node fault), the placed-earlier rules' boundaries with the rules they stand before, the
notes that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

KLOG = "E1126 06:14:02.119220       1 "
LOGRUS = 'time="2026-11-26T06:15:02Z" '

KERNEL_FAULTS = [
    # kernel/module/signing.c module_sig_check() pr_notice("Loading of %s is rejected\n"); main.c check_modinfo()
    ("Loading of unsigned module is rejected", "gpu_init", "error"),
    ("Loading of module with unavailable key is rejected", "gpu_init", "error"),
    # security/lockdown/lockdown.c "Lockdown: %s: %s is restricted; see man kernel_lockdown.7"
    ("Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7", "gpu_init", "error"),
    ("nvidia: version magic '6.8.0-40-generic SMP preempt mod_unload modversions ' should be '6.8.0-45-generic SMP "
     "preempt mod_unload modversions '", "gpu_init", "error"),
    # amdgpu_psp.c DRM_ERROR("PSP load tmr failed!\n"); amdkfd kfd_device.c kgd2kfd_device_init()
    ("[drm:psp_hw_start [amdgpu]] *ERROR* PSP load tmr failed!", "gpu_init", "error"),
    ("[drm:psp_hw_init [amdgpu]] *ERROR* PSP firmware loading failed", "gpu_init", "error"),
    ("kfd kfd: amdgpu: device 1002:740c NOT added due to errors", "gpu_init", "error"),
    ("kfd kfd: amdgpu: Error initializing iommuv2", "gpu_init", "error"),
    # firmware_loader "Direct firmware load for %s failed with error %d" for amdgpu's required blobs
    ("amdgpu 0000:c1:00.0: Direct firmware load for amdgpu/aldebaran_sos.bin failed with error -2", "gpu_init",
     "error"),
]

DAEMON_FAULTS = [
    # nvidia-persistenced.c: setup_rpc(), and the UVM persistence warning when the NVLink fabric is not ready
    ("Nov 26 06:12:02 gpu-node07 nvidia-persistenced[1873]: Failed to start local RPC service", "gpu_init", "warning"),
    ("Nov 26 06:12:02 gpu-node07 nvidia-persistenced[1873]: device 0000:18:00.0 - Could not Enable UVM Persistence "
     "mode becausethe NVLink fabric is not ready: 0x73", "fabric_manager", "warning"),
    # systemd 252's "Failed to start %s - %s." and "Control process exited"
    ("Nov 26 06:12:09 gpu-node07 systemd[1]: Failed to start nvidia-fabricmanager.service - NVIDIA fabric manager "
     "service.", "fabric_manager", "critical"),
    ("Nov 26 06:12:01 gpu-node07 systemd[1]: Failed to start nvidia-persistenced.service - NVIDIA Persistence Daemon.",
     "gpu_init", "warning"),
    ("Nov 26 06:12:01 gpu-node07 systemd[1]: nvidia-dcgm.service: Control process exited, code=exited, "
     "status=1/FAILURE", "gpu_init", "warning"),
    # systemd-modules-load's "Failed to insert module '%s': %m" / "Failed to find module '%s'"
    ("Nov 26 06:11:58 gpu-node07 systemd-modules-load[612]: Failed to insert module 'nvidia': Key was rejected by "
     "service", "gpu_init", "warning"),
    ("Nov 26 06:11:58 gpu-node07 systemd-modules-load[612]: Failed to find module 'nvidia-uvm'", "gpu_init", "warning"),
    # kmod's insmod: "could not insert module %s: %s"
    ("insmod: ERROR: could not insert module nvidia.ko: Key was rejected by service", "gpu_init", "warning"),
    # dkms 3.0 and nvidia-installer
    ("Error! Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)", "gpu_init", "warning"),
    ("Consult /var/lib/dkms/nvidia/550.54.14/build/make.log for more information.", "gpu_init", "warning"),
    ("Nov 26 06:10:44 gpu-node07 dkms[702]: Autoinstall on 6.8.0-45-generic failed for module(s) nvidia(10).",
     "gpu_init", "warning"),
    ("Building module(s).....(bad exit status: 2)", "gpu_init", "warning"),
    ('ERROR: An error occurred while performing the step: "Building kernel modules". See /var/log/nvidia-installer.log '
     "for details.", "gpu_init", "warning"),
    # nvidia-smi's device-handle failure for a reason that is not a lost GPU (placed before gpu_lost_text)
    ("Unable to determine the device handle for GPU0000:41:00.0: Insufficient External Power", "gpu_init", "warning"),
    ("Unable to determine the device handle for gpu 0000:41:00.0: Not Found", "gpu_init", "warning"),
    ("Unable to determine the device handle for GPU0000:41:00.0: Timeout", "gpu_init", "warning"),
    # DCGM hostengine main.cpp
    ("Err: Failed to start DCGM Server: -7", "gpu_init", "warning"),
    ("Nov 26 06:12:11 gpu-node07 nv-hostengine: Err: Failed to start DCGM Server", "gpu_init", "warning"),
    ('time="2026-11-26T06:18:27Z" level=info msg="Not collecting GPU metrics; Error getting devices count: Cannot '
     'perform the requested operation because NVML doesn\'t exist on this system."', "gpu_init", "warning"),
    # nvidia-ctk
    ("ERRO[0000] failed to generate CDI spec: failed to create device CDI specs: failed to construct device spec "
     "generators: failed to get device handle from index: ERROR_UNKNOWN", "gpu_init", "warning"),
    ("ERRO[0000] failed to create NVIDIA device nodes: failed to create device node /dev/nvidia-uvm: missing required "
     "device major nvidia-uvm", "gpu_init", "warning"),
    # k8s-device-plugin (klog)
    (KLOG + "server.go:131] Could not register device plugin: rpc error: code = Unavailable desc = connection error",
     "gpu_init", "warning"),
    ("F1126 06:14:02.119301       1 server.go:192] GRPC server for 'nvidia.com/gpu' has repeatedly crashed recently. "
     "Quitting", "gpu_init", "warning"),
    ("I1126 06:14:02.119601       1 server.go:265] 'nvidia.com/gpu' device marked unhealthy: "
     "GPU-8e0b6c6a-3f1e-4a6e-9f0a-1c2d3e4f5a6b", "gpu_init", "warning"),
    ("I1126 06:14:02.119401       1 health.go:160] unable to get device handle from UUID: Unknown Error; marking it "
     "as unhealthy", "gpu_init", "warning"),
    # gpu-operator nvidia-validator
    (LOGRUS + 'level=info msg="Error: error validating toolkit installation: exit status 1"', "gpu_init", "warning"),
    (LOGRUS + 'level=error msg="driver is not ready: nvidia driver is not loaded"', "gpu_init", "warning"),
    (LOGRUS + 'level=info msg="Error: error validating plugin installation: GPU resources are not discovered by the '
     'node"', "gpu_init", "warning"),
    # mig-parted
    ("Error applying MIG configuration with hooks", "gpu_init", "warning"),
    ("Error issuing GPU reset", "gpu_init", "warning"),
    ('time="2026-11-26T06:16:02Z" level=error msg="Error clearing MIG config on GPU 3, erroneous devices may persist"',
     "gpu_init", "warning"),
    # rocm_smi.py
    ("ERROR:root:ROCm SMI returned 8 (the expected value is 0)", "gpu_init", "warning"),
    ("WARNING: No AMD GPUs specified", "gpu_init", "warning"),
]

JOB_FAULTS = [
    # HIP's hipErrorNoDevice as an application prints it
    ("RuntimeError: HIP error: no ROCm-capable device is detected", "cuda", "error"),
    ("hipGetDeviceCount failed: hipErrorNoDevice", "cuda", "error"),
]

TWINS = [
    "Nov 26 06:12:01 gpu-node07 nvidia-persistenced[1873]: Started (1873)",
    "Nov 26 06:12:02 gpu-node07 nvidia-persistenced[1873]: device 0000:18:00.0 - Enabled UVM Persistence mode.",
    "Nov 26 06:12:01 gpu-node07 systemd[1]: Started nvidia-persistenced.service - NVIDIA Persistence Daemon.",
    "Nov 26 06:12:09 gpu-node07 systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric manager service.",
    "[    5.118402] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "[    5.118403] nvidia: module license 'NVIDIA' taints kernel.",
    "Building module(s)........... done.",
    "Running module version sanity check.",
    "Unable to set persistence mode for GPU 00000000:41:00.0: Insufficient Permissions",
    "Host engine already running with pid 2231",
    "I1126 06:14:02.118403       1 server.go:176] Registered device plugin for 'nvidia.com/gpu' with Kubelet",
    'time="2026-11-26T06:15:02Z" level=info msg="Detected a pre-installed driver on the host"',
    "No nvidia module loaded, skipping MIG device config",
    'time="2026-11-26T06:16:02Z" level=info msg="Successfully updated to MIG config: all-1g.10gb"',
    "[    6.202218] kfd kfd: amdgpu: added device 1002:740c",
    "[    6.100118] [drm] amdgpu kernel modesetting enabled.",
    "[    5.118401] nvidia: loading out-of-tree module taints kernel.",
    "[    0.000000] Kernel is locked down from EFI Secure Boot mode; see man kernel_lockdown.7",
    "brcmfmac mmc1:0001:1: Direct firmware load for brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.bin failed with "
    "error -2",
    "============================ ROCm System Management Interface ============================",
]


READ_BY_RULE = [
    # the placed-earlier rules leave their neighbours' lines alone: a lost GPU stays gpu_lost_text's (xid 79), any
    # other UVM persistence failure stays nvidia_persistenced's, an optional firmware name stays ignored
    ("Unable to determine the device handle for GPU0000:41:00.0: Unknown Error", "rules11_gpuinit_smi_handle_reason"),
    ("Unable to determine the device handle for GPU0000:41:00.0: GPU is lost.  Reboot the system to recover this GPU",
     "gpu_lost_text"),
    ("Unable to determine the device handle for GPU0000:3B:00.0: Corrupted infoROM", "gpu_lost_text"),
    ("nvidia-persistenced[1873]: device 0000:18:00.0 - Could not Enable UVM Persistence mode : 0x56",
     "nvidia_persistenced"),
]


def test_an_optional_amdgpu_blob_is_not_a_required_one() -> None:
    # only the PSP, graphics-engine, SDMA, SMU and gpu_info blobs are read as required
    line = "amdgpu 0000:c1:00.0: Direct firmware load for amdgpu/navi31_vcn_extra.bin failed with error -2"
    rules = {f.details.get("rule") for f in diagnose(line.encode())}
    assert "rules11_gpuinit_amdgpu_firmware" not in rules


ECHOED = [
    "python3: saw 'Loading of unsigned module is rejected' in dmesg",
    "myjob: kfd kfd: amdgpu: device 1002:740c NOT added due to errors",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "Unable to determine the device handle for GPU0000:41:00.0: " + "Not " * 30_000,
    "nvidia: version magic '" + "x" * 100_000 + " should be",
    "[drm:psp_hw_start [amdgpu]] *ERROR* PSP " + "load " * 20_000 + "fine",
    "Building module(s)" + "." * 100_000 + "done",
    "insmod: ERROR: could not insert module " + "/" * 100_000 + "nvidia.ko",
    "I1126 1 health.go:160] unable to get device handle from UUID: " + "x" * 100_000 + "; marking it",
    "Consult /var/lib/dkms/" + "a" * 100_000 + "/build/make.log for more information",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=DAEMON_FAULTS + JOB_FAULTS, twins=TWINS,
                             not_kernels=ECHOED, rules=READ_BY_RULE, unread=("rules11_gpuinit_", HOSTILE)))
