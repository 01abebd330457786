"""Families read from their printers after round7.tsv's rules half showed them (its test half only scored): each
line is found in other values too, its benign twin stays below warning, and job or tool output never drains."""

from __future__ import annotations

from .rule_cases import table_tests

FOUND = [
    # mlx5 cmd.c mlx5_cmd_eq_recover(), en/reporter_tx.c: completions found by polling after a lost interrupt
    ("mlx5_core 0000:3b:00.1: mlx5_cmd_eq_recover:301:(pid 1207): Recovered 2 EQEs on cmd_eq", "ib", "warning"),
    ("mlx5_core 0000:08:00.0 ens1f0np0: Recovered 1 eqes on EQ 0x12", "ib", "warning"),
    # mlx4_ib's pr_fmt "<mlx4_ib> %s: "
    ("<mlx4_ib> mlx4_ib_add: failed to allocate counters for port 1", "ib", "warning"),
    ("<mlx4_ib> mlx4_ib_post_send: Couldn't create ah for UD QP", "ib", "warning"),
    # rxe_icrc.c: a packet with a wrong invariant CRC
    ("rdma_rxe: bad ICRC from 10.0.3.7", "ib", "warning"),
    # qedr's DP_ERR and ibdev_err() behind an Ethernet parent
    ("[qedr_create_qp:1312(qedr1)]Error: create qp: failed a sanity check", "ib", "warning"),
    ("ice 0000:31:00.0 irdma0: failed to create CQP rc=-110", "ib", "error"),
    ("bnxt_en 0000:41:00.1 bnxt_re1: Failed to allocate HW AH", "ib", "warning"),
    # smartctl ataprint.cpp
    ("Drive failure expected in less than 24 hours. SAVE ALL DATA.", "disk", "error"),
    # aws-ofi-nccl's old prefix
    ("WARN: Function: ofi_init Line: 1011: NET/OFI Unable to find a provider that supports RDMA", "nccl", "error"),
    # XLA's stream executor, simpleCUBLAS, a renderer's CUDA check
    ("jax.errors.JaxRuntimeError: INTERNAL: Failed to complete all kernels launched on stream 0x7f: CUDA error: "
     "unspecified launch failure", "cuda", "error"),
    ("!!!! CUBLAS initialization error", "cuda", "error"),
    ("!!!! device memory allocation error (allocate A)", "cuda", "error"),
    ("CUDA error at cuMemAlloc: Out of memory", "cuda", "error"),
    # an EDAC driver's error count in words; intel_pch_thermal's hot PCH and its cooling wait
    ("EDAC: [3 Correctable errors @ 0x0001F2A0]", "mce", "info"),
    ("intel_pch_thermal 0000:00:14.2: CPU-PCH is hot [61C] even after delay, continue to suspend. S0ix might fail",
     "thermal", "warning"),
    ("intel_pch_thermal 0000:00:12.0: CPU-PCH current temp [52C] higher than the threshold temp [50C], sleep 2 times "
     "for 100 ms duration", "thermal", "info"),
]

BENIGN = [
    "mlx5_core 0000:3b:00.1: mlx5_cmd_init:2302:(pid 1): Command queue is ready",
    "<mlx4_ib> mlx4_ib_add: mlx4_ib: Mellanox ConnectX InfiniBand driver v4.0-0",
    "rdma_rxe: loaded",
    "ice 0000:31:00.0 irdma0: Device added",
    "bnxt_en 0000:41:00.1 bnxt_re1: Device registered with IB successfully",
    "SMART overall-health self-assessment test result: PASSED",
    "NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)",
    "10.3.35.83: INFO: Function: ofi_init Line: 1102: NET/OFI Setting RDMAV_FORK_SAFE environment variable to 1.",
    "!!!! test PASSED",
    "CUDA error checking is enabled",
    "intel_pch_thermal 0000:00:14.2: CPU-PCH is cool [45C], continue to suspend",
    "EDAC MC: Ver: 3.0.0",
    # r8169's chip revision (`XID %03x`) in its probe line, behind a host tag or an envelope the parser does not know
    "gpu017: r8169 0000:03:00.0 eth0: RTL8125B, 58:47:ca:7b:55:71, XID 641, IRQ 51",
    "gpu017 => r8169 0000:03:00.0 eth0: RTL8168h/8111h, 00:e0:4c:68:00:01, XID 541, IRQ 129",
]


NEVER_DRAIN = [FOUND[8][0], FOUND[9][0], FOUND[11][0]]


globals().update(table_tests(found=FOUND, no_drain=NEVER_DRAIN, twins=BENIGN))
