"""Families read from their printers after the rules halves of round 13's collections (round13a-h.tsv) showed them
(their test halves only scored): each line is found in other values than the corpus's, its benign twin stays below
warning, job and tool output never drains, and the kernel's lines are only investigated."""

from __future__ import annotations

from .rule_cases import table_tests

# ---- what daemons, tools and jobs print (trust syslog or job: recorded, never a drain)
FOUND = [
    # RADV (Mesa's Vulkan driver) in an application's output
    ("radv: GPU hang detected...", "cuda", "warning"),
    ("radv: GPUVM fault detected at address 0x7f0012345000.", "cuda", "warning"),
    # the NVIDIA driver container unable to replace a driver in use
    ("nvidia-driver-ctr: Could not unload NVIDIA driver kernel modules, driver is in use", "gpu_init", "warning"),
    # a notebook's traceback header for PyTorch's CUDA OOM
    ("OutOfMemoryError                          Traceback (most recent call last)", "cuda", "error"),
    # Ceph's daemons asserting (BlueStore's aio assert stays disk)
    ("osd/PG.cc: 2204: FAILED ceph_assert(info.last_complete == info.last_update)", "nfs", "warning"),
    ("2019-02-11 10:00:00.123 7f2a -1 mon/Monitor.cc: In function 'void Monitor::tick()' thread 7f2a1c time "
     "2019-02-11 10:00:00.120000", "nfs", "warning"),
    ("/build/ceph-14.2.9/src/os/bluestore/KernelDevice.cc: 534: FAILED ceph_assert(0 == \"unexpected aio error\")",
     "disk", "warning"),
    # autofs: busy unmounts, a map it cannot find
    ("automount[811]: umount_autofs_indirect: ask umount returned busy /scratch", "nfs", "warning"),
    ("automount[811]: umount_autofs_indirect: mount point /projects is in use", "nfs", "warning"),
    ("automount[811]: lookup_read_master: lookup(nisplus): couldn't locate nis+ table auto.master", "nfs", "warning"),
    # mount(8) failing on an SMB share
    ("mount: wrong fs type, bad option, bad superblock on //fs01.example.org/projects,", "nfs", "warning"),
    # a BMC's CSV export, a chassis manager, the fb-ipmi thermal trips of any part
    ("12,2025/01/11 09:52:01,FAN3            ,Fan,Lower Non-Recoverable - Going Low - Assertion", "thermal",
     "warning"),
    ("40,2025/01/11 09:52:01,CPU2 Temp       ,Temperature,Upper Critical - Going High - Assertion", "thermal",
     "warning"),
    ("Blade 2 hardware sensor critical alarm: Power Supply 1 input status(SPAFFIV01G): Bad", "thermal", "warning"),
    ("SEL Entry: FRU: 2, Record: Standard (0x02), Time: 2024-03-09 08:10:22, Sensor: SYSTEM_STATUS (0x10), Event Data:"
     " (12FFFF) DIMM thermal trip Assertion", "thermal", "warning"),
    # Windows' WHEA records and mcelog's decoded report
    ("A fatal hardware error has occurred.", "mce", "warning"),
    ("Error Source: Machine Check", "mce", "warning"),
    ("Error Type: Bus/Interconnect Error", "mce", "warning"),
    ("HARDWARE ERROR. This is *NOT* a software problem!", "mce", "warning"),
    ("Data CACHE Level-1 Data-Read Error", "mce", "warning"),
    ("ECC Correctable Errors detected on DIMM A2", "mce", "warning"),
    # Intel PSM's shared-memory transport
    ("PSM could not set up shared memory segment (err=12)", "ib", "warning"),
    ("Error opening remote shared memory object in shm_open: Permission denied (err=9)", "ib", "warning"),
    # Mooncake's transfer engine, DeepEP's timeouts, ROCm's runtime aborts, TensorFlow's launch status, no libcuda
    ("E0601 10:11:12.000001  4242 transfer_engine.cpp:301] Transfer failed for task17", "ib", "warning"),
    ("W0601 10:11:12.000002  4242 client.cpp:450] Transfer incomplete, retrying... (attempt 2/3)", "ib", "warning"),
    ("DeepEP combine NVL receiver timeout, channel: 3, RDMA: 1, nvl: 2, src RDMA: 0, src nvl: 5", "nccl", "warning"),
    (":0:rocdevice.cpp            :3018: 1234567 us: [pid:411 tid:0x7f11] Callback: Queue 0x7f2000000000 aborting with"
     " error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016", "cuda",
     "error"),
    ("MIOpen(HIP): Error [hip_mem_get_info_wrapper] hipMemGetInfo error, status: 2", "cuda", "error"),
    ("Non-OK-status: GpuLaunchKernel(SetZero<float>, config.block_count, config.thread_per_block, 0, d.stream(), "
     "config.virtual_thread_count, out) status: Internal: invalid configuration argument", "cuda", "error"),
    ("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory", "gpu_init", "warning"),
    # the tools: smartd's self-test count, a storage array's event, zpool status, thermald, lm-sensors' daemon, NVMe's
    # temperature bit, OpenPOWER's firmware
    ("Device: /dev/sdc [SAT], Self-Test Log error count increased from 0 to 1", "disk", "warning"),
    ("Error ID = 10084 : Drive SAS error counts exceeded warning thresholds", "disk", "warning"),
    (" status: One or more devices has experienced an unrecoverable error.  An", "disk", "warning"),
    ("thermald[811]: Set : threshold:85000, temperature:87000, cdev:2(intel_powerclamp), curr_state:10, max_state:50",
     "thermal", "warning"),
    ("sensord: Sensor alarm: Chip it8728-isa-0a30: fan1: 0 RPM (min = 1000 RPM) [ALARM]", "thermal", "warning"),
    ("critical_warning                    : 0x2", "thermal", "warning"),
    (" 21.11220|Error reported by prdf (0xE504) PLID 0x9000002A", "mce", "warning"),
    # round13i-k: PETSc's signal handler, Open MPI's fabric help texts, perftest, the X server without a GPU
    ("[3]PETSC ERROR: Caught signal number 7 BUS: Bus Error, possibly illegal memory access", "segfault", "warning"),
    ("At least one pair of MPI processes are unable to reach each other for", "ib", "warning"),
    ("It looks like MPI_INIT failed for some reason; your parallel process is", "ib", "warning"),
    ("was unable to find any relevant network interfaces:", "ib", "warning"),
    (" Couldn't create IB resources", "ib", "warning"),
    ("[  1201.334] (EE) No devices detected.", "gpu_init", "warning"),
    # network filesystems' and block storage's clients and helpers
    ("CIFS VFS: No username specified", "nfs", "warning"),
    ("Output: mount.nfs: Protocol not supported for 10.0.4.12:/export/scratch on /mnt/scratch", "nfs", "warning"),
    ("2024-01-11T09:52:01.000+0000 7f00 0 log_channel(cluster) log [DBG] : map e1201 wrongly marked me down at e1199",
     "nfs", "warning"),
    ("2025/01/11 09:52:01 mount helper error: fusermount3: fuse device not found, try 'modprobe fuse' first", "nfs",
     "warning"),
    ("iscsiadm: Connection to Discovery Address 10.0.9.40 failed", "nfs", "warning"),
    ("/dev/nvme1n1p1: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.", "disk", "warning"),
    ("/dev/md0 contains a file system with errors, check forced.", "disk", "warning"),
]


