"""The durable record's own path, as issue 54 cut it: what one ``record()`` sends to
SQLite, and the word index's folding rule written so that ASCII text skips it.

Real stores on real SQLite files; the statements are read with SQLite's own trace
callback on the store's connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anneal_memory import Store
from anneal_memory.storage.sqlite import spelled_sql
from anneal_memory.testing import backend_of
from anneal_memory.text import LETTER_SPELLINGS, spell_letters


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Store, list[str]]]:
    store = Store(tmp_path / "memory.db")
    store.record("warm up", "observation")
    seen: list[str] = []
    conn = backend_of(store).conn  # type: ignore[attr-defined]
    conn.set_trace_callback(lambda sql: seen.append(" ".join(sql.split()[:3]).upper()))
    yield store, seen
    conn.set_trace_callback(None)
    store.close()


def _kinds(seen: list[str]) -> list[str]:
    """The transaction statements and the row inserts, in order (SQLite traces the
    statement again for each trigger program it runs: one kind per run of repeats)."""
    out: list[str] = []
    for s in seen:
        kind = None
        if s.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")):
            kind = s.split()[0]
        elif s.startswith("INSERT INTO EPISODES("):
            kind = "episode"
        elif s.startswith("INSERT INTO AUDIT_LOG("):
            kind = "audit"
        if kind is not None and (not out or out[-1] != kind):
            out.append(kind)
    return out


def test_a_lone_record_is_one_transaction_holding_its_row_and_its_audit_entry(
        traced: tuple[Store, list[str]]) -> None:
    store, seen = traced
    for i in range(3):
        seen.clear()
        store.record(f"note {i} about the cache", "observation")
        # no savepoint, no second transaction: the row and its entry commit together
        assert _kinds(seen) == ["BEGIN", "episode", "audit", "COMMIT"], seen


def test_a_refused_lone_record_leaves_neither_row_nor_entry(
        traced: tuple[Store, list[str]]) -> None:
    store, seen = traced
    before = (store.status().total_episodes, len(store.audit_trail.entries()))
    conn = backend_of(store).conn  # type: ignore[attr-defined]
    conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON audit_log BEGIN "
                 "SELECT RAISE(ABORT, 'refused by the test'); END")
    with pytest.raises(Exception, match="refused by the test"):
        store.record("never kept", "observation")
    conn.execute("DROP TRIGGER refuse")
    assert (store.status().total_episodes, len(store.audit_trail.entries())) == before
    assert "ROLLBACK" in _kinds(seen)
    assert store.record("kept", "observation").content == "kept"


def test_every_spelled_letter_is_outside_ascii() -> None:
    # the word index takes ASCII text as it is (spelled_sql's guard): right only while
    # no letter it spells out is an ASCII one
    assert all(not letter.isascii() for letter in LETTER_SPELLINGS)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(
    [*LETTER_SPELLINGS, "a", "Z", " ", "é", "ö", "ß", "\n", "'", "日", "😀"]), max_size=40)
    | st.text(max_size=40))
def test_the_index_spells_as_text_spell_letters_does(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    try:
        got = conn.execute(f"SELECT {spelled_sql('?1')}", (text,)).fetchone()[0]
    except UnicodeEncodeError:  # a lone surrogate: no store holds one
        return
    finally:
        conn.close()
    assert got == spell_letters(text)


def test_a_store_indexes_spelled_and_ascii_text_alike(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        a = store.record("We met on Hauptstraße by the Øresund ferry", "observation")
        b = store.record("We met on Hauptstrasse by the Oresund ferry", "observation")
        got = {e.id for e in store.recall(keyword="hauptstrasse oresund").episodes}
        assert got == {a.id, b.id}
        store.delete(a.id)  # the delete trigger spells as the insert did: no stale token
        assert [e.id for e in store.recall(keyword="hauptstrasse").episodes] == [b.id]
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("INSERT INTO episodes_words(episodes_words, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_the_write_ahead_log_is_checkpointed_at_its_longer_bound(tmp_path: Path) -> None:
    # SQLite's default (1000 pages) would have restarted the log from its start by now,
    # keeping the file near 1000 frames; the store's bound lets it grow past that
    from anneal_memory.storage.sqlite import SQLiteBackend

    with Store(tmp_path / "m.db") as store:
        conn = backend_of(store).conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == (
            SQLiteBackend.WAL_CHECKPOINT_PAGES)
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        for i in range(150):  # ~20 pages each
            store.record(f"note {i} on the cache warming after each deploy", "observation")
        frames = (tmp_path / "m.db-wal").stat().st_size // (page + 24)
        assert 1500 < frames < SQLiteBackend.WAL_CHECKPOINT_PAGES, frames


def test_a_labels_hash_is_the_same_from_the_trails_cache(store: Store) -> None:
    from anneal_memory.audit import LABEL_HEX, content_hash

    trail = store.audit_trail
    labels = [f"source-{i}" for i in range(trail.LABEL_CACHE + 44)] + ["agent"] * 3
    for _ in range(2):  # the second pass reads what the first kept (and what it dropped)
        for label in labels:
            assert trail.hash_label(label) == content_hash(
                trail.salt, "label\x00" + label)[:LABEL_HEX]
    assert len(trail._label_cache) <= trail.LABEL_CACHE


def _gov_indexes(store: Store) -> set[str]:
    return {str(r[0]) for r in backend_of(store).q(
        "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='episodes'")}


def test_the_unused_metadata_index_is_gone_and_dropped_from_an_older_store(
        tmp_path: Path) -> None:
    from anneal_memory.storage import governance_sql

    db = tmp_path / "g.db"
    with Store(db) as store:
        store.scoped({"user": "ana"}).record("ana's note", "observation")
        governance_sql.ensure_schema(backend_of(store))
        assert "gov_ix_episode_ns" not in _gov_indexes(store)
    # the index as the builds before issue 54 made it with the governance tables
    conn = sqlite3.connect(db)
    conn.execute("CREATE INDEX gov_ix_episode_ns ON episodes("
                 "json_extract(metadata, '$._anneal_ns.owner'))")
    conn.commit()
    conn.close()
    with Store(db) as store:  # upgraded on open: no schema version of its own
        assert "gov_ix_episode_ns" not in _gov_indexes(store)
        view = store.scoped({"user": "ana"})
        assert [e.content for e in view.recall().episodes] == ["ana's note"]
        view.record("kept", "observation")
    with Store(db, read_only=True) as store:
        assert store.status().total_episodes == 2


def test_the_writers_tip_is_the_chains_newest_entry_in_every_state(store: Store) -> None:
    from anneal_memory.storage.roles import AuditChain
    from anneal_memory.storage.sqlite_audit import tip_row

    backend = backend_of(store)
    conn = backend.conn  # type: ignore[attr-defined]
    chain = AuditChain(backend)

    def same() -> None:
        got = chain.audit_tip()
        want = tip_row(conn)  # the sorted union of both tables
        assert want is not None and (got.seq, got.hash) == (want.seq, want.hash)

    store.record("a note", "observation")
    same()  # full rows only
    store.audit_trail.flush()
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 0
    same()  # compacted only: the tail is empty
    store.record("another", "observation")
    same()  # a full tail above the compacted entries
    # a full row left below the newest compacted entry (its hash differed at compaction)
    newest = conn.execute("SELECT MAX(seq) FROM audit_log").fetchone()[0]
    store.audit_trail.flush()
    conn.execute("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
                 "SELECT seq, 't', 'agent', 'record', '{}', 'p', 'h' FROM audit_hashes "
                 "WHERE seq = ?", (newest - 1,))
    same()
