"""More printers of the weak families (ib, nfs, pcie, gpu_init/gsp, fabric manager, thermal, disk), from format strings.

Every fault line below is a format string of the public source named in the comment above it, with its conversions
filled in by hand (device names, numbers, hosts): no line is copied from a log or from the field corpus. Each family
has benign twins (the same printer's healthy or informational lines) that must stay below warning, and the lines a job,
a daemon or a tool prints are checked for their trust: such a line never drains a node.
"""

from __future__ import annotations

import pytest

from .rule_cases import table_tests

FAULTS = [
    # ---- systemd's `systemctl status` of a failed unit (src/systemctl/systemctl-show.c: "%s%s%s %s" glyph and id, then
    # " - %s" the description; the glyph is the cross mark for a failed unit since systemd 250)
    ("× nvidia-fabricmanager.service - NVIDIA fabric manager service", "fabric_manager", "error"),
    ("× nv-fabricmanager.service - FabricManager service", "fabric_manager", "error"),
    ("× openibd.service - openibd - configure Mellanox devices", "ib", "error"),
    ("× opensm.service - Starts the OpenSM InfiniBand fabric Subnet Manager", "ib", "error"),
    ("× rdma-load-modules@infiniband.service - Load RDMA modules from /etc/rdma/modules/infiniband.conf", "ib",
     "error"),
    ("× rpc-statd.service - NFS status monitor for NFSv2/3 locking.", "nfs", "error"),
    ("× nfs-client.target - NFS client services", "nfs", "error"),
    ("× lnet.service - lnet management", "nfs", "error"),
    ("× beegfs-client.service - Start BeeGFS Client", "nfs", "error"),
    ("× nvidia-persistenced.service - NVIDIA Persistence Daemon", "gpu_init", "error"),
    # ---- temperatures: sonic-platform-daemons sonic-xcvrd ("%s: temperature status change from %s to %s", the states
    # "normal", "temperature high warning", "temperature high alarm", "temperature low ..."); ethtool sfpdiag.c and
    # sff-common.c ("\t%-41s : %s", "Module temperature high alarm", On/Off); Facebook OpenBMC's sensord ("ASSERT: %s
    # threshold - raised - FRU: %d, num: 0x%X curr_val: %.2f %s, thresh_val: %.2f %s, snr: %-16s")
    ("Ethernet16: temperature status change from normal to temperature high alarm", "thermal", "warning"),
    ("NOTICE pmon#xcvrd: Ethernet248: temperature status change from temperature high warning to temperature low alarm",
     "thermal", "warning"),
    ("\tModule temperature high warning           : On", "thermal", "warning"),
    ("ASSERT: Upper Non Critical threshold - raised - FRU: 2, num: 0x1A curr_val: 88.00 C, thresh_val: 85.00 C, "
     "snr: SOC_TEMP", "thermal", "warning"),
    # ---- GSP and its firmware: linux drivers/base/firmware_loader/main.c "Direct firmware load for %s failed with
    # error %d", fallback.c "firmware: failed to load %s (%d)"; open-gpu-kernel-modules kernel_gsp_frts_tu102.c
    # s_vbiosPatchInterfaceData() "too few interface entires found for FWSEC cmd 0x%x", "failed to find required
    # interface entry for FWSEC cmd 0x%x"
    ("nvidia 0000:3b:00.0: Direct firmware load for nvidia/570.86.15/gsp_tu10x.bin failed with error -2", "gsp",
     "error"),
    ("nouveau 0000:01:00.0: firmware: failed to load nvidia/ga102/gsp/gsp-535.113.01.bin (-2)", "gsp", "error"),
    ("NVRM: GPU1 s_vbiosPatchInterfaceData: too few interface entires found for FWSEC cmd 0x5", "gsp", "error"),
    ("NVRM: s_vbiosPatchInterfaceData: failed to find required interface entry for FWSEC cmd 0x5", "gsp", "error"),
    # ---- the driver's API mismatch report, its continuation lines: open-gpu-kernel-modules kernel-open/nvidia/nv.c
    ("NVRM: this kernel module has the version 570.86.15.  Please", "gpu_init", "error"),
    ("NVRM: make sure that this kernel module and all NVIDIA driver", "gpu_init", "error"),
    ("NVRM: components have the same version.", "gpu_init", "error"),
    ("NVRM: has the version 550.54.15, but this kernel module has", "gpu_init", "error"),
    # ---- NFS root, NFS over RDMA, ESHUTDOWN, BeeGFS and XtreemFS clients
    # linux fs/nfs/nfsroot.c: "Root-NFS: No NFS server available, giving up.", "Root-NFS: Unable to get mountd port
    # number from server, using default", "Root-NFS: Server returned error %d while mounting %s"; init/do_mounts.c
    # "VFS: Unable to mount root fs via NFS, trying floppy."
    ("Root-NFS: Unable to get mountd port number from server, using default", "nfs", "error"),
    ("Root-NFS: Server returned error -110 while mounting /export/roots/node17", "nfs", "error"),
    ("VFS: Unable to mount root fs via NFS, trying floppy.", "nfs", "error"),
    # linux net/sunrpc/xprtrdma/verbs.c: "rpcrdma: ib_alloc_pd() returned %d", "rpcrdma: Device %s does not support
    # memreg mode %d", "rpcrdma: can't reconnect on different device!", "rpcrdma: connection to %s:%s closed (%d)"
    ("rpcrdma: ib_alloc_pd() returned -12", "nfs", "warning"),
    ("rpcrdma: Device mlx5_1 does not support memreg mode 6", "nfs", "warning"),
    ("rpcrdma: can't reconnect on different device!", "nfs", "warning"),
    ("rpcrdma: connection to 192.168.7.3:20049 closed (-103)", "nfs", "info"),
    # glibc strerror(ESHUTDOWN) in a job's file operation (an evicted Lustre client)
    ("cp: cannot create regular file '/lustre/proj/out.h5': Cannot send after transport endpoint shutdown", "nfs",
     "warning"),
    # BeeGFS common/src/common/net/message/ ... MessagingTk ("[Messaging (RPC)] >> Communication error: %s; Peer: %s",
    # "Retrying communication with node: %s") behind its LogContext header "(%d) %s %s [%s] >> "; XtreemFS's client
    # ("The client encountered a communication error sending a request to the server: %s. Error: %s")
    ("(3) Feb 02 11:12:13 Worker3 [Messaging (RPC)] >> Communication error: Send timed out to: beegfs-meta mds02 "
     "[ID: 2]; Peer: 10.1.0.2:8005", "nfs", "warning"),
    ("(2) Feb 02 11:12:13 Worker3 [Messaging (RPC)] >> Retrying communication with node: beegfs-meta mds02 [ID: 2]",
     "nfs", "warning"),
    ("The client encountered a communication error sending a request to the server: mrc.lab:32636. Error: "
     "Connection refused", "nfs", "warning"),
    # autofs modules/mount_nfs.c "nfs: mount failure %s on %s" and mount_generic.c "failed to mount %s (type %s) on %s"
    # (MODPREFIX "mount(nfs): ", "mount(generic): "), under automount's syslog tag; the mount helper under mount[PID];
    # lustre utils/mount_lustre.c's hints after a failed mount ("Is the MGS specification correct?", "Is the
    # filesystem name correct?", "Are the lustre modules loaded?", "This filesystem needs at least 1 OST")
    ("Mar 02 04:05:06 cn12 automount[881]: mount(nfs): nfs: mount failure nas1:/vol/proj on /proj/x", "nfs", "warning"),
    ("automount[881]: mount(generic): failed to mount /dev/sdb1 (type xfs) on /scratch/local", "nfs", "warning"),
    ("mount[4410]: mount.nfs4: access denied by server while mounting nas1:/vol/proj", "nfs", "warning"),
    ("Is the filesystem name correct?", "nfs", "warning"),
    ("Are the lustre modules loaded?", "nfs", "warning"),
    ("This filesystem needs at least 1 OST", "nfs", "warning"),
    # IBM Storage Scale mmfs.log (date, "[I]"/"[N]"/"[X]"): "Command: err %d: %s", "Expel %s request from %s.
    # Expelling: %s", "Cluster Manager connection broke. Probing cluster %s", "Quorum loss. Probing cluster %s", "The
    # mmfs daemon is shutting down abnormally."
    ("2025-02-03_04:05:06.789-0500: [I] Command: err 19: mount fs1", "nfs", "warning"),
    ("2025-02-03_04:05:06.789-0500: [I] Expel 10.2.0.17 (c1n17) request from 10.2.0.1 (mgr1). Expelling: 10.2.0.17 "
     "(c1n17)", "nfs", "warning"),
    ("2025-02-03_04:05:06.789-0500: [I] Quorum loss. Probing cluster scale.lab", "nfs", "warning"),
    ("2025-02-03_04:05:06.789-0500: [X] The mmfs daemon is shutting down abnormally.", "nfs", "warning"),
    # ---- RDMA drivers: linux drivers/infiniband/ulp/ipoib/ipoib_ib.c "timing out; %d sends %d receives not completed";
    # drivers/infiniband/hw/irdma irdma_request_reset() "Requesting a reset"; drivers/infiniband/hw/bnxt_re qplib_rcfw.c
    # "QPLIB: cmdq[%#x]=%#x timedout (%d)msec", "QPLIB: FW STALL Detected. cmdq[%#x]=%#x waited (%d > %d) msec
    # active %d"
    ("ib1: timing out; 12 sends 3 receives not completed", "ib", "warning"),
    ("irdma 0000:4b:00.1 irdma1: Requesting a reset", "ib", "warning"),
    ("infiniband bnxt_re1: QPLIB: bnxt_re_is_fw_stalled: FW STALL Detected. cmdq[0xe]=0x8c waited (40000 > 20000) "
     "msec active 1", "ib", "warning"),
    # ---- UCX without its header: uct/ib/base/ib_device.c "IB Async event on %s: %s" (ibv_event_type_str() "... on QPN
    # 0x%x", "... on port %d"), uct/ib/ud/base/ud_ep.c "UD endpoint %p to %s: unhandled timeout error", ib_mlx5_log.c's
    # "%s QP 0x%x wqe[%d]: %s"
    ("IB Async event on mlx5_3: local work queue catastrophic error on QPN 0x2f1", "ib", "error"),
    ("IB Async event on mlx5_bond_0: port error on port 1", "ib", "error"),
    ("UD endpoint 0x7f3e2c001230 to gpu17:28811: unhandled timeout error", "ib", "error"),
    ("RC QP 0x9c1 wqe[4012]: RDMA_WRITE s-e [rva 0x7f0000 rkey 0x1234] [va 0x7f1000 len 65536 lkey 0x5678]", "ib",
     "error"),
    # linux drivers/infiniband/hw/mthca/mthca_catas.c "Catastrophic error detected: %s" and "  buf[%02x]: %08x",
    # mthca_eq.c "CQ overrun on CQN %06x"; drivers/net/ethernet/mellanox/mlx4/catas.c's buffer dump
    ("ib_mthca 0000:81:00.0: Catastrophic error detected: uplink bus error", "ib", "error"),
    ("mlx4_core 0000:81:00.0:   buf[0a]: 00ff0013", "ib", "error"),
    ("ib_mthca 0000:81:00.0: CQ overrun on CQN 0000a4", "ib", "error"),
    # linux drivers/net/bonding/bond_main.c: "%s: link status definitely down for interface %s, disabling it" (with
    # and without the "bonding: " prefix), "now running without any active interface!"; opensm osm_state_mgr.c "SM
    # port is down" after osm_log's header
    ("bonding: bond1: link status definitely down for interface ib0, disabling it", "ib", "warning"),
    ("bond1: now running without any active interface!", "ib", "warning"),
    ("Mar 02 04:05:06 812345 [7F3A2C00] 0x02 -> SM port is down", "ib", "warning"),
    # UCX's ucs_log header with WARN and a message no rule names (ucp_ep.c "ep %p: lane %d (%s) was disconnected",
    # rc_iface.c "%s QP 0x%x was destroyed with %d outstanding operations"): info
    ("[1700000000.000001] [gpu03:4411 :0]     ucp_ep.c:1210 UCX  WARN  ep 0x7f12: lane 1 (rc_mlx5/mlx5_1:1) was "
     "disconnected", "ib", "info"),
    # mlxlink_commander.cpp's troubleshooting page: "Status Message" with the port's PHY status
    ("Status Message                  : Cable is unplugged", "ib", "warning"),
    # rdma-core libibverbs/init.c: "libibverbs: Warning: RLIMIT_MEMLOCK is %llu bytes.\n    This will severely limit
    # memory registrations.\n"; libibverbs/memory.c "libibverbs: Warning: fork()-safety requested but init failed"
    ("libibverbs: Warning: RLIMIT_MEMLOCK is 8388608 bytes.", "ib", "info"),
    ("    This will severely limit memory registrations.", "ib", "info"),
    ("libibverbs: Warning: fork()-safety requested but init failed", "ib", "info"),
    # ---- PCIe: DCGM dcgmlib/dcgm_errors.h DCGM_FR_PCIE_REPLAY_VIOLATION_MSG "Detected %ld %s for GPU %u" and
    # DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION_MSG "Detected %ld %s for GPU %u which is above the threshold %ld";
    # linux drivers/pci/hotplug/pciehp_ctrl.c "Slot(%s): No link"
    ("Detected 57 PCIe replay errors for GPU 6", "pcie", "warning"),
    ("Detected 2048 PCIe replay errors for GPU 1 which is above the threshold 1000", "pcie", "warning"),
    ("pcieport 0000:80:03.1: pciehp: Slot(5-1): No link", "pcie", "error"),
    # mstflint mlxlink_commander.cpp's PCIe page: "Link Speed Active (Enabled)" (pcieSpeedStr(active) + " (enabled)"),
    # "Link Width Active (Enabled)" ("%dX (%dX)")
    ("Link Speed Active (Enabled)     : 8G-Gen 3 (16G-Gen 4)", "pcie", "warning"),
    ("Link Width Active (Enabled)     : 8X (16X)", "pcie", "warning"),
    # the 4.x pciehp_ctrl.c: ctrl_info "slot(%s): Link Down event", ctrl_err "Cannot add device at %04x:%02x:00"
    ("pciehp 0000:80:03.1:pcie04: slot(5-1): Link Down event", "pcie", "error"),
    ("pciehp 0000:80:03.1:pcie04: Cannot add device at 0000:81:00", "pcie", "error"),
    # ---- disk: linux drivers/nvme/host/pci.c nvme_warn_reset(): 'Try "nvme_core.default_ps_max_latency_us=0
    # pcie_aspm=off pcie_port_pm=off" and report a bug'; fs/ext4/super.c ext4_load_journal() and ext4_get_dev_journal()
    ('nvme nvme3: Try "nvme_core.default_ps_max_latency_us=0 pcie_aspm=off pcie_port_pm=off" and report a bug', "disk",
     "warning"),
    ("EXT4-fs (nvme0n1p2): filesystem has both journal inode and journal device!", "disk", "error"),
    ("EXT4-fs (md127): journal UUID does not match", "disk", "error"),
    ("EXT4-fs (sdb2): external journal has bad superblock", "disk", "error"),
    ("EXT3-fs: error: write access unavailable, cannot proceed", "disk", "error"),
    # multipathd main.c ("%s: mark as failed", "checker failed path %s in map %s", "%s: remaining active paths: %d"),
    # tur.c "tur checker reports path is down"; md raid1.c/raid5.c ("md/raid1:%s: %pg: rescheduling sector %llu",
    # "md/raid:%s: Too many read errors, failing device %pg."), mpt3sas_base.c "SAS host is non-operational !!!!";
    # LVM2 "WARNING: Device for PV %s not found or rejected by a filter.", "Couldn't find device with uuid %s."
    ("multipathd[881]: sdk: mark as failed", "disk", "warning"),
    ("multipathd[881]: checker failed path 65:160 in map mpathc", "disk", "warning"),
    ("multipathd[881]: mpathc: remaining active paths: 1", "disk", "warning"),
    ("multipathd[881]: mpathc: sdk - tur checker reports path is down", "disk", "warning"),
    ("md/raid1:md127: nvme1n1p3: rescheduling sector 88123", "disk", "error"),
    ("md/raid:md5: Too many read errors, failing device sdf1.", "disk", "error"),
    ("mpt3sas_cm1: SAS host is non-operational !!!!", "disk", "error"),
    ("  WARNING: Device for PV Qx8v1c-0000-aaaa not found or rejected by a filter.", "disk", "warning"),
    ("  Couldn't find device with uuid Qx8v1c-0000-aaaa.", "disk", "warning"),
    # fs/jbd2/journal.c jbd2_log_wait_commit(): "journal commit I/O error"; drivers/nvme/host/constants.c
    # nvme_statuses[] behind nvme_log_error()'s "%s: %s(0x%x) @ LBA %llu, %u blocks, %s (sct 0x%x / sc 0x%x) %s%s"
    # (media and data integrity errors, sct 0x2); nvme-cli's smart-log "percentage_used : %u%%", smartctl's
    # "Percentage Used: %u%%"
    ("journal commit I/O error", "disk", "error"),
    ("nvme2n1: Write(0x1) @ LBA 977105024, 256 blocks, Write Fault (sct 0x2 / sc 0x80) DNR", "disk", "warning"),
    ("nvme2n1: Compare(0x5) @ LBA 128, 8 blocks, Compare Failure (sct 0x2 / sc 0x85) ", "disk", "warning"),
    ("percentage_used                         : 131%", "disk", "warning"),
    ("Percentage Used:                    101%", "disk", "warning"),
    # ---- BMC event logs, from the vendors' message catalogs: Dell's PCI messages ("A %s error was detected on a
    # component at bus %d device %d function %d.", "A bus time-out was detected on a component at slot %d."), HPE iLO's
    # IML ("Uncorrectable PCI Express Error (Embedded device, Bus %d, Device %d, Function %d, Error status 0x%08x)",
    # "PCI Bus Error (Slot %d, Bus %d, Device %d, Function %d)", "Temperature Status Changed to Critical (Temperature
    # Sensor %d, Location %s, Temperature %dC)"), Lenovo XCC ("Sensor %s has transitioned to critical from a less severe
    # state."), Dell's drive messages ("Fault detected on drive %d in disk drive bay %d.", "Predictive failure reported
    # for drive %d in disk drive bay %d.")
    ("A fatal error was detected on a component at bus 134 device 0 function 0.", "aer", "warning"),
    ("A bus time-out was detected on a component at slot 4.", "aer", "warning"),
    ("Uncorrectable PCI Express Error (Embedded device, Bus 23, Device 0, Function 1, Error status 0x00000020)", "aer",
     "warning"),
    ("PCI Bus Error (Slot 3, Bus 64, Device 0, Function 0)", "aer", "warning"),
    ("Temperature Status Changed to Critical (Temperature Sensor 11, Location Memory, Temperature 91C)", "thermal",
     "warning"),
    ("Sensor PCH Temp has transitioned to non-recoverable from a less severe state.", "thermal", "warning"),
    ("Predictive failure reported for drive 2 in disk drive bay 1.", "disk", "warning"),
    ("Fault detected on drive 5 in disk drive bay 0.", "disk", "warning"),
    # ---- NCCL's last error as PyTorch quotes it after "Last error:" (no NCCL header): include/checks.h "Cuda failure
    # '%s'", include/alloc.h "Failed to CUDA calloc async %ld bytes", misc/shmutils.cc "Error while %s shared memory
    # segment %s (size %ld)", misc/socket.cc "socketProgress: Connection closed by remote peer %s", proxy.cc "Proxy Call
    # to rank %d failed (%s)"; PyTorch ProcessGroupNCCL.cpp's dump on a timeout ("First PG on this rank to signal
    # dumping."), c10d's "Ranks %s failed to pass monitoredBarrier in %d ms"; NCCL's INFO trace of an abort (init.cc
    # "comm %p rank %d nranks %d cudaDev %d busId %lx - Abort COMPLETE", info)
    ("Cuda failure 2 'out of memory'", "nccl", "error"),
    ("[rank5]: Failed to CUDA calloc async 4096 bytes", "nccl", "error"),
    ("Error while attaching to shared memory segment /dev/shm/nccl-3kf2Q1 (size 4194656)", "nccl", "error"),
    ("socketProgress: Connection closed by remote peer gpu17.cluster<48122>", "nccl", "error"),
    ("Proxy Call to rank 12 failed (Connect)", "nccl", "error"),
    ("[rank1]:[E1107 02:03:04.5 ProcessGroupNCCL.cpp:1540] [PG 0 (default_pg) Rank 1] First PG on this rank to signal "
     "dumping.", "nccl", "error"),
    ("RuntimeError: [Rank 0]: Ranks 3, 7 failed to pass monitoredBarrier in 600000 ms", "nccl", "error"),
    ("gpu17:8812:8812 [2] NCCL INFO comm 0x7f3a2c000b80 rank 2 nranks 16 cudaDev 2 busId 41000 - Abort COMPLETE",
     "nccl", "info"),
    # nccl-tests src/common.h TESTCHECK " .. %s pid %d: Test failure %s:%d" and the older " .. %s: Test failure %s:%d"
    (" .. dgx07 pid 55102: Test failure common.cu:1063", "nccl", "error"),
    ("dgx07: Test failure all_reduce.cu:103", "nccl", "error"),
    # ---- fabric manager health as DCGM reports it: modules/health/DcgmHealthWatch.cpp ("Fabric Manager training has
    # not started.", "Fabric Manager training in progress.", "Fabric Manager status is unrecognized."), dcgm_errors.h
    # DCGM_FR_FABRIC_PROBE_STATE_MSG "GPU %u: Fabric State is %s (%lld)." and DCGM_FR_IMEX_UNHEALTHY_MSG "IMEX %s status
    # is %s (%s)"
    ("Fabric Manager training has not started.", "fabric_manager", "warning"),
    ("Fabric Manager status is unrecognized.", "fabric_manager", "warning"),
    ("GPU 5: Fabric State is In Progress (2).", "fabric_manager", "warning"),
    ("IMEX daemon status is UNAVAILABLE (connection refused)", "fabric_manager", "warning"),
    # ---- the NFS client and Lustre: fs/nfs/inode.c nfs_update_inode() "fsid %s: expected fileid 0x%Lx, got 0x%Lx";
    # the NFSv4 idmapper note "NFS: v4 server %s does not accept raw uid/gids. Reenabling the idmapper."; libcfs's
    # rate limiter "Skipped %d previous similar message%s" (info: the repeats of the message before it)
    ("fsid 0:61: expected fileid 0x2a00c1, got 0x2a00f7", "nfs", "warning"),
    ("NFS: v4 server nas02.lab does not accept raw uid/gids. Reenabling the idmapper.", "nfs", "info"),
    ("Lustre: Skipped 17 previous similar messages", "nfs", "info"),
    ("LNet: 4021:0:(o2iblnd_cb.c:3397:kiblnd_check_conns()) Skipped 1 previous similar message", "nfs", "info"),
    # net/sunrpc/auth_gss/auth_gss.c "RPC: AUTH_GSS upcall timed out.\nPlease check user daemon is running.\n" (the
    # second line); lustre ptlrpc/import.c "%s: tried all connections, increasing latency to %ds" and "Reactivating
    # import" (info); ptlrpc/service.c "Service thread pid %u completed after %lu.%02lus. This indicates the system was
    # overloaded (...)"
    ("Please check user daemon is running.", "nfs", "warning"),
    ("Lustre: work-MDT0001-mdc-ffff9a2b40c8e000: tried all connections, increasing latency to 23s", "nfs", "warning"),
    ("LNet: Service thread pid 40312 completed after 251.07s. This indicates the system was overloaded (too many "
     "service threads, or there were not enough hardware resources).", "nfs", "warning"),
    ("Lustre: work-MDT0001-mdc-ffff9a2b40c8e000: Reactivating import", "nfs", "info"),
    # ---- IPoIB and mlx5 without error words: drivers/infiniband/ulp/ipoib/ipoib_ib.c "packet len %u (> %u) too long
    # to send, dropping"; mlx5/core/pagealloc.c "FW did not return all pages. giving up...", "FW pages counter is %d
    # after reclaiming all pages"; fw_reset.c "reset reload flow aborted, PCI reads still not working" and the sync
    # reset's steps ("Sync Reset now. Device is going to reset.", info); health.c "health revived" (info)
    ("ib0: packet len 4092 (> 2044) too long to send, dropping", "ib", "warning"),
    ("mlx5_core 0000:c1:00.1: mlx5_reclaim_startup_pages:812:(pid 2211): FW did not return all pages. giving up...",
     "ib", "warning"),
    ("mlx5_core 0000:c1:00.1: mlx5_reclaim_startup_pages:830:(pid 2211): FW pages counter is 128 after reclaiming all "
     "pages", "ib", "warning"),
    ("mlx5_core 0000:c1:00.1: mlx5_fw_reset_complete_reload:233:(pid 97): reset reload flow aborted, PCI reads still "
     "not working", "ib", "warning"),
    ("mlx5_core 0000:c1:00.1: mlx5_sync_reset_unload_event:700:(pid 97): Sync Reset Unload. Function is forced down.",
     "ib", "info"),
    ("mlx5_core 0000:c1:00.1: mlx5_health_try_recover:349:(pid 97): health revived", "ib", "info"),
    # ---- the NVIDIA driver refusing a GPU: kernel-open/nvidia/nv.c NV_DEV_PRINTF "No interrupts of any type are
    # available. Cannot use this GPU.", "Tried to get IRQ %d, but another driver", "Device is currently unavailable",
    # "open() not permitted for excluded %s"; nv-pci.c "NVRM: ignoring the legacy GPU %04x:%02x:%02x.%x"
    ("NVRM: GPU 0000:c3:00.0: No interrupts of any type are available. Cannot use this GPU.", "gpu_init", "error"),
    ("NVRM: GPU 0000:c3:00.0: Tried to get IRQ 138, but another driver", "gpu_init", "error"),
    ("NVRM: GPU 0000:c3:00.0: Device is currently unavailable", "gpu_init", "error"),
    ("NVRM: GPU 0000:c3:00.0: open() not permitted for excluded GPU", "gpu_init", "error"),
    ("NVRM: ignoring the legacy GPU 0000:c3:00.0", "gpu_init", "error"),
    # older nv-pci.c's wrapping of the request_mem_region report: "NVRM: such as rivatv is loaded and claims ownership
    # of the device's registers."
    ("NVRM: such as rivatv is loaded and claims ownership of the device's registers.", "gpu_init", "error"),
    # libnvidia-container: "nvidia-container-cli: %s error: %s" (quoted in a runtime's error); the device plugin's
    # "failed to initialize NVML: %v" with go-nvml's return names
    ("docker: Error response from daemon: failed to create task for container: ... nvidia-container-cli: mount error: "
     "file creation failed: /var/lib/docker/overlay2/x/merged/usr/bin/nvidia-smi: file exists: unknown.", "gpu_init",
     "error"),
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer "
     "version, or use an earlier cuda container: unknown", "gpu_init", "error"),
    ("I0311 10:00:00.000000 1 factory.go:44] failed to initialize NVML: ERROR_DRIVER_NOT_LOADED", "gpu_init", "error"),
    # ---- Open MPI's fabric help texts (help-mpi-btl-openib.txt, help-mpi-btl-openib-cpc-base.txt, help-mtl-ofi.txt):
    # printed by healthy runs on hosts without the fabric too, so info
    ("WARNING: It appears that your OpenFabrics subsystem is configured to only", "ib", "info"),
    ("No OpenFabrics connection schemes reported that they were able to be", "ib", "info"),
    ("Open MPI failed an OFI Libfabric library call (fi_getinfo).  This is highly", "ib", "info"),
]