# ---- the kernel's own lines (investigated; never a node fault of ours)
KERNEL_FOUND = [
    # i915: a hang and its reset, a reset that timed out, firmware that did not load
    ("[ 812.000100] i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in python3 [4242]", "gpu_init",
     "warning"),
    ("[drm] GPU HANG: ecode 9:1:0xeeffefa1, in Xorg [557], reason: Hang on bcs0, action: reset", "gpu_init",
     "warning"),
    ("i915 0000:00:02.0: [drm] Resetting vcs0 for stopped heartbeat on vcs0", "gpu_init", "warning"),
    ("drm/i915: Resetting chip after gpu hang", "gpu_init", "warning"),
    ("i915 0000:00:02.0: [drm] *ERROR* vcs0 reset request timed out: {request: 00000001, RESET_CTL: 00000001}",
     "gpu_init", "warning"),
    ("i915 0000:00:02.0: [drm] *ERROR* GT0: HuC firmware i915/tgl_huc.bin: fetch failed -ENOENT", "gpu_init",
     "warning"),
    ("i915 0000:00:02.0: [drm] Failed to load DMC firmware i915/adls_dmc_ver2_01.bin. Disabling runtime power "
     "management.", "gpu_init", "warning"),
    # nouveau's bus and engine faults
    ("nouveau 0000:02:00.0: bus: MMIO write of 00000011 FAULT at 10eb14 [ PRIVRING ]", "gpu_init", "warning"),
    ("nouveau 0000:02:00.0: fifo: SCHED_ERROR 08 [CTXSW_TIMEOUT]", "gpu_init", "warning"),
    ("[drm] nouveau 0000:02:00.0: PFIFO_DMA_PUSHER - Ch 3 Get 0x0020027968 Put 0x0020027970", "gpu_init", "warning"),
    # amdgpu's firmware that stopped answering, an IP block that did not suspend
    ("amdgpu 0000:0c:00.0: amdgpu: SMU: I'm not done with your previous command: SMN_C2PMSG_66:0x00000011 "
     "SMN_C2PMSG_82:0x00000000", "gpu_init", "warning"),
    ("[drm:dc_dmub_srv_wait_idle [amdgpu]] *ERROR* Error waiting for DMUB idle: status=1", "gpu_init", "warning"),
    ("[drm:amdgpu_device_ip_suspend_phase2 [amdgpu]] *ERROR* suspend of IP block <gfx_v11_0> failed -110",
     "gpu_init", "warning"),
    # the CIFS client's debug lines
    ("fs/smb/client/cifssmb.c: negprot rc -112", "nfs", "warning"),
    ("fs/cifs/connect.c: Received no data or error: expecting 4 got -110", "nfs", "warning"),
    # mlx5 in its own debug format, without the device in front
    ("mlx5_cmd_out_err:838:(pid 2211): CREATE_MKEY(0x200) op_mod(0x0) failed, status bad parameter(0x3)", "ib",
     "warning"),
    ("mlx5_sf_dev_table_create:248:(pid 1001): SF DEV table create err = -12", "ib", "warning"),
    # RCU tasks stall with the stalling function in front
    ("tasks_rcu_exit_srcu_stall: rcu_tasks grace period number 41 (since boot) gp_state: RTGS_WAIT_CBS is 912345 "
     "jiffies old.", "soft_lockup", "error"),
    # an older SAS HBA's name, FreeBSD's mpt, an Alpha's machine check, the i5000's fatal UE
    ("mpt2sas1: log_info(0x31110d00): originator(PL), code(0x11), sub_code(0x0d00)", "disk", "warning"),
    ("mpt1: mpt_recover_commands: IOC Status 0x47. Resetting controller.", "disk", "warning"),
    ("mpt1: completing timedout/aborted req 0xfffffe0001234000:1201", "disk", "warning"),
    # i915's older hang line and its fence timeout, vfio without the GPU's BAR, amdgpu's illegal register access
    ("[drm] GPU HANG: ecode 6:0:0x85fffffc, reason: Hang on render ring, action: reset", "gpu_init", "warning"),
    ("Fence expiration time out i915-0000:00:02.0:python3[4242]:1a!", "gpu_init", "warning"),
    ("vfio-pci 0000:41:00.0: BAR 3: can't reserve [mem 0x38000000000-0x38001ffffff 64bit pref]", "gpu_init",
     "warning"),
    ("[drm:gfx_v11_0_priv_reg_irq [amdgpu]] *ERROR* Illegal register access in command stream", "gpu_init",
     "warning"),
    ("CIA machine check: vector=0x670 pc=0xfffffc0000311234 code=0x98", "mce", "warning"),
    # amdgpu's page faults and MES firmware
    ("amdgpu 0000:83:00.0: amdgpu: [mmhub0] no-retry page fault (src_id:0 ring:169 vmid:3 pasid:32770)", "gpu_init",
     "warning"),
    ("amdgpu: MES might be in unrecoverable state, issue a GPU reset", "gpu_init", "warning"),
    # more disk printers: megaraid's error handler, Fusion MPT, UAS, bcache, md, TCMU
    ("sd 0:2:1:0: [sdb] megasas: RESET cmd=2a retries=0", "disk", "warning"),
    ("mptscsih: ioc0: attempting task abort! (sc=ffff880212345678)", "disk", "warning"),
    ("mptbase: ioc0: LogInfo(0x31120303): Originator={PL}, Code={Abort}, SubCode(0x0303) cb_idx mptscsih_io_done",
     "disk", "warning"),
    ("sd 4:0:0:0: [sdc] tag#5 uas_eh_abort_handler 0 uas-tag 6 inflight: CMD OUT", "disk", "warning"),
    ("bcache: bch_count_io_errors() nvme0n1: IO error on cache device, recovering", "disk", "warning"),
    ("md: could not open device unknown-block(259,3).", "disk", "warning"),
    ("TCMU: Could not queue command", "disk", "warning"),
    ('UE row 1, channel-a= 0 channel-b= 1 labels "-": (Branch=0 DRAM-Bank=2 RDWR=Write RAS=12 CAS=4 FATAL Err=0x2 '
     "(>Tmid Thermal event with intelligent throttling disabled))", "mce", "error"),
]


