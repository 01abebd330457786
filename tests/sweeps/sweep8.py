"""Benign lines of whole public logs that once raised a warning or worse: the eighth sweep (whole public logs none of
the earlier sweeps used: the dmesg of GPU servers and workstations from the dmesg section of nvidia-bug-report logs
committed to GitHub (a Supermicro SYS-4029GP-TRT2 8-GPU server, Lambda Vector, ASUS Z10PE-D8 WS, Dell Precision 5820
and desktops), a ROCm mining rig's dmesg, a Marvell Octeon 10 server under five distributions, a SpacemiT K3 board, a
KVM server's dmesg and kern.log, a ZFS host's dmesg; the Slurm output of MLPerf training v4.0 and v3.1 and HPC v3.0
submissions; vLLM and SGLang servers; docs/diagnosis.md). Each family's benign line, verbatim with its source, stays
below warning, in the kernel scan and in the job scan (the epilog reads a job's output through diagnose_job_output),
and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

GH = "https://github.com"
MLPERF = f"{GH}/mlcommons"
ORACLE_LORA = (f"{MLPERF}/training_results_v4.0/blob/6fe954378efe4a1a1bd665550b18ff8f26018def/Oracle/results/"
               "1xBM.GPU.H100.8/llama2_70b_lora/result_4.txt")
ROCM_RIG = f"{GH}/earlvanze/AMD-ROCm-Miner/blob/b72e268d3a8dc529144c2502124ab67ab82b4fd5/dmesg.txt"

# (source, benign line) per family; the rule that claims each is in data/diagnosis_rules.toml (`sweep8_*`)
BENIGN = [
    # TransformerEngine's userbuffers opening GDRCopy on a node without gdrdrv: create_communicator_grouped2() returns
    # -1 after the communicator is built, its callers ignore it, the flags page is never read, the run trains
    # (sweep8_te_userbuffers_gdrcopy_open, before unrecognised); every rank of the run prints it behind srun -l's prefix
    (ORACLE_LORA, "2: gdrcopy open failed"),
    (ORACLE_LORA, "0: gdrcopy open failed"),
    # the PCI core's resource notes for a bound device while amdgpu tries a large-BAR resize: the upstream port's
    # prefetchable window cannot grow, amdgpu prints `Not enough PCI address space for a large BAR.` and the original
    # BARs are assigned again (sweep8_pci_bound_resize_notes, before unrecognised)
    (ROCM_RIG, "[    8.381992] pcieport 0000:00:1c.7: BAR 15: failed to assign [mem size 0x300000000 64bit pref]"),
    (ROCM_RIG, "[    8.382770] amdgpu 0000:07:00.0: BAR 0: failed to assign [mem size 0x200000000 64bit pref]"),
    (ROCM_RIG, "[    8.383573] amdgpu 0000:07:00.0: BAR 2: failed to assign [mem size 0x00200000 64bit pref]"),
]

# the same printers reporting a failure: (line, kind, severity) from a rule (userbuffers-host.cpp's CUDACHECK; amdgpu
# failing to initialise the GPU)
FAULTS = [
    ("Failed: Cuda error /workspace/TransformerEngine/transformer_engine/pytorch/csrc/userbuffers/userbuffers-host.cpp"
     ":362 'out of memory'", "cuda", "error"),
    ("Failed: Cuda error userbuffers-host.cpp:361 'an illegal memory access was encountered'", "cuda", "error"),
    ("amdgpu 0000:07:00.0: amdgpu: Fatal error during GPU init", "gpu_init", "error"),
]

# failures of the claimed family that no rule names: the subsystem fallback still reports them (a gdrdrv that is
# there and cannot pin or map the page, or a longer text after the open failure)
UNCLAIMED = [
    ("gdr_pin_buffer failed", "ib"),
    ("0: gdr_map failed", "ib"),
    ("gdrcopy open failed: no such device", "ib"),
    # a BAR a resize never asks for, another driver's BAR, a bridge's I/O window
    ("amdgpu 0000:07:00.0: BAR 5: failed to assign [mem size 0x00040000]", "gpu_init"),
    ("amdgpu 0000:07:00.0: BAR 4: failed to assign [io  size 0x0100]", "gpu_init"),
    ("pcieport 0000:00:1c.7: BAR 13: failed to assign [io  size 0x1000]", "pcie"),
]

# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [(FAULTS[1][0], "cuda", False), ("3: " + UNCLAIMED[0][0], "ib", True)]
