"""`detect` on link flaps: node_exporter's infiniband and netclass series, answered at the HTTP boundary by a
small Prometheus stand-in that evaluates the few PromQL forms the packaged network signals use (increase, changes
and rate over a window, `or`, a scalar factor) over synthetic scrapes. A port that goes down and up several times
within the hour is flagged; a steady counter, one planned reset, two resets hours apart and a reboot's counter
reset are not. The stall detector's blame reads the same evidence (slurmtools.detect.links)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

from slurmtools.detect import links, prom, scan
from slurmtools.detect.score import Params, Signal

from .fakes import JsonHandler, serving

T0 = 1_790_001_000.0 - 1_790_001_000.0 % 900       # on the detector's block grid
N, T = 16, 600                                      # 16 nodes, 10 h of scrapes at 60 s
NODES = [f"n{i:02d}" for i in range(N)]
OLD_KERNEL = set(NODES[8:])                         # no carrier_down_changes_total: the `or` fallback


def _fleet() -> dict[str, dict[tuple[str, str], np.ndarray]]:
    """Metric -> (node, device) -> values per scrape (NaN: no sample). Every node: IB port mlx5_0:1, netdev ib0."""
    rng = np.random.default_rng(7)
    m: dict[str, dict[tuple[str, str], np.ndarray]] = {}

    def put(name: str, node: str, dev: str, v: np.ndarray) -> None:
        m.setdefault(name, {})[(node, dev)] = v.astype(float)

    for node in NODES:
        put("node_infiniband_link_downed_total", node, "mlx5_0:1", np.zeros(T))
        put("node_infiniband_link_error_recovery_total", node, "mlx5_0:1", np.zeros(T))
        put("node_infiniband_symbol_error_total", node, "mlx5_0:1", np.cumsum(rng.random(T) < 0.05))
        put("node_infiniband_port_errors_received_total", node, "mlx5_0:1", np.cumsum(rng.random(T) < 0.02))
        put("node_infiniband_state_id", node, "mlx5_0:1", np.full(T, 4.0))
        put("node_network_carrier_changes_total", node, "ib0", np.full(T, 2.0))
        if node not in OLD_KERNEL:
            put("node_network_carrier_down_changes_total", node, "ib0", np.full(T, 1.0))
        put("node_network_up", node, "ib0", np.ones(T))
    return m


def _flap(m: dict[str, dict[tuple[str, str], np.ndarray]], node: str, at: list[int], counted: bool = True) -> None:
    """NODE's IB port and its netdev go down at each scrape of AT and are back at the next one."""
    for i in at:
        if counted:
            m["node_infiniband_link_downed_total"][(node, "mlx5_0:1")][i:] += 1
        m["node_infiniband_state_id"][(node, "mlx5_0:1")][i] = 1.0
        m["node_network_carrier_changes_total"][(node, "ib0")][i:] += 2
        if (node, "ib0") in m.get("node_network_carrier_down_changes_total", {}):
            m["node_network_carrier_down_changes_total"][(node, "ib0")][i:] += 1
        m["node_network_up"][(node, "ib0")][i] = 0.0


def scenario() -> dict[str, dict[tuple[str, str], np.ndarray]]:
    m = _fleet()
    _flap(m, "n03", [400, 408, 416, 424, 432])               # a flapping link: five downs in 40 min
    _flap(m, "n05", [420])                                    # one planned reset
    _flap(m, "n06", [330, 520])                               # two resets three hours apart
    # n07: its counters grow fast but steadily (a marginal cable it has always had): its own normal
    m["node_infiniband_symbol_error_total"][("n07", "mlx5_0:1")] = np.arange(T) * 30.0
    m["node_infiniband_link_error_recovery_total"][("n07", "mlx5_0:1")] = np.floor(np.arange(T) / 10.0)
    # n11: LinkDownedCounter saturated at 255 (8 bits), an old kernel (no carrier_down): six flaps in 50 min
    m["node_infiniband_link_downed_total"][("n11", "mlx5_0:1")][:] = 255.0
    _flap(m, "n11", [440, 450, 460, 470, 480, 490], counted=False)
    # n13: rebooted at 450 (20 min without scrapes); its counters restart from zero
    for name, series in m.items():
        v = series.get(("n13", "mlx5_0:1" if name.startswith("node_infiniband") else "ib0"))
        if v is None:
            continue
        if name.endswith("_total"):
            v[:450] += 7.0
        v[450:470] = np.nan
    return m


