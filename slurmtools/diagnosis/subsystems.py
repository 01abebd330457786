"""Which hardware subsystem a kernel message comes from: the tags their messages begin with, as data.

`subsystem_of(message)` names the subsystem of a message (after the envelope: `lines.normalise`) or None. The
envelope parser uses the same tags to find where a message starts, and the scan's prefilter passes a line that
holds a tag and a word of `ERROR_WORDS` (so that a failure no rule knows yet can still be reported: the
"unrecognised hardware error" fallback) as well as every line that holds a rule's literal.

A message that begins with a task's name (`TASK_FIRST`: `NAME[PID]: segfault`, `NAME invoked oom-killer`, ...)
has no subsystem, whatever the name spells: a job chooses its process names. The one exception is a daemon tag
too long to be a task's name (a task's name has at most 15 bytes): `nvidia-fabricmanager[PID]:` is a syslog
line (anyone could write it with logger(1): such findings have trust `syslog` and never drain).
"""

from __future__ import annotations

import re

#: Subsystem -> the tags its messages begin with (regular expressions, matched at the message's start). A tag
#: must be followed by what the kernel prints after it (a colon, a device, a space), never by `[PID]`.
SUBSYSTEMS: dict[str, tuple[str, ...]] = {
    "nvidia": (r"NVRM(?::|\b)", r"nvidia-(?:modeset|uvm|drm|peermem|nvlink|vgpu-vfio)(?::| )",
               r"nvidia(?: [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])?:", r"nvidia_uvm:",
               r"\[drm:nv_drm\w*\]", r"nv_peer_mem"),
    "nvswitch": (r"nvidia-nvswitch\d*:", r"NVSwitch", r"nvswitch\d*:"),
    "fabric_manager": (r"nv(?:idia)?-fabricmanager(?:\[\d+\])?:",),
    "ib": (r"mlx[45]_(?:core|ib|en)\b", r"mlx[45]_\w+:", r"ib_(?:core|ipoib|mad|umad|uverbs|cm|srp|iser)\b:?",
           r"ibp\w+:", r"ib\d+:", r"infiniband\b", r"rdma_\w+:", r"hfi1\b", r"bnxt_re\b", r"irdma\b", r"ipoib\b",
           r"mlx[45]_\w+ [0-9a-fA-F]{4}:"),
    "pcie": (r"pcieport ", r"pciehp ", r"pciehp:", r"pci [0-9a-fA-F]{4}:", r"pci_bus [0-9a-fA-F]{4}:", r"DPC:",
             r"AER:", r"PCIe Bus Error"),
    "mce": (r"EDAC\b", r"mce:", r"\{\d+\}\[Hardware Error\]", r"\[Hardware Error\]", r"GHES:", r"ghes\b", r"RAS:",
            r"Memory failure:", r"mcelog:", r"MCE:", r"Machine check", r"CPU \d+: Machine Check", r"soft offline:"),
    "disk": (r"nvme\d*(?:n\d+)?(?:p\d+)?(?::| )", r"blk_update_request:", r"print_req_error:", r"I/O error",
             r"Buffer I/O error", r"EXT4-fs\b", r"XFS\b", r"BTRFS\b", r"ata\d+(?:\.\d+)?:", r"sd \d+:\d+:\d+:\d+:",
             r"scsi \d+:", r"scsi_io_completion", r"md/raid\d*:", r"md\d+: ", r"blk_\w+:",
             r"critical (?:medium|target) error", r"dm-\d+:", r"JBD2:", r"megaraid_sas", r"mpt[23]?sas"),
    "lustre": (r"LustreError\b", r"LNetError\b", r"Lustre:", r"LNet:"),
    "nfs": (r"nfs:", r"NFS:", r"nfs4\w*:", r"NFSv4", r"lockd:", r"NFSD:", r"RPC:", r"rpcbind:", r"mmfs\b", r"GPFS\b"),
    "thermal": (r"CPU\d+: (?:Core|Package) temperature", r"thermal\b", r"thermal_zone\d*:", r"intel_powerclamp",
                r"coretemp\b"),
    "usb": (r"xhci_hcd\b", r"xhci\b", r"usb \d+-[\d.]+:"),
    "net": (r"NETDEV WATCHDOG", r"bnxt_en\b", r"i40e\b", r"ice [0-9a-fA-F]{4}:", r"ena [0-9a-fA-F]{4}:", r"ixgbe\b",
            r"igb\b", r"e1000e\b", r"tg3\b"),
}

