"""The search plan: a positions-free trigram index narrows substring search and the row
decides; totals without a second count; word ranking from ids, times and scores; the
schema 3 upgrade that rebuilds the trigram index of an older store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.storage.sqlite import MAX_TRIGRAMS, SCHEMA_VERSION, trigrams


def test_trigram_candidates_never_decide_a_match(store: Store) -> None:
    # every narrowing trigram of the phrase occurs here, but the phrase itself does not
    grams = trigrams("abcdefghijkl")
    assert 1 < len(grams) <= MAX_TRIGRAMS
    store.record(" ".join(grams) + " scattered", "observation")
    whole = store.record("the run abcdefghijkl ended", "observation")
    r = store.recall(keyword="abcdefghijkl", context=False)
    assert [e.id for e in r.episodes] == [whole.id]
    assert r.total_matching == 1 and r.query_params["match"] == "phrase"


@pytest.mark.parametrize("phrase", ["ab", "abc", "AbCd", " the ", "数据库", "e\u0301t\u00e9 s"])
def test_trigrams_cover_short_and_mixed_phrases(phrase: str) -> None:
    grams = trigrams(phrase)
    assert (grams == []) == (len(phrase) < 3)
    assert all(len(g) == 3 and g.lower() in phrase.lower() for g in grams)


def test_long_phrase_matches_exactly_and_case_insensitively(store: Store) -> None:
    text = "Deploy the Canary Release to the EU shard before the Friday freeze"
    hit = store.record(text, "decision")
    store.record("deploy the canary release to the US shard before the freeze", "decision")
    r = store.recall(keyword="the canary release to the eu shard before the friday")
    assert [e.id for e in r.episodes] == [hit.id]


def test_totals_of_full_and_partial_pages(store: Store) -> None:
    for i in range(25):
        store.record(f"rollout step {i} of the migration", "observation")
    page = store.recall(keyword="rollout step", limit=10)
    assert len(page.episodes) == 10 and page.total_matching == 25
    tail = store.recall(keyword="rollout step", limit=10, offset=20)
    assert len(tail.episodes) == 5 and tail.total_matching == 25
    past = store.recall(keyword="rollout step", limit=10, offset=30)
    assert past.episodes == [] and past.total_matching == 25
    assert store.recall(keyword="rollout step", limit=0).total_matching == 25
    words = store.recall(keyword="which migration rollout?", limit=10, context=False)
    assert words.query_params["match"] == "words" and words.total_matching == 25


def test_type_filter_counts_only_that_type(store: Store) -> None:
    for i in range(12):
        store.record(f"cache eviction note {i}", "decision" if i % 3 == 0 else "observation")
    r = store.recall(keyword="cache eviction", episode_type="decision", limit=2)
    assert r.total_matching == 4 and all(e.type == "decision" for e in r.episodes)


def test_word_context_respects_filters_and_time(store: Store) -> None:
    q = store.record("what did the vendor quote for the replica?", "question")
    a = store.record("forty two dollars a month", "observation")
    r = store.recall(keyword="vendor replica quote?", limit=5)
    assert [e.id for e in r.episodes][:2] == [q.id, a.id]
    # the reply is hidden by the type filter: it is not pulled in as context
    r = store.recall(keyword="vendor replica quote?", episode_type="question", limit=5)
    assert [e.id for e in r.episodes] == [q.id]
    # a reply far away in time is not context
    store.record("an unrelated turn", "observation")
    far = store.record("what about the vendor replica quote again?", "question")
    store.record("much later answer", "observation", timestamp="2099-01-01T00:00:00+00:00")
    got = store.recall(keyword="vendor replica quote?", limit=10).episodes
    assert far.id in {e.id for e in got}
    assert "much later answer" not in {e.content for e in got}
    assert "an unrelated turn" in {e.content for e in got}  # recorded just before: context


def _make_v2(db: Path) -> None:
    """Turn a fresh store into what schema 2 wrote: a positional trigram index with the
    type column, fed by the old triggers."""
    c = sqlite3.connect(db)
    with c:
        for trig in ("episodes_ai", "episodes_ad", "episodes_au"):
            c.execute(f"DROP TRIGGER {trig}")
        c.execute("DROP TABLE episodes_tri")
        c.execute("CREATE VIRTUAL TABLE episodes_tri USING fts5(content, type, "
                  "content='episodes', content_rowid='rowid', tokenize='trigram')")
        c.execute("INSERT INTO episodes_tri(episodes_tri) VALUES ('rebuild')")
        c.execute("CREATE TRIGGER episodes_ai AFTER INSERT ON episodes BEGIN "
                  "INSERT INTO episodes_words(rowid, content, type, ns_tag) VALUES "
                  "(new.rowid, new.content, new.type, new.ns_tag); "
                  "INSERT INTO episodes_tri(rowid, content, type) VALUES "
                  "(new.rowid, new.content, new.type); END")
        c.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    c.close()


def test_schema_2_store_is_upgraded_and_keeps_every_episode(db: Path) -> None:
    s = Store(db, project_name="Up")
    ids = [s.record(f"upgrade probe {i} with phrase number {i}", "observation").id
           for i in range(300)]
    s.close()
    _make_v2(db)
    c = sqlite3.connect(db)
    assert "detail" not in c.execute("SELECT sql FROM sqlite_master WHERE "
                                     "name='episodes_tri'").fetchone()[0]
    c.close()
    s = Store(db, project_name="Up")
    try:
        assert s.backend.get_meta("schema_version") == str(SCHEMA_VERSION)
        ddl = s.backend.q1("SELECT sql FROM sqlite_master WHERE name='episodes_tri'")[0]
        assert "detail='none'" in ddl
        r = s.recall(keyword="phrase number 123")
        assert [e.id for e in r.episodes] == [ids[123]]
        new = s.record("recorded after the upgrade", "observation")
        assert [e.id for e in s.recall(keyword="after the upgr").episodes] == [new.id]
        assert s.backend.q1("INSERT INTO episodes_tri(episodes_tri) "
                            "VALUES ('integrity-check')") is None
        assert s.backend.integrity_check() == "ok"
        assert s.recall(limit=1).total_matching == 301
    finally:
        s.close()
