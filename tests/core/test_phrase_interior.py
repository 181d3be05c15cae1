"""A substring search narrowed by the word index (issue 54, goal 1): past
LARGE_STORE row ids, a phrase with a rare whole word inside it is searched among
the episodes holding that word instead of through the trigram AND (which reads every
trigram's doclist when nothing matches). Substring semantics stay exact: the same
episodes, in the same order, and the same count as the trigram path, for phrases whose
edge words are parts of longer words ("cat" in "concatenate"), with punctuation,
apostrophes, digits, mixed case, non-ASCII text around them, filters and paging. The
thresholds are lowered here so that a store of a few hundred episodes takes the path."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import SearchFilters
from anneal_memory.storage.common import trigrams
from anneal_memory.storage.sqlite import SQLiteBackend, interior_words
from anneal_memory.testing import backend_of

_WORDS = ("the a and to of we it it's really cat concatenate catalog dog dogma "
          "meteor shower showers museum lake Lake LAKE sunrise 3pm 10am pottery "
          "pot-luck re-read don't o'clock café naïve straße counseling support "
          "group groups grouping festival e-mail email x y").split()
_PUNCT = (" ", " ", " ", " ", ", ", ". ", "! ", " - ", "; ", "'s ", ": ", " (", ") ")
_TYPES = ("observation", "decision", "question")


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(4, 18)):
        parts.append(rng.choice(_WORDS))
        parts.append(rng.choice(_PUNCT))
    return "".join(parts).strip()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    rng = random.Random(541)
    s = Store(str(tmp_path_factory.mktemp("interior") / "m.db"), project_name="interior")
    start = datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)
    items = [{"content": _text(rng), "episode_type": rng.choice(_TYPES),
              "timestamp": (start + timedelta(minutes=i)).isoformat()} for i in range(1200)]
    items[17]["content"] = "We concatenate the catalog at 3pm, then the cat naps."
    items[400]["content"] = "Re-read the pottery notes: the museum's meteor shower was at 10am."
    s.record_many(items)
    yield s
    s.close()


def _queries(store: Store) -> list[str]:
    """Spans of stored episodes cut at any character (so edge words are parts of words),
    in changed case, plus spans of made-up text."""
    rng = random.Random(9)
    texts = [e.content for e in store.recall(limit=1200).episodes]
    out = ["at the cat naps", "concatenate the catalog at", "e the catalog a",
           "the museum's meteor shower was", "meteor SHOWER was", "the zzz the",
           "re-read the pottery", "'s meteor shower", "and the and", "of the group of"]
    for _ in range(120):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        j = min(len(t), i + rng.randint(5, 40))
        q = t[i:j]
        out.append(q.upper() if rng.random() < 0.2 else q)
    return [q for q in out if q.strip()]


def _page(b: SQLiteBackend, f: SearchFilters, q: str, limit: int, offset: int
          ) -> tuple[list[str], int, bool]:
    page = b.search(f, phrase=q, limit=limit, offset=offset)
    return [r.id for r, _s in page.hits], int(page.total), getattr(page.total, "estimated",
                                                                     False)


def test_interior_words_are_only_the_words_bounded_inside_the_phrase() -> None:
    assert interior_words("concatenate the catalog at") == ["the", "catalog"]
    assert interior_words("cat") == []
    assert interior_words("the museum's meteor shower") == ["museum", "s", "meteor"]
    assert interior_words(" cat ") == ["cat"]
    assert interior_words("a b a c") == ["b", "a"]


def test_the_word_index_path_gives_the_trigram_path_results(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    b = backend_of(store)
    assert isinstance(b, SQLiteBackend)
    cases = [(q, f, lim, off) for q in _queries(store)
             for f in (SearchFilters(), SearchFilters(episode_type="decision"))
             for lim, off in ((10, 0), (5, 5), (100, 0))]
    before = [_page(b, f, q, lim, off) for q, f, lim, off in cases]
    monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 0)
    monkeypatch.setattr(SQLiteBackend, "RARE_WORD_ROWS", 5000)  # every word is "rare"
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)
    try:
        after = [_page(b, f, q, lim, off) for q, f, lim, off in cases]
    finally:
        b.conn.set_trace_callback(None)
    taken = sum("FROM episodes_words t CROSS JOIN episodes e" in sql for sql in seen)
    assert taken > 100  # most cases went through the word index
    assert sum(bool(ids) for ids, _n, _e in after) > 100  # and most found something
    for case, old, new in zip(cases, before, after):
        assert new == old, case


def test_a_word_held_too_often_leaves_the_trigram_path(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    b = backend_of(store)
    assert isinstance(b, SQLiteBackend)
    monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 0)
    monkeypatch.setattr(SQLiteBackend, "RARE_WORD_ROWS", 5)  # each word is in hundreds
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)
    try:
        ids, _n, _e = _page(b, SearchFilters(), "the museum's meteor shower was", 10, 0)
    finally:
        b.conn.set_trace_callback(None)
    assert ids
    assert not any("FROM episodes_words t CROSS JOIN" in sql for sql in seen)
    assert any("episodes_tri MATCH" in sql for sql in seen)


def test_a_small_store_keeps_the_trigram_path(store: Store) -> None:
    b = backend_of(store)
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)
    try:
        _page(b, SearchFilters(), "concatenate the catalog at", 10, 0)
    finally:
        b.conn.set_trace_callback(None)
    assert not any("FROM episodes_words t CROSS JOIN" in sql for sql in seen)


def test_recall_through_the_word_index_finds_substrings_of_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 0)
    monkeypatch.setattr(SQLiteBackend, "RARE_WORD_ROWS", 5000)
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)  # not checked row by row
    s = Store(str(tmp_path / "m.db"), project_name="sub")
    try:
        s.record_many([{"content": t, "episode_type": "observation"} for t in (
            "we concatenate their catalog daily", "their catalog of cats",
            "Concatenate THEIR CATALOGUE")])
        seen: list[str] = []
        backend_of(s).conn.set_trace_callback(seen.append)
        r = s.recall(keyword="ate their catal", limit=10)
        backend_of(s).conn.set_trace_callback(None)
        assert any("FROM episodes_words t CROSS JOIN" in sql for sql in seen)
        assert r.query_params["match"] == "phrase"
        assert sorted(e.content for e in r.episodes) == [
            "Concatenate THEIR CATALOGUE", "we concatenate their catalog daily"]
        assert r.total_matching == 2
    finally:
        s.close()


def test_a_large_store_counts_exactly_to_its_own_bound_then_estimates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    monkeypatch.setattr(SQLiteBackend, "SAMPLE_ROWS", 40)
    s = Store(str(tmp_path / "m.db"), project_name="count")
    try:
        # 300 hold the phrase; 100 hold some of its trigrams only
        s.record_many([{"content": f"alphabet soup {i}" if i % 4 else f"alp hab bet soup {i}",
                        "episode_type": "observation"} for i in range(400)])
        small = s.recall(keyword="alphabet", limit=5)
        assert small.total_matching == 300 and "total_estimated" not in small.query_params
        s.close()
        s = Store(str(tmp_path / "m.db"))  # a fresh connection: nothing memoized
        monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 100)
        monkeypatch.setattr(SQLiteBackend, "EXACT_COUNT_LARGE", 50)
        large = s.recall(keyword="alphabet", limit=5)
        assert [e.id for e in large.episodes] == [e.id for e in small.episodes]
        assert large.query_params.get("total_estimated") is True
        assert 240 <= large.total_matching <= 360
        rare = s.recall(keyword="soup 399", limit=5)  # one row offered: still exact
        assert rare.total_matching == 1 and "total_estimated" not in rare.query_params
    finally:
        s.close()


def _sampled_large_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounds of a large store at test size: every store past 100 rows is "large", a count
    is exact to 50 trigram candidates, then estimated from a sample of 40."""
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    monkeypatch.setattr(SQLiteBackend, "SAMPLE_ROWS", 40)
    monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 100)
    monkeypatch.setattr(SQLiteBackend, "EXACT_COUNT_LARGE", 50)


