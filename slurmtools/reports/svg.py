"""Charts as inline SVG (the report is one file for clusters without internet: no scripts, no CDN, no fonts).

Each function returns an SVG element as a string with a fixed viewBox, a <title> and axis labels; with no
data it draws the frame and says so, never an empty element."""

from __future__ import annotations

import math
from html import escape
from typing import Any

W, H = 720, 260
PAD_L, PAD_R, PAD_T, PAD_B = 56, 16, 24, 40
COLORS = {"hardware": "#c0392b", "driver": "#8e44ad", "network": "#2471a3", "filesystem": "#d68910",
          "software": "#7f8c8d", "unknown": "#95a5a6", "productive": "#27ae60", "failed": "#c0392b",
          "recovery": "#d68910", "queue": "#95a5a6", "COMPLETED": "#27ae60"}
PALETTE = ["#16a085", "#2c3e50", "#e67e22", "#9b59b6", "#34495e", "#1abc9c"]


def _color(key: str, i: int = 0) -> str:
    return COLORS.get(key, PALETTE[i % len(PALETTE)])


def _frame(name: str, title: str, body: list[str], x_label: str, y_label: str) -> str:
    return "\n".join([
        f'<svg class="chart" id="{escape(name)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>',
        f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<text x="{(PAD_L + W - PAD_R) / 2}" y="{H - 6}" text-anchor="middle" font-size="12">{escape(x_label)}</text>',
        f'<text x="14" y="{(PAD_T + H - PAD_B) / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {(PAD_T + H - PAD_B) / 2})">{escape(y_label)}</text>',
        *body, "</svg>"])


def _no_data(what: str) -> list[str]:
    return [f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" font-size="14" fill="#777">no {escape(what)} in '
            "this window</text>"]


def _y_ticks(top: float, fmt: str = "{:g}") -> list[str]:
    out = []
    for i in range(5):
        v = top * i / 4
        y = H - PAD_B - (H - PAD_T - PAD_B) * i / 4
        out.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{fmt.format(v)}</text>')
        out.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" stroke="#eee"/>')
    return out


def _legend(keys: list[str]) -> list[str]:
    out = []
    for i, key in enumerate(keys):
        x = PAD_L + 8 + i * 110
        out.append(f'<rect x="{x}" y="6" width="10" height="10" fill="{_color(key, i)}"/>')
        out.append(f'<text x="{x + 14}" y="15" font-size="11">{escape(key)}</text>')
    return out


def failures_over_time(series: dict[str, Any]) -> str:
    points = series.get("points") or []
    title = "Infrastructure failures over time, by category"
    if not points:
        return _frame("failures-over-time", title, _no_data("failures"), "time", "failures")
    buckets = max(p["bucket"] for p in points) + 1
    cats = sorted({p["category"] for p in points})
    stacks: dict[int, list[tuple[str, int]]] = {}
    for p in points:
        stacks.setdefault(p["bucket"], []).append((p["category"], p["count"]))
    top = _nice(max(sum(c for _, c in v) for v in stacks.values()))
    bw = (W - PAD_L - PAD_R) / max(buckets, 1)
    body = _y_ticks(top, "{:.0f}") + _legend(cats)
    for b, parts in sorted(stacks.items()):
        y = float(H - PAD_B)
        for cat, n in sorted(parts, key=lambda p: cats.index(p[0])):
            h = (H - PAD_T - PAD_B) * n / top
            y -= h
            body.append(f'<rect x="{PAD_L + b * bw + 1:.1f}" y="{y:.1f}" width="{max(bw - 2, 1):.1f}" height="{h:.1f}" '
                        f'fill="{_color(cat, cats.index(cat))}"><title>{escape(cat)}: {n}</title></rect>')
    days = series["bucket_s"] / 86400
    body.append(f'<text x="{W - PAD_R}" y="{H - PAD_B + 14}" text-anchor="end" font-size="10">'
                f'bars of {days:.3g} days from {escape(str(series.get("start")))}</text>')
    return _frame("failures-over-time", title, body, "time", "failures")