# --- a Prometheus stand-in: the range API over the series above, for the query forms the packaged signals use

WINDOW = re.compile(r"^(increase|changes|rate)\((\w+)\[(\d+)([smh])\]\)$")


def _over(fn: str, v: np.ndarray, w: int) -> np.ndarray:
    out = np.full(T, np.nan)
    for i in range(T):
        x = v[max(0, i - w):i + 1]
        x = x[~np.isnan(x)]
        if np.isnan(v[i]) or len(x) < 2:
            continue
        d = np.diff(x)
        if fn == "changes":
            out[i] = float(np.count_nonzero(d))
        else:                                                  # a drop is a counter reset: count from zero
            inc = float(np.where(d >= 0, d, x[1:]).sum())
            out[i] = inc if fn == "increase" else inc / (w * 60.0)
    return out


def evaluate(q: str, data: dict[str, dict[tuple[str, str], np.ndarray]]) -> dict[tuple[str, str], np.ndarray]:
    q = q.strip()
    if " or " in q:
        left, right = q.split(" or ", 1)
        out = evaluate(left, data)
        return {**{k: v for k, v in evaluate(right, data).items() if k not in out}, **out}
    for op in (" * ", " / "):
        if op in q:
            expr, num = q.rsplit(op, 1)
            f = float(num)
            return {k: v * f if op == " * " else v / f for k, v in evaluate(expr, data).items()}
    hit = WINDOW.match(q)
    if hit is None:
        if re.fullmatch(r"\w+", q):
            return dict(data.get(q, {}))
        raise ValueError(f"the stand-in does not evaluate {q!r}")
    fn, name, n, unit = hit.groups()
    w = int(n) * {"s": 1, "m": 60, "h": 3600}[unit] // 60          # in scrapes
    return {k: _over(fn, v, w) for k, v in data.get(name, {}).items()}


class _Prom(JsonHandler):
    data: ClassVar[dict[str, dict[tuple[str, str], np.ndarray]]] = {}
    queries: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        q = self.query()
        _Prom.queries.append(q["query"])
        try:
            series = evaluate(q["query"], _Prom.data)
        except ValueError as exc:
            self.reply(400, {"status": "error", "errorType": "bad_data", "error": str(exc)})
            return
        start, end, step = float(q["start"]), float(q["end"]), float(q["step"])
        result = []
        for (node, dev), v in sorted(series.items()):
            labels = {"instance": f"{node}:9100", "job": "node"}
            if ":" in dev:
                labels["device"], labels["port"] = dev.split(":")
            else:
                labels["device"] = dev
            pts = [[t, repr(float(v[i]))] for t in np.arange(start, end + step / 2, step)
                   if 0 <= (i := round(float(t - T0) / 60.0)) < T and not np.isnan(v[i])]
            if pts:
                result.append({"metric": labels, "values": pts})
        self.reply(200, {"status": "success", "data": {"resultType": "matrix", "result": result}})


@pytest.fixture()
def fake_prom() -> Iterator[str]:
    _Prom.data, _Prom.queries = scenario(), []
    with serving(_Prom) as url:
        yield url


def network_signals() -> list[Signal]:
    return [Signal.from_dict(s) for s in scan.packaged_signals() if s.get("category") == "network"]


