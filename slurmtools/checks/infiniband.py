"""RoCE/InfiniBand check (sysfs): port state, physical state, rate and link layer against the profile;
for RoCE the netdev's carrier; error counters judged by their increase (link_downed: at once)."""

from __future__ import annotations

from slurmtools.checks import Context, Result, fail, ok, warn
from slurmtools.checks import system as sysmod

NAME = "infiniband"
ROOT = "sys/class/infiniband"
ERROR_COUNTERS = ("symbol_error", "link_error_recovery", "port_rcv_errors")


def _value(text: str | None) -> str:
    """`4: ACTIVE` -> `ACTIVE`; `400 Gb/sec (4X NDR)` -> as is."""
    text = (text or "").strip()
    head, sep, rest = text.partition(":")
    return rest.strip() if sep and head.isdigit() else text


def _rate_gbps(text: str | None) -> float:
    parts = (text or "").split()
    try:
        return float(parts[0]) if len(parts) >= 2 and parts[1].startswith("Gb/sec") else 0.0
    except ValueError:
        return 0.0


def ports(fs: sysmod.Fs, exclude: list[str]) -> list[tuple[str, str]]:
    return [(dev, port) for dev in fs.listdir(ROOT) if dev not in exclude
            for port in fs.listdir(f"{ROOT}/{dev}/ports")]


def run(system: sysmod.System, ctx: Context) -> list[Result]:
    hw = ctx.hardware
    fs = system.fs
    found = ports(fs, list(hw.ib_exclude))
    want_layer = hw.ib_link_layer.lower()
    if want_layer:
        found = [(d, p) for d, p in found
                 if (fs.read(f"{ROOT}/{d}/ports/{p}/link_layer") or "").strip().lower() == want_layer]
    expected = hw.ib_ports
    results: list[Result] = []
    if expected >= 0 and len(found) != expected:
        results.append(fail(NAME, f"{len(found)} {hw.ib_link_layer or 'RDMA'} ports present, expected {expected}",
                            ports=[f"{d}/{p}" for d, p in found]))
    for dev, port in found:
        results.extend(_port(fs, ctx, dev, port))
    if not any(r.status != "ok" for r in results):
        results.append(ok(NAME, f"{len(found)} ports active" if found else "no RDMA ports", ports=len(found)))
    return results


def _port(fs: sysmod.Fs, ctx: Context, dev: str, port: str) -> list[Result]:
    hw = ctx.hardware
    base = f"{ROOT}/{dev}/ports/{port}"
    name = f"{dev}/{port}"
    state = _value(fs.read(f"{base}/state"))
    phys = _value(fs.read(f"{base}/phys_state"))
    rate_text = (fs.read(f"{base}/rate") or "").strip()
    layer = (fs.read(f"{base}/link_layer") or "").strip()
    out: list[Result] = []
    if state != "ACTIVE" or phys != "LinkUp":
        out.append(fail(NAME, f"{name}: port {state or '?'} / {phys or '?'}", port=name, state=state, phys_state=phys))
        return out
    want = float(hw.ib_rate_gbps)
    if want and _rate_gbps(rate_text) < want:
        out.append(fail(NAME, f"{name}: rate {rate_text}, expected {want:g} Gb/sec", port=name, rate=rate_text))
    if layer.lower() == "ethernet":
        for ifname in fs.listdir(f"{ROOT}/{dev}/device/net"):
            oper = (fs.read(f"{ROOT}/{dev}/device/net/{ifname}/operstate") or "").strip()
            carrier = (fs.read(f"{ROOT}/{dev}/device/net/{ifname}/carrier") or "").strip()
            if oper != "up" or carrier != "1":
                out.append(fail(NAME, f"{name}: RoCE netdev {ifname} {oper or '?'} (carrier {carrier or '?'})",
                                port=name, netdev=ifname))
    out.extend(_counters(fs, ctx, base, name))
    return out


def _counters(fs: sysmod.Fs, ctx: Context, base: str, name: str) -> list[Result]:
    s = ctx.settings
    out: list[Result] = []
    downed = fs.read(f"{base}/counters/link_downed")
    if downed is not None and downed.strip().isdigit():
        obs = ctx.counters.observe(f"ib/{name}/link_downed", int(downed), 0)
        if obs.strike:
            maker = fail if obs.strikes >= s.ib_link_downed_strikes else warn
            out.append(maker(NAME, f"{name}: link went down {obs.delta} times since the last check", port=name,
                             counter="link_downed", delta=obs.delta, strikes=obs.strikes))
    for counter in ERROR_COUNTERS:
        raw = fs.read(f"{base}/counters/{counter}")
        if raw is None or not raw.strip().isdigit():
            continue
        obs = ctx.counters.observe(f"ib/{name}/{counter}", int(raw), s.ib_errors_per_run)
        if obs.strike:
            maker = fail if obs.strikes >= s.strikes else warn
            out.append(maker(NAME, f"{name}: {counter} +{obs.delta} ({obs.strikes} of {s.strikes} strikes)",
                             port=name, counter=counter, delta=obs.delta, strikes=obs.strikes))
    return out
