"""Round 22's rules from the rules halves' misses (lead22_* in slurmtools/data/diagnosis_rules.toml, and the earlier
rules a family was folded into): each family's lines in words the collections' rows do not quote (other devices,
drivers, values), the benign twins of the same printers, and the trust that keeps a job's or a tool's line from
draining a node. The collections' own rows are scored by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # nouveau's thermal manager past a threshold upward
    ("nouveau 0000:65:00.0: therm: temperature (97 C) hit the 'critical' threshold", "thermal", "warning"),
    # an SD/MMC host in trouble: the core lowering its clock, a host driver's error register
    ("mmc2: reducing overclock due to errors", "disk", "warning"),
    ("dw_mmc fe2b0000.mmc: dw_mci_cmd_done: cmd=25 arg=0001A2F0; host->error=0x00000010", "disk", "warning"),
    # an RDMA device's asynchronous queue-pair error event with its syndrome
    ("irdma0/1: QP 77 error: unrecognized status (0x17 0x0 0x1)", "ib", "warning"),
    # network filesystem clients: a splat in Lustre's server modules or the SMB client, sessions and transports
    ("RIP: 0010:ofd_commitrw_write+0x1f1/0x9e0 [ofd]", "nfs", "warning"),
    # an old oops's instruction pointer is the kernel's message, not a pdsh host's
    ("IP: [<ffffffffa0c1d2e3>] ofd_preprw+0x1e/0x90 [ofd]", "nfs", "warning"),
    # other accelerators' kernel drivers: xe's errors and a wedged device, i915's hang ban, a DRM driver without its
    # firmware, amdkfd's hardware exception worker
    ("xe 0000:4d:00.0: [drm] *ERROR* Tile0: GT0: reset failed (-ETIMEDOUT)", "gpu_init", "warning"),
    ("[drm:i915_gem_context_ban [i915]] *ERROR* gpu hanging too fast, banning!", "gpu_init", "warning"),
    ("[drm:nouveau_firmware_get [nouveau]] *ERROR* failed to load nvidia/tu102/gr/fecs_bl.bin", "gpu_init",
     "warning"),
    ("Workqueue: events kfd_process_hw_exception [amdkfd]", "gpu_init", "warning"),
    # QLogic's FC driver giving up its adapter or aborting commands
    ("qla2xxx [0000:af:00.1]-015b:12: Disabling adapter.", "disk", "warning"),
    ("qla2xxx [0000:af:00.0]-801c:12: Abort command issued nexus=12:0:3 -- 1 2003.", "disk", "warning"),
    # a VF that never saw its reset
    ("iavf 0000:3b:02.7: Never saw reset", "ib", "warning"),
    ("BUG: KASAN: use-after-free in lod_sub_prep_llog+0x31/0x5a0 [lod]", "nfs", "warning"),
    ("UBSAN: array-index-out-of-bounds in fs/smb/client/smb2pdu.c:4123:17", "nfs", "warning"),
    ("CIFS: VFS: fs/cifs/transport.c: partial send (wanted=4096 sent=1200): terminating session", "nfs", "warning"),
    ("VFS: Busy inodes after unmount of ceph (ceph)", "nfs", "warning"),
    ("SUNRPC: reached max allowed number (16) did not add", "nfs", "warning"),
    # the NVIDIA driver's function reporting an object it cannot find
    ("NVRM: GPU1 rmapiFreeWithSecInfo: hObject 0xbeef0001 not found for client 0xc1d00009", "gsp", "error"),
    # a CXL protocol error through the AER path
    ("pcieport 0000:16:00.0: CXL Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Receiver "
     "ID)", "aer", "error"),
]
OTHER_FAULTS = [
    # a benchmark's reading marked throttled, a throttling monitor's decoded bits, a management suite's sensor state
    ("Clockspeed after at 88.4°C (throttled)", "thermal", "warning"),
    ("[D] core 11 thermal status: current limit status = 1", "thermal", "warning"),
    ("r12n07: Inlet Temp: 47 C (117 F)  (At or above upper non-critical threshold)", "thermal", "warning"),
    # a service processor's over-temperature warnings and shutdown
    ("WARNING: Power supply 2 module is too hot (temperature: 71C)", "thermal", "warning"),
    ("NOTICE: Overtemp shutdown initiated on board 4", "thermal", "warning"),
    # the vGPU device manager unable to apply its layout; a network filesystem's FUSE mount failing under Kubernetes
    ('time="2026-01-04T01:02:03Z" level=fatal msg="error setting vGPU config: no parent devices found for GPU at '
     "index '0'\"", "gpu_init", "warning"),
    ('Warning  FailedMount  2m  kubelet  MountVolume.MountDevice failed for volume "pvc-77" : rpc error: code = '
     "Internal desc = an error (exit status 1) occurred while running ceph-fuse args: [/var/lib/kubelet/plugins/x "
     "-m 10.1.2.3]", "nfs", "warning"),
    # Storage Scale: its RDMA path failing, a CSI controller's orphan mounts; mount.lustre
    ("2026-03-04_05:06:07.890+0000: [E] VERBS RDMA error connecting to 192.168.7.7 (nsd07 in prod.gpfs) on mlx5_2 "
     "port 1 ibv_create_qp err 12", "ib", "warning"),
    ('"msg"="Volume did not unstage on all nodes; orphan mounts may remain" "volumeID"="beegfs://10.0.0.9/k8s/x"',
     "nfs", "warning"),
    ("STDERR: mount.lustre: Can't parse NID '10.0.0.1@tcp:/scratch'", "nfs", "warning"),
    # udev unable to make an NVIDIA device node; NVAPI without a device; nvidia-installer's pointer to its load error
    ("systemd-udevd[433]: nvidia: Process '/usr/bin/bash -c 'mknod -m 666 /dev/nvidia-modeset c 195 254'' failed "
     "with exit code 1.", "gpu_init", "warning"),
    ("NvAPIWrapper.Native.Exceptions.NVIDIAApiException: NVAPI_NVIDIA_DEVICE_NOT_FOUND", "gpu_init", "warning"),
    ("Please see the log entries 'Kernel module load error' and 'Kernel messages' at the end of the file "
     "'/var/log/nvidia-installer.log' for more information.", "gpu_init", "warning"),
    # server tools: a drive's temperature attribute failed in the past, any attribute failing in the past, a NAND
    # block reallocated, smartctl -x's device statistics, a vendor self-test's failure, hpacucli's array,
    # an IPMI sdr power supply row
    ("231 Temperature_Celsius     -O---K   030   025   035    Past 70 (Min/Max 30/75)", "thermal", "warning"),
    ("  7 Seek_Error_Rate         POSR--   040   030   045    Past 123456789", "disk", "warning"),
    ("  5 Reallocate_NAND_Blk_Cnt -O--CK   100   100   010    -    3", "disk", "warning"),
    ("0x04  0x010  4              12  ---  Number of Reported Uncorrectable Errors", "disk", "warning"),
    ("# 2  Vendor (0xdf)       Completed: servo/seek failure    40%     8812         -", "disk", "warning"),
    ("   array C (Failed)", "disk", "warning"),
    ("PS 2     | 72h | ok  | 10.2 | Presence detected, Power Supply AC lost", "thermal", "warning"),
    # a container's command killed by SIGKILL (most often the OOM killer)
    ("command terminated with exit code 137", "oom", "warning"),
    ("trainer-1  | trainer-1 exited with code 137", "oom", "warning"),
    # accelerator tools that reach no device: ROCm SMI, clinfo, xbutil, a DKMS crash report, Huawei's DCMI
    ("rsmi_init() failed", "gpu_init", "warning"),
    ("Number of platforms                               : error -1001", "gpu_init", "warning"),
    ("ERROR: Cannot create report: [Errno 17] File exists: '/var/crash/habanalabs-dkms.0.crash'", "gpu_init",
     "warning"),
    ("dcmi get board info failed cardID(1) deviceID(0) error code: -8020", "gpu_init", "warning"),
    # accelerator runtimes in a job: Intel XPU, OpenCL, HIP behind a wrapper, Ascend's ACL, TSD and driver count
    ("UserWarning: DPCPP Device count is zero! (Triggered internally at csrc/gpu/runtime/Device.cpp:127.)", "cuda",
     "warning"),
    ("clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU): CL_DEVICE_NOT_FOUND", "cuda", "warning"),
    ("  what():  HIP_CHECK(hipMallocAsync(&buf, n, stream)) out of memory", "cuda", "warning"),
    ("[ERROR]  reset device 2 failed, errorCode = 507899", "cuda", "warning"),
    ("[ERROR] RUNTIME(1,python):2025-01-01 [driver.cc:64]1 GetDeviceCount:Call drvGetDevNum, drvRetCode=87.",
     "cuda", "warning"),
    # Ascend's collectives through torch_npu
    ("HCCL function error: hcclCommInitRootInfo(numRanks, &rootInfo, rank, &comm), error code is 4", "nccl",
     "error"),
    # an NPU's RoCE port down in hccn_tool's history and health; SFCFS's metadata service
    ("[devid 7]    Tue Mar  4 05:06:07 2025    LINK DOWN", "ib", "warning"),
    ("net health status: Fault", "ib", "warning"),
    ("ERROR: sfcfs_mds:1009: MDS failover did not complete", "nfs", "warning"),
    # slurmstepd's OOM notice wrapped onto its second line; PSM2/OFI failing to open an endpoint
    ("Some of your processes may have been killed by the cgroup out-of-memory handler.", "oom", "error"),
    ("  Error: Failure in initializing endpoint", "ib", "warning"),
    # a firmware console's machine-check chassis code
    ("<Cpu2> 2800209802e00000  0000000000000000  CC_ERR_CHECK_HPMC", "mce", "warning"),
    # a collective test's child failing its communicator step; MPICH's OFI netmod stuck on a full completion queue
    ("[ ERROR    ] Child 2 failed on command [ALLOC_BUFFERS]:", "nccl", "warning"),
    ("PE 3: MPICH WARNING: OFI is failing to make progress on posting a receive. MPICH suspects a hang", "ib",
     "warning"),
    # Open MPI's runtime unable to wire its daemons over TCP
    ("A process or daemon was unable to complete a TCP connection", "ib", "warning"),
    # device memory exhausted in an old framework's words; XLA's replica out of memory, cut at the terminal's edge
    ("Error allocating 4194304 bytes of device memory (out of memory). Driver report 0 bytes free", "cuda", "error"),
    ("E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2040] Execution of replica 1 failed: Resource "
     "exhausted: Out", "cuda", "warning"),
]
INFO = [
    # an NVMe drive's error log count, its endurance reached (facts: many drives log harmless command errors)
    ("Error Information Log Entries:      3", "disk"),
    ("percentage_used                         : 100%", "disk"),
    # md rebuilding a member
    ("      [==>..................]  recovery = 12.5% (1000/8000) finish=90.0min speed=120000K/sec", "disk"),
    # a crash on a signal: glog's handler, a launcher's report with the node's name missing
    ('*** Aborted at 1712345678 (unix time) try "date -d @1712345678" if you are using GNU date ***', "segfault"),
    ("*** SIGBUS (@0x7f12deadbeef) received by PID 777 (TID 0x7f1200001700) from PID 0; stack trace: ***",
     "segfault"),
    ("mpirun noticed that process rank 5 with PID 0 on node exited on signal 8 (Floating point exception).",
     "segfault"),
    # R's crash handler
    (" *** caught bus error ***", "segfault"),
    ("address 0x000000000018, cause 'invalid alignment'", "segfault"),
    # btrfs mounted degraded on request
    ("BTRFS info (device md127): allowing degraded mounts", "disk"),
    # an Intel NIC's plain reset (most are asked for)
    ("igb 0000:05:00.1 eno2: Reset adapter", "ib"),
]
TWINS = [
    # the same printers' healthy lines
    "Clockspeed before at 41.0°C:",
    "[D] core 11 thermal status: current limit status = 0",
    "[D] core 11 thermal status: cpu temp = 48",
    "nouveau 0000:65:00.0: therm: temperature (70 C) went below the 'fanboost' threshold",
    "r12n07: Inlet Temp: 22 C (72 F)",
    "System temperature normal; over-temperature protection armed",
    "mmc0: new ultra high speed SDR104 SDHC card at address 0001",
    "dw_mmc fe2b0000.mmc: Successfully tuned phase to 177",
    "[Rank 0] NCCL watchdog thread terminated normally",
    "mlx5_0/1: QP 77 created on port 1",
    "194 Temperature_Celsius     -O---K   035   020   040    -    35 (Min/Max 22/41)",
    "  7 Seek_Error_Rate         POSR--   080   060   045    -    123456789",
    "  5 Reallocate_NAND_Blk_Cnt -O--CK   100   100   010    -    0",
    "0x04  0x010  4               0  ---  Number of Reported Uncorrectable Errors",
    "# 1  Vendor (0xdf)       Completed without error       00%     8812         -",
    "   array A (SAS, Unused Space: 0  MB)",
    "      [>....................]  resync =  0.4% (1000/8000) finish=90.0min speed=120000K/sec",
    "PS 1     | 71h | ok  | 10.1 | Presence detected",
    "Error Information Log Entries:      0",
    "command terminated with exit code 0",
    "trainer-1 exited with code 0",
    "xe 0000:4d:00.0: [drm] GT0: reset done",
    "[drm:i915_gem_context_ban [i915]] context banned",
    "rsmi_init() succeeded",
    "Number of platforms                               : 1",
    "[xbutil] Device 0000:c5:00.1 is ready",
    "clGetDeviceIDs(): CL_SUCCESS",
    "[ERROR]  acl set device 0 succeeded, errorCode = 0",
    "[devid 7]    Tue Mar  4 05:06:09 2025    LINK UP",
    "net health status: Success",
    "qla2xxx [0000:af:00.0]-500a:12: LOOP UP detected (16 Gbps).",
    "error: _get_dcmi_power_reading: get DCMI power reading failed: command invalid or unsupported",
    " *** caught 2 exceptions ***",
    "igb 0000:05:00.1 eno2: Reset adapter done",
    "BTRFS info (device md127): use zstd compression, level 3",
    "[I] VERBS RDMA connecting to 192.168.7.7 (nsd07 in prod.gpfs) on mlx5_2 port 1 fabnum 0 sl 0 index 3",
    "nvidia: Process '/usr/bin/nvidia-modprobe -c0 -u' succeeded.",
    "VFS: Busy inodes check done",
    "NVRM: GPU0 kbifCacheVFInfo_GH100: VF BAR1 size is 0x0",
    "[ INFO ] Child 0 finished command [INIT_COMMS]",
    "MPICH WARNING: OFI is using the tcp;ofi_rxm provider",
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, info=INFO, twins=TWINS))
