"""A report as text a person reads in a terminal, or as CSV (one `section,metric,value` row per number)."""

from __future__ import annotations

import csv
import io
from typing import Any

from slurmtools.textsafe import cell


def fmt(value: object, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if unit == "%":
            return f"{value * 100:.1f}%"
        text = f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
        return text + unit
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"


def dur(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if abs(seconds) >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


def _table(rows: list[list[str]], head: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    def line(r: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths, strict=True)))

    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def text(report: dict[str, Any]) -> str:
    r, fl = report["report"], report["fleet"]
    out = [f"slurmtools report: cluster {r['cluster']}, {r['since']} .. {r['until']} ({r['window_h']:,.0f} h)"
           + (f", partition {r['partition']}" if r["partition"] else ""),
           f"fleet: {fl['nodes']:,} nodes x {fl['gpus_per_node']:g} GPUs (nodes: {fl['nodes_from']}, "
           f"{fl['nodes_in_ledger']:,} in the ledger; GPUs per node: {fl.get('gpus_per_node_from', 'n/a')}); "
           f"database {r['database']}, {r['seconds']:.2f} s"]
    out += [f"note: {n}" for n in report["notes"]]
    if "failures" in report:
        f = report["failures"]
        out += ["", "1. Infrastructure failures and MTBF",
                f"   failures {f['failures']:,} on {f['nodes_with_failures']:,} nodes; "
                f"node-hours in service {f['node_hours_in_service']:,.0f}, "
                f"out of service {f['node_hours_out_of_service']:,.0f}",
                f"   MTBF {fmt(f['mtbf_gpu_hours'])} GPU-hours, {fmt(f['mtbf_node_hours'])} node-hours, "
                f"{fmt(f['mtbf_cluster_hours'])} cluster hours (n={f['failures']})"]
        rows = [[c["category"], c["kind"] or "", "" if c["xid"] is None else str(c["xid"]), str(c["count"]),
                 fmt(c["share"], "%")] for c in f["by_cause"][:15]]
        if rows:
            out += ["   " + x for x in _table(rows, ["category", "kind", "xid", "count", "share"])]
            if len(f["by_cause"]) > 15:
                out.append(f"   ... {len(f['by_cause']) - 15} more causes (--json has all)")
    if "mttf" in report:
        m = report["mttf"]
        out += ["", f"2. Projected MTTF by job size (jobs of >= {m['min_nodes']} nodes)",
                f"   {m['interruptions']:,} interruptions in {fmt(m['gpu_hours'])} GPU-hours of {m['attempts']:,} "
                f"attempts: {fmt(m['interruptions_per_gpu_hour'])} per GPU-hour"
                + (f" ({m['note']})" if m["note"] else "")]
        def h(x: float | None) -> str:
            return dur(x * 3600 if x is not None else None)

        sizes = [[f"{p['gpus']:,} GPUs", h(p["mttf_h"]), f"{h(p.get('mttf_h_low'))} .. "
                  f"{h(p.get('mttf_h_high')) if p.get('mttf_h_high') is not None else 'unbounded'}"]
                 for p in m["projected"]]
        out += ["   " + x for x in _table(sizes, ["job size", "MTTF", f"{m.get('confidence', 0.95):.0%} interval"])]
    if "mttr" in report:
        t = report["mttr"]
        out += ["", "3. MTTR (out of service -> back in service, per failure incident)",
                f"   n={t['n']}: median {dur(t['median_s'])}, mean {dur(t['mean_s'])}, p90 {dur(t['p90_s'])}; "
                f"still open {t['open']}, no repair time recorded (observe mode) {t['no_repair_time']}"]
    if "goodput" in report:
        g = report["goodput"]
        out += ["", "4. Goodput / ETTR per retry chain",
                f"   {g['chains']} finished chains ({g['active_chains']} active): ETTR {fmt(g['ettr'], '%')} of "
                f"{dur(g['wall_s'])} wall; failed attempts {fmt(g['failed_attempts_share'], '%')}, "
                f"failure->next attempt {fmt(g['recovery_share'], '%')}, queue {fmt(g['queue_share'], '%')}"]
        rows = [[str(w["root_job_id"]), w["status"], str(w["attempts"]), fmt(w["ettr"], "%"), dur(w["wall_s"]),
                 dur(w["failed_attempts_s"]), dur(w["recovery_s"]), dur(w["queue_s"])] for w in g["worst"][:5]]
        if rows:
            out += ["   worst chains:"] + ["   " + x for x in _table(
                rows, ["job", "status", "attempts", "ETTR", "wall", "failed", "recovery", "queue"])]
    if "concentration" in report:
        c = report["concentration"]
        out += ["", "5. Concentration"]
        for what in ("exclusions", "incidents"):
            s = c[what]
            out.append(f"   {what}: {s['total']:,} on {s['nodes_with_any']:,} of {s['nodes']:,} nodes; top 3 nodes "
                       f"{fmt(s['top3_share'], '%')}, "
                       f"top 10% ({s['top10pct_nodes']}) {fmt(s['top10pct_share'], '%')}, "
                       f"top 5% ({s['top5pct_nodes']}) {fmt(s['top5pct_share'], '%')}, Gini {fmt(s['gini'])}")
        if c["lemons"]:
            out.append("   excluded now:")
            out += [f"     {x['node']:<12} {'lemon ' if x['lemon'] else ''}{x['reason']} (since {x['since']})"
                    for x in c["lemons"][:20]]
    if "retries" in report:
        out += ["", "6. Retries: automatic (controller) vs manual (same user and job name resubmitted)"]
        rows = []
        for name in ("automatic", "manual"):
            b = report["retries"][name]
            iv = b["retry_interval_s"]
            rows.append([name, str(b["chains"]), fmt(b["success_rate"], "%"), fmt(b["mean_attempts"]),
                         dur(iv["median"]), dur(iv["iqr"]), str(iv["n"])])
        out += ["   " + x for x in _table(rows, ["retries", "chains", "success", "attempts/chain",
                                                 "interval median", "IQR", "n"])]
    if "detection" in report:
        d = report["detection"]
        out += ["", "7. Detection quality",
                f"   automatic exclusions ended: confirmed {d['confirmed']}, refuted {d['refuted']} "
                f"(false-positive rate {fmt(d['false_positive_rate'], '%')}), "
                f"expired {d['expired']}, removed {d['removed']}",
                f"   drains: caught before a job (prolog/healthcheck) {d['caught_before_job']}, found after a job "
                f"(epilog) {d['found_after_job']}; by actor: "
                + (", ".join(f"{k} {v['drains']}" for k, v in d["drains_by_actor"].items()) or "none")]
        tm = d["time_from_job_end_s"]
        out.append("   from job end: " + ", ".join(f"{k} median {dur(v['median_s'])} (n={v['n']})"
                                                   for k, v in tm.items()))
    if "checkpoints" in report:
        out += ["", "8. Checkpoints (marked with `slurmtools checkpoint`, or the framework's own log lines)"]
        ck = report["checkpoints"]
        rows = []
        for kind in ("save", "load"):
            k = ck[kind]
            rows.append([kind, str(k["events"]), str(k["timed"]), dur(k["seconds"]["median"]),
                         dur(k["seconds"]["p90"]), fmt(k["gbytes_per_s"]["median"], " GB/s"),
                         fmt(k["utilisation"]["median"], "%"), str(k["utilisation"]["n"]),
                         ", ".join(f"{s} {n}" for s, n in k["by_source"].items()) or "-"])
        out += ["   " + x for x in _table(rows, ["kind", "events", "timed", "median", "p90", "GB/s median",
                                                 "of nominal", "n", "sources"])]
        if ck["scale"]:
            out.append("   saves by nodes saving at once (the client's RPC slots: queue time vs round trip per WRITE):")
            srows = [[f"{s['nodes_from']}" + (f"-{s['nodes_to']}" if s["nodes_to"] != s["nodes_from"] else "")
                      if s["nodes_to"] is not None else f">={s['nodes_from']}", str(s["saves"]),
                      fmt(s["queue_ms_per_op_median"], " ms"), fmt(s["rtt_ms_per_op_median"], " ms"),
                      fmt(s["queue_share"], "%"), fmt(s["gbytes_per_s_median"], " GB/s")] for s in ck["scale"]]
            out += ["   " + x for x in _table(srows, ["nodes", "saves", "queue/WRITE", "RTT/WRITE", "queue share",
                                                      "GB/s per node"])]
    if "gpu_perf" in report:
        from slurmtools.reports import gpuperf

        out += gpuperf.text(report["gpu_perf"], _table, fmt)
    if "whatif" in report:
        out += _whatif(report["whatif"])
    if "unrecognised" in report:
        u = report["unrecognised"]
        out += ["", "11. Unrecognised messages (a hardware subsystem's error line no rule knows: "
                    "`slurmtools diagnose --suggest-rules` drafts rules for them)",
                f"   {u['total']:,} lines" + (" (more in the window than were read)" if u["truncated"] else "")]
        rows = [[s["subsystem"], s["kind"], str(s["count"]), str(s["nodes"]), str(s["families"]),
                 s["first_seen"] or "", s["last_seen"] or ""] for s in u["subsystems"]]
        if rows:
            out += ["   " + x for x in _table(rows, ["subsystem", "kind", "count", "nodes", "messages", "first seen",
                                                 "last seen"])]
            out += [f"   e.g. {s['subsystem']}: {s['example'][:150]}" for s in u["subsystems"]]
    if "stalls" in report:
        st = report["stalls"]
        out += ["", "12. Stalls (running jobs hung while holding their GPUs: `slurmtools stalls`)",
                f"   stalled attempts {st['stalls']} ("
                + (", ".join(f"{k} {v}" for k, v in st["by_outcome"].items()) or "none")
                + f"), with a suspect node {st['with_suspect']}",
                f"   GPU-hours held from the last progress to the action: {fmt(st['gpu_hours_lost'])}; "
                f"time to detect: median {dur(st['time_to_detect_median_s'])}",
                f"   suspects deep-checked {st['suspects_checked']}: confirmed {st['suspects_confirmed']}, "
                f"refuted {st['suspects_refuted']}"]
        rows = [[str(w["job_id"]), str(w["restart_count"]), w["suspect"] or "-", w["outcome"], str(w["gpus"]),
                 fmt(w["gpu_hours_lost"]), dur(w["time_to_detect_s"])] for w in st["worst"]]
        if rows:
            out += ["   " + x for x in _table(rows, ["job", "attempt", "suspect", "outcome", "GPUs", "GPU-h lost",
                                                     "to detect"])]
    return "\n".join(out) + "\n"


def _whatif(w: dict[str, Any]) -> list[str]:
    out = ["", "10. What if (per job size, finished retry chains; each figure's assumption below)"]
    rows, why = [], []
    for x in w["sizes"]:
        a = x["advised"]
        nodes = f"{x['nodes_from']}" + (f"-{x['nodes_to']}" if x["nodes_to"] != x["nodes_from"] else "") \
            if x["nodes_to"] is not None else f">={x['nodes_from']}"
        if a["goodput"] is None:
            why.append(f"   (a) n/a for {nodes} nodes: {a['why']}")
        rows.append([nodes, str(x["chains"]), fmt(x["goodput"], "%"), fmt(x["lost_work_share"], "%"),
                     fmt(x["recovery_share"], "%"), fmt(x["checkpoint_share"], "%"),
                     fmt(a["goodput"], "%") + (f" (every {dur(a['interval_s'])})" if a["goodput"] is not None
                                               else ""),
                     fmt(x["recovery_at_target"]["goodput"], "%"),
                     fmt(x["lemons_excluded"]["goodput"], "%") + f" ({x['lemons_excluded']['interruptions_avoided']})"])
    if rows:
        out += ["   " + x for x in _table(rows, ["nodes", "chains", "goodput", "lost work", "recovery",
                                                 "checkpoints", "(a) advised interval",
                                                 f"(b) recovery {dur(w['recovery_target_s'])}",
                                                 "(c) lemons out"])]
        out += why
    else:
        out.append("   no finished retry chains in the window")
    lem = ", ".join(x["node"] for x in w["lemons"]) or "none"
    out += [f"   top lemon nodes: {lem}"] + [f"   assumes ({k}): {v}" for k, v in w["assumes"].items()]
    return out


def _flat(prefix: str, value: object, rows: list[tuple[str, str, Any]], section: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else k, v, rows, section)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flat(f"{prefix}[{i}]", v, rows, section)
    else:
        rows.append((section, prefix, value))


def csv_text(report: dict[str, Any]) -> str:
    rows: list[tuple[str, str, Any]] = []
    for section, value in report.items():
        if section in ("charts",):
            continue
        _flat("", value, rows, section)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["section", "metric", "value"])
    for section, metric, value in rows:
        writer.writerow([cell(section), cell(metric), cell(value)])
    return buf.getvalue()
