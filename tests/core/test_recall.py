"""Keyword recall: phrase first (substring), then ranked words; filters; injection safety."""

from __future__ import annotations

import pytest

from anneal_memory import Store, ValidationError


@pytest.fixture
def corpus(store: Store) -> Store:
    store.record("Chose PostgreSQL as the database because ACID matters", "decision")
    store.record("The metadata cache was flushed at noon", "observation")
    store.record("Connection pool exhaustion under load", "observation")
    store.record("Pool sizing debate: latency versus memory", "tension")
    store.record("数据库连接池在高负载下耗尽", "observation")
    return store


def test_substring_phrase_match(corpus: Store) -> None:
    r = corpus.recall(keyword="data")
    contents = {e.content for e in r.episodes}
    assert "Chose PostgreSQL as the database because ACID matters" in contents
    assert "The metadata cache was flushed at noon" in contents
    assert r.query_params["match"] == "phrase"


def test_phrase_hit_excludes_word_only_hits(corpus: Store) -> None:
    r = corpus.recall(keyword="connection pool")
    assert [e.content for e in r.episodes] == ["Connection pool exhaustion under load"]


def test_fallback_to_ranked_words(corpus: Store) -> None:
    r = corpus.recall(keyword="what about the pool exhaustion problem?")
    assert r.query_params["match"] == "words"
    assert r.episodes[0].content == "Connection pool exhaustion under load"
    assert r.query_params["word_matches"] == 2


def test_words_stage_ranks_the_reply_after_a_matching_turn(store: Store) -> None:
    store.record("Unrelated note about the garden hose", "observation",
                 timestamp="2026-01-01T08:00:00Z")
    store.record("Who performed at the concert for your daughter's birthday?", "question",
                 timestamp="2026-01-02T10:00:00Z")
    reply = store.record("It was Matt Patterson, he is so talented!", "observation",
                         timestamp="2026-01-02T10:00:05Z")
    store.record("Later that week the weather was cold", "observation",
                 timestamp="2026-01-09T10:00:00Z")
    r = store.recall(keyword="which singer performed at the birthday concert", limit=3)
    ids = [e.id for e in r.episodes]
    assert reply.id in ids[:2]
    assert all("weather" not in e.content for e in r.episodes)


def test_stopwords_only_query_matches_nothing(corpus: Store) -> None:
    r = corpus.recall(keyword="what is the and of")
    assert r.total_matching == 0


def test_case_insensitive(corpus: Store) -> None:
    assert corpus.recall(keyword="POSTGRESQL").total_matching == 1


def test_chinese_two_characters(corpus: Store) -> None:
    r = corpus.recall(keyword="负载")
    assert r.total_matching == 1 and "负载" in r.episodes[0].content
    assert corpus.recall(keyword="连接池").total_matching == 1


@pytest.mark.parametrize("evil", ['"', '""', "*", "pool*", "NEAR(pool load)", "pool NEAR load",
                                  "-pool", "(pool", "pool)", "pool OR", "AND", "a:b", "^pool",
                                  "'; DROP TABLE episodes; --", "\\", "{}", "pool + load"])
def test_fts_syntax_cannot_break_or_inject(corpus: Store, evil: str) -> None:
    r = corpus.recall(keyword=evil)
    assert r.total_matching >= 0
    assert corpus.status().total_episodes == 5


def test_injection_text_is_matched_literally(store: Store) -> None:
    store.record('he typed "pool*" NEAR(x) -y literally', "observation")
    store.record("pool party", "observation")
    r = store.recall(keyword='"pool*" NEAR(x)')
    assert [e.content for e in r.episodes] == ['he typed "pool*" NEAR(x) -y literally']


def test_filters(store: Store) -> None:
    store.record("old decision on pool", "decision", timestamp="2026-01-01T00:00:00Z")
    store.record("new decision on pool", "decision", timestamp="2026-06-01T00:00:00Z")
    store.record("observation on pool", "observation", source="monitor")
    assert store.recall(episode_type="decision").total_matching == 2
    assert store.recall(source="monitor").total_matching == 1
    assert store.recall(since="2026-03-01", episode_type="decision").total_matching == 1
    assert store.recall(until="2026-03-01").total_matching == 1
    page = store.recall(keyword="pool", limit=1, offset=1)
    assert len(page.episodes) == 1 and page.total_matching == 3


def test_newest_first_without_keyword(store: Store) -> None:
    store.record("first", "observation", timestamp="2026-01-01")
    store.record("second", "observation", timestamp="2026-02-01")
    assert [e.content for e in store.recall().episodes] == ["second", "first"]


@pytest.mark.parametrize("kw", [{"limit": -1}, {"offset": -3}, {"limit": "ten"},
                                {"since": "last tuesday"}, {"episode_type": "rumour"},
                                {"keyword": 42}])
def test_bad_recall_arguments(store: Store, kw) -> None:
    with pytest.raises(Exception) as info:
        store.recall(**kw)
    from anneal_memory import AnnealMemoryError

    assert isinstance(info.value, (AnnealMemoryError, ValidationError))


def test_relative_since(store: Store) -> None:
    store.record("ancient", "observation", timestamp="2020-01-01")
    store.record("recent", "observation")
    assert [e.content for e in store.recall(since="7d").episodes] == ["recent"]


def test_context_can_be_switched_off(store: Store) -> None:
    store.record("item one about pumps and valves", "observation")
    store.record("item two about gardening", "observation")
    r = store.recall(keyword="which pumps valves", context=False)
    assert [e.content for e in r.episodes] == ["item one about pumps and valves"]
    r = store.recall(keyword="which pumps valves")
    assert r.total_matching == 1  # the neighbour is context, not a match (issue 31)
    assert [e.content for e in r.episodes] == ["item one about pumps and valves"]


def test_phrase_hits_newest_first_even_when_backdated(store: Store) -> None:
    store.record("deploy note alpha", "observation", timestamp="2026-03-01T00:00:00Z")
    store.record("deploy note beta", "observation", timestamp="2026-01-01T00:00:00Z")
    store.record("deploy note gamma", "observation", timestamp="2026-02-01T00:00:00Z")
    assert [e.content for e in store.recall(keyword="deploy note").episodes] == [
        "deploy note alpha", "deploy note gamma", "deploy note beta"]
