"""Public behaviour that must not depend on the backend."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest

from anneal_memory import (
    AuditTrail,
    Store,
    claim_baton,
    prepare_wrap,
    release_baton,
    retrieve_relevant,
    validated_save_continuity,
)
from anneal_memory.errors import (
    AnnealMemoryError,
    BatonError,
    ReadOnlyStoreError,
    SupersessionError,
    ValidationError,
    WrapInProgressError,
)
from anneal_memory.testing import backend_of

from wraphelp import doc, wrap


def kw(store: Store, keyword: str) -> list[str]:
    return [e.content for e in store.recall(keyword=keyword).episodes]


def test_record_get_and_recall_newest_first(store: Store) -> None:
    a = store.record("the cache layer uses Redis", "decision", metadata={"k": [1, "ü"]})
    b = store.record("Redis cache warmed at boot", "observation")
    got = store.get(a.id)
    assert got is not None and got.content == a.content and got.metadata == {"k": [1, "ü"]}
    res = store.recall(keyword="redis")
    assert [e.id for e in res.episodes] == [b.id, a.id]
    assert res.total_matching == 2 and res.query_params["match"] == "phrase"
    assert store.recall(episode_type="decision").total_matching == 1
    assert store.recall(limit=1, offset=1).episodes[0].id == a.id


def test_phrase_is_a_case_insensitive_substring(store: Store) -> None:
    store.record("Deploy to PRODUCTION on Friday", "decision")
    store.record("deployment window", "context")
    assert kw(store, "production on fri") == ["Deploy to PRODUCTION on Friday"]
    assert len(kw(store, "deploy")) == 2
    assert kw(store, "ON") != []  # two characters still match as a substring


@pytest.mark.parametrize("phrase", [
    "What did Caroline research for her adoption plans?",  # a whole question
    "RELEASE the v2.4 build_tools to 100% of users",  # case, digits, % and _ literal
    "café opening hours are 9-17 on weekdays",  # accents and punctuation
])
def test_a_long_phrase_matches_exactly(store: Store, phrase: str) -> None:
    """A long phrase is narrowed by a few of its trigrams; only a row holding the whole
    phrase (any case) matches, not one holding all its words in another order."""
    hit = store.record(f"notes: {phrase.upper()} (agreed)", "decision")
    store.record(" ".join(reversed(phrase.split())), "decision")  # every trigram of words
    store.record(phrase.replace(" ", "  "), "decision")  # the same words, spaced apart
    store.record(phrase[:-1], "decision")  # all but its last character
    res = store.recall(keyword=phrase.lower())
    assert res.query_params["match"] == "phrase"
    assert [e.id for e in res.episodes] == [hit.id] and res.total_matching == 1


def test_words_fallback_is_stemmed_and_ranked(store: Store) -> None:
    store.record("the migration script failed twice", "outcome")
    store.record("migrations of the schema", "context")
    store.record("an unrelated note", "observation", timestamp="2020-01-01T00:00:00+00:00")
    res = store.recall(keyword="migrating schemas")
    assert res.query_params["match"] == "words"
    assert set(e.content for e in res.episodes) == {"migrations of the schema",
                                                    "the migration script failed twice"}
    assert res.episodes[0].content == "migrations of the schema"  # matches both words


@pytest.mark.parametrize("needle", ["東京", "タワ", "점검", "Ünïcödé", "ß"])
def test_non_latin_substrings(store: Store, needle: str) -> None:
    store.record("東京タワーの点検 and 점검 done; Ünïcödé straße", "observation")
    store.record("nothing to see", "observation")
    assert kw(store, needle) == ["東京タワーの点検 and 점검 done; Ünïcödé straße"]


@pytest.mark.parametrize("hostile", [
    "'; DROP TABLE episodes; --", '" OR 1=1 --', "%", "_", "a%b", "x_y", "\\", "\\%",
    "foo & !bar | (baz)", "NEAR(a b)", "col:val*", "'", '"', "<->", "a:*",
])
def test_injection_strings_are_matched_literally(store: Store, hostile: str) -> None:
    plain = store.record("plain text with nothing special", "observation")
    store.record(f"literal [{hostile}] inside", "observation")
    got = kw(store, hostile)
    assert got == [f"literal [{hostile}] inside"]
    assert store.get(plain.id) is not None and store.status().total_episodes == 2


def test_supersession_and_state_keys(store: Store) -> None:
    old = store.record("the deploy target is staging", "decision")
    new = store.record("the deploy target is production", "decision", supersedes=[old.id])
    assert [e.id for e in store.recall(keyword="deploy target").episodes] == [new.id]
    all_ = store.recall(keyword="deploy target", include_superseded=True).episodes
    assert {e.id: e.superseded_by for e in all_} == {new.id: None, old.id: new.id}
    assert store.unsupersede(old_id=old.id, new_id=new.id) is True
    assert store.recall(keyword="deploy target").total_matching == 2
    with pytest.raises(SupersessionError):
        store.record("x", "decision", supersedes=["nope0000"])
    a = store.record("region is eu-west", "context", state_key="region")
    b = store.record("region is us-east", "context", state_key="region")
    assert store.get(a.id).superseded_by == b.id  # type: ignore[union-attr]


def test_trust_and_derivation(store: Store) -> None:
    tool = store.record("tool says the disk is full", "observation", trust="tool")
    derived = store.record("the disk needs cleaning", "decision", derived_from=[tool.id])
    assert store.effective_trust_map([tool.id, derived.id]) == {tool.id: "tool",
                                                                derived.id: "tool"}
    store.set_trust(tool.id, "agent")
    assert store.effective_trust_map([derived.id])[derived.id] == "agent"
    with pytest.raises(ValidationError):
        store.record("above the ceiling", "observation", trust="operator")


def test_delete_leaves_a_tombstone_and_no_trace(store: Store) -> None:
    e = store.record("secret token abc123", "observation")
    keep = store.record("keep me", "observation")
    assert store.delete(e.id) is True and store.delete(e.id) is False
    assert store.get(e.id) is None and kw(store, "abc123") == []
    assert store.recall(keyword="secret token").total_matching == 0
    st = store.status()
    assert st.tombstone_count == 1 and st.total_episodes == 1 and store.get(keep.id)


def test_wrap_saves_continuity_visible_to_another_store(open_store: Callable[..., Store]) -> None:
    s1, s2 = open_store(), open_store()
    e = s1.record("we use postgres for shared memory", "decision")
    result = wrap(s1, doc(patterns=f"- shared store | 1x | first seen [{e.id}]"))
    assert result["episodes_compressed"] == 1
    assert s2.load_continuity() == s1.load_continuity() and "shared store" in s2.load_continuity()
    assert s2.status().total_wraps == 1 and s2.episodes_since_wrap() == []
    assert prepare_wrap(s2)["status"] == "empty"


def test_wrap_gates(open_store: Callable[..., Store]) -> None:
    s1, s2 = open_store(), open_store()
    s1.record("one", "observation")
    assert prepare_wrap(s2, session_id="b")["status"] == "downgraded"  # no baton
    claim_baton(s2.path, "a")
    assert release_baton(s1.path, "b") is False
    with pytest.raises(BatonError):
        claim_baton(s1.path, "b")
    w = prepare_wrap(s1, session_id="a")
    assert w["status"] == "ready"
    with pytest.raises(WrapInProgressError):
        prepare_wrap(s2)
    with pytest.raises(BatonError):  # only the preparing session may save
        validated_save_continuity(s2, doc(), wrap_token=w["wrap_token"], session_id="b")
    validated_save_continuity(s1, doc(), wrap_token=w["wrap_token"], session_id="a")
    assert s2.status().total_wraps == 1 and s2.load_continuity() is not None
    assert claim_baton(s1.path, "b", take=True)["previous"] == "a"
    assert release_baton(s2.path, "b") is True


def test_an_open_store_reads_its_baton_through_itself(
        open_store: Callable[..., Store], location: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """baton_status / baton_holder of an open Store or view read its own storage (status and
    every wrap ask): no second backend is opened for them; by location, or once the store is
    closed, the baton is still read, and every reader sees the same holder."""
    from anneal_memory import baton_status, storage
    from anneal_memory.wrap.baton import baton_holder

    s1, s2 = open_store(), open_store()
    view = s2.scoped({"user": "alice"})
    claim_baton(s1, "root-session")
    claim_baton(view, "alice-session")
    real_open = storage.open
    opened: list[str] = []

    def counting_open(*a: object, **kw: object) -> object:
        opened.append(str(a[0]) if a else "")
        return real_open(*a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "open", counting_open)
    assert baton_status(s2)["holder"] == "root-session"
    assert baton_holder(view) == "alice-session"
    assert baton_holder(s1.scoped({"user": "alice"})) == "alice-session"
    assert opened == []
    assert baton_status(s2.path)["holder"] == "root-session"  # a location opens one
    s1.close()
    assert baton_holder(s1) == "root-session"  # closed: read by its location
    assert len(opened) == (2 if location.startswith("postgres") else 0)


def test_refused_save_loses_nothing(store: Store) -> None:
    store.record("keep this", "observation")
    w = prepare_wrap(store)
    with pytest.raises(AnnealMemoryError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        validated_save_continuity(store, "no sections, just prose", wrap_token=w["wrap_token"])
    assert store.load_continuity() is None and len(store.episodes_since_wrap()) == 1
    assert store.status().wrap_in_progress is True


def test_audit_chain_valid_and_tamper_detected(store: Store, location: str) -> None:
    ids = [store.record(f"entry {i}", "observation").id for i in range(5)]
    store.delete(ids[0])
    wrap(store, doc())
    store.close()
    res = AuditTrail.verify(location if location.startswith("postgres") else store.path)
    assert res.valid and res.total_entries >= 8, res
    b = Store(location)
    try:
        with backend_of(b).transaction():
            backend_of(b).execute("UPDATE audit_log SET actor = 'forged' WHERE seq = 3")
    finally:
        b.close()
    if location.startswith("postgres"):
        bad = AuditTrail.verify(location)
        assert not bad.valid and bad.chain_break_at == 3


def test_read_only_store_refuses_writes(open_store: Callable[..., Store]) -> None:
    open_store().record("x", "observation")
    ro = open_store(read_only=True)
    assert ro.recall().total_matching == 1
    with pytest.raises(ReadOnlyStoreError):
        ro.record("y", "observation")


def test_retrieve_relevant_ranks_and_swaps(store: Store) -> None:
    old = store.record("the api key rotates weekly", "decision")
    store.record("the api key rotates daily", "decision", supersedes=[old.id])
    store.record("lunch was good", "observation")
    got = retrieve_relevant(store, None, "how often does the api key rotate")
    assert got.episodes and got.episodes[0].content == "the api key rotates daily"
