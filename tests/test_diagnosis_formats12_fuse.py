"""Round 12's printers (rules12-fuse), from their format strings: the FUSE and object-store clients that mount a
training job's data (sshfs, MooseFS, SeaweedFS, mountpoint-s3, gcsfuse, blobfuse2, s3fs, JuiceFS, rclone, goofys,
Alluxio FUSE, the kernel's virtio-fs) and the virtual devices a cloud GPU VM or its host prints about (Hyper-V storvsc,
hv_netvsc, VMBus and PCI passthrough, Xen blkfront and netfront, virtio blk/net/scsi, vfio-pci, QEMU and libvirt, VMware
ESXi's vmkernel and VOB events), which tests/data/kernel/printers/fuse.tsv holds and no rule read before.

Every line is a format string of the public source named in the comment above it (Linux 6.1 as Debian's linux-source-6.1
holds it; moosefs/moosefs 4.59.2, libfuse/sshfs, awslabs/mountpoint-s3, GoogleCloudPlatform/gcsfuse and
Azure/azure-storage-fuse at the commits the printer file names; SeaweedFS's glog layout; QEMU's and libvirt's error
texts; VMware's vmkernel and VOB documentation) with its conversions filled in by hand, not a line copied from a log or
from the field corpus. The printer file checks the kind; this file checks what it cannot: the severity, the trust (a
job's, a daemon's or a hypervisor's line never drains; the kernel's own is trust kernel and, at warning, no node fault),
the notes that must stay quiet, and linear time on hostile lines.
"""

from __future__ import annotations

from .rule_cases import table_tests

