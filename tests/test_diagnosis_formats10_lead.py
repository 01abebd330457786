"""Families read from their printers after round10a.tsv's and round10b.tsv's rules halves showed them (their test
halves only scored): each line is found in other values too, its benign twin stays below warning, job or tool output
never drains, and the kernel's lines are only investigated."""

from __future__ import annotations

from .rule_cases import found_as, reaches_fallback, table_tests

FOUND = [
    # CUDA's failures in a program's mixed-case words
    ("Cuda error in file 'src/kernels/reduce.cu' in line 212 : out of memory.", "cuda", "error"),
    ("FATAL: Cuda runtime error 2 in call at file src/alloc.cpp line 88", "cuda", "error"),
    # a CUDA call's non-zero status as a number
    ("cudaMalloc returned 2 -> out of memory", "cuda", "error"),
    ("ERROR: cuMemAlloc_v2(&ptr, 1048576) returned error 2", "cuda", "error"),
    ("Out of memory in cuMemAlloc(&device_pointer, size) (device/cuda/device_impl.cpp:512)", "cuda", "error"),
    ("Return value 999 from 'cudaStreamCreate(&stream)'.", "cuda", "error"),
    # CUDA not there for a GPU framework
    # (info: a CPU-only run prints it too; the fact is recorded with its kind, no alarm)
    ("/opt/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py:131: UserWarning: torch.cuda.amp.GradScaler is "
     "enabled, but CUDA is not available.  Disabling.", "cuda", "info"),
    # NCCL's header without its name
    ("gpu-a17:40211:40377 [5] transport/net_socket.cc:498 WARN NET/Socket : peer 10.1.2.3<43211> shutdown", "nccl",
     "error"),
    # the HCA's fatal async events as NCCL's IB transport relays them: the fabric's failure
    ("gpu7:181:210 [0] transport/net_ib.cc:107 NCCL WARN NET/IB : Got async event : local catastrophic error", "ib",
     "error"),
    ("NCCL WARN NET/IBext : Got async event : local work queue catastrophic error", "ib", "error"),
    # NVSHMEM's InfiniBand transports
    ("/opt/nvshmem/src/modules/transport/ibrc/ibrc.cpp:611: non-zero status: 7 ibv_modify_qp failed", "ib", "error"),
    # the GPU container runtime or the driver's libraries missing
    ("docker: Error response from daemon: unknown or invalid runtime name: nvidia.", "gpu_init", "warning"),
    ("[WARN] Could not find any NVIDIA libraries on this host!", "gpu_init", "warning"),
    # the NVIDIA module's DKMS build failing
    ("make[3]: *** [/usr/src/linux-headers-6.8.0-45-generic/scripts/Makefile.build:243: "
     "/var/lib/dkms/nvidia-srv/550.90.07/build/nvidia/nv.o] Error 1", "gpu_init", "warning"),
    # mount failing on an NFS source
    ("mount.nfs: mounting nas01:/export/scratch on /scratch failed, reason given by server: No such file or directory",
     "nfs", "warning"),
    # EIO as a job or a copy tool reports it
    ("OSError: [Errno 5] Input/output error: '/lustre/proj/ckpt/step_4000/model.pt'", "nfs", "warning"),
    ('rsync: [sender] read errors mapping "/nfs/home/u1/data.h5": Input/output error (5)', "nfs", "warning"),
    # ParaStation MPI's fabric plugins
    ("<PSP:r0000012:ucp:ucp_ep_create() failed: Destination is unreachable>", "ib", "error"),   # ucx_job_error's
    ("<PSP:r0000012:connection to (10.1.2.3,4711,0x2,r0000013) (type:ofed,state:open) : write : Connection reset by "
     "peer>", "ib", "warning"),
]


BENIGN = [
    "gpu7:181:210 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.2.3<0>",
    "Kokkos::Cuda::initialize WARNING: Cuda is allocating into UVMSpace by default",
    "cudaGetDeviceCount returned 0 devices",
    "cudaMemcpy returned 0",
    "Return value 0 from 'cudaMallocHost(&pinnedChunk, n)'.",
    "gpu-a17:40211:40377 [5] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>",
    "gpu7:181:181 [0] NVSHMEM INFO Using transport ibrc on device mlx5_0 port 1",
    "docker: using runtime nvidia for container 4f2a",
    "make[2]: Leaving directory '/var/lib/dkms/nvidia/550.90.07/build'",
    "OSError: [Errno 28] No space left on device: '/tmp/x'",
    "mount.nfs: trying text-based options 'vers=4.2,addr=10.1.2.3,clientaddr=10.1.2.4'",
    "<PSP:r0000012:connection to (10.1.2.3,4711,0x2,r0000013) (type:openib,state:open)>",
]