def _record_two_kinds(s: Store, common: str, rare: str, rare_n: int,
                      rare_type: str = "observation") -> None:
    """300 episodes of the ``common`` text then ``rare_n`` of the ``rare`` one, each
    numbered ({i})."""
    s.record_many([{"content": common.format(i=i), "episode_type": "observation"}
                   for i in range(300)] +
                  [{"content": rare.format(i=i), "episode_type": rare_type}
                   for i in range(rare_n)])


def test_an_estimate_is_never_below_the_matches_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oldest candidates hold every trigram of the phrase but not the phrase: the sample
    finds no match, yet the page is full of newer ones."""
    _sampled_large_store(monkeypatch)
    s = Store(str(tmp_path / "m.db"), project_name="shown")
    try:
        _record_two_kinds(s, "alpha habe bet soup {i}", "alphabet soup {i}", 8)
        r = s.recall(keyword="alphabet", limit=5)
        assert r.query_params["match"] == "phrase"
        assert all("alphabet" in e.content for e in r.episodes) and len(r.episodes) == 5
        assert r.query_params.get("total_estimated") is True and r.total_matching >= 5
    finally:
        s.close()


def test_a_phrase_estimated_at_nothing_leaves_an_exact_word_total_unflagged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A phrase whose estimate is 0 falls back to the words; the total then reported is the
    word matches' count, so the flag says whether THAT count is estimated."""
    _sampled_large_store(monkeypatch)
    s = Store(str(tmp_path / "m.db"), project_name="fallback")
    try:
        # every row holds the phrase's trigrams, none holds the phrase or its word
        s.record_many([{"content": f"alpha habe bet soup {i}", "episode_type": "observation"}
                       for i in range(300)])
        r = s.recall(keyword="alphabet", limit=5)
        assert r.query_params["match"] == "words"
        assert r.total_matching == 0 and r.episodes == []
        assert "total_estimated" not in r.query_params
    finally:
        s.close()


