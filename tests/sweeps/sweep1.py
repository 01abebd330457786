"""Benign lines of whole public logs that once raised a warning or worse (found by diagnosing every line of 115 whole
log files from public GitHub repositories: boot logs, syslog, journals, nvidia-bug-report.log, NCCL and MPI job
output; docs/diagnosis.md). Each family's benign line, verbatim with its source, stays below warning, and its fault
twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
ELI = f"{GH}/eli4444/askUbuntu_dmesg/blob/0b7579721cab1f189e70a2a7fc24767d2c771e13/dmesg"
ZICTES = f"{GH}/zictes/log/blob/e23cf52c93d942b8160c1817db4e5617f5a93933/journal"
ANACONDA = f"{GH}/marcusbohessef83/logs-srv/blob/a72ed81d7070ec552ae292a4425178d60fc1fb31/anaconda/syslog"
FUJITSU = f"{GH}/marwank270/nvidia-bug-report/blob/63d73dd417c1e835ebfbdb8e0d9f02b86e72fb16/journal.txt"
INSPUR = f"{GH}/duaneya/tool_man/blob/6c33d557edfcb59eb5e6aa7c912dbdba88e64799/nvidia-bug-report.log"
ELER = f"{GH}/eler/git_examples/blob/8bae4ce021861fd4a2a14dcf2c6526f3f8b59d31/nvidia-bug-report.log"
NVM = f"{GH}/biswajyoti2607/7.NVM-Performance/blob/a32d1a5940c9c6ff5f72a83e9e9679dfbef8aea9/dmesg.txt"
I225 = f"{GH}/iimeng/i225nic/blob/15f5e09e7bdf03ded3879171264ec49a944e583b/kern.log"
HOMESERVER = f"{GH}/NickSalacious/LinuxErrors/blob/c3b76d1ca552449ce5e02fb373ecf23a8fa4d101/journalctl.txt"
KDE = f"{GH}/Klangborn/pastebin/blob/376a12cec429259899318529bfd274ff296befe5/journalctl.txt"
FIPS = f"{GH}/brehman1/Ubuntu-20.04-FIPS-logs/blob/ea54cdc45f72885b476f8e503ce5166d2b2d4071/dmesg.txt"
GENOA = f"{GH}/clu6/supermicro/blob/3e4f1cb79f35c1aceeb88587aa5a9dcf6c78a0a6/dmesg.txt"
PGSQL = f"{GH}/snaga/pgsql-checksum-test/blob/bfc9c9be6e7fd34d1d608f602e3d80e3387ef421/dmesg.log"
ANDROID = f"{GH}/Fullthrotle/dmesg_logs/blob/d0dfb9b99ba81a6b8feefdf2fcd900c9e6d40646/dmesg.log"
LUSTRE = f"{GH}/cilioh/zfs_chksm/blob/adf2ad0b3f477dc2f67784456ba34687e0c7f68a/dmesg"
POPOS = f"{GH}/VenRoot/logs/blob/07766c2089c43d6197ec6570a370f8aceb07b196/dmesg.log"
M11X = f"{GH}/cmotc/m11x_hwinfo/blob/8cf210aea10a8c5269a97cf6e0d0f01f55352feb/M11x/dmesg.log"
RPI = f"{GH}/AncestorsPride/Degree-Project/blob/9eaec9652b7c61365ac517ac4be9dbd97f1e2509/kern.log"
T400 = f"{GH}/cmotc/m11x_hwinfo/blob/8cf210aea10a8c5269a97cf6e0d0f01f55352feb/T400/dmesg.log"
N100 = f"{GH}/frankol/N100DC-ITX-Sophos/blob/9496b4d61bd9041545c45a47f924932112bb3dfc/dmesg"

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml
BENIGN = [
    # r8169's chip revision, read as an NVIDIA XID by xid_text (r8169_chip_xid)
    (ELI, "[    1.124544] r8169 0000:03:00.0 eth0: RTL8168h/8111h, f4:39:09:44:4d:be, XID 541, IRQ 141"),
    (ZICTES, "May 08 00:49:10 stephen kernel: r8169 0000:07:00.0 eth0: RTL8168h/8111h, f0:2f:74:33:d7:c4, XID 541,"
             " IRQ 49"),
    # an empty floppy drive, a loop device's partition scan (block_removable_noise)
    (ANACONDA, "03:23:01,887 ERR kernel:blk_update_request: I/O error, dev fd0, sector 0"),
    (FUJITSU, "août 25 19:38:06 fujitsu kernel: Dev loop3: unable to read RDB block 8"),
    (FUJITSU, "août 25 19:38:06 fujitsu kernel:  loop3: unable to read partition table"),
    # a SATA/PATA port with nothing attached (ata_empty_port)
    (ELI, "[    1.485461] ata6: SATA link down (SStatus 4 SControl 300)"),
    (NVM, "[    1.853023] ata2.01: link offline, clearing class 3 to NONE"),
    (ZICTES, "May 08 00:49:10 stephen kernel: ata5: failed to resume link (SControl 0)"),
    # megaraid_sas's capability table (megaraid_capabilities)
    (INSPUR, "[    2.507446] megaraid_sas 0000:82:00.0: Online Controller Reset(OCR)\t: Enabled"),
    (INSPUR, "[    2.507449] megaraid_sas 0000:82:00.0: FW provided TM TaskAbort/Reset timeout\t: 0 secs/0 secs"),
    (INSPUR, "[    2.559656] megaraid_sas 0000:82:00.0: firmware crash dump\t: no"),
    # FAT's dirty bit (fat_dirty_volume)
    (I225, "Feb 15 08:48:13 z4s-JasperLake-Platform kernel: [   38.422609] FAT-fs (sda1): Volume was not properly"
           " unmounted. Some data may be corrupt. Please run fsck."),
    # /proc/interrupts' thermal row of zeros, a sensor's ALARM against a 0 degree limit (thermal_table_noise)
    (ELER, "TRM:          0          0          0          0          0          0          0          0   Thermal"
           " event interrupts"),
    (HOMESERVER, "Jan 30 09:37:25 homeserver sensors[1459]: AUXTIN0:                +42.0°C  (high =  +0.0°C, hyst ="
                 "  +0.0°C)  ALARM  sensor = thermistor"),
    # a desktop's input device and D-Bus daemon, read as RDMA verbs errors (verbs_job_error narrowed)
    (HOMESERVER, "Jan 30 09:38:32 homeserver gnome-shell[1987]: Could not open device /dev/input/event11:"
                 " GDBus.Error:org.freedesktop.login1.DeviceIsTaken: Device already taken"),
    (KDE, "Jan 26 10:12:41 moe kded5[574]: org.kde.bolt.kded: Couldn't connect to Bolt DBus daemon"),
    # smartd's routine report of a normalised value that moved (smartd narrowed to the defect counters)
    (ZICTES, "May 08 06:23:37 stephen smartd[1288]: Device: /dev/sdc [SAT], SMART Prefailure Attribute: 3"
             " Spin_Up_Time changed from 166 to 158"),
    # an upstream link the kernel could not read (pcie_bandwidth handler)
    (FIPS, "[   14.675470] pci 0000:0a:00.0: 0.000 Gb/s available PCIe bandwidth, limited by Unknown speed x0 link at"
           " 0000:00:14.4 (capable of 2.000 Gb/s with 2.5 GT/s x1 link)"),
    # probe-time capability notes the subsystem fallback read as failures (sweep_boot_capability_notes)
    (GENOA, "[    2.298924] pci 0000:e1:00.0: DOE: [2c8] ABORT timed out"),
    (GENOA, "[    2.298939] pci 0000:e1:00.0: DOE: [2c8] failed to reset mailbox with abort command : -5"),
    (GENOA, "[    2.298960] pci 0000:e1:00.0: DOE: [2c8] failed to create mailbox: -5"),
    (NVM, "[    0.984267] [Firmware Warn]: GHES: Poll interval is 0 for generic hardware error source: 1, disabled."),
    (INSPUR, "[    1.140123] pci 0000:82:00.0: [Firmware Bug]: disabling VPD access (can't determine size of"
             " non-standard VPD format)"),
    (N100, "[    5.717316] scsi: <fdomain> Detection failed (no card)"),
    (ANDROID, "[    4.395811] mmc0: Out-of-interrupt timeout is 100[ms]"),
    (ZICTES, "May 08 00:49:10 stephen kernel: scsi 6:0:0:1: Failed to get diagnostic page 0x1"),
    (ZICTES, "May 08 00:49:10 stephen kernel: scsi 6:0:0:1: Failed to bind enclosure -19"),
    (M11X, "[    1.765964] ata1.00: failed to get NCQ Send/Recv Log Emask 0x1"),
    # a driver probing for an optional firmware file (sweep_optional_firmware)
    (RPI, "Nov 23 17:48:19 raspberrypi kernel: [    7.642897] brcmfmac mmc1:0001:1: Direct firmware load for"
          " brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.bin failed with error -2"),
    (T400, "[   10.041861] pci 0000:03:00.0: Direct firmware load failed with error -2"),
    # a mount option the filesystem does not know, F2FS probing another filesystem (sweep_fs_probe_notes)
    (PGSQL, "EXT3-fs (sda1): error: unrecognized mount option \"discard\" or missing value"),
    (ANDROID, "[    7.684506] F2FS-fs (mmcblk0p64): Can't find valid F2FS filesystem in 1th superblock"),
    # an interface up before its carrier, LNet skipping a down interface (sweep_link_not_ready)
    (LUSTRE, "[   15.558757] IPv6: ADDRCONF(NETDEV_UP): ib0: link is not ready"),
    (LUSTRE, "[ 3011.280790] LNet: 7516:0:(config.c:1641:lnet_inet_enumerate()) lnet: Ignoring interface virbr0-nic:"
             " it's down"),
    # rpcbind's warm-start files, the desktop's modeset (sweep_daemon_state_notes)
    (ANACONDA, "03:09:09,299 ERR rpcbind:cannot open file = /run/rpcbind/rpcbind.xdr for writing"),
    (ANACONDA, "03:09:09,299 ERR rpcbind:cannot save any registration"),
    (POPOS, "[   25.881087] [drm:nv_drm_master_set [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to"
            " grab modeset ownership"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    ("E1109 10:21:12.233 health.go:120] XID 79 detected on GPU-7540a9b3 (0000:3b:00.0)", "xid", "critical"),
    ("blk_update_request: I/O error, dev sda, sector 11535200 op 0x0:(READ) flags 0x80700 phys_seg 2 prio class 0",
     "disk", "warning"),
    ("Buffer I/O error on dev sdb1, logical block 0, async page read", "disk", "warning"),
    ("Dev sdb: unable to read RDB block 0", "disk", "warning"),
    (" sdb: unable to read partition table", "disk", "warning"),
    ("ata1.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x6 frozen", "disk", "warning"),
    ("ata3: COMRESET failed (errno=-16)", "disk", "warning"),
    ("megaraid_sas 0000:02:00.0: Found FW in FAULT state, will reset adapter scsi0.", "disk", "warning"),
    ("megaraid_sas 0000:82:00.0: Online Controller Reset(OCR) failed", "disk", "warning"),
    ("FAT-fs (sda1): error, fat_get_cluster: invalid cluster chain (i_pos 0)", "disk", "warning"),
    (" TRM:          0          3          0          0   Thermal event interrupts", "thermal", "warning"),
    ("temp1:        +95.0°C  (high = +80.0°C, crit = +100.0°C)  ALARM", "thermal", "warning"),
    ("Couldn't connect to 192.168.1.10:18515", "ib", "error"),
    ("Could not open device mlx5_0", "ib", "error"),
    ("smartd[1288]: Device: /dev/sdc [SAT], SMART Prefailure Attribute: 5 Reallocated_Sector_Ct changed from 100 to 99",
     "disk", "warning"),
    ("pci 0000:04:00.0: 7.876 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x1 link at 0000:00:1c.7"
     " (capable of 31.504 Gb/s with 8.0 GT/s PCIe x4 link)", "pcie", "warning"),
    ("EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0", "disk",
     "error"),
    ("LNet: 7516:0:(config.c:1641:lnet_inet_enumerate()) lnet: interface ib0 failed to initialise", "nfs", "warning"),
    ("mlx5_core 0000:3b:00.0 ib0: Link down", "ib", "error"),
    ("nouveau 0000:01:00.0: Direct firmware load for nvidia/ad102/gsp/booter_load-535.113.01.bin failed with error -2",
     "gsp", "error"),
]

# failures of the claimed subsystems that no rule names: the subsystem fallback still reports them
UNCLAIMED = [
    ("pci 0000:e1:00.0: DOE: [2c8] timed out waiting for a response", "pcie"),
    ("[Firmware Warn]: GHES: Failed to read error status block address for hardware error source: 1.", "mce"),
    ("F2FS-fs (mmcblk0p64): Failed to get valid F2FS checkpoint", "disk"),
    ("EXT4-fs (sda1): unable to read superblock", "disk"),
    ("rpcbind: cannot create socket for udp6", "nfs"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN: list[str] = []
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS: list[tuple[str, str, bool]] = []
