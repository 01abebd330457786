"""Round 18's rules from the rules halves' misses (lead18_* in slurmtools/data/diagnosis_rules.toml): each family's
lines in words the collections' rows do not quote (other chips, labels and values), the benign twins of the same
printers, and the trust that keeps a tool's line from draining a node. The collections' own rows are scored by
tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

OTHER_FAULTS = [
    # lm-sensors: a reading past its own limit with no ALARM flag (prog/sensors/chips.c print_chip_temp/print_chip_fan)
    ("Package id 1:  +101.0°C  (high = +84.0°C, crit = +100.0°C)", "thermal", "error"),
    ("Core 17:       +92.0°C  (high = +88.0°C, crit = +98.0°C)", "thermal", "warning"),
    ("temp2:         +76.5°C  (high = +75.0°C, hyst = +70.0°C)  sensor = thermistor", "thermal", "warning"),
    ("Composite:     +84.9°C  (low  = -273.1°C, high = +81.8°C)", "thermal", "warning"),
    ("Tctl:          +96.1°C  (high = +70.0°C, crit = +95.0°C)", "thermal", "error"),
    ("fan4:          420 RPM  (min = 1800 RPM)", "thermal", "warning"),
    # throttling and thresholds in small boards' tools and BMCs
    ("throttled=0x20002", "thermal", "warning"),
    ("  * Throttling occurred -> https://example.org/sbc", "thermal", "warning"),
    ("sunxi:sunxi_cpufreq_clamp:[INFO]: thermal_zone_monitor: Clamping CPU frequency to 1008000", "thermal", "warning"),
    ("3    slot4    2024-05-06 07:08:09    sensord          ASSERT: Lower Critical threshold - settled - FRU: 4, "
     "num: 0x12 curr_val: 300.00 RPM, thresh_val: 500.00 RPM, snr: Fan 2 Speed", "thermal", "warning"),
    ("|      31  05/06/2024 07:08:09 xyz.openbmc_project.Power.PowerSupply.Error.InputFault |", "thermal", "warning"),
    # a fan under its lower critical speed is a cooling fault (round 5's printers had filed this twin benign; every
    # other fan threshold and ALARM in the kind table is thermal)
    ("ASSERT: Lower Critical threshold - raised - FRU: 1, num: 0x60 curr_val: 500.00 RPM, thresh_val: 800.00 RPM, "
     "snr: FAN0_SPEED", "thermal", "warning"),
    # server platform tools: CPU and memory faults, thresholds and power faults, array tools
    (" 2b7 | 03/04/2021 | 05:06:07 | Processor #0x61 | Transition to Critical from less severe", "mce", "warning"),
    ("node9: 03/04/2021 05:06:07 [12] org.open_power.Processor.Error.SbeChipOpFailure", "mce", "warning"),
    ("CRITICAL - Memory 11 (DIMM Socket A11) 64.0 GB/3200 MHz: ENABLED/CRITICAL [80, Samsung, S/N: 1234]", "mce",
     "warning"),
    ("Lower Non-critical - going low - Asserted", "thermal", "warning"),
    ("warning  Sensor value crossed low threshold (11200 > 11400).", "thermal", "warning"),
    ("      physicaldrive 2I:2:5 (port 2I:box 2:bay 5, SATA SSD, 960 GB, Failed)", "disk", "warning"),
    ("      logicaldrive 1 (893.1 GB, RAID 1, Interim Recovery Mode)", "disk", "warning"),
    ("smartd[99]: Device: /dev/sg3 [cciss_disk_02] [SCSI], Read SMART Error Log Failed", "disk", "warning"),
    # network and FUSE filesystem clients: cvmfs's debug log, NFS locking, fusermount, mfsmount
    ("(download) Verify downloaded url /.cvmfspublished, proxy http://sq2.example.org:3128 (curl error 35)    "
     "[02-03-2025 04:05:06 UTC]", "nfs", "warning"),
    ("(download) switching proxy from http://sq2:3128 to http://sq3:3128 (failed proxy)    [02-03-2025 04:05:06 UTC]",
     "nfs", "warning"),
    ("I0203 04:05:06.000001 11 automount.go:142] automount[12]: >> (cvmfs) failed to download repository manifest "
     "(9 - host data transfer cut short) [02-03-2025 04:05:06 UTC]", "nfs", "warning"),
    ("mount.nfs4: Either use '-o nolock' to keep locks local, or start statd.", "nfs", "warning"),
    ("flock: /scratch/u/job.lock: No locks available", "nfs", "warning"),
    ("fusermount: failed to open /dev/fuse: No such file or directory", "nfs", "warning"),
    ("2025-02-03 04:05:06.7 E | mount: fusermount3 exited with code 2", "nfs", "warning"),
    ("read_data: 'connect(chunkserver)' timed out", "nfs", "warning"),
    # jobs: NCCL's allocation failures, MPI ranks on a signal, JAX's coordination, torch.distributed's plumbing, other
    # GPU runtimes' faults and exhaustion
    ("n17:900:911 [5] include/alloc.h:171 NCCL WARN Failed to CUDA host alloc 33554432 bytes", "cuda", "warning"),
    ("mpirun noticed that process rank 12 with PID 90210 on node n17 exited on signal 7 (Bus error).", "segfault",
     "info"),
    ("prterun noticed that process rank 2 with PID 5150 on node n18 exited on signal 9 (Killed).", "oom", "warning"),
    ("jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: PjRT_Client_Connect::", "nccl",
     "warning"),
    ("[rank5]: RuntimeError: Collective call returned error", "nccl", "warning"),
    ("torch.distributed.DistStoreError: connect() timed out. Original timeout was 300000 ms.", "nccl", "error"),
    ("Memory access fault by GPU node-4 (Agent handle: 0x1f2e) on address 0x7ffe0000. Reason: Write access to a "
     "read-only page.", "cuda", "error"),
    ("RuntimeError: MUSA out of memory. Tried to allocate 1.50 GiB (GPU 0; 15.11 GiB total capacity)", "cuda",
     "warning"),
    ("/opt/src/ATen/native/cuda/ScatterGatherKernel.cu:365: operator(): block: [12,0,0], thread: [4,0,0] "
     "Device-side assertion `idx_dim >= 0 && idx_dim < index_size' failed.", "cuda", "warning"),
    ("[vmm.cpp] CUresult error  result=700 file=vmm.cpp func=cu_mem_map line=41", "cuda", "warning"),
    ("ps-lite: Failed to register the memory region: Invalid argument, size=65536", "ib", "warning"),
    ("[nid00042:811] GNI_EpBind failed: GNI_RC_TRANSACTION_ERROR", "ib", "warning"),
    ("eRPC: Fatal error. Bad wc status 5.", "ib", "warning"),
    ("Rank 7 [nid00123] - MPIU_ugni_wait_rdma_events(): GNI_CQ_EVENT_TYPE_POST had error (SOURCE_SSID:AT_MPT_ERR)",
     "ib", "warning"),
    ("(RayWorker pid=811) ERROR 01-02 03:04:05 xml.cc:412] Attribute gdr of node gpu not found", "nccl", "warning"),
    ("Search for `hipErrorOutOfMemory' in https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more "
     "information.", "cuda", "warning"),
    ("E0102 grpc_server_lib.cc:561] Invalid argument: Couldn't open device: /dev/accel1 (Operation not permitted)",
     "cuda", "warning"),
    # tools and daemons that bring GPUs up
    ("Skipping ZE driver/device enumeration because zeInit failed; continuing with ZES.", "cuda", "warning"),
    ('time="2025-02-03T04:05:06Z" level=info msg="failed to validate the cuda, retrying after 5 seconds"', "gpu_init",
     "warning"),
    ("Warning  UnexpectedAdmissionError  kubelet  Allocate failed due to failed to write checkpoint file: open "
     "/var/lib/kubelet/device-plugins/.91: read-only file system", "disk", "warning"),
    ("FATAL: Error inserting nvidia_390 (/lib/modules/4.15.0/updates/dkms/nvidia_390.ko): Invalid argument",
     "gpu_init", "warning"),
    ("ERROR: Kernel module load error: No such device", "gpu_init", "warning"),
    ("Make sure that the latest NVIDIA driver is installed and running.", "gpu_init", "warning"),
    ("Failed to start DCGM Server: -6", "gpu_init", "warning"),
    ("[2024-01-02 03:04:05] [ERROR] [NVML] fan speed get failed with status: GPUIsLost", "xid", "critical"),
    # bcachefs/btrfs/zfs reports as tools print them, upstart's crashed job, systemd's SIGTRAP, Python's abort
    ("ERROR: errors found in extent tree", "disk", "warning"),
    ("Feb  3 2025 04:05:06.987654321 ereport.fs.zfs.delay", "disk", "warning"),
    ("init: cron main process (812) killed by ABRT signal", "segfault", "info"),
    ("systemd[1]: ollama.service: Main process exited, code=dumped, status=5/TRAP", "segfault", "info"),
    ("Fatal Python error: Aborted", "segfault", "info"),
    ("Jun  3 10:00:00 node7 sensors[4411]: Core 2: +99.0°C (high = +84.0°C, crit = +100.0°C)", "thermal", "warning"),
]
KERNEL_FAULTS = [
    # a board's supply monitor (raspberrypi-hwmon.c, the older firmware driver with its status word)
    ("raspberrypi-hwmon raspberrypi-hwmon: Undervoltage detected!", "thermal", "warning"),
    ("Under-voltage detected! (0x00010001)", "thermal", "warning"),
    # NIC transmit hangs, local filesystems' own reports, GPU bring-up in i915/xe/amdgpu words, NVIDIA's module splats
    ("igb 0000:05:00.1 eno2: Detected Hardware Unit Hang:", "ib", "warning"),
    ("WARNING: CPU: 2 PID: 0 at /build/linux-5.4.0/net/sched/sch_generic.c:447 dev_watchdog+0x258/0x260", "ib",
     "warning"),
    ("bonding: bond1: link status down for interface ens2f1, disabling it in 100 ms", "ib", "warning"),
    ("bond0: Warning: No 802.3ad response from the link partner for any adapters in the bond", "ib", "warning"),
    ("bcachefs (sdb2): error validating btree node at btree extents level 0/1", "disk", "warning"),
    ("i915 0000:00:02.0: [drm] *ERROR* GT0: HuC initialization failed -ENOEXEC", "gpu_init", "warning"),
    ("xe 0000:4d:00.0: [drm] GT0: GUC: load failed: status = 0x400000A0, time = 0ms, freq = 1950MHz, ret = -5",
     "gpu_init", "warning"),
    ("amdgpu 0000:65:00.0: amdgpu: SMU: I'm not done with your previous command: SMN_C2PMSG_66:0x00000011", "gpu_init",
     "warning"),
    ("amdgpu 0000:c3:00.0: amdgpu: Starting sdma0 ring reset", "gpu_init", "warning"),
    ("xe 0000:4d:00.0: [drm] GT1: Kernel-submitted job timed out", "gpu_init", "warning"),
    ("xe 0000:4d:00.0: [drm] Assertion `xe_bo_is_pinned(bo)` failed!", "gpu_init", "warning"),
    ("WARNING: CPU: 11 PID: 808 at /usr/src/nvidia-570.86.15/nvidia-uvm/uvm_gpu.c:1234 uvm_gpu_retain+0x1/0x2 "
     "[nvidia_uvm]", "gpu_init", "warning"),
]
TWINS = [
    "cvmfs2[4242]: (lhcb.cern.ch) (manager 'standard') switching proxy from (none) to http://sq9:3128 (sq9). Reason: "
    "set random start proxy from the first proxy group",
    "(download) Verify downloaded url /.cvmfspublished, proxy http://sq2:3128 (curl error 0)    "
    "[02-03-2025 04:05:06 UTC]",
    "(download) escape /.cvmfspublished    [02-03-2025 04:05:06 UTC]",
    "mount: fusermount exited with code 0",
    "n17:900:911 [5] NCCL INFO cudaDriverVersion 12040",
    "mpirun noticed that process rank 0 with PID 1 on node n17 exited on signal 15 (Terminated).",
    "        zio_err = 0x0",
    "sysevent.fs.zfs.config_sync",
    "bonding: bond1: link status up for interface ens2f1, enabling it in 200 ms",
    "GNI_CdmCreate returned GNI_RC_SUCCESS",
    "throttled=0x0",
    "2025-Feb-03 04:05:06.000001 900:901 ERROR   NRT:nrt_infodump                            Driver version: 2.19.64.0",
    "amdgpu 0000:c3:00.0: amdgpu: ring sdma0 reset succeeded",
    'time="2025-02-03T04:05:06Z" level=info msg="Driver is validated successfully"',
    " 2b8 | 03/04/2021 | 05:09:07 | Processor #0x61 | Transition to OK",
    "OK - Memory 1 (DIMM Socket A1) 64.0 GB/3200 MHz: ENABLED/OK [80, Samsung, S/N: 1234]",
    "      physicaldrive 2I:2:6 (port 2I:box 2:bay 6, SATA SSD, 960 GB, OK)",
    "      logicaldrive 1 (893.1 GB, RAID 1, OK)",
    " Status                : ok",
    "3    slot4    2024-05-06 07:09:09    sensord          DEASSERT: Lower Critical threshold - settled - FRU: 4, "
    "num: 0x12 curr_val: 4200.00 RPM, thresh_val: 500.00 RPM, snr: Fan 2 Speed",
    "|      32  05/06/2024 07:09:09 xyz.openbmc_project.Logging.Entry.Informational.BootCompleted |",
    "i915 0000:00:02.0: [drm] GT0: GuC firmware i915/tgl_guc_70.bin version 70.36.0",
    "amdgpu 0000:65:00.0: amdgpu: SMU is initialized successfully!",
    "bcachefs (sdb2): recovering from clean shutdown, journal seq 4242",
    "raspberrypi-hwmon raspberrypi-hwmon: Voltage normalised",
    "Voltage normalised (0x00000000)",
    # readings within their limits, limits never set, k10temp's constant `high`, unwired inputs
    "Core 3:        +41.0°C  (high = +80.0°C, crit = +100.0°C)",
    "temp1:         +27.8°C  (crit = +105.0°C)",
    "Composite:     +38.9°C  (low  = -273.1°C, high = +81.8°C)",
    "temp4:         +55.0°C  (high =  +0.0°C, hyst =  +0.0°C)  sensor = thermistor",
    "Tdie:          +88.2°C  (high = +70.0°C)",
    "Tccd1:         +74.5°C  (high = +70.0°C)",
    "temp3:        +127.0°C  (high = +80.0°C, hyst = +75.0°C)",
    "temp6:        -128.0°C  (high = +80.0°C, hyst = +75.0°C)",
    "fan1:         1840 RPM  (min =  600 RPM)",
    "fan5:            0 RPM  (min =    0 RPM)",
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, twins=TWINS))


def test_a_reading_past_its_limit_names_the_limit_and_the_values() -> None:
    f = diagnose("Core 5:        +101.0°C  (high = +84.0°C, crit = +100.0°C)".encode())[0]
    assert (f.kind, f.severity, f.trust) == ("thermal", "error", "syslog")
    assert f.details["past"] == "crit" and f.details["reading"] == 101.0 and f.details["limit_high"] == 84.0


def test_an_alarm_line_stays_the_alarm_rules() -> None:
    # a line that ends in ALARM is read by the rules that read the chip's own flag, not by the comparison
    f = diagnose(b"fan2:            0 RPM  (min =  600 RPM)  ALARM")[0]
    assert f.details["rule"] == "rules13_sensors_alarm"
