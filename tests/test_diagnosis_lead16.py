"""Round 16's rules from the rules halves' misses (lead16_* in slurmtools/data/diagnosis_rules.toml, and the hwmon
drivers in data/subsystems.toml's thermal subsystem): each family's lines in words the collections' rows do not
quote (other devices, codes, units and values), the benign twins of the same printers, and the trust that keeps a
job's, a tool's or another system's line from draining a node. The collections' own rows are scored by
tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

import pytest

from .rule_cases import below_warning, reaches_fallback, table_tests

KERNEL_FAULTS = [
    ("ixgbe 0000:05:00.1: VF 3 attempted to set invalid MAC filter", "ib", "warning"),
    ("ice 0000:41:00.0: not enough device MSI-X vectors. requested = 130, available = 98", "ib", "warning"),
    ("idpf 0000:83:00.0 ens5: Unknown TX completion type: 7", "ib", "warning"),
    # POWER's EEH: a host bridge or an endpoint frozen, a recovery ending in disconnect (its steps: info twins)
    ("EEH: PHB#7 failure detected, location: U78D2.001.WZS0001-P1-C4", "aer", "warning"),
    ("EEH: eeh_dev_check_failure: Frozen PHB#4-PE#2 detected", "aer", "warning"),
    ("EEH: Finished:'error_detected(IO frozen)' with aggregate recovery state:'disconnect'", "aer", "warning"),
    ("PCI 0031:02:00.1#20000: EEH: mlx5_core driver reports: 'disconnect'", "aer", "warning"),
    # md and the SAS layer
    ("md/raid10:md9: not enough operational mirrors.", "disk", "warning"),
    ("md4: mismatch sector in range 1048576-1048584", "disk", "warning"),
    ("sas: lldd_execute_task returned: -12", "disk", "warning"),
    ("hisi_sas_v2_hw HISI0162:01: task exec: failed[-5]!", "disk", "warning"),
    ("ata7: No reported SATA link speed. Limiting to 1.5 Gbps", "disk", "warning"),
    ("WARNING: CPU: 5 PID: 2211 at fs/xfs/xfs_buf.c:1621 xfs_buf_iodone_callbacks+0x1c4/0x240 [xfs]", "disk",
     "warning"),
    ("INFO: task jbd2/nvme0n1p1-8:412 blocked for more than", "hung_task", "warning"),
    # the network filesystems' words (round16b's rules half)
    ("CIFS VFS: \\\\nas02 crypt_message: Could not get encryption key", "nfs", "warning"),
    ("CIFS: Status code returned 0xc0000022", "nfs", "warning"),
    ("ceph: ceph_async_create_cb: inode number mismatch! err=0 deleg_ino=0x10000001 target=0x10000002", "nfs",
     "warning"),
    ("FS-Cache: 1 == 2 is false", "nfs", "warning"),
    ("kernel BUG at fs/cachefiles/namei.c:201!", "nfs", "warning"),
    ("RIP: 0010:[<ffffffffc0a1b2c3>]  [<ffffffffc0a1b2c3>] xprt_rdma_free+0x2b/0x90 [rpcrdma]", "nfs", "warning"),
    ("INFO: task cifsd:4242 blocked for more than 122", "hung_task", "warning"),
    ("[drm:gfx_v9_0_hw_init [amdgpu]] *ERROR* Failed to load gfx firmware!", "gpu_init", "warning"),
    ("kfd kfd: amdgpu: Failed to resume IOMMU for device 1002:7408", "gpu_init", "warning"),
    ("nouveau 0000:65:00.0: fifo:c00000:0004:0002:[python3[2211]] errored - disabling channel", "gpu_init", "warning"),
    ("nouveau 0000:65:00.0: gsp: mmu fault queued", "gsp", "warning"),
    ("workqueue: WQ_MEM_RECLAIM ib-comp-wq:ib_cq_poll_work [ib_core] is flushing !WQ_MEM_RECLAIM mlx5_ib_pf:0x0", "ib",
     "warning"),
    ("cm_destroy_id_wait_timeout: cm_id=000000003c2d1e0f timed out. state 5 -> 0, refcnt=3", "ib", "warning"),
    ("nvme_rdma_reconnect_or_remove: status=-110 recon=2", "ib", "warning"),
    ("xe 0000:03:00.0: [drm] Tile0: GT1: Timedout job: seqno=4242, lrc_seqno=4242, guc_id=7, flags=0x0 in python3",
     "gpu_init", "warning"),
    ("i915 0000:00:02.0: [drm] python3[4411] context reset due to GPU hang", "gpu_init", "warning"),
    ("habanalabs hl0: Failed to communicate with Device CPU (CPU-CP timeout)", "gpu_init", "warning"),
    ("[  511.030771] amdgpu: [powerplay] Failed to send message 0x26, response 0x0", "gpu_init", "warning"),
    ("amdgpu 0000:03:00.0: amdgpu: [mmhub0] VMC page fault (src_id:0 ring:169 vmid:0 pas_id:0)", "gpu_init", "warning"),
    ("md: nvme1n1p3 does not have a valid v1.2 superblock, not importing!", "disk", "warning"),
    ("radeon 0000:01:00.0: GPU fault detected: 146 0x0c04f80c", "gpu_init", "warning"),
    ("EXT4-fs warning (device sdb): ext4_clear_journal_err: 5120: Marking fs in need of filesystem check.", "disk",
     "warning"),
    # DPC and EDR are kind aer, as CORPUS.md files them
    ("pcieport 0000:c0:03.1: DPC: containment event, status:0x1f01 source:0x0000", "aer", "error"),
    ("pcieport 0000:c0:03.1: DPC: ERR_NONFATAL detected", "aer", "warning"),
]
OTHER_FAULTS = [
    # FreeBSD's disk stack (not a Slurm node's kernel)
    ("(ada2:ahcich2:0:0:0): WRITE_FPDMA_QUEUED. ACB: 61 40 00 7c 21 40 5a 00 00 00 00 00", "disk", "warning"),
    ("(da7:mpr1:0:11:0): READ(16). CDB: 88 00 00 00 00 01 2a 05 6b 80 00 00 00 80 00 00", "disk", "warning"),
    ("(da7:mpr1:0:11:0): SCSI sense: HARDWARE FAILURE asc:44,0 (Internal target failure)", "disk", "warning"),
    ("(da7:mpr1:0:11:0): Retrying command, 3 more tries remain", "disk", "warning"),
    ("(ada3:ahcich5:0:0:0): lost device", "disk", "warning"),
    ("g_vfs_done():da4p1[WRITE(offset=1048576, length=131072)]error = 6", "disk", "warning"),
    ("ad6: TIMEOUT - READ_DMA48 retrying (1 retry left) LBA=976773119", "disk", "warning"),
    ("  SENSE KEY:  Medium Error", "disk", "warning"),
    ("mpr1: Reinitializing controller", "disk", "warning"),
    ("md5: [Self Heal] Retry sector [88844] round [3/3] finished: get same result, give up", "disk", "warning"),
    ("io-error-guard: catch 12 continuous bio error.", "disk", "warning"),
    ("NOTICE:  SError Handle", "mce", "warning"),
    ("2024-02-03 11:22:33  77  PST0090  A problem was detected related to the previous server boot.", "mce", "warning"),
    ("mdadm: /dev/md0 assembled from 3 drives - need all 4 to start it (use --run to insist).", "disk", "warning"),
    ("dd: error reading '/dev/nvme2n1': Input/output error", "disk", "warning"),
    ("cat: '/sys/class/infiniband/mlx5_1/ports/1/state': Input/output error", "ib", "warning"),
    ("fs/smb/client/smb2ops.c: CIFS: leaving smb2_query_dir_first (xid = 88) rc = -13", "nfs", "warning"),
    ("gssd[812]: ERROR: GSS-API: error in gss_acquire_cred(): GSS_S_NO_CRED", "nfs", "warning"),
    ("Failed to insert: creating /var/lib/nfs/statd/sm/gpu-node-12: No space left on device", "nfs", "warning"),
    ("OSD_NEARFULL 3 nearfull osd(s)", "nfs", "warning"),
    ("Mar 02 10:11:12 bmc power-control[311]: power supply power OK watchdog timer expired", "thermal", "warning"),
    ("Mar 02 10:11:12 bmc hwmontempsensor[290]: Sensor Inlet_Temp high threshold 45 assert: value 47.5 raw data 47500",
     "thermal", "warning"),
    ("mcelog[901]: MemCtrl: Corrected patrol scrub error", "mce", "warning"),
    # (the rule reads the BMC's lines too: trust syslog, a warning that never drains)
    ("lm90 3-004c: temp3 out of range, please check!", "thermal", "warning"),
    ("fan2:           FAULT  ALARM", "thermal", "warning"),
    ("in7:          11.02 V  (crit min =  +10.80 V, min = +11.40 V)  ALARM (MIN)", "thermal", "warning"),
    ("Duplicate GPU detected : rank 5 and rank 4 both on CUDA device 4e000", "nccl", "error"),
    ("transport/net_socket.cc:411 WARN NET/Socket : peer 10.1.2.3<44321> message truncated", "nccl", "error"),
    ("fatal error: unexpected signal during runtime execution", "segfault", "info"),
    ("gpu07.cluster:pid3321.train: Unable to initialize verbs", "ib", "warning"),
    ("[gpu07:03321] *** An error occurred in MPI_Init", "ib", "warning"),
    ("OSError: 65536 requested and 8192 written", "nfs", "warning"),
    ("(EE) [drm] Failed to open DRM device for pci:0000:c1:00.0: -22", "gpu_init", "warning"),
    ("Got an OOM, unloading all loaded models.", "cuda", "warning"),
    ("Enclosure 1 Slot 4 DIMM_B2 Temp      95 C      5 C      85 C Critical", "thermal", "warning"),
    ("RuntimeError: Graph compile failed. synStatus=synStatus 26 [Generic failure].", "cuda", "error"),
    ("EZ9999[PID: 5120] 2025-01-02-03:04:05.678.901 Inner Error!", "cuda", "error"),
    ("[W NPUStream.cpp:365] Warning: NPU warning, error code is 507035[Error]: .", "cuda", "warning"),
    ("  current device: 2, in function ggml_backend_cuda_graph_compute at ggml-cuda.cu:2710", "cuda", "error"),
    ("Failed to initialize DCMI", "gpu_init", "warning"),
    ("nvmlDeviceGetMemoryInfo(): GPU access blocked by the operating system", "gpu_init", "warning"),
    ("ERR02005 DIST internal error", "nccl", "error"),
    ("signal arrived during cgo execution", "segfault", "info"),
    ("CernVM-FS: loading Fuse module... Failed to initialize root file catalog (3 - cache directory/plugin problem)",
     "nfs", "warning"),
    ("mount status for source efs: 1", "nfs", "warning"),
    ("   unique: 88, error: -5 (Input/output error), outsize: 16", "nfs", "warning"),
    ("Output: mount.nfs: Network is unreachable", "nfs", "warning"),
    ("mkfs.xfs: Input/output error while writing out and closing file system", "disk", "warning"),
    ("[1700000000.123456] [gpu03:4242:0]  tl_ucp_team.c:120   TL_UCP ERROR failed to create team, Input/output error",
     "ib", "warning"),
    ("[gpu03:04242] PML ucx cannot be selected", "ib", "warning"),
    ("EAL: Requested device 0000:3b:00.1 cannot be used", "ib", "warning"),
    ("rdma.c:3274:nvmf_rdma_poll_group_create: *ERROR*: Unable to create shared receive queue, errno 22", "ib",
     "warning"),
    ("Failed to write to /dev/nvme-fabrics: Input/output error", "ib", "warning"),
    ("libfabric:4242:1700000000::verbs:ep_ctrl:vrb_ep_connect():312<warn> rdma_connect returned -1 (Refused)", "ib",
     "warning"),
    ("========= Fatal UVM CPU fault of type invalid pde due to invalid address", "cuda", "error"),
    ("terminate called after throwing an instance of 'thrust::system::system_error'", "cuda", "error"),
    ("Allocation on device 3 would exceed allowed memory. (out of memory)", "cuda", "error"),
    ("[0] #1  Foam::sigFpe::sigHandler(int) at ??:?", "segfault", "info"),
    ("cxip_gen_auth_key failed: -2", "ib", "warning"),
    ("Fatal error in internal_Init: Other MPI error, error stack:", "ib", "warning"),
    ("  GPU 00000000:41:00.0: In use by another client", "gpu_init", "warning"),
    ("ERROR:  nhc:  Health check failed:  check_hw_edac:  ECC errors detected - 12 corrected memory errors detected "
     "(limit of 5).", "mce", "warning"),
    # nvidia-smi: NVML_ERROR_UNKNOWN and unreadable table fields are a GPU that cannot be reached (gpu_init)
    ("Unable to determine the device handle for GPU 0000:C1:00.0: Unknown Error", "gpu_init", "warning"),
    ("| N/A   ERR!  P8   ERR! / 350W |      0MiB / 24576MiB |      0%      Default |", "gpu_init", "warning"),
]
TWINS = [
    "Currently allocated : 14.81 GiB",
    "libfabric:4242:1700000000::core:core:ofi_register_provider():476<info> registering provider: verbs (120.0)",
    "2 HCAs found:",
    "   unique: 24, error: -2 (No such file or directory), outsize: 16",
    "CernVM-FS: mounted cvmfs on /cvmfs/atlas.cern.ch",
    "mount status for source efs: 0",
    "amdgpu 0000:3d:00.0: amdgpu:   in page starting at address 0x00007f0000000000 from client 27",
    "xe 0000:03:00.0: [drm] Tile0: GT0: GuC firmware i915/mtl_guc_70.bin version 70.20.0",
    "habanalabs hl0: Successfully added device 0000:b3:00.0 to habanalabs driver",
    "synStatus=synStatus 0 [Success]",
    "Enclosure 1 Slot 4 DIMM_B2 Temp      41 C      5 C      85 C OK",
    "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process python3 pid 4411 thread python3 pid 4411",
    "nouveau 0000:65:00.0: gr: PGRAPH_VSTATUS1: 00000000 []",
    "nvme_rdma_reconnect_or_remove: status=0 recon=1",
    "[drm:amdgpu_cs_ioctl [amdgpu]] *ERROR* Failed to initialize parser -125!",
    "NVRM: nvCheckOkFailedNoLog: Check failed: Requested object not found [NV_ERR_OBJECT_NOT_FOUND] (0x00000057) "
    "returned from gisubscriptionGetGPUInstanceSubscription(pRsClient, RES_GET_HANDLE(pSubdevice), &pSub)",
    "NCCL INFO Using network IB",
    "mana 7870:00:00.0 eth0: Configured vPort 0 PD 18 DB 16",
    "Mar 02 10:13:12 bmc hwmontempsensor[290]: Sensor Inlet_Temp high threshold 45 deassert: value 43.0 raw data 43000",
    "fan2:        5120 RPM  (min =  600 RPM)",
    "fs/cifs/file.c: CIFS: leaving cifs_open (xid = 12) rc = 0",
    "CIFS: Status code returned 0xc0000016 STATUS_MORE_PROCESSING_REQUIRED",
    "FS-Cache: Loaded",
    "    osd.3 is up",
    "EEH: Beginning: 'slot_reset'",
    "EEH: Finished:'resume' with aggregate recovery state:'recovered'",
    "PHB4 PHB#1 Diag-data (Version: 1)",
    "md/raid:md2: not clean -- starting background reconstruction",
    "raid5_end_read_request: 12 callbacks suppressed",
    "task:rcu_preempt     state:R  running task     stack:    0 pid:   14 ppid:     2 flags:0x00004000",
    "mdadm: /dev/md0 has been started with 4 drives.",
    "cat: notes.txt: No such file or directory",
    "(da0:mps0:0:0:0): SCSI sense: UNIT ATTENTION asc:29,0 (Power on, reset, or bus device reset occurred)",
    "(ada4:ahcich4:0:0:0): Periph destroyed",
    "ada0 at ahcich0 bus 0 scbus0 target 0 lun 0",
    "md5: [Self Heal] Retry sector [88844] round [1/3] start: sh_bio_errno [0]",
    "NOTICE:  BL31: Built : 10:11:12, Jan  1 2024",
    "ice 0000:41:00.0: DDP package already present on device: ICE OS Default Package version 1.3.36.0",
    "nct6775: Found NCT6798D or compatible chip at 0x2e:0x290",
    "it87: Found IT8628E chip at 0xa40, revision 2",
    "applesmc: key=561 fan=1 temp=33 index=33 acc=0 lux=0 kbd=0",
    "occ-hwmon occ-hwmon.2: OCC found, code level: op_occ_231006a",
]
# the hwmon drivers' own prefixes with a failure word: the subsystem fallback files them thermal (warning, unrecognised)
HWMON_FALLBACK = [
    "applesmc: F0Ac: read arg fail",
    "occ-hwmon occ-hwmon.3: failed to get OCC poll response: -110",
    "nct6775 nct6775.656: Failed to read fan speed: -16",
    "dell_smm_hwmon: unable to get SMM temperature for sensor 2",
]


globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, twins=TWINS))


@pytest.mark.parametrize("line", HWMON_FALLBACK)
def test_a_hwmon_drivers_failure_reaches_the_thermal_fallback(line: str) -> None:
    reaches_fallback(line, "thermal")


@pytest.mark.parametrize("line", ["nct6775 nct6775.656: Enabling hardware monitor logical device mappings.",
                                  "hwmon hwmon2: temp1_input: 41000"])
def test_a_hwmon_drivers_banner_stays_silent(line: str) -> None:
    below_warning(line)


def test_berts_record_of_the_previous_boot_is_evidence_not_a_drain() -> None:
    """bert.c prints the CPER record of the error that ended the previous boot after its header: a fatal record there
    joins the BERT finding (warning, investigate) and is not a drain, while the same record from GHES (this boot) or
    alone still drains."""
    from slurmtools.diagnosis import diagnose

    record = (b"[    2.100001] [Hardware Error]: event severity: fatal\n"
              b"[    2.100002] [Hardware Error]:  Error 0, type: fatal\n"
              b"[    2.100003] [Hardware Error]:   section_type: memory error\n")
    bert = diagnose(b"[    1.000000] Linux version 6.1.0\n[    2.100000] BERT: Error records from previous boot:\n"
                    + record + b"[    2.100005] BERT: Total records found: 1\n")
    assert [(f.kind, f.severity, f.action, f.details.get("rule")) for f in bert] == [
        ("mce", "warning", "investigate", "bert_previous_boot")]
    assert "[Hardware Error]: event severity: fatal" in bert[0].details["evidence"]
    ghes = diagnose(b"[    5.000000] {1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0\n"
                    + record)
    assert ghes[0].action == "drain_node"
    assert diagnose(record)[0].action == "drain_node"


@pytest.mark.parametrize("line", ["mlx5_core 0000:05:00.0: Successfully registered panic handler for port 1",
                                  "amdgpu 0000:c1:00.0: amdgpu: GPU reset succeeded, trying to resume",
                                  "sd 2:0:0:0: alua: transition timeout set to 60 seconds"])
def test_the_fallback_leaves_a_success_or_a_timeout_setting_alone(line: str) -> None:
    below_warning(line)


@pytest.mark.parametrize(("line", "kind"), [
    ("mlx5_core 0000:05:00.0: failed to register panic handler for port 1", "ib"),
    ("mana 7870:00:00.0: HWC: Request timed out!", "ib"),
    ("sd 2:0:0:0: alua: transition timeout while waiting for port", "disk")])
def test_the_same_subsystems_failures_still_reach_the_fallback(line: str, kind: str) -> None:
    reaches_fallback(line, kind)
