"""What recall keeps to answer the next query with less work (issue 54 goal 3) gives the
same answers as working everything out again: word counts kept per database state are
dropped by a write, what a text says of itself is kept per text and bounded, and the
date patterns are skipped only for queries that cannot name a date. The golden file
(test_recall_golden.py) pins the answers themselves."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from anneal_memory import Store, ranking
from anneal_memory.testing import backend_of


def _count_calls(monkeypatch: pytest.MonkeyPatch, store: Store, name: str) -> list[Any]:
    """Each call of the backend method ``name`` under ``store``, by its arguments."""
    backend = backend_of(store)
    real = getattr(backend, name)
    calls: list[Any] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(backend, name, counted)
    return calls


def test_word_counts_are_asked_once_per_state_and_again_after_a_write(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(12):
        store.record(f"the lighthouse keeper fed the gulls on day {i}", "observation")
    store.record("a storm closed the harbour", "observation")
    calls = _count_calls(monkeypatch, store, "word_counts")
    first = store.recall(keyword="lighthouse storm now", limit=5)
    assert first.query_params["match"] == "words" and len(calls) == 1
    # another query of the same words (another pool size: not the memo of the ranking)
    store.recall(keyword="storm lighthouse now", limit=5)
    assert len(calls) == 1
    # a new word: only it is counted
    store.recall(keyword="lighthouse gulls now", limit=5)
    assert len(calls) == 2 and list(calls[1][1]) == ["gulls"]
    # a write changes the counts: asked again, and the ranking sees the new count
    for i in range(30):
        store.record(f"another storm on day {i}", "observation")
    again = store.recall(keyword="lighthouse storm now", limit=5)
    assert len(calls) == 3
    fresh = Store(store.path, project_name="Test")  # nothing kept: counts from scratch
    try:
        assert [e.id for e in fresh.recall(keyword="lighthouse storm now", limit=5).episodes] \
            == [e.id for e in again.episodes]
    finally:
        fresh.close()
    # the storm is common now: a lighthouse turn leads, as it did not before
    assert "lighthouse" in again.episodes[0].content
    assert "storm" in first.episodes[0].content


def test_the_page_and_the_matches_its_context_is_next_to_are_one_read(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    q = store.record("what did the plumber charge for the boiler?", "observation",
                     timestamp="2026-01-01T10:00:00Z")
    a = store.record("ninety pounds", "observation", timestamp="2026-01-01T10:00:05Z")
    for i in range(5):
        store.record(f"filler {i}", "observation", timestamp=f"2026-01-02T10:00:0{i}Z")
    reads = _count_calls(monkeypatch, store, "rows_by_rowid")
    res = store.recall(keyword="plumber boiler cost", limit=1)
    assert [e.id for e in res.episodes] == [a.id]  # the reply outranks the question...
    assert res.why == {a.id: f"next to {q.id}"}  # ...and names it, though off the page
    assert len(reads) == 1


def test_a_text_is_judged_the_same_kept_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "SEEN_TEXTS", 8)
    monkeypatch.setattr(ranking, "_ONLY_YOU_SEEN", {})
    monkeypatch.setattr(ranking, "_SAYS_WHEN_SEEN", {})
    texts = ["Wow, your kids must love it!", "You know, I took my kids camping",
             "We went there last May", "The kids went camping", "see you yesterday",
             "x" * 3000 + " you", "in 2023 you did", "may we go?", "you"]
    first = [(ranking.speaks_only_of_you(t), ranking.says_when(t)) for t in texts * 3]
    assert first[:3] == [(True, False), (False, False), (False, True)]
    assert len(ranking._ONLY_YOU_SEEN) <= 8 and len(ranking._SAYS_WHEN_SEEN) <= 8
    assert "x" * 3000 + " you" not in ranking._ONLY_YOU_SEEN  # long texts are not kept
    monkeypatch.setattr(ranking, "SEEN_TEXTS", 0)  # nothing kept: each judged afresh
    monkeypatch.setattr(ranking, "_ONLY_YOU_SEEN", {})
    monkeypatch.setattr(ranking, "_SAYS_WHEN_SEEN", {})
    assert first == [(ranking.speaks_only_of_you(t), ranking.says_when(t)) for t in texts * 3]


def test_a_query_the_date_hint_skips_names_no_date(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    parts = ["on", "13", "October", ",", "2023", "in", "May", "may", "March", "march", "Mar.",
             "sept", "SEPT", "ſept", "Sep", "İn", "jun", "June", "last", "of", "٣", "١٢",
             "2024-02-30", "1999-12-31", "early", "mid", "Dec", "nov.", "the", "day", "week"]
    queries = [" ".join(rng.choice(parts) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    queries += ["What happened on 13 October, 2023?", "in ſeptember", "When in May?",
                "they march on", "last Dec", "٢٠٢٣", "nothing here"]
    got = [ranking.dated_periods(q) for q in queries]
    monkeypatch.setattr(ranking, "_DATE_HINT", re.compile(""))  # every pattern tried
    want = [ranking.dated_periods(q) for q in queries]
    assert got == want
    named = sum(bool(w) for w in want)
    assert 300 < named < len(queries) - 300  # both kinds were asked


def test_counts_are_shared_across_types_not_across_namespaces(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = store.scoped({"user": "alice"})
    for i in range(8):
        store.record(f"the lighthouse keeper logged day {i}", "decision" if i % 2 else "outcome")
        alice.record(f"a storm over the lighthouse, night {i}", "decision")
    alice.record("a quiet harbour", "observation")
    calls = _count_calls(monkeypatch, store, "word_counts")
    store.recall(keyword="lighthouse harbour now", limit=5)
    typed = store.recall(keyword="lighthouse harbour now", limit=5, episode_type="decision")
    assert typed.query_params["match"] == "words" and len(calls) == 1  # type: same counts
    mine = alice.recall(keyword="lighthouse harbour now", limit=5)
    assert len(calls) == 2  # a namespace counts its own episodes
    fresh = Store(store.path, project_name="Test")
    try:
        view = fresh.scoped({"user": "alice"})
        assert [e.id for e in view.recall(keyword="lighthouse harbour now", limit=5).episodes] \
            == [e.id for e in mine.episodes]
        assert [e.id for e in fresh.recall(keyword="lighthouse harbour now", limit=5,
                                           episode_type="decision").episodes] \
            == [e.id for e in typed.episodes]
    finally:
        fresh.close()
