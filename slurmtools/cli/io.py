"""`slurmtools io`: NFS client I/O per mount (an nfsiostat-like view) and what limits it, live or from files."""

from __future__ import annotations

import time
from typing import Any

import click

from slurmtools.cli.common import echo, emit_json, fail


def _load(path: str) -> list[Any]:
    from slurmtools.iostat import mountstats

    try:
        return mountstats.read(path)
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")
    except mountstats.MountstatsError as exc:
        fail(f"{path}: {exc}")


def _pick(mounts: list[Any], mount: str | None) -> list[Any]:
    return [m for m in mounts if mount is None or mount in (m.mountpoint, m.device)]


@click.command("io")
@click.option("--mountstats", "files", multiple=True, help="A recorded mountstats file; give two (earlier, later) "
                                                           "with --seconds for the rates between them.")
@click.option("--seconds", type=float, help="How far apart the two recorded files were taken.")
@click.option("--mount", help="Only this mount point (or server:/export).")
@click.option("--interval", type=float, default=2.0, show_default=True,
              help="Live: seconds between the two readings of /proc/self/mountstats.")
@click.option("--json", "as_json", is_flag=True, help="One JSON array, a document per mount.")
def io_cmd(files: tuple[str, ...], seconds: float | None, mount: str | None, interval: float, as_json: bool) -> None:
    """Per NFS mount: MB/s, ops/s, round trip, RPC queue time, backlog and slots, and a verdict on what limits
    it (the client's RPC queue, or the server and network) with the settings to look at."""
    from slurmtools.iostat import rates

    if len(files) > 2:
        fail("give one or two --mountstats files")
    if len(files) == 2 and not seconds:
        fail("two --mountstats files need --seconds (how far apart they were taken)")
    if seconds is not None and seconds <= 0:
        fail("--seconds must be more than 0")
    if interval <= 0:
        fail("--interval must be more than 0")
    if len(files) == 1:
        try:
            results = [rates.since_mount(m) for m in _pick(_load(files[0]), mount)]
        except ValueError as exc:
            fail(f"{files[0]}: {exc}")
        what = f"averages since each mount was made ({files[0]})"
    else:
        if files:
            before, after, span = _load(files[0]), _load(files[1]), float(seconds or 0)
        else:
            before = _load("/proc/self/mountstats")
            time.sleep(interval)
            after, span = _load("/proc/self/mountstats"), interval
        earlier = {m.key: m for m in before}
        results = [rates.window(earlier[m.key], m, span) for m in _pick(after, mount) if m.key in earlier]
        what = f"the {span:g} s between the two readings"
    if as_json:
        emit_json(results)
        return
    if not results:
        echo("no NFS mount" + (f" {mount}" if mount else "") + " in the readings")
        return
    echo(f"# {what}")
    for r in results:
        _print(r)


def _f(value: object, spec: str) -> str:
    """VALUE formatted by SPEC, or `n/a` right-aligned to the same width when it is missing."""
    if value is None:
        width = "".join(c for c in spec.split(".")[0] if c.isdigit())
        return format("n/a", f">{width}" if width else "")
    return format(value, spec)


def _print(r: dict[str, Any]) -> None:
    t, v = r["transport"], r["verdict"]
    echo(f"\n{r['device']} on {r['mount']} ({r['fstype']}, vers={r['vers']}, {t['proto']} x{t['connections']})")
    echo(f"  read {_f(r['read_MBps'], '.3g')} MB/s, write {_f(r['write_MBps'], '.3g')} MB/s "
               f"(on the wire {_f(r['wire_read_MBps'], '.3g')} / {_f(r['wire_write_MBps'], '.3g')})")
    echo(f"  {'op':<12} {'ops/s':>10} {'kB/op':>8} {'rtt ms':>8} {'queue ms':>9} {'exec ms':>8} {'retrans':>8}")
    busiest = sorted((n for n in r["ops"] if n not in ("READ", "WRITE")), key=lambda n: -r["ops"][n]["ops"])[:6]
    for name in ("READ", "WRITE", *busiest):
        o = r["ops"].get(name)
        if o:
            echo(f"  {name:<12} {_f(o['ops_per_s'], '>10.1f')} {_f(o['kb_per_op'], '>8.1f')} "
                       f"{_f(o['rtt_ms'], '>8.2f')} {_f(o['queue_ms'], '>9.2f')} {_f(o['execute_ms'], '>8.2f')} "
                       f"{_f(o['retransmissions'], '>8')}")
    if t["mean_in_flight"] is not None:
        echo(f"  transport: {_f(t['sends_per_s'], '.1f')} sends/s, {t['mean_in_flight']:.1f} requests in "
                   f"flight, backlog {_f(t['mean_backlog'], '.1f')}, slot table {t['max_slots'] or '?'}")
    for note in r.get("missing", []):
        echo(f"  missing: {note}")
    if v["limit"]:
        echo(f"  limit: {v['limit']}: {v['why']}")
        for a in v["advice"]:
            echo(f"    - {a['setting']}: {a['why']} [{a['reference']}]")