BENIGN_TWINS = [
    # systemctl status of a running unit (the bullet glyph) and of an inactive one
    "● nvidia-fabricmanager.service - NVIDIA fabric manager service",
    "○ nvidia-persistenced.service - NVIDIA Persistence Daemon",
    "● openibd.service - openibd - configure Mellanox devices",
    # xcvrd's state going back to normal; ethtool -m with the alarm off; sensord's deassert
    "Ethernet16: temperature status change from temperature high alarm to normal",
    "\tModule temperature high alarm             : Off",
    "DEASSERT: Upper Critical threshold - settled - FRU: 2, num: 0x1A curr_val: 70.00 C, thresh_val: 85.00 C, "
    "snr: SOC_TEMP",
    # (round 18: an ASSERT on a fan below its lower critical speed is a cooling fault, thermal as every other fan
    # threshold and ALARM in the kind table: tests/test_diagnosis_lead18.py holds it as a finding)
    # the firmware loader's note for another driver's optional file
    "iwlwifi 0000:00:14.3: Direct firmware load for iwlwifi-so-a0-gf-a0-72.ucode failed with error -2",
    # s_vbiosPatchInterfaceData's warning that it copies anyway
    "NVRM: s_vbiosPatchInterfaceData: insufficient cmd buffer for FWSEC interface",
    # NFS root at work, NFS/RDMA's connection established (verbs.c pr_info)
    "Root-NFS: Mounting /export/roots/node17 on server 10.0.0.1 as root",
    "rpcrdma: connection to 192.168.7.3:20049 on mlx5_0, memreg 'FRWR', 128 credits, 16 responders",
    # BeeGFS's connection set up
    "(3) Feb 02 11:12:13 Worker3 [NodeConn (acquire stream)] >> Connected: beegfs-meta@10.1.0.2:8005 (protocol: RDMA)",
    # a healthy async event (ibv_event_type_str "communication established") and the UCX info line
    "IB Async event on mlx5_0: communication established on QPN 0x12",
    # DCGM_FR_PCIE_REPLAY_VIOLATION_MSG's format with no replay counted
    "Detected 0 PCIe replay errors for GPU 0",
    # pciehp's healthy presence and link lines
    "pcieport 0000:80:03.1: pciehp: Slot(5-1): Card present",
    "pcieport 0000:80:03.1: pciehp: Slot(5-1): Link Up",
    "pciehp 0000:80:03.1:pcie04: slot(5-1): Link Up event",
    # mlxlink on a link at what it enables (or faster than a lower enabled speed)
    "Link Speed Active (Enabled)     : 16G-Gen 4 (16G-Gen 4)",
    "Link Width Active (Enabled)     : 16X (16X)",
    "Link Speed Active (Enabled)     : 16G-Gen 4 (8G-Gen 3)",
    # ext4 mounting and loading its journal at info level
    "EXT4-fs (nvme0n1p2): mounted filesystem 3c1f2e7a-1b2c-4d5e-8f90-123456789abc r/w with ordered data mode. "
    "Quota mode: none.",
    "EXT4-fs (sda1): write access will be enabled during recovery",
    # a drive well within its endurance
    "percentage_used                         : 3%",
    "Percentage Used:                    100%",
    # autofs's successful mount (MODPREFIX "mounted %s on %s") and a map lookup that simply found nothing
    "automount[881]: mount(nfs): mounted nas1:/vol/proj on /proj/x",
    # the BMCs' healthy or non-thermal events: HPE's temperature back to OK, a fan sensor's transition, a drive inserted
    "Temperature Status Changed to OK (Temperature Sensor 2, Location CPU, Temperature 60C)",
    "Sensor Fan 3 Tach has transitioned to critical from a less severe state.",
    "Drive 0 is installed in disk drive bay 1.",
    # NCCL's healthy teardown (init.cc "- Destroy COMPLETE") and PyTorch's exit warning at W level
    "gpu17:8812:8812 [2] NCCL INFO comm 0x7f3a2c000b80 rank 2 nranks 16 cudaDev 2 busId 41000 - Destroy COMPLETE",
    "[rank0]:[W1107 02:03:04.5 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed "
    "before we destruct ProcessGroupNCCL.",
    # the bond's link back, opensm's port up
    "bond1: link status definitely up for interface ib0, 100000 Mbps full duplex",
    "bond1: active interface up!",
    "Mar 02 04:05:06 812345 [7F3A2C00] 0x02 -> SM port is up",
    # GPFS's healthy notes: a connection made, a group leader, a command that succeeded
    "2025-02-03_04:05:06.789-0500: [I] Connected to 10.2.0.1 mgr1 <c0n1>",
    "2025-02-03_04:05:06.789-0500: [I] Command: successful mount fs1",
    # multipathd's path coming back, md's finished recovery
    "multipathd[881]: mpathc: sdk - tur checker reports path is up",
    "md127: recovery done.",
    # mlxlink's healthy port
    "Status Message                  : No issue was observed.",
    # DCGM's fabric watch and probe state when the fabric is trained
    "GPU 5: Fabric State is Completed (3).",
    "IMEX daemon status is UP (READY)",
    # NVRM's own healthy device notes
    "NVRM: GPU 0000:c3:00.0: UnbindLock acquired",
    # mlx5's firmware reset drop-mode acknowledgement (mlx5_core_info)
    "mlx5_core 0000:c1:00.1: mlx5_sync_reset_unload_flow:620:(pid 97): Sync Reset Drop mode ack",
]


