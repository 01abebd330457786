"""The fabric, shared-filesystem, GPU-init, PCIe and NCCL families, built from their printers' format strings.

Every fault line below is a format string of the public source named in the comment above it, with its
conversions filled in by hand (device names, numbers): it is no line copied from a log or from the field corpus.
The rules must know the family (every value of the conversions), not one sample of it. Each family has benign
twins (the same printer's healthy or informational lines) that must stay below warning, and the rules that read
text a job or a daemon controls are checked for their trust: such a line never drains a node.
"""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # ---- InfiniBand / RoCE in the kernel
    # linux drivers/net/ethernet/mellanox/mlx5/core/events.c temp_warn(): "High temperature on sensors with bit set
    # %llx %llx" (mlx5_core_warn adds "%s:%d:(pid %d): ")
    ("mlx5_core 0000:17:00.1: temp_warn:170:(pid 0): High temperature on sensors with bit set 0 4", "ib", "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/port.c: "Module ID not recognized: 0x%x\n",
    # "I2C address not recognized: 0x%x\n"
    ("mlx5_core 0000:af:00.0: mlx5_query_module_eeprom:431:(pid 812): Module ID not recognized: 0x1e", "ib", "warning"),
    ("mlx5_core 0000:af:00.0: mlx5_query_module_eeprom_by_page:490:(pid 7): I2C address not recognized: 0x52", "ib",
     "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/health.c mlx5_health_wait_pci_up(): "PCI slot is unavailable\n"
    ("mlx5_core 0000:af:00.0: mlx5_health_try_recover:335:(pid 99): PCI slot is unavailable", "ib", "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/eq.c: "Completion event for bogus CQ 0x%x\n"
    ("mlx5_core 0000:af:00.0: mlx5_eq_comp_int:171:(pid 0): Completion event for bogus CQ 0x4d2", "ib", "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/main.c mlx5_pci_err_detected(): "%s Device state = %d health
    # sensors: %d pci_status: %d. Enter, pci channel state = %d\n"
    ("mlx5_core 0000:af:00.0: mlx5_pci_err_detected:1910:(pid 4): mlx5_pci_err_detected Device state = 2 health "
     "sensors: 1 pci_status: 0. Enter, pci channel state = 3", "ib", "warning"),
    # linux drivers/infiniband/core/mad.c ib_register_mad_agent(): "%s: Invalid port %u\n" (dev_dbg_ratelimited on
    # the ib device)
    ("infiniband mlx5_3: ib_register_mad_agent: Invalid port 2", "ib", "warning"),
    # linux drivers/net/ethernet/mellanox/mlx5/core/health.c poll_health(): "device's health compromised - reached miss
    # count\n" through mlx5_core_err()'s "%s:%d:(pid %d): ", the device prefix cut off (trust syslog: never drains)
    ("poll_health:1123:(pid 0): device's health compromised - reached miss count", "ib", "error"),
    # linux drivers/infiniband/ulp/iser/iser_verbs.c: iser_err("qp event %s (%d)\n", ib_event_msg(), ...), the
    # event strings of drivers/infiniband/core/verbs.c ib_events[]
    ("iser: iser_qp_event_callback: qp event QP fatal error (1)", "ib", "error"),
    # linux drivers/nvme/host/rdma.c nvme_rdma_wr_error(): "%s for CQE 0x%p failed with status %s (%d)\n" with
    # ib_wc_status_msg() (drivers/infiniband/core/verbs.c wc_statuses[])
    ("nvme nvme3: SEND for CQE 0x000000001c2d3e4f failed with status transport retry counter exceeded (12)", "ib",
     "error"),
    ("nvme nvme3: MEMREG for CQE 0x000000001c2d3e4f failed with status memory management operation error (6)", "ib",
     "error"),
    # linux drivers/infiniband/ulp/srp/ib_srp.c: "failed %s status %s (%d) for CQE %p\n"
    ("scsi host7: ib_srp: failed RECV status WR flushed (5) for CQE 00000000deadbeef", "ib", "error"),
    # a datacenter Ethernet NIC's own link-down notice (RoCE and the node's fabric): linux
    # drivers/net/ethernet/broadcom/bnx2x/bnx2x_cmn.c bnx2x_link_report(): netdev_err(dev, "NIC Link is Down\n")
    ("bnx2x 0000:04:00.0 eno1: NIC Link is Down", "ib", "error"),
    # linux drivers/infiniband/core/mad.c: "Couldn't open %s port %u\n" (pr_err with the "ib_mad: " prefix)
    ("ib_mad: Couldn't open mlx5_2 port 1", "ib", "warning"),
    # ---- RDMA as jobs and tools print it (trust job)
    # open-mpi ompi/mca/pml/ucx/pml_ucx.c: PML_UCX_ERROR("ucp_ep_create(proc=%d) failed: %s", ...) and
    # "Failed to create UCP worker"
    ("[gpu12:04567] pml_ucx.c:423  Error: ucp_ep_create(proc=31) failed: Destination is unreachable", "ib", "error"),
    ("[gpu12:04567] pml_ucx.c:309  Error: Failed to create UCP worker", "ib", "error"),
    # open-mpi ompi/mca/osc/ucx/osc_ucx_component.c: OSC_UCX_ERROR("%s failed: %d", ...) ("osc_ucx_component.c:%d
    # Error: ...")
    ("[gpu12:04567] osc_ucx_component.c:372  Error: ucp_context_init failed: -3", "ib", "error"),
    # opa-psm2 ("PSM2 can't open hfi unit: %d (err=%d)") after its "%s.%d" host.pid prefix; psm_ep.c's endpoint text
    ("gpu12.4567PSM2 can't open hfi unit: 0 (err=23)", "ib", "error"),
    ("PSM2 was unable to open an endpoint. Please make sure that the network link is active on the node and the "
     "hardware is functioning.", "ib", "error"),
    # open-mpi ompi/mca/mtl/psm2/mtl_psm2_endpoint.c: "PSM2 returned unhandled/unknown connect error: %s"
    ("[gpu12:04567] Error: PSM2 returned unhandled/unknown connect error: Operation timed out", "ib", "error"),
    # Intel MPI's fabric selection: "ofi fabric is not available and fallback fabric is not enabled"
    ("MPI startup(): ofi fabric is not available and fallback fabric is not enabled", "ib", "error"),
    # rdma-core libibverbs/examples/devinfo.c: "IB device '%s' wasn't found\n", "Failed to query port %u props\n";
    # rdma-core libibnetdisc/internal.h IBND_ERROR: "%s:%d; " then ibnetdisc.c "can't open MAD port (%s:%d)\n"
    ("IB device 'mlx5_7' wasn't found", "ib", "warning"),
    ("Failed to query port 2 props", "ib", "warning"),
    ("src/ibnetdisc.c:784; can't open MAD port (mlx5_0:1)", "ib", "warning"),
    # rdma-core libibverbs/examples/rc_pingpong.c: "Couldn't get local LID\n", "can't read sgid of index %d\n";
    # linux-rdma/perftest src/*_bw.c: " Failed to exchange data between server and clients\n"
    ("Couldn't get local LID", "ib", "warning"),
    ("can't read sgid of index 3", "ib", "warning"),
    (" Failed to exchange data between server and clients", "ib", "warning"),
    # rdma-core libibverbs/examples/rc_pingpong.c: "poll CQ failed %d\n"
    ("poll CQ failed -5", "ib", "warning"),
    # libfabric src/log.c: "%s:%d:%ld:%s:%s:%s:%s():%d<%s> " then the message: any <error> line of a provider
    ("libfabric:4321:1712345678::efa:ep_ctrl:efa_rdm_ep_open():612<error> Unable to create rdm ep", "ib", "error"),
    # open-mpi opal/mca/btl/openib: BTL_ERROR(("error obtaining device attributes for %s errno says %s", ...));
    # mvapich2 ibv_channel_manager.c: "Got FATAL event %d\n"
    ("[gpu12][[4242,1],7][btl_openib_component.c:1671:init_one_device] error obtaining device attributes for mlx5_2 "
     "errno says Protocol not supported", "ib", "error"),
    ("[gpu12:mpi_rank_7][async_thread] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:1002: Got FATAL "
     "event 1", "ib", "error"),
    # open-mpi ompi/mca/bml/r2/help-mca-bml-r2.txt [unreachable proc]
    ("At least one pair of MPI processes are unable to reach each other for MPI communications.", "ib", "error"),
    # rdma-core librdmacm/cma.c: PFX "Fatal: unable to get RDMA device list\n" (PFX "librdmacm: "): every job prints
    # it on a node without RDMA devices, so it is the fabric's fact (info), not a warning
    ("librdmacm: Fatal: unable to get RDMA device list", "ib", "info"),
    # mellanox mstflint/MFT mlxlink's "Operational Info" and "Troubleshooting Info" blocks ("%-32s: %s"): a port
    # polling for a peer, and the tool's recommendation for it
    ("State                           : Polling", "ib", "warning"),
    ("Recommendation                  : Check the cable or replace it", "ib", "warning"),
    # ---- NCCL
    # nccl-tests src/common.h NCCLCHECK: "%s: Test NCCL failure %s:%d '%s / %s'\n" with ncclGetErrorString()
    ("gpu12: Test NCCL failure all_reduce.cu:44 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '",
     "nccl", "error"),
    # xla/service/gpu nccl_utils: "NCCL operation %s failed: %s" (the call with its arguments)
    ("INTERNAL: NCCL operation ncclAllReduce(send_buffer, recv_buffer, count, dtype, op, comm, stream) failed: "
     "internal error - please report this issue to the NCCL developers", "nccl", "error"),
    # tensorflow core/nccl: "NCCL: %s"; paddle platform/device/gpu/nccl_helper.h: "Nccl error, %s"
    ("Internal: NCCL: remote process exited or there was a network error", "nccl", "error"),
    ("ExternalError: Nccl error, invalid usage (run with NCCL_DEBUG=WARN for details)", "nccl", "error"),
    # nccl-tests src/common.cu: PRINT("# Out of bounds values : %d %s\n", errors, errors ? "FAILED" : "OK")
    ("# Out of bounds values : 96 FAILED", "nccl", "error"),
    # c10/util/Exception.cpp: "Exception raised from %s at %s:%d (most recent call first):" in ProcessGroupNCCL: the
    # trace's header, at info since round 13 (lead13_c10d_trace_notes: two collections' rules halves hold it as a
    # benign line of its log; the watchdog's timeout line above it is the error)
    ("Exception raised from checkTimeout at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:688 (most "
     "recent call first):", "nccl", "info"),
    # cupy cupy_backends/cuda/libs/nccl.pyx: NcclError("%s: %s" % (the NCCL_ERROR_* name, ncclGetErrorString()))
    ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: remote process exited or there was a network "
     "error", "nccl", "error"),
    # pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: "To avoid data inconsistency, we are taking the entire
    # process down." and "Received a dump signal due to a collective timeout from %s and we will try our best to dump
    # the debug info. ..."
    ("To avoid data inconsistency, we are taking the entire process down.", "nccl", "error"),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 6] Received a dump signal due to a collective timeout from  rank 2 and we "
     "will try our best to dump the debug info.", "nccl", "error"),
    # nccl-tests src/common.h CUDACHECK: "%s: Test CUDA failure %s:%d '%s'\n": a CUDA error of the job
    ("gpu12: Test CUDA failure common.cu:1057 'an illegal memory access was encountered'", "cuda", "error"),
    # ---- the GPU that did not come up: the continuation lines of open-gpu-kernel-modules kernel-open/nvidia/nv.c's
    # multi-line messages ("The NVIDIA GPU %04x:%02x:%02x.%x (PCI ID: %04x:%04x)\n" "installed in this system is not
    # supported by open\n" "nvidia.ko because it does not include the required GPU\n" "System Processor (GSP).\n";
    # "...not supported by the\n" "NVIDIA %s driver release.\n")
    ("NVRM: The NVIDIA GPU 0000:c1:00.0 (PCI ID: 10de:1db4)", "gpu_init", "error"),
    ("NVRM: nvidia.ko because it does not include the required GPU", "gpu_init", "error"),
    ("NVRM: System Processor (GSP).", "gpu_init", "error"),
    ("NVRM: NVIDIA 570.86.15 driver release.", "gpu_init", "error"),
    # kernel-open/nvidia/nv-pci.c: "This is a 64-bit BAR mapped above 4GB by the system\n" "BIOS or the %s kernel,
    # but the PCI bridge\n" "immediately upstream of this GPU does not define\n"
    # "a matching prefetchable memory window.\n"
    ("NVRM: BIOS or the Linux kernel, but the PCI bridge", "gpu_init", "error"),
    ("NVRM: a matching prefetchable memory window.", "gpu_init", "error"),
    # kernel-open/nvidia/nv.c: "request_mem_region failed for %lluM @ 0x%llx. This can\n" "occur when a driver such as
    # %s is loaded and claims\n" "ownership of the device's registers.\n"
    ("NVRM: occur when a driver such as nouveau is loaded and claims", "gpu_init", "error"),
    # kernel-open/nvidia/nv.c: "This can occur when another driver was loaded and \n" "obtained ownership of the
    # NVIDIA device(s).\n" "Try unloading the conflicting kernel module (and/or\n" ... "again.\n"; the GPU's audio
    # function: "You may want to verify that no audio driver" ... "has it and is not sharing it.\n"
    ("NVRM: This can occur when another driver was loaded and ", "gpu_init", "error"),
    ("NVRM: again.", "gpu_init", "error"),
    ("NVRM: has it and is not sharing it.", "gpu_init", "error"),
    # src/nvidia/arch/nvalloc/unix/src/osinit.c (NV_DEV_PRINTF's "NVRM: GPU %04x:%02x:%02x.%x: "): "%s failed, bailing
    # out of RmInitAdapter", "osVerifySystemEnvironment failed, bailing!\n", "*** Cannot initialize the device\n",
    # "Cannot configure the device for DMA\n"
    ("NVRM: GPU 0000:41:00.0: RmInitX86Emu failed, bailing out of RmInitAdapter", "gpu_init", "error"),
    ("NVRM: GPU 0000:41:00.0: osVerifySystemEnvironment failed, bailing!", "gpu_init", "error"),
    ("NVRM: GPU 0000:41:00.0: *** Cannot initialize the device", "gpu_init", "error"),
    ("NVRM: GPU 0000:41:00.0: Cannot configure the device for DMA", "gpu_init", "error"),
    # kernel-open/nvidia/nv-pci.c: "pci_enable_device failed, aborting\n", "Device start failed for %04x:%02x:%02x.%x
    # (ret=%d)\n", the resizable BAR ("BAR resizing failed with error `%d`.\n", "FATAL: Failed to re-allocate
    # BAR1.\n"); kernel-open/nvidia/nv.c: "No NVIDIA PCI devices found.\n"
    ("NVRM: pci_enable_device failed, aborting", "gpu_init", "error"),
    ("NVRM: Device start failed for 0000:41:00.0 (ret=-19)", "gpu_init", "error"),
    ("NVRM: BAR resizing failed with error `-28`.", "gpu_init", "error"),
    ("NVRM: FATAL: Failed to re-allocate BAR1.", "gpu_init", "error"),
    ("NVRM: No NVIDIA PCI devices found.", "gpu_init", "error"),
    # kernel-open/nvidia/nv-pci.c: "failed to wait for bar firewall to lower\n"; "Aborting probe for VF
    # %04x:%02x:%02x.%x since IOMMU is not present on the system.\n"
    ("NVRM: failed to wait for bar firewall to lower", "gpu_init", "error"),
    ("NVRM: Aborting probe for VF 0000:41:00.4 since IOMMU is not present on the system.", "gpu_init", "error"),
    # the other GPU drivers: linux drivers/gpu/drm/nouveau/nvkm/core/subdev.c nvkm_error(subdev, "init failed, %d\n");
    # nvkm/engine/device/base.c "unknown chipset (%08x)\n"; drivers/gpu/drm/amd/amdgpu/amdgpu_device.c "%s of IP
    # block <%s> failed %d\n" (DRM_ERROR's "[drm:%ps] *ERROR* "), amdgpu_kms.c "Fatal error during GPU init\n"
    ("nouveau 0000:65:00.0: gr: init failed, -110", "gpu_init", "error"),
    ("nouveau 0000:65:00.0: unknown chipset (1b2000a1)", "gpu_init", "error"),
    ("[drm:amdgpu_device_ip_init [amdgpu]] *ERROR* sw_init of IP block <psp> failed -19", "gpu_init", "error"),
    ("amdgpu 0000:c3:00.0: amdgpu: Fatal error during GPU init", "gpu_init", "error"),
    ("amdgpu: probe of 0000:c3:00.0 failed with error -19", "gpu_init", "error"),
    # nvidia-smi: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." as a word processor
    # pastes it (a typographic apostrophe)
    ("NVIDIA-SMI has failed because it couldn\u2019t communicate with the NVIDIA driver.", "gpu_init", "error"),
    # the NVIDIA X driver in Xorg.0.log: "(EE) NVIDIA(GPU-%d): Failed to initialize the NVIDIA graphics device %s.",
    # "(EE) NVIDIA(%d): Failing initialization of X screen %d"; Xorg's loader: "(EE) Failed to load module \"%s\" (%s)"
    ("(EE) NVIDIA(GPU-1): Failed to initialize the NVIDIA graphics device PCI:65:0:0.", "gpu_init", "error"),
    ("(EE) NVIDIA(1): Failing initialization of X screen 1", "gpu_init", "error"),
    ("(EE) Failed to load module \"nvidia\" (module does not exist, 0)", "gpu_init", "error"),
    # kmod's modprobe: "could not insert '%s': %s\n"
    ("modprobe: ERROR: could not insert 'nvidia_uvm': No such device", "gpu_init", "error"),
    # NVIDIA/nvidia-installer kernel.c: ui_error(op, "Unable to find the kernel source tree for the currently running
    # kernel. ...") and install-from-cwd.c "Installation has failed.  Please see the file '%s' for details. ..."
    ("ERROR: Unable to find the kernel source tree for the currently running kernel.  Please make sure you have "
     "installed the kernel source files for your kernel", "gpu_init", "error"),
    ("ERROR: Installation has failed.  Please see the file '/tmp/nvidia-installer.log' for details.", "gpu_init",
     "error"),
    # NVIDIA/nvidia-persistenced nvidia-persistenced.c: syslog_device(..., LOG_ERR, "failed to open.") as "device
    # %04x:%02x:%02x.%x - %s"; syslog(LOG_ERR, "Unable to find any NVIDIA devices")
    ("Mar 05 08:01:02 gpu12 nvidia-persistenced[2281]: device 0000:c1:00.0 - failed to open.", "gpu_init", "warning"),
    ("nvidia-persistenced[2281]: Unable to find any NVIDIA devices", "gpu_init", "warning"),
    # NVIDIA/k8s-device-plugin: klog.Errorf("Incompatible strategy detected %v"), klog.Error("If this is a GPU node,
    # did you configure the NVIDIA Container Toolkit?") (glog's "E%m%d hh:mm:ss.uuuuuu threadid file:line] " head)
    ("E0305 08:01:02.000003       1 factory.go:112] Incompatible strategy detected auto", "gpu_init", "warning"),
    ("E0305 08:01:02.000004       1 factory.go:113] If this is a GPU node, did you configure the NVIDIA Container "
     "Toolkit?", "gpu_init", "warning"),
    # ---- PCIe
    # linux drivers/net/ethernet/mellanox/mlx4/main.c mlx4_check_pcie_caps(): "PCIe BW is different than device's
    # capability\n" (then the speed and width lines)
    ("mlx4_core 0000:82:00.0: PCIe BW is different than device's capability", "pcie", "warning"),
    # linux drivers/net/ethernet/intel/ixgbe/ixgbe_main.c ixgbe_check_minimum_link(): "For optimal performance, at
    # least %dGT/s of bandwidth is required.\n", "A slot with more lanes and/or higher speed is suggested.\n"
    ("ixgbe 0000:05:00.1: For optimal performance, at least 20GT/s of bandwidth is required.", "pcie", "warning"),
    ("ixgbe 0000:05:00.1: A slot with more lanes and/or higher speed is suggested.", "pcie", "warning"),
    # linux drivers/net/ethernet/intel/i40e/i40e_main.c: "Please move the device to a different PCI-e link with more
    # lanes and/or higher transfer rate.\n"
    ("i40e 0000:5e:00.0: Please move the device to a different PCI-e link with more lanes and/or higher transfer "
     "rate.", "pcie", "warning"),
    # a device driver's own "PCIe link down" (the device left the bus; drivers/nvme/host/pci.c and NIC drivers)
    ("nvme 0000:41:00.0: PCIe link down", "pcie", "error"),
    ("bnxt_en 0000:3b:00.1 enp59s0f1np1: PCI-E link down", "pcie", "error"),
    # DCGM dcgmlib/dcgm_errors.h: DCGM_FR_PCIE_H_REPLAY_VIOLATION_MSG "GPU %u host-side PCIe replay violation, see
    # dmesg for more information"; the diagnostic's PCIe plugin, DCGM_FR_LOW_BANDWIDTH_MSG "Bandwidth of GPU %u in
    # direction %s of %.2f did not exceed minimum required bandwidth of %.2f." (tool output: trust syslog)
    ("GPU 5 host-side PCIe replay violation, see dmesg for more information", "pcie", "warning"),
    ("Bandwidth of GPU 2 in direction h2d of 6.21 did not exceed minimum required bandwidth of 20.00.", "pcie",
     "warning"),
    # linux drivers/pci/of.c: dev_warn(dev, "non-prefetchable memory resource required\n") (a host controller)
    ("rcar-pcie fe000000.pcie: non-prefetchable memory resource required", "pcie", "warning"),
    # ---- Lustre and GPFS
    # lustre libcfs's debug log ("%08x:%08x:%u.%u%s:%ld.%06ld:%u:%u:%u:(%s:%d:%s()) ") with lustre_net.h DEBUG_REQ's
    # "@@@ " and lustre_dlm.h LDLM_DEBUG's "### "; the console's "%u:%u:(%s:%d:%s()) " without the "Lustre:" tag
    ("00000100:00020000:12.0:1712345678.901234:0:4321:0:(client.c:2367:ptlrpc_expire_one_request()) @@@ Request "
     "sent has timed out for slow reply: [sent 1712345600/real 1712345600]", "nfs", "warning"),
    ("4321:0:(ldlm_lockd.c:261:expired_lock_main()) ### lock callback timer expired after 150s: evicting client at "
     "10.1.2.3@o2ib", "nfs", "warning"),
    # IBM Storage Scale: every "[E]" or "[X]" message of mmfs (its message ids "6027-NNNN [E] ...")
    ("mmfs: [E] Remote mounts are not enabled within this cluster.", "nfs", "warning"),
    ("GPFS: 6027-2700 [E] A node join was rejected.", "nfs", "warning"),
    # ---- kernel WARN/BUG splats: linux kernel/panic.c __warn() "WARNING: CPU: %d PID: %d at %s:%d %pS\n" (2.6-3.x
    # "WARNING: at %s:%d %pS()\n"), lib/bug.c "kernel BUG at %s:%d!\n", the oops's "RIP: %04lx:%pS" (its module)
    ("WARNING: CPU: 17 PID: 4411 at drivers/infiniband/core/verbs.c:2118 ib_dealloc_pd_user+0x55/0x70 [ib_core]",
     "ib", "warning"),
    ("WARNING: at drivers/net/ethernet/mellanox/mlx5/core/cmd.c:1004 mlx5_cmd_exec+0x2c/0x40 [mlx5_core]()", "ib",
     "warning"),
    ("kernel BUG at net/sunrpc/sched.c:695!", "nfs", "warning"),
    ("RIP: 0010:ldlm_lock_decref_internal+0x51/0x590 [ptlrpc]", "nfs", "warning"),
    ("RIP: 0010:mlx5e_poll_tx_cq+0x21c/0x690 [mlx5_core]", "ib", "warning"),
    ("WARNING: CPU: 5 PID: 312 at drivers/pci/pci.c:2225 pci_disable_device+0x96/0xb0", "pcie", "warning"),
    # the same splats in a GPU driver's code or module (drivers/gpu; nvidia.ko's symbols are its own _nvNNNNNNrm) and
    # in the block layer's or a storage driver's
    ("WARNING: CPU: 7 PID: 902 at drivers/gpu/drm/amd/amdgpu/amdgpu_irq.c:631 amdgpu_irq_put+0xa0/0xc0 [amdgpu]",
     "gpu_init", "warning"),
    ("kernel BUG at drivers/gpu/drm/nouveau/nvkm/engine/fifo/chan.c:311!", "gpu_init", "warning"),
    ("RIP: 0010:_nv044207rm+0x2e/0x70 [nvidia]", "gpu_init", "warning"),
    ("RIP: 0010:uvm_va_block_make_resident+0x4c/0x110 [nvidia_uvm]", "gpu_init", "warning"),
    ("WARNING: CPU: 12 PID: 0 at drivers/nvme/host/pci.c:1331 nvme_timeout+0x2b5/0x340 [nvme]", "disk", "warning"),
    ("kernel BUG at block/blk-mq.c:1055!", "disk", "warning"),
    ("RIP: 0010:_base_process_reply_queue+0x12c/0x1020 [mpt3sas]", "disk", "warning"),
    ("RIP: 0010:dm_softirq_done+0x3a/0x120 [dm_mod]", "disk", "warning"),
    # ---- NFS and nfs-utils
    # linux fs/nfs/blocklayout/dev.c: "pNFS: failed to open device %pg (%ld)\n"
    ("pNFS: failed to open device /dev/sdq (-6)", "nfs", "warning"),
    # linux fs/nfs/nfs4super.c: dfprintk(MOUNT, "<-- nfs4_try_mount() = %d%s\n", error, error != 0 ? " [error]" : "")
    ("<-- nfs4_try_mount() = -110 [error]", "nfs", "warning"),
    # linux fs/nfs/super.c / fs_context.c: "NFS: mount program didn't pass remote address\n", "NFS: bad mount option
    # value specified: %s\n"
    ("NFS: mount program didn't pass remote address", "nfs", "warning"),
    ("NFS: bad mount option value specified: vers=4.7", "nfs", "warning"),
    # lustre/ldlm/ldlm_lib.c / ptlrpc: "%s: haven't heard from client %s (at %s) in %lld seconds. I think it's dead,
    # and I am evicting it. exp %p, cur %lld expire %lld last %lld\n"
    ("Lustre: scratch-MDT0000: haven't heard from client 9f2e-77 (at 10.2.0.7@o2ib) in 227 seconds. I think it's "
     "dead, and I am evicting it. exp ffff9a1b, cur 1712345678 expire 1712345528 last 1712345451", "nfs", "warning"),
    # linux fs/nfs/dir.c: "NFS: directory %pD2 contains a readdir loop.Please contact your server vendor. ..."
    ("NFS: directory proj/data contains a readdir loop.Please contact your server vendor.  The file: x.h5 has "
     "duplicate cookie 123456", "nfs", "warning"),
    # libtirpc src/clnt_perror.c rpc_errlist[] ("RPC: Timed out", "RPC: Program not registered") after the tool's own
    # clnt_spcreateerror() prefix
    ("showmount: clnt_create: RPC: Program not registered", "nfs", "warning"),
    ("rpcinfo: can't contact rpcbind: RPC: Timed out", "nfs", "warning"),
    # nfs-utils utils/nfsdctl/nfsdctl.c: xlog(L_ERROR, "lockd configuration failure"); utils/exportfs/exportfs.c:
    # "can't open %s for %sing" (under the unit's shell or the tool's own name)
    ("sh[2211]: nfsdctl: lockd configuration failure", "nfs", "warning"),
    ("exportfs: can't open /etc/exports.d/scratch.exports for reading", "nfs", "warning"),
]