def _scan(url: str) -> scan.Result:
    setup = scan.Setup(network_signals(), Params(min_history=30, baseline_s=3 * 3600, step_s=60.0), busy_query="")
    return scan.run_scan(prom.Client(url, chunk_s=3 * 3600), setup, T0 + 300 * 60, T0 + (T - 1) * 60)


def test_a_flapping_port_is_flagged_and_a_planned_reset_is_not(fake_prom: str) -> None:
    res = _scan(fake_prom)
    assert res.missing == []
    got = sorted((f.node, f.device, f.kind) for f in res.flags)
    # n03's port and netdev; n11 through its IB port's state changes (the counter is saturated) and its netdev's
    # carrier changes (no carrier_down on its kernel); nothing on n05 (one reset), n06 (two, hours apart), n07
    # (steady counters), n13 (counters reset by a reboot)
    assert got == [("n03", "ib0", "link_flap"), ("n03", "mlx5_0:1", "ib_link"),
                   ("n11", "ib0", "link_flap"), ("n11", "mlx5_0:1", "ib_link")]
    n03 = next(f for f in res.flags if f.node == "n03" and f.device == "mlx5_0:1")
    # raised by the third down (scrape 416), not the first
    assert T0 + 416 * 60 <= res.grid.times[n03.start_i] <= T0 + 424 * 60
    top = n03.signals[0]
    assert top["signal"] == "ib_link_downs" and top["value"] >= 3 and top["peer_median"] == 0.0
    assert {s["signal"] for s in n03.signals} >= {"ib_link_downs", "ib_state_changes"}
    n11 = next(f for f in res.flags if f.node == "n11" and f.device == "mlx5_0:1")
    assert [s["signal"] for s in n11.signals] == ["ib_state_changes"]


def test_one_reset_stays_under_the_threshold_with_its_evidence_shown(fake_prom: str) -> None:
    res = _scan(fake_prom)
    rows = [r for r in scan.explain(res, "n05", T0 + 425 * 60) if r["device"] == "mlx5_0:1"]
    downs = next(r for r in rows if r["signal"] == "ib_link_downs")
    # one down is two robust scales (the floor) from its peers and its own history: not even past peer_z (2.5)
    assert downs["value"] == 1.0 and downs["z_self"] == pytest.approx(2.0) and downs["z_peer"] == pytest.approx(2.0)
    states = next(r for r in rows if r["signal"] == "ib_state_changes")
    assert states["value"] == 2.0 and states["z_self"] == pytest.approx(2 / 1.5, abs=0.01)
    assert np.sqrt(sum((r["evidence"] or 0.0) ** 2 for r in rows)) < 6.0


def test_the_packaged_signals_are_the_shared_flap_queries() -> None:
    packaged = {s["name"]: s["query"] for s in scan.packaged_signals()}
    for name in links.FLAPS:
        assert packaged[name] == links.query(name, "1h")


def test_blame_reads_the_same_flap_evidence(fake_prom: str, tmp_path: Any) -> None:
    from slurmtools import config
    from slurmtools.stalls import blame, signals

    path = tmp_path / "slurmtools.toml"
    path.write_text(f'[stalls]\ngpu_source = "prometheus"\nprometheus = "{fake_prom}"\n'
                    '[detect]\nnode_labels = ["Hostname", "nodename", "node", "instance"]\n')
    cfg = config.load(path, env={})

    now = T0 + 500 * 60
    job = ["n05", "n07", "n11", "n12"]
    net = signals.network_events(cfg, job, now - 7200, now)
    # n11: six flaps seen as 12 state changes (its IB counter saturated) and 6 carrier downs from its carrier
    # changes: six downs, not the sum of the sources; n07's steady symbol errors and recoveries are not downs
    assert net == {"n05": 1.0, "n07": 0.0, "n11": 6.0, "n12": 0.0}
    assert not any("symbol" in q for q in _Prom.queries)
    assert blame.blame(["n07", "n11", "n12"], {}, {}, {}, {k: net[k] for k in ("n07", "n11", "n12")}) == \
        ("n11", {"n11": ["network"]})
