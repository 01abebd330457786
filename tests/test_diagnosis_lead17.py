"""Round 17's rules from the rules halves' misses (lead17_* in slurmtools/data/diagnosis_rules.toml; Facebook
OpenBMC's SEL deassertion in sel_deasserted; CIFS's older NT_STATUS_ names): each family's lines in words the
collections' rows do not quote (other devices, codes, units and values), the benign twins of the same printers, and the
trust that keeps a job's, a tool's or a BMC's line from draining a node. The collections' own rows are scored by
tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # WSL's GPU paravirtualization
    ("misc dxg: dxgk: dxgkio_create_allocation: Ioctl failed: -12", "gpu_init", "warning"),
    ("dxgk:err: dxgvmb_send_sync_msg failed -110", "gpu_init", "warning"),
    # other GPU drivers' words without a failure word
    ("nouveau 0000:3b:00.0: sec2: firmware unavailable", "gpu_init", "warning"),
    ("amdgpu 0000:83:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00101A30", "gpu_init", "warning"),
    ("xe 0000:03:00.0: [drm] *ERROR* GT1: CT: No response for request 0x5503 (fence 4242)", "gpu_init", "warning"),
    ("i915 0000:4d:00.0: [drm] tlb invalidation response timed out for seqno 812", "gpu_init", "warning"),
    # local storage
    ("bcache: bch_cache_set_error() CACHE_SET_IO_ERROR: error on 4b6c2a7e: bad btree header at bucket 1208", "disk",
     "warning"),
    ("bcache: prio_read() bad csum reading priorities", "disk", "warning"),
    ("NILFS error (device sdc1): nilfs_btree_do_lookup: btree level mismatch (ino=88, expected=1, actual=2)", "disk",
     "warning"),
    ("NILFS-fs error (device sdd1): nilfs_check_folio: bad entry in directory #40", "disk", "warning"),
    ("overlayfs: failed to lookup upper dir (-5)", "disk", "warning"),
    ("F2FS-fs (sdb1): Magic Mismatch, valid(0xf2f52010) - read(0x0)", "disk", "warning"),
    ("ata9.00: REQUEST SENSE err_mask=0x4 sense_key=3", "disk", "warning"),
    ("[drm] psp command (0x22) failed and response status is (0xFFFF0007)", "gpu_init", "warning"),
    ("kworker/3:1: vmemmap alloc failure: order:9, mode:0x4cc0(GFP_KERNEL|__GFP_RETRY_MAYFAIL), nodemask=(null)", "oom",
     "warning"),
    ("Page cache invalidation failure on direct I/O.  Possible data corruption due to collision with buffered I/O!",
     "disk", "warning"),
]
OTHER_FAULTS = [
    # hypervisors, container runtimes and installers that cannot bring a GPU up
    ("nvidia-vgpu-mgr[7201]: Parameters size for NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION was 64 bytes, "
     "expected 48 bytes", "gpu_init", "warning"),
    ("[nvidia-vgpu-vfio] 3f0c5f3a-1b0e-4d8c-9a63-5f2d0e6c7a11: open failed. status: 0x3", "gpu_init", "warning"),
    ("Verify all devices in group 17 are bound to vfio-<bus> or pci-stub and not already in use", "gpu_init",
     "warning"),
    ('docker: Error response from daemon: could not select device driver "nvidia" with capabilities: [[compute]].',
     "gpu_init", "warning"),
    ("NVML: also try adding the directory that contains libnvidia-ml.so to LD_LIBRARY_PATH", "gpu_init", "warning"),
    ("modprobe: libkmod: ERROR could not find module by name='nvidia_uvm'", "gpu_init", "warning"),
    # other accelerators' devices and runtimes
    ("nrtd[42]: [NRTD:InitDevices] Failed to initialize devices, error:5", "gpu_init", "warning"),
    ("ERROR:root:AMDSMI Error: AMDSMI_STATUS_NO_PERM: Permission denied", "gpu_init", "warning"),
    ("Timed out waiting for ETH heartbeat on core (x=2,y=7) to advance.", "gpu_init", "warning"),
    ("RuntimeError: XPU out of memory. Tried to allocate 512.00 MiB (GPU 1; 47.98 GiB total capacity)", "cuda",
     "warning"),
    ("RuntimeError: Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", "cuda",
     "warning"),
    ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate 9.50G. That was not possible.", "cuda",
     "warning"),
    ("2025-Jan-02 03:04:05.678901  811:822  ERROR  NRT:nrt_load  Failure: NRT_RESOURCE in nrt_load()", "cuda",
     "warning"),
    ("RuntimeError: ACL device synchronize failed.", "cuda", "warning"),
    ("[cnrtError] [4242] [Card : 3] cnrtMemcpy: device memory is not enough.", "cuda", "warning"),
    ("terminate called after throwing an instance of 'c10::AcceleratorError'", "cuda", "warning"),
    # collectives
    ("2025-Feb-03 04:05:06.0708 811:833 [4] net.cc:212 CCOM WARN Timeout waiting for RX (waited 60 sec)", "nccl",
     "warning"),
    ("[Proxy Service 12] Failed to execute operation Connect from rank 12, retcode 6", "nccl", "warning"),
    ("NCCL WARN Bootstrap : no socket interface found", "nccl", "error"),
    # crashes
    ("RuntimeError: DataLoader worker (pid(s) 88) exited unexpectedly", "segfault", "info"),
    ("train.py: malloc.c:2617: sysmalloc: Assertion `(old_top == initial_top (av) && old_size == 0)' failed.",
     "segfault", "info"),
    ("     Active: failed (Result: core-dump) since Tue 2025-03-04 05:06:07 UTC; 3min ago", "segfault", "info"),
    ("[2025-02-03 04:05:06.070] [kv] [info] Interrupt signal (6) received.", "segfault", "info"),
    ("    Signal: 8 (Floating point exception)", "segfault", "info"),
    ("collector[77]: panic: runtime error: invalid memory address or nil pointer dereference", "segfault", "info"),
    # TensorRT's CUDA errors (before gpfs_error's "[E] ... Error")
    ("[03/04/2025-05:06:07] [E] Error[1]: [convRunner.cpp::execute::90] Error Code 1: Myelin (Final synchronize "
     "failed (719))", "cuda", "warning"),
    ("[TensorRT] ERROR: ../rtSafe/cuda/softmax.cu (88) - Cuda Error in softmaxKernel: 98 (invalid device function)",
     "cuda", "warning"),
    # KV-cache transfers over RDMA, Open MPI's openib help
    ("NIXL Xfer failed with status: NIXL_ERR_REMOTE_DISCONNECT", "ib", "warning"),
    ("  Failed to create a queue pair (QP):", "ib", "warning"),
    # smartctl, and a node without nvidia-smi
    ("  SenseData Key-Asc-Ascq: 03-11-04 = MEDIUM_ERROR - UNRECOVERED READ ERROR - AUTO REALLOCATE FAILED", "disk",
     "warning"),
    ('            "string": "Completed: read failure",', "disk", "warning"),
    ("/bin/bash: line 1: nvidia-smi: command not found", "gpu_init", "warning"),
    # RDMA applications
    ("[3] DAPL startup: RLIMIT_MEMLOCK too small", "ib", "warning"),
    ("Abort(1) on node 7 (rank 7 in comm 0): Fatal error in internal_Recv: Other MPI error, error stack:", "ib",
     "warning"),
    ("du: cannot access '/mnt/bucket/data': Transport endpoint is not connected", "nfs", "warning"),
    ("Libfabric error: (-61) No data available", "ib", "warning"),
    ("[0003]        Transport init failed (-22)", "ib", "warning"),
    ("E0102 03:04:05.060708 411 rdma_context.cpp:222] Failed to register memory 0x7f11aa000000: Bad address [14]", "ib",
     "warning"),
    ("W0102 03:04:05.06 411 rdma_transport.cpp:400] RdmaTransport: Failed to register memory: addr 0x7f00 length 4096",
     "ib", "warning"),
    ("Warning: no habanalabs network interfaces were detected", "ib", "warning"),
    # shared storage in user space
    ("01/02-03:04:05.06 io17 DAOS[811/822/0] hg   ERR  src/cart/crt_hg.c:1400 crt_hg_req_send_cb() RPC failed", "nfs",
     "warning"),
    ("mount: 10.1.2.3:6789,10.1.2.4:6789:/: can't read superblock", "nfs", "warning"),
    ("IOC_LIBCFS_GET_NET error 3: No such process", "nfs", "warning"),
    ("2025/01/02 03:04:05.060708 juicefs[811] <ERROR>: write inode:42 indx:0  input/output error", "nfs", "warning"),
    ("Mar  3 03:03:03 n7 systemd[1]: nfs-mountd.service: Main process exited, code=exited, status=1/FAILURE", "nfs",
     "warning"),
    ("Performing cleanup for failed iSCSI Connection ID: 2 from iqn.1993-08.org.debian:01:abcdef", "nfs", "warning"),
    ("fstrim[77]: fstrim: /var: FITRIM ioctl failed: Input/output error", "disk", "warning"),
    # the platform: BMCs, switches and their tools
    ("SEL Entry: FRU: 4, Record: Standard (0x02), Time: 2025-01-02 03:04:05, Sensor: CPU1_THERM_STATUS (0x1D), "
     "Event Data: (02FFFF) TCC Activation Assertion", "thermal", "warning"),
    ("SEL Entry: FRU: 1, Record: Standard (0x02), Time: 2025-01-02 03:04:05, Sensor: VR_HOT (0x70), "
     "Event Data: (020100) PVCCIN_CPU1 page0 status(0x0040) Assertion", "thermal", "warning"),
    ("Assertion Event: Lower Non-recoverable - going low ; Threshold = 0.00 RPM", "thermal", "warning"),
    ("Mar 04 05:06:07 bmc phosphor-fan-monitor[902]: Fan /system/chassis/motherboard/fan3 is missing", "thermal",
     "warning"),
    ("PSU1 STATUS_WORD 0x2842: VOUT_OV_FAULT", "thermal", "warning"),
    ("Apr  4 04:04:04  ex4300 chassisd[1500]: CHASSISD_FAN_FAILED: Fan Tray 0 Fan 2 failed", "thermal", "warning"),
    ("2025 Feb  1 01:02:03.456 sonic WARNING pmon#psud: PSU current warning: PSU 2 current over threshold", "thermal",
     "warning"),
    ("Critical,901,1234,0x0002,Power,0x0017,Hardware,03/04/2025 05:06:07,Power Supply Failure (Power Supply 2)",
     "thermal", "warning"),
    ("  12  4411      311        1 PowerDownAt(0x1a2b3c)", "thermal", "warning"),
    ("2025-01-02 03:04:05.678; ENC_MGT; env_control; 02; Fan 3 Fault ON", "thermal", "warning"),
    ("in2:          3.01 V  (min =  +3.14 V, max =  +3.46 V)  ALARM", "thermal", "warning"),
    ("SEL Entry: FRU: 2, Record: Facebook Unified SEL (0xFB), GeneralInfo: POST(0x28), POST Failure Event: "
     "System PXE boot fail", "mce", "warning"),
    ("SEL Entry: FRU: 1, Record: Facebook Unified SEL (0xFB), GeneralInfo: MemErr(0x2B), Memory ECC Error Event: "
     "DIMM B0", "mce", "warning"),
    ("SEL Entry: FRU: 3, Record: Facebook Unified SEL (0xFB), GeneralInfo: x86/PCIeErr(0x20), Bus 5E/Dev 00/Fun 00, "
     "TotalErrID1Cnt: 0x0003", "aer", "warning"),
]
TWINS = [
    "SEL Entry: FRU: 1, Record: Standard (0x02), Time: 2025-01-02 03:04:05, Sensor: CPU0_THERM_STATUS (0x1C), "
    "Event Data: (02FFFF) TCC Activation Deassertion",
    "SEL Entry: FRU: 2, Record: Standard (0x02), Time: 2025-01-02 03:04:05, Sensor: SYSTEM_STATUS (0x10), "
    "Event Data: (10FFFF) FM_Throttle throttle Deassertion",
    "2026 Jan  2 03:04:05.678 sonic NOTICE pmon#thermalctld: Fan fault warning cleared: fan5 is back to normal",
    "2026 Jan  2 03:04:05.678 sonic NOTICE pmon#psud: Power absence warning cleared: PSU 4 power is back.",
    "2022/04/13 11:22:18.809752 juicefs[811] <WARNING>: AOF is not enabled, you may lose data if Redis is not shutdown "
    "properly. [info.go:83]",
    "amdgpu 0000:83:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00000000",
    "nouveau 0000:3b:00.0: DRM: VRAM: 8192 MiB",
    "bcache: register_bdev() registered backing device nvme1n1",
    "bcache: register_bcache() error : device already registered (emitting change event)",
    "NILFS (sdc1): segctord starting. Construction interval = 5 seconds, CP frequency < 30 seconds",
    "F2FS-fs (sdb1): Mounted with checkpoint version = 3c1d",
    "nrtd[42]: [NRTD:main] Neuron runtime daemon started",
    "Mar 04 05:06:07 bmc phosphor-fan-monitor[902]: Fan /system/chassis/motherboard/fan3 is present",
    "PSU1 STATUS_WORD 0x0000",
    "ata9.00: REQUEST SENSE err_mask=0x0",
    "[Proxy Service 12] Starting proxy",
    "Device Error Count: 0",
    "EDAC amd64: Error: F3 not found: device 0x1603 (broken BIOS?)",
    "NIXL_SUCCESS",
    "rasdaemon's table: 3 2025-01-02 03:04:05 +0000 0000:5e:00.0 Corrected error: Receiver Error",
    "[03/04/2025-05:06:07] [I] [TRT] Loaded engine size: 812 MiB",
    "Abort(470406661) on node 2 (rank 2 in comm 0): Fatal error in PMPI_Send: Invalid tag, error stack:",
    "Jul 25 23:23:13 gw ftpd[811]: getpeername (ftpd): Transport endpoint is not connected",
    # lm-sensors' ALARM against limits never set (min and max zero); the same chip past real limits is still found
    "in4:          1.52 V  (min =  +0.00 V, max =  +0.00 V)  ALARM",
    "in0:                    880.00 mV (min =  +0.00 V, max =  +0.00 V)  ALARM",
    "fstrim[77]: /scratch: 1.2 TiB (1319413953331 bytes) trimmed on /dev/nvme0n1p1",
]

# the other accelerators' runtimes and device tools as libraries a job prints (data/subsystems.toml accel-runtimes,
# accel-tools): a failure word no rule claims is the subsystem fallback's warning; their info lines stay silent
# rasdaemon's corrected AER row is aer at info (not a machine check)
INFO = [("3 2025-01-02 03:04:05 +0000 0000:5e:00.0 Corrected error: Receiver Error", "aer")]
ACCEL_FALLBACK = [
    ("zeCommandQueueExecuteCommandLists failed: the device stopped responding", "cuda"),
    ("hsa_signal_wait_scacquire returned an unexpected failure on queue 3", "cuda"),
    ("[rank2]: HPU graph replay failed on device 2", "cuda"),
    ("poplar: stream copy failed on tile 1211", "cuda"),
    ("hl-smi: failed to query device 5 (busy)", "gpu_init"),
    ("amd-smi: could not open /dev/kfd: No such file or directory, failed", "gpu_init"),
]
ACCEL_TWINS = [
    "XLA service 0x55d0c0 initialized for platform CUDA (this does not guarantee that XLA will be used).",
    "I0102 03:04:05.060708  811 tpu_client.cc:52] TPU client started; no error",
    "[rank0]: NPU memory summary: 0 failed allocations",
    "hl-smi: INFO: device 5 is healthy",
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, twins=TWINS + ACCEL_TWINS,
                             fallback=ACCEL_FALLBACK, info=INFO))
