"""Round 19's rules from the rules halves' misses (lead19_* in slurmtools/data/diagnosis_rules.toml): each family's
lines in words the collections' rows do not quote (other devices, functions, values), the benign twins of the same
printers, and the trust that keeps a job's or a tool's line from draining a node. The collections' own rows are scored
by tests/test_field_corpus.py, not repeated here."""

from __future__ import annotations

from slurmtools.diagnosis import diagnose

from .rule_cases import table_tests

OTHER_FAULTS = [
    # accelerator runtimes in jobs: the Neuron runtime's log, SYCL/Level Zero, JAX on a TPU it cannot use
    (
        "2025-Mar-04 05:06:07.000123  4242:4250  ERROR  NRT:nrt_build_global_comm_collectives   rank 3 failed",
        "nccl",
        "warning",
    ),
    ("2025-Mar-04 05:06:07.000123  4242:4250  ERROR  ENC:enc_init_ring   failed to allocate ring", "nccl", "warning"),
    (
        "2025-Mar-04 05:06:07.000123  4242:4250  ERROR  TDRV:dmem_alloc_internal   Failed to alloc DEVICE memory",
        "cuda",
        "warning",
    ),
    ("2025-Mar-04 05:06:07.000123  4242:4250  ERROR  NMGR:kmgr_load_nn   Failed to load NN", "cuda", "warning"),
    ("terminate called after throwing an instance of 'sycl::_V1::exception'", "cuda", "warning"),
    ("  what():  Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)", "cuda", "warning"),
    (
        "WARNING:jax._src.xla_bridge:A Google TPU may be present on this machine, but either a TPU-enabled jaxlib or "
        "libtpu is not installed. Falling back to cpu.",
        "cuda",
        "warning",
    ),
    # collectives set-up, MPI transports and error stacks
    ("[rank5]: Failed to find reverse path from remNode 1/b000 nlinks 2 to node 0/1000", "nccl", "warning"),
    ("[hccl_comm.cpp:88] HcclCommInitClusterInfo failed, error:7", "nccl", "warning"),
    ("[n12:5150] Read -1, expected 65536, errno = 1", "ib", "warning"),
    ("MPIR_Bcast_impl(310)............: Failure during collective", "ib", "warning"),
    (
        "MPIDI_CH3I_Progress(195).......: an error occurred while handling an event returned by MPIDU_Sock_Wait()",
        "ib",
        "warning",
    ),
    ("Queue setup failed: err=-22, port=1", "ib", "warning"),
    # tools and daemons: nvtop, GPU containers, MPS, the fabric manager's summary, PBS
    ("No GPU to monitor.", "gpu_init", "warning"),
    ("docker: Error response from daemon: Unknown runtime specified nvidia.", "gpu_init", "warning"),
    (
        "Error: failed to create task: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=3",
        "gpu_init",
        "warning",
    ),
    ("× nvidia-imex.service - NVIDIA IMEX service", "gpu_init", "error"),
    ("[2025-03-04 05:06:07.890 Control  4711] Server 4799 exited with status 2", "cuda", "warning"),
    ("[ERROR] failed to configure all the available GPUs or NVSwitches", "fabric_manager", "warning"),
    ("job 777.pbs01 exceeded MEM usage hard limit (65536 > 32768)", "oom", "error"),
    ("Compute GPU3 ............................ FAIL", "gpu_init", "warning"),
    ("[hevc_nvenc @ 0x55d1c0de0000] No capable devices found", "cuda", "warning"),
    ("[AVHWDeviceContext @ 0x7f00aa00bb00] Cannot load libnvcuvid.so.1", "cuda", "warning"),
    # user-space OOM killers and storage tools
    ("earlyoom[777]: Low Memory! At or below SIGKILL limits (mem: 2 %, swap: 5 %)", "oom", "error"),
    ("Killing process 'python3' with signal 9, pid: 31337, badness: 900, VmRSS: 120000 MiB", "oom", "error"),
    ("  5 Reallocated_Sector_Ct   PO--CK   001   001   010    NOW  4032", "disk", "warning"),
    ("199 UDMA_CRC_Error_Count    -OSRCK   200   200   000    -    17", "disk", "warning"),
    ("c1u2  | RAID-1 |   1862G |  256 KB | RA,WB |  Enabled | Offline | /dev/sdc | None      |None", "disk", "warning"),
    (" 1 -   -   -        -   RAID5  OfLn  N  21.830 TB dflt N  N   dflt N      N", "disk", "warning"),
    ("Bad Block Log : 512 entries available at offset 72 sectors - bad blocks present.", "disk", "warning"),
    # shared storage daemons: Ganesha's kv store and id mapper, Ceph's messenger, gssd
    (
        "01/02/2025 03:04:05 : epoch 6a6b6c6d : nfs9 : ganesha.nfsd-99[reaper] rados_kv_get :CLIENT ID :EVENT "
        ":Failed to get kv ret=-110",
        "nfs",
        "warning",
    ),
    (
        "01/02/2025 03:04:05 : epoch 6a6b6c6d : nfs9 : ganesha.nfsd-99[svc_3] principal2uid :ID MAPPER :WARN "
        ":Could not resolve bob@EXAMPLE.ORG to gid using nfsidmap, err: -2",
        "nfs",
        "warning",
    ),
    (
        "2025-03-04T05:06:07.890+0000 7f01 0 bad crc in front 12345 != exp 54321 from v2:10.1.2.3:6800/1",
        "nfs",
        "warning",
    ),
    ("rpc.gssd[99]: ERROR: gssd_refresh_krb5_machine_credential: failed to refresh", "nfs", "warning"),
]
KERNEL_FAULTS = [
    # amdgpu and kfd, the server NICs (ena, idpf and the fallback's new drivers)
    ("amdgpu 0000:c1:00.0: amdgpu: VRAM is lost due to GPU reset!", "gpu_init", "warning"),
    ("[drm] Fence fallback timer expired on ring comp_1.2.0", "gpu_init", "warning"),
    ("kfd kfd: amdgpu: OLAND  not supported in kfd", "gpu_init", "warning"),
    ("ena 0000:00:06.0 eth1: Keep alive watchdog timeout.", "ib", "warning"),
    ("ena 0000:00:06.0: Device reset failed", "ib", "warning"),
    ("idpf 0000:4b:00.0: Transaction timed-out (op:12 cookie:0100 vc_op:12 salt:1 timeout:60000ms)", "ib", "warning"),
    # ZFS's SPL
    ("PANIC at dmu.c:1075:dmu_buf_rele_array()", "disk", "error"),
    ("VERIFY(zio->io_error == 0) failed", "disk", "error"),
]
FALLBACK = [
    ("qede 0000:3b:00.1: Failed to initialize the device: -110", "ib"),
    ("cxgb4 0000:81:00.4: firmware reports adapter error", "ib"),
    ("ionic 0000:b5:00.0: DEV_CMD IONIC_CMD_RESET (1) error, IONIC_RC_ERROR (29) failed", "ib"),
    ("netfs: fscache_begin_operation: cookie state change wait timed out: cookie->state=3 state=3", "nfs"),
    ("FS-Cache: Cache cookie lost", "nfs"),
]
TWINS = [
    # the same printers' healthy lines (a server NIC's "NIC Link is Down" stays ib_link_down's, as the Intel drivers')
    "2025-Mar-04 05:06:07.000123  4242:4250  INFO   NRT:nrt_init   Neuron runtime 2.20 started",
    "I0301 05:06:07.000001 1 xla_bridge.py:889] Unable to initialize backend 'rocm': NOT_FOUND: Could not find "
    'registered platform with name: "rocm". Available platform names are: CUDA Host',
    "INFO:jax._src.xla_bridge:Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: "
    "cannot open shared object file: No such file or directory",
    "nvidia-fs:nvfs ioctl map success",
    "2025-03-04 05:06:07.890 ERROR [11:12] [[NvSwitch]] Not attached to NvSwitches. Aborting [/src/x.cpp:967] [f]",
    "hns3 0000:bd:00.1 eth3: link up",
    "qede 0000:3b:00.0 ens3f0: Link is up",
    "252:7     7 Rbld    0 3.637 TB SATA HDD N   N  512B ST4000NM0035 U  -",
    " 0 0   0   252:0    13  DRIVE  Onln  N  10.913 TB dflt N  N   dflt -      N",
    "c0u0  | RAID-6 |  12731G |   64 KB | RA,WB |  Enabled | Optimal | /dev/sda | None      |None",
    "  5 Reallocated_Sector_Ct   PO--CK   100   100   010    -    0",
    "          State : clean",
    "01/02/2025 03:04:05 : epoch 6a6b6c6d : nfs9 : ganesha.nfsd-99[svc_3] nfs_req_creds :ID MAPPER :INFO :Could not "
    "map principal bob@EXAMPLE.ORG to uid",
    "[2025-03-04 05:06:07.890 Control  4711] Server 4799 exited with status 0",
    "Compute GPU3 ............................ PASS",
    "   1 | 05/14/2026 | 20:40:26 | Processor #0x40 | Correctable machine check error | Deasserted",
]

