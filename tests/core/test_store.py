"""The episodic store: recording, reading, deleting, status, export/import, bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import anneal_memory
from anneal_memory import (
    AnnealMemoryError,
    EpisodeType,
    Store,
    StoreError,
    StoreLocationError,
    TrustError,
    UnknownEpisodeTypeError,
    ValidationError,
)
from anneal_memory.testing import backend_of, repos_of


def test_record_and_get_roundtrip(store: Store) -> None:
    ep = store.record("Connection pool is the bottleneck", EpisodeType.OBSERVATION,
                      metadata={"k": 1}, source="agent")
    assert len(ep.id) == 8 and int(ep.id, 16) >= 0
    got = store.get(ep.id)
    assert got is not None
    assert got.content == "Connection pool is the bottleneck"
    assert got.type is EpisodeType.OBSERVATION and got.type == "observation"
    assert got.metadata == {"k": 1}
    assert got.timestamp.endswith("+00:00")
    assert store.get("deadbeef") is None


@pytest.mark.parametrize("t", ["observation", "decision", "tension", "question", "outcome",
                               "context", "DECISION", EpisodeType.TENSION])
def test_every_type_accepted_as_string_or_enum(store: Store, t) -> None:
    assert store.record("something happened here", t).type.value == str(t).lower()


@pytest.mark.parametrize("content,etype,kw,err", [
    ("", "observation", {}, ValidationError),
    ("   \n ", "observation", {}, ValidationError),
    (None, "observation", {}, ValidationError),
    ("text", "opinion", {}, UnknownEpisodeTypeError),
    ("text", "observation", {"timestamp": "yesterday-ish"}, ValidationError),
    ("text", "observation", {"trust": "operator"}, TrustError),
    ("text", "observation", {"trust": "god"}, TrustError),
    ("text", "observation", {"metadata": {"x": object()}}, ValidationError),
    ("text", "observation", {"metadata": "not a dict"}, ValidationError),
    ("text", "observation", {"derived_from": ["nope0000"]}, ValidationError),
])
def test_bad_input_is_refused_and_changes_nothing(store: Store, content, etype, kw, err) -> None:
    before = store.status().total_episodes
    audit_before = store.status().audit_entry_count
    with pytest.raises(err) as info:
        store.record(content, etype, **kw)
    assert isinstance(info.value, AnnealMemoryError)
    assert str(info.value)  # says what was wrong
    assert store.status().total_episodes == before
    assert store.status().audit_entry_count == audit_before


def test_timestamp_normalised_to_utc(store: Store) -> None:
    ep = store.record("backdated fact", "observation", timestamp="2026-01-02T03:04:05+02:00")
    assert ep.timestamp == "2026-01-02T01:04:05.000000+00:00"
    ep2 = store.record("naive", "observation", timestamp="2026-01-02")
    assert ep2.timestamp.startswith("2026-01-02T00:00:00")


def test_context_manager_closes(db: Path) -> None:
    with Store(db) as s:
        s.record("inside", "context")
    with pytest.raises(Exception):
        s.record("after close", "context")
    with Store(db) as s2:
        assert s2.status().total_episodes == 1


def test_default_path_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "env.db"
    monkeypatch.setenv("ANNEAL_MEMORY_DB", str(target))
    with Store() as s:
        assert s.path == target
    assert target.exists()


def test_default_path_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANNEAL_MEMORY_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with Store() as s:
        assert s.path == tmp_path / ".anneal-memory" / "memory.db"


def test_missing_home_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANNEAL_MEMORY_DB", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(StoreLocationError) as info:
        Store()
    # library terms (the CLI adds its own --db hint)
    assert "Store(path)" in str(info.value) and "ANNEAL_MEMORY_DB" in str(info.value)
    assert "--db" not in str(info.value)


def test_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        Store(tmp_path / "nope" / "m.db")
    assert "does not exist" in str(info.value)
    assert not (tmp_path / "nope").exists()


def test_not_our_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "notes.db"
    p.write_text("hello, this is not sqlite at all" * 10)
    with pytest.raises(StoreError) as info:
        Store(p)
    assert "not" in str(info.value)
    assert p.read_text().startswith("hello")


def test_other_sqlite_database_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE invoices (id INTEGER)")
    c.commit()
    c.close()
    with pytest.raises(StoreError):
        Store(p)
    c = sqlite3.connect(p)
    assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["invoices"]


def test_corrupt_database_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "c.db"
    with Store(p) as s:
        for i in range(50):
            s.record(f"episode number {i} with some text", "observation")
    data = bytearray(p.read_bytes())
    for i in range(4096, min(len(data), 4096 * 3)):
        data[i] = 0xFF
    p.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreError):
        s = Store(p)
        s.recall(keyword="episode")
        s.status()
        raise StoreError("opened") if backend_of(s).integrity_check() != "ok" else AssertionError


def test_read_only_refuses_writes(db: Path) -> None:
    with Store(db) as s:
        s.record("x marks the spot", "observation")
    with Store(db, read_only=True) as ro:
        assert ro.recall().total_matching == 1
        with pytest.raises(StoreError):
            ro.record("nope", "observation")


def test_delete_removes_text_from_file_and_leaves_tombstone(db: Path) -> None:
    secret = "the vault passphrase is zebra-quantum-741"
    with Store(db) as s:
        keep = s.record("ordinary note about lunch", "observation")
        ep = s.record(secret, "observation")
        assert s.delete(ep.id) is True
        assert s.delete(ep.id) is False
        assert s.get(ep.id) is None
        assert s.recall(keyword="zebra").total_matching == 0
        assert all(e["id"] != ep.id for e in s.export()["episodes"])
        assert s.status().tombstone_count == 1
        tomb = s.export()["tombstones"][0]
        assert tomb["id"] == ep.id and "content" not in tomb and len(tomb["content_hash"]) == 64
        assert s.get(keep.id) is not None
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.is_file())
    assert b"zebra-quantum" not in raw
    assert b"ordinary note" in raw


def test_delete_never_in_a_later_wrap(store: Store) -> None:
    from anneal_memory import prepare_wrap

    ep = store.record("to be deleted before wrap", "observation")
    store.record("kept for the wrap", "observation")
    store.delete(ep.id)
    pkg = prepare_wrap(store)["package"]
    assert [e["id"] for e in pkg["episode_list"]] != [] and ep.id not in [e["id"] for e in pkg["episode_list"]]


def test_prune(store: Store) -> None:
    old = store.record("ancient history", "observation", timestamp="2020-01-01T00:00:00Z")
    new = store.record("fresh news", "observation")
    assert store.prune(30) == 1
    assert store.get(old.id) is None and store.get(new.id) is not None
    with pytest.raises(ValidationError):
        store.prune(-1)


def test_status_fields(store: Store) -> None:
    store.record("a", "observation")
    store.record("b", "decision")
    st = store.status()
    assert st.total_episodes == 2 and st.episodes_since_wrap == 2 and st.total_wraps == 0
    assert st.episodes_by_type == {"observation": 1, "decision": 1}
    assert st.audit_enabled and st.audit_entry_count == 2 and st.audit_write_failures == 0
    assert st.wrap_in_progress is False and st.continuity_chars is None
    assert st.consolidate_requires_baton is False


def test_record_many_is_all_or_nothing(store: Store) -> None:
    eps = store.record_many([{"content": f"bulk {i}", "episode_type": "observation"} for i in range(100)])
    assert len(eps) == 100 and store.status().total_episodes == 100
    with pytest.raises(UnknownEpisodeTypeError):
        store.record_many([{"content": "ok", "episode_type": "observation"},
                           {"content": "bad", "episode_type": "nonsense"}])
    assert store.status().total_episodes == 100


def test_batch_context_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError):
        with store.batch():
            store.record("inside batch", "observation")
            raise RuntimeError("boom")
    assert store.status().total_episodes == 0
    with store.batch():
        for i in range(10):
            store.record(f"batched {i}", "observation")
    assert store.status().total_episodes == 10


def test_export_import_roundtrip_every_field(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        src = a.record("the tool said the api limit is 100 requests", "observation", trust="tool",
                       metadata={"url": "x"})
        d = a.record("summary: api limit is 100 requests per minute", "observation",
                     derived_from=[src.id])
        old = a.record("the office is in Berlin", "context", state_key="office.city",
                       timestamp="2026-01-01T00:00:00Z")
        a.record("the office moved to Munich", "context", state_key="office.city")
        a.record("api limit of 100 requests was raised to 200 requests", "observation",
                 supersedes=[d.id], trust="tool")
        doc = a.export()
    with Store(tmp_path / "b.db") as b:
        res = b.import_(json.dumps(doc))
        assert res["imported"] == 5
        doc2 = b.export()
    strip = lambda d: [{k: v for k, v in e.items()} for e in d["episodes"]]  # noqa: E731
    assert strip(doc) == strip(doc2)
    by_id = {e["id"]: e for e in doc2["episodes"]}
    assert by_id[d.id]["trust"] == "tool"  # derived from tool content: never raised
    assert by_id[old.id]["superseded_by"] is not None


def test_import_is_all_or_nothing_and_never_resurrects(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        e = a.record("to delete later", "observation")
        doc = a.export()
        a.delete(e.id)
        bad = {"episodes": doc["episodes"] + [{"id": "x1", "content": "", "type": "observation",
                                               "timestamp": "2026-01-01"}]}
        with pytest.raises(ValidationError):
            a.import_(bad)
        res = a.import_(doc)
        assert res["imported"] == 0 and res["refused_deleted"] == [e.id]
        assert a.get(e.id) is None
        with pytest.raises(ValidationError):
            a.import_("{not json")
        with pytest.raises(TrustError):
            a.import_({"episodes": [{"id": "abcd1234", "content": "x", "type": "observation",
                                     "timestamp": "2026-01-01", "trust": "operator"}]})


def test_an_import_carries_the_exports_deletions(tmp_path: Path) -> None:
    """Restore a post-delete export into a fresh store, then import an older backup
    there: the deleted episode stays deleted (the export's tombstones came along)."""
    with Store(tmp_path / "a.db") as a:
        keep = a.record("kept across the restore", "observation")
        gone = a.record("forgotten on request", "observation")
        backup = a.export()  # taken before the delete
        a.delete(gone.id)
        after = a.export()
    assert [t["id"] for t in after["tombstones"]] == [gone.id]
    with Store(tmp_path / "b.db") as b:
        res = b.import_(after)
        assert res["imported"] == 1 and res["tombstones_added"] == 1
        assert b.status().tombstone_count == 1
        again = b.import_(backup)
        assert again["refused_deleted"] == [gone.id] and again["imported"] == 0
        assert b.get(gone.id) is None and b.get(keep.id) is not None
        assert b.import_(after)["tombstones_added"] == 0  # once only
    with Store(tmp_path / "c.db") as c:  # a store still holding it: an import never deletes
        c.import_(backup)
        assert c.import_(after)["tombstones_added"] == 0 and c.get(gone.id) is not None
    for bad in ({"id": "NOT canonical"}, {"id": "ok1", "type": "no-such-type"},
                {"id": "ok2", "timestamp": "yesterday-ish"}, {"id": "ok3", "namespace": 5}):
        with Store(tmp_path / "d.db") as d, pytest.raises(ValidationError):
            d.import_({**after, "tombstones": [bad]})
    with Store(tmp_path / "d.db") as d:
        assert d.status().total_episodes == 0 and d.status().tombstone_count == 0


def test_an_import_puts_each_deletion_back_in_its_namespace(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        bob = a.scoped({"user": "bob"})
        gone = bob.record("bob asked to forget this", "observation")
        bob.delete(gone.id)
        doc = a.export()
    [tomb] = doc["tombstones"]
    assert tomb["namespace"]["user"] == "bob" and "content" not in tomb
    with Store(tmp_path / "b.db") as b:
        assert b.import_(doc)["tombstones_added"] == 1
        assert gone.id in repos_of(b.scoped({"user": "bob"})).links.tombstones()
        assert gone.id not in repos_of(b.scoped({"user": "alice"})).links.tombstones()


def test_a_new_store_uses_the_small_page_size_and_an_old_one_keeps_its_own(
        tmp_path: Path) -> None:
    import sqlite3

    from anneal_memory.storage.sqlite import SQLiteBackend

    with Store(tmp_path / "new.db") as s:
        s.record("a durable record syncs fewer bytes", "observation")
        assert backend_of(s).conn.execute("PRAGMA page_size").fetchone()[0] == SQLiteBackend.PAGE_SIZE
    old = tmp_path / "old.db"
    with Store(old) as s:
        s.record("made with 4096-byte pages", "observation")
    c = sqlite3.connect(old, isolation_level=None)  # a store made with larger pages
    try:
        c.execute("PRAGMA journal_mode=DELETE")
        c.execute("PRAGMA page_size=4096")
        c.execute("VACUUM")
        assert c.execute("PRAGMA page_size").fetchone()[0] == 4096
    finally:
        c.close()
    with Store(old) as s:
        assert backend_of(s).conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        assert [e.content for e in s.recall(keyword="4096").episodes] == ["made with 4096-byte pages"]
        s.record("still writes", "observation")
        assert backend_of(s).integrity_check() == "ok"


def test_public_api_exports() -> None:
    public = {n for n in dir(anneal_memory) if not n.startswith("_")} - {
        "annotations", "audit", "clock", "continuity", "engine", "errors", "facts", "immune",
        "portability", "recall", "session", "storage", "store", "text", "trust", "types", "wrap",
        "testing", "cli", "eval", "extras", "migrate_store", "store_continuity", "crystal", "spores", "worth", "governance", "mcp", "adapters", "items", "group_commit", "tiers_db", "ui", "ranking", "stem", "erasure", "restore",
        "legacy", "embedding", "semantic", "vector_cache", "fusion", "tracing", "shorten",
        "episodes_write", "episode_rows", "probes_db", "wrap_state", "store_copy",
        "governance_eval"}
    assert set(anneal_memory.__all__) - {"__version__"} == public


def test_namespace_stamp_key_is_reserved(store: Store) -> None:
    with pytest.raises(ValidationError):
        store.record("forged", "observation", metadata={"_anneal_ns": {"tenant": "other"}})
    assert store.status().total_episodes == 0


def test_import_reports_progress(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a:
        a.record_many([{"content": f"item {i}", "episode_type": "observation"} for i in range(2500)])
        doc = a.export()
    seen: list[tuple[int, int]] = []
    with Store(tmp_path / "b.db") as b:
        b.import_(doc, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1000, 2500), (2000, 2500), (2500, 2500)]


@pytest.mark.parametrize("call", [
    lambda s: s.record_many(5),
    lambda s: s.record_many("not a list"),
    lambda s: s.add_drift_probe(pattern=5),
    lambda s: s.add_drift_probe(fact=3),
    lambda s: __import__("anneal_memory").prepare_wrap(s, session_id=5),
])
def test_wrong_argument_types_are_typed_errors(store: Store, call) -> None:
    store.record("something to wrap", "observation")
    with pytest.raises(ValidationError):
        call(store)
    assert store.status().total_episodes == 1 and not store.status().wrap_in_progress
