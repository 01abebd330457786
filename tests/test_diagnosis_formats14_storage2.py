"""Round 14's printers (rules14-storage), from their format strings: storage orchestration and block-device plumbing
(the kubelet's volume manager and the attach/detach controller, the CSI drivers' gRPC errors, systemd's mount, swap,
automount and device units and systemd-fsck, util-linux mount(8), open-iscsi's logins, multipathd, device-mapper's
thin, snapshot, verity and table targets, LVM2 and dmeventd, the kernel's rbd and libceph msgr2, mdadm's monitor mail
and assembly), which tests/data/kernel/printers/storage2.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (Kubernetes v1.31.0, the
kubernetes-csi sidecars, aws-ebs-csi-driver v1.32, ceph-csi v3.11, systemd v252/v256, util-linux 2.38/2.39, open-iscsi
2.1.9, multipath-tools 0.9.4, Linux 6.1 as Debian's linux-source-6.1 holds it, LVM2 2.03.16, mdadm 4.2) with its
conversions filled in by hand, not a line copied from a log or from the field corpus. The printer file checks the
kind; this file checks what it cannot: the severity, the trust (a daemon's, controller's or tool's line never drains;
the kernel's own is trust kernel and no node fault), the twins that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # drivers/block/rbd.c rbd_warn() ('rbd: %s: %pV'): rbd_obj_handle_request "%s at objno %llu %llu~%llu result %d",
    # rbd_img_handle_request "%s%s result %d", rbd_queue_workfn "%s %llx at %llx result %d", the lock and header texts
    ("rbd: rbd0: write at objno 1234 2097152~4096 result -108", "nfs", "warning"),
    ("rbd: rbd0: child read result -5", "nfs", "warning"),
    ("rbd: rbd2: discard 400000 at 0 result -5", "nfs", "warning"),
    ("rbd: rbd0: no lock owners detected", "nfs", "warning"),
    ("rbd: rbd0: peer will not release lock", "nfs", "warning"),
    ("rbd: image vm-disk-1: short header read (want 4096 got 0)", "nfs", "warning"),
    ("rbd: image csi-vol-7f3e: image uses unsupported features: 0x38", "nfs", "warning"),
    # net/ceph/messenger_v2.c "bad %s crc, calculated %u, expected %u"
    ("libceph: bad data crc, calculated 3735928559, expected 305419896", "nfs", "warning"),
    ("libceph: bad preamble crc, calculated 1, expected 2", "nfs", "warning"),
    # drivers/md/dm-thin.c, dm-verity-target.c, dm-table.c, dm-snap.c (after 'device-mapper: %s: ')
    ("device-mapper: thin: 253:4: switching pool to out-of-metadata-space mode", "disk", "error"),
    ("device-mapper: thin: No free metadata blocks", "disk", "error"),
    ("device-mapper: thin: 253:4: pool target (819200 blocks) too small: expected 1638400", "disk", "error"),
    ("device-mapper: verity: 259:3: reached maximum errors", "disk", "error"),
    ("device-mapper: table: 253:6: sdg too small for target: start=2048, len=209715200, dev_size=104857600", "disk",
     "error"),
    ("device-mapper: snapshots: Snapshot overflowed: Unable to allocate exception.", "disk", "error"),
]

DAEMON_FAULTS = [
    # kubernetes operation_generator.go GenerateError "%s failed for volume %q : %v" (events and klog)
    ('  Warning  FailedMount  41s (x3 over 5m)  kubelet  MountVolume.SetUp failed for volume "pvc-3f1c" : rpc error: '
     'code = DeadlineExceeded desc = context deadline exceeded', "nfs", "warning"),
    ('  Warning  FailedMapVolume  2m  kubelet  MapVolume.SetUpDevice failed for volume "pvc-8e7d" : rpc error: code = '
     'Internal desc = failed to stage volume: device /dev/sdd is not a block device', "disk", "warning"),
    ('kubelet[2201]: E1126 10:20:03.000111    2201 operation_generator.go:872] '
     'UnmountVolume.TearDown failed for volume '
     '"scratch" (UniqueName: "kubernetes.io/local-volume/local-pv-5d2e") pod "1c2d" (UID: "1c2d") : unmount failed: '
     'exit status 32', "disk", "warning"),
    ('kubelet[2201]: E1126 10:02:00.424242    2201 reconstruct.go:189] "Failed to unmount volume" '
     'err="UnmountVolume.TearDown failed for volume \\"data\\" : unmount failed: exit status 32"', "nfs", "warning"),
    ('  Warning  FailedAttachVolume  5m  attachdetach-controller  AttachVolume.Attach failed for volume "pvc-9dbd" : '
     'timed out waiting for external-attacher of disk.csi.azure.com CSI driver to attach volume pvc-9dbd', "disk",
     "warning"),
    # kubelet.go SyncPod "Unable to attach or mount volumes: %v", volume_manager.go's error
    ("  Warning  FailedMount  2m5s (x4 over 11m)  kubelet  Unable to attach or mount volumes: "
     "unmounted volumes=[data], unattached volumes=[data kube-api-access-7n89z]: timed out waiting for the condition",
     "nfs", "warning"),
    ('kubelet[2201]: E1126 10:14:12.345901    2201 pod_workers.go:1301] "Error syncing pod, skipping" err="unmounted '
     'volumes=[ckpt], unattached volumes=[], failed to process volumes=[]: context deadline exceeded"', "nfs",
     "warning"),
    # the attach/detach reconciler's Multi-Attach error and force detach
    ('  Warning  FailedAttachVolume  34s  attachdetach-controller  Multi-Attach error for volume "pvc-9dbd" Volume is '
     "already exclusively attached to one node and can't be attached to another", "nfs", "warning"),
    ('3m   Warning   FailedAttachVolume   pod/train-1   Multi-Attach error for volume "pvc-9dbd" Volume is already '
     "used by pod(s) train-0", "nfs", "warning"),
    # the CSI sidecars' and drivers' gRPC errors
    ('I1126 10:31:00.555555       1 csi_handler.go:251] "Error processing" VolumeAttachment="csi-8c2f0d" err="failed '
     'to attach: rpc error: code = DeadlineExceeded desc = context deadline exceeded"', "nfs", "warning"),
    ("E1126 10:40:01.131313   12345 utils.go:271] ID: 20 Req-ID: 0001 GRPC error: rpc error: code = Aborted desc = an "
     "operation with the given Volume ID 0001 already exists", "nfs", "warning"),
    ('  Warning  ProvisioningFailed  1m  topolvm.io_topolvm-controller-5f6b_9c8d  failed to provision volume with '
     'StorageClass "topolvm-provisioner": rpc error: code = ResourceExhausted desc = no enough space left on VG',
     "disk", "warning"),
    ('E1126 10:00:05.141414       1 main.go:172] error connecting to CSI driver: rpc error: code = Unavailable desc = '
     'connection error', "nfs", "warning"),
    # a local volume whose mount output says the disk is damaged; mount(8)'s bare exit 32 (a network volume's, as
    # lead11_volume_mount_failed has it)
    ('MountVolume.SetUp failed for volume "scratch" : mount failed: exit status 32 Mounting command: mount Mounting '
     "arguments: -t xfs /dev/nvme1n1 /var/lib/kubelet/pods/x/scratch Output: mount: /var/lib/kubelet/pods/x/scratch: "
     "can't read superblock on /dev/nvme1n1.", "disk", "warning"),
    ('MountVolume.SetUp failed for volume "pvc-9" : rpc error: code = Internal desc = mount failed: exit status 32',
     "nfs", "warning"),
    # ceph-csi's rbd map (nfs, network storage)
    ('MountVolume.MountDevice failed for volume "pvc-5a4b" : rpc error: code = Internal desc = rbd: map failed with '
     "error an error (exit status 110) occurred while running rbd args: [map replicapool/csi-vol-7f3e], rbd error "
     "output: rbd: sysfs write failed", "nfs", "warning"),
    # systemd mount.c, swap.c, automount.c, device.c, job.c, unit.c
    ("systemd[1]: mnt-local\\x2dnvme.mount: Mount process exited, code=exited, status=32/n/a", "disk", "warning"),
    ("systemd[1]: mnt-ssd0.mount: Mounting timed out. Terminating.", "disk", "warning"),
    ("systemd[1]: raid-md0.mount: Failed with result 'exit-code'.", "disk", "warning"),
    ("systemd[1]: Failed to mount mnt-local\\x2dnvme.mount - /mnt/local-nvme.", "disk", "warning"),
    ("systemd[1]: Failed to mount /mnt/ssd0.", "disk", "warning"),
    ("systemd[1]: Timed out waiting for device /dev/disk/by-label/scratch.", "disk", "warning"),
    ("systemd[1]: dev-disk-by\\x2duuid-5f3a.device: Job dev-disk-by\\x2duuid-5f3a.device/start timed out.", "disk",
     "warning"),
    ("systemd[1]: Dependency failed for Local File Systems.", "disk", "warning"),
    ("systemd[1]: local-fs.target: Job local-fs.target/start failed with result 'dependency'.", "disk", "warning"),
    ("systemd[1]: dev-nvme0n1p3.swap: Swap process exited, code=exited, status=255/EXCEPTION", "disk", "warning"),
    ("systemd[1]: Failed to activate swap /swapfile.", "disk", "warning"),
    ("systemd[1]: Dependency failed for Swaps.", "disk", "warning"),
    ("systemd[1]: mnt-data.automount: Got hangup/error on autofs pipe from kernel. Likely our automount point has been "
     "unmounted by someone or something else?", "disk", "warning"),
    ("systemd[1]: Failed to start File System Check on /dev/disk/by-uuid/5f3a9c2e-1b4d-4e8f-9a0b-1c2d3e4f5a6b.", "disk",
     "warning"),
    ("[DEPEND] Dependency failed for remote-fs.target - Remote File Systems.", "nfs", "warning"),
    ("systemd[1]: remote-fs.target: Job remote-fs.target/start failed with result 'dependency'.", "nfs", "warning"),
    # systemd-fsck and e2fsck's preen texts
    ("systemd-fsck[612]: fsck failed with exit status 4.", "disk", "warning"),
    ("systemd-fsck[612]: /dev/nvme1n1p1: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.", "disk", "warning"),
    # util-linux libmount's mount(8) and umount(8)
    ("mount: /mnt/ssd0: wrong fs type, bad option, bad superblock on /dev/nvme1n1p1, missing codepage or helper "
     "program, or other error.", "disk", "warning"),
    ("mount[601]: mount: /mnt/local-nvme: can't read superblock on /dev/nvme1n1p1.", "disk", "warning"),
    ("mount: /mnt/ssd0: fsconfig system call failed: Structure needs cleaning.", "disk", "warning"),
    ("umount: /mnt/ssd0: target is busy.", "disk", "warning"),
    # open-iscsi iscsiadm and iscsid logins (nfs, network storage)
    ("iscsiadm: Could not log into all portals", "nfs", "warning"),
    ("iscsiadm: cannot make connection to 10.0.0.21: No route to host", "nfs", "warning"),
    ("iscsid[1203]: conn 0 login rejected: initiator failed authorization with target", "nfs", "warning"),
    ("iscsid[1203]: Login authentication failed with target iqn.2003-01.org.linux-iscsi.stor01:sn.1a2b3c", "nfs",
     "warning"),
    # multipathd
    ("multipathd[912]: mpatha: Disable queueing", "disk", "warning"),
    ("multipathd[912]: mpatha: failed in domap for addition of new path sdf", "disk", "warning"),
    ("multipathd[912]: sde: tur checker timed out", "disk", "warning"),
    ("multipathd[912]: mpatha: remaining active paths: 0", "disk", "warning"),
    # LVM2 and dmeventd
    ("lvm[702]:   device-mapper: resume ioctl on  (253:4) failed: Invalid argument", "disk", "warning"),
    ("  Insufficient free space: 2560 extents needed, but only 118 available", "disk", "warning"),
    ("dmeventd[881]: WARNING: Thin pool vg0-pool-tpool data is now 95.12% full.", "disk", "warning"),
    ("  Check of pool vg0/pool failed (status:1). Manual repair required!", "disk", "warning"),
    ("  WARNING: VG vg0 is missing PV Xc3v9B-2kLm (last written to /dev/nvme2n1).", "disk", "warning"),
    ("  Refusing activation of partial LV vg0/data.  Use '--activationmode partial' to override.", "disk", "warning"),
    # mdadm 4.2: the monitor's mail and stdout forms, assembly, --detail
    ("Subject: Fail event on /dev/md0:gpu-node07", "disk", "error"),
    ("Nov 26 10:30:05: DegradedArray on /dev/md0 unknown device", "disk", "error"),
    ("mdadm: /dev/md0 assembled from 1 drive - not enough to start the array.", "disk", "error"),
    ("mdadm: failed to RUN_ARRAY /dev/md0: Input/output error", "disk", "error"),
    ("             State : active, FAILED, Not Started ", "disk", "error"),
]

TWINS = [
    # the kubelet's and controllers' success notes
    '  Normal   SuccessfulAttachVolume  2m    attachdetach-controller  '
    'AttachVolume.Attach succeeded for volume "pvc-9dbd"',
    'kubelet[2201]: I1126 10:11:20.123456    2201 operation_generator.go:721] "MountVolume.SetUp succeeded for volume '
    '\\"data\\"" pod="ml/train-0"',
    '  Normal   ProvisioningSucceeded  25s   ebs.csi.aws.com_ebs-csi-controller  '
    'Successfully provisioned volume pvc-3f1c',
    # a secret's or configmap's volume: the pod's configuration, info
    '  Warning  FailedMount  13m  kubelet  MountVolume.SetUp failed for volume "missing-secret" : secret '
    '"rc-definitely-missing-secret" not found',
    'MountVolume.SetUp failed for volume "cfg" : configmap "train-config" not found',
    # a local volume that did not mount, with no damaged-disk output (info, as lead11_local_path_not_netfs)
    'MountVolume.SetUp failed for volume "ebs" : mount failed: exit status 32 Mounting arguments: -t ext4 /dev/xvdf '
    "/var/lib/kubelet/x",
    # systemd's units that came up
    "systemd[1]: Mounted mnt-local\\x2dnvme.mount - /mnt/local-nvme.",
    "systemd[1]: Activated swap dev-nvme0n1p3.swap - /dev/nvme0n1p3.",
    "systemd[1]: Reached target local-fs.target - Local File Systems.",
    "systemd[1]: mnt-local\\x2dnvme.mount: Deactivated successfully.",
    "systemd[1]: mnt-data.automount: Got automount request for /mnt/data, triggered by 48213 (python3)",
    "systemd-fsck[612]: /dev/nvme1n1p1: clean, 11/122093568 files, 7947428/488374272 blocks",
    # mount(8)'s notes
    "mount: /mnt/ssd0: /dev/nvme1n1p1 already mounted on /mnt/ssd0.",
    "umount: /mnt/ssd0: not mounted.",
    # iscsiadm's login notes
    "Login to [iface: default, target: iqn.2003-01.org.linux-iscsi.stor01:sn.1a2b3c, portal: 10.0.0.21,3260] "
    "successful.",
    "iscsiadm: No active sessions.",
    # multipathd with paths left, a path back
    "multipathd[912]: mpatha: remaining active paths: 2",
    "multipathd[912]: 8:32: reinstated",
    "multipathd[912]: sdc: tur checker reports path is up",
    # the kernel's notes
    "rbd: rbd0: capacity 107374182400 features 0x3d",
    "device-mapper: thin: 253:4: switching pool to write mode",
    "device-mapper: thin: 253:4: growing the data device from 819200 to 1638400 blocks",
    # the low water marks: dmeventd's cue to extend the pool (a twin since round 7's storage tests)
    "device-mapper: thin: 253:4: reached low water mark for metadata device: sending event.",
    "libceph: osd12 up",
    # LVM's and mdadm's notes
    "lvm[881]: Monitoring thin pool vg0-pool-tpool.",
    '  3 logical volume(s) in volume group "vg0" now active',
    "mdadm[1123]: RebuildStarted event detected on md device /dev/md0",
    "Subject: TestMessage event on /dev/md0:gpu-node07",
    "mdadm: /dev/md0 has been started with 2 drives.",
    "             State : clean ",
]


@pytest.mark.parametrize("line", [
    "Nov 26 10:03:23 gpu-node07 kernel: rbd: rbd0: write 1000 at 7ff000 result -108",
    "[ 7004.000000] device-mapper: thin: 253:4: switching pool to out-of-metadata-space mode",
    "[Thu Nov 26 10:01:47 2026] libceph: bad data crc, calculated 1, expected 2",
    "4,3301,7006000000,-;device-mapper: thin: No free metadata blocks",
])
def test_an_enveloped_kernel_line_is_read_the_same(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings and findings[0].severity in ("warning", "error") and findings[0].trust == "kernel", line


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "python3: saw 'rbd: rbd0: write at objno 1 0~4096 result -108' in the log",
    "train.py says device-mapper: thin: No free metadata blocks",
    "echo libceph: bad data crc, calculated 1, expected 2",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    'MountVolume.SetUp failed for volume "' + "v" * 100_000 + '" : rpc error',
    "unmounted volumes=[" + "d " * 50_000 + "], unattached volumes=[",
    "systemd[1]: " + "m" * 100_000 + ".mount: Mount process exited, code=exited, status=32/n/a",
    "lvm[1]:   device-mapper: reload ioctl on " + "x" * 100_000 + " failed: Invalid argument",
    "rbd: rbd0: write at objno " + "1" * 100_000 + " 0~1 result -5",
    "mdadm: /dev/md0 assembled from 1 drive" + " and 1 spare" * 10_000 + " - not enough to start the array.",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=DAEMON_FAULTS, twins=TWINS, not_kernels=ECHOED,
                             unread=("rules14_", HOSTILE)))
