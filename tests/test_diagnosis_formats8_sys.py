"""Round 8's node-platform printers (rules8-sys), from their format strings: the PCI core's AER, DPC and EDR services
(drivers/pci/pcie/aer.c, dpc.c, edr.c), EDAC's panic on an uncorrected error (drivers/edac/edac_mc.c), the kernel's
other allocation failures (mm/vmalloc.c, mm/page_alloc.c, arch/x86/mm/fault.c), systemd-oomd's swap kill and srun's
out-of-memory line for several tasks, and the crash notes that are not a segfault (arch/x86/kernel/signal.c, cet.c,
systemd-coredump). tests/data/kernel/printers/sys.tsv holds every format string of these families with its envelope;
this file holds what a row cannot say: the verdict, the trust, and that a job's or a daemon's line never drains.

Every line below is a format string of the public source named in the comment above it, its conversions filled in by
hand: no line is copied from a log or from the field corpus.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # ---- drivers/pci/pcie/aer.c __aer_print_error() "   [%2d] %-22s%s" for an unnamed bit, pci_print_aer()
    # "aer_uncor_severity: 0x%08x": details of the AER event (info); pr_err "no pci_dev for %04x:%02x:%02x.%x",
    # "buffer overflow in recovery for ...": an error whose recovery did not run (warning)
    ("nvidia 0000:3b:00.0:    [31] Unknown Error Bit", "aer", "info"),
    ("nvidia 0000:3b:00.0: aer_uncor_severity: 0x00462030", "aer", "info"),
    ("AER: no pci_dev for 0000:3b:00.0", "aer", "warning"),
    ("AER: buffer overflow in recovery for 0000:3b:00.0", "aer", "warning"),
    # ---- drivers/pci/pcie/dpc.c dpc_process_error() "%s detected", dpc_process_rp_pio_error()'s log
    ("pcieport 0000:00:03.1: DPC: ERR_FATAL detected", "aer", "warning"),
    ("pcieport 0000:00:03.1: DPC: ERR_NONFATAL detected", "aer", "warning"),
    ("pcieport 0000:00:03.1: DPC: software trigger detected", "aer", "warning"),
    ("pcieport 0000:00:03.1: DPC: rp_pio_status: 0x00000001, rp_pio_mask: 0x00030000", "aer", "warning"),
    ("pcieport 0000:00:03.1: DPC: RP PIO severity=0x00000000, syserror=0x00000000, exception=0x00000000", "aer",
     "warning"),
    ("pcieport 0000:00:03.1: DPC: TLP Header: 0x04000001 0x0000000f 0x3b000000 0x00000000", "aer", "warning"),
    # ---- drivers/pci/pcie/edr.c edr_handle_event(): the firmware's notices are evidence of the DPC event (info), the
    # failure to find its source a warning
    ("pcieport 0000:a5:01.0: EDR: EDR event received", "aer", "info"),
    ("pcieport 0000:a5:01.0: EDR: Reported EDR dev: 0000:a9:10.0", "aer", "info"),
    ("pcieport 0000:a5:01.0: EDR: Failed to get error source device", "aer", "warning"),
    # ---- drivers/edac/edac_mc.c edac_ue_error(): panic("UE %s%son %s (%s%s)") with edac_mc_panic_on_ue
    ("Kernel panic - not syncing: UE memory read error on DIMM_B2 (channel:1 slot:0 page:0x2a3b4c offset:0x0 "
     "grain:32)", "mce", "critical"),
    # ---- mm/vmalloc.c, mm/page_alloc.c (before 4.15), arch/x86/mm/fault.c
    ("python3: vmalloc error: size 8589934592, page order 0, failed to allocate pages, mode:0xdc0(GFP_KERNEL|"
     "__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0-1", "oom", "warning"),
    ("python3: vmalloc error: size 8589934592, vm_struct allocation failed, mode:0xdc0(GFP_KERNEL), "
     "nodemask=(null)", "oom", "warning"),
    ("python3: page allocation stalls for 10012ms, order:0, mode:0x14280ca(GFP_HIGHUSER_MOVABLE|__GFP_ZERO), "
     "nodemask=(null)", "oom", "warning"),
    ("Huh VM_FAULT_OOM leaked out to the #PF handler. Retrying PF", "oom", "warning"),
    # ---- systemd src/oom/oomd-manager.c monitor_swap_contexts_handler(); Slurm src/srun/launch.c _task_finish()
    ("systemd-oomd[812]: Killed /system.slice/slurmstepd.scope/job_4411 due to memory used (130123456512) / total "
     "(135000000000) and swap used (8500000000) / total (8589930496) being more than 90.00%", "oom", "error"),
    ("srun: error: gpu-node[07-08]: tasks 0-15: Out Of Memory", "oom", "error"),
    ("srun: error: gpu-node07: tasks 0,2-3: Out Of Memory", "oom", "error"),
    # ---- arch/x86/kernel/signal.c signal_fault(), arch/x86/kernel/cet.c do_user_cp_fault(), systemd-coredump
    ("python3[48213] bad frame in rt_sigreturn frame:00007ffd1a2b3c40 ip:7f3a2b1c4d5e sp:7ffd1a2b3c40 "
     "orax:ffffffffffffffff in libc.so.6[7f3a2b100000+195000]", "segfault", "info"),
    ("python3[48213] control protection ip:7f3a2b1c4d5e sp:7ffd1a2b3c40 ssp:7f3a2a000ff8 error:1(near ret) in "
     "libc.so.6[7f3a2b100000+195000]", "segfault", "info"),
    ("systemd-coredump[48300]: Process 48213 (python3) of user 1001 terminated abnormally with signal 11/SEGV, "
     "processing...", "segfault", "info"),
    # ---- drivers/firmware/efi/cper.c cper_print_pcie(): a PCIe section's own fields say the record is AER's
    ("{3}[Hardware Error]:   port_type: 4, root port", "aer", "info"),
    ("{3}[Hardware Error]:   device_id: 0000:00:03.1", "aer", "info"),
    ("{3}[Hardware Error]:   vendor_id: 0x1022, device_id: 0x1483", "aer", "info"),
    ("{3}[Hardware Error]:   bridge: secondary_status: 0x2000, control: 0x0012", "aer", "info"),
    # ---- ixgbe_check_minimum_link() before pcie_print_link_status()
    ("ixgbe 0000:01:00.0: For optimal performance a x8 PCI-Express slot is required.", "pcie", "warning"),
    # ---- arch/x86/kernel/cpu/mce/core.c kill_me_never(), arch/x86/kernel/nmi.c
    ("mce: Kernel accessed poison in user space at 1a2b3c4000", "mce", "error"),
    ("Dazed and confused, but trying to continue", "mce", "error"),
    ("Kernel panic - not syncing: NMI: Not continuing", "mce", "error"),
    # ---- mm/oom_kill.c dump_header() before 4.19, kernel/watchdog.c print_cpustat() (6.9+), slurmstepd's mgr.c
    ("python3 cpuset=/ mems_allowed=0-1", "oom", "info"),
    ("CPU#3 Utilization every 4s during lockup:", "soft_lockup", "info"),
    ("slurmstepd[48200]: task 0 (48213) Out Of Memory (OOM)", "oom", "error"),
    # ---- rasdaemon's aer_event and memory_failure_event records (ras-aer-handler.c, ras-memory-failure-handler.c)
    ("rasdaemon[1432]: <...>-1432 [003] 0.000002: aer_event: 2026-11-26 10:01:02 +0000 Receiver Error Corrected",
     "aer", "info"),
    ("rasdaemon[1432]: <...>-1432 [003] 0.000002: aer_event: 2026-11-26 10:01:02 +0000 Completion Timeout "
     "Uncorrected", "aer", "warning"),
    ("rasdaemon[1432]: <...>-1432 [003] 0.000002: memory_failure_event: 2026-11-26 10:01:02 +0000 pfn=0x1a2b3c "
     "page_type=dirty LRU page action_result=Recovered", "mce", "info"),
    ("rasdaemon[1432]: <...>-1432 [003] 0.000002: memory_failure_event: 2026-11-26 10:01:02 +0000 pfn=0x1a2b3c "
     "page_type=huge page action_result=Failed", "mce", "warning"),
    # ---- arch/powerpc/mm/fault.c show_signal_msg(); glibc malloc_printerr() and __fortify_fail()
    ("python3[48213]: segfault (11) at 0 nip 7fff8a2b3c4d lr 7fff8a2b3c00 code 1 in libc.so.6[7fff8a200000+250000]",
     "segfault", "info"),
    ("*** stack smashing detected ***: terminated", "segfault", "info"),
    ("double free or corruption (out)", "segfault", "info"),
    ("malloc(): corrupted top size", "segfault", "info"),
    # ---- bash xmalloc.c, R memory.c, Perl util.c/malloc.c; lib/ratelimit.c on the OOM path; slurmstepd's debug count
    ("/var/spool/slurmd/job04411/slurm_script: xmalloc: cannot allocate 1073741824 bytes (0 bytes allocated)", "oom",
     "error"),
    ("Error: cannot allocate vector of size 7.5 Gb", "oom", "error"),
    ("Out of memory!", "oom", "error"),
    ("oom_kill_process: 3 callbacks suppressed", "oom", "info"),
    ("slurmstepd[48200]: debug:  oom-kill event count: 1", "oom", "info"),
]


BENIGN_TWINS = [
    # the AER, DPC and EDR services' setup and recovery notes
    "pcieport 0000:00:03.1: AER: enabled with IRQ 122",
    "pcieport 0000:00:03.1: AER: device recovery successful",
    "pcieport 0000:00:03.1: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+ RP PIO "
    "Log 4, DL_ActiveErr+",
    "pcieport 0000:a5:01.0: EDR: DPC port successfully recovered",
    "pcieport 0000:00:00.3: CXL: Internal errors unmasked",
    # a link at full speed and width, a device that became ready, the hotplug slot's capabilities
    "mlx5_core 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
    "nvidia 0000:3b:00.0: ready 1023ms after FLR",
    "pcieport 0000:80:01.1: pciehp: Slot(12): Link Up",
    "pcieport 0000:80:01.1: pciehp: Slot(12): Card present",
    "pcieport 0000:80:01.1: pciehp: Slot(12): Powering off due to button press",
    # the memory killers' healthy notes
    "earlyoom[911]: mem avail: 120134 of 128000 MiB (93.85%), swap free: 8191 of 8191 MiB (100.00%)",
    "slurmstepd[48200]: debug:  No oom events detected.",
    "systemd-oomd[812]: Swap is currently not detected; memory pressure usage will be degraded",
    # the thermal and RAS drivers at work
    "CPU17: Package temperature/speed normal (total events = 4521)",
    "RAS: Correctable Errors collector initialized.",
    "EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0: DEV 0000:2e:0a.0 (INTERRUPT)",
    # the watchdogs' and perf's notes that read like a stall
    "INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.234 msecs",
    "workqueue: drm_fb_helper_damage_work hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND",
    "systemd-coredump[48300]: Resource limits disable core dumping for process 48213 (python3).",
    # a memory section of a firmware record stays a machine check's detail; a full-speed NIC; Slurm's soft-limit note
    "i40e 0000:3b:00.0: PCI-Express: Speed 8.0GT/s Width x8",
    "slurmstepd[48200]: StepId=4411.0 hit memory limit at least once during execution. This may or may not result in "
    "some failure.",
    "MCE: In-kernel MCE decoding enabled.",
    "EDAC amd64: Node 0: DRAM ECC enabled.",
    "pcieport 0000:00:1b.4: PME: Spurious native interrupt!",
    "watchdog: watchdog0: watchdog did not stop!",
    # mcelog's end of throttling, a sensor below its limits, a glibc line that is not an abort
    "mcelog: Processor 3 below trip temperature. Throttling disabled",
    "Core 5:        +41.0\u00b0C  (high = +80.0\u00b0C, crit = +100.0\u00b0C)",
    "ACPI: thermal: Thermal Zone [TZ00] (28 C)",
    "slurmstepd[48200]: debug:  oom-kill event count: 0",
]


NEVER_DRAIN = [
    "systemd-oomd[812]: Killed /system.slice/slurmstepd.scope/job_4411 due to memory used (130123456512) / total "
    "(135000000000) and swap used (8500000000) / total (8589930496) being more than 90.00%",
    "srun: error: gpu-node[07-08]: tasks 0-15: Out Of Memory",
    "systemd-coredump[48300]: Process 48213 (python3) of user 1001 terminated abnormally with signal 11/SEGV, "
    "processing...",
    # a job's process that writes the kernel's words under its own tag: never a node fault
    "Jan 11 09:52:01 gpu12 python[4242]: Kernel panic - not syncing: UE memory read error on DIMM_B2 (channel:1)",
    "Jan 11 09:52:01 gpu12 python[4242]: pcieport 0000:00:03.1: DPC: ERR_FATAL detected",
    "Jan 11 09:52:01 gpu12 python[4242]: AER: no pci_dev for 0000:3b:00.0",
    "rasdaemon[1432]: <...>-1432 [003] 0.000002: memory_failure_event: 2026-11-26 10:01:02 +0000 pfn=0x1a2b3c "
    "page_type=huge page action_result=Failed",
    "*** stack smashing detected ***: terminated",
    "Error: cannot allocate vector of size 7.5 Gb",
    "Out of memory!",
]


KERNEL_LINES = [
    "pcieport 0000:00:03.1: DPC: ERR_FATAL detected",
    "pcieport 0000:a5:01.0: EDR: EDR event received",
    "AER: no pci_dev for 0000:3b:00.0",
    "Huh VM_FAULT_OOM leaked out to the #PF handler. Retrying PF",
    "Kernel panic - not syncing: UE memory read error on DIMM_B2 (channel:1 slot:0 page:0x2a3b4c offset:0x0 grain:32)",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def test_the_new_pci_and_memory_rules_investigate_and_never_drain() -> None:
    """A contained PCIe error, a lost AER recovery, a failed vmalloc: the node needs a look, not a drain (the PCIe
    verdicts of dpc_event and the AER header decide more)."""
    for line in ("pcieport 0000:00:03.1: DPC: ERR_FATAL detected",
                 "pcieport 0000:a5:01.0: EDR: Failed to get error source device",
                 "AER: buffer overflow in recovery for 0000:3b:00.0",
                 "python3: vmalloc error: size 8589934592, page order 0, failed to allocate pages, mode:0xdc0"):
        findings = diagnose(line.encode())
        assert findings[0].action == "investigate", line
        assert not is_node_fault(findings[0], None), line


def test_edacs_panic_on_an_uncorrected_error_takes_the_node_out() -> None:
    """edac_mc_panic_on_ue's panic names the DIMM: the kernel's own line is a node fault, as mce_fatal's panics."""
    findings = diagnose(b"[  812.1] Kernel panic - not syncing: UE memory read error on DIMM_B2 (channel:1 slot:0 "
                        b"page:0x2a3b4c offset:0x0 grain:32)")
    assert findings[0].kind == "mce" and is_node_fault(findings[0], None)