def test_a_large_store_intersects_the_trigrams_its_index_holds_least(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past LARGE_STORE the page intersects, of each stretch of the phrase, the trigram the
    index holds least often (by a sample of each), not the rarest-looking by its letters:
    here "quiz" (q and z, the rarest letters) is in every episode, "etaoin" in three."""
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    monkeypatch.setattr(SQLiteBackend, "GRAM_SAMPLE", 8)
    s = Store(str(tmp_path / "m.db"), project_name="grams")
    try:
        _record_two_kinds(s, "quiz of the day {i}", "the quiz etaoin {i}", 3, "decision")
        b = backend_of(s)
        assert isinstance(b, SQLiteBackend)
        phrase = "quiz etaoin"
        assert b._narrowest_grams(phrase) == trigrams(phrase)  # a small store: as before
        assert {"qui", "uiz"} & set(trigrams(phrase))  # what the letters call rare
        monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 100)
        chosen = b._narrowest_grams(phrase)
        assert len(chosen) == SQLiteBackend.PHRASE_GRAMS  # one of each stretch
        common = {"qui", "uiz", "iz "}  # each in all 303 episodes
        assert len(common & set(trigrams(phrase))) == 2  # the letters pick two of them
        assert len(common & set(chosen)) == 1  # only the first stretch has no other
        # a non-ASCII phrase keeps the letters' trigrams (its row check folds case as
        # Python does, which FTS5's folding need not match letter for letter)
        assert b._narrowest_grams("quiz étaoin") == trigrams("quiz étaoin")
        seen: list[str] = []
        b.conn.set_trace_callback(seen.append)
        try:
            r = s.recall(keyword="QUIZ ETAOIN", limit=10)
        finally:
            b.conn.set_trace_callback(None)
        assert sorted(e.content for e in r.episodes) == [f"the quiz etaoin {i}" for i in range(3)]
        assert r.total_matching == 3 and "total_estimated" not in r.query_params
        page = [re.search(r"episodes_tri MATCH '([^']*)'", sql) for sql in seen
                if "CROSS JOIN episodes e" in sql]
        assert page and all(m and '"uiz"' not in m.group(1).lower() for m in page)
    finally:
        s.close()


@pytest.mark.parametrize("sample", [1, 64])
def test_the_narrowest_trigrams_give_the_same_pages_and_totals(
        store: Store, monkeypatch: pytest.MonkeyPatch, sample: int) -> None:
    """Every result of the narrowed trigram AND (same ids, order, totals and estimate flags,
    with counts estimated past 50 candidates) is the one :func:`trigrams` gives."""
    b = backend_of(store)
    assert isinstance(b, SQLiteBackend)
    _sampled_large_store(monkeypatch)
    monkeypatch.setattr(SQLiteBackend, "RARE_WORD_ROWS", 0)  # the trigram path only
    monkeypatch.setattr(SQLiteBackend, "GRAM_SAMPLE", sample)
    queries = _queries(store) + ["naïve straße", "café CAFÉ", "e-mail email", "aaaa", "zzzzz"]
    cases = [(q, f, lim, off) for q in queries
             for f in (SearchFilters(), SearchFilters(episode_type="decision"))
             for lim, off in ((10, 0), (5, 5), (100, 0))]
    monkeypatch.setattr(SQLiteBackend, "_narrowest_grams",
                        lambda self, phrase: trigrams(phrase))
    before = [_page(b, f, q, lim, off) for q, f, lim, off in cases]
    monkeypatch.undo()
    _sampled_large_store(monkeypatch)
    monkeypatch.setattr(SQLiteBackend, "RARE_WORD_ROWS", 0)
    monkeypatch.setattr(SQLiteBackend, "GRAM_SAMPLE", sample)
    narrowed = sum(b._narrowest_grams(q) != trigrams(q) for q in queries)
    assert narrowed > len(queries) // 2  # most queries intersect other trigrams
    after = [_page(b, f, q, lim, off) for q, f, lim, off in cases]
    assert sum(e for _ids, _n, e in after) > 10  # estimated totals are compared too
    for case, old, new in zip(cases, before, after):
        assert new == old, case


def test_a_read_only_large_store_answers_through_the_narrowest_trigrams(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    monkeypatch.setattr(SQLiteBackend, "LARGE_STORE", 100)
    path = str(tmp_path / "m.db")
    s = Store(path, project_name="ro")
    _record_two_kinds(s, "quiz of the day {i}", "the quiz etaoin", 1)
    want = [e.id for e in s.recall(keyword="quiz etaoin", limit=5).episodes]
    s.close()
    ro = Store(path, read_only=True)
    try:
        r = ro.recall(keyword="quiz etaoin", limit=5)
        assert [e.id for e in r.episodes] == want and len(want) == 1
    finally:
        ro.close()
