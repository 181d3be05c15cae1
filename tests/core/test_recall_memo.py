"""Recall kept per database state (``EpisodeRepo.memo``): a question asked again before
anything is written is answered from what the last asking computed, and any write (this
Store's, another Store's on the file, another process's, a rolled-back one) makes the
next asking compute again. Each test compares the answer against what a fresh Store on
the same file says, so a stale answer fails it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import Store, ValidationError
from anneal_memory.governance import MemoryNamespace, scoped
from anneal_memory.testing import backend_of, unit_of

QUERIES = ("queue latency", "latency budget thanks", "deploy rollback", "budget")


def _answer(store: Store, query: str, **kw: object) -> tuple[list[str], int, dict[str, str]]:
    r = store.recall(keyword=query, limit=5, **kw)
    return [e.id for e in r.episodes], r.total_matching, r.why


def _fresh(db: Path, query: str, **kw: object) -> tuple[list[str], int, dict[str, str]]:
    with Store(db) as other:
        backend_of(other).MEMO_ENTRIES = 0  # computes every time
        return _answer(other, query, **kw)


@pytest.fixture
def filled(store: Store) -> Store:
    for i in range(60):
        store.record(f"note {i}: the queue latency budget for deploy {i % 7}", "observation")
        store.record(f"reply {i}: thanks, rollback if it breaks", "decision")
    return store


def test_asking_again_is_answered_from_the_memo_and_equals_a_fresh_answer(filled: Store,
                                                                          db: Path) -> None:
    for q in QUERIES:
        first = _answer(filled, q)
        assert _answer(filled, q) == first == _fresh(db, q)
    for q in QUERIES:  # another Store's close may have been a change: ask once more
        _answer(filled, q)
    kept = backend_of(filled)._memo
    assert len(kept) >= len(QUERIES)  # what was asked is kept
    # and a kept answer is used: an entry doctored in place is what comes back
    key = next(k for k in kept if k[1][0] == "ranked_words"
               and k[1][2] == ("latency", "budget", "thanks"))
    cost, (ranked, total, via) = kept[key]
    kept[key] = (cost, (ranked[::-1], total, via))
    doctored = _answer(filled, "latency budget thanks")[0]
    assert doctored != _fresh(db, "latency budget thanks")[0]


def test_a_record_through_this_store_is_seen(filled: Store, db: Path) -> None:
    for q in QUERIES:
        _answer(filled, q)
    new = filled.record("queue latency budget thanks deploy rollback", "observation")
    for q in QUERIES:
        got = _answer(filled, q)
        assert new.id in got[0] and got == _fresh(db, q)


def test_a_write_by_another_store_on_the_file_is_seen(filled: Store, db: Path) -> None:
    before = {q: _answer(filled, q) for q in QUERIES}
    with Store(db) as other:
        new = other.record("queue latency budget thanks deploy rollback", "observation")
    for q in QUERIES:
        got = _answer(filled, q)
        assert got != before[q] and new.id in got[0] and got == _fresh(db, q)


def test_a_write_by_another_process_is_seen(filled: Store, db: Path) -> None:
    for q in QUERIES:
        _answer(filled, q)
    code = ("import sys; from anneal_memory import Store\n"
            "with Store(sys.argv[1]) as s:\n"
            "    print(s.record('queue latency budget thanks deploy rollback', "
            "'observation').id)\n")
    new = subprocess.run([sys.executable, "-c", code, str(db)], check=True,
                         capture_output=True, text=True).stdout.strip()
    for q in QUERIES:
        got = _answer(filled, q)
        assert new in got[0] and got == _fresh(db, q)


def test_a_delete_and_an_erase_are_seen(filled: Store, db: Path) -> None:
    ids = _answer(filled, "latency budget thanks")[0]
    filled.delete(ids[0])
    got = _answer(filled, "latency budget thanks")
    assert ids[0] not in got[0] and got == _fresh(db, "latency budget thanks")
    ids = _answer(filled, "queue latency")[0]
    filled.erase(ids[0])
    got = _answer(filled, "queue latency")
    assert ids[0] not in got[0] and got == _fresh(db, "queue latency")


def test_an_erased_episode_leaves_nothing_of_it_kept(filled: Store) -> None:
    secret = filled.record("the vault code is zebra-4471 for the queue latency budget",
                           "observation")
    for q in ("zebra-4471", "vault code", "vault zebra thanks"):  # phrase and words paths
        assert secret.id in _answer(filled, q)[0]
    assert "zebra-4471" in repr(backend_of(filled)._memo)  # kept, with its text
    filled.erase(secret.id)
    # the write dropped every kept answer: the erased text is not left in memory
    assert "zebra-4471" not in repr(backend_of(filled)._memo)
    assert _answer(filled, "zebra-4471")[0] == []


def test_a_refused_write_leaves_answers_right(filled: Store, db: Path) -> None:
    q = "latency budget thanks"
    before = _answer(filled, q)
    with pytest.raises(ValidationError):
        filled.record_many([("queue latency budget thanks", "observation"),
                            ("latency budget", "not-a-type")])
    assert _answer(filled, q) == before == _fresh(db, q)
    with pytest.raises(RuntimeError), unit_of(filled) as tx:  # rolled back mid-way
        tx.episodes.delete_episode_rows(before[0])
        inside = _answer(filled, q)  # the uncommitted state: computed, never kept
        assert not set(inside[0]) & set(before[0])
        raise RuntimeError("abandon")
    assert _answer(filled, q) == before == _fresh(db, q)


def test_filters_and_namespaces_are_part_of_the_question(store: Store) -> None:
    alice = scoped(store, MemoryNamespace(tenant="t", user="alice", agent="a"))
    bob = scoped(store, MemoryNamespace(tenant="t", user="bob", agent="a"))
    a = alice.record("alice: the queue latency budget", "observation")
    b = bob.record("bob: the queue latency budget", "decision")
    for q in ("queue latency budget", "latency thanks budget"):
        assert [e.id for e in alice.recall(keyword=q).episodes] == [a.id]
        assert [e.id for e in bob.recall(keyword=q).episodes] == [b.id]  # not alice's
        assert [e.id for e in alice.recall(keyword=q).episodes] == [a.id]
        assert {e.id for e in store.recall(keyword=q).episodes} == {a.id, b.id}
        assert [e.id for e in store.recall(keyword=q, episode_type="decision").episodes] == [b.id]
        assert bob.recall(keyword=q, episode_type="observation").episodes == []


def test_what_is_kept_is_bounded(filled: Store) -> None:
    backend = backend_of(filled)
    backend.MEMO_ENTRIES = 5
    for i in range(20):
        _answer(filled, f"queue latency {i}")
    assert len(backend._memo) <= 5
    backend.MEMO_ENTRIES, backend.MEMO_BUDGET = 1000, 50
    for i in range(20):
        _answer(filled, f"latency budget thanks {i}")
    assert backend._memo_used <= 50