#: The words of a failure: a line with a subsystem's tag and one of these is decoded even if no rule's literal
#: is in it (matched without case; the prefilter looks for them as they stand here).
ERROR_WORDS: tuple[str, ...] = (
    "error", "fail", "timeout", "timed out", "fatal", "cannot", "can't", "unable", "halt", "down", "degrad",
    "lost", "abort", "corrupt", "critical", "panic", "hung", "stuck", "not responding", "reset", "fault", "offline",
    "throttl", "uncorrect", "exceed", "bad ", "invalid", "denied", "refused", "unrecover", "broken", "missing",
)

#: The literal part of every tag: what the prefilter looks for (a line with none of them has no subsystem).
TAG_LITERALS: tuple[str, ...] = (
    "NVRM", "nvidia", "nv_drm", "nv_peer_mem", "NVSwitch", "nvswitch", "fabricmanager", "mlx4_", "mlx5_", "ib_",
    "ibp", *(f"ib{i}" for i in range(10)), "infiniband", "rdma_", "hfi1", "bnxt_", "irdma", "ipoib",
    "pcieport", "pciehp", "pci 0", "pci_bus", "DPC:", "AER:", "PCIe Bus Error", "EDAC", "mce:", "Hardware Error",
    "GHES", "ghes", "RAS:", "Memory failure", "mcelog", "MCE:", "Machine check", "Machine Check", "soft offline",
    "nvme", "blk_", "print_req_error", "I/O error", "EXT4-fs", "XFS", "BTRFS", "ata", "sd ", "scsi", "md/raid",
    *(f"md{i}" for i in range(10)), "critical medium", "critical target", "dm-", "JBD2",
    "megaraid", "mpt2sas", "mpt3sas", "mptsas", "LustreError", "LNetError", "Lustre:", "LNet:", "nfs", "NFS", "lockd:",
    "RPC:", "rpcbind", "mmfs", "GPFS", "temperature", "thermal", "intel_powerclamp", "coretemp", "xhci", "usb ",
    "NETDEV WATCHDOG", "i40e", "ice 0", "ena 0", "ixgbe", "igb", "e1000e", "tg3",
)

#: Messages that the kernel begins with a task's name (at most 15 bytes, anything a job chooses with prctl):
#: `NAME[PID]: segfault at`, `traps: NAME[PID] general protection`, `NAME invoked oom-killer`, `NAME (PID):
#: drop_caches`, `NAME: page allocation failure`, and the `CPU: N PID: N Comm: NAME` dump header. Only rules
#: that say so (`anchor = "task"`, or a syslog or job rule) read such a line, and none of them drains.
TASK_FIRST = re.compile(
    r"^(?:traps: |process '|audit: )"
    r"|^.{1,15}?(?:\[\d+\](?::| )| \(\d+\): | invoked oom-killer|: page allocation failure|: Corrupted page table"
    r"|: potentially unexpected fatal signal)"
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: "
    r"|^[\w./-]+\[\d+\]: ", re.S)   # and a userspace program's syslog line, `TAG[PID]: ` (logger -t TAG ...)

#: Daemon tags longer than a task's name can be: their syslog lines have a subsystem (with trust `syslog`).
DAEMON_TAGS = re.compile(r"nv(?:idia)?-fabricmanager\[\d+\]: ")

_ORDER = tuple(SUBSYSTEMS)
#: Every tag as one pattern, each subsystem a named group (the envelope parser uses `ANY_TAG` too).
ANY_TAG = re.compile("|".join(f"(?P<{name}>{'|'.join(tags)})" for name, tags in SUBSYSTEMS.items()))
_ERROR = re.compile("|".join(re.escape(w) for w in ERROR_WORDS), re.I)


def subsystem_of(message: str) -> str | None:
    """The hardware subsystem MESSAGE (a message after its envelope) comes from, or None (no known tag at its
    start, or the message begins with a task's name)."""
    if TASK_FIRST.match(message):
        daemon = DAEMON_TAGS.match(message)
        return "fabric_manager" if daemon else None
    m = ANY_TAG.match(message)
    return m.lastgroup if m else None


def has_error_words(text: str) -> bool:
    """Whether TEXT holds a word of a failure (ERROR_WORDS, without case)."""
    return _ERROR.search(text) is not None
