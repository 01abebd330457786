"""Families read from their printers after round10a.tsv's rules half showed them (its test half only scored): each
line is found in other values too, its benign twin stays below warning, and job or tool output never drains."""

from __future__ import annotations

import pytest

from .rule_cases import below_warning, found_as, never_drains

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
    ("/opt/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py:131: UserWarning: torch.cuda.amp.GradScaler is "
     "enabled, but CUDA is not available.  Disabling.", "cuda", "warning"),
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
    ("<PSP:r0000012:connection to (10.1.2.3,4711,0x2,r0000013) (type:ofed,state:open) : write : Connection reset by peer>",
     "ib", "warning"),
]


@pytest.mark.parametrize(("line", "kind", "severity"), FOUND)
def test_a_printers_line_is_found(line: str, kind: str, severity: str) -> None:
    found_as(line, kind, severity)


@pytest.mark.parametrize("line", [line for line, _, _ in FOUND])
def test_a_jobs_or_a_tools_line_never_drains(line: str) -> None:
    never_drains(line)


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


@pytest.mark.parametrize("line", BENIGN)
def test_a_printers_benign_twin_stays_below_warning(line: str) -> None:
    below_warning(line)


def test_an_informational_async_event_stays_the_collective_librarys() -> None:
    """Only the HCA's fatal events are the fabric's: an SM's client reregistration stays nccl_net's."""
    found_as("gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration",
             "nccl", "error")
