"""The scale-out benchmark's arithmetic: rates, percentiles, ratios to the 1-client round.

A wrong sum or a ratio to the wrong baseline would publish a wrong scale-out figure, so
these run first in ``nox -s bench`` (no store, no server needed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import scale_out as so  # noqa: E402


def _client(records: int, elapsed: float, lat: float = 0.001, recalls: int = 0
            ) -> dict[str, object]:
    return {"elapsed": elapsed, "record_s": [lat] * records,
            "phrase_s": [0.002] * recalls, "words_s": [0.004] * recalls}


def test_ratio_to_a_missing_or_zero_baseline_is_none() -> None:
    assert so.ratio(3.0, 2.0) == 1.5
    assert so.ratio(3.0, 0.0) is None
    assert so.ratio(None, 2.0) is None
    assert so.ratio(3.0, None) is None


def test_slice_rates_sum_each_client_over_its_own_time() -> None:
    s = so.slice_summary([_client(100, 2.0), _client(50, 1.0), _client(10, 0.5)])
    assert s["clients"] == 3
    assert s["records_per_s"] == pytest.approx(50 + 50 + 20)
    assert s["per_client_records_per_s"] == pytest.approx(40)
    assert s["slowest_client_share"] == pytest.approx(20 / 50)
    assert "phrase_p95_ms" not in s and "recalls_per_s" not in s
    assert "cpu_ms_per_record" not in s  # only when every client measured its CPU


def test_slice_cpu_per_record_over_all_clients() -> None:
    a, b = _client(30, 1.0), _client(10, 1.0)
    a["cpu_s"], b["cpu_s"] = 0.03, 0.05
    assert so.slice_summary([a, b])["cpu_ms_per_record"] == pytest.approx(80 / 40)


def test_slice_latency_percentiles_pool_every_client() -> None:
    fast = {"elapsed": 1.0, "record_s": [0.001] * 94, "phrase_s": [], "words_s": []}
    slow = {"elapsed": 1.0, "record_s": [0.010] * 6, "phrase_s": [], "words_s": []}
    s = so.slice_summary([fast, slow])
    # nearest rank over the 100 pooled calls: the 95th is the first slow one
    assert s["record_p95_ms"] == pytest.approx(10.0)
    assert s["record_max_ms"] == pytest.approx(10.0)
    fast["record_s"], slow["record_s"] = [0.001] * 95, [0.010] * 5
    assert so.slice_summary([fast, slow])["record_p95_ms"] == pytest.approx(1.0)


def test_slice_recall_figures_in_the_mixed_phase() -> None:
    s = so.slice_summary([_client(10, 2.0, recalls=5), _client(10, 1.0, recalls=5)])
    assert s["phrase_p95_ms"] == pytest.approx(2.0)
    assert s["words_p95_ms"] == pytest.approx(4.0)
    assert s["recalls_per_s"] == pytest.approx(10 / 2 + 10 / 1)


def test_slice_refuses_an_empty_slice() -> None:
    with pytest.raises(ValueError, match="at least one client"):
        so.slice_summary([])
    with pytest.raises(ValueError, match="raise --seconds"):
        so.slice_summary([_client(0, 1.0)])


def test_combine_takes_ratios_to_the_same_round_then_the_median() -> None:
    rounds = [
        {1: {"clients": 1, "records_per_s": 100.0}, 4: {"clients": 4, "records_per_s": 300.0}},
        {1: {"clients": 1, "records_per_s": 50.0}, 4: {"clients": 4, "records_per_s": 200.0}},
        {1: {"clients": 1, "records_per_s": 200.0}, 4: {"clients": 4, "records_per_s": 100.0}},
    ]
    c = so.combine(rounds)
    four = c[4]["records_per_s"]
    # per-round ratios 3.0, 4.0, 0.5: the median ratio, not the ratio of medians (2.0)
    assert four["ratio"] == pytest.approx(3.0)
    assert (four["ratio_min"], four["ratio_max"]) == (0.5, 4.0)
    assert four["median"] == pytest.approx(200.0)
    assert c[1]["records_per_s"]["ratio"] == 1.0
    assert "clients" not in c[4]


def test_combine_skips_a_figure_the_baseline_lacks() -> None:
    rounds = [{1: {"records_per_s": 10.0, "recalls_per_s": 0.0},
               16: {"records_per_s": 20.0, "recalls_per_s": 5.0}}]
    c = so.combine(rounds)
    assert c[16]["records_per_s"]["ratio"] == 2.0
    assert c[16]["recalls_per_s"]["ratio"] is None
    with pytest.raises(ValueError):
        so.combine([])


def test_verdict_and_markdown_name_the_processes_figure() -> None:
    rounds = [{1: {"records_per_s": 100.0}, 2: {"records_per_s": 90.0},
               4: {"records_per_s": 120.0}}]
    sqlite = {"write": {"combined": so.combine(rounds)}}
    assert so.verdict(sqlite).startswith("falls below")
    assert "2 processes 0.90x" in so.verdict(sqlite)
    rounds[0][2]["records_per_s"] = 100.0
    assert so.verdict({"write": {"combined": so.combine(rounds)}}).startswith("holds")
    text = so.markdown({"meta": {"cpus": 2, "platform": "x", "seconds": 1, "rounds": 1,
                                 "sqlite_rounds": 1, "prefill": 10}, "sqlite": sqlite})
    assert "| | 4 | 1.20x (120/s)" in text
