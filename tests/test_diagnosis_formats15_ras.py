"""Round 15's printers (rules15-ras), from their format strings: the RAS family for kind mce in the texts rounds 8, 9
and 12 left (the x86 machine-check core's other panics and notes, GHES's and BERT's checks, the EDAC device counters and
decode notes, memory-failure's soft offline, arm64's SError and synchronous external aborts, rasdaemon's tracepoint
lines and its page, row and CPU isolation, ras-mc-ctl's summary and error rows, mcelog's record, DIMM, page and cache
accounting), which tests/data/kernel/printers/ras.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's
linux-source-6.1 6.1.192 holds it, mchehab/rasdaemon v0.8.5, andikleen/mcelog v208) with its conversions filled in by
hand, not a line copied from a log or from the field corpus. The printer file checks the kind; this file checks what it
cannot: the severity, the trust (a daemon's or tool's line never drains; the kernel's own is trust kernel, and only a
panic or an uncorrected error drains), the twins that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import found_as, table_tests

KERNEL_DRAINS = [
    # arch/x86/kernel/cpu/mce/core.c mce_panic()'s panic() texts, wait_for_panic(), ex_handler_msr_mce()
    "Kernel panic - not syncing: Local fatal machine check!",
    "Kernel panic - not syncing: Failed kernel mode recovery",
    "Kernel panic - not syncing: Timeout: Monarch CPU unable to finish machine check processing",
    "Kernel panic - not syncing: Timeout: Monarch CPU did not finish machine check processing",
    "Kernel panic - not syncing: Too many consecutive machine checks while accessing user data",
    "Kernel panic - not syncing: Consecutive machine checks to different user pages",
    "Kernel panic - not syncing: Panicing machine check CPU died",
    "Kernel panic - not syncing: MCA architectural violation!",
    # drivers/acpi/apei/ghes.c __ghes_panic() (GHES_PFX 'GHES: ')
    "Kernel panic - not syncing: GHES: Fatal hardware error",
    "GHES: Fatal hardware error but panic disabled",
    # drivers/edac/edac_device.c edac_device_handle_ue_count() and its panic
    "EDAC DEVICE1: UE: thunderx_l2c_tad instance: l2c-tad0 block: N/A count: 1 'L2C TAD: DBE'",
    "Kernel panic - not syncing: EDAC qcom_llcc: UE instance: llcc block N/A count: 1 'LLCC Data RAM DB ECC'",
    # arch/arm64/kernel/traps.c arm64_serror_panic(), mm/fault.c do_sea() -> die()
    "SError Interrupt on CPU12, code 0x00000000bf000002 -- SError",
    "Kernel panic - not syncing: Asynchronous SError Interrupt",
    "Internal error: synchronous external abort: 0000000096000210 [#1] PREEMPT SMP",
]

KERNEL_FAULTS = [
    # core.c unexpected_machine_check(), genpool.c mce_gen_pool_add(), amd.c/threshold.c's default interrupts, p5.c
    ("mce: CPU#3: Unexpected int18 (Machine Check)", "mce", "warning"),
    ("mce: MCE records pool full!", "mce", "warning"),
    ("mce: Unexpected deferred interrupt at vector f4", "mce", "warning"),
    ("mce: Unexpected threshold interrupt at vector f9", "mce", "warning"),
    ("CPU#0: Possible thermal failure (CPU on fire ?).", "mce", "warning"),
    # core.c do_machine_check() without CONFIG_MEMORY_FAILURE; memory-failure.c memory_failure_queue()
    ("mce: Uncorrected memory error in page 0x1a2b3c ignored", "mce", "error"),
    ("Memory failure: buffer overflow when queuing memory failure at 0x2b3c4d", "mce", "error"),
    # ghes.c ghes_kick_task_work() (before segfault, which would read the comm:pid and SIGBUS as a crash)
    ("GHES: python3:48213: synchronous unrecoverable error (SIGBUS)", "mce", "error"),
    # ghes.c ghes_do_memory_failure(), ghes_handle_arm_hw_error() (FW_WARN '[Firmware Warn]: ')
    ("[Firmware Warn]: GHES: Invalid address in generic error data: 0x1a2b3c4000", "mce", "warning"),
    ("[Firmware Warn]: GHES: Unhandled processor error type 0x02: TLB error", "mce", "warning"),
    # ghes.c __ghes_check_estatus(), ghes_read_estatus(): the error status block failing the checks (a record lost)
    ("[Firmware Warn]: GHES: Invalid CPER header!", "mce", "warning"),
    ("[Firmware Warn]: GHES: Truncated error status block!", "mce", "warning"),
    ("[Firmware Warn]: GHES: Error status block length is too long: 4096 for generic hardware error source: 1.", "mce",
     "warning"),
    # mm/memory-failure.c soft_offline_page(), soft_offline_in_use_page() (pr_fmt '' there)
    ("soft offline: 0x2b3c4d page already poisoned", "mce", "warning"),
    ("soft offline: 0x2b3c4d: page migration failed -16, type 0x17ffffc0000000(node=0|zone=2|lastcpupid=0x1fffff)",
     "mce", "warning"),
    ("soft offline: 0x2b3c4d: page isolation failed, page count 3, type 0x17ffffc0010068(uptodate|lru|node=0|zone=2)",
     "mce", "warning"),
    ("soft offline: 0x2b3c4d: thp split failed", "mce", "warning"),
    # arch/arm64/mm/fault.c mem_abort_decode()
    ("  FSC = 0x10: synchronous external abort", "mce", "warning"),
]

KERNEL_FACTS = [
    # the RAS code's notes about a corrected error or a decode it could not do (info: found, the mce kind, no warning)
    "mce: Erratum detected, disable fast string copy instructions.",
    "RAS: CEC: Invalid pfn: 0x2b3c4d",
    "BERT: Skipped 3 error records",
    "EDAC skx: Bad imc 7",
    "EDAC i10nm: No device for src_id 1 imc 3",
    "EDAC amd64: Warning: Illegal syndrome type: 16",
    "EDAC amd64: Failed to translate InputAddr to csrow for address 0x000000001a2b3c40",
    "EDAC amd64: failed to map error addr 0x1a2b3c40 to a node",
    "EDAC MC0: could not look up page error address 1a2b3c",
    "soft_offline: 0x2b3c4d: invalidated",
    "EDAC igen6 MC0: HANDLING IBECC MEMORY ERROR",
    "EDAC DEVICE1: CE: thunderx_l2c_tad instance: l2c-tad0 block: N/A count: 1 'L2C TAD: SBE'",
]

PFX = "Nov 26 10:01:02 gpu-node07 "
EV = "rasdaemon[1432]:            <...>-1432  [003] .... 41833.217561 "
STAMP = "2026-11-26 10:01:02 +0000 "

DAEMON_FAULTS = [
    # rasdaemon v0.8.5 ras-events.c parse_ras_data() ('%16s-%-5d [%03d] %s %6.1000d %s %s'): the handlers' texts
    (PFX + EV + "aer_event [CRIT] " + STAMP + "0000:3b:00.0 (NVIDIA Corporation - vendor_id: 0x10de device_id: 0x2330) "
     "Completion Timeout Uncorrected (Non-Fatal)", "aer", "warning"),
    (PFX + EV + "aer_event [EMERG] " + STAMP + "0000:17:00.0 (Mellanox Technologies - vendor_id: 0x15b3 device_id: "
     "0x1021) Surprise Down Error Uncorrected (Fatal)", "aer", "warning"),
    (PFX + EV + "mc_event [ERROR] " + STAMP + "1 Fatal error: memory read error on unknown memory (mc: 0 location: "
     "-1:-1:-1 address: 0x0 grain: 1)", "mce", "error"),
    (PFX + EV + "extlog_record [ERROR] " + STAMP + "3 fatal error: multi-bit ECC physical addr: 0x2c3d4e440 mask: "
     "0x3fffffffffc0 fru_text:DIMM_B1", "mce", "error"),
    (PFX + EV + "non_standard_event " + STAMP + " Fatal section type: e8ed898d-df16-43cc-8ecc-54f060ef157f fru text: "
     "CPU0 fru id: 00000000-0000-0000-0000-000000000000  length: 112 error:", "mce", "error"),
    (PFX + EV + "mce_record " + STAMP + "bank=13, status= fe00000000800400, Uncorrected error, mci=Uncorrected_error "
     "Error_enabled Processor_context_corrupt, mca=Internal Timer error, cpu= 40, socketid= 1", "mce", "error"),
    (PFX + EV + "memory_failure_event [ALERT] " + STAMP + "pfn=0x2b3c4d page_type=huge page action_result=Failed ",
     "mce", "warning"),
    # ras-page-isolation.c, ras-cpu-isolation.c, ras-poison-page-stat.c
    (PFX + "rasdaemon[1432]: Corrected Errors at 0x1a2b3c000 exceeded threshold", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Corrected Errors of row 0:0:2:1:0x1e2f exceeded row CE threshold, count=12", "mce",
     "warning"),
    (PFX + "rasdaemon[1432]: page offline addr(0x1a2b3c000) by /sys/devices/system/memory/soft_offline_page failed, "
     "errno:16", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Uncorrected Errors occurred, try to offline cpu24", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Corrected Errors exceeded threshold 18, try to offline cpu24", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Offline cpu24 succeed, the state is offlined", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Offline cpu24 fail, the state is online", "mce", "warning"),
    (PFX + "rasdaemon[1432]: Poison page statistics exceeded threshold: 4096 kB (threshold: 2048 kB)", "mce",
     "warning"),
    # util/ras-mc-ctl.in --summary and --errors rows (a tool's output)
    ("\t2 multi-bit ECC fatal errors", "mce", "error"),
    ("\tFailed errors: 1", "mce", "error"),
    ("2 2026-11-26 10:01:07 +0000 error: type=multi-bit ECC, severity=fatal, address=0x2c3d4e440, "
     "fru_id=00000000-0000-0000-0000-000000000000, fru_text='DIMM_B1', ", "mce", "error"),
    ("1 2026-11-26 10:01:07 +0000 error: pfn=0x2b3c4d, page_type=dirty LRU page, action_result=Failed", "mce", "error"),
    # mcelog v208 memdb.c memdb_trigger(), page.c, yellow.c run_yellow_trigger()
    (PFX + "mcelog: Uncorrected DIMM memory error count exceeded threshold: 1 in 24h", "mce", "warning"),
    (PFX + "mcelog: corrected DIMM memory error count exceeded threshold: 100 in 24h", "mce", "warning"),
    (PFX + "mcelog: Location SOCKET:1 CHANNEL:2 DIMM:0 [DIMM_B1]", "mce", "warning"),
    (PFX + "mcelog: Soft offlining of page 1a2b3c000 failed, trying hard offlining", "mce", "warning"),
    (PFX + "mcelog: Replacements of page correctable error counter exceed threshold 50 in 24h", "mce", "warning"),
    (PFX + "mcelog: CPU 24 on socket 1 has large number of corrected cache errors in Level 2 Data", "mce", "warning"),
    (PFX + "mcelog: System operating correctly, but might lead to uncorrected cache errors soon", "mce", "warning"),
    # arch/arm64/kernel/traps.c arm64_show_signal(): a task's name leads the line, so trust syslog
    ("python3[51234]: unhandled exception: DABT (lower EL), ESR 0x0000000092000410, synchronous external abort in "
     "libtorch_cuda.so[ffff8a1b2000+3c4d000]", "mce", "warning"),
]

DAEMON_FACTS = [
    # rasdaemon's corrected and recovered records, its detail lines; ras-mc-ctl's other rows; mcelog's record lines
    PFX + EV + "mc_event [WARNING] " + STAMP + "12 Corrected errors: memory scrubbing error on DIMM_A1 (mc: 0 "
    "location: "
    "0:0:1 address: 0x3f1a2b000 grain: 5 syndrome: 0x00000000)",
    PFX + EV + "extlog_record [WARNING] " + STAMP + "7 corrected error: single-bit ECC physical addr: 0x1a2b3c4c0 "
    "mask: "
    "0x3fffffffffc0 node:0 card:0 module:0 rank:0",
    PFX + EV + "arm_event " + STAMP + "error_count: 1 affinity: 0 MPIDR: 0x81010000 MIDR: 0x410fd4f1 running_state: 1 "
    "psci_state: 0 ARM Processor Err Info data len: 32",
    PFX + EV + "memory_failure_event [ALERT] " + STAMP
    + "pfn=0x2b3c4d page_type=dirty LRU page action_result=Recovered ",
    PFX + EV + "aer_event [ERROR] " + STAMP + "0000:3b:00.0 (NVIDIA Corporation - vendor_id: 0x10de device_id: 0x2330) "
    "Receiver Error Corrected",
    PFX + "rasdaemon[1432]:     mc_event_stat: memory corrected error report 1452/sec",
    PFX + "rasdaemon[1432]: 1 error in cpu core caught",
    "\tCPU(mpidr=0x81010000) has 3 errors",
    "1 2026-11-26 10:01:07 +0000 error: mpidr=0x81010000, running_state=0x1, psci_state=0x0",
    PFX + "mcelog: RIP !INEXACT! 10:ffffffff8106b1b6",
    PFX + "mcelog: MISC 9000004000a1086 ADDR 3fe1a2b3c0",
    PFX + "mcelog: TIME 1764151262 Thu Nov 26 10:01:02 2026",
    PFX + "mcelog: CPUID Vendor Intel Family 6 Model 143 Step 8",
    PFX + "mcelog: SRAR",
    PFX + "mcelog: Threshold based error status: yellow",
    PFX + "mcelog: Warning: MCE buffer is overflowed.",
]

TWINS = [
    # the same printers' setup and status notes: GHES's notification types, ghes_edac's BIOS caveat, the CEC's debugfs,
    # the x86 MCE core's bank and CMCI notes, ERST/EINJ/HEST, the EDAC drivers' registration, unpoison, rasdaemon's and
    # mcelog's startup, thresholds and triggers, ras-mc-ctl's empty tables and driver status
    "GHES: Generic hardware error source: 4 notified via NMI interrupt is not supported!",
    "[Firmware Warn]: GHES: Unknown notification type: 11 for generic hardware error source: 5",
    "[Firmware Bug]: GHES: Invalid error block length: 0 for generic hardware error source: 1",
    "GHES: Failed to map GSI to IRQ for generic hardware error source: 6",
    "[Firmware Warn]: GHES: Poll interval is 0 for generic hardware error source: 2, disabled.",
    "GHES: APEI firmware first mode is enabled by WHEA _OSC.",
    "ghes_edac: This EDAC driver relies on BIOS to enumerate memory and get error reports.",
    "ghes_edac: This system has a very crappy BIOS: It doesn't even list the DIMMS.",
    "RAS: Error creating cec debugfs node!",
    "mce: CPU0: Using only 32 machine check banks out of 64",
    "mce: bios_cmci_threshold: Some banks do not have valid thresholds set",
    "mce: CMCI storm subsided: switching to interrupt mode",
    "ERST: Error Record Serialization Table (ERST) support is initialized.",
    "[Firmware Warn]: ERST: Firmware does not respond in time.",
    "EINJ: Error INJection is initialized.",
    "[Firmware Warn]: HEST: Duplicated hardware error source ID: 2.",
    "EDAC MC1: Giving out device to module i10nm_edac controller Intel_10nm Socket#0 IMC#1: DEV 0000:7e:0c.0 "
    "(INTERRUPT)",
    "EDAC amd64: Node 1: DRAM ECC disabled.",
    "EDAC i10nm: ADXL not found, falling back to MCA-based decoding.",
    "EDAC ie31200: No ECC support",
    "Unpoison: Software-unpoisoned page 0x2b3c4d",
    PFX + "rasdaemon[1432]: ras:mc_event event enabled",
    PFX + "rasdaemon[1432]: Threshold of memory Corrected Errors is 50 / 24h",
    PFX + "rasdaemon[1432]: page at 0x1a2b3c000 is already offlined, ignore",
    PFX + "rasdaemon[1432]: Current number of Corrected Errors in cpu24 in the cycle is 3",
    PFX + "rasdaemon[1432]: Running trigger `/etc/ras/triggers/mc_event_trigger' (reporter: mc_event)",
    "No ARM processor errors.",
    "No Memory failure errors.",
    "ras-mc-ctl: drivers not loaded.",
    "\tRecovered errors: 4",
    PFX + "mcelog: Running trigger `dimm-error-trigger' (reporter: memdb)",
    PFX + "mcelog: ERROR: AMD Processor family 25: mcelog does not support this processor.  Please use the "
    "edac_mce_amd "
    "module instead.",
    PFX + "mcelog: Kernel does not support page offline interface",
]


@pytest.mark.parametrize("line", KERNEL_FACTS + DAEMON_FACTS)
def test_a_corrected_error_or_decode_note_is_an_mce_fact(line: str) -> None:
    # found (the printer file's judge: the top finding has the row's kind) and below warning, by a rule
    kind = "aer" if "aer_event" in line else "mce"
    found_as(line, kind, "info")


@pytest.mark.parametrize("line", [
    "[ 4359.594000] Kernel panic - not syncing: Failed kernel mode recovery",
    "[Thu Nov 26 10:25:55 2026] mce: MCE records pool full!",
    "Nov 26 10:01:02 gpu-node07 kernel: soft offline: 0x2b3c4d: thp split failed",
    "4,2213,5123456,-;GHES: python3:48213: synchronous unrecoverable error (SIGBUS)",
])
def test_an_enveloped_kernel_line_is_read_the_same(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings and findings[0].kind == "mce" and findings[0].trust == "kernel", line
    assert findings[0].severity in ("warning", "error", "critical"), line


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "checker: saw Kernel panic - not syncing: Local fatal machine check! in the console log",
    "health: last dmesg said SError Interrupt on CPU12, code 0x00000000bf000002 -- SError",
    "echo 'EDAC DEVICE1: UE: thunderx_l2c_tad instance: l2c-tad0 block: N/A count: 1'",
    "the console said GHES: Fatal hardware error but panic disabled",
]


globals().update(table_tests(found=[(line, "mce", "critical") for line in KERNEL_DRAINS], kernel_quiet=KERNEL_FAULTS,
                             other=DAEMON_FAULTS, kernel_quiet_lines=KERNEL_FACTS, kernel_drains_lines=KERNEL_DRAINS,
                             no_drain=DAEMON_FACTS, twins=TWINS, not_kernels=ECHOED))


@pytest.mark.parametrize("line", [
    "rasdaemon[1432]: mc_event 2026-11-26 10:01:02 +0000 " + "x" * 100_000 + " error",
    "\t" + "multi-bit ECC " * 10_000 + "fatal errors",
    "mcelog: " + "CPU 1 on socket 0 " * 10_000 + "has large number",
    "python3[1]: unhandled exception: " + "(" * 100_000,
])
def test_a_long_hostile_line_is_read_in_linear_time(line: str) -> None:
    # bounded quantifiers: a long line of near-matches is decided, and not as an uncorrected error
    assert not [f for f in diagnose(line.encode())
                if (f.details.get("rule") or "").startswith("rules15_") and f.severity in ("error", "critical")]
