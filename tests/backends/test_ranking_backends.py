"""Ranked word recall is the same on every backend: word statistics, rare words,
context beyond the next row, dates in the query (ranking.py over ``ranked_ids``)."""

from __future__ import annotations

from anneal_memory import Store
from anneal_memory.recall import build_filters
from anneal_memory.testing import backend_of


def _ids(store: Store, question: str, **kw: object) -> list[str]:
    res = store.recall(keyword=question, **kw)
    assert res.query_params["match"] == "words"
    return [e.id for e in res.episodes]


def test_word_counts_per_backend_and_namespace(store: Store) -> None:
    for i in range(5):
        store.record(f"painting number {i}", "observation")
    alice = store.scoped({"user": "alice"})
    alice.record("alice paints a lighthouse", "observation")
    total, counts = backend_of(store).word_counts(build_filters(), ["paint", "lighthouse", "zebra"],
                                              100)
    assert total >= 6 and counts == {"paint": 6, "lighthouse": 1, "zebra": 0}
    total, counts = backend_of(alice).word_counts(build_filters(), ["paint", "lighthouse"], 100)
    assert (total, counts) == (1, {"paint": 1, "lighthouse": 1})
    _t, capped = backend_of(store).word_counts(build_filters(), ["paint"], 2)
    assert capped == {"paint": 2}


def test_rare_word_and_wider_context_on_every_backend(store: Store) -> None:
    common = store.record("the team office meeting ran long", "observation",
                          timestamp="2023-01-01T09:00:00Z")
    rare = store.record("the telescope arrived this morning", "observation",
                        timestamp="2023-01-02T09:00:00Z")
    store.record("sounds good", "observation", timestamp="2023-01-02T09:01:00Z")
    two_after = store.record("it points at the moon", "observation",
                             timestamp="2023-01-02T09:02:00Z")
    for i in range(7):
        for word in ("team", "office", "meeting"):
            store.record(f"{word} item {i}", "observation", timestamp="2023-01-05T09:00:00Z")
    for i in range(14):
        store.record(f"nothing to report {i}", "observation", timestamp="2023-01-06T09:00:00Z")
    got = _ids(store, "team office meeting telescope?", limit=2, context=False)
    assert got == [rare.id, common.id]
    # the turns after the only match are context that outranks no match: never padding
    # a short result (issue 31); a question's answer outranks it and is shown
    assert two_after.id not in _ids(store, "Which telescope?", limit=5)
    asked = store.record("what did the telescope cost?", "observation",
                         timestamp="2023-02-01T09:00:00Z")
    answer = store.record("two hundred pounds", "observation", timestamp="2023-02-01T09:00:30Z")
    got = _ids(store, "How much did the telescope cost?", limit=5)
    assert answer.id in got and asked.id in got


def test_a_date_in_the_query_on_every_backend(store: Store) -> None:
    june = store.record("we went camping by the lake", "observation",
                        timestamp="2023-06-27T10:00:00Z")
    store.record("we went camping by the lake", "observation", timestamp="2023-08-10T10:00:00Z")
    assert _ids(store, "When did we go camping by the lake in June?")[0] == june.id
