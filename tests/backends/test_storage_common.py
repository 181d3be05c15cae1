"""The storage methods written once (storage/common.py) behave the same on each backend."""

from __future__ import annotations

import inspect

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import Backend, EpisodeRow, SearchFilters
from anneal_memory.storage.common import qmark_to_format
from anneal_memory.storage.roles import Meta
from anneal_memory.storage.rows import PatternRow, ProbeRow
from anneal_memory.testing import backend_of, repos_of


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
    b, r = backend_of(store), repos_of(store)
    n = 1203  # more than two SQLite chunks of bound ids
    with b.transaction():
        for i in range(n):
            b.insert_episode(_row(i))
    ids = [f"ep{i:05d}" for i in range(n)]
    got = b.get_episodes(ids + ids[:10] + ["missing"])
    assert len(got) == n and got["ep01202"].content == "note 1202"
    wid = r.wraps.insert_wrap("2026-01-02T00:00:00Z", "tok", None, ids[:700], "2026-01-02")
    assert wid > 0 and r.wraps.open_wrap()._asdict() == {  # type: ignore[union-attr]
        "id": wid, "started_at": "2026-01-02T00:00:00Z", "token": "tok", "session_id": None,
        "episode_ids": ids[:700], "today": "2026-01-02"}
    with b.transaction():
        b.mark_wrapped(ids[:700], wid)
    assert b.count_unwrapped() == n - 700
    assert r.wraps.wrapped_ids_before(wid + 1) == set(ids[:700])
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
    b, r = backend_of(store), repos_of(store)
    with b.transaction():
        for i in range(4):
            b.insert_episode(_row(i))
        r.links.add_supersession("ep00000", "ep00001", "manual", "2026-01-01T01:00:00Z")
        r.links.add_supersession("ep00000", "ep00001", "state_key", "2026-01-01T02:00:00Z")  # replaces
        r.links.add_supersession("ep00002", "ep00003", "manual", "2026-01-01T03:00:00Z")
        r.links.add_derivations("ep00003", ["ep00000", "ep00000", "ep00001"])
        r.links.add_tombstone("gone", "observation", "t", "h1", "r1", "deleted", "agent")
        r.links.add_tombstone("gone", "observation", "t", "h2", "r2", "deleted", "agent")
        Meta(b).add_meta_int("a_counter", 2)
        Meta(b).add_meta_int("a_counter", 5)
    assert r.links.supersessions_of(["ep00000", "ep00000"]) == {
        "ep00000": [("ep00001", "state_key", "2026-01-01T02:00:00Z")]}
    assert r.links.derivations_of(["ep00003"]) == {"ep00003": [("ep00000", None), ("ep00001", None)]}
    assert r.links.tombstones(["gone"])["gone"].content_hash == "h2" and r.links.tombstones([]) == {}
    assert Meta(b).get_meta("a_counter") == "7"
    with b.transaction():
        gone = r.links.delete_supersessions_touching(["ep00001", "ep00002"])
        assert r.links.remove_supersession("ep00000", "ep00001") == 0
    assert sorted(gone) == [("ep00000", "ep00001", "state_key"), ("ep00002", "ep00003", "manual")]
    assert r.links.all_supersessions() == [] and r.links.count_superseded() == 0


def test_patterns_probes_and_bulk_insert(store: Store) -> None:
    b, r = backend_of(store), repos_of(store)
    rec = PatternRow("p", 1, 1, "a", None, "b", ["why"], [{"ids": ["ep1"]}])
    with b.transaction():
        r.wraps.upsert_pattern(rec)
        r.wraps.upsert_pattern(rec._replace(level=2, max_level_reached=2))
        r.wraps.insert_probe(ProbeRow("pr1", "pattern", "p", 2, None, None, "c"))
        r.wraps.update_probe("pr1", "ok", "fine", 3)
        b.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [("k1", "1"), ("k2", "2")])
    assert r.wraps.pattern_history()["p"] == rec._replace(level=2, max_level_reached=2)
    assert r.wraps.probes()[0].last_status == "ok" and r.wraps.probes()[0].last_wrap_id == 3
    assert (Meta(b).get_meta("k1"), Meta(b).get_meta("k2")) == ("1", "2")
    with b.transaction():
        assert r.wraps.delete_probe("pr1") == 1 and r.wraps.delete_probe("pr1") == 0