# ---- lines that say nothing alone, or a setting: their kind at info
INFO = [
    # NCCL without libibverbs goes on over sockets
    ("gpu17:4411:4411 [3] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]", "nccl"),
    ("node3:90:90 [0] misc/ibvwrap.cu:60 WARN Failed to open libibverbs.so[.1]", "nccl"),
    # PyTorch's CUDA error tail, the kernel's machine-check detail without its prefix
    ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", "cuda"),
    ("TSC 0 ADDR 7f12c840 MISC 2000000086 PROCESSOR 0:50657 TIME 1700000000 SOCKET 1 APIC 40", "mce"),
    # an SAS HBA's unit reset as it starts
    ("mpt3sas_cm1: sending message unit reset !!", "disk"),
    ("mpt3sas_cm1: message unit reset: SUCCESS", "disk"),
    # notes inside a report: an abort that succeeded, a reset in progress, a rate limit, a capability, RCU's headers
    ("mpt3sas_cm0: task abort: SUCCESS scmd(0x00000000abcdef12)", "disk"),
    ("ata7: link is slow to respond, please be patient (ready=0)", "disk"),
    ("print_req_error: 12 callbacks suppressed", "disk"),
    ("hpsa 0000:5c:00.0: Logical aborts not supported", "disk"),
    ("rcu: RCU grace-period kthread stack dump:", "soft_lockup"),
    # the details around a failure: c10d's trace header and the process's end, a GPU's crash dump and reset notes,
    # Open MPI's module name
    ("Exception raised from checkTimeout at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most "
     "recent call first):", "nccl"),
    ("terminate called after throwing an instance of 'c10::DistBackendError'", "nccl"),
    ("[drm] GPU crash dump saved to /sys/class/drm/card1/error", "gpu_init"),
    ("amdgpu 0000:c3:00.0: amdgpu: MODE1 reset", "gpu_init"),
    ("Module: OpenFabrics (openib)", "ib"),
    # SGLang without its custom all-reduce goes on with NCCL's
    ("[2025-06-01 10:00:00 TP3] Setup Custom allreduce failed with CUDART error: peer access is not supported between "
     "these two devices. To silence this warning, specify --disable-custom-all-reduce explicitly.", "cuda"),
]


