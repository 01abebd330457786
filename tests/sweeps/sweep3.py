"""Benign lines of whole public logs that once raised a warning or worse: the third sweep (whole public logs none of
the earlier sweeps used: nvidia-bug-report.log files, server, laptop and board dmesg (x86, a Jetson, RISC-V and ARM
boards), journals and syslogs, ALCF Polaris's and a 2-node H100 cluster's NCCL job output, lspci -vv and rocminfo;
docs/diagnosis.md). Each family's benign line, verbatim with its source, stays below warning, and its fault twin (the
same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
JETSON = f"{GH}/HighlandersFRC/MIRV-Robot/blob/9f463de034dd7c8efb2a4af15363f3b92d270c32/dmesg.out"
POLARIS = (f"{GH}/argonne-lcf/alcf-nccl-tests/blob/385be33604ccebd32691c0805b5803eba7109b5d/"
           "pytests/resnet50/results/2025-06-27-09-51-31/with_aws.log")
LAPTOP_SD = f"{GH}/blogle/dotfiles/blob/5956fb30601c0e68fae9679f123db66e4229538d/dmesg.out"
LAPTOP_GPU = f"{GH}/Crany-web/log/blob/c3fffa019598fcd432fd8c22b7fb911fc9f2731f/dmesg.txt"
LAPTOP_AMD = f"{GH}/rebay1982/configs/blob/ae9fd543ccb453198d6726896c66e998ded51726/dmesg.log"
ALLWINNER = f"{GH}/aiiaiiiyo/logs/blob/9b3c62eb262ce2e480a412bc3ef95a9b93b1f30b/dmesg.txt"
OMEN = f"{GH}/Shaydu/mondrian-macos/blob/3e62999c1b2efd3f6deadd3784ad7fe580bb5c28/nvidia-bug-report.log.gz"
DOTA = f"{GH}/danslo/Dota-2/blob/a7b5a2be9dbafa911b59392a68f9f5117c142819/nvidia-bug-report.log.gz"

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep3_*`)
BENIGN = [
    # squashfs without xattr support mounting an image with xattrs (sweep3_squashfs_xattr_note, before disk_misc)
    (JETSON, "[   10.479426] squashfs: SQUASHFS error: Xattrs in filesystem, these will be ignored"),
    # libfabric's start-up probe of GDRCopy without the gdrdrv module (sweep3_libfabric_gdrcopy_probe, before
    # verbs_job_error)
    (POLARIS, "libfabric:1612790:1751035971::core:core:cuda_gdrcopy_hmem_init():201<warn> gdr_open failed!"),
    (POLARIS, "libfabric:1612792:1751035971::core:core:cuda_hmem_init():486<warn> gdrcopy initialization failed!"
              " gdrcopy will not be used."),
    # probe-time and display notes that reached the subsystem fallback (sweep3_boot_fallback_notes)
    (LAPTOP_SD, "[    3.204224] mmc0: cannot verify signal voltage switch"),
    (LAPTOP_GPU, "[    3.736064] nvidia-modeset: WARNING: GPU:0: Unable to read EDID for display device DP-2"),
    (OMEN, "2026-01-26T12:54:11.909389-07:00 omen kernel: nvidia-modeset: WARNING: GPU:0: HDMI FRL link training"
           " failed."),
    (LAPTOP_SD, "[   18.137204] nvidia 0000:01:00.0: [drm] Cannot find any crtc or sizes"),
    (DOTA, "[   14.073218] NVRM: corruption and stability problems, and is not supported."),
    (LAPTOP_AMD, "[    1.081112] pci 0000:00:00.2: AMD-Vi: Unable to read/write to IOMMU perf counter."),
    (ALLWINNER, "[    5.810415] dummy_sdmmc: probe of mmc1:0001:1 failed with error -123"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule
FAULTS = [
    ("[   10.479426] SQUASHFS error: Unable to read page, block 1a2b3c, size 4f00", "disk", "warning"),
    ("libfabric:1680520:1726870658::cxi:mr:cxip_do_map():421<warn> nid003336: cxil_map failed: -22:Invalid argument",
     "ib", "error"),
    ("[    3.204224] mmc0: error -110 whilst initialising SD card", "disk", "warning"),
    ("[ 8127.332140] nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress: 0x0000c67d:0 2:0:4048:4040",
     "gsp", "warning"),
    ("[   14.073218] NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x22:0x56:742)", "gpu_init", "critical"),
]

# failures of the claimed families that no rule names: the fallback still reports them
UNCLAIMED = [
    ("[   18.137204] nvidia 0000:01:00.0: [drm] *ERROR* fbdev: Failed to setup emulation (ret=-12)", "gsp"),
    ("[    5.810415] dummy_sdmmc: probe of mmc1:0001:1 failed with error -5", "disk"),
    ("[    3.736064] nvidia-modeset: WARNING: GPU:0: Unable to read EDID for display device DP-2: timeout", "gsp"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for s, ln in BENIGN if s == POLARIS]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS: list[tuple[str, str, bool]] = []
