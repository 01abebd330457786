"""Round 8's storage printers (rules8-storage), from their format strings: the lines of the shared filesystems' clients
and the local disks that tests/data/kernel/printers/storage.tsv holds and no rule read before (the Ceph messenger's
checksum failure, the automounter's failed mounts, nfsidmap's foreign ID domain, GPFS's expired disk lease, SCSI disks'
short completions and missing sense, libata disabling a disk, md members failed or left out, XFS write-back failures).

Every line is a format string of the public source named in the comment above it (Linux 6.12 unless said otherwise)
with its conversions filled in by hand, not a line copied from a log or from the field corpus. The printer file checks
the kind; this file checks what it cannot: the severity, the trust (a daemon's line never drains; the kernel's own is
trust kernel) and the benign twins beside each family.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import found_as, never_drains, table_tests

KERNEL_FAULTS = [
    # net/ceph/messenger_v1.c read_partial_message(): "read_partial_message %p data|front|middle crc %u != exp. %u"
    ("libceph: read_partial_message 00000000a1b2c3d4 data crc 12345 != exp. 67890", "nfs", "warning"),
    ("libceph: read_partial_message 00000000a1b2c3d4 front crc 1 != exp. 2", "nfs", "warning"),
    # drivers/scsi/sd.c sd_done(): "Unaligned partial completion (resid=%u, sector_sz=%u)"
    ("sd 2:0:0:0: [sdb] Unaligned partial completion (resid=78, sector_sz=512)", "disk", "warning"),
    # drivers/ata/libata-eh.c ata_dev_disable(): "disable device"
    ("ata3.00: disable device", "disk", "error"),
    # drivers/md raid10.c check_decay_read_errors() (raid1-10.c's "md:%s: %pg: ..." in newer kernels),
    # md.c analyze_sbs()
    ("md/raid10:md2: sdd1: Raid device exceeded read_error threshold [cur 21:max 20]", "disk", "error"),
    ("md/raid10:md2: sdd1: Failing raid device", "disk", "error"),
    ("md:md2: sdd1: Raid device exceeded read_error threshold [cur 21:max 20]", "disk", "error"),
    ("md: kicking non-fresh sdb1 from array!", "disk", "error"),
    # fs/xfs xfs_buf_item.c "Failing async write on buffer block 0x%llx. Retrying async write.", xfs_aops.c
    # xfs_discard_folio() "page discard on page %px, inode 0x%llx, pos %llu." (older: "offset %llu.")
    ("XFS (sdb1): Failing async write on buffer block 0x4c0. Retrying async write.", "disk", "error"),
    ("XFS (sdb1): page discard on page 00000000a1b2c3d4, inode 0x84, pos 0.", "disk", "error"),
    ("XFS (bcache4): page discard on page 00000000d976f7c9, inode 0x400079d77, offset 28315648.", "disk", "error"),
    # fs/jbd2/recovery.c "JBD2: Invalid checksum recovering data block %llu in journal block %lu" (older "... in log")
    ("JBD2: Invalid checksum recovering data block 1234 in journal block 5678", "disk", "error"),
    ("JBD2: Invalid checksum recovering block 8705 in log", "disk", "error"),
    # fs/xfs xfs_log_recover.c "Log inconsistent (didn't find previous header)", "failed to find log head"; xfs_buf.c
    # "%s: daddr 0x%llx out of range, EOFS 0x%llx"
    ("XFS (md0): Log inconsistent (didn't find previous header)", "disk", "error"),
    ("XFS (md0): failed to find log head", "disk", "error"),
    ("XFS (sdb1): _xfs_buf_find: daddr 0x7fffff0 out of range, EOFS 0x7fff000", "disk", "error"),
    # net/sunrpc/svc_xprt.c svc_check_conn_limits() "%s: too many open connections, consider increasing the %s"
    ("nfsd: too many open connections, consider increasing the number of threads", "nfs", "warning"),
    # drivers/ata/libata-eh.c ata_eh_link_report() "cmd %02x/%02x:...:%02x/%02x tag %d%s" (the taskfile)
    ("ata3.00: cmd 60/00:00:00:08:00/01:00:00:00:00/40 tag 0 ncq dma 131072 in", "disk", "warning"),
    # drivers/nvme/host/core.c nvme_log_error() on a multipath namespace's path disk ("nvme%dc%dn%d")
    ("nvme0c0n1: Read(0x2) @ LBA 2048, 8 blocks, Unrecovered Read Error (sct 0x2 / sc 0x81) DNR ", "disk", "warning"),
    # lustre-release o2iblnd_cb.c CNETERR (printed at KERN_INFO under "LNet: "): kiblnd_rejected() "%s rejected: no
    # listener at %d", "%s rejected: reason %d, size %d"; kiblnd_cm_callback() "%s: UNREACHABLE %d", "Can't resolve
    # address for %s: %d"
    ("LNet: 2117:0:(o2iblnd_cb.c:2630:kiblnd_rejected()) 10.0.0.23@o2ib rejected: no listener at 987", "nfs",
     "warning"),
    ("LNet: 2117:0:(o2iblnd_cb.c:2730:kiblnd_rejected()) 10.0.0.23@o2ib rejected: reason 28, size 148", "nfs",
     "warning"),
    ("LNet: 2117:0:(o2iblnd_cb.c:3226:kiblnd_cm_callback()) 10.0.0.23@o2ib: UNREACHABLE -110", "nfs", "warning"),
    ("LNet: 2117:0:(o2iblnd_cb.c:3180:kiblnd_cm_callback()) Can't resolve address for 10.0.0.23@o2ib: -110", "nfs",
     "warning"),
]

# evidence of a disk event that is not a warning on its own: sd.c sd_read_capacity() "Sense not available.",
# scsi_error.c scsi_report_sense() "Warning! Received an indication that the LUN assignments on this target have
# changed."
KERNEL_EVIDENCE = [
    ("sd 7:0:0:0: [sdb] Sense not available.", "disk", "info"),
    # drivers/nvme/host/core.c nvme_identify_ns_descs() (not fatal, the driver says): 6.x, 5.x and 4.x forms
    ("nvme nvme0: Identify Descriptors failed (nsid=1, status=0x2)", "disk", "info"),
    ("nvme nvme0: Identify Descriptors failed (4002)", "disk", "info"),
    ("nvme nvme0: nvme_identify_ns: Identify Descriptors failed", "disk", "info"),
    # a server's view of its client's event: lustre ldlm_lib.c target_handle_connect() "%s: Client %s (at %s)
    # reconnecting", fs/nfsd/nfs4state.c "NFSD: client %s testing state ID with incorrect client ID"
    ("Lustre: fs1-OST0003: Client 5f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b (at 10.0.0.57@o2ib) reconnecting", "nfs",
     "info"),
    ("NFSD: client 10.0.0.57 testing state ID with incorrect client ID", "nfs", "info"),
    ("sd 2:0:0:0: Warning! Received an indication that the LUN assignments on this target have changed. The Linux SCSI "
     "layer does not automatically remap LUN assignments.", "disk", "info"),
]

DAEMON_FAULTS = [
    # autofs daemon/automount.c "failed to mount %s", modules/mount_nfs.c MODPREFIX "no hosts available"
    ("automount[2231]: failed to mount /home/alice", "nfs", "warning"),
    ("automount[2231]: mount(nfs): no hosts available", "nfs", "warning"),
    # IBM Storage Scale's lease notice ("[N] Disk lease period expired %.3f seconds ago in cluster %s. Attempting to
    # reacquire the lease.")
    ("mmfs[4210]: [N] Disk lease period expired 5.160 seconds ago in cluster gpfs.example.org. Attempting to "
     "reacquire the lease.", "nfs", "warning"),
    # autofs daemon/automount.c handle_mounts() crit("mount of %s failed!")
    ("automount[2231]: handle_mounts: mount of /home failed!", "nfs", "warning"),
    # ceph src/mount/mount.ceph.c "mount error: no mds server is up or the cluster is laggy", "mount error %d = %s"
    ("mount error: no mds server is up or the cluster is laggy", "nfs", "warning"),
    ("mount error 110 = Connection timed out", "nfs", "warning"),
    # smartmontools smartd.cpp "previous self-test completed with error (%s test element)"
    ("smartd[1001]: Device: /dev/sdb [SAT], previous self-test completed with error (read test element)", "disk",
     "warning"),
    # nfs-utils utils/mountd/mountd.c get_rootfh() "refused mount request from %s for %s (%s): %s"
    ("rpc.mountd[800]: refused mount request from 10.0.0.57 for /export/home (/export/home): unmatched host", "nfs",
     "warning"),
    ("mountd[30694]: refused mount request from 192.168.1.25 for /mnt/user/rA (/): not exported", "nfs", "warning"),
]

# a job's file operation on a shared path: GNU tar's "%s: Cannot stat: %s" (unquoted), strerror(ECOMM) and
# strerror(EREMOTEIO) next to a shared filesystem's path
JOB_FAULTS = [
    ("tar: /lustre/fs1/alice/run/ckpt.pt: Cannot stat: Input/output error", "nfs", "warning"),
    ("ls: cannot access '/mnt/beegfs/run01': Communication error on send", "nfs", "warning"),
    ("OSError: [Errno 121] Remote I/O error: '/home/alice/ckpt.pt'", "nfs", "warning"),
]

# nfs-utils support/nfsidmap/nss.c: "nss_getpwnam|nss_name_to_gid: name '%s' does not map into domain '%s'" (info)
DAEMON_EVIDENCE = [
    ("nfsidmap[9312]: nss_getpwnam: name 'alice@example.org' does not map into domain 'localdomain'", "nfs", "info"),
    ("rpc.idmapd[388]: nss_getpwnam: name 'nobody' does not map into domain 'localdomain'", "nfs", "info"),
    # smartmontools 7.0-7.3 NVMe: "Device: %s, number of Error Log entries increased from %llu to %llu" (info)
    ("smartd[1079]: Device: /dev/nvme0, number of Error Log entries increased from 273 to 275", "disk", "info"),
]


ALL = KERNEL_FAULTS + KERNEL_EVIDENCE + DAEMON_FAULTS + DAEMON_EVIDENCE + JOB_FAULTS


BENIGN_TWINS = [
    # the Ceph client's session coming back, a crc line that is not the messenger's
    "libceph: mon1 (1)10.0.0.12:6789 session established",
    "libceph: osd3 up",
    # the automounter's healthy notes and a key that is not in the map (a user's typo)
    'automount[2231]: key "alice" not found in map source(s).',
    "automount[2231]: Starting automounter version 5.1.9, master map auto.master",
    "automount[2231]: mounted indirect on /home with timeout 300, freq 75 seconds",
    # the SCSI disk's bring-up, md's healthy recovery, XFS mounting
    "sd 2:0:0:0: [sdb] Attached SCSI disk",
    "sd 2:0:0:0: Power-on or device reset occurred",
    "ata3.00: configured for UDMA/133",
    "md: md0: recovery done.",
    "md/raid:md1: read error corrected (8 sectors at 81920 on sdc1)",
    "XFS (sdb1): Mounting V5 Filesystem 5f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b",
    # GPFS's successful mount; rpc.statd starting
    "mmfs[4210]: [I] Command: successful mount fs1",
    "rpc.statd[733]: Version 2.7.1 starting",
    # smartd's reset_warning_mail() (a condition that cleared), NVMe without its host memory buffer
    "smartd[1001]: Device: /dev/sda [SAT], No more Currently unreadable (pending) sectors, warning condition reset "
    "after 1 email",
    "smartd[1001]: Device: /dev/sdc [SAT], read SMART Attribute Data worked again, warning condition reset after "
    "1 email",
    "nvme nvme0: failed to allocate host memory buffer.",
    "nvme nvme0: allocated 64 MiB host memory buffer.",
    # JBD2 and XFS recovering cleanly
    "XFS (sdb1): Starting recovery (logdev: internal)",
    "XFS (sdb1): Ending recovery (logdev: internal)",
    # mountd's accepted requests, a Lustre target's recovery window, nfsd stopping
    "rpc.mountd[800]: authenticated mount request from 10.0.0.57:812 for /export/home (/export/home)",
    "Lustre: fs1-OST0003: Will be in recovery for at least 2:30, or until 100 clients reconnect",
    "nfsd: last server has exited, flushing export cache",
    # a job's own quota, a local path's EIO is not the shared filesystem's, libata's boot notes
    "mkdir: cannot create directory '/home/alice/run': Disk quota exceeded",
    "tar: /tmp/alice/x: Cannot stat: No such file or directory",
    "ata3.00: READ LOG DMA EXT failed, trying PIO",
    "ata3.00: failed to get NCQ Send/Recv Log Emask 0x1",
    # an administrator's deactivation of a Lustre import, LNet's interface coming up
    "Lustre: 4821:0:(llite_lib.c:1234:ll_umount_begin()) setting import fs1-MDT0000_UUID INACTIVE by administrator "
    "request",
    "LNet: Added LNI 10.0.0.57@o2ib [8/256/0/180]",
    "smartd[1001]: Device: /dev/sdb [SAT], previous self-test completed without error",
]


def test_another_programs_tag_is_not_the_automounter() -> None:
    # a process a job names cannot pass for automount's tag
    line = "python3[4821]: failed to mount /home/alice"
    assert not [f for f in diagnose(line.encode()) if f.details.get("rule") == "automount_failed"]


# no_fault: a disk or filesystem event is a ticket for the operator (action investigate), not a drain by itself
globals().update(table_tests(found=ALL, kernel_lines=[c[0] for c in KERNEL_FAULTS + KERNEL_EVIDENCE],
                             no_drain=[c[0] for c in DAEMON_FAULTS + DAEMON_EVIDENCE + JOB_FAULTS],
                             no_fault=[c[0] for c in KERNEL_FAULTS + KERNEL_EVIDENCE], twins=BENIGN_TWINS))


def test_a_reset_note_does_not_hide_a_new_fault_of_the_same_disk() -> None:
    # the claim reads only smartd's reset form; the same condition's report is still the warning
    line = "smartd[1001]: Device: /dev/sda [SAT], 8 Currently unreadable (pending) sectors"
    found_as(line, "disk", "warning")
    never_drains(line)


def test_a_long_hostile_line_is_read_in_linear_time() -> None:
    # the idmap rule's bounded name and the automounter's path: a long line of near-matches is still decided
    line = "nfsidmap[1]: nss_getpwnam: name '" + "a" * 100_000 + " does not map into domain 'x'"
    assert not [f for f in diagnose(line.encode()) if f.details.get("rule") == "nfs_idmap_domain"]