NEVER_DRAIN = [
    "× nvidia-fabricmanager.service - NVIDIA fabric manager service",
    "Ethernet16: temperature status change from normal to temperature high alarm",
    "cp: cannot create regular file '/lustre/proj/out.h5': Cannot send after transport endpoint shutdown",
    "IB Async event on mlx5_3: local work queue catastrophic error on QPN 0x2f1",
    "libibverbs: Warning: RLIMIT_MEMLOCK is 8388608 bytes.",
    "Detected 57 PCIe replay errors for GPU 6",
    "(3) Feb 02 11:12:13 Worker3 [Messaging (RPC)] >> Communication error: Send timed out to: beegfs-meta mds02",
    # a job's process that names itself like a kernel subsystem, writing the kernel's words: still no node fault
    "Jan 11 09:52:01 gpu12 ib0[4242]: ib0: timing out; 12 sends 3 receives not completed",
    "Jan 11 09:52:01 gpu12 python[4242]: Root-NFS: No NFS server available, giving up.",
]


KERNEL_LINES = [
    "Root-NFS: No NFS server available, giving up.",
    "ib1: timing out; 12 sends 3 receives not completed",
    "NVRM: s_vbiosPatchInterfaceData: too few interface entires found for FWSEC cmd 0x5",
    "pcieport 0000:80:03.1: pciehp: Slot(5-1): No link",
    "EXT4-fs (md127): journal UUID does not match",
]