KERNEL_FAULTS = [
    # drivers/scsi/storvsc_drv.c storvsc_on_io_completion() storvsc_log_ratelimited("tag#%d cmd 0x%x status: scsi 0x%x
    # srb 0x%x hv 0x%x\n") on a read, write or sync; storvsc_channel_init()/handle_sc_creation() "Failed to create
    # sub-channel: timed out\n", "Failed to open sub-channel: err=%d\n"; storvsc_on_channel_callback() "Invalid pkt:
    # id=%llu, len=%u, minlen=%u\n", "Incorrect transaction ID\n"
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#12 cmd 0x28 status: scsi 0x2 srb 0x4 hv 0xc0000001", "disk",
     "warning"),
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#3 cmd 0x2a status: scsi 0x0 srb 0x20 hv 0xc0000001", "disk",
     "warning"),
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: Failed to create sub-channel: timed out", "disk", "warning"),
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: Failed to open sub-channel: err=-110", "disk", "warning"),
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: Invalid pkt: id=17, len=12, minlen=48", "disk", "warning"),
    ("hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: Incorrect transaction ID", "disk", "warning"),
    # drivers/net/hyperv netvsc.c netvsc_send_pkt() netdev_err("Unable to send packet pages %u len %u, ret %d\n"),
    # netvsc_init_buf() "unable to allocate send buffer of size %u\n", "unable to open channel: %d\n"; netvsc_drv.c
    # "unable to add netvsc device (ret %d)\n", netvsc_attach() "unable to open device (ret %d).\n" (read before
    # verbs_job_error, which has an 'unable to open' alternative); rndis_filter.c "invalid rndis_msg (buflen: %u,
    # msg_len: %u)\n", "sub channel request failed\n"
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: Unable to send packet pages 3 len 1514, ret -11", "ib",
     "warning"),
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: unable to allocate send buffer of size 16777216", "ib",
     "warning"),
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e: unable to add netvsc device (ret -110)", "ib", "warning"),
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: unable to open device (ret -110).", "ib", "warning"),
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: invalid rndis_msg (buflen: 12, msg_len: 2048)", "ib",
     "warning"),
    ("hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: sub channel request failed", "ib", "warning"),
    # drivers/hv (pr_fmt 'hv_vmbus: '): connection.c vmbus_connect() "Unable to connect to host\n", vmbus_post_msg()
    # "hv_post_msg() failed; error code:%d\n"; vmbus_drv.c vmbus_probe() "probe failed for device %s (%d)\n"
    ("hv_vmbus: Unable to connect to host", "pcie", "warning"),
    ("hv_vmbus: hv_post_msg() failed; error code:5", "pcie", "warning"),
    ("hv_vmbus: probe failed for device f8b3781a-1e82-4818-a1c3-63d806ec15bb (-110)", "pcie", "warning"),
    # drivers/pci/controller/pci-hyperv.c hv_pci_enter_d0() "PCI Pass-through VSP failed D0 Entry with status %x\n",
    # hv_pci_probe() "Retrying D0 failed with ret %d\n", hv_compose_msi_msg() "Request for interrupt failed: 0x%x",
    # hv_pci_allocate_bridge_windows() "Need %#llx of high MMIO space. Consider reconfiguring the VM.\n",
    # hv_pci_onchannelcallback() "the device has gone\n", _hv_pcifront_read_config() "The device is gone.\n"
    ("hv_pci 47505500-0001-0000-3130-444531303244: PCI Pass-through VSP failed D0 Entry with status c0370048",
     "gpu_init", "warning"),
    ("hv_pci 47505500-0001-0000-3130-444531303244: Retrying D0 failed with ret -22", "gpu_init", "warning"),
    ("hv_pci 47505500-0001-0000-3130-444531303244: Request for interrupt failed: 0xc000009a", "gpu_init", "warning"),
    ("hv_pci 47505500-0001-0000-3130-444531303244: Need 0x4000000000 of high MMIO space. Consider reconfiguring the "
     "VM.", "gpu_init", "warning"),
    ("hv_pci 47505500-0001-0000-3130-444531303244: the device has gone", "gpu_init", "warning"),
    ("hv_pci 47505500-0001-0000-3130-444531303244: The device is gone.", "gpu_init", "warning"),
    # drivers/block/xen-blkfront.c blkif_interrupt() pr_warn_ratelimited("blkfront: %s: %s op failed\n"), "blkfront: %s:
    # empty %s op failed\n", pr_alert("%s: response has incorrect id (%ld)\n"), "%s disabled for further use\n";
    # drivers/xen/xenbus xenbus_probe_frontend.c print_device_status() "Timeout connecting to device: %s (local state
    # %d, remote state %d)\n", xenbus_client.c xenbus_va_dev_error() "%i %s"
    ("blkfront: xvdb: write barrier op failed", "disk", "warning"),
    ("blkfront: xvdb: empty flush diskcache op failed", "disk", "warning"),
    ("xvda: response has incorrect id (4096)", "disk", "warning"),
    ("xvda disabled for further use", "disk", "warning"),
    ("xenbus_probe_frontend: Timeout connecting to device: device/vbd/51760 (local state 3, remote state 1)", "disk",
     "warning"),
    ("vbd vbd-51712: 19 xenbus_dev_probe on device/vbd/51712", "disk", "warning"),
    # drivers/net/xen-netfront.c xennet_get_responses() dev_warn("Need more slots\n"), "rx->offset: %u, size: %d\n",
    # "Bad rx response id %d.\n", dev_alert("Disabled for further use\n"); pr_fmt 'xen_netfront: ' "can't alloc rx grant
    # refs\n"; the xenbus vif timeout and error
    ("net eth0: Need more slots", "ib", "warning"),
    ("net eth0: rx->offset: 0, size: -1", "ib", "warning"),
    ("net eth0: Bad rx response id 257.", "ib", "warning"),
    ("net eth0: Disabled for further use", "ib", "warning"),
    ("xen_netfront: can't alloc rx grant refs", "ib", "warning"),
    ("xenbus_probe_frontend: Timeout connecting to device: device/vif/0 (local state 3, remote state 1)", "ib",
     "warning"),
    ("vif vif-0: 2 parsing device/vif/0/mac", "ib", "warning"),
    # drivers/virtio/virtio_ring.c BAD_RING(): dev_err(&vq->vq.vdev->dev, "%s:" fmt, vq->vq.name) with "id %u is not a
    # head!\n", "id %u out of range\n"; virtio_blk.c "%s failure: config access disabled\n", "MQ advertised but zero
    # queues reported\n"; virtio_net.c virtnet_tx_timeout() "TX timeout on queue: %u, sq: %s, vq: 0x%x, name: %s, %u
    # usecs ago\n", virtnet_rx_resize() "resize rx fail: rx queue index: %d err: %d\n"
    ("virtio_blk virtio2: req.0:id 17 is not a head!", "disk", "warning"),
    ("virtio_blk virtio2: req.3:id 300 out of range", "disk", "warning"),
    ("virtio_scsi virtio3: request.0:id 9 is not a head!", "disk", "warning"),
    ("virtio_blk virtio2: virtblk_probe failure: config access disabled", "disk", "warning"),
    ("virtio_blk virtio2: MQ advertised but zero queues reported", "disk", "warning"),
    ("virtio_net virtio1 eth0: TX timeout on queue: 3, sq: output.3, vq: 0x7, name: output.3, 5120000 usecs ago", "ib",
     "warning"),
    ("virtio_net virtio1: input.0:id 257 is not a head!", "ib", "warning"),
    ("virtio_net virtio1 eth0: resize rx fail: rx queue index: 0 err: -12", "ib", "warning"),
    # drivers/pci/pci.c __pci_request_region() "BAR %d: can't reserve %pR\n" under vfio-pci; drivers/vfio/pci
    # vfio_pci_config.c vfio_bar_restore() "%s: reset recovery - restoring BARs\n", vfio_cap_init() "%s: PCI config
    # conflict @%#x, was cap %#x now cap %#x\n"; vfio_pci_core.c "Masking broken INTx support\n"; vfio_iommu_type1.c
    # "%s: No interrupt remapping support. ...", vfio_pin_pages_remote() "%s: RLIMIT_MEMLOCK (%ld) exceeded\n"
    ("vfio-pci 0000:3b:00.0: BAR 1: can't reserve [mem 0x38000000000-0x3bfffffffff 64bit pref]", "gpu_init", "warning"),
    ("vfio-pci 0000:3b:00.0: vfio_bar_restore: reset recovery - restoring BARs", "gpu_init", "warning"),
    ("vfio-pci 0000:3b:00.0: vfio_cap_init: PCI config conflict @0x9c, was cap 0x9 now cap 0x10", "gpu_init",
     "warning"),
    ("vfio-pci 0000:3b:00.0: Masking broken INTx support", "gpu_init", "warning"),
    ("vfio_iommu_type1_attach_group: No interrupt remapping support.  Use the module param \"allow_unsafe_interrupts\" "
     "to enable VFIO IOMMU support on this platform", "gpu_init", "warning"),
    ("vfio_pin_pages_remote: RLIMIT_MEMLOCK (67108864) exceeded", "gpu_init", "warning"),
    ("vfio-pci: probe of 0000:3b:00.0 failed with error -22", "gpu_init", "warning"),
    # fs/fuse/virtio_fs.c "virtio-fs: virtio_fs_enqueue_req() failed %d\n"; fs/fuse/dax.c "Failed to remove mapping.
    # offset=0x%llx len=0x%llx ret=%d\n"
    ("virtio-fs: virtio_fs_enqueue_req() failed -5", "nfs", "warning"),
    ("Failed to remove mapping. offset=0x200000 len=0x200000 ret=-5", "nfs", "warning"),
]

