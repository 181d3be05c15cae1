"""Issue 54 goals 1 and 3: the arithmetic of bench/recall_growth.py (ratios to the 10k
store and to 1.0.2, verdicts, the like-for-like subset) and the store it builds. A wrong
ratio or verdict here would publish a wrong claim."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import recall_growth as rg  # noqa: E402
import workload as wl  # noqa: E402


def _cls(p95_cpu: float, wall: float | None = None, n: int = 1) -> dict:
    return {"p95_ms": wall if wall is not None else 10 * p95_cpu,
            "cpu": {"p95_ms": p95_cpu}, "per_query_cpu_ms": [p95_cpu] * n,
            "answered_by": ["phrase"] * n}


def _store(scale: float) -> dict:
    return {"measured": True, "built": 1, "classes": {
        "phrase": _cls(1.0 * scale), "phrase_typed": _cls(2.0 * scale),
        "words": _cls(3.0 * scale), "words_typed": _cls(4.0 * scale),
        "question": _cls(5.0 * scale)}}


def test_ratio_and_the_typed_figure() -> None:
    assert rg.ratio(6.0, 2.0) == 3.0
    assert rg.ratio(None, 2.0) is None and rg.ratio(1.0, 0.0) is None
    assert rg.typed_p95({"phrase_typed": 2.0, "words_typed": 7.0}) == 7.0
    assert rg.goal1_p95({"phrase": 1, "words": 2, "question": 3, "words_typed": 4}) == {
        "phrase": 1, "words": 2, "question": 3, "typed": 4}


def test_goal1_verdicts_at_the_bound() -> None:
    assert rg.goal1_verdict({"phrase": 3.0, "words": 1.0, "question": 2.9, "typed": 0.5}) == "met"
    assert rg.goal1_verdict({"phrase": 3.01, "words": 1.0, "question": 1, "typed": 1}) == "missed"
    assert rg.goal1_verdict({"phrase": 1.0, "words": None, "question": 1, "typed": 1}) == \
        "not measured"
    assert rg.goal3_verdict({"phrase": 1.0, "phrase_typed": 1.01}) == "missed"


def test_summarize_uses_cpu_ratios_to_the_10k_store_and_says_what_was_not_built() -> None:
    figures = {"growth": {"10000": _store(1.0), "1000000": _store(2.5),
                          "10000000": {"measured": False, "built": 3_000_000}},
               "small": {"rounds": {"ours": [{"phrase": 1.0, "phrase_typed": 3.0}],
                                    "peer": [{"phrase": 2.0, "phrase_typed": 1.0}],
                                    "ours_wall": [{"phrase": 9.0, "phrase_typed": 9.0}],
                                    "peer_wall": [{"phrase": 9.0, "phrase_typed": 9.0}]},
                         "like_for_like": {}}}
    goals = rg.summarize(figures, [10000, 1000000, 10000000])
    one_m = goals[0]
    assert one_m["verdict"] == "met" and "typed 10.0 ms (2.5x)" in one_m["figure"]
    assert goals[1]["verdict"] == "not measured" and "3,000,000" in goals[1]["figure"]
    small = [g for g in goals if "1.0.2" in g["goal"]][0]
    assert small["verdict"] == "missed"
    assert "phrase 1.00 vs 2.00 ms (0.50x)" in small["figure"]
    assert "phrase_typed 3.00 vs 1.00 ms (3.00x)" in small["figure"]
    figures["growth"]["1000000"] = _store(3.5)
    assert rg.summarize(figures, [10000, 1000000])[0]["verdict"] == "missed"


def test_like_for_like_keeps_only_queries_ours_answered_by_the_phrase() -> None:
    ours = {"phrase": _cls(1.0, n=3), "phrase_typed": {
        **_cls(1.0, n=3), "per_query_cpu_ms": [1.0, 50.0, 2.0],
        "answered_by": ["phrase", "words", "phrase"]}}
    peer = {"phrase": _cls(2.0, n=3), "phrase_typed": {
        **_cls(1.0, n=3), "per_query_cpu_ms": [4.0, 0.1, 4.0]}}
    got = rg.like_for_like({"ours": [ours], "peer": [peer]})
    assert got["phrase_typed"]["n"] == 2  # the words-answered query is left out
    assert got["phrase_typed"]["ours"] == 2.0 and got["phrase_typed"]["peer"] == 4.0
    assert got["phrase_typed"]["ratio"] == 0.5
    assert rg.like_for_like({"ours": [], "peer": []}) == {}


def test_median_round() -> None:
    assert rg.median_round([{"a": 1.0}, {"a": 5.0}, {"a": 2.0}], "a") == 2.0
    assert rg.median_round([{"b": 1.0}], "a") is None


def test_build_store_grows_a_real_store_that_recalls(tmp_path: Path) -> None:
    import anneal_memory as am

    vocab = wl.Vocabulary(Counter({"sqlite": 5, "cache": 4, "retry": 3, "deploy": 2}))
    path = tmp_path / "r.db"
    assert rg.build_store(path, 120, vocab, deadline=time.time() + 60) == 120
    assert rg.store_size(path) == 120
    assert rg.build_store(path, 150, vocab, deadline=time.time() + 60) == 150  # grows on
    store = am.Store(str(path))
    try:
        first = wl.episode(vocab, 0)["content"]
        r = store.recall(keyword=first, limit=5, context=False)
        assert first in [e.content for e in r.episodes]
        assert store.recall(keyword="cache", limit=200).total_matching == sum(
            "cache" in wl.episode(vocab, i)["content"].lower() for i in range(150))
    finally:
        store.close()



def test_the_era_walk_finds_the_whole_index_page_and_counts_its_eras(tmp_path: Path) -> None:
    """The era probe's page walk (eras newest first until the page is full) returns the
    rows the whole index gives (era_page_walk asserts it), and a phrase in fewer rows than
    a page walks every era."""
    import sqlite3

    rows = [(i, f"alphabet soup {i}") for i in range(1, 31)]  # era 0
    rows += [(20_000, "alphabet soup"), (20_001, "a rare phrase here"),  # era 1
             (40_000, "alphabet soup"), (40_001, "a rare phrase here")]  # era 2
    src = tmp_path / "s.db"
    with sqlite3.connect(src) as s:
        s.execute("CREATE TABLE episodes (rowid INTEGER PRIMARY KEY, content TEXT)")
        s.executemany("INSERT INTO episodes VALUES (?, ?)", rows)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE tri USING fts5(content, content='', tokenize='trigram', "
                 "detail='none', columnsize=0)")
    conn.execute("ATTACH ? AS s", [str(src)])
    conn.executemany("INSERT INTO tri(rowid, content) VALUES (?, ?)",
                     [(i, f"{t} {rg.era_token(i)}") for i, t in rows])
    try:
        rare = rg.era_page_walk(conn, ["rare phrase"], 40_001)  # 2 rows: every era
        assert rare["eras"] == 3 and rare["eras_walked_p95"] == 3
        assert rg.era_page_walk(conn, ["alphabet soup"], 40_001)["eras_walked_p95"] == 3
        assert rg.era_page_walk(conn, ["alphabet soup"], 40_001, limit=2
                                )["eras_walked_p95"] == 2
        assert rg.era_page_walk(conn, ["ALPHABET"], 40_001, limit=1)["eras_walked_p95"] == 1
    finally:
        conn.close()