def mttr_histogram(histogram: list[dict[str, Any]]) -> str:
    """HISTOGRAM: the report's mttr.histogram (every repaired incident, counted per bucket in SQL)."""
    title = "Time to repair per failure incident (log scale)"
    if not sum(b["count"] for b in histogram):
        return _frame("mttr-distribution", title, _no_data("repaired incidents"), "time out of service", "incidents")
    counts = [int(b["count"]) for b in histogram]
    labels = [str(b["label"]) for b in histogram]
    top = _nice(float(max(counts)))
    bw = (W - PAD_L - PAD_R) / len(counts)
    body = _y_ticks(top, "{:.0f}")
    for i, n in enumerate(counts):
        h = (H - PAD_T - PAD_B) * n / top
        x = PAD_L + i * bw
        body.append(f'<rect x="{x + 2:.1f}" y="{H - PAD_B - h:.1f}" width="{bw - 4:.1f}" height="{h:.1f}" '
                    'fill="#2471a3">'
                    f"<title>{labels[i]}: {n}</title></rect>")
        body.append(f'<text x="{x + bw / 2:.1f}" y="{H - PAD_B + 13}" text-anchor="middle" '
                    f'font-size="10">{labels[i]}</text>')
    return _frame("mttr-distribution", title, body, "time out of service", "incidents")


def lorenz(spreads: dict[str, dict[str, Any]]) -> str:
    """Lorenz curves: share of exclusions (and incidents) held by the least-affected share of nodes."""
    title = "Concentration: Lorenz curves of exclusions and incidents over nodes"
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B
    body = _y_ticks(1.0, "{:.0%}")
    body.append(f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{PAD_T}" stroke="#aaa" '
                'stroke-dasharray="4 3"/>')
    drawn = []
    for i, (name, s) in enumerate(spreads.items()):
        total, n = s.get("total") or 0, s.get("nodes") or 0
        if not total or not n:
            continue
        counts = sorted([0] * (n - len(s["per_node"])) + [p["count"] for p in s["per_node"]])
        pts, cum = [(0.0, 0.0)], 0
        for k, c in enumerate(counts, start=1):
            cum += c
            pts.append((k / n, cum / total))
        path = " ".join(f"{PAD_L + x * pw:.1f},{H - PAD_B - y * ph:.1f}" for x, y in pts)
        body.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[i]}" stroke-width="2">'
                    f"<title>{escape(name)}: Gini {s.get('gini')}</title></polyline>")
        drawn.append(name)
    if not drawn:
        return _frame("lorenz", title, _no_data("exclusions or incidents"), "share of nodes", "cumulative share")
    for i, name in enumerate(drawn):
        body.append(f'<rect x="{PAD_L + 8 + i * 110}" y="6" width="10" height="10" fill="{PALETTE[i]}"/>')
        body.append(f'<text x="{PAD_L + 22 + i * 110}" y="15" font-size="11">{escape(name)}</text>')
    return _frame("lorenz", title, body, "share of nodes (least affected first)", "cumulative share")


def chain_timeline(attempts: list[dict[str, Any]]) -> str:
    title = "Retry chains (the worst by ETTR): attempts over time"
    if not attempts:
        return _frame("chain-timeline", title, _no_data("finished retry chains"), "time", "chain")
    chains = list(dict.fromkeys(a["chain_id"] for a in attempts))
    t0 = min(a["s"] for a in attempts)
    t1 = max(a["e"] for a in attempts)
    span = max(t1 - t0, 1.0)
    pw = W - PAD_L - PAD_R
    rh = (H - PAD_T - PAD_B) / len(chains)
    body = []
    for a in attempts:
        row = chains.index(a["chain_id"])
        x = PAD_L + (a["s"] - t0) / span * pw
        w = max((a["e"] - a["s"]) / span * pw, 2.0)
        y = PAD_T + row * rh + rh * 0.15
        color = _color("COMPLETED") if a["state"] == "COMPLETED" else _color("failed")
        body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{rh * 0.7:.1f}" fill="{color}">'
                    f"<title>job {a['job_id']} attempt {a['restart_count']}: {escape(str(a['state']))} "
                    f"{escape(str(a['start']))} .. {escape(str(a['end']))}</title></rect>")
    for i, c in enumerate(chains):
        body.append(f'<text x="{PAD_L - 6}" y="{PAD_T + i * rh + rh / 2 + 4:.1f}" text-anchor="end" '
                    f'font-size="10">#{c}</text>')
    body.append(f'<text x="{W - PAD_R}" y="{H - PAD_B + 14}" text-anchor="end" font-size="10">'
                f"{span / 3600:.3g} h shown; green: completed, red: failed</text>")
    return _frame("chain-timeline", title, body, "time", "chain")