BENIGN_TWINS = [
    # a WARN in the DRM core's shmem helper: the BMC's ast/mgag200 console on a GPU server (the ninth sweep's Lambda and
    # RTX bug reports hold it at every boot), and i915's display WARNs: splat_gpu reads the compute drivers' only
    "WARNING: CPU: 20 PID: 1851 at drivers/gpu/drm/drm_gem_shmem_helper.c:304 drm_gem_shmem_vmap_locked+0x1a8/0x1d0 "
    "[drm_shmem_helper]",
    "WARNING: CPU: 3 PID: 410 at drivers/gpu/drm/i915/display/intel_display.c:1452 "
    "intel_atomic_commit_tail+0x2f1/0x300 [i915]",
    # mlx5_core events.c at boot on a healthy slot: "PCIe slot advertised sufficient power (%uW).\n"
    "mlx5_core 0000:b1:00.0: mlx5_pcie_event:301:(pid 0): PCIe slot advertised sufficient power (75W).",
    # the error flow's end marker alone (health.c "end") is no failure of its own
    "mlx5_core 0000:af:00.0: mlx5_error_sw_reset:256:(pid 12): end",
    # iser's qp event with a healthy event string (ib_events[]: "communication established")
    "iser: iser_qp_event_callback: qp event communication established (1)",
    # ixgbe's bandwidth notice before it decides (printed on every probe)
    "ixgbe 0000:03:00.0: PCI Express bandwidth of 32GT/s available",
    "ixgbe 0000:03:00.0: (Speed:8.0GT/s, Width: x4, Encoding Loss:<2%)",
    "ice 0000:17:00.0: PCI-Express: Speed 16.0GT/s Width x16",
    # a healthy port and a fabric provider chosen
    "mlx5_0 port 1 ==> ib0 (Up)",
    "[0] MPI startup(): libfabric provider: psm3",
    # nfs4_try_mount() that succeeded; nfsdctl starting
    "<-- nfs4_try_mount() = 0",
    # sunrpc's own boot notes (net/sunrpc/xprtsock.c "RPC: Registered %s transport module.")
    "RPC: Registered tcp transport module.",
    "sh[1603]: nfsdctl: nfsdctl started",
    # nfs-utils utils/statd: "Failed to read %s: %m" with errno 0 at a client's first boot; rpc.gssd without a keytab
    "rpc.statd[1023]: Failed to read /var/lib/nfs/state: Success",
    "rpc.gssd[811]: ERROR: gssd_refresh_krb5_machine_credential: no usable keytab entry found in keytab "
    "/etc/krb5.keytab for connection with host fs01",
    # NCCL's INFO lines and torch's W-level notices
    "gpu01:1234:1234 [0] NCCL INFO NET/IB : No device found.",
    "[W1030 10:00:00.123 ProcessGroupNCCL.cpp:1168] Warning: NCCL_BLOCKING_WAIT is deprecated",
    # the driver's banner and a GPU found at its address
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan 22 21:32:04 UTC 2025",
    "nvidia 0000:01:00.0: enabling device (0000 -> 0003)",
    # nvidia-persistenced's own notes on a healthy GPU
    "nvidia-persistenced[2281]: device 0000:c1:00.0 - Enabled UVM Persistence mode.",
    "nvidia-persistenced[2281]: Started (2281)",
    # mlxlink on a healthy port; the device plugin that found its library
    "State                           : Active",
    "Recommendation                  : No issue was observed.",
    # other tools' "State" fields are no IB port (mlxlink pads its field names to 32 characters)
    "SR-IOV State: Disabled",
    "Power State : Sleep",
    "I0305 08:01:02.000001       1 factory.go:104] Detected NVML platform: found NVML library",
    # nccl-tests' data check that passed; Lustre's debug log at a trace level; GPFS's informational messages
    "# Out of bounds values : 0 OK",
    "00000100:00000001:5.0:1712345678.901234:0:4321:0:(client.c:1234:ptlrpc_check_set()) Process entered",
    "GPFS: 6027-643 [I] Node 10.0.0.5 (node5) completed take over for node6.",
    # libfabric's info lines
    "libfabric:4321:1712345678::core:core:ofi_hmem_init():421<info> Hmem iface FI_HMEM_CUDA not supported",
    # boot notes that hold "couldn't"/"could not"/"can't" but are no fault: fs/ext4/super.c "couldn't mount as ext3
    # due to feature incompatibilities" (ext4 probing an ext4 disk as ext3), drivers/pci/pcie/aspm.c pci_info
    # "ASPM: Could not configure common clock", drivers/pci/probe.c pci_info "%sreg 0x%x: invalid BAR (can't
    # size)", drivers/pci/setup-res.c pci_info "can't claim %s %d %pR: no compatible bridge window"
    "EXT4-fs (sda1): couldn't mount as ext3 due to feature incompatibilities",
    "pci 0000:00:01.0: ASPM: Could not configure common clock",
    "pci 0000:00:00.0: [Firmware Bug]: reg 0x10: invalid BAR (can't size)",
    "pci 0000:00:1f.2: can't claim BAR 5 [mem 0xfe000000-0xfe0007ff]: no compatible bridge window",
    # a splat in another subsystem's code, an oops in the core kernel: no fabric, filesystem or PCIe finding
    "RIP: 0010:native_safe_halt+0xe/0x10",
    # nouveau's memory report at every boot
    "nouveau 0000:01:00.0: DRM: VRAM: 4096 MiB",
    # osinit.c's success and nv-pci.c's resizable BAR at work
    "NVRM: GPU 0000:41:00.0: RmInitAdapter succeeded!",
    "NVRM: 0000:41:00.0: Attempting to resize BAR1.",
    # a NIC's link that came up (bnx2x: "NIC Link is Up, %d Mbps %s duplex")
    "bnx2x 0000:04:00.0 eno1: NIC Link is Up, 10000 Mbps full duplex, Flow control: ON - receive & transmit",
    # a hotplug slot whose link came back
    "pcieport 0000:00:1c.0: pciehp: Slot(0): Link Up",
]


