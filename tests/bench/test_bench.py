"""The benchmark's own logic: workload determinism, scoring, percentiles, the report.

These run without either package's store: a wrong metric would publish a wrong number,
so the arithmetic is pinned here.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import locomo  # noqa: E402
import report  # noqa: E402
import workload as wl  # noqa: E402

VOCAB = wl.Vocabulary(Counter({"the": 50, "sqlite": 5, "cache": 4, "retry": 3,
                               "timeout": 2, "deploy": 2, "rollback": 1}))


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert wl.percentile(values, 50) == 50.0
    assert wl.percentile(values, 95) == 95.0
    assert wl.percentile(values, 99) == 99.0
    assert wl.percentile([3.0], 95) == 3.0
    assert wl.percentile([5.0, 1.0], 50) == 1.0
    with pytest.raises(ValueError):
        wl.percentile([], 50)


def test_latency_summary_is_in_milliseconds() -> None:
    s = wl.latency_summary([0.001] * 99 + [0.1])
    assert s["n"] == 100 and s["p50_ms"] == pytest.approx(1.0)
    assert s["p99_ms"] == pytest.approx(1.0) and s["mean_ms"] == pytest.approx(1.99)


def test_episodes_are_deterministic_and_typed() -> None:
    first = list(wl.episodes(VOCAB, 20))
    assert first == list(wl.episodes(VOCAB, 20))
    assert wl.episode(VOCAB, 7) == first[7]
    assert list(wl.episodes(VOCAB, 5, start=3)) == first[3:8]
    assert {e["episode_type"] for e in first} <= set(wl.TYPES)
    assert all(8 <= len(wl.words(e["content"])) <= 40 for e in first)
    assert first[0] != first[1]


def test_queries_are_spans_of_stored_episodes() -> None:
    qs = wl.queries(VOCAB, 50, 40)
    assert qs == wl.queries(VOCAB, 50, 40)
    corpus = [" ".join(wl.words(e["content"])) for e in wl.episodes(VOCAB, 50)]
    for q in qs:
        assert 1 <= len(q.split()) <= 3
        assert q.split()[0] not in wl.QUERY_SKIP
        assert any(f" {q} " in f" {text} " for text in corpus), q


def test_word_and_miss_queries() -> None:
    qs = wl.word_queries(VOCAB, 50, 30)
    assert qs == wl.word_queries(VOCAB, 50, 30) and len(qs) == 30
    stored = {w for e in wl.episodes(VOCAB, 50) for w in wl.words(e["content"])}
    for q in qs:
        assert 2 <= len(q.split()) <= 3 and set(q.split()) <= stored
    miss = wl.miss_queries(10)
    assert len(set(miss)) == 10 and not any(set(m.split()) & stored for m in miss)


def test_vocabulary_rejects_empty_text() -> None:
    with pytest.raises(ValueError, match="empty vocabulary"):
        wl.Vocabulary.from_texts(["", "123 !!"])


def test_evidence_parsing_repairs_malformed_ids() -> None:
    assert locomo.parse_evidence(["D1:3"]) == {"D1:3"}
    assert locomo.parse_evidence(["D8:6; D9:17"]) == {"D8:6", "D9:17"}
    assert locomo.parse_evidence(["D:11:26"]) == {"D11:26"}
    assert locomo.parse_evidence(["D"]) == frozenset()


def test_session_time() -> None:
    t = locomo.parse_session_time("1:56 pm on 8 May, 2023")
    assert t is not None and (t.year, t.month, t.day, t.hour, t.minute) == (2023, 5, 8, 13, 56)
    assert locomo.parse_session_time("sometime") is None


def test_score_counts_evidence_in_top_k() -> None:
    ev = frozenset({"D1:1", "D1:2"})
    ranked = ["x"] * 4 + ["D1:1"] + ["y"] * 4 + ["D1:2"]
    assert locomo.score(ranked, ev) == {"recall@5": 0.5, "recall@10": 1.0, "hit@10": 1.0}
    assert locomo.score([], ev) == {"recall@5": 0.0, "recall@10": 0.0, "hit@10": 0.0}
    assert locomo.score(["y"] * 10 + ["D1:1"], ev)["hit@10"] == 0.0


def test_aggregate_by_category() -> None:
    rows = [(1, {"recall@5": 1.0, "recall@10": 1.0, "hit@10": 1.0}),
            (4, {"recall@5": 0.0, "recall@10": 0.5, "hit@10": 1.0})]
    agg = locomo.aggregate(rows)
    assert agg["overall"]["recall@10"] == 0.75 and agg["overall"]["questions"] == 2
    assert agg["by_category"]["1 multi-hop"]["recall@5"] == 1.0
    assert agg["by_category"]["4 single-hop"]["recall@5"] == 0.0
    assert "2 temporal" not in agg["by_category"]


def test_load_conversation(tmp_path: Path) -> None:
    data = {"speaker_a": "A", "speaker_b": "B",
            "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "later"}],
            "session_2_date_time": "9:00 am on 2 June, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi",
                           "blip_caption": "a dog on a beach"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "hello"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "qa": [{"question": "Q1?", "answer": "x", "evidence": ["D1:1"], "category": 4},
                   {"question": "Q2?", "answer": "y", "evidence": [], "category": 5}]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    conv = locomo.load(path)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert "a dog on a beach" in conv.turns[0].content
    assert conv.turns[1].timestamp == "2023-05-08T13:56:01Z"
    assert [q.text for q in conv.questions] == ["Q1?"]


def _results() -> dict:
    def pkg(rate: float, p95: float, wrap: float) -> dict:
        run = {"size": 10000, "size_requested": 10000, "load_per_second": rate,
               "record_latency": {"p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0},
               "recall_keyword": {"p50_ms": p95 / 2, "p95_ms": p95},
               "bytes_per_episode": 900.0, "peak_rss_mb": 40.0}
        small = dict(run, size=1000, size_requested=1000,
                     recall_keyword={"p50_ms": 0.1, "p95_ms": p95 / 10})
        return {"import": {"best_ms": 40.0}, "sizes": {"1000": {"single": small},
                                                        "10000": {"single": run}},
                "wrap": {"50": {"total_ms": wrap}}, "errors": [], "skipped": [],
                "locomo": {"methods": {"recall(keyword=question)": {
                    "overall": {"questions": 10, "recall@5": 0.5, "recall@10": 0.75,
                                "hit@10": 0.8}, "by_category": {}}}}}
    return {"meta": {"peer_version": "1.0.2"},
            "packages": {"ours": pkg(1000.0, 1.0, 12.0), "peer": pkg(400.0, 10.0, 10.0)}}


def test_report_ratios_and_goals() -> None:
    res = _results()
    rows = {label: (o, p, goal) for label, o, p, _u, goal in report.speed_rows(res)}
    o, p, goal = rows["durable record() @ 10,000 (records/s)"]
    assert report.ratio(o, p) == 2.5 and goal == ">= 2x"
    assert report._goal_met(goal, 2.5, None).endswith("met")
    assert report._goal_met(">= 2x", 1.9, None).endswith("MISSED")
    assert rows["keyword recall (a stored phrase) p95 @ 10,000 (ms)"][2] == "<= 0.2x"
    assert rows["keyword recall (a stored phrase) p95 @ 1,000 (ms)"][2] == "<= 0.5x"
    assert report._goal_met("<= 1.0x", 1.2, None).endswith("MISSED")
    assert report._goal_met(">= 0.70", None, 0.75).endswith("met")
    assert report._goal_met(">= 2x", None, None).endswith("not measured")
    md = report.markdown(res)
    assert "| durable record() @ 10,000 (records/s) | 1,000 | 400 | 2.50x |  | >= 2x: met |" in md
    assert "wrap (prepare + save) @ 50 episodes (ms) | 12.0 | 10.0 | 1.20x |  | <= 0.5x: MISSED" in md
    assert ">= 0.80: MISSED" in md and "fsync on commit" in md


def test_spread_over_runs_and_scale_rows() -> None:
    res = _results()
    again = _results()
    again["packages"]["ours"]["sizes"]["10000"]["single"]["load_per_second"] = 1200.0
    res["repeats"] = [again["packages"]]
    md = report.markdown(res)
    assert "| durable record() @ 10,000 (records/s) | 1,000 | 400 | 2.50x | 2.50x-3.00x |" in md
    big = dict(res["packages"]["ours"]["sizes"]["10000"]["single"], size=1_000_000,
               size_requested=1_000_000, tail_records={"n": 10, "records_per_second": 500.0},
               recall_keyword={"p50_ms": 1.0, "p95_ms": 2.5})
    res["packages"]["ours"]["sizes"]["1000000"] = {"batch": big}
    scale = {label: (r, goal) for label, r, goal in report.scale_rows(res)}
    assert scale["durable record() time @ 1,000,000 vs @ 10,000"] == (2.0, "<= 1.5x")
    r, goal = scale["keyword recall (a stored phrase) p95 @ 1,000,000 vs @ 10,000"]
    assert r == pytest.approx(2.5) and goal == "<= 3.0x"
    assert "<= 1.5x: MISSED" in report.markdown(res)


def test_growth_exponent() -> None:
    (span, b), = report.growth(_results(), "ours", "recall_keyword")
    assert span == "1,000 -> 10,000" and b == pytest.approx(1.0)


def test_plot_writes_png(tmp_path: Path) -> None:
    out = tmp_path / "plot.png"
    report.plot(_results(), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    grow = tmp_path / "scaling.png"
    report.plot_scaling(_results(), str(grow))
    assert grow.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compile_bytecode_writes_the_package_bytecode(tmp_path: Path) -> None:
    import importlib.util

    import run

    import anneal_memory

    pyc = Path(importlib.util.cache_from_source(str(Path(anneal_memory.__file__).parent
                                                    / "text.py")))
    pyc.unlink(missing_ok=True)
    assert run.compile_bytecode(sys.executable) == "compiled"
    assert pyc.is_file()
    with pytest.raises(run.BenchError, match="could not compile"):
        run.compile_bytecode(str(tmp_path / "no-such-python"))
