"""The word index's folding rule on SQLite: a store of schema 4 (which indexed the raw
text) is upgraded on open, and the index needs no function of ours, so any SQLite client
can still write the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from anneal_memory import Store
from anneal_memory.storage.sqlite import SCHEMA_VERSION

_V4_WORDS = """
DROP TRIGGER episodes_ai; DROP TRIGGER episodes_ad; DROP TRIGGER episodes_au;
DROP TABLE episodes_words; DROP VIEW episodes_words_src;
CREATE VIRTUAL TABLE episodes_words USING fts5(
    content, type, ns_tag, content='episodes', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER episodes_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_words(rowid, content, type, ns_tag) VALUES (new.rowid, new.content, new.type, new.ns_tag);
    INSERT INTO episodes_tri(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER episodes_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type, ns_tag) VALUES ('delete', old.rowid, old.content, old.type, old.ns_tag);
    INSERT INTO episodes_tri(episodes_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER episodes_au AFTER UPDATE OF content, type ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type, ns_tag) VALUES ('delete', old.rowid, old.content, old.type, old.ns_tag);
    INSERT INTO episodes_tri(episodes_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO episodes_words(rowid, content, type, ns_tag) VALUES (new.rowid, new.content, new.type, new.ns_tag);
    INSERT INTO episodes_tri(rowid, content) VALUES (new.rowid, new.content);
END;
INSERT INTO episodes_words(episodes_words) VALUES ('rebuild');
UPDATE meta SET value='4' WHERE key='schema_version';
"""


def test_a_schema_4_store_is_upgraded_and_its_words_refolded(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Store(db) as store:
        ep = store.record("We met on Hauptstraße by the Øresund ferry", "observation")
        for i in range(30):
            store.record(f"filler {i} about the garden", "observation")
    conn = sqlite3.connect(db)
    conn.executescript(_V4_WORDS)
    conn.close()
    with Store(db) as store:
        assert [e.id for e in store.recall(keyword="hauptstrasse oresund").episodes][:1] == [ep.id]
        store.delete(ep.id)  # the delete trigger spells as the index did: no stale tokens
        assert store.recall(keyword="hauptstrasse").episodes == []
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION)  # 5 (this refold) and the later steps
    conn.execute("INSERT INTO episodes_words(episodes_words, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_any_sqlite_client_can_still_write_the_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Store(db) as store:
        ep = store.record("the Straße note", "observation")
    conn = sqlite3.connect(db)  # a plain client: none of our functions registered
    with conn:
        conn.execute("UPDATE episodes SET content='the Øresund note' WHERE id=?", (ep.id,))
    conn.execute("INSERT INTO episodes_words(episodes_words, rank) VALUES ('integrity-check', 1)")
    conn.close()
    with Store(db) as store:
        assert [e.id for e in store.recall(keyword="oresund").episodes] == [ep.id]
