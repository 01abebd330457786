"""Round 20's rules from the rules halves' misses (lead20_* in slurmtools/data/diagnosis_rules.toml): each family's
lines in words the collections' rows do not quote (other devices, drivers, values), the benign twins of the same
printers, and the trust that keeps a job's or a tool's line from draining a node. The collections' own rows are scored
by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # accelerators that do not come up: a probe that fails, firmware, AtomBIOS, modules the kernel refuses
    ("amdxdna 0000:c5:00.1: probe with driver amdxdna failed with error -110", "gpu_init", "error"),
    ("i915 0000:00:02.0: probe with driver i915 failed with error -5", "gpu_init", "error"),
    ("habanalabs 0000:33:00.0: Failed to request firmware: -2", "gpu_init", "error"),
    ("[drm:amdgpu_atom_execute_table_locked [amdgpu]] *ERROR* atombios stuck executing B24C (len 62, WS 0, PS 0) "
     "@ 0xB268", "gpu_init", "error"),
    ("gdrdrv: module using GPL-only symbols uses symbols from proprietary module nvidia.", "gpu_init", "error"),
    ("xe: Unknown symbol drm_gpuvm_init (err -2)", "gpu_init", "error"),
    # filesystems and storage
    ("nfs41_handle_sequence_flag_errors: \"nfs-server-2\" (client ID 0a1b2c3d4e5f6071) flags=0x00000040", "nfs",
     "warning"),
    ("exFAT-fs (sdb1): failed to read boot sector", "disk", "warning"),
    ("ses 2:0:31:0: Failed to get diagnostic page 0x2", "disk", "warning"),
    ("sd 3:0:0:0: [sdc] tag#12 Add. Sense: Unaligned write command", "disk", "warning"),
    ("ses 1:0:24:0: tag#3 Done: NEEDS_RETRY Result: hostbyte=DID_TIME_OUT driverbyte=DRIVER_OK cmd_age=30s", "disk",
     "warning"),
    # firmware a GPU's or a NIC's driver requires
    ("amdgpu 0000:83:00.0: Direct firmware load for amdgpu/vcn_4_0_3.bin failed with error -2", "gpu_init", "warning"),
    ("qed 0000:3b:00.0: Direct firmware load for qed/qed_init_values_zipped-8.59.1.0.bin failed with error -2", "ib",
     "warning"),
    ("sas: Enter sas_scsi_recover_host busy: 2 failed: 2", "disk", "warning"),
    ("EXT4-fs warning (device sdb1): ext4_dx_add_entry:2513: Directory (ino: 1441793) index full, reach max htree "
     "level :2", "disk", "warning"),
    ("sd 2:0:1:0: [sdc] tag#88 Done: SUCCESS Result: hostbyte=DID_TARGET_FAILURE driverbyte=DRIVER_OK cmd_age=0s",
     "disk", "warning"),
    ("nvme nvme3: invalid id 12 completed on queue 7", "disk", "warning"),
    ("pcieport 0000:00:1c.4: Refused to change power state, currently in D3", "pcie", "warning"),
    # NICs
    ("ena 0000:00:06.0 ens6: Trigger reset is on", "ib", "warning"),
    # other GPUs' drivers: a hang's coredump, a lockup's context reset
    ("amdgpu 0000:c1:00.0: [drm] AMDGPU device coredump file has been created", "gpu_init", "warning"),
    ("MTGPU:(Error): 11:  PID 4242 experienced error Innocent Lockup (0x2) caller[CheckFWCCB] [188]", "cuda",
     "warning"),
]
OTHER_FAULTS = [
    # tools and programs that find a GPU or accelerator absent
    ("cat: /sys/module/nvidia/refcnt: No such file or directory", "gpu_init", "warning"),
    ("  *-display:1 UNCLAIMED", "gpu_init", "warning"),
    ("41:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev ff)", "gpu_init", "warning"),
    ("Failed to open device /dev/accel/accel0", "gpu_init", "warning"),
    ("OSError: [Errno 19] No such device: '/dev/nvidia3'", "gpu_init", "warning"),
    # shared filesystems
    ("2024-01-02 03:04:05.678 7f00aa  0 -- 10.0.0.5:0/42 >> 10.0.0.9:6789/0 pipe(0x1 sd=4 :1 s=1 pgs=0 cs=0 l=1 "
     "c=0x2).connect protocol feature mismatch, my 3ffddff8ffacfffb < peer 3ffddff8ffecfffb missing 400000000000",
     "nfs", "error"),
    ("E [fuse-bridge.c:2160:fuse_readv_cbk] 0-glusterfs-fuse: 88: READ => -1 (Input/output error)", "nfs", "warning"),
    ("W [dht-common.c:1120:dht_lookup_cbk] 0-vol0-dht: no subvolumes up", "nfs", "warning"),
    ("Warning: failed to access http://cvmfs-s1.example.org/cvmfs/sft.cern.ch/.cvmfspublished through proxy "
     "http://squid1:3128", "nfs", "warning"),
    ("Oct  1 02:03:04 wn17 cvmfs2[4242]: (sft.cern.ch) switching host from http://s1a/cvmfs/sft.cern.ch to "
     "http://s1b/cvmfs/sft.cern.ch (host returned HTTP error)", "nfs", "warning"),
    # fabric tools
    ("S0c42a10300ab12cd/N0c42a10300ab12cd/P7 - \"port_rcv_errors\" increased during the run (difference value=15, "
     "difference allowed threshold=1)", "ib", "warning"),
    ("gpu-a07/mlx5_2/B7D0F0/0/0 - No response for MAD PortInfo", "ib", "warning"),
    ("S0c42a10300ab12cd/P22 - Cable High Temperature Warning reported, current temperature: 71C, threshold: 70C",
     "thermal", "warning"),
    ("ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:3 IMEX daemon status is -1 (not READY)", "fabric_manager", "warning"),
    # thermal and BMC tools
    ("Device: /dev/sdd [SAT], Failed SMART usage Attribute: 194 Temperature_Celsius.", "thermal", "warning"),
    ("Warn: GPU throttled below threshold (1150.00 MHz / 1980.00 MHz) (58% < 75%) on sample 3.", "thermal", "warning"),
    ("WARNING - fan 2 (cpu) needs attention, System: 'proliant dl385 gen10'", "thermal", "warning"),
    ("CRITICAL - cpu 2 needs attention (disabled), System: 'proliant dl380 gen10'", "mce", "warning"),
    ("FAN3 A: 0 RPM", "thermal", "warning"),
    ("Disk 0:1:3 in Enclosure 1 on Connector 0 of PERC H730P Controller in Slot 3 was reset.", "disk", "warning"),
    # programs that find no NVIDIA GPU
    ("[install] No NVIDIA GPUs were found on this host", "gpu_init", "warning"),
    ("level=WARN msg=\"cuInit error: 100\"", "gpu_init", "warning"),
    # accelerator runtimes in jobs: Ascend (CANN, torch_npu, MindSpore), Kunlun XPU, TPU, Tenstorrent
    ("EE1001: [PID: 4242] 2025-01-02-03:04:05.678.901 The argument is invalid.", "cuda", "error"),
    ("[PID: 4242] 2025-01-02-03:04:05.678.901 Device_Absent/Abnormal(EL0002): Device is not available.", "cuda",
     "error"),
    ("    rtStreamSynchronize execution failed, reason=task timeout[FUNC:FuncErrorReason][FILE:x.cc][LINE:53]", "cuda",
     "error"),
    ("[ERROR] 2025-01-02-03:04:05 (PID:77, Device:0, RankID:3) ERR01003 OPS internal error", "cuda", "error"),
    ("[ERROR] 2025-01-02-03:04:05 (PID:77, Device:0, RankID:3) ERR02002 DIST invalid type", "nccl", "error"),
    ("launch failed for MatMul, errno:561103.", "cuda", "error"),
    ("ExternalError: XPU api return wrong value[3 xpu api no enough workspace]", "cuda", "error"),
    ("UserWarning: cloud_tpu_init failed: RuntimeError('libtpu not found')", "cuda", "warning"),
    ("GPU[3]\t\t: Unable to determine current clocks. Check dmesg or GPU temperature", "gpu_init", "warning"),
    ("Job exceeded a memory resource limit (vmem, pvmem, etc.). Job was aborted", "oom", "error"),
    ("    exitcode  : -9 (pid: 77)", "oom", "warning"),
    # virtual machines: vGPU licences, PCI pass-through, Azure's accelerated networking
    ("Mar  3 10:00:00 g1 nvidia-gridd[811]: Failed to acquire/renew license from license server. (Info: x)", "gpu_init",
     "warning"),
    ("    License Status                    : Unlicensed (Restricted)", "gpu_init", "warning"),
    ("qemu-system-x86_64: -device vfio-pci,host=0000:41:00.0,id=hostpci0: vfio 0000:41:00.0: group 25 is not viable",
     "gpu_init", "warning"),
    # jobs
    ("2023-01-02 03:04:05.678901: E tensorflow/stream_executor/stream.cc:2041] attempting to perform BLAS operation "
     "using StreamExecutor without BLAS support", "cuda", "error"),
]
INFO = [
    ("hv_netvsc 6045bd12-3456-6045-bd12-34566045bd12 eth1: VF slot 2 removed", "ib"),
    ("scsi_io_completion_action: 12 callbacks suppressed", "disk"),
    ("HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect.", "cuda"),
    ("[gpu-12:77123] Signal: Segmentation fault (11)", "segfault"),
    ("run.sh: line 12: 40404 Bus error               python train.py", "segfault"),
    ("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", "segfault"),
]
TWINS = [
    # the same printers' healthy lines
    "nvidia-gpu 0000:09:00.3: Refused to change power state, currently in D3",
    "cat: /sys/module/nvidia/parameters/NVreg_EnableGpuFirmware: No such file or directory",
    "smartd[811]: Device: /dev/sda [SAT], SMART Usage Attribute: 194 Temperature_Celsius changed from 42 to 44",
    "hv_netvsc 6045bd12-3456-6045-bd12-34566045bd12 eth1: Data path switched to VF: enP2p0s2",
    "    License Status                    : Licensed (Expiry: 2026-12-1 0:0:0 GMT)",
    "mpt3sas_cm1: host reset: SUCCESS",
    "sas: Enter sas_scsi_recover_host busy: 0 failed: 0",
    "mpt3sas_cm0: diag reset: SUCCESS",
    "  *-display",
    "41:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)",
    "FAN1: 5400 RPM",
    "OK - System: 'proliant dl380 gen10', S/N: 'CZ0000', ROM: 'U30 v2.42', hardware working fine",
    "iwlwifi 0000:00:14.3: Direct firmware load for iwlwifi-so-a0-gf-a0-86.ucode failed with error -2",
    "collector failed: error obtaining NVMe class info: no such file or directory",
]

# the accelerator runtimes' fallback (data/subsystems.toml accel-runtimes) with round 20's tags: a failure word on
# a line no rule claims, trust job
FALLBACK = [
    ("musaMemcpyAsync returned error 3 while copying the batch", "cuda"),
    ("cnnlMatMul failed with CNNL_STATUS_EXECUTION_FAILED at step 40", "cuda"),
    ("TT_THROW @ tt_metal/impl/dispatch/command_queue.cpp:77: tt::exception: fetch queue wait failed", "cuda"),
    ("rtStreamSynchronize returned an error: 507035", "cuda"),
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, info=INFO, fallback=FALLBACK,
                             twins=TWINS))
