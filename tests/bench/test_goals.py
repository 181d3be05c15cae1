"""Issue 35's goal arithmetic and the workload it adds: mixed queries and the raw-SQLite
ceiling. A wrong ratio or verdict here would publish a wrong claim."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import goals  # noqa: E402
import workload as wl  # noqa: E402

VOCAB = wl.Vocabulary(Counter({"the": 50, "sqlite": 5, "cache": 4, "retry": 3,
                               "timeout": 2, "deploy": 2, "rollback": 1}))


def test_mixed_queries_are_vocabulary_words_one_in_nine_absent() -> None:
    qs = wl.mixed_queries(VOCAB, 1000, 90)
    assert qs == wl.mixed_queries(VOCAB, 1000, 90)
    assert qs != wl.mixed_queries(VOCAB, 10000, 90)
    absent = [q for q in qs if any(w not in VOCAB.words for w in q.split())]
    assert len(absent) == 10  # every ninth: 8, 17, ..., 89
    for q in qs:
        assert 1 <= len(q.split()) <= 3
        assert not set(q.split()) & wl.QUERY_SKIP


def _pkg(rate: float, p95: dict[str, float], wrap: dict[str, tuple[float, float]],
         ceiling: float | None = None) -> dict:
    run = {f"recall_{k}": {"p95_ms": v} for k, v in p95.items()}
    pkg = {"sizes": {s: {"single": {"load_per_second": rate, **run}} for s in ("1000", "10000")},
           "wrap": {s: {"total_ms": m, "total_p95_ms": p} for s, (m, p) in wrap.items()}}
    if ceiling is not None:
        pkg["ceiling"] = {s: {"load_per_second": ceiling} for s in ("1000", "10000")}
    return pkg


def test_goal_ratios_and_verdicts() -> None:
    latest = {"meta": {}, "packages": {
        "ours": _pkg(900.0, {"keyword": 1.0, "keyword_mixed": 1.0, "keyword_mixed_decision": 3.0},
                     {"50": (4.0, 9.0), "500": (30.0, 80.0)}, ceiling=1000.0),
        "peer": _pkg(400.0, {"keyword": 1.0, "keyword_mixed": 2.5, "keyword_mixed_decision": 4.0},
                     {"50": (10.0, 10.0), "500": (50.0, 70.0)})}}
    got = {(g.name, g.basis): g for g in goals.all_goals(latest)}
    mixed = got[("keyword recall p95, mixed queries @ 1,000", "ours / 1.0.2")]
    assert mixed.ratio == pytest.approx(0.4) and mixed.verdict == "met"
    typed = got[("keyword recall p95, mixed queries, type=decision @ 10,000", "ours / 1.0.2")]
    assert typed.ratio == pytest.approx(0.75) and typed.verdict == "missed"
    ceiling = got[("durable record() @ 1,000", "ours / raw SQLite ceiling")]
    assert ceiling.ratio == pytest.approx(0.9) and ceiling.verdict == "met"
    peer = got[("durable record() @ 10,000", "ours / 1.0.2")]
    assert peer.ratio == pytest.approx(2.25) and peer.verdict == "met"
    assert got[("wrap prepare + save median @ 50 episodes", "ours / 1.0.2")].verdict == "met"
    p95 = got[("wrap prepare + save p95 @ 500 episodes", "ours / 1.0.2")]
    assert p95.ratio == pytest.approx(80 / 70) and p95.verdict == "missed"
    # nothing measured at 1M, no scale-out files: said so, never passed
    unmeasured = [g for g in got.values() if g.ratio is None]
    assert {g.verdict for g in unmeasured} == {"not measured"}
    assert len(unmeasured) == 4


def test_scale_and_scale_out_goals() -> None:
    def run(p95_phrase: float, p95_words: float) -> dict:
        return {"batch": {"recall_keyword": {"p95_ms": p95_phrase},
                          "recall_keyword_words": {"p95_ms": p95_words}}}
    latest = {"meta": {}, "packages": {"ours": {"sizes": {
        "10000": run(1.0, 2.0), "1000000": run(2.5, 8.0)}}}}
    scale = {g.name: g for g in goals.scale_goals(latest)}
    assert scale["phrase recall p95 @ 1,000,000"].ratio == pytest.approx(2.5)
    assert scale["phrase recall p95 @ 1,000,000"].verdict == "met"
    assert scale["word recall p95 @ 1,000,000"].verdict == "missed"
    scale_out = {"postgres": {"processes": {"write": {"combined": {
        "1": {"records_per_s": {"ratio": 1.0}}, "16": {"records_per_s": {"ratio": 1.3}}}}}}}
    many = {"concurrent_writers": {"ratio": 4.5, "writers": 50}}
    hosts, writers = goals.scale_out_goals(scale_out, many)
    assert hosts.ratio == pytest.approx(1.3) and hosts.verdict == "missed"
    assert writers.ratio == pytest.approx(4.5) and writers.verdict == "met"
    text = goals.markdown([hosts, writers])
    assert "1 of 2 met" in text and "| 1.30x | >= 4x |" in text


def test_goals_main_writes_the_table(tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text(json.dumps({"meta": {"date": "d"}, "packages": {}}))
    assert goals.main(["--results", str(tmp_path)]) == 0
    assert "0 of 16 met" in (tmp_path / "goals.md").read_text()
    assert goals.main(["--results", str(tmp_path / "missing")]) == 2


def test_ceiling_phase_records_durably(tmp_path: Path) -> None:
    import measure
    conv = {"conversation": {"session_1": [{"text": "the cache retry timeout deploy"},
                                            {"text": "rollback the sqlite cache"}]}}
    (tmp_path / "c.json").write_text(json.dumps(conv))
    args = argparse.Namespace(locomo_dir=str(tmp_path), workdir=str(tmp_path), size=30,
                              max_seconds=60.0)
    res = measure.phase_ceiling(args)
    assert res["size"] == 30 and res["load_per_second"] > 0
    assert res["record_latency"]["n"] == 30
    # the schema it measures is one table and one FTS5 index, as the issue defines it
    conn = sqlite3.connect(":memory:")
    for stmt in measure.CEILING_SCHEMA:
        conn.execute(stmt)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"ep", "ep_fts"} <= names


# -- issue 54: each measuring script reports its own goals; goals.py gathers them

def _area(verdict: str = "met", bound: str = "") -> dict:
    return {"area": "recall", "goals": [{"goal": "phrase p95 @ 10M", "figure": "2.1x of 10k",
                                         "target": "<= 3x", "verdict": verdict,
                                         "bound": bound}]}


def test_area_goals_read_every_file_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "goals54").mkdir()
    (tmp_path / "goals54" / "b.json").write_text(json.dumps({**_area(), "area": "b"}))
    (tmp_path / "goals54" / "a.json").write_text(json.dumps(_area("missed", "the disk | io")))
    got = goals.load_area_goals(tmp_path)
    assert [(g.area, g.verdict) for g in got] == [("recall", "missed"), ("b", "met")]
    table = goals.area_markdown(got)
    assert table.startswith("Issue 54's goals: 1 of 2 met.")
    assert "the disk \\| io" in table  # a pipe in a cell cannot split the row


@pytest.mark.parametrize("doc, says", [
    ({"goals": []}, "needs 'area'"),
    ({"area": "x", "goals": [{"goal": "g", "figure": "f", "target": "t"}]}, "needs text"),
    (_area("passed"), "is not one of"),
    (_area("missed"), "says no bound"),
])
def test_a_malformed_goal_file_is_refused(doc: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        goals.area_goals(doc, "x.json")


def test_readme_block_is_rewritten_between_its_markers_only() -> None:
    text = f"intro\n{goals.README_START}\nold table\n{goals.README_END}\nafter\n"
    new = goals.rewrite_readme(text, "new table\n")
    assert new == f"intro\n{goals.README_START}\nnew table\n{goals.README_END}\nafter\n"
    with pytest.raises(ValueError, match="no <!-- goals54:start -->"):
        goals.rewrite_readme("no markers", "x")


def test_main_fails_on_a_malformed_goal_file(tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text(json.dumps({"packages": {}}))
    (tmp_path / "goals54").mkdir()
    (tmp_path / "goals54" / "bad.json").write_text(json.dumps(_area("passed")))
    assert goals.main(["--results", str(tmp_path)]) == 2
    (tmp_path / "goals54" / "bad.json").write_text(json.dumps(_area()))
    assert goals.main(["--results", str(tmp_path)]) == 0
    assert "Issue 54's goals: 1 of 1 met." in (tmp_path / "goals.md").read_text()