globals().update(table_tests(kernel=KERNEL_FAULTS, other=OTHER_FAULTS, fallback=FALLBACK, twins=TWINS))


def test_ipmitools_correctable_machine_check_is_a_correctable_fact() -> None:
    # ipmitool's table (include/ipmitool/ipmi_sel.h) names the Processor offset 0Ch "Correctable machine check error"
    f = diagnose(b"  6e | 05/14/2026 | 20:41:10 | Processor CPU_CATERR | Correctable machine check error | Asserted")[0]
    assert (f.kind, f.details["rule"]) == ("mce", "sel_machine_check")
    assert f.severity == "info"


def test_drms_caller_tag_reads_in_its_usual_form() -> None:
    # a built-in driver prints no [MODULE]; a function the compiler split or cloned carries its suffix
    from slurmtools.diagnosis.lines import drm_caller, normalise

    assert normalise("[drm:amdgpu_device_init.cold] *ERROR* sw_init of IP block <psp> failed -2").message == (
        "[drm:amdgpu_device_init [amdgpu]] *ERROR* sw_init of IP block <psp> failed -2"
    )
    assert drm_caller("[drm:mes_v11_0_submit_pkt_and_poll_completion.constprop.0 [amdgpu]] *ERROR* MES failed") == (
        "[drm:mes_v11_0_submit_pkt_and_poll_completion [amdgpu]] *ERROR* MES failed"
    )
    assert drm_caller("[drm:intel_guc_init.isra.0] *ERROR* x") == "[drm:intel_guc_init [i915]] *ERROR* x"
    assert drm_caller("[drm:unknown_fn.cold] *ERROR* x") == "[drm:unknown_fn] *ERROR* x"
    # forms left as they are: the usual one, a function of no known driver, DRM's own `[drm]` notes, a bad tag
    for same in (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout",
        "[drm:drm_atomic_helper_wait] x",
        "[drm] Initialized amdgpu 3.54.0",
        "[drm:" + "a" * 300 + "] x",
    ):
        assert drm_caller(same) == same
    f = diagnose(
        b"node5: kern:     err: [2023-08-18T13:36:48.470679465Z]: [drm:amdgpu_device_init.cold] *ERROR* "
        b"sw_init of IP block <psp> failed -2"
    )[0]
    assert (f.kind, f.severity) == ("gpu_init", "error")


def test_a_powerpc_machine_check_oops_is_a_kernel_error() -> None:
    f = diagnose(b"[   42.000001] Oops: Machine check, sig: 7 [#3]")[0]
    assert (f.kind, f.severity, f.trust, f.action) == ("mce", "error", "kernel", "investigate")
