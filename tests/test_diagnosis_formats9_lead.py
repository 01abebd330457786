"""Families read from their printers after round9.tsv's rules half showed them (its test half only scored): each
line is found in other values too, its benign twin stays below warning, and job, tool or daemon output never
drains."""

from __future__ import annotations

from .rule_cases import table_tests

FOUND = [
    # dcgm-exporter's and DCGM's own words for a host engine that cannot start or be reached
    ('time="2024-03-02T10:11:12Z" level=fatal msg="Error starting nv-hostengine: DCGM initialization error"',
     "gpu_init", "warning"),
    ("Error connecting to nv-hostengine: Host engine connection invalid/disconnected", "gpu_init", "warning"),
    # ESTALE in a lower-case wrapper (kubelet's subPath cleanup, Go's error strings)
    ('E0302 10:11:12.000000 1234 kubelet.go:1234] error reading /var/lib/kubelet/pods/x/volume-subpaths/data/c/0: '
     'lstat /var/lib/kubelet/pods/x/volume-subpaths/data/c/0: stale NFS file handle', "nfs", "warning"),
    ("open /mnt/shared/ckpt/step_100.pt: stale file handle", "nfs", "warning"),
    # libfabric's provider without a device or without RDMA for GPU buffers
    ("libfabric:4242:1700000000::core:core:fi_getinfo_():1378<warn> fi_getinfo: provider verbs output empty list",
     "ib", "warning"),
    ("libfabric:4242:1700000000:efa:core:efa_prov_info_set_fabric_attr():77<warn> FI_HMEM capability requires RDMA, "
     "which this device does not support.", "ib", "warning"),
    # soft-RoCE refusing a request or failing to pin memory
    ("rdma_rxe: invalid recv sge = 40 > 32", "ib", "warning"),
    ("rdma_rxe: err -14 from rxe_umem_get", "ib", "warning"),
    # systemd before 231: the unit's name, then "mount process exited" without a colon
    ("Mar  2 10:11:12 node07 systemd: scratch.mount mount process exited, code=exited status=32", "nfs", "warning"),
    # the audit record of a crash (AUDIT_ANOM_ABEND): a user process, info, never a node action
    ('Mar  2 10:11:12 node07 audit[4242]: ANOM_ABEND auid=1001 uid=1001 gid=1001 ses=3 pid=4242 comm="python3" '
     'exe="/usr/bin/python3.11" sig=11', "segfault", "info"),
    ('[ 812.114] audit: type=1701 audit(1700000000.123:456): auid=1001 uid=1001 gid=1001 ses=3 subj=unconfined '
     'pid=4242 comm="train" exe="/opt/app/train" sig=7 res=1', "segfault", "info"),
]


BENIGN = [
    "Started host engine version 3.3.5 using port number: 5555",
    "libfabric:4242:1700000000::core:core:ofi_register_provider():474<info> registering provider: efa (118.0)",
    "Mar  2 10:11:12 node07 systemd: scratch.mount mount process exited, code=exited status=0",
    "Mar  2 10:11:12 node07 systemd[1]: Mounted /scratch.",
    "rdma_rxe: loaded",
    # a process killed by SIGKILL or ended by SIGTERM is not a crash
    '[ 812.114] audit: type=1701 audit(1700000000.123:456): auid=1001 uid=1001 gid=1001 ses=3 pid=4242 comm="train" '
    'exe="/opt/app/train" sig=9 res=1',
]


globals().update(table_tests(found=FOUND, no_drain=[line for line, _, _ in FOUND[:6] + FOUND[8:]], twins=BENIGN))