JOB_FAULTS = [
    # libfuse/sshfs sshfs.c process_requests() "remote host has disconnected\n", the reader's "read: %s"
    ("remote host has disconnected", "nfs", "warning"),
    ("read: Connection reset by peer", "nfs", "warning"),
    ("sshfs[41210]: bad reply len: 4294967295", "nfs", "warning"),
    # SeaweedFS glog E/F lines from its mount, reader and volume files
    ("E1125 10:11:12.123456 filehandle_read.go:117] file handle read /datasets/imagenet/train-00017.tar: read "
     "http://10.0.0.51:8080/3,01637037d6: dial tcp 10.0.0.51:8080: connect: connection refused", "nfs", "warning"),
    ("E1125 10:11:12.123456    4410 weedfs_async_flush.go:62] completeAsyncFlush inode 4410: data flush failed: "
     "volume 3 is read only", "nfs", "warning"),
    ("E1125 10:11:12.123456 reader_at.go:249] fetching chunk {FileId:3,01637037d6 Offset:0 Size:4194304}: unexpected "
     "EOF", "nfs", "warning"),
    ("F1125 10:11:12.123456 mount_std.go:112] Target mount point is not available: /mnt/weed, please check!", "nfs",
     "warning"),
    # mountpoint-s3-fs/src/fuse.rs error! macro ('<op> failed with errno %d: %s'), fuse/session.rs "worker thread
    # failed", mount-s3's top-level error
    ("2026-11-26T09:52:01.123456Z  WARN read{req=4412 ino=37 fh=12 offset=1048576 size=131072 name=\"shard-0001.tar\"}"
     ": mountpoint_s3::fuse: read failed with errno 5: get request failed: get object request failed: Service error: "
     "The object was not found", "nfs", "warning"),
    ("2026-11-26T09:52:01.123456Z  WARN write{req=901 ino=44 fh=7}: mountpoint_s3::fuse: write failed with errno 5: "
     "upload error: put request failed: Client error: Failed to construct request", "nfs", "warning"),
    ("Error: Failed to create mount process", "nfs", "warning"),
    # gcsfuse (its JSON and text formats give their message field): internal/fs "ReadFile: %v, fh.reader.ReadAt: ...",
    # internal/bufferedread "Download: -> block (%s, %v) failed: %v.", "FinalizeUpload failed for object %s: %v"
    ("{\"timestamp\":{\"seconds\":1764150721,\"nanos\":123456789},\"severity\":\"ERROR\",\"message\":\"ReadFile: "
     "input/output error, fh.reader.ReadAt: readFull: context deadline exceeded\"}", "nfs", "warning"),
    ("time=\"26/11/2026 09:52:01.123456\" severity=ERROR message=\"Download: -> block (train-00017.tar, 3) failed: "
     "read tcp 10.0.0.7:51234->142.250.72.187:443: read: connection reset by peer.\"", "nfs", "warning"),
    ("time=\"26/11/2026 09:52:01.123456\" severity=ERROR message=\"FinalizeUpload failed for object "
     "checkpoints/step-1200.pt: googleapi: Error 429: rate limit\"", "nfs", "warning"),
    # blobfuse2 cmd/mount.go, rclone's VFS, goofys's s3.ERROR / fuse.ERROR, Alluxio FUSE
    ("Error: failed to initialize new pipeline [failed to authenticate credentials for azstorage]", "nfs", "warning"),
    ("2026/11/26 09:52:01 ERROR : checkpoints/ckpt.pt: WriteFileHandle.Flush error: failed to upload: context deadline "
     "exceeded", "nfs", "warning"),
    ("2026/11/26 09:52:01.123456 s3.ERROR Unable to access 'training-data': RequestError: send request failed", "nfs",
     "warning"),
    ("2026-11-26 09:52:01,123 ERROR AlluxioJniFuseFileSystem - Failed to read /datasets/train-00017.tar,offset=0,"
     "size=131072: alluxio.exception.status.UnavailableException: Failed to connect to master", "nfs", "warning"),
]