def test_a_memory_sections_fields_stay_the_machine_checks() -> None:
    """Only the PCIe section's own field names retype a firmware record to AER; a memory section's detail stays mce."""
    for line, kind in (("{1}[Hardware Error]:   physical_address: 0x0000001a2b3c4000", "mce"),
                       ("{1}[Hardware Error]:   node: 0 card: 0 module: 0 rank: 0 bank: 3 device: 0 row: 1234", "mce"),
                       ("{3}[Hardware Error]:   class_code: 060400", "aer")):
        assert diagnose(line.encode())[0].kind == kind, line


def test_the_cpuset_line_is_read_only_in_its_own_shape() -> None:
    """The 4.x OOM report's `comm cpuset=... mems_allowed=...` line starts with a task's name: a longer line that only
    holds the words is not read as it."""
    assert diagnose(b"python3 cpuset=/ mems_allowed=0-1")[0].details["rule"] == "oom_cpuset_line"
    assert not [f for f in diagnose(b"python3 cpuset=/ mems_allowed=0-1 and then some words")
                if f.details.get("rule") == "oom_cpuset_line"]


def test_a_task_name_before_a_vmalloc_failure_does_not_start_a_match_elsewhere() -> None:
    """The allocation rule reads only the kernel's `comm: vmalloc error: size N` form: a task named after the words
    with no size after them is not read."""
    assert diagnose(b"python3: vmalloc error: size 4096, page order 0")[0].details["rule"] == "alloc_failure_other"
    assert not [f for f in diagnose(b"vmalloc error: size: python3: hello")
                if f.details.get("rule") == "alloc_failure_other"]
