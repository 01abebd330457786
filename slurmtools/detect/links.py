"""Link flaps: the evidence that an InfiniBand or RoCE/Ethernet port went down and came back, from node_exporter's
infiniband collector (`node_infiniband_*`, labels device and port) and netclass collector (`node_network_*`, label
device). One definition for two readers: `detect`'s signals (data/detect_signals.toml holds these queries with a
1 h window; tests/test_detect_links.py keeps the two the same) and the stall detector's blame (the window since the
stalled job's start, slurmtools.stalls.signals.network_events).

Each query gives a count of events over the window, not a rate: a port that went down and up N times in the last
hour reads N for that hour, whatever the scrape interval, and a counter that grows steadily (background symbol
errors) is not among them. Prometheus handles counter resets (a reboot) in increase()."""

from __future__ import annotations

#: name -> PromQL with {w} for the window (a Prometheus duration: 1h, 3600s).
FLAPS: dict[str, str] = {
    # the port's LinkDownedCounter: times the link failed to recover from an error state and went down
    "ib_link_downs": "increase(node_infiniband_link_downed_total[{w}])",
    # changes of the port's logical state (1 down, 2 init, 3 armed, 4 active) seen between scrapes: flaps the
    # 8-bit LinkDownedCounter no longer counts once it has saturated at 255, or a port that was reset by hand
    "ib_state_changes": "changes(node_infiniband_state_id[{w}])",
    # a network device's carrier went down (carrier_down_count, Linux 5.2+; else half its carrier changes, which
    # count both the down and the up)
    "link_downs": ("increase(node_network_carrier_down_changes_total[{w}]) "
                   "or increase(node_network_carrier_changes_total[{w}]) / 2"),
    # changes of the device's operational state (node_network_up: operstate is up) seen between scrapes
    "netdev_up_changes": "changes(node_network_up[{w}])",
}

#: what a state change counts for, in link downs: a flap seen by the scrapes is two changes (down, back up)
PER_DOWN = {"ib_link_downs": 1.0, "ib_state_changes": 0.5, "link_downs": 1.0, "netdev_up_changes": 0.5}


def query(name: str, window: str) -> str:
    return FLAPS[name].format(w=window)
