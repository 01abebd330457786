"""Round 6's printers, from their format strings: the printers behind the rules half's misses (powerpc hard lockups,
machine-check rendezvous timeouts, AEST, OpenVZ's OOM killer, Blue Gene/L's RAS events, OpenBMC's SEL, Mooncake, the PCI
core's device wait, SPDK, smartctl/nvme-cli error logs, the Ceph clients, Omni-Path, NVMe over RDMA, DCGM's NVSwitch
module, systemd's filesystem units, the firmware loader, the kubelet's mounts) and the printers found by probing each
family (perftest, fabtests, OpenSM, mlx5e reporters, mce_panic, powerpc and BMC machine checks, user-space OOM killers,
DCGM's memory/NVLink/NVSwitch messages, the pre-5.x AER device names, CUDA in other tools' words, hung-task blockers,
EIO on shared filesystems, nouveau's GSP).

Every fault line below is a format string of the public source named in the comment above it, with its conversions
filled in by hand (CPU numbers, masks, names, addresses): no line is copied from a log or from the field corpus. Each
family has benign twins (the same printer's healthy or informational lines) that must stay below warning, and the lines
a job, a daemon, a BMC or another system's event log prints are checked for their trust: such a line never drains.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # ---- powerpc's hard-lockup detector, arch/powerpc/kernel/watchdog.c: 4.13's pr_emerg("Watchdog CPU:%d Hard
    # LOCKUP\n"), "Watchdog CPU:%d detected Hard LOCKUP other CPUS:%*pbl\n"; since 5.x (pr_fmt "watchdog: ") "CPU %d
    # self-detected hard LOCKUP @ %pS\n", "CPU %d detected hard LOCKUP on other CPUs %*pbl\n", wd_lockup_ipi()'s "CPU %d
    # Hard LOCKUP\n"; kernel/watchdog.c's "CPU%u: Watchdog detected hard LOCKUP on cpu %u"
    ("Watchdog CPU:3 Hard LOCKUP", "soft_lockup", "critical"),
    ("Watchdog CPU:0 detected Hard LOCKUP other CPUS:8-15", "soft_lockup", "critical"),
    ("watchdog: CPU 2 self-detected hard LOCKUP @ snooze_loop+0x90/0x1b0", "soft_lockup", "critical"),
    ("watchdog: CPU 4 detected hard LOCKUP on other CPUs 17,40-41", "soft_lockup", "critical"),
    ("watchdog: CPU 17 Hard LOCKUP", "soft_lockup", "critical"),
    ("watchdog: CPU9: Watchdog detected hard LOCKUP on cpu 11", "soft_lockup", "critical"),
    # ---- arch/x86/kernel/cpu/mce/core.c mce_timed_out(): pr_emerg_ratelimited("CPUs not responding to MCE broadcast
    # (may include false positives): %*pbl\n"), v5.12's pr_info("%s: MCE holdout CPUs (may include false
    # positives): %*pbl\n", __func__, ...), the review's "Not all CPUs (%*pbl) entered the broadcast exception
    # handler."; mce_panic()'s messages "Timeout: Not all CPUs entered broadcast exception handler", "Timeout:
    # Subject CPUs unable to finish machine check processing" after "Kernel panic - not syncing: ", and the older
    # "Timeout synchronizing machine check over CPUs" behind HW_ERR "Machine check: "
    ("mce: CPUs not responding to MCE broadcast (may include false positives): 0-3,64-67", "mce", "error"),
    ("mce: mce_timed_out: MCE holdout CPUs (may include false positives): 5", "mce", "error"),
    ("mce: Not all CPUs (12-15) entered the broadcast exception handler.", "mce", "error"),
    ("Kernel panic - not syncing: Timeout: Not all CPUs entered broadcast exception handler", "mce", "error"),
    ("Kernel panic - not syncing: Timeout: Subject CPUs unable to finish machine check processing", "mce", "error"),
    ("mce: [Hardware Error]: Machine check: Timeout synchronizing machine check over CPUs", "mce", "error"),
    # ---- drivers/ras/aest (pr_fmt "AEST: "; the ACPI driver's "ACPI AEST: "): aest_print() pr_info("%sHardware error
    # from AEST %s\n", "{%u}" HW_ERR, node name), pr_err("%s Error from CPU%d\n"), pr_err("%s  ERR%dSTATUS: 0x%llx\n");
    # aest_proc_record()'s panic("AEST: unrecoverable error encountered")
    ("AEST: {4}[Hardware Error]: Hardware error from AEST processor.12", "mce", "info"),
    ("ACPI AEST: {2}[Hardware Error]: Hardware error from AEST memory.1a0000", "mce", "info"),
    ("AEST: {4}[Hardware Error]:  Error from CPU12", "mce", "info"),
    ("AEST: {4}[Hardware Error]:   ERR1STATUS: 0x44800000", "mce", "info"),
    ("Kernel panic - not syncing: AEST: unrecoverable error encountered", "mce", "critical"),
    # ---- mm/oom_kill.c dump_header() "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd", the
    # line as a mail client or a terminal wraps it after the colon
    ("bash invoked oom-killer:", "oom", "error"),
    # OpenVZ's kernel: kernel/bc/oom_kill.c out_of_memory_in_ub() -> oom_kill_process(..., "Out of memory in UB")
    # printed as "%s %u: OOM killed process %d (%s) score %d vm:%lukB, rss:%lukB, swap:%lukB"; the global path's "Out of
    # memory"; ub_oom_mm_dead() "OOM killed process %s (pid=%d, ve=%d) exited, free=%lu."
    ("Out of memory in UB 1001: OOM killed process 311 (mysqld) score 0 vm:1212112kB, rss:84964kB, swap:748kB", "oom",
     "error"),
    ("Out of memory: OOM killed process 9 (java) score 812 vm:4500000kB, rss:3900000kB, swap:0kB", "oom", "error"),
    ("OOM killed process mysqld (pid=311, ve=1001) exited, free=20480.", "oom", "error"),
    # ---- IBM Blue Gene/L's RAS events, as loghub's BGL templates list them (BGL/BGL_templates.csv): corrected DDR and
    # cache errors (info), machine checks and thresholds (warning), the I/O node's Lustre mount
    ("3 ddr errors(s) detected and corrected on rank 1, symbol 12, bit 6", "mce", "info"),
    ("7 ddr error(s) detected and corrected on rank 0, symbol 3 over 811 seconds", "mce", "info"),
    ("total of 14 ddr error(s) detected and corrected", "mce", "info"),
    ("CE sym 22, at 0x1b7d6f40, mask 0x04", "mce", "info"),
    ("2 L3 EDRAM error(s) (dcr 0x0157) detected and corrected", "mce", "info"),
    ("instruction cache parity error corrected", "mce", "info"),
    ("MACHINE CHECK PLB write IRQ (mc=e08x iar 0x0010a3c4 lr 0x0010a3b0)", "mce", "warning"),
    ("machine check interrupt (bit=0x1d): L2 dcache unit data parity error", "mce", "warning"),
    ("L3 major internal error", "mce", "warning"),
    ("ddr: redundant bit steering failed, sequencer timeout", "mce", "warning"),
    ("ddr: Unable to steer 7 1 - rank is already steering symbol 22 Due to multiple symbols being over the correctable "
     "error threshold, consider replacing the card", "mce", "warning"),
    ("1024 correctable errors exceeds threshold (iar 0x00100ec4 lr 0x00100e8c", "mce", "warning"),
    ("external input interrupt (unit=0x02 bit=0x00): number of corrected SRAM errors has exceeded threshold", "mce",
     "warning"),
    ("Lustre mount FAILED : bglio77 : point /p/gb2", "nfs", "warning"),
    # ---- Facebook OpenBMC ipmid sel.c: syslog(LOG_CRIT, "SEL Entry: FRU: %d, Record: %s (0x%02X), Time: %s, Sensor: %s
    # (0x%02X), Event Data: (%s) %s", ...) with pal_parse_sys_sts_event()'s "FM_Throttle throttle", "SYS_Throttle
    # throttle", "MB_Throttle throttle", "SOC thermal trip", "PCH thermal trip", then " Assertion"
    ("SEL Entry: FRU: 3, Record: Standard (0x02), Time: 2024-06-01 10:11:12, Sensor: SYSTEM_STATUS (0x10), Event Data: "
     "(02FFFF) SYS_Throttle throttle Assertion", "thermal", "warning"),
    ("SEL Entry: FRU: 1, Record: Standard (0x02), Time: 2024-06-01 10:11:12, Sensor: SYSTEM_STATUS (0x10), Event Data: "
     "(00FFFF) SOC thermal trip Assertion", "thermal", "warning"),
    # ---- Mooncake's transfer engine (worker_pool.cpp): LOG(ERROR) << "Worker: Process failed for slice (opcode: " ...
    # << "): " << ibv_wc_status_str(wc.status) (rdma-core libibverbs/enum_strs.c), and "Worker: Failed to poll
    # completion queue"
    ("E0304 11:12:13.000001 8812 worker_pool.cpp:245] Worker: Process failed for slice (opcode: 1, source_addr: "
     "0x7f12a0000000, length: 65536, dest_addr: 0x7e0000001000, local_nic: mlx5_3, peer_nic: gpu7:12001@mlx5_1, "
     "dest_rkey: 2101, retry_cnt: 1): general error", "ib", "error"),
    ("E0304 11:12:13.000001 8812 workers.cpp:310] Worker: Process failed for slice (opcode: 0, source_addr: 0x7f0, "
     "dest_addr: 0x7e0, length: 4096, local_nic: erdma_1): fatal error", "ib", "error"),
    ("E0304 11:12:13.000001 8812 worker_pool.cpp:230] Worker: Failed to poll completion queue", "ib", "error"),
    # ---- drivers/pci/pci.c pci_dev_wait(): pci_warn(dev, "not ready %dms after %s; giving up\n", ...) with the reset
    # types "FLR", "bus reset", "resume", "D3hot", "PM D3hot->D0"; the pci_info "... waiting" while it waits (info)
    ("nvidia 0000:41:00.0: not ready 65535ms after resume; giving up", "pcie", "error"),
    ("pcieport 0000:00:1c.0: not ready 65535ms after bus reset; giving up", "pcie", "error"),
    ("mlx5_core 0000:c1:00.1: not ready 60000ms after PM D3hot->D0; giving up", "pcie", "error"),
    ("nvme 0000:5e:00.0: not ready 1023ms after FLR; waiting", "pcie", "info"),
    # ---- SPDK lib/nvme: SPDK_ERRLOG's "[%s] %s:%4d:%s: *ERROR*: " header ("aborting outstanding command", "Failed to
    # initialize SSD: %s", "CQ transport error %d (%s) on qpair id %hu"); spdk_nvme_print_completion()'s *NOTICE* with
    # the media errors of its status table
    ("[2024-03-01 10:00:00.000001] nvme_pcie_common.c: 677:nvme_pcie_qpair_abort_trackers: *ERROR*: aborting "
     "outstanding command", "disk", "warning"),
    ("nvme.c: 710:nvme_ctrlr_poll_internal: *ERROR*: Failed to initialize SSD: 0000:88:00.0", "disk", "warning"),
    ("[2024-03-01 10:00:00.000001] nvme_qpair.c: 804:spdk_nvme_qpair_process_completions: *ERROR*: CQ transport "
     "error -6 (No such device or address) on qpair id 1", "disk", "warning"),
    ("nvme_qpair.c: 474:spdk_nvme_print_completion: *NOTICE*: UNRECOVERED READ ERROR (02/81) qid:1 cid:12 cdw0:0 "
     "sqhd:0001 p:1 m:0 dnr:0", "disk", "warning"),
    # ---- smartmontools ataprint.cpp: "Error %d occurred at disk power-on lifetime: %d hours (%d days + %d hours)",
    # the extended log's "Error %u [%u] occurred at ...", the register row's "  Error: %s" ("UNC %d sectors at LBA =
    # 0x%08x = %u", "IDNF at LBA = ...", "ICRC, ABRT ..."); nvme-cli's error log "status_field    : %#x(%s)" (old
    # names and libnvme's descriptions)
    ("Error 12 occurred at disk power-on lifetime: 4100 hours (170 days + 20 hours)", "disk", "warning"),
    ("Error 3 [2] occurred at disk power-on lifetime: 90 hours (3 days + 18 hours)", "disk", "warning"),
    ("  40 51 08 10 20 30 e0  Error: UNC 8 sectors at LBA = 0x00302010 = 3153936", "disk", "warning"),
    ("  84 51 00 00 00 00 a0  Error: ICRC, ABRT at LBA = 0x00000000 = 0", "disk", "warning"),
    ("status_field    : 0x4281(Unrecovered Read Error: The read data could not be recovered from the media)", "disk",
     "warning"),
    ("status_field    : 0xc500(WRITE_FAULT: The write data could not be committed to the media)", "disk", "warning"),
    # ---- the Ceph kernel client with the client identity newer kernels print (fs/ceph/super.h pr_info_client():
    # "[%pU %llu]: " after pr_fmt "ceph: "; libceph's "libceph (%pU e%u): "), fs/ceph/mds_client.c "mds%d closed our
    # session", "mds%d reconnect denied"; ceph-fuse (src/ceph_fuse.cc "ceph-fuse[%d]: ceph mount failed with %s")
    ("ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: mds1 closed our session", "nfs", "warning"),
    ("ceph: mds0 reconnect denied", "nfs", "warning"),
    ("libceph (9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b e2301): osd7 down", "nfs", "warning"),
    ("ceph-fuse[2211]: ceph mount failed with (110) Connection timed out", "nfs", "warning"),
    # ---- the verbs examples' error macros (a tutorial's "[ERROR] (%s:%d: errno: %s) " M): a verbs resource named in
    # lower case ("Failed to create qp", "Failed to register mr", "Failed to modify qp to RTR")
    ("[ERROR] (setup_ib.c:184:setup_ib: errno: Cannot allocate memory) Failed to create qp", "ib", "error"),
    ("[ERROR] (ib.c:88:modify_qp_to_rtr: errno: Invalid argument) Failed to modify qp to RTR", "ib", "error"),
    ("Failed to register mr of 4096 bytes", "ib", "error"),
    # ---- perftest check_link(): fprintf(stderr, " Port number %d state is %s\n", port, portStates[state]) ("Nop",
    # "Down", "Init", "Armed", "Active Defer"); fabtests' FT_PRINTERR: call "(): %s:%d, ret=%d (%s)"; OpenSM's numbered
    # "ERR %04X: " after osm_log's header; mlx5e's health reporters ("ERR CQE on SQ: 0x%x", "RX timeout on channel: %d,
    # ICOSQ: 0x%x RQ: 0x%x, CQ: 0x%x"); NVSHMEM's "init failed for remote transport: %s" (non-fatal: info)
    (" Port number 2 state is Init", "ib", "warning"),
    ("fi_av_insert(): rdm/shared.c:88, ret=-19 (No such device)", "ib", "error"),
    ("Jan 11 09:52:01 sm1 OpenSM[1234]: ERR 3A37: Failed to send MAD", "ib", "warning"),
    ("mlx5_core 0000:3b:00.1 ens1f1np1: ERR CQE on RQ: 0x2c1", "ib", "warning"),
    ("mlx5_core 0000:3b:00.1 ens1f1np1: RX timeout on channel: 7, ICOSQ: 0x12 RQ: 0x34, CQ: 0x56", "ib", "warning"),
    ("WARN: init failed for remote transport: ibrc", "ib", "info"),
    # ---- the Ceph client's mount without a metadata server (fs/ceph/super.c "No mds server is up or the cluster is
    # laggy"); the soft-lockup line with its "BUG: " cut off (kernel/watchdog.c "BUG: soft lockup - CPU#%d stuck for
    # %us! [%s:%d]"); panic_on_rcu_stall's panic("RCU Stall"); RCU Tasks' "%s: %s grace period number %lu (since boot)
    # is %lu jiffies old." (kernel/rcu/tasks.h)
    ("ceph: No mds server is up or the cluster is laggy", "nfs", "warning"),
    ("soft lockup - CPU#12 stuck for 22s! [python3:88121]", "soft_lockup", "error"),
    ("Kernel panic - not syncing: RCU Stall", "soft_lockup", "error"),
    ("rcu_tasks_wait_gp: rcu_tasks grace period number 1201 (since boot) is 10215 jiffies old.", "soft_lockup",
     "error"),
    # ---- mce_panic(): HW_ERR "Machine check: %s" with the severity table's reason, printed on the way to panic(), and
    # the panics "Fatal local machine check", "Machine check from unknown source", "MCIP not set in MCA handler"
    ("mce: [Hardware Error]: Machine check: Data load in unrecoverable area of kernel", "mce", "critical"),
    ("mce: [Hardware Error]: Machine check: Instruction fetch error in kernel", "mce", "critical"),
    ("Kernel panic - not syncing: Fatal local machine check", "mce", "critical"),
    ("Kernel panic - not syncing: Machine check from unknown source", "mce", "critical"),
    # ---- PyTorch's torch/cuda/__init__.py _lazy_init(): "No CUDA GPUs are available" (cudaErrorNoDevice)
    ("RuntimeError: No CUDA GPUs are available", "cuda", "error"),
    # ---- Omni-Path's libraries: opa-psm2 "PSM2 no hfi units are active (err=%d)", PSM3 "PSM3 can't open nic unit: %d
    # (err=%d)", "Unable to initialize verbs NIC %s (unit %d:%d)", libfabric's psm2 provider FI_INFO "no PSM2 device is
    # active.", psm_assert's "Assertion failure at %s:%d: %s"; MPICH's errnames "OFI fi_getinfo() failure (%s:%d:%s:%s)"
    ("gpu3.4411PSM2 no hfi units are active (err=23)", "ib", "error"),
    ("gpu3:rank2: PSM3 can't open nic unit: 1 (err=23)", "ib", "error"),
    ("[1700000000.000001] gpu3:rank2.a.out: Unable to initialize verbs NIC /sys/class/infiniband/irdma0 (unit 0:0)",
     "ib", "error"),
    ("libfabric:4411:1700000000:ofi_rxm:psm2:core:psmx2_getinfo():536<info> no PSM2 device is active.", "ib", "error"),
    ("gpu3.4411Assertion failure at ptl_ips/ips_proto.c:1442: ipsaddr != NULL", "ib", "error"),
    ("MPIDI_OFI_mpi_init_hook(455): OFI fi_getinfo() failure (ofi_init.c:455:MPIDI_OFI_mpi_init_hook:No data "
     "available)", "ib", "error"),
    # Open MPI's component selection (mca_base_components_select.c "select: init returned failure for component %s":
    # info, the run falls back)
    ("[gpu3:04411] select: init returned failure for component openib", "ib", "info"),
    # NVMe over RDMA (drivers/nvme/host/rdma.c "rdma connection establishment failed (%d)", "route resolve failed (%d)")
    ("nvme nvme2: rdma connection establishment failed (-110)", "ib", "warning"),
    ("nvme nvme2: route resolve failed (-101)", "ib", "warning"),
    # an RDMA connection class logging under its source file (Collage's co/rdmaConnection.cpp via LBERROR)
    ("4411 Main /opt/eq/libs/co/rdmaConnection.cpp:512 18 Failed to resolve route to destination : Connection timed "
     "out", "ib", "warning"),
    # ---- DCGM's NVSwitch module through DCGM's log format ("%s LEVEL [PID:TID] [[NvSwitch]] %s [FILE:LINE] [FUNC]")
    ("2024-06-01 10:11:12.131 ERROR [811:844] [[NvSwitch]] Failed to read the fabric manager state [DcgmModuleNvSwitch"
     ".cpp:512] [DcgmNs::DcgmModuleNvSwitch::RunOnce]", "fabric_manager", "warning"),
    # ---- systemd's service.c and unit.c for the shared filesystems' units ("Stopping timed out. Terminating.", "State
    # '%s' timed out. Killing.", "Failed with result '%s'.", "Main process exited, code=%s, status=%i/%s")
    ("Aug 21 10:31:41 cn7 systemd[1]: beegfs-client.service: Failed with result 'timeout'.", "nfs", "warning"),
    ("systemd[1]: rpc-statd.service: Main process exited, code=exited, status=1/FAILURE", "nfs", "warning"),
    ("systemd[1]: lnet.service: State 'stop-sigterm' timed out. Killing.", "nfs", "warning"),
    # ---- mount.nfs under a syslog tag without a PID (RFC 3164's TAG:), nfs-utils network.c "%s: Failed to resolve
    # server %s: %s"; TensorFlow's cuda_driver.cc LOG(ERROR) << "failed call to cuInit: " << ToString(res)
    ("Jan  3 21:17:00 node7 cloud-init: mount.nfs: Failed to resolve server nas1: Name or service not known", "nfs",
     "warning"),
    ("mount.nfs: Failed to resolve server nas1: Name or service not known", "nfs", "warning"),
    ("E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no "
     "CUDA-capable device is detected", "cuda", "error"),
    ("2024-01-01 10:00:00.000001: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: "
     "UNKNOWN ERROR (303)", "cuda", "error"),
    # ---- powerpc's machine_check_print_event_info(): "%sMCE: CPU%d: machine check (%s) %s %s %s %s[%s]" (severity
    # Harmless/Warning/Error/Severe/Fatal, disposition Recovered/Not recovered); 4.x's "%s%s Machine check interrupt
    # [%s]"
    ("MCE: CPU80: machine check (Severe) Host UE Load/Store DAR: 00007fff8b6e0000 paddr: 000000203b6e0000 [Not "
     "recovered]", "mce", "critical"),
    ("Severe Machine check interrupt [Not recovered]", "mce", "critical"),
    ("MCE: CPU8: machine check (Warning) Host SLB Multihit DAR: 0000000000000000 [Recovered]", "mce", "info"),
    # ---- BMC logs: HPE iLO's IML ("Uncorrectable Machine Check Exception (Board %d, Processor %d, APIC ID ...)",
    # "Corrected Memory Error threshold exceeded (...)"); ipmitool's sensor-specific event strings (lib/ipmi_sel.c:
    # Processor "IERR", "FRB2/Hang in POST failure"; Memory "Memory Device Disabled"; Critical Interrupt "Bus
    # Uncorrectable error"); Dell's registry (CPU0000 "CPU %d machine check error detected.", MEM0001 "Multi-bit memory
    # errors detected on a memory device at location(s) %s.", MEM0701 "Correctable memory error rate exceeded for %s.")
    ("Uncorrectable Machine Check Exception (Board 0, Processor 1, APIC ID 0x00000000, Bank 0x00000004, Status "
     "0xB2000000'00070F0F, Address 0x00000000'00000000, Misc 0x00000000'00000000)", "mce", "warning"),
    ("Corrected Memory Error threshold exceeded (Processor 1, Memory Module 3)", "mce", "warning"),
    ("   3 | 01/01/2024 | 10:00:00 | Processor CPU1 Status | IERR | Asserted", "mce", "warning"),
    ("  1f | 01/01/2024 | 10:00:00 | Processor #0x04 | FRB2/Hang in POST failure | Asserted", "mce", "warning"),
    ("  2a | 01/01/2024 | 10:00:00 | Memory #0x02 | Memory Device Disabled | Asserted", "mce", "warning"),
    ("   8 | 01/01/2024 | 10:00:00 | Critical Interrupt PCIE Error | Bus Uncorrectable error | Asserted", "aer",
     "warning"),
    ("CPU 2 machine check error detected.", "mce", "warning"),
    ("Multi-bit memory errors detected on a memory device at location(s) DIMM_A1.", "mce", "warning"),
    ("Correctable memory error rate exceeded for DIMM_B8.", "mce", "warning"),
    # ---- drivers/base/firmware_loader/main.c "Direct firmware load for %s failed with error %d" for the GPU's engine
    # firmware (nouveau's nvidia/<chip>/gr/*.bin; a platform GPU's device name): gpu_init; the GSP's own images stay gsp
    ("nouveau 17000000.gpu: Direct firmware load for nvidia/gp10b/gr/fecs_inst.bin failed with error -2", "gpu_init",
     "error"),
    ("nouveau 0000:01:00.0: firmware: failed to load nvidia/tu102/gr/sw_ctx.bin (-2)", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: Direct firmware load for nvidia/tu102/acr/ucode_unload.bin failed with error -2", "gsp",
     "error"),
    # ---- the kubelet's operation_generator.go "MountVolume.SetUp failed for volume %q : %v" with mount-utils' "mount
    # failed: %v Mounting command: %s Mounting arguments: %s", for a network filesystem's volume
    ('MountVolume.SetUp failed for volume "home" : mount failed: exit status 32 Mounting command: mount Mounting '
     'arguments: -t nfs4 nas1:/export/home /var/lib/kubelet/pods/x/volumes/kubernetes.io~nfs/home', "nfs", "warning"),
    ('  Warning  FailedMount  3m  kubelet  MountVolume.SetUp failed for volume "lustre-scratch" : mount failed: exit '
     'status 32', "nfs", "warning"),
    # ---- user-space OOM killers: earlyoom (main.c "low memory! at or below SIGTERM limits: mem %5.2f%%, swap %5.2f%%",
    # kill.c "sending %s to process %d uid %d \"%s\": badness %d, VmRSS %lld MiB"), the kubelet's eviction message
    # (eviction/helpers.go "The node was low on resource: %v. Container %s was using %s, which exceeds its request of
    # %s."), PyTorch's DataLoader ("DataLoader worker (pid %d) is killed by signal: Killed.", the shm hint), Ray's
    # raylet ("%d Workers (tasks / actors) killed due to memory pressure (OOM)")
    ("earlyoom: low memory! at or below SIGTERM limits: mem  9.87%, swap 10.00%", "oom", "error"),
    ('earlyoom[881]: sending SIGKILL to process 4242 uid 1000 "python3": badness 912, VmRSS 61234 MiB', "oom", "error"),
    ("The node was low on resource: memory. Container trainer was using 61Gi, which exceeds its request of 8Gi.", "oom",
     "error"),
    ("RuntimeError: DataLoader worker (pid 88121) is killed by signal: Killed.", "oom", "error"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "oom", "error"),
    ("(raylet) node_manager.cc:3097: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed "
     "due to other reasons at node", "oom", "error"),
    # ---- PyTorch's older TCPStore message with its typo ("is setting up NCCL communicator and retreiving ncclUniqueId
    # from [%d] via c10d key-value store by key '%s', but store->get('%s') got error: %s")
    ("RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value store "
     "by key '0', but store->get('0') got error: Socket Timeout", "nccl", "error"),
    # ---- fs/ext4/inode.c ext4_writepages(): "%s: jbd2_start: %ld pages, ino %lu; err %d"
    ("EXT4-fs (dm-3): ext4_writepages: jbd2_start: 9223372036854775807 pages, ino 88; err -5", "disk", "warning"),
    # ---- the GPU's memory in DCGM's dcgm_errors.h messages ("Detected %d volatile double-bit ECC error(s) in GPU %u.",
    # "GPU %u had uncorrectable memory errors and row remapping failed.", "GPU %u had memory errors and row remappings
    # are pending", "A corrupt InfoROM has been detected in GPU %u.") and nvidia-smi -q's fields ("Remapping Failure
    # Occurred : Yes", "DRAM Uncorrectable : N"): filed under xid, as dcgm_health files DCGM's memory system
    ("DCGM_FR_VOLATILE_DBE_DETECTED: Detected 2 volatile double-bit ECC error(s) in GPU 0.", "xid", "error"),
    ("GPU 5 had uncorrectable memory errors and row remapping failed.", "xid", "error"),
    ("GPU 5 had memory errors and row remappings are pending", "xid", "error"),
    ("A corrupt InfoROM has been detected in GPU 1.", "xid", "error"),
    ("        Remapping Failure Occurred        : Yes", "xid", "error"),
    ("            DRAM Uncorrectable            : 3", "xid", "error"),
    ("CUDA APIs have indicated that a double-bit ECC error has occured on GPU 2.", "xid", "error"),
    ("Found 12 faulty memory elements on GPU 1", "xid", "error"),
    # ---- DCGM's NVLink and NVSwitch messages (dcgm_errors.h: "Detected %ld %s NvLink errors on GPU %u's NVLink which
    # exceeds threshold of %u", "Only %u NvLinks are up out of the expected %u", "Detected fatal errors on NvSwitch %u
    # link %u", "NvSwitch %u - Only %u NvLinks are up out of the expected %u")
    ("Detected 12 CRC Flit NvLink errors on GPU 0's NVLink which exceeds threshold of 10", "nvlink", "warning"),
    ("Only 10 NvLinks are up out of the expected 18", "nvlink", "warning"),
    ("Detected fatal errors on NvSwitch 2 link 17", "sxid", "warning"),
    ("NvSwitch 1 - Only 30 NvLinks are up out of the expected 32", "sxid", "warning"),
    # ---- the AER and DPC port services as kernels before 5.x named their devices ("aer 0000:00:03.0:pcie002: ...",
    # drivers/pci/pcie/aer/aerdrv_errprint.c "PCIe Bus Error: severity=%s, type=%s, id=%04x(%s)"; pcie-dpc.c's
    # dev_info "DPC containment event, status:%#06x source:%#06x")
    ("aer 0000:00:03.0:pcie002: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
     "id=0018(Requester ID)", "aer", "error"),
    ("aer 0000:00:03.0:pcie002: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=0018(Receiver ID)", "aer",
     "info"),
    # (kind pcie since round 7: the port takes its link down, as round6.tsv's rules half labels DPC's lines)
    ("dpc 0000:00:01.0:pcie010: DPC containment event, status:0x1f01 source:0x0000", "aer", "error"),
    # ---- CUDA failures in other printers' words: PyTorch's CUDAException.h note and C10_CUDA_DRIVER_CHECK ("CUDA
    # driver error: %s"), the CUDA samples' "CUDA Error: %s" (cudaGetErrorString), numba's "CudaAPIError: [%d] Call to
    # %s results in %s", TensorFlow's "CUDA runtime implicit initialization on GPU:%d failed. Status: %s", PyTorch's "%s
    # with CUDA capability sm_%d is not compatible with the current PyTorch installation.", cuda-gdb's "CUDA Exception:
    # Warp %s" and "received signal CUDA_EXCEPTION_%d, %s", compute-sanitizer's "Invalid __global__ read of size %d"
    # (the note alone is info since round 15, lead15_cuda_async_hint: it follows the error, which is read on its own
    # line; round 15's collectors filed it benign on three pages)
    ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect.", "cuda", "info"),
    ("RuntimeError: CUDA driver error: unknown error", "cuda", "error"),
    ("CUDA Error: no kernel image is available for execution on the device", "cuda", "error"),
    ("numba.cuda.cudadrv.driver.CudaAPIError: [700] Call to cuMemcpyDtoH results in UNKNOWN_CUDA_ERROR", "cuda",
     "error"),
    ("tensorflow.python.framework.errors_impl.InternalError: CUDA runtime implicit initialization on GPU:0 failed. "
     "Status: device kernel image is invalid", "cuda", "error"),
    ("NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.", "cuda",
     "error"),
    ("CUDA Exception: Warp Illegal Address", "cuda", "error"),
    ('Thread 1 "python" received signal CUDA_EXCEPTION_14, Warp Illegal Address.', "cuda", "error"),
    ("========= Invalid __global__ read of size 4 bytes", "cuda", "error"),
    ("========= ERROR SUMMARY: 3 errors", "cuda", "error"),
    # ---- kernel/hung_task.c: the blocker it names since 6.x ("INFO: task %s:%d is blocked on a mutex likely owned by
    # task %s:%d.", "... blocked on a semaphore likely last held by task %s:%d"), and "Future hung task reports are
    # suppressed, see sysctl kernel.hung_task_warnings" (info: evidence of the report before it)
    ("INFO: task kworker/0:1:88 is blocked on a mutex likely owned by task modprobe:901.", "hung_task", "warning"),
    ("INFO: task python:1234 blocked on a semaphore likely last held by task python:4321", "hung_task", "warning"),
    ("Future hung task reports are suppressed, see sysctl kernel.hung_task_warnings", "hung_task", "info"),
    # ---- glibc's strerror(EIO) after a shared filesystem's mount point (coreutils "cp: error reading %s: %s", Python's
    # "OSError: [Errno 5] Input/output error: %r"); GPFS's "Node %s (%s) is being expelled because of an expired lease."
    ("OSError: [Errno 5] Input/output error: '/lustre/scratch/run7/ckpt.pt'", "nfs", "warning"),
    ("cp: error reading '/gpfs/proj/data.bin': Input/output error", "nfs", "warning"),
    ("mmfsd: Node 10.0.0.5 (c1n5) is being expelled because of an expired lease.", "nfs", "warning"),
    # ---- nouveau's GSP-RM (nvkm/subdev/gsp: nvkm_error() behind the subdev name "gsp: "), read before the other
    # engines' "init failed" (gpu_init)
    ("nouveau 0000:01:00.0: gsp: init failed, -110", "gsp", "error"),
    ("nouveau 0000:01:00.0: gsp: rpc fn:22 failed with error -110", "gsp", "error"),
    ("nouveau 0000:01:00.0: gsp: mbox 00000001 00000000", "gsp", "error"),
    ("nouveau 0000:01:00.0: gr: init failed, -110", "gpu_init", "error"),
]


BENIGN_TWINS = [
    # powerpc's watchdog: a CPU that recovered, its setup notes
    "Watchdog CPU:17 became unstuck",
    "watchdog: CPU 17 became unstuck TB:7812345678",
    "watchdog: Set the NMI watchdog timeout factor to 20%",
    # the machine-check code's healthy boot lines
    "mce: CPU0: Thermal monitoring enabled (TM1)",
    "mce: Using 22 MCE banks",
    # OpenVZ's OOM bookkeeping (the generation markers)
    ">>> 1001 oom generation 3 starts",
    # Blue Gene/L's job and control-system notes
    "ciod: generated 128 core files for program /bgl/apps/a.out",
    "BGLMaster has been started: ./BGLMaster --consoleip 127.0.0.1 --consoleport 32035 --configfile bglmaster.init",
    # OpenBMC's throttle and thermal trip ending (the deassertion)
    "SEL Entry: FRU: 1, Record: Standard (0x02), Time: 2024-06-01 10:11:12, Sensor: SYSTEM_STATUS (0x10), Event Data: "
    "(10FFFF) FM_Throttle throttle Deassertion",
    # Mooncake's own progress notes
    "I0304 11:12:13.000001 8812 transfer_engine.cpp:120] Transfer Engine starting. Server: 10.0.0.7:12001",
    # the PCI core's device that answered again
    "nvme 0000:5e:00.0: ready 2047ms after FLR",
    # SPDK's command print and a completion aborted by a queue deletion (its teardown)
    "nvme_qpair.c: 248:nvme_io_qpair_print_command: *NOTICE*: READ sqid:1 cid:5 nsid:1 lba:0 len:8 PRP1 0x0 PRP2 0x0",
    # a disk whose error log is empty or healthy
    "No Errors Logged",
    "status_field    : 0(SUCCESS: The command completed successfully)",
    # the Ceph clients at work
    "ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: mds1 reconnect success",
    "libceph: mon1 10.0.0.2:6789 session established",
    "ceph-fuse[2211]: starting ceph client",
    # a lower-case word that only begins like a verbs resource
    "Failed to create pdf report",
    # perftest on an active port; an OpenSM line at info level
    " Port number 1 state is Active",
    "Mar 02 04:05:06 812345 [7F3A2C00] 0x02 -> SUBNET UP",
    # a workqueue named in a sentence, the machine-check code's boot notes
    "python: workqueue lockup is a word",
    "mce: [Hardware Error]: Run the above through 'mcelog --ascii'",
    # systemd's healthy unit lines, Open MPI selecting a fabric, NVMe/RDMA's connected controller
    "systemd[1]: beegfs-client.service: Deactivated successfully.",
    "systemd[1]: rpc-statd.service: Main process exited, code=exited, status=0/SUCCESS",
    "[gpu3:04411] select: initializing btl component ofi",
    "nvme nvme2: new ctrl: NQN \"nqn.2014-08.org.nvmexpress:uuid:1\", addr 10.0.0.9:4420",
    "2024-06-01 10:11:12.131 INFO [811:844] [[NvSwitch]] Connected to the fabric manager",
    # the BMC's healthy processor and memory events, an IERR that cleared
    "   3 | 01/01/2024 | 10:00:00 | Processor CPU1 Status | Presence detected | Asserted",
    "   3 | 01/01/2024 | 10:00:00 | Processor CPU1 Status | IERR | Deasserted",
    "   5 | 01/01/2024 | 10:00:00 | Memory DIMM_A1 | Presence Detected | Asserted",
    # another device's optional firmware; a local volume the kubelet could not mount (not a network filesystem)
    "iwlwifi 0000:00:14.3: Direct firmware load for iwlwifi-so-a0-gf-a0-86.ucode failed with error -2",
    'MountVolume.SetUp failed for volume "scratch" : mount failed: exit status 32 Mounting command: mount Mounting '
    'arguments: -t ext4 /dev/nvme1n1 /var/lib/kubelet/pods/x/volumes/kubernetes.io~local-volume/scratch',
    # the killers' and the scheduler's healthy notes
    "earlyoom: mem avail: 51234 of 64000 MiB (80.05%), swap free: 8000 of 8000 MiB (100.00%)",
    "The node had condition: [DiskPressure].",
    # nvidia-smi -q on a GPU whose memory is clean
    "        Remapping Failure Occurred        : No",
    "            DRAM Uncorrectable            : 0",
    "        Pending Page Blacklist            : No",
    # cudaGetErrorString(cudaSuccess), a clean sanitizer run
    "CUDA Error: no error",
    "========= ERROR SUMMARY: 0 errors",
    # EIO on a local path is the local disk's, not the shared filesystem's
    "cp: error reading '/tmp/x': Input/output error",
    # ib_srpt.c srpt_add_one()'s "MAD registration failed for %s-%d." on a RoCE port at every boot (info)
    "ib_srpt MAD registration failed for mlx5_0-1.",
    "ib_srpt srpt_add_one(mlx5_1) failed.",
]


NEVER_DRAIN = [
    "3 ddr errors(s) detected and corrected on rank 1, symbol 12, bit 6",
    "MACHINE CHECK PLB write IRQ (mc=e08x iar 0x0010a3c4 lr 0x0010a3b0)",
    "Lustre mount FAILED : bglio77 : point /p/gb2",
    "SEL Entry: FRU: 1, Record: Standard (0x02), Time: 2024-06-01 10:11:12, Sensor: SYSTEM_STATUS (0x10), Event Data: "
    "(00FFFF) SOC thermal trip Assertion",
    "E0304 11:12:13.000001 8812 worker_pool.cpp:230] Worker: Failed to poll completion queue",
    "[2024-03-01 10:00:00.000001] nvme.c: 710:nvme_ctrlr_poll_internal: *ERROR*: Failed to initialize SSD: "
    "0000:88:00.0",
    "Error 12 occurred at disk power-on lifetime: 4100 hours (170 days + 20 hours)",
    "ceph-fuse[2211]: ceph mount failed with (110) Connection timed out",
    " Port number 2 state is Init",
    "gpu3.4411PSM2 no hfi units are active (err=23)",
    "CPU 2 machine check error detected.",
    'earlyoom[881]: sending SIGKILL to process 4242 uid 1000 "python3": badness 912, VmRSS 61234 MiB',
    "GPU 5 had uncorrectable memory errors and row remapping failed.",
    "Jan 11 09:52:01 gpu12 python[4242]: MCE: CPU80: machine check (Severe) Host UE Load/Store [Not recovered]",
    "Jan 11 09:52:01 gpu12 python[4242]: Kernel panic - not syncing: Fatal local machine check",
    "Jan 11 09:52:01 gpu12 python[4242]: nvidia 0000:41:00.0: not ready 65535ms after resume; giving up",
    "   3 | 01/01/2024 | 10:00:00 | Processor CPU1 Status | IERR | Asserted",
    "Uncorrectable Machine Check Exception (Board 0, Processor 1, APIC ID 0x00000000, Bank 0x00000004)",
    "systemd[1]: beegfs-client.service: Failed with result 'timeout'.",
    "2024-06-01 10:11:12.131 ERROR [811:844] [[NvSwitch]] Failed to read the fabric manager state",
    "fi_av_insert(): rdm/shared.c:88, ret=-19 (No such device)",
    "Jan 11 09:52:01 sm1 OpenSM[1234]: ERR 3A37: Failed to send MAD",
    "Jan 11 09:52:01 gpu12 python[4242]: mce: [Hardware Error]: Machine check: Data load in unrecoverable area of "
    "kernel",
    # a job's process that writes the kernel's words under its own tag: still no node fault
    "Jan 11 09:52:01 gpu12 python[4242]: Watchdog CPU:3 Hard LOCKUP",
    "Jan 11 09:52:01 gpu12 python[4242]: Kernel panic - not syncing: AEST: unrecoverable error encountered",
    "Jan 11 09:52:01 gpu12 python[4242]: mce: CPUs not responding to MCE broadcast (may include false positives): 0-3",
]


KERNEL_LINES = [
    "Watchdog CPU:3 Hard LOCKUP",
    "mce: CPUs not responding to MCE broadcast (may include false positives): 0-3,64-67",
    "AEST: {4}[Hardware Error]: Hardware error from AEST processor.12",
    "Kernel panic - not syncing: AEST: unrecoverable error encountered",
    "nvidia 0000:41:00.0: not ready 65535ms after resume; giving up",
    "ceph: [9a3b1c2d-0000-4e5f-8a9b-0c1d2e3f4a5b 4171]: mds1 closed our session",
    "Out of memory in UB 1001: OOM killed process 311 (mysqld) score 0 vm:1212112kB, rss:84964kB, swap:748kB",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def test_the_hard_lockup_and_the_aest_panic_take_the_node_out() -> None:
    """A CPU that stopped taking interrupts, and an uncontainable error the AEST driver panicked on, are node faults."""
    for line in ("[  252.7] Watchdog CPU:59 Hard LOCKUP", "Kernel panic - not syncing: AEST: unrecoverable error "
                 "encountered"):
        findings = diagnose(line.encode())
        assert is_node_fault(findings[0], None), (line, findings[0].action)


def test_the_panic_reason_makes_its_machine_check_fatal() -> None:
    """mce_panic()'s reason line joins the machine check's event and takes it to a drain."""
    log = (b"mce: [Hardware Error]: CPU 0: Machine Check Exception: f Bank 3: bd80000000070134\n"
           b"mce: [Hardware Error]: RIP 10:<ffffffff8372f8bc> {memchr_inv+0x4c/0xf0}\n"
           b"mce: [Hardware Error]: Machine check: Data load in unrecoverable area of kernel\n"
           b"Kernel panic - not syncing: Fatal local machine check\n")
    findings = diagnose(log)
    assert [f.kind for f in findings] == ["mce"]
    assert (findings[0].severity, findings[0].action) == ("critical", "drain_node")
    assert len(findings[0].details["evidence"]) == 3


def test_aest_records_join_one_machine_check_event() -> None:
    """The AEST header and its detail lines are one event of the GHES group, as the driver prints one record."""
    log = (b"[   64.1] AEST: {1}[Hardware Error]: Hardware error from AEST memory.90d0000\n"
           b"[   64.2] AEST: {1}[Hardware Error]:  Error from memory at SRAT proximity domain 0x0\n"
           b"[   64.3] AEST: {1}[Hardware Error]:   ERR0STATUS: 0xc4800390\n")
    findings = diagnose(log)
    assert [f.kind for f in findings] == ["mce"]
    assert len(findings[0].details["evidence"]) == 2
