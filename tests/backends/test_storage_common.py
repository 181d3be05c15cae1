"""The storage methods written once (storage/common.py) behave the same on each backend."""

from __future__ import annotations

import inspect

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import Backend, EpisodeRow, SearchFilters
from anneal_memory.storage.common import qmark_to_format
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of


@pytest.mark.parametrize(("sql", "want"), [
    ("SELECT ? , ?", "SELECT %s , %s"),
    ("SELECT '?' WHERE a=?", "SELECT '?' WHERE a=%s"),
    ("SELECT 'it''s ?', \"col?\" FROM t WHERE b=?", "SELECT 'it''s ?', \"col?\" FROM t WHERE b=%s"),
    ("SELECT pg_advisory_xact_lock(%s)", "SELECT pg_advisory_xact_lock(%s)"),
    ("UPDATE t SET a=? WHERE b=%s", "UPDATE t SET a=%s WHERE b=%s"),
])
def test_qmark_to_format_leaves_quoted_text_alone(sql: str, want: str) -> None:
    assert qmark_to_format(sql) == want


def test_backend_is_the_whole_interface(store: Store) -> None:
    # Every public method a backend has is declared on Backend, so code typed against
    # Backend can call anything; and nothing on Backend is left unimplemented.
    cls = type(backend_of(store))
    assert not inspect.isabstract(cls), cls.__abstractmethods__
    public = {n for n, f in inspect.getmembers(cls) if not n.startswith("_")
              and (inspect.isfunction(f) or isinstance(f, property))}
    declared = {n for n, f in inspect.getmembers(Backend) if not n.startswith("_")}
    assert public - declared == set()


def _row(i: int, **kw: object) -> EpisodeRow:
    base: dict[str, object] = dict(id=f"ep{i:05d}", timestamp=f"2026-01-01T00:{i // 60 % 60:02d}:"
                                   f"{i % 60:02d}Z", type="observation", content=f"note {i}",
                                   source="agent", session_id=None, metadata=None, trust="agent",
                                   state_key=None, wrap_id=None)
    base.update(kw)
    return EpisodeRow(**base)  # type: ignore[arg-type]


def test_id_lists_longer_than_one_statement(store: Store) -> None:
    b = backend_of(store)
    n = 1203  # more than two SQLite chunks of bound ids
    with b.transaction():
        for i in range(n):
            b.insert_episode(_row(i))
    ids = [f"ep{i:05d}" for i in range(n)]
    got = b.get_episodes(ids + ids[:10] + ["missing"])
    assert len(got) == n and got["ep01202"].content == "note 1202"
    wid = b.insert_wrap("2026-01-02T00:00:00Z", "tok", None, ids[:700], "2026-01-02")
    assert wid > 0 and b.open_wrap() == {
        "id": wid, "started_at": "2026-01-02T00:00:00Z", "token": "tok", "session_id": None,
        "episode_ids": ids[:700], "today": "2026-01-02"}
    with b.transaction():
        b.mark_wrapped(ids[:700], wid)
    assert b.count_unwrapped() == n - 700
    assert b.wrapped_ids_before(wid + 1) == set(ids[:700])
    assert b.search(SearchFilters(ids=[]))[1] == 0
    assert b.search(SearchFilters(ids=ids[:3]))[1] == 3
    with b.transaction():
        assert b.delete_episode_rows(ids[:650] + ids[:5]) == 650
    assert b.count_episodes() == n - 650


def test_rows_inserted_many_to_a_statement_keep_their_order(store: Store) -> None:
    # a group commit's batch: several statements of a power of two rows each
    b = backend_of(store)
    n = 1203  # past SQLite's chunk of bound ids as well
    with b.transaction():
        b.insert_episodes([_row(i) for i in range(n)])
        b.insert_episodes([])
    ids = [f"ep{i:05d}" for i in range(n)]
    assert [r.id for r in b.all_episodes(order="rowid ASC")] == ids
    assert b.ids_taken([*ids[::7], "missing"]) == set(ids[::7])
    assert Meta(b).get_meta("backdated_episodes") is None  # each row newer than the one before
    with b.transaction():
        b.insert_episodes([_row(n + 1), _row(n)])
    assert Meta(b).get_meta("backdated_episodes") == "1"


def test_links_upserts_and_counters(store: Store) -> None:
    b = backend_of(store)
    with b.transaction():
        for i in range(4):
            b.insert_episode(_row(i))
        b.add_supersession("ep00000", "ep00001", "manual", "2026-01-01T01:00:00Z")
        b.add_supersession("ep00000", "ep00001", "state_key", "2026-01-01T02:00:00Z")  # replaces
        b.add_supersession("ep00002", "ep00003", "manual", "2026-01-01T03:00:00Z")
        b.add_derivations("ep00003", ["ep00000", "ep00000", "ep00001"])
        b.add_tombstone("gone", "observation", "t", "h1", "r1", "deleted", "agent")
        b.add_tombstone("gone", "observation", "t", "h2", "r2", "deleted", "agent")
        Meta(b).add_meta_int("a_counter", 2)
        Meta(b).add_meta_int("a_counter", 5)
    assert b.supersessions_of(["ep00000", "ep00000"]) == {
        "ep00000": [("ep00001", "state_key", "2026-01-01T02:00:00Z")]}
    assert b.derivations_of(["ep00003"]) == {"ep00003": [("ep00000", None), ("ep00001", None)]}
    assert b.tombstones(["gone"])["gone"]["content_hash"] == "h2" and b.tombstones([]) == {}
    assert Meta(b).get_meta("a_counter") == "7"
    with b.transaction():
        gone = b.delete_supersessions_touching(["ep00001", "ep00002"])
        assert b.remove_supersession("ep00000", "ep00001") == 0
    assert sorted(gone) == [("ep00000", "ep00001", "state_key"), ("ep00002", "ep00003", "manual")]
    assert b.all_supersessions() == [] and b.count_superseded() == 0


def test_patterns_probes_and_bulk_insert(store: Store) -> None:
    b = backend_of(store)
    rec = {"name": "p", "level": 1, "max_level_reached": 1, "first_seen_at": "a",
           "last_saved_at": "b", "explanations": ["why"], "grounding": ["ep1"]}
    with b.transaction():
        b.upsert_pattern(rec)
        b.upsert_pattern({**rec, "level": 2, "max_level_reached": 2})
        b.insert_probe({"id": "pr1", "kind": "pattern", "pattern": "p", "min_level": 2,
                        "created_at": "c"})
        b.update_probe("pr1", "ok", "fine", 3)
        b.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [("k1", "1"), ("k2", "2")])
    assert b.pattern_history()["p"] == {**rec, "level": 2, "max_level_reached": 2,
                                        "last_seen_at": None}
    assert b.probes()[0]["last_status"] == "ok" and b.probes()[0]["last_wrap_id"] == 3
    assert (Meta(b).get_meta("k1"), Meta(b).get_meta("k2")) == ("1", "2")
    with b.transaction():
        assert b.delete_probe("pr1") == 1 and b.delete_probe("pr1") == 0