def test_an_informational_async_event_stays_the_collective_librarys() -> None:
    """Only the HCA's fatal events are the fabric's: an SM's client reregistration stays nccl_net's."""
    found_as("gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration",
             "nccl", "error")


# ---- round10b.tsv's rules half: the kernel's own lines (never drained on: warning, investigate)
KERNEL_FOUND = [
    # the SMB/CIFS client's error level, SMB Direct included
    ("[ 3130.975013] CIFS: VFS: \\\\fs01 Send error in SessSetup = -13", "nfs", "warning"),
    ("[79912.177783] CIFS VFS: _smbd_get_connection:1740 rdma_connect failed port=445", "nfs", "warning"),
    ("[21838.320247] CIFS: VFS: sign fail cmd 0x8 message id 0x1965e", "nfs", "warning"),
    # NVMe over Fabrics' host refused or reconnecting
    ("[30382.257058] nvme nvme3: Connect Invalid Data Parameter, cntlid: 1", "disk", "warning"),
    ("[30371.808113] nvme nvme0: Reconnecting in 10 seconds...", "disk", "warning"),
    # Lustre's assertion without the blank after the tag
    ("kernel: LustreError:(osc_request.c:1011:osc_init_grant()) LBUG", "nfs", "error"),
]


FALLBACK = [
    # the other GPU drivers' prefixes (nouveau on a PCI GPU and on a Tegra, amdgpu): gpu_init
    ("[    0.484470] nouveau 0000:01:00.0: DRM-master: Device allocation failed: -5", "gpu_init"),
    ("[ 34.438145] nouveau 57000000.gpu: pmu: timeout waiting for queue ready", "gpu_init"),
    ("[94869.390335] amdgpu 0000:03:00.0: amdgpu: RAP TA initialize fail (0) status -1.", "gpu_init"),
    # the shared filesystem's other clients and servers: CIFS, ksmbd, rbd
    ("[ 3594.016795] ksmbd: smb_direct: Send error. status='WR flushed (5)', opcode=0", "nfs"),
    ("[  406.733601] rbd: rbd0: failed to blocklist client3363889: -13", "nfs"),
    # the NVMe target and Fibre Channel HBAs: disk
    ("[  552.633034] nvmet: ctrl 2 fatal error occurred!", "disk"),
    ("[  211.080240] lpfc 0000:47:00.3: 1:2505 EQ_DESTROY mailbox failed", "disk"),
]


KERNEL_BENIGN = [
    # an interface nobody brought up (no UP flag, qdisc noop)
    "    ib4: <BROADCAST,MULTICAST> mtu 4092 qdisc noop state DOWN mode DEFAULT group default qlen 256",
    "5: ib1: <BROADCAST,MULTICAST> mtu 2044 qdisc noop state DOWN mode DEFAULT group default qlen 256",
    # amdgpu's notes with a failure word
    "[ 8812.004113] amdgpu 0000:c1:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered",
    "[ 8812.004113] amdgpu 0000:c1:00.0: amdgpu: 0 correctable hardware errors detected in gfx block",
    # the CIFS client's notes
    "[  12.000001] CIFS: VFS: Autodisabling the use of server inode numbers on \\\\fs01\\scratch",
    "[  12.000001] CIFS: Attempting to mount \\\\fs01\\scratch",
    "[   3.141592] nouveau 0000:01:00.0: DRM: allocated 1920x1080 fb: 0x200000, bo 0000000012345678",
]


def test_an_interface_up_without_carrier_is_still_a_link_down() -> None:
    found_as("4: ib0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 2044 qdisc mq state DOWN mode DEFAULT group default "
             "qlen 256", "ib", "error")


# the other GPU drivers' display core and a process's own submission, behind the same prefixes: no fallback finding
# (whole-log sweeps 2 and 3: healthy desktops); an engine that failed to resume is still one
TWIN_LINES = [
    "[   44.995254] amdgpu 0000:6c:00.0: [drm] REG_WAIT timeout 1us * 100000 tries - optc1_wait_for_state line:839",
    "[    8.310091] amdgpu 0000:6d:00.0: [drm] Cannot find any crtc or sizes",
    "[19599.625321] [drm:amdgpu_cs_ioctl [amdgpu]] *ERROR* Failed to initialize parser -125!",
    "[    3.672794] radeon 0000:01:05.0: registered panic notifier",
]


globals().update(table_tests(other=FOUND, kernel_evidence=KERNEL_FOUND, twins=[*BENIGN, *KERNEL_BENIGN, *TWIN_LINES],
                             fallback=FALLBACK))


def test_a_gpu_engine_that_failed_to_resume_reaches_the_fallback() -> None:
    reaches_fallback("Jan 30 09:37:24 homeserver kernel: radeon 0000:0a:00.0: failed VCE resume (-110).", "gpu_init")