globals().update(table_tests(found=FAULTS, kernel_lines=KERNEL_LINES, no_drain=NEVER_DRAIN, twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def test_hyperscan_takes_every_keyword_in_pieces_and_a_utf8_literal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packaged keywords (over Hyperscan's 16,000-character pattern limit as one alternation, and holding systemd's
    "×") compile, and Hyperscan passes the same lines as the Python path."""
    from slurmtools.diagnosis import prefilter, rules

    pieces = prefilter._alternations([b"a" * 3000] * 7)
    assert len(pieces) > 1 and all(len(p) <= prefilter.HS_PATTERN_CHUNK for p in pieces)
    assert b"|".join(pieces) == b"|".join([b"a" * 3000] * 7)
    assert prefilter._hs_literal("× ".encode()) == b"\\xc3\\x97\\ "
    data = "\n".join(["noise line"] * 50 + ["× nvidia-fabricmanager.service - NVIDIA fabric manager service",
                                            "ib0: timing out; 5 sends 0 receives not completed", "more noise"]).encode()
    pf = prefilter.Prefilter(rules.ruleset().keywords)
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", None)
    monkeypatch.setattr(prefilter, "GREP_MIN_BYTES", 1 << 40)
    python = list(pf.spans(data))
    monkeypatch.setattr(prefilter, "HYPERSCAN_MIN_BYTES", 0)
    fast = prefilter.Prefilter(rules.ruleset().keywords)
    assert list(fast.spans(data)) == python
    assert fast._hs not in (None, False), "the packaged keywords compile into one Hyperscan database"
    assert [n for n, _, _ in python] == [51, 52]