globals().update(table_tests(found=FAULTS, twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


@pytest.mark.parametrize("line", [
    "iser: iser_qp_event_callback: qp event QP fatal error (1)",
    "nvme nvme3: SEND for CQE 0x000000001c2d3e4f failed with status transport retry counter exceeded (12)",
    "[gpu12:04567] pml_ucx.c:423  Error: ucp_ep_create(proc=31) failed: Destination is unreachable",
    "gpu12.4567PSM2 can't open hfi unit: 0 (err=23)",
    "gpu12: Test NCCL failure all_reduce.cu:44 'unhandled system error / '",
    "sh[2211]: nfsdctl: lockd configuration failure",
    # a job's process named like a kernel subsystem, writing the status strings: still never a node fault
    "Jan 11 09:52:01 gpu12 mlx5_core[4242]: iser: qp event device fatal error (8)",
])
def test_text_a_job_or_daemon_controls_never_drains(line: str) -> None:
    findings = diagnose(line.encode())
    assert findings
    assert all(f.trust in ("job", "syslog") for f in findings), [(f.rule, f.trust) for f in findings]
    assert not any(is_node_fault(f, None) for f in findings)


@pytest.mark.parametrize("line", [
    # the subsystem table knows ib_srpt and ib_isert (no colon after the module's name) and iSER's "iser:" tag: linux
    # drivers/infiniband/ulp/srpt/ib_srpt.c "disabling MAD processing failed.\n"; drivers/infiniband/ulp/iser
    # iser_initiator.c iser_err("failed allocating rx descriptors / data buffers\n") (iser_err: "iser: %s: ")
    "ib_srpt disabling MAD processing failed.",
    "iser: iser_alloc_rx_descriptors: failed allocating rx descriptors / data buffers",
    # linux drivers/infiniband/sw/siw/siw_main.c: pr_warn("siw: device registration error %d\n", rv)
    "siw: device registration error -17",
])
def test_an_rdma_modules_unknown_failure_is_the_fallbacks_ib_warning(line: str) -> None:
    findings = diagnose(line.encode())
    assert [(f.kind, f.severity, bool(f.details.get("unrecognised"))) for f in findings] == [("ib", "warning", True)]
    assert not is_node_fault(findings[0], None)


@pytest.mark.parametrize("line", [
    # SoC PCIe host controllers ("<soc>-pcie <address>.pcie: ") are the pcie subsystem's: drivers/pci/controller/dwc
    # pcie-designware-host.c "Failed to initialize host\n"; pcie-tegra194.c "Link didn't transition to L2 state\n"
    "dw-pcie 1c00000.pcie: Failed to initialize host",
    "tegra194-pcie 14180000.pcie: Link didn't transition to L2 state, timeout",
])
def test_a_pcie_controllers_unknown_failure_is_the_fallbacks_pcie_warning(line: str) -> None:
    findings = diagnose(line.encode())
    assert [(f.kind, f.severity, bool(f.details.get("unrecognised"))) for f in findings] == [("pcie", "warning", True)]