BENIGN = [
    # the same printers on a healthy day
    "radv: GPU hang report will be saved to '/tmp/radv_dumps_811_2025.01.11_09.52.01'!",
    "i915 0000:00:02.0: [drm] GT0: GuC firmware i915/tgl_guc_70.bin version 70.20.0",
    "i915 0000:00:02.0: [drm] Finished loading DMC firmware i915/adls_dmc_ver2_01.bin (v2.1)",
    "nouveau 0000:01:00.0: bus: MMIO read of 00000000 at 612004",
    "amdgpu 0000:0c:00.0: amdgpu: SMU is initialized successfully!",
    "fs/cifs/cifssmb.c: negprot rc 0",
    "automount[811]: umount_autofs_indirect: unmounted /scratch",
    "1,2024/07/04 06:50:02,FANA            ,Fan,Lower Critical - Going Low - Deassertion",
    "Error Source: None",
    "mpt0: IOC ready",
    "mlx5_sf_dev_table_create:248:(pid 872): SF DEV table created",
    "ECC Memory Correctable Errors: 0",
    "critical_warning                    : 0",
    "W0601 10:11:12.000002  4242 client.cpp:450] Transfer completed for task17",
    "sensord: Chip it8728-isa-0a30: fan1: 1200 RPM (min = 1000 RPM)",
    "Device: /dev/sdc [SAT], Self-Test Log error count unchanged",
]


globals().update(table_tests(other=FOUND, kernel_evidence=KERNEL_FOUND, twins=BENIGN, info=INFO))
