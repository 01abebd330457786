"""PCIe link check (fail-slow): each GPU's link (NVML) and each RDMA NIC's link (sysfs) against its maximum.

A GPU or NIC that trained at x8 instead of x16, or at Gen4 in a Gen5 slot, works, and is slow: it makes the
whole job wait at every collective. Nothing breaks, so nothing else here sees it.

* Width: the current width below the link's maximum (NVML ``nvmlDeviceGetMaxPcieLinkWidth``: the most the GPU
  *and* the slot allow; sysfs ``max_link_width``) is judged at all times.
* Generation: GPUs lower their link generation when idle to save power (NVIDIA's documentation of
  ``pcie.link.gen.current``: "may be reduced when the GPU is not in use"; an idle H100 may read Gen1). So a
  GPU's current generation is judged only when NVML does not report it idle (clock event reason ``GPU idle``);
  at idle it is recorded, not judged. The fail-slow probe (checks/perf.py) reads the link again while it loads
  the GPU, which is where a Gen4-trained link shows. NICs do not trade speed for power: judged always.
* Platform: a GPU whose own maximum generation (``nvmlDeviceGetGpuMaxPcieLinkGeneration``) is above what the
  slot allows (``nvmlDeviceGetMaxPcieLinkGeneration``) sits in a slower slot or riser than it was built for.
* The profile's ``pcie_min_gen`` / ``pcie_min_width`` (0: the link's own maximum) is the floor for maxima too,
  and ``pcie_slow`` says what a slow link is: ``warn`` (default), ``fail`` (the node must run at full width), or
  ``off``.
"""

from __future__ import annotations

from slurmtools.checks import Context, Result, fail, ok, warn
from slurmtools.checks import system as sysmod
from slurmtools.checks.gpu import bus_id

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

NAME = "pcie"
GPU_IDLE = 0x1
IB_ROOT = "sys/class/infiniband"
#: PCIe transfer rate (GT/s, as sysfs writes it) -> generation.
GT_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}


def level(ctx: Context) -> str:
    return ctx.hardware.pcie_slow


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    how = level(ctx)
    if how == "off":
        return [ok(NAME, "PCIe link check off (pcie_slow = off)")]
    min_gen, min_width = ctx.hardware.pcie_min_gen, ctx.hardware.pcie_min_width
    slow: list[tuple[str, list[int], dict[str, Any]]] = []
    links: list[dict[str, Any]] = []
    unjudged: list[str] = []
    if system.nvml_init() is None:
        nvml = system.nvml
        for index in range(int(nvml.nvmlDeviceGetCount())):
            try:
                link = gpu_link(system, index)
            except system.NVMLError:
                continue            # the GPU check reports a GPU NVML cannot query
            if link is None:
                continue
            links.append(link)
            problems = judge(link, min_gen, min_width, judge_gen=not link["idle"])
            if link["idle"] and link["gen"] < link["max_gen"]:
                unjudged.append(f"GPU {index} Gen{link['gen']} at idle")
            if problems:
                slow.append((f"{link['name']}: {'; '.join(problems)}", [index], link))
    for dev in system.fs.listdir(IB_ROOT):
        if dev in list(ctx.hardware.ib_exclude):
            continue
        link = nic_link(system.fs, dev)
        if link is None:
            continue
        links.append(link)
        problems = judge(link, min_gen, min_width, judge_gen=True)
        if problems:
            slow.append((f"{link['name']}: {'; '.join(problems)}", [], link))
    if not slow:
        text = f"{len(links)} PCIe links at their maximum" if links else "no PCIe link state reported"
        if unjudged:
            text += f" ({len(unjudged)} idle GPUs below their maximum generation, not judged: idle GPUs lower it)"
        return [ok(NAME, text, links=len(links), idle_not_judged=unjudged[:16])]
    maker = fail if how == "fail" else warn
    return [maker(NAME, f"{text} (fail-slow)", gpus, link=link, fail_slow=True) for text, gpus, link in slow]


def judge(link: dict[str, Any], min_gen: int, min_width: int, *, judge_gen: bool) -> list[str]:
    """What is slow about one link: current below maximum, maximum below the profile's floor, a slot
    below the GPU's own maximum."""
    out = []
    if link["width"] and link["max_width"] and link["width"] < link["max_width"]:
        out.append(f"PCIe x{link['width']}, capable of x{link['max_width']}")
    elif min_width and link["width"] and link["width"] < min_width:
        out.append(f"PCIe x{link['width']}, the profile requires x{min_width}")
    if judge_gen and link["gen"] and link["max_gen"] and link["gen"] < link["max_gen"]:
        out.append(f"PCIe Gen{link['gen']}, capable of Gen{link['max_gen']}")
    elif min_gen and link["max_gen"] and link["max_gen"] < min_gen:
        out.append(f"PCIe at most Gen{link['max_gen']}, the profile requires Gen{min_gen}")
    own = link.get("device_max_gen")
    if own and link["max_gen"] and link["max_gen"] < own:
        out.append(f"the slot allows Gen{link['max_gen']}, the GPU Gen{own}")
    return out


def gpu_link(system: sysmod.System, index: int) -> dict[str, Any] | None:
    """One GPU's link as NVML reports it (None where the GPU does not report its link)."""
    nvml = system.nvml
    h = nvml.nvmlDeviceGetHandleByIndex(index)

    def q(call: str) -> int:
        try:
            return int(getattr(nvml, call)(h))
        except system.NVMLError as exc:
            if type(exc).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
                return 0
            raise

    link = {"kind": "gpu", "index": index, "gen": q("nvmlDeviceGetCurrPcieLinkGeneration"),
            "width": q("nvmlDeviceGetCurrPcieLinkWidth"), "max_gen": q("nvmlDeviceGetMaxPcieLinkGeneration"),
            "max_width": q("nvmlDeviceGetMaxPcieLinkWidth"),
            "device_max_gen": q("nvmlDeviceGetGpuMaxPcieLinkGeneration"),
            "idle": bool(q("nvmlDeviceGetCurrentClocksEventReasons") & GPU_IDLE)}
    if not (link["gen"] or link["width"]):
        return None
    try:
        link["name"] = f"GPU {index} ({bus_id(nvml.nvmlDeviceGetPciInfo(h).busId)})"
    except system.NVMLError:
        link["name"] = f"GPU {index}"
    return link


def gen_of(text: str | None) -> int:
    """sysfs `32.0 GT/s PCIe` (or `16 GT/s`) -> 5; 0 for anything else (`Unknown`)."""
    parts = (text or "").split()
    try:
        return GT_TO_GEN.get(float(parts[0]), 0) if parts else 0
    except ValueError:
        return 0


def width_of(text: str | None) -> int:
    raw = (text or "").strip().lstrip("x")
    return int(raw) if raw.isdigit() else 0


def nic_link(fs: sysmod.Fs, dev: str) -> dict[str, Any] | None:
    """An RDMA NIC's link from its PCI function's sysfs files (None where they are absent)."""
    base = f"{IB_ROOT}/{dev}/device"
    link = {"kind": "nic", "name": dev, "gen": gen_of(fs.read(f"{base}/current_link_speed")),
            "width": width_of(fs.read(f"{base}/current_link_width")),
            "max_gen": gen_of(fs.read(f"{base}/max_link_speed")),
            "max_width": width_of(fs.read(f"{base}/max_link_width"))}
    if not (link["gen"] or link["width"]):
        return None
    return link
