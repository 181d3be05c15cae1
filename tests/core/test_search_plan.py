"""The search plan: a positions-free trigram index narrows substring search and the row
decides; totals without a second count; word ranking from ids, times and scores; the
schema 3 upgrade that rebuilds the trigram index of an older store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.storage.common import MAX_TRIGRAMS, trigrams
from anneal_memory.storage.roles import Meta
from anneal_memory.storage.sqlite import SCHEMA_VERSION, SQLiteBackend
from anneal_memory.testing import backend_of


@pytest.fixture(params=["index", "scan"])
def plan(request, monkeypatch) -> str:
    """Every search test runs on both plans: the trigram index (as a large store uses
    it) and the row-by-row check a small store or a rare type gets."""
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0 if request.param == "index" else 10**9)
    return request.param


@pytest.mark.usefixtures("plan")
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


@pytest.mark.usefixtures("plan")
def test_long_phrase_matches_exactly_and_case_insensitively(store: Store) -> None:
    text = "Deploy the Canary Release to the EU shard before the Friday freeze"
    hit = store.record(text, "decision")
    store.record("deploy the canary release to the US shard before the freeze", "decision")
    r = store.recall(keyword="the canary release to the eu shard before the friday")
    assert [e.id for e in r.episodes] == [hit.id]


@pytest.mark.usefixtures("plan")
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


@pytest.mark.usefixtures("plan")
def test_type_filter_counts_only_that_type(store: Store) -> None:
    for i in range(12):
        store.record(f"cache eviction note {i}", "decision" if i % 3 == 0 else "observation")
    r = store.recall(keyword="cache eviction", episode_type="decision", limit=2)
    assert r.total_matching == 4 and all(e.type == "decision" for e in r.episodes)


@pytest.mark.usefixtures("plan")
def test_word_context_respects_filters_and_time(store: Store) -> None:
    q = store.record("what did the vendor quote for the replica?", "question")
    a = store.record("forty two dollars a month", "observation")
    r = store.recall(keyword="vendor replica quote?", limit=5)
    # (the answer first: a matching question passes its score to its reply, ranking.py)
    assert [e.id for e in r.episodes][:2] == [a.id, q.id]
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
    # recorded just before a match, but outranking none: context never pads (issue 31)
    assert "an unrelated turn" not in {e.content for e in got}


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


def test_small_store_and_rare_type_are_checked_row_by_row(store: Store) -> None:
    b = backend_of(store)
    from anneal_memory.storage.base import SearchFilters

    for i in range(30):
        store.record(f"note {i}", "decision" if i < 3 else "observation")
    assert b._few_rows(SearchFilters())
    old = SQLiteBackend.SCAN_ROWS
    try:
        SQLiteBackend.SCAN_ROWS = 10  # a "large" store now: only the rare type is scanned
        assert not b._few_rows(SearchFilters())
        assert b._few_rows(SearchFilters(episode_type="decision"))
        assert not b._few_rows(SearchFilters(episode_type="observation"))
    finally:
        SQLiteBackend.SCAN_ROWS = old


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
        assert Meta(backend_of(s)).get_meta("schema_version") == str(SCHEMA_VERSION)
        ddl = backend_of(s).q1("SELECT sql FROM sqlite_master WHERE name='episodes_tri'")[0]
        assert "detail='none'" in ddl
        r = s.recall(keyword="phrase number 123")
        assert [e.id for e in r.episodes] == [ids[123]]
        new = s.record("recorded after the upgrade", "observation")
        assert [e.id for e in s.recall(keyword="after the upgr").episodes] == [new.id]
        assert backend_of(s).q1("INSERT INTO episodes_tri(episodes_tri) "
                            "VALUES ('integrity-check')") is None
        assert backend_of(s).integrity_check() == "ok"
        assert s.recall(limit=1).total_matching == 301
    finally:
        s.close()


def test_phrase_totals_past_the_exact_bound_are_estimated(store: Store, monkeypatch) -> None:
    monkeypatch.setattr(SQLiteBackend, "EXACT_COUNT", 50)
    monkeypatch.setattr(SQLiteBackend, "SAMPLE_ROWS", 40)
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    for i in range(400):  # 300 hold the phrase; 100 hold some of its trigrams only
        text = f"alphabet soup {i}" if i % 4 else f"alp hab bet soup {i}"
        store.record(text, "decision" if i % 2 else "observation")
    r = store.recall(keyword="alphabet", limit=5)
    assert r.query_params.get("total_estimated") is True
    assert 240 <= r.total_matching <= 360 and type(r.total_matching) is int
    typed = store.recall(keyword="alphabet", episode_type="decision", limit=5)
    assert typed.query_params.get("total_estimated") is True
    assert 150 <= typed.total_matching <= 250  # truly 200
    # few rows offered by the index, or a filter beyond the type: the count stays exact
    small = store.recall(keyword="soup 399", limit=5)
    assert "total_estimated" not in small.query_params and small.total_matching == 1
    dated = store.recall(keyword="alphabet", since="2000-01-01", limit=5)
    assert dated.total_matching == 300 and "total_estimated" not in dated.query_params
    monkeypatch.setattr(SQLiteBackend, "EXACT_COUNT", 10_000)
    backend_of(store)._memo.clear()  # what the old bound counted is kept per state
    exact = store.recall(keyword="alphabet", limit=5)
    assert exact.total_matching == 300 and "total_estimated" not in exact.query_params


def test_a_phrase_count_walks_the_trigram_index_once_and_never_whole(
        store: Store, monkeypatch) -> None:
    # a common phrase's whole trigram intersection costs 10-20 ms in a million episodes:
    # a count walks at most one past the exact bound, once, beside the page's own walk
    monkeypatch.setattr(SQLiteBackend, "EXACT_COUNT", 50)
    monkeypatch.setattr(SQLiteBackend, "SAMPLE_ROWS", 40)
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    for i in range(200):
        store.record(f"quokka zebra {i}" if i < 30 else f"zebra {i} crossing",
                     "decision" if i % 2 else "observation")
    b = backend_of(store)
    walks: list[str] = []
    plans: list[str] = []
    real_q = b.q

    def spy(sql, params=()):
        if "episodes_tri MATCH" in sql:
            walks.append(sql)
        if "e.rowid IN" in sql:  # each offered row by its id, never a walk of its type
            plans.extend(str(r[-1]) for r in b.conn.execute("EXPLAIN QUERY PLAN " + sql,
                                                            tuple(params)))
        return real_q(sql, params)

    monkeypatch.setattr(b, "q", spy)
    monkeypatch.setattr(b, "q1", lambda sql, params=(): (spy(sql, params) or [None])[0])
    for phrase, kind, estimated, total in (("zebra", None, True, 200), ("quokka zeb", None,
                                           False, 30), ("zebra", "decision", True, 100)):
        walks.clear()
        b._memo.clear()
        r = store.recall(keyword=phrase, episode_type=kind, limit=5)
        assert bool(r.query_params.get("total_estimated")) is estimated
        if estimated:
            assert 0.9 * total <= r.total_matching <= 1.1 * total
        else:
            assert r.total_matching == total
        assert len(walks) == 2 and all("LIMIT" in w for w in walks), walks
    rows = [p for p in plans if p.startswith(("SEARCH e ", "SCAN e"))]
    assert rows and all("INTEGER PRIMARY KEY" in p for p in rows), rows


def test_indexed_substring_search_never_sorts_its_matches(store: Store, monkeypatch) -> None:
    # a page of the newest matches must come straight off the index: a sort would read
    # every match first (hundreds of milliseconds for a common word in a large store)
    monkeypatch.setattr(SQLiteBackend, "SCAN_ROWS", 0)
    for i in range(40):
        store.record(f"thanks again {i}", "observation")
    b = backend_of(store)
    plans: list[str] = []
    b.conn.set_trace_callback(None)
    real_q = b.q

    def spy(sql, params=()):
        if sql.lstrip().upper().startswith("SELECT") and "episodes_tri" in sql:
            plans.extend(str(r[-1]) for r in b.conn.execute("EXPLAIN QUERY PLAN " + sql,
                                                            tuple(params)))
        return real_q(sql, params)

    monkeypatch.setattr(b, "q", spy)
    monkeypatch.setattr(b, "q1", lambda sql, params=(): (spy(sql, params) or [None])[0])
    r = store.recall(keyword="thanks again", limit=5)
    assert len(r.episodes) == 5 and r.total_matching == 40
    assert plans and not [p for p in plans if "TEMP B-TREE" in p], plans


def test_word_statistics_of_a_root_session_ignore_named_users(store: Store) -> None:
    # a session that names nobody reads only episodes written without a namespace: the
    # word weights its ranking uses must not be counted over named users' episodes
    from anneal_memory.storage.base import Scope, SearchFilters

    for i in range(6):
        store.scoped({"user": f"u{i}"}).record("the zephyrion heater hums", "observation")
    store.record("our zephyrion is quiet", "observation")
    store.record("nothing else here", "observation")
    own = SearchFilters(scope=Scope(None, None, unscoped_only=True))
    episodes, counts = backend_of(store).word_counts(own, ["zephyrion"], 100)
    assert (episodes, counts) == (2, {"zephyrion": 1})
    everyone, all_counts = backend_of(store).word_counts(SearchFilters(), ["zephyrion"], 100)
    assert everyone == 8 and all_counts == {"zephyrion": 7}


@pytest.mark.usefixtures("plan")
@pytest.mark.parametrize("evil", ['"', '""', "*", "pool*", "NEAR(pool load)", "(pool",
                                  "'; DROP TABLE episodes; --", "\\", "100%", "a_b", "%_%"])
def test_query_syntax_never_reaches_either_plan(store: Store, evil: str) -> None:
    store.record(f"literal {evil} text", "observation")
    store.record("pool load balancing", "observation")
    r = store.recall(keyword=evil)
    if r.query_params["match"] == "phrase":
        assert all(evil.lower() in e.content.lower() for e in r.episodes)
    assert store.recall(keyword=f"literal {evil} text").total_matching == 1
    assert store.status().total_episodes == 2


def test_totals_without_a_keyword_match_a_full_listing_under_every_filter(store: Store) -> None:
    """The count without a keyword is the filtered rows less the replaced ones among
    them: it must equal the number of episodes a full listing returns, whatever filters."""
    import random

    rng = random.Random(7)
    users = [store.scoped({"user": f"user-{n}"}) for n in range(2)]
    users.append(store.scoped({"user": "user-0", "project": "p"}))
    ids: list[tuple[Store, str]] = []
    for i in range(600):
        s = rng.choice([store, *users])
        ep = s.record(f"the deploy window note {i}", rng.choice(["observation", "decision", "tension"]),
                      source=rng.choice(["agent", "user"]))
        ids.append((s, ep.id))
        if i == 300:
            since = ep.timestamp
    for s, old in rng.sample(ids, 120):  # replace some, in their own namespace
        s.record("the deploy window note moved", "decision", supersedes=old)
    for s in (store, *users):
        for kw in ({}, {"episode_type": "decision"}, {"episode_type": "tension"},
                   {"source": "user"}, {"episode_type": "decision", "source": "agent"},
                   {"include_superseded": True}, {"episode_type": "decision",
                                                  "include_superseded": True},
                   {"since": since}, {"since": since, "episode_type": "decision"}):
            full = s.recall(limit=100_000, **kw)
            assert len(full.episodes) > 0, kw
            page = s.recall(limit=5, **kw)
            assert page.total_matching == len(full.episodes), (s, kw)


def test_word_trigrams_are_ascii_letters_and_digits_only() -> None:
    """PostgreSQL narrows by trigrams pg_trgm indexes as they are: three ASCII letters or
    digits, never across a space or punctuation, the rarest-looking of each stretch."""
    grams = trigrams("What did Caroline research for her adoption plans?", ascii_words=True)
    assert 1 < len(grams) <= MAX_TRIGRAMS
    assert all(g.isascii() and g.isalnum() and len(g) == 3 for g in grams)
    assert trigrams("a b, c-d", ascii_words=True) == []
    assert trigrams("東京タワー", ascii_words=True) == []
    assert trigrams("東京タワー") != []  # the SQLite index takes any characters


def test_a_pool_holding_every_match_skips_the_index_score_and_gets_it_back(store: Store) -> None:
    """When every word match fits in the pool, ranked_ids leaves BM25 out (NaN) and
    index_scores gives each match the score the ranked statement would have given."""
    from anneal_memory.storage.base import SearchFilters

    for i in range(12):
        store.record(f"garden {'rose ' * (i % 3)}note {i}", "decision" if i % 2 else "observation")
    b = backend_of(store)
    f = SearchFilters(episode_type="decision")
    with b.read():
        cheap, n = b.ranked_ids(f, ["garden", "rose"], 200)
        ranked, n2 = b.ranked_ids(f, ["garden", "rose"], 5)  # more matches than the pool
        assert n == n2 == 6 and len(cheap) == 6 and len(ranked) == 5
        assert all(h.score != h.score for h in cheap)  # NaN: left out
        assert all(h.score == h.score for h in ranked)
        got = b.index_scores(f, ["garden", "rose"], [h.rowid for h in cheap])
    assert set(got) == {h.rowid for h in cheap}
    for h in ranked:
        assert got[h.rowid] == pytest.approx(h.score)
    # the ranker orders hits it cannot see by those scores, as the index would
    from anneal_memory import ranking

    order = ranking.score_hits(cheap, {}, None, lambda ids: {i: got[i] for i in ids})
    assert [h.rowid for h in order][:5] == [h.rowid for h in ranked]
    # and so are matches the ranker's words do not reach (another stemmer, another script)
    unseen = ranking.score_hits(cheap, {"zebra": 1.0}, None, lambda ids: {i: got[i] for i in ids})
    assert [h.rowid for h in unseen][:5] == [h.rowid for h in ranked]
