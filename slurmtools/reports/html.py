"""The report as one self-contained HTML file: jinja2, inline CSS and inline SVG charts, no script, no network."""

from __future__ import annotations

from typing import Any

import jinja2
from markupsafe import Markup

from slurmtools.checks.perfprobe import METRICS
from slurmtools.reports import render, svg


def render_html(report: dict[str, Any]) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("slurmtools.reports", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["dur"] = render.dur
    env.filters["pct"] = lambda v: render.fmt(v, "%")
    env.filters["num"] = render.fmt
    charts = report.get("charts") or {}
    drawn = {
        "failures": svg.failures_over_time(charts.get("failures_over_time") or {}),
        "mttr": svg.mttr_histogram((report.get("mttr") or {}).get("histogram") or []),
        "lorenz": svg.lorenz({k: v for k, v in (report.get("concentration") or {}).items()
                              if k in ("exclusions", "incidents")}),
        "timeline": svg.chain_timeline(charts.get("chain_timeline") or []),
        "goodput": svg.goodput_bars((report.get("goodput") or {}).get("worst") or []),
        "checkpoints": svg.checkpoint_scale((report.get("checkpoints") or {}).get("scale") or []),
    }
    return env.get_template("report.html.j2").render(r=report, charts={k: Markup(v) for k, v in drawn.items()},
                                                      perf_metrics=METRICS)
