"""NVLink check (NVML): active links per GPU against the profile; replay/recovery/CRC counters judged
by their increase between runs (strikes in a window), never by their lifetime totals."""

from __future__ import annotations

from slurmtools.checks import Context, Result, fail, ok, unknown, warn
from slurmtools.checks import system as sysmod

NAME = "nvlink"


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    expected = ctx.hardware.nvlinks_per_gpu
    if expected == 0:
        return [ok(NAME, "no NVLink expected")]
    if system.nvml_init() is not None:
        # The GPU check reports NVML itself; without it there is nothing to say about links.
        if ctx.hardware.gpus > 0:
            return [unknown(NAME, "NVML unavailable")]
        return [ok(NAME, "no NVML on this node")]
    nvml = system.nvml
    results: list[Result] = []
    links: dict[int, tuple[int, list[int]]] = {}
    no_nvlink: list[int] = []      # GPUs whose NVML answers "not supported" for every link
    for index in range(int(nvml.nvmlDeviceGetCount())):
        try:
            h = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = str(nvml.nvmlDeviceGetUUID(h))
            active, down, errors = _links(system, h)
            if active == 0 and not down and not _supported(system, h):
                no_nvlink.append(index)
        except system.NVMLError as exc:
            if type(exc).__name__ == "NVMLError_GpuIsLost":
                results.append(fail(NAME, f"GPU {index}: GPU is lost", [index]))
            else:
                results.append(unknown(NAME, f"GPU {index}: NVLink query failed: {exc}"))
            continue
        links[index] = (active, down)
        results.extend(_judge_counters(ctx, index, uuid, errors))
    # Without a profile, the GPUs of one node must at least agree: fewer links than the best GPU is a fault.
    want = expected if expected > 0 else max((a for a, _ in links.values()), default=0)
    for index, (active, down) in links.items():
        if active < want and index in no_nvlink:
            results.append(fail(NAME, f"GPU {index}: no NVLink visible to NVML on this GPU (expected {want})",
                                [index], active=0, nvlink_supported=False))
        elif active < want:
            results.append(fail(NAME, f"GPU {index}: {active} of {want} NVLinks active (down: "
                                      f"{','.join(map(str, down[:8]))})", [index], active=active, down=down))
    total_active = sum(a for a, _ in links.values())
    if not any(r.status != "ok" for r in results):
        results.append(ok(NAME, f"{total_active} NVLinks active, error counters steady", active=total_active))
    return results


def _supported(system: sysmod.System, h: object) -> bool:
    """Does NVML know of any NVLink on this GPU? False where link 0 answers "not supported" (a PCIe GPU,
    or a VM that does not pass NVLink through): then there are no links to be down."""
    try:
        system.nvml.nvmlDeviceGetNvLinkState(h, 0)
    except system.NVMLError as exc:
        return type(exc).__name__ != "NVMLError_NotSupported"
    return True


def _links(system: sysmod.System, h: object) -> tuple[int, list[int], dict[str, int]]:
    """Active link count, down links, and each counter summed over the GPU's links."""
    nvml = system.nvml
    active, down = 0, []
    errors = dict.fromkeys(sysmod.NVLINK_COUNTERS, 0)
    for link in range(sysmod.NVLINK_MAX_LINKS):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(h, link)
        except system.NVMLError as exc:
            if type(exc).__name__ in ("NVMLError_InvalidArgument", "NVMLError_NotSupported"):
                break   # past the GPU's last link (or no NVLink at all)
            raise
        if state:
            active += 1
            for name, counter in sysmod.NVLINK_COUNTERS.items():
                try:
                    errors[name] += int(nvml.nvmlDeviceGetNvLinkErrorCounter(h, link, counter))
                except system.NVMLError:
                    pass   # counter not supported on this link/generation
        else:
            down.append(link)
    return active, down, errors


def _judge_counters(ctx: Context, index: int, uuid: str, errors: dict[str, int]) -> list[Result]:
    s = ctx.settings
    out: list[Result] = []
    for name, value in errors.items():
        obs = ctx.counters.observe(f"nvlink/{uuid}/{name}", value, s.nvlink_errors_per_run)
        if not obs.strike:
            continue
        text = f"GPU {index}: NVLink {name} errors +{obs.delta} ({obs.strikes} of {s.strikes} strikes in " \
               f"{s.window:g}s)"
        maker = fail if obs.strikes >= s.strikes else warn
        out.append(maker(NAME, text, [index], counter=name, delta=obs.delta, strikes=obs.strikes))
    return out
