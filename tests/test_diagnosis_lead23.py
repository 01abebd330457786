"""Round 23's rules from the rules halves' misses (lead23_* in slurmtools/data/diagnosis_rules.toml, and the earlier
rules a family was folded into): each family's lines in words the collections' rows do not quote (other devices,
drivers, values), the benign twins of the same printers, and the trust that keeps a job's or a tool's line from
draining a node. The collections' own rows are scored by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from slurmtools.diagnosis.lines import normalise

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # the AFS kernel client: a volume offline or busy, a corrupt directory page
    ("kAFS: Volume 20001f4 'home.alice' is busy", "nfs", "warning"),
    ("kAFS: afs_dir_check_page(12ab): bad magic 3/4 is 1f2e", "nfs", "warning"),
    # Lustre's service watchdog, its "completed after" note and a first line cut where a mail wrapped it
    ("Lustre: mdt00_012: service thread pid 40412 completed after 412.07s. This indicates the system was overloaded "
     "(too many service threads, or there were not enough hardware resources).", "nfs", "warning"),
    ("Lustre: ll_ost_io01_003: service thread pid 9921 was", "nfs", "warning"),
    # the SMB client's VFS-level lines without a failure word
    ("CIFS: VFS: \\\\filer7 Dump pending requests:", "nfs", "warning"),
    ("CIFS: VFS: Verify user has a krb5 ticket and keyutils is installed", "nfs", "warning"),
    # the Ceph kernel client given a monitor list it cannot parse
    ("libceph: parse_ips bad ip 'cephmon-a:3300,cephmon-b:3300'", "nfs", "warning"),
    # a hung task quoted without its `INFO: task ` head
    ("kworker/u64:3:5123 blocked for more than 241 seconds.", "hung_task", "warning"),
    # FreeBSD: MegaRAID events and the disk driver's hard error, the OOM killer, PCIe errors through APEI
    ("mrsas0: 9071 (771234567s/0x0002/FATAL) - Uncorrectable medium error logged for VD 01/1 at 77aa (on PD 0c(e0x08/"
     "s3) at 77aa)", "disk", "warning"),
    ("mfi1: 3310 (701234567s/0x0002/info) - Unexpected sense: PD 11(e0x08/s1) Path 5000c500aa, CDB: 28 00 11 22 33 44 "
     "00 00 08 00, Sense: 3/11/00", "disk", "warning"),
    ("mfid3: hard error cmd=write 88776600-88776615", "disk", "warning"),
    ("pid 77101 (torchrun), uid 1002, was killed: failed to reclaim memory", "oom", "warning"),
    ("swap_pager_getswapspace(32): failed", "oom", "warning"),
    ("mlx5_core0: Uncorrectable (Fatal) PCIe error reported by APEI", "aer", "warning"),
    # IOMMU faults (VT-d, AMD-Vi); FreeBSD's NIC link and AHCI channel
    ("DMAR: [DMA Read] Request device [af:00.1] PASID ffffffff fault addr 5a100000 [fault reason 06] PTE Read access "
     "is not set", "pcie", "warning"),
    ("DMAR: DRHD: handling fault status reg 2", "pcie", "warning"),
    ("AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0021 address=0x7ff00000 flags=0x0020]", "pcie", "warning"),
    ("ixl0: link state changed to DOWN", "ib", "warning"),
    ("ahcich4: Timeout on slot 9 port 0", "disk", "warning"),
    # NVMe over Fabrics unable to connect an I/O queue
    ("nvme nvme5: queue 3: connect I/O queue failed (-110)", "disk", "warning"),
    # BSD and SoC thermal alarms, a Tegra over-current alarm
    ("amdtemp1: critical temperature detected, suggest system shutdown", "thermal", "warning"),
    ("rockchip-thermal ff260000.tsadc: Alarm: device temperature is above of alarm level.", "thermal", "warning"),
    ("soctherm: OC ALARM 0x00000001", "thermal", "warning"),
    # MegaRAID SAS waiting out a reset; amdgpu's SMU stuck
    ("megaraid_sas 0000:af:00.0: [60]waiting for 3 commands to complete for scsi11", "disk", "warning"),
    ("amdgpu 0000:c3:00.0: amdgpu: SMU: I'm not done with your previous command: SMN_C2PMSG_66:0x00000011 "
     "SMN_C2PMSG_82:0x00000001", "gpu_init", "warning"),
    ("[drm:smu_v13_0_set_mp1_state [amdgpu]] *ERROR* SMU failed to set mp1 state 1, -62", "gpu_init", "warning"),
    # e1000e's PHY register access timing out
    ("e1000e 0000:00:19.0 enp0s25: MDI Read did not complete", "ib", "warning"),
    # a switch-port driver's link down
    ("eth1 (Int switch port: 2) (Logical Port: 2) Link DOWN.", "ib", "warning"),
]
OTHER_FAULTS = [
    # NVIDIA's fabric daemons with an RM status name; NCCL's NVLink SHARP setup failing
    ("request to query NVLink domain information failed with error: Insufficient resources "
     "[NV_ERR_INSUFFICIENT_RESOURCES]", "fabric_manager", "warning"),
    ("node7:4411:4503 [2] transport/nvls.cc:161 NCCL WARN Failed to map NVLink SHARP (NVLS) Multicast memory",
     "nccl", "error"),
    # FUSE mounts that fail; mount(8) given a Ceph monitor list; mount.nfs's bare errno sentence
    ("fuse: bad mount point `/cvmfs/atlas.cern.ch': Transport endpoint is not connected", "nfs", "warning"),
    ("mount: /mnt/cephfs: wrong fs type, bad option, bad superblock on 10.9.0.1:6789,10.9.0.2:6789:/volumes/x,",
     "nfs", "warning"),
    ("mount.nfs: Protocol family not supported", "nfs", "warning"),
    # programs that could not load CUDA; systemd naming a failed NVIDIA daemon
    ("[AVHWDeviceContext @ 0x55d0c0] cu->cuInit(0) failed; Failed to set value 'cuda=gpu1:1' for option "
     "'init_hw_device': Operation not permitted", "cuda", "warning"),
    ("encoder: Could not load libcuda.so.1", "cuda", "warning"),
    ("Failed units: nvidia-persistenced.service", "gpu_init", "warning"),
    # HPE's IML, a DIMM at boot
    ("POST Error: 201-Memory Error Multi-bit error occurred during memory initialization, Processor 1, DIMM 4.",
     "mce", "warning"),
    # storage tools: mdadm's missing member, multipath's failed path, an NVMe drive almost out of spare, btrfs scrub
    ("      Array State : .AA ('A' == active, '.' == missing, 'R' == replacing)", "disk", "warning"),
    ("| `- 7:0:1:3 sdq 65:0  active faulty running", "disk", "warning"),
    ("    -       0        0        3      removed", "disk", "warning"),
    ("Available Spare:                    0%", "disk", "warning"),
    ("  Uncorrectable:  31", "disk", "warning"),
    # a controller's firmware slowing down for heat; a monitoring plugin's hot drive
    ("mrsas1: 20411 (700000001s/0x0008/WARN) - Battery charging was suspended due to high battery temperature",
     "thermal", "warning"),
    ("CRIT - The temperature of drive is higher than 55 degrees Celsius", "thermal", "warning"),
    # mount(8) naming its target first on an NFS export
    ("mount: /scratch: can't read superblock on storage01:/export/scratch.", "nfs", "warning"),
    # ... and on a local device it stays the disk's
    ("mount: /mnt/ssd0: wrong fs type, bad option, bad superblock on /dev/nvme1n1p1, missing codepage or helper "
     "program, or other error.", "disk", "warning"),
    # NICs: Broadcom's firmware interface, an error completion in verbs code, an
    # IPU's malicious-driver event, e1000e's PHY access
    ("bnxt_en 0000:5e:00.1: hwrm_ring_alloc: HWRM request failed: -110", "ib", "warning"),
    ("rank3: got completion with err: syndrome=0x4, vendor_err_synd=0x51", "ib", "warning"),
    ("idpf_mdd_handler: MDD event detected", "ib", "warning"),
    # Lenovo/IBM events for a DIMM that failed its boot test; POWER PRD's uncorrectable memory signature
    ("POST/UEFI Event [S.58008] - DIMM 14 failed memory test", "mce", "warning"),
    ("  22.40018|  Signature Description    : pu.mca:k0:n0:s1:p00:c2 (MCAECCFIR[14]) Mainline read UE", "mce",
     "warning"),
    # a RAID controller's battery, iDRAC unable to reach a storage controller
    ("The battery on Integrated RAID Controller 2 has failed.", "disk", "warning"),
    ("iDRAC is unable to successfully communicate with the device BOSS-S1 Controller in Slot 7", "disk", "warning"),
    # Ceph: the oldest `ceph -s` counts, a monitor's slow ops, an OSD heartbeat without the peer's address
    ("             7 pgs undersized", "nfs", "warning"),
    ("            recovery 3/99 objects unfound (3.030%)", "nfs", "warning"),
    ("mon.b@1(peon) e9 get_health_metrics reporting 3 slow ops, oldest is osd_op(client.9.0:4)", "nfs", "warning"),
    ("2024-06-07 08:09:10.111 7f2 -1 osd.4 88 heartbeat_check: no reply from osd.9 since back 2024-06-07 08:08:50",
     "nfs", "warning"),
    # a launcher's crash-signal summary; a CUDA allocator's bad_alloc
    ("std::bad_alloc: out_of_memory: CUDA error (failed to allocate 4096 bytes) at: rmm/mr/device/pool.hpp", "cuda",
     "error"),
    # GPU resets for passthrough; an LXC container without an NVIDIA device node; the vGPU manager's config; QEMU
    ("vfio-pci 0000:43:00.0: AMD_POLARIS10: failed to reset device", "gpu_init", "warning"),
    ("gim error libgv: [0:5e:0:0][VF3][hang_detect:210] Timeout of waiting command complete (500000 us).", "gpu_init",
     "warning"),
    ('time="2025-02-03T04:05:06Z" level=error msg="Failed to apply vGPU config: unable to apply config \'A100-4C\': '
     'exit status 1"', "gpu_init", "warning"),
    ("qemu-system-x86_64: -device vfio-pci,host=0000:65:00.0,id=hostdev1: vfio: failed to set iommu for container: "
     "Operation not permitted", "gpu_init", "warning"),
    # bnxt_en's completion ring reporting an error response
    ("bnxt_en 0000:41:00.0 enp65s0f0np0: Resp cmpl intr err msg: 0x51", "ib", "warning"),
    # a German BMC's uncorrectable memory error
    ("Speicher CPU: 1, DIMM: A2 - Unkorrigierbarer ECC-Speicherfehler", "mce", "warning"),
]
INFO = [
    # GlusterFS's warnings with a failure's words, the Sun RPC debug trace, radeon's BIOS probe, corrected errors
    ("[2026-02-03 04:05:06.789012] W [socket.c:3120:socket_connect] 0-glusterfs: Failed to set keep-alive: Invalid "
     "argument", "nfs"),
    ("RPC: 51812 call_connect_status (status -111)", "nfs"),
    ("[drm] BIOS signature incorrect 0 0", "gpu_init"),
    ("ixl1: Correctable PCIe error reported by APEI", "aer"),
    ("Mmry ECC-Sensor Speicher CPU: 2, DIMM: C1 - Korrigierbarer ECC-Speicherfehler", "mce"),
    # a drive's lifetime minutes out of its temperature limits
    ("0x05  0x050  4              12  ---  Time in Under-Temperature", "thermal"),
    # `ceph -s` at HEALTH_WARN, BlueStore at error level, libata detaching, launchers' crash signals
    ("  health: HEALTH_WARN", "nfs"),
    ("2025-03-04T05:06:07.890+0000 7fa0b1c2 -1 bluefs _allocate allocation failed, needed 0x400000", "nfs"),
    ("ata9.00: detaching (SCSI 8:0:0:0)", "disk"),
    ("x3005c0s13b1n0: rank 4 died from signal 6", "segfault"),
    ("srun: error: nid000777: tasks 0-3: Aborted", "segfault"),
    # POWER PRD's report header (it reports corrected errors too)
    ("  16.00001|Error reported by prdf (0xE504) EID 0x90000a11", "mce"),
    ("190 Airflow_Temperature_Cel 0x0032   062   038   040    Old_age   Always   In_the_past 38 (Min/Max 21/62)",
     "thermal"),
]
TWINS = [
    "kAFS: Red Hat AFS client v0.1 registering.",
    "kAFS: failed to register: -97",
    "Lustre: mdt00_012: service thread pid 40412 started",
    "[2026-02-03 04:05:06.789012] W [MSGID: 106061] [glusterd-handler.c:1234:__glusterd_handle_x] 0-management: "
    "Dict get on key 'force' returned nothing",
    "RPC: 51812 call_decode result 0",
    "ps-1221  [003] .....  4412.103311: rpc_task_begin: task:00000041@00000002 flags=ASYNC|SOFT|TIMEOUT "
    "runstate=QUEUED",
    "POST Error: 1786-Slot X Drive Array Not Configured",
    "   0       8        1        0      active sync   /dev/sda1",
    "      Array State : AAA ('A' == active, '.' == missing, 'R' == replacing)",
    "| `- 7:0:1:3 sdq 65:0  active ready running",
    "Available Spare:                    100%",
    "  Uncorrectable:  0",
    "nvme3: Clearing PCIe errors 0x0000",
    "NVLS multicast support is available on dev 0",
    "[Jan 03 2026 04:05:06] [INFO] [tid 812] Connected to 1 node.",
    "coretemp0: critical temperature set to 100C",
    "DMAR: IOMMU enabled",
    "AMD-Vi: Interrupt remapping enabled",
    "ixl0: link state changed to UP",
    "ahcich4: AHCI reset: device found",
    "kvm: -device vfio-pci,host=0000:65:00.0,id=hostpci0: warning: vfio 0000:65:00.0: Could not enable error recovery "
    "for the device",
    "vfio-pci 0000:43:00.0: AMD_POLARIS10: performing post-reset",
    "    health: HEALTH_OK",
    "            recovery 3/99 objects misplaced (3.030%)",
    "2025-03-04T05:06:07.890+0000 7fa0b1c2  1 bluestore(/var/lib/ceph/osd/ceph-3) _mount path /var/lib/ceph/osd/ceph-3",
    "x3005c0s13b1n0: rank 4 exited with code 0",
    "[    3.401122514,7] PHB#0002[0:2]: FRESET: Prepare for link down",
    "  22.40018|  Signature Description    : pu.mca:k0:n0:s1:p00:c2 (MCAECCFIR[12]) Mainline read CE",
    "The battery on Integrated RAID Controller 2 is operating normally.",
    "igc 0000:02:00.0: offline testing starting",
    "eth1 (Int switch port: 2) (Logical Port: 2) Link UP.",
    "0x05  0x050  4               0  ---  Time in Over-Temperature",
    "190 Airflow_Temperature_Cel 0x0032   062   038   040    Old_age   Always       -       38 (Min/Max 21/62)",
    "megaraid_sas 0000:af:00.0: FW now in Ready state",
    "amdgpu 0000:c3:00.0: amdgpu: SMU is initialized successfully!",
    "mfi0: 15700 (655986900s/0x0008/info) - Battery charging was resumed",
]


def test_hostboot_console_stamp_is_envelope() -> None:
    """OpenPOWER hostboot's console stamp (seconds since its start and a bar) is envelope, not message."""
    assert normalise("  16.91730|Error reported by prdf (0xE500) EID 0x90000366").message == (
        "Error reported by prdf (0xE500) EID 0x90000366")


def test_a_vtd_fault_report_is_no_pdsh_host() -> None:
    """VT-d's `DMAR: [DMA Read] ...` is the kernel's message, not a pdsh host named DMAR before a bracket."""
    line = "DMAR: [DMA Write] Request device [3b:00.0] PASID ffffffff fault addr 7f200000 [fault reason 05]"
    assert normalise(line).message == line


def test_no_break_spaces_read_as_spaces() -> None:
    """A web page's no-break spaces in a pasted line are plain spaces to the envelope parser and the rules."""
    assert normalise("kAFS:\xa0Volume 5 'x' is\u202foffline").message == "kAFS: Volume 5 'x' is offline"
    assert normalise("ata2:\u2007hard resetting link").message == "ata2: hard resetting link"


globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, info=INFO, twins=TWINS))
