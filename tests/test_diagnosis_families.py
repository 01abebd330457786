"""Message families built from the format strings of the code that prints them (issue 32, generalisation).

Every line below is a format string of a public source with its conversions filled in (the file named in the
comment above it), not a line copied from a log: the rules must know the family, not one sample of it.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.lines import normalise

SEVERE = {"warning", "error", "critical"}

FAULTS = [
    # linux mm/oom_kill.c, 2.6.18: "Out of Memory: Kill process %d (%s) score %li and children." and
    # "Out of Memory: Killed process %d (%s)."
    ("Out of Memory: Kill process 1234 (java) score 567 and children.", "oom", "error"),
    ("Out of Memory: Killed process 1234 (java).", "oom", "error"),
    # linux mm/oom_kill.c, 2.6.32: "Out of memory: kill process %d (%s) score %lu or a child" and
    # "Killed process %d (%s) vsz:%lukB, anon-rss:%lukB, file-rss:%lukB"
    ("Out of memory: kill process 1234 (java) score 5678 or a child", "oom", "error"),
    ("Killed process 1234 (java) vsz:1234567kB, anon-rss:12345kB, file-rss:12kB", "oom", "error"),
    # linux mm/oom_kill.c (4.19+): "oom_reaper: unable to reap pid:%d (%s)\n";
    # "Tasks in %s are going to be killed due to memory.oom.group set\n"
    ("oom_reaper: unable to reap pid:1234 (python3)", "oom", "error"),
    ("Tasks in /slurm/uid_1000/job_42 are going to be killed due to memory.oom.group set", "oom", "error"),
    # kubernetes pkg/kubelet/oom/oom_watcher_linux.go: "System OOM encountered, victim process: %s, pid: %d"
    ("System OOM encountered, victim process: python, pid: 1234", "oom", "error"),
    # linux kernel/watchdog.c, 2.6.18: "BUG: soft lockup detected on CPU#%d!"
    ("BUG: soft lockup detected on CPU#3!", "soft_lockup", "error"),
    # linux arch/x86/kernel/nmi.c, 2.6: "NMI Watchdog detected LOCKUP on CPU %d"
    ("NMI Watchdog detected LOCKUP on CPU 3", "soft_lockup", "critical"),
    # linux kernel/rcu/tasks.h: "%s: %s grace period %lu is %lu jiffies old.\n"
    ("rcu_tasks_wait_gp: rcu_tasks grace period 1234 is 10001 jiffies old.", "soft_lockup", "error"),
    # linux kernel/rcu/tree_stall.h: "\tUnless %s kthread gets sufficient CPU time, OOM is now expected behavior.\n"
    ("rcu: \tUnless rcu_preempt kthread gets sufficient CPU time, OOM is now expected behavior.", "soft_lockup",
     "error"),
    # linux kernel/reboot.c: pr_emerg("HARDWARE PROTECTION shutdown (%s)\n", reason), the thermal core's reason
    # "Temperature too high" (drivers/thermal/thermal_core.c)
    ("reboot: HARDWARE PROTECTION shutdown (Temperature too high)", "thermal", "critical"),
    # linux arch/i386/kernel/cpu/mcheck/p4.c, 2.6: "CPU%d: Temperature above threshold" with "CPU#%d"
    ("CPU#1: Temperature above threshold, cpu clock throttled", "thermal", "warning"),
    # open-mpi ompi opal/mca/btl/openib/btl_openib_component.c: "error polling %s with status %s status number %d
    # for wr_id %llu opcode %d qp_idx %d" (BTL_PEER_ERROR's prefix names the file and the hosts)
    ("[[12345,1],0][btl_openib_component.c:3644:handle_wc] from node1 to: node2 error polling LP CQ with status "
     "RETRY EXCEEDED ERROR status number 12 for wr_id 1234 opcode 0 vendor error 129 qp_idx 0", "ib", "error"),
    # rdma-core libibverbs/verbs.c ibv_wc_status_str(): "remote access error", "RNR retry counter exceeded",
    # "Work Request Flushed Error", "local protection error"
    ("send completion failed: status remote access error (10)", "ib", "error"),
    ("RNR retry counter exceeded", "ib", "error"),
    ("wc status Work Request Flushed Error", "ib", "error"),
    # rdma-core libibverbs/verbs.c ibv_event_type_str(): "local catastrophic error", "port error" (IBV_EVENT_PORT_ERR)
    ("Received async event local catastrophic error on mlx5_0", "ib", "error"),
    ("async event IBV_EVENT_PORT_ERR on port 1", "ib", "error"),
    # mvapich2 src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c: "Got completion with error %d, vendor
    # code=0x%x, dest rank=%d"
    ("[node1:mpi_rank_0][handle_cqe] Got completion with error 12, vendor code=0x81, dest rank=1", "ib", "error"),
    # intel-mpi/MPICH ch4 ofi (src/mpid/ch4/netmod/ofi/ofi_impl.h): "OFI %s failed (%s:%d:%s:%s)"
    ("MPIDI_OFI_send_normal(371): OFI tagged send failed (ofi_send.h:371:MPIDI_OFI_send_normal:Input/output error)",
     "ib", "error"),
    # perftest: "Failed to modify QP %d to RTR" (perftest_resources.c)
    ("Failed to modify QP 1234 to RTR", "ib", "error"),
    # linux drivers/net/ethernet/mellanox/mlx4/catas.c: "device is going to be reset\n"
    ("mlx4_core 0000:04:00.0: device is going to be reset", "ib", "critical"),
    # linux fs/nfs/namespace.c / nfs4namespace.c: "NFS4: Couldn't follow remote path\n"
    ("NFS4: Couldn't follow remote path", "nfs", "warning"),
    # linux fs/nfs/nfs4state.c: "NFS: Server %s reports our clientid is in use\n"
    ("NFS: Server fs01 reports our clientid is in use", "nfs", "warning"),
    # linux fs/nfs/write.c: "NFS: Server wrote zero bytes, expected %u.\n"
    ("NFS: Server wrote zero bytes, expected 4096.", "nfs", "warning"),
    # lustre lustre/include/lustre_net.h DEBUG_REQ(): "@@@ " then the message and the request
    ("Lustre: 1234:0:(service.c:1372:ptlrpc_at_send_early_reply()) @@@ Couldn't add any time (5/-150), not "
     "sending early reply", "nfs", "warning"),
    # open-gpu-kernel-modules src/nvidia/src/kernel/vgpu/rpc.c: "rpcRecvPoll timedout for fn %d!\n"
    ("NVRM: GPU0 _issueRpcAndWait: rpcRecvPoll timedout for fn 76!", "gsp", "error"),
    # open-gpu-kernel-modules (kernel-open/nvidia/nv.c and the RM's vbios code) with the GPU's address prefix
    ("NVRM: GPU 0000:3b:00.0: Failed to copy vbios to system memory.", "gpu_init", "critical"),
    ("NVRM: No NVIDIA GPU found.", "gpu_init", "critical"),
    # pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: "[%d] is setting up NCCL communicator and
    # retrieving ncclUniqueId from [0] via c10d key-value store by key '%s', but store->get('%s') got error: "
    ("torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] "
     "via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout", "nccl", "error"),
    # linux arch/x86/kernel/cpu/mce/therm_throt.c since 5.5 (throttle_active_work):
    # "CPU%d: %s temperature is above threshold, cpu clock is throttled (total events = %lu)"
    ("CPU9: Package temperature is above threshold, cpu clock is throttled (total events = 12)", "thermal", "warning"),
    # Dell iDRAC message CPU0001: "CPU %d has a thermal trip (over-temperature) event."
    ("CPU 1 has a thermal trip (over-temperature) event.", "thermal", "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/health.c print_health_info(): "hw_id 0x%08x", "irisc_index %d",
    # "raw fw_ver 0x%08x", "time %u"
    # (round 11: the report's neutral fields alone are info, its evidence; `synd` and `assert_*` stay errors)
    ("mlx5_core 0000:3b:00.0: print_health_info:423:(pid 0): hw_id 0x0000020d", "ib", "info"),
    ("mlx5_core 0000:3b:00.0: irisc_index 3", "ib", "info"),
    ("mlx5_core 0000:3b:00.0: raw fw_ver 0x10230fa0", "ib", "error"),
    # rdma-core libibverbs/examples/devinfo.c: "\t\t\tphys_state:\t\t%s (%d)" with port_phy_state_str() "POLLING"
    ("\t\t\tphys_state:\t\tPOLLING (2)", "ib", "warning"),
    # infiniband-diags src/iblinkinfo.c: a link below what both ends support, "( Could be %s)"
    ("          1    1[  ] ==(                4X      2.5 Gbps Active/  LinkUp)==>  2 12[  ] \"sw1\" "
     "( Could be 10.0 Gbps)", "ib", "warning"),
    # libibmad (IBWARN): "ibwarn: [%d] %s: " then the message
    ("ibwarn: [3784] _do_madrpc: recv failed: Connection timed out", "ib", "error"),
    # perftest src/perftest_resources.c: "Failed status %d: wr_id %d syndrom 0x%x", "Couldn't post send"
    ("Failed status 12: wr_id 0 syndrom 0x81", "ib", "error"),
    ("Couldn't post send", "ib", "error"),
    # opensm osm_log.c: "0x%02x -> %s: ERR %04X: ..." (the SM's error lines)
    ("Jan 11 09:52:01 123456 [7F0A1B2C3D4E] 0x01 -> osm_vl15_send_mad: ERR 3E03: MAD send failed "
     "(IB_UNKNOWN_ERROR)", "ib", "warning"),
    # infiniband-diags ibcheckerrors: "#warn: counter %s = %s \t(threshold %s) lid %s port %s"
    ("#warn: counter SymbolErrors = 65535 \t(threshold 10) lid 3 port 1", "ib", "warning"),
    # iproute2 rdma/link.c: "link %s/%u ... state %s physical_state %s"
    ("link mlx5_0/1 state DOWN physical_state POLLING netdev ib0", "ib", "warning"),
    # rdma-core librdmacm/examples: perror("rdma_resolve_addr") -> "rdma_resolve_addr: No such device"
    ("rdma_resolve_addr: No such device", "ib", "error"),
    # ucx src/uct/ib/mlx5/ib_mlx5_log.c: "%s on %s:%d/%s (synd 0x%x vend 0x%x hw_synd %d/%d)"
    ("Local protection on mlx5_2:1/RoCE (synd 0x4 vend 0x56 hw_synd 0/0)", "ib", "error"),
    # open-gpu-kernel-modules kernel-open/nvidia/nv.c: "NVRM: GPU %04x:%02x:%02x.%x: request_irq() failed (%d)"
    ("NVRM: GPU 0000:3b:00.0: request_irq() failed (-22)", "gpu_init", "error"),
    # linux drivers/net/ethernet/intel/ice/ice_main.c (and i40e): "PCI-Express bandwidth available for this device
    # may be insufficient for optimal performance."
    ("ice 0000:3b:00.0: PCI-Express bandwidth available for this device may be insufficient for optimal performance.",
     "pcie", "warning"),
    # nfs-utils utils/mount/error.c: "requested NFS version or transport protocol is not supported"; autofs relays
    # mount's output after ">> "
    ("mount.nfs: requested NFS version or transport protocol is not supported", "nfs", "warning"),
    ("automount[1234]: >> mount.nfs: Connection timed out", "nfs", "warning"),
    # IBM Storage Scale (GPFS) mmfs.log: "[N] Node %s (%s) lease renewal is overdue. Pinging to check if it is alive"
    ("2024-01-11_09:52:01.123+0100: [N] Node 10.0.0.1 (node1) lease renewal is overdue. Pinging to check if it is "
     "alive", "nfs", "warning"),
    # linux net/sunrpc/xprtsock.c: "%s: connect returned unhandled error %d\n" (__func__ = xs_tcp_setup_socket)
    ("xs_tcp_setup_socket: connect returned unhandled error -107", "nfs", "warning"),
    # linux drivers/scsi/scsi_lib.c (scsi_kill_request): "killing request"; drivers/md/md.c: "md: %s: %s interrupted."
    ("sd 0:0:0:0: [sda] killing request", "disk", "warning"),
    ("md: md0: recovery interrupted.", "disk", "warning"),
    # smartmontools ataprint.cpp (ATA error log): "Error %d occurred at disk power-on lifetime: %d hours (...)"
    ("Error 1 occurred at disk power-on lifetime: 1234 hours (51 days + 10 hours)", "disk", "warning"),
    # linux fs/ext4/super.c print_daily_error_info(): "initial error at time %u: %.*s:%d"
    ("EXT4-fs (sda1): initial error at time 1700000000: ext4_find_entry:1455: inode 2", "disk", "warning"),
    # linux fs/fat/misc.c (fat_fs_error): "FAT-fs (%s): error, %pV"; fs/fat/inode.c "Volume was not properly
    # unmounted. Some data may be corrupt. Please run fsck."
    ("FAT-fs (sdb1): error, fat_get_cluster: invalid cluster chain (i_pos 0)", "disk", "warning"),
    # smartmontools scsiprint.cpp: "SMART Health Status: %s" with a failure-prediction reason
    ("SMART Health Status: FAILURE PREDICTION THRESHOLD EXCEEDED [asc=5d, ascq=10]", "disk", "warning"),
    # OpenZFS `zpool status`: the pool's state line and a vdev row with its READ/WRITE/CKSUM counts
    ("  state: DEGRADED", "disk", "warning"),
    (" sda    FAULTED     12     0     0  too many errors", "disk", "warning"),
    # linux drivers/md/md.c /proc/mdstat: a failed member "(F)", a missing one "[2/1] [_U]"
    ("md0 : active raid1 sdb1[1] sda1[0](F)", "disk", "warning"),
    ("      1953382464 blocks super 1.2 [2/1] [_U]", "disk", "warning"),
    # linux drivers/edac/edac_pci_sysfs.c: "Signaled System Error on %s", "Detected Parity Error on %s"
    ("EDAC PCI: Signaled System Error on 0000:00:1c.0", "aer", "warning"),
    # Dell iDRAC PCI1320: "A bus fatal error was detected on a component at bus %d device %d function %d."
    ("PCI1320: A bus fatal error was detected on a component at bus 59 device 0 function 0.", "aer", "warning"),
    # ipmitool sel elist: the Critical Interrupt sensor's "Bus Fatal Error" offset
    ("  13 | 01/11/2024 | 09:52:01 | Critical Interrupt #0x18 | Bus Fatal Error | Asserted", "aer", "warning"),
    # pciutils ls-ecaps.c (lspci -vv): an AER uncorrectable status bit set; ls-caps.c: DevSta with NonFatalErr+
    ("                UESta:  DLP- SDES- TLP- FCP- CmpltTO+ CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- "
     "ACSViol-", "aer", "warning"),
    ("                DevSta: CorrErr+ NonFatalErr+ FatalErr- UnsupReq+ AuxPwr- TransPend-", "aer", "warning"),
    # linux kernel/watchdog.c (buddy detector): "CPU%u: Watchdog detected hard LOCKUP on cpu %u"
    ("CPU5: Watchdog detected hard LOCKUP on cpu 3", "soft_lockup", "critical"),
    # linux kernel/rcu/tree_stall.h: "\tTasks blocked on level-%d rcu_node (CPUs %d-%d):" and "\t(t=%lu jiffies g=%ld"
    ("rcu: \tTasks blocked on level-0 rcu_node (CPUs 0-7): P1234", "soft_lockup", "error"),
    ("rcu: \t(t=21002 jiffies g=12345 q=678 ncpus=8)", "soft_lockup", "error"),
    # linux mm/memcontrol.c (mem_cgroup_print_oom_meminfo): "%s: usage %llukB, limit %llukB, failcnt %lu"
    ("memory+swap: usage 2097152kB, limit 2097152kB, failcnt 12", "oom", "error"),
    # nvidia-installer: "Unable to load the kernel module '%s'. ..."; nvidia-smi without libnvidia-ml (ld.so's words)
    ("ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently when this kernel module was "
     "built against the wrong or improperly configured kernel sources", "gpu_init", "error"),
    ("nvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such "
     "file or directory", "gpu_init", "error"),
    # linux net/sunrpc/svcsock.c: "%s: %s got error %d when sending %u bytes - shutting down socket"
    ("rpc-srv/tcp: nfsd: got error -104 when sending 4 bytes - shutting down socket", "nfs", "warning"),
    # util-linux mount: "mount(2) system call failed: %s"
    ("mount: /mnt/nfs: mount(2) system call failed: Connection timed out.", "nfs", "warning"),
    # mcelog p4.c (and rasdaemon): "Processor %d heated above trip temperature. Throttling enabled."
    ("CPU 0 THERMAL EVENT TSC 12345678 Processor 0 heated above trip temperature. Throttling enabled.", "thermal",
     "warning"),
    # mcelog p4.c: "CPU %d THERMAL EVENT TSC %llx" and "Please check your system cooling. Performance will be impacted"
    ("Hardware event. CPU 0 THERMAL EVENT TSC 1234abcd", "thermal", "warning"),
    ("Please check your system cooling. Performance will be impacted", "thermal", "warning"),
    # pytorch torch/cuda/__init__.py: "The NVIDIA driver on your system is too old (found version %d). ..."
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver",
     "cuda", "error"),
    # the NVIDIA X driver (Xorg.0.log): "(EE) NVIDIA(GPU-%d): Failed to initialize the NVIDIA GPU at PCI:%d:%d:%d."
    ("[    12.345] (EE) NVIDIA(GPU-0): Failed to initialize the NVIDIA GPU at PCI:1:0:0. Please check your system's "
     "kernel log for additional error messages", "gpu_init", "error"),
    # Lenovo XCC: "Numeric sensor %s going high (upper critical) has asserted." (a temperature sensor)
    ("Numeric sensor CPU 1 Temp going high (upper critical) has asserted.", "thermal", "warning"),
    # MVAPICH2 ibv_channel_manager.c: "[handle_cqe] Send desc error in msg to %d, wc_opcode=%d"
    ("[node1:mpi_rank_0][handle_cqe] Send desc error in msg to 3, wc_opcode=0", "ib", "error"),
    # MPICH ch4/ofi (Intel MPI): "OFI addrinfo() failed (%s:%d:%s:%s)"
    ("MPIDI_OFI_mpi_init_hook(1566): OFI addrinfo() failed (ofi_init.c:1566:MPIDI_OFI_mpi_init_hook:No data "
     "available)", "ib", "error"),
    # linux drivers/pci/controller: pci-tegra.c "link %u down, ignoring", pcie-mediatek.c "Port%d link down",
    # pcie-xilinx.c "PCIe Link is DOWN"
    ("tegra-pcie 3000.pcie: link 0 down, ignoring", "pcie", "error"),
    ("mtk-pcie 11230000.pcie: Port0 link down", "pcie", "error"),
    ("xilinx-pcie 50000000.axi-pcie: PCIe Link is DOWN", "pcie", "error"),
    # NVIDIA legacy driver (nv.c): "NVRM: Can't find an IRQ for your NVIDIA card!"
    ("NVRM: Can't find an IRQ for your NVIDIA card!", "gpu_init", "error"),
    # open-gpu-kernel-modules kernel_gsp.c: the GSP timeout report's lines name no failure themselves
    ("NVRM: _kgspLogXid119: Note: Please also check logs above.", "gsp", "warning"),
    ("NVRM: GPU0 kgspHealthCheck_TU102: ****************************************************", "gsp", "warning"),
    # pytorch c10 logging (c10/util/Logging.cpp): an E-level line of ProcessGroupNCCL.cpp
    ("[rank1]:[E1030 10:00:00.123456789 ProcessGroupNCCL.cpp:1575] [PG 0 (default_pg) Rank 1] Received a dump "
     "signal from this local rank and will start to dump the debug info.", "nccl", "error"),
    # pytorch torch/distributed/distributed_c10d.py _store_based_barrier: "Timed out initializing process group in
    # store based barrier on rank: {}, for key: {} (world_size={}, worker_count={}, timeout={})"
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
     "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)", "nccl", "error"),
    # DCGM dcgmlib/dcgm_errors.h DCGM_FR_PCIE_WIDTH_MSG
    ("GPU 0 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 (parameter "
     "'pcie.min_pci_width')", "pcie", "warning"),
    # ipmitool sensor / sdr elist: a temperature sensor in the critical state ("cr")
    ("CPU1 Temp        | 95.000     | degrees C  | cr    | na        | 5.000     | 10.000    | 85.000    | 90.000    "
     "| 95.000", "thermal", "warning"),
    ("CPU1 Temp        | 30h | cr  |  3.1 | 95 degrees C", "thermal", "warning"),
    # linux kernel/rcu/tree_stall.h: "Possible timer handling issue on cpu=%d timer-softirq=%u\n"
    ("rcu: Possible timer handling issue on cpu=3 timer-softirq=1234", "soft_lockup", "error"),
    # pytorch torch/cuda/__init__.py _check_driver(): "Found no NVIDIA driver on your system. ..." (since round 11 the
    # driver missing, gpu_init: lead11_no_nvidia_driver)
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver from http://www.nvidia.com/Download/index.aspx", "gpu_init", "error"),
    # ucx src/uct/base/uct_md.c: "network device '%s' is not available, please use one or more of: %s"
    ("[1700000000.123456] [node1:1234 :0]         uct_md.c:268  UCX  WARN  network device 'mlx5_0:1' is not "
     "available, please use one or more of: 'eth0'(tcp)", "ib", "warning"),
    # NVIDIA user-space driver (libcuda, the X driver): "NVIDIA: could not open the device file %s (%s)."
    ("NVIDIA: could not open the device file /dev/nvidia0 (Input/output error).", "gpu_init", "error"),
]


@pytest.mark.parametrize("line, kind, severity", FAULTS, ids=lambda v: str(v)[:50])
def test_a_family_built_from_its_format_string_is_found(line: str, kind: str, severity: str) -> None:
    findings = diagnose(line.encode())
    assert findings, line
    assert (findings[0].kind, findings[0].severity) == (kind, severity)


BENIGN_TWINS = [
    # arch/x86/kernel/cpu/mce/therm_throt.c: "CPU%d: %s temperature/speed normal" (and 2.6's "CPU#%d: ...")
    ("CPU0: Core temperature/speed normal", "thermal"),
    ("CPU#0: Temperature/speed normal", "thermal"),
    # nccl src/include/checks.h NCCLCHECK: INFO(NCCL_ALL,"%s:%d -> %d", __FILE__, __LINE__, res): a trace, not the fault
    ("gpu01:1234:1234 [0] NCCL INFO transport/net_ib.cc:1134 -> 6", "nccl"),
    # drivers/thermal/thermal_core.c: "failed to read out thermal zone (%d)\n": a sensor not ready, at every boot
    ("thermal thermal_zone9: failed to read out thermal zone (-61)", None),
    # lustre lustre/ptlrpc/import.c: "%s: Connection restored to %s (at %s)\n": the end of an outage
    ("Lustre: scratch-OST0003-osc-ffff8808: Connection restored to scratch-OST0003 (at 10.0.0.4@o2ib)", "nfs"),
    # rdma-core libibverbs/dynamic_driver.c: "Warning: couldn't load driver '%s': %s" (every container without RDMA)
    ("libibverbs: Warning: couldn't load driver 'libmlx4-rdmav34.so': libmlx4-rdmav34.so: cannot open shared object "
     "file: No such file or directory", "ib"),
    # GPFS mmfs.log notices of a normal connection
    ("2024-01-11_09:52:01.123+0100: [N] Connected to 10.0.0.1 node1 <c0p1>", None),
    # the driver's banner and a SoC controller's link up (pcie-brcmstb.c "link up, %s x%u %s")
    ("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023", None),
    ("brcm-pcie fd500000.pcie: link up, 5.0 GT/s PCIe x1 (SSC)", None),
    # ipmitool: a sensor in its normal state; c10's W-level ProcessGroupNCCL warning at exit
    ("CPU1 Temp        | 45.000     | degrees C  | ok    | na        | 5.000     | 10.000    | 85.000    | 90.000    "
     "| 95.000", None),
    ("[rank0]:[W1030 10:00:00.123 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been destroyed "
     "before we destruct ProcessGroupNCCL.", None),
    # linux drivers/pci/pcie/dpc.c at every boot: "error containment capabilities: Int Msg #%d, RPExt%c ..."
    ("pcieport 0000:00:1c.0: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+ RP PIO "
     "Log 4, DL_ActiveErr+", None),
    # linux drivers/infiniband/hw/mlx5/mem.c: "Error %d while trying to test write-combining support" (VMs)
    ("infiniband mlx5_0: mlx5_ib_test_wc:290:(pid 1): Error -95 while trying to test write-combining support", None),
    # lspci -vv on a healthy device: no uncorrectable bit set (a mask register's bits are no errors)
    ("                UESta:  DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- "
     "ACSViol-", None),
    ("                UEMsk:  DLP- SDES- TLP- FCP- CmpltTO+ CmpltAbrt- UnxCmplt+ RxOF- MalfTLP- ECRC- UnsupReq- "
     "ACSViol-", None),
    # mcelog's end of throttling; XCC's deassertion
    ("Processor 2 below trip temperature. Throttling disabled", None),
    ("Numeric sensor CPU 1 Temp going high (upper critical) has deasserted.", None),
    # the same IB tools on a healthy port, the SM up
    ("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ib0", None),
    ("Jan 11 09:52:01 123456 [7F0A1B2C3D4E] 0x02 -> SUBNET UP", None),
    # the same tools on a healthy disk
    ("  state: ONLINE", None),
    ("      1953382464 blocks super 1.2 [2/2] [UU]", None),
    ("SMART Health Status: OK", None),
    # ucx: an unused variable is no fault
    ("[1700000000.123456] [node1:1234 :0] parser.c:1 UCX  WARN  unused env variable: UCX_NET_DEVICES (set "
     "UCX_WARN_UNUSED_ENV_VARS=n to suppress this)", None),
]


@pytest.mark.parametrize("line, kind", BENIGN_TWINS, ids=lambda v: str(v)[:50])
def test_a_familys_benign_twin_stays_below_warning(line: str, kind: str | None) -> None:
    findings = diagnose(line.encode())
    assert not [f for f in findings if f.severity in SEVERE], [(f.kind, f.severity) for f in findings]
    assert (findings[0].kind if findings else None) == kind


OOM = "Out of memory: Killed process 1234 (python) total-vm:1kB"


@pytest.mark.parametrize("raw, host", [
    # rsyslog's omusrmsg wall message (rsyslog doc, "Message from syslogd@HOST at DATE ...")
    (f"Message from syslogd@gpu017 at Jan 11 09:52:01 ... kernel:{OOM}", "gpu017"),
    # journalctl -o verbose prints each field indented as KEY=value (systemd journalctl(1), "verbose")
    (f"    MESSAGE={OOM}", None),
    # rsyslog escapes a control character as #ooo (RFC 3164 practice; `$EscapeControlCharactersOnReceive`)
    (f"Jan 11 09:52:01 gpu017 kernel: #011{OOM}", "gpu017"),
    # logfmt (Go logrus/slog: time=... level=... msg="..."), as containerd and dockerd log
    (f'time="2026-01-11T09:52:01Z" level=warning msg="{OOM}"', None),
    # docker compose logs' `service  | ` prefix
    (f"gpu017  | Jan 11 09:52:01 gpu017 kernel: {OOM}", "gpu017"),
    # pasted in a list item, a prompt or quotes
    (f"- {OOM}", None),
    (f"# {OOM}", None),
    (f'"{OOM}"', None),
    # a lower-case level word after a stamp (Go and Python loggers; rasdaemon's ras-mc-ctl --errors rows)
    (f"2026-01-11 09:52:01 +0200 warning: {OOM}", None),
    # the loghub/CFDR supercomputer logs (Thunderbird, Spirit, Liberty): tag, epoch, date, node, then syslog with
    # a `node/node` host
    (f"- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 kernel: {OOM}", "dn228/dn228"),
    # BlueGene/L's RAS records: tag, epoch, date, location, stamp, location, RAS component severity
    (f"- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 RAS KERNEL INFO "
     f"{OOM}", "R02-M1-N0-C:J12-U11"),
    # kubectl get events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE
    (f"5m          Warning   OOMKilling                node/ip-10-0-1-23.ec2.internal   {OOM}", None),
    # client-go tools/record/event.go: klog "Event(%#v): type: '%v' reason: '%v' %v"
    ('I0111 09:52:01.123456    1234 event.go:291] Event(v1.ObjectReference{Kind:"Node", Namespace:"", Name:"node1", '
     f'UID:"node1", APIVersion:"", ResourceVersion:"", FieldPath:""}}): type: \'Warning\' reason: \'OOMKilling\' {OOM}',
     None),
    # node-problem-detector pkg/systemlogmonitor/log_monitor.go: "New status generated: %+v"
    ("I0111 09:52:01.123456       1 log_monitor.go:160] New status generated: &{Source:kernel-monitor "
     "Events:[{Severity:warn Timestamp:2024-01-11 09:52:01.123456789 +0000 UTC m=+1.234 Reason:OOMKilling "
     f"Message:{OOM}", None),
])
def test_more_envelopes_give_the_message(raw: str, host: str | None) -> None:
    line = normalise(raw)
    assert line.message.strip('"') == OOM and line.host == host
    assert diagnose(raw.encode())[0].kind == "oom"


def test_a_level_word_is_no_envelope_at_a_lines_start() -> None:
    assert normalise("error: Detected 1 oom-kill event").message == "error: Detected 1 oom-kill event"


def test_ras_mc_ctl_rows_are_machine_checks() -> None:
    # rasdaemon util/ras-mc-ctl.in (--errors, MCE events): "$id $time error: $msg"
    found = diagnose(b"1 2023-09-17 11:42:13 +0200 error: Corrected error, no action required., CPU 2, bank Unified "
                     b"Memory Controller (bank=21)")
    assert found and found[0].kind == "mce" and found[0].severity == "info"


def test_a_logfmt_message_is_bounded_and_unescaped() -> None:
    assert normalise('level=info msg="a \\"quoted\\" word"').message == 'a "quoted" word'
    long = 'time=x msg="' + "a" * 100_000 + '"'
    assert len(normalise(long).message) <= 4096


def test_an_xid_without_the_drivers_tag_is_read_by_its_number() -> None:
    # the NVRM Xid format ("Xid (PCI:%s): %d, ...") quoted without `NVRM: ` or with no blank before the parenthesis
    for line in (b"Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
                 b"NVRM: Xid(PCI:0000:3b:00): 79, pid=1234"):
        found = diagnose(line)
        assert (found[0].kind, found[0].xid) == ("xid", 79), line


def test_an_rm_functions_print_is_a_fact_and_with_an_error_word_the_fallbacks_warning() -> None:
    # open-gpu-kernel-modules: NV_PRINTF(LEVEL_WARNING, ...) prefixes the RM function's name
    [fact] = diagnose(b"NVRM: GPU0 kbifCacheVFInfo_GH100: VF BAR1 size is 0x0")
    assert (fact.kind, fact.severity, fact.details["rule"]) == ("gsp", "info", "nvrm_print")
    [warn] = diagnose(b"NVRM: GPU0 kbifCacheVFInfo_GH100: VF BAR1 degraded")
    assert (warn.kind, warn.severity, warn.details["unrecognised"]) == ("gsp", "warning", True)
    assert not is_node_fault(warn, None)