def goodput_bars(worst: list[dict[str, Any]]) -> str:
    title = "Where each chain's wall time went (the worst chains by ETTR)"
    if not worst:
        return _frame("goodput", title, _no_data("finished retry chains"), "share of wall time", "chain")
    keys = [("productive", "productive_s"), ("failed", "failed_attempts_s"), ("recovery", "recovery_s"),
            ("queue", "queue_s")]
    pw = W - PAD_L - PAD_R
    rh = (H - PAD_T - PAD_B) / len(worst)
    body = _legend([k for k, _ in keys])
    for i, c in enumerate(worst):
        wall = c["wall_s"] or 1.0
        x = float(PAD_L)
        y = PAD_T + i * rh + rh * 0.15
        for name, field in keys:
            w = pw * (c[field] or 0.0) / wall
            if w <= 0:
                continue
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{min(w, PAD_L + pw - x):.1f}" height="{rh * 0.7:.1f}" '
                        f'fill="{_color(name)}"><title>job {c["root_job_id"]} {name}: {c[field]} s</title></rect>')
            x += w
        body.append(f'<text x="{PAD_L - 6}" y="{y + rh * 0.45:.1f}" text-anchor="end" font-size="10">'
                    f'{c["root_job_id"]}</text>')
    return _frame("goodput", title, body, "share of wall time", "chain")


def checkpoint_scale(scale: list[dict[str, Any]]) -> str:
    """Per group of nodes saving at once: median queue time and round trip per WRITE RPC, side by side (the study:
    queue time overtakes the round trip as the client's RPC slots saturate)."""
    title = "Checkpoint saves: queue time vs round trip per WRITE, by nodes saving at once"
    rows = [s for s in scale if s.get("queue_ms_per_op_median") is not None or s.get("rtt_ms_per_op_median")]
    if not rows:
        return _frame("checkpoint-scale", title, _no_data("timed saves with RPC times"), "nodes saving at once",
                      "ms per WRITE")
    keys = [("queue", "queue_ms_per_op_median", "#c0392b"), ("round trip", "rtt_ms_per_op_median", "#2471a3")]
    top = _nice(max(float(s.get(f) or 0.0) for s in rows for _, f, _c in keys))
    bw = (W - PAD_L - PAD_R) / len(rows)
    body = _y_ticks(top, "{:g}")
    for i, (name, _f, color) in enumerate(keys):
        body.append(f'<rect x="{PAD_L + 8 + i * 110}" y="6" width="10" height="10" fill="{color}"/>')
        body.append(f'<text x="{PAD_L + 22 + i * 110}" y="15" font-size="11">{escape(name)}</text>')
    for i, s in enumerate(rows):
        x = PAD_L + i * bw
        label = (f"{s['nodes_from']}+" if s.get("nodes_to") is None else
                 str(s["nodes_from"]) if s["nodes_to"] == s["nodes_from"] else f"{s['nodes_from']}-{s['nodes_to']}")
        for j, (name, f, color) in enumerate(keys):
            v = float(s.get(f) or 0.0)
            h = (H - PAD_T - PAD_B) * v / top
            body.append(f'<rect x="{x + 4 + j * (bw - 8) / 2:.1f}" y="{H - PAD_B - h:.1f}" '
                        f'width="{max((bw - 8) / 2 - 2, 1):.1f}" height="{h:.1f}" fill="{color}">'
                        f"<title>{escape(label)} nodes, {name}: {v:g} ms ({s['saves']} saves)</title></rect>")
        body.append(f'<text x="{x + bw / 2:.1f}" y="{H - PAD_B + 13}" text-anchor="middle" '
                    f'font-size="10">{escape(label)}</text>')
    return _frame("checkpoint-scale", title, body, "nodes saving at once", "ms per WRITE (median)")


def _nice(top: float) -> float:
    if top <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(top))
    for step in (1, 2, 2.5, 5, 10):
        if top <= step * mag:
            return float(step * mag)
    return float(10 * mag)
