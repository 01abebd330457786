"""Families read from their printers after round6.tsv's rules half showed them (its test half only scored): each
printer's line is found, its benign twin stays below warning, and a daemon's line never drains."""

from __future__ import annotations

from .rule_cases import table_tests

FOUND = [
    # mm/page_io.c: "Read-error on swap-device (%u:%u:%llu)", "Write-error on swap-device (%u:%u:%llu)"
    ("Read-error on swap-device (254:1:78162624)", "disk", "error"),
    ("[ 12.345678] Write-error on swap-device (8:2:1234)", "disk", "error"),
    # fs/ext4/super.c __ext4_warning_inode(): an inode found inconsistent
    ("EXT4-fs warning (device loop5): ext4_empty_dir:3088: inode #5176: comm fsstress: directory missing '.'",
     "disk", "warning"),
    ("EXT4-fs warning (device sda1): ext4_dx_add_entry:2470: inode #131073: comm tar: Directory index full!",
     "disk", "warning"),
    # drivers/infiniband/hw/hfi1/tid_rdma.c: "[QP%u] %s %d" with __func__ and __LINE__
    ("hfi1 0000:7f:00.0: hfi1_0: [QP74] hfi1_tid_timeout 4084", "ib", "warning"),
    # a shared filesystem's client service or module that did not start (syslog)
    ("systemd[1]: Failed to start Start BeeGFS Client.", "nfs", "warning"),
    ("systemd[1]: Failed to start LSB: Lustre client.", "nfs", "warning"),
    ("beegfs-client[19082]: modprobe: ERROR: could not insert 'beegfs': Invalid argument", "nfs", "warning"),
    # nouveau: an engine's constructor (nvkm "%s ctor failed, %d") and a timer that no longer ticks (the GPU is gone)
    ("nouveau 0000:01:00.0: disp ctor failed, -12", "gpu_init", "error"),
    ("nouveau 0000:01:00.0: tmr: stalled at ffffffffffffffff", "gpu_init", "error"),
    # mm/oom_kill.c's header, cut where a mail client wrapped it
    ("mem_on_node0 invoked oom-killer", "oom", "error"),
    # drivers/pci/pcie/dpc.c: the port took its link down (kind pcie since round 7), and DPC's own wait for the link
    ("pcieport 0000:30:03.0: DPC: containment event, status:0x0005 source:0x3400", "aer", "error"),
    ("pcieport 0000:89:02.0: DPC: unmasked uncorrectable error detected reason 0 ext_reason 0", "aer", "error"),
    ("pcieport 0000:00:01.4: DPC: Data Link Layer Link Active not set in 1000 msec", "pcie", "error"),
]

BENIGN = [
    "Adding 8388604k swap on /dev/sda2.  Priority:-2 extents:1 across:8388604k SSFS",
    "EXT4-fs (sda1): mounted filesystem with ordered data mode. Quota mode: none.",
    "hfi1 0000:7f:00.0: hfi1_0: 8051 firmware version 1.27",
    "systemd[1]: Started Start BeeGFS Client.",
    "systemd[1]: Failed to start Network Manager.",
    "nouveau 0000:01:00.0: DRM: VRAM: 2048 MiB",
    "pcieport 0000:00:01.0: DPC: enabled with IRQ 122",
    "pcieport 0000:00:01.0: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+",
]


NEVER_DRAIN = [FOUND[5][0], FOUND[7][0]]


KERNEL_LINES = [FOUND[0][0], FOUND[8][0], FOUND[11][0]]


globals().update(table_tests(found=FOUND, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN))