DAEMON_FAULTS = [
    # moosefs/moosefs mfsclient/mastercomm.c, mfsmount.c, readdata.c, writedata.c; mfsmaster; mfschunkserver
    ("Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: master: connection lost (header)", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: can't connect to master (\"10.0.0.40\":\"9421\")", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: file: 472044, index: 3 - fs_writechunk returned status: No space "
     "left", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: file: 472044, index: 3, chunk: 00000000001A2B3C, version: 1 - there "
     "are no valid copies", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: can't register using previous sessionid", "nfs", "warning"),
    ("Nov 26 09:52:01 mfs-master01 mfsmaster[1204]: chunk 00000000001A2B3C_00000001: there are no copies", "nfs",
     "warning"),
    ("Nov 26 09:52:01 mfs-cs03 mfschunkserver[2210]: 3 errors occurred in 60 seconds on folder: /mnt/mfschunks2/",
     "nfs", "warning"),
    # s3fs curl.cpp RequestPerform "### giving up", fdcache_entity.cpp RowFlush "failed to upload all area(errno=%d)"
    ("Nov 26 09:52:01 gpu-node-07 s3fs[2241]: [ERR] curl.cpp:RequestPerform(2536): ### giving up", "nfs", "warning"),
    ("Nov 26 09:52:01 gpu-node-07 s3fs[2241]: [ERR] fdcache_entity.cpp:RowFlush(1454): failed to upload all "
     "area(errno=-5)", "nfs", "warning"),
    # goofys's fuse.ERROR
    ("Nov 26 09:52:01 gpu-node-07 goofys[9001]: fuse.ERROR got EOF when data remains: datasets/train-00017.tar", "nfs",
     "warning"),
    # QEMU hw/vfio and libvirt virpci.c / virhostdev.c
    ("2026-11-26T09:52:01.123456Z qemu-system-x86_64: -device vfio-pci,host=0000:3b:00.0,id=hostdev0: vfio "
     "0000:3b:00.0: group 25 is not viable", "gpu_init", "warning"),
    ("2026-11-26T09:52:01.123456Z qemu-system-x86_64: vfio_dma_map(0x55d0c8a3e2b0, 0x380000000000, 0x2000000000, "
     "0x7f1a00000000) = -12 (Cannot allocate memory)", "gpu_init", "warning"),
    ("2026-11-26T09:52:01.123456Z qemu-system-x86_64: vfio_err_notifier_handler(0000:3b:00.0) Unrecoverable error "
     "detected. Please collect any data possible and then kill the guest", "gpu_init", "warning"),
    ("2026-11-26 09:52:01.123+0000: 1834: error : virPCIDeviceReset:1006 : internal error: Unable to reset PCI device "
     "0000:3b:00.0: no FLR, PM reset or bus reset available", "gpu_init", "warning"),
    ("Nov 26 09:52:01 gpu-host01 libvirtd[1834]: Requested operation is not valid: PCI device 0000:3b:00.0 is in use "
     "by driver QEMU, domain gpu-vm-3", "gpu_init", "warning"),
    # QEMU block-backend's BLOCK_IO_ERROR text (read before lead10_job_eio) and virtio_error
    ("2026-11-26T09:52:01.123456Z qemu-system-x86_64: block I/O error in device 'drive-virtio-disk0': Input/output "
     "error (5)", "disk", "warning"),
    ("2026-11-26T09:52:01.123456Z qemu-system-x86_64: virtio: zero sized buffers are not allowed", "disk", "warning"),
    # VMware ESXi vmkernel.log / vmkwarning.log and VOB events
    ("2026-11-26T09:52:01.123Z cpu16:2097345)ScsiDeviceIO: 4325: Cmd(0x45b8c1a2b3c0) 0x28, CmdSN 0x1a2b from world "
     "2099012 to dev \"naa.600a098038303053453f463045727a4f\" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x3 0x11 0x0.",
     "disk", "warning"),
    ("2026-11-26T09:52:01.123Z cpu2:2097152)NMP: nmp_ThrottleLogForDevice:3788: Cmd 0x28 (0x45b8c1a2b3c0, 2099012) to "
     "dev \"naa.600a098038303053453f463045727a4f\" on path \"vmhba2:C0:T1:L4\" Failed: H:0x8 D:0x0 P:0x0 Invalid sense "
     "data: 0x0 0x0 0x0. Act:EVAL", "disk", "warning"),
    ("2026-11-26T09:52:01.123Z cpu2:2097152)WARNING: NMP: nmp_DeviceRequestFastDeviceProbe:237: NMP device "
     "\"naa.600a098038303053453f463045727a4f\" state in doubt; requested fast path state update...", "disk", "warning"),
    ("2026-11-26T09:52:01.123Z cpu5:2097201)ScsiDevice: 4160: Device naa.600a098038303053453f463045727a4f has entered "
     "the All Paths Down state.", "disk", "warning"),
    ("2026-11-26T09:52:01.123Z cpu5:2097201)WARNING: ScsiDevice: 1436: Device naa.600a098038303053453f463045727a4f has "
     "been removed or is permanently inaccessible.", "disk", "warning"),
    ("2026-11-26T09:52:01.123Z cpu5:2097201)Lost access to volume 5f1a2b3c-4d5e6f70-8192-a1b2c3d4e5f6 (datastore1) due "
     "to connectivity issues. Recovery attempt is in progress and outcome will be reported shortly.", "disk",
     "warning"),
    ("2026-11-26T09:52:01.123Z: [netCorrelator] 1234567890us: [vob.net.vmnic.linkstate.down] vmnic vmnic4 linkstate "
     "down", "ib", "warning"),
    ("2026-11-26T09:52:01.123Z: [netCorrelator] 1234567891us: [esx.problem.net.redundancy.lost] Lost uplink redundancy "
     "on virtual switch \"vSwitch1\". Physical NIC vmnic4 is down. Affected port groups: \"GPU-Data\".", "ib",
     "warning"),
]

KERNEL_TWINS = [
    # storvsc's TEST UNIT READY and a pass-through probe the host rejects as invalid (srb 0x86): the driver's noise
    "hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#0 cmd 0x0 status: scsi 0x2 srb 0x4 hv 0xc0000001",
    "hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#21 cmd 0x85 status: scsi 0x2 srb 0x86 hv 0xc0000001",
    "hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: Data path switched to VF: enP30832s1",
    "hv_netvsc 000d3a6e-1a2b-000d-3a6e-1a2b000d3a6e eth0: VF registering: eth1",
    "hv_vmbus: Vmbus version:5.3",
    "hv_balloon: Using Dynamic Memory protocol version 2.0",
    "hv_pci 47505500-0001-0000-3130-444531303244: PCI VMBus probing: Using version 0x10004",
    "hv_pci 47505500-0001-0000-3130-444531303244: Retrying D0 Entry",
    "blkfront: xvda: barrier or flush: disabled; persistent grants: disabled; indirect descriptors: enabled; bounce "
    "buffer: disabled;",
    "xenbus_probe_frontend: Waiting for devices to initialise: 25s...20s...15s...",
    "xen_netfront: Initialising Xen virtual ethernet driver",
    "virtio_blk virtio2: [vda] 209715200 512-byte logical blocks (107 GB/100 GiB)",
    "virtio_net virtio1: Fail to set num of queue pairs to 8",
    "vfio-pci 0000:3b:00.0: vfio_ecap_init: hiding ecap 0x19@0x900",
    "vfio-pci 0000:3b:00.0: Invalid PCI ROM header signature: expecting 0xaa55, got 0xffff",
    "vfio-pci 0000:3b:00.0: Relaying device request to user (#10)",
    "vfio-pci 0000:3b:00.0: enabling device (0140 -> 0142)",
    "virtio-fs: tag <datasets> not found",
    "fuse: init (API version 7.37)",
]

JOB_NOTES = [
    "SSHFS version 3.7.3",
    "Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: registered to master with new session",
    "Nov 26 09:52:01 gpu-node-07 mfsmount[28930]: mfsmaster 10.0.0.40 - got redirect to 10.0.0.42",
    "I1125 10:11:12.123456 mount_std.go:250] mounted localhost:8888/ to /mnt/weed",
    "I1125 10:11:12.123456 stream.go:114] read chunk 3,01637037d6 failed, invalidating cache and retrying: unexpected "
    "EOF",
    "2026-11-26T09:52:01.123456Z  WARN lookup{req=12 ino=1 name=\".hidden\"}: mountpoint_s3::fuse: lookup failed with "
    "errno 2: inode error: file does not exist",
    "{\"timestamp\":{\"seconds\":1764150721,\"nanos\":123456789},\"severity\":\"INFO\",\"message\":\"File system has "
    "been successfully mounted.\"}",
    "Nov 26 09:52:01 gpu-node-07 blobfuse2[3254639]: [/mnt/blob] LOG_CRIT [libfuse.go (340)]: Libfuse::Configure : "
    "read-only false, allow-other true, allow-root false, default-perm 493",
    "2026/11/26 09:52:01.123456 juicefs[6612] <INFO>: OK, jfs is ready at /jfs [mount_unix.go:48]",
    "2026/11/26 09:52:01 NOTICE: s3 root 'training-data': Mounting on \"/mnt/data\"",
    "2026-11-26T09:52:01.123456Z qemu-system-x86_64: vfio: Cannot reset device 0000:3c:00.1, depends on group 26 which "
    "is not owned.",
    "2026-11-26T09:52:01.123Z cpu16:2097345)ScsiDeviceIO: 4325: Cmd(0x45b8c1a2b3c0) 0x85, CmdSN 0x1a2e from world "
    "2099012 to dev \"naa.600a098038303053453f463045727a4f\" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x20 0x0.",
    "2026-11-26T09:52:01.123Z cpu5:2097201)ScsiDevice: 4160: Device naa.600a098038303053453f463045727a4f has exited "
    "the All Paths Down state.",
    "2026-11-26T09:52:01.123Z: [netCorrelator] 1234567999us: [esx.clear.net.vmnic.linkstate.up] Physical NIC vmnic4 "
    "linkstate is up",
]


ENVELOPED_KERNEL = [
    "[ 1234.567890] hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#12 cmd 0x28 status: scsi 0x2 srb 0x4 hv "
    "0xc0000001",
    "Nov 26 09:52:01 gpu-node-07 kernel: hv_pci 47505500-0001-0000-3130-444531303244: Read Config Block failed: "
    "0xc0000001, bytes_returned=0",
    "[Thu Nov 26 09:52:01 2026] vfio-pci 0000:3b:00.0: BAR 0: can't reserve [mem 0xd8000000-0xd8ffffff]",
    "3,2210,123456789,-;hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: Invalid pkt: id=17, len=12, minlen=48",
]


# the kernel rules read the message's start: a job's output that quotes the text behind its own words is not a kernel
# finding (and so can never drain)
ECHOED = [
    "python3: saw 'xvda disabled for further use' in the log",
    "myjob: hv_pci 47505500-0001-0000-3130-444531303244: the device has gone",
    "echo virtio_net virtio1 eth0: TX timeout on queue: 3",
]


# the SeaweedFS rule reads its own file names only: a kubelet's or client-go's glog error is not shared storage
OTHER_GLOG = [
    "E1126 06:14:02.119220 reflector.go:138] failed to list *v1.Pod: the server could not find the requested resource",
    "E1126 06:14:02.119220 kuberuntime_manager.go:1256] container start failed: CreateContainerError",
]


# bounded quantifiers: a long line of near-matches is decided and is not the new rules' finding
HOSTILE = [
    "hv_storvsc f8b3781a-1e82-4818-a1c3-63d806ec15bb: tag#1 cmd 0x28 status: scsi 0x" + "2" * 100_000 + " srb",
    "blkfront: xvdb: " + "write " * 20_000 + "op",
    "E1125 10:11:12.123456 " + "9" * 100_000 + " reader_at.go",
    "mountpoint_s3::fuse: read failed with errno " + "5" * 100_000,
    "2026/11/26 ERROR : " + "x" * 100_000 + " WriteFileHandle",
    "vfio_dma_map(" + "0x1, " * 20_000 + ") = ",
    "cpu2:1)NMP: nmp_x:1: Cmd 0x28 " + "(" * 100_000 + " Failed: H:0x",
    "file: 1, index: 1, chunk: " + "A" * 100_000 + " - there are no valid copies",
]


globals().update(table_tests(kernel_quiet=KERNEL_FAULTS, other=JOB_FAULTS + DAEMON_FAULTS,
                             twins=KERNEL_TWINS + JOB_NOTES, not_kernels=ECHOED, enveloped_kernel=ENVELOPED_KERNEL,
                             unread=("rules12_", [*OTHER_GLOG, *HOSTILE])))
