"""Benign lines of real public logs that once raised a warning (found by diagnosing every line of loghub's 2k-line
samples, github.com/logpai/loghub at dd61d09, outside the field corpus): each stays below warning, and its
filesystem twin (the same errno with a path) is still found."""

from __future__ import annotations

import pytest

from .rule_cases import below_warning, found_as

LOGHUB = "https://github.com/logpai/loghub/blob/dd61d09/Linux/Linux_2k.log"  # the first line of BENIGN

# ENOTCONN from a socket (ftpd's getpeername), not from a mount
BENIGN = [
    "Jul 25 23:23:13 combo ftpd[26463]: getpeername (ftpd): Transport endpoint is not connected",
    "OSError: [Errno 107] Transport endpoint is not connected",
]
FILESYSTEM = [
    "ls: cannot access '/mnt/beegfs': Transport endpoint is not connected",
    "OSError: [Errno 107] Transport endpoint is not connected: '/scratch/run1/ckpt.pt'",
]


@pytest.mark.parametrize("line", BENIGN)
def test_a_sockets_enotconn_is_no_filesystem_finding(line: str) -> None:
    below_warning(line)


@pytest.mark.parametrize("line", FILESYSTEM)
def test_a_mounts_enotconn_is_still_the_shared_filesystem(line: str) -> None:
    found_as(line, "nfs", "warning")


@pytest.mark.parametrize("line", ["\udc80 NCCL WARN Call to ibv_create_qp failed", "UCX  ERROR \ud800 failed"])
def test_a_lone_surrogate_in_job_output_is_no_traceback(line: str) -> None:
    from slurmtools.diagnosis import diagnose_job_output

    found = diagnose_job_output([line, "RuntimeError: CUDA error: an illegal memory access was encountered"])
    assert "cuda" in {f.kind for f in found}          # the lines after it are still read


def test_nvidia_drm_that_cannot_allocate_its_device_is_gpu_init_but_modeset_ownership_is_benign() -> None:
    # nvidia-drm's probe without a working GPU (rules7-gpu) against a desktop's second DRM master (the sweep's
    # public dmesg of a working Pop!_OS machine): the two printers' lines differ only in what failed
    found_as("[drm:nv_drm_master_set [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] Failed to allocate"
             " NvKmsKapiDevice", "gpu_init", "error")
    below_warning("[   25.881087] [drm:nv_drm_master_set [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100]"
                  " Failed to grab modeset ownership")
