"""Benign lines of whole public logs that once raised a warning or worse: the second sweep (65 whole files from 35
public GitHub repositories nobody here collected, weighted to what a GPU cluster's epilog reads: Megatron-DeepSpeed,
FSDP and DeepSpeed training output, nccl-tests on Slingshot and EFA, HPL-NVIDIA, vLLM and SGLang servers,
nvidia-bug-report.log files, a kubelet log, a slurmctld log; docs/diagnosis.md). Each family's benign line, verbatim
with its source, stays below warning, and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
STORE_OK = (f"{GH}/stark-sim/megatron-deepspeed-lock-clock/blob/f3bf150e188e74e8ecc332fe36e67369fa916603/"
            ".context/dual8_tp4pp1dp2_smoke_nohup_20260331_r3.log")
STORE_TP = (f"{GH}/stark-sim/megatron-deepspeed-lock-clock/blob/f3bf150e188e74e8ecc332fe36e67369fa916603/"
            "experiments/_screen_boot/tp1pp4dp4_refresh_20260322.log")
HPL = f"{GH}/pkusc/ASC22_HPL/blob/fd55a33ef388613cdea33f0c4910ea4da305997f/scripts/nohup.out"
PODMAN = (f"{GH}/sparticlesteve/podman-nccl-testing/blob/d7966c5e78597774a6d63a9cd2c9289964148cca/"
          "logs/podman-nccl-tests-30606107.out")
TINGYI = f"{GH}/Tingyiwanyan/pre_nas/blob/3f680fcb8ec0ea546e8096e6c337e54992e7e675/nvidia-bug-report.log.gz"
CAFFE = f"{GH}/maz906/caffe/blob/5b386f8d99b4fdbe71290cc4338bb581ef737466/nvidia-bug-report.log"
SERVERLESS = (f"{GH}/Trourest186/Serverless-Computing-Final/blob/0ef72061de3e6ecf54967565e2236d0d5e645f86/"
              "nvidia-bug-report.log.gz")
LLAMA3 = f"{GH}/Sh1mwww/llama3-inference/blob/fe43b043b66535b11e2b09cb5f28d441f96fc0eb/nvidia-bug-report.log.gz"
SRINI = f"{GH}/srinivasgln/nvidia-errors-srini/blob/264e1c3466fdefb324598b4868136f5369a517f3/nvidia-bug-report.log.gz"

# nvidia-bug-report.log's copy of the DKMS make.log: a compiler command line for nvidia-peermem with `-Wno-error`
DKMS_COMPILE = (
    '  cc -Wp,-MD,/var/lib/dkms/nvidia/520.56.06/build/nvidia-peermem/.nvidia-peermem.o.d  -nostdinc -isy'
    'stem /usr/lib/gcc/x86_64-linux-gnu/7/include  -I./arch/x86/include -I./arch/x86/include/generated  -'
    'I./include -I./arch/x86/include/uapi -I./arch/x86/include/generated/uapi -I./include/uapi -I./includ'
    'e/generated/uapi -include ./include/linux/kconfig.h -Iubuntu/include  -include ./include/linux/compi'
    'ler_types.h -D__KERNEL__ -Wall -Wundef -Werror=strict-prototypes -Wno-trigraphs -fno-strict-aliasing'
    ' -fno-common -fshort-wchar -fno-PIE -Werror=implicit-function-declaration -Werror=implicit-int -Werr'
    'or=return-type -Wno-format-security -std=gnu89 -mno-sse -mno-mmx -mno-sse2 -mno-3dnow -mno-avx -m64 '
    '-falign-jumps=1 -falign-loops=1 -mno-80387 -mno-fp-ret-in-387 -mpreferred-stack-boundary=3 -mskip-ra'
    'x-setup -mtune=generic -mno-red-zone -mcmodel=kernel -DCONFIG_X86_X32_ABI -DCONFIG_AS_CFI=1 -DCONFIG'
    '_AS_CFI_SIGNAL_FRAME=1 -DCONFIG_AS_CFI_SECTIONS=1 -DCONFIG_AS_SSSE3=1 -DCONFIG_AS_AVX=1 -DCONFIG_AS_'
    'AVX2=1 -DCONFIG_AS_AVX512=1 -DCONFIG_AS_SHA1_NI=1 -DCONFIG_AS_SHA256_NI=1 -Wno-sign-compare -fno-asy'
    'nchronous-unwind-tables -mindirect-branch=thunk-extern -mindirect-branch-register -fno-jump-tables -'
    'fno-delete-null-pointer-checks -Wno-frame-address -Wno-format-truncation -Wno-format-overflow -O2 --'
    'param=allow-store-data-races=0 -Wframe-larger-than=1024 -fstack-protector-strong -Wimplicit-fallthro'
    'ugh -Wno-unused-but-set-variable -Wno-unused-const-variable -fno-omit-frame-pointer -fno-optimize-si'
    'bling-calls -fno-var-tracking-assignments -pg -mrecord-mcount -mfentry -DCC_USING_FENTRY -Wdeclarati'
    'on-after-statement -Wvla -Wno-pointer-sign -Wno-array-bounds -Wno-stringop-overflow -Wno-restrict -W'
    'no-maybe-uninitialized -fno-strict-overflow -fno-merge-all-constants -fmerge-constants -fno-stack-ch'
    'eck -fconserve-stack -Werror=date-time -Werror=incompatible-pointer-types -Werror=designated-init -I'
    '/var/lib/dkms/nvidia/520.56.06/build/common/inc -I/var/lib/dkms/nvidia/520.56.06/build -Wall -MD -Wn'
    'o-cast-qual -Wno-error -Wno-format-extra-args -D__KERNEL__ -DMODULE -DNVRM -DNV_VERSION_STRING=\\"520'
    '.56.06\\" -Wno-unused-function -Wuninitialized -fno-strict-aliasing -ffreestanding -mno-red-zone -mcm'
    'odel=kernel -DNV_UVM_ENABLE -Werror=undef -DNV_SPECTRE_V2=0 -DNV_KERNEL_INTERFACE_LAYER -I/var/lib/d'
    'kms/nvidia/520.56.06/build/nvidia-peermem -UDEBUG -U_DEBUG -DNDEBUG -DNV_BUILD_MODULE_INSTANCES=0  -'
    'DMODULE  -DKBUILD_BASENAME=\'"nvidia_peermem"\' -DKBUILD_MODNAME=\'"nvidia_peermem"\' -c -o /var/lib/dkm'
    's/nvidia/520.56.06/build/nvidia-peermem/nvidia-peermem.o /var/lib/dkms/nvidia/520.56.06/build/nvidia'
    '-peermem/nvidia-peermem.c'
)

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml or data/subsystems.toml
BENIGN = [
    # c10d's warning-level socket notes at teardown, the run's ranks all exit 0 (sweep2_c10d_teardown_warning)
    (STORE_OK, "localhost: [rank1]:[W331 16:39:45.841627790 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl("
               "fd=102, addr=[::]:19725, remote=[fdff:ffff::]:26485): Connection reset by peer"),
    (STORE_OK, "localhost: [rank1]:[W331 16:39:45.845165848 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0(default_pg)"
               " Rank 1] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too"
               " early), with error: Connection reset by peer"),
    (STORE_TP, "localhost: [rank3]:[W322 13:59:25.510921087 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl("
               "fd=114, addr=[::]:46911, remote=[fdff:ffff::]:25024): Broken pipe"),
    # Open MPI 4's openib BTL leaving the device to UCX (sweep2_openib_device_notice), its help aggregation (quiet)
    (HPL, "WARNING: There was an error initializing an OpenFabrics device."),
    (HPL, "[node2:706495] 3 more processes have sent help message help-mpi-btl-openib.txt / error in device init"),
    # libfabric probing Intel Level Zero on an NVIDIA node (libfabric's quiet pattern)
    (PODMAN, "libfabric:1465118:1726684546::core:core:ze_hmem_dl_init():474<warn> Failed to dlopen libze_loader.so"),
    (PODMAN, "libfabric:1465118:1726684546::core:core:ofi_hmem_init():339<warn> Failed to initialize hmem iface"
             " FI_HMEM_ZE: No data available"),
    # a compiler's -Wno-error in the DKMS build log (the library fallback's denied words)
    (TINGYI, DKMS_COMPILE),
    # drivers that step aside at boot (sweep2_boot_fallback_notes)
    (CAFFE, "[    1.301694] ata2.00: READ LOG DMA EXT failed, trying unqueued"),
    (CAFFE, "[    2.284050] EDAC sbridge: ECC is disabled. Aborting"),
    (SERVERLESS, "[    0.628730] shpchp 0000:00:1e.0: Cannot get control of SHPC hotplug"),
    # older kernels' DPC capability line, the PCI core's newer `can't claim;` (benign_noise)
    (SRINI, "[    1.411223] dpc 0000:00:1b.0:pcie010: DPC error containment capabilities: Int Msg #0, RPExt+"
            " PoisonedTLP+ SwTrigger+ RP PIO Log 4, DL_ActiveErr+"),
    (LLAMA3, "[    0.667835] pci 0000:00:1f.5: BAR 0 [mem 0xfe010000-0xfe010fff]: can't claim; no compatible bridge"
             " window"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.", "nccl",
     "error"),
    ("[rank0]:[E331 16:39:45.841627790 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout:"
     " WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600003 milliseconds"
     " before timing out.", "nccl", "error"),
    ("[c10d] sendBytes failed on SocketImpl(fd=114, addr=[::]:46911, remote=[fdff:ffff::]:25024): Connection timed out",
     "nccl", "error"),
    ("The OpenFabrics (openib) BTL failed to initialize while trying to allocate some locked memory.", "ib", "error"),
    ("[haswell-094][[62851,1],3][btl_openib_component.c:1671:init_one_device] error obtaining device attributes for"
     " mlx4_0 errno says Success", "ib", "error"),
    ("libfabric:1680520:1726870658::cxi:mr:cxip_do_map():421<warn> nid003336: cxil_map failed: -22:Invalid argument",
     "ib", "error"),
    ("ata2.00: failed command: READ FPDMA QUEUED", "disk", "warning"),
    ("shpchp 0000:00:1e.0: Controller initialization failed", "pcie", "warning"),
    ("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x0 offset:0x0"
     " grain:32 syndrome:0x0 -  area:DRAM err_code:0001:0091 socket:0 ha:0 channel_mask:2 rank:0)", "mce", "critical"),
    ("dpc 0000:00:1b.0:pcie010: DPC containment event, status:0x1f01 source:0x0000", "aer", "error"),
]

# failures of the claimed families that no rule names: the fallbacks still report them
UNCLAIMED = [
    # FI_HMEM_CUDA on a GPU node: libfabric cannot reach CUDA memory (a container without libcuda.so)
    ("libfabric:1465118:1726684546::core:core:ofi_hmem_init():339<warn> Failed to initialize hmem iface FI_HMEM_CUDA:"
     " No data available", "ib"),
    ("ata2.00: READ LOG DMA EXT failed", "disk"),
    ("EDAC sbridge: Failed to get ECC state. Aborting", "mce"),
    ("pci 0000:3b:00.0: can't enable device: BAR 0 [mem 0xfe010000-0xfe010fff] not claimed", "pcie"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for s, ln in BENIGN if s in (STORE_OK, STORE_TP, HPL, PODMAN)]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS: list[tuple[str, str, bool]] = []
