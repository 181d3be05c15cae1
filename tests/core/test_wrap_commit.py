"""How a wrap reaches the disk: one database commit per prepare and per save, the new
continuity staged before the save's commit and put in place after it, and what a crash,
a failed rename, a slower writer, a raw save or an operator's hand edit leaves."""

from __future__ import annotations

import os
import stat
import time
import warnings
from pathlib import Path

import pytest

from anneal_memory import (
    Store,
    StoreError,
    prepare_wrap,
    store_continuity,
    validated_save_continuity,
)
from anneal_memory import store as store_mod
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of

from wraphelp import doc, fail_commits, wrap


def _commits(store: Store) -> list[str]:
    """Every COMMIT the store's connection runs from now on."""
    seen: list[str] = []
    backend_of(store).conn.set_trace_callback(
        lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


def _staged(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.staged.tmp"))


def test_prepare_and_save_each_commit_once(store: Store, tmp_path: Path) -> None:
    for i in range(30):
        store.record(f"episode {i} about the cache layer", "observation")
    seen = _commits(store)
    w = prepare_wrap(store)
    assert len(seen) == 1
    validated_save_continuity(store, doc(), wrap_token=w["wrap_token"])
    assert len(seen) == 2  # the save is one transaction: no second one to tidy up
    assert store.continuity_path.read_text("utf-8") == doc()
    assert Meta(backend_of(store)).get_meta("pending_blob:.continuity.md") is None
    assert _staged(tmp_path) == []


def test_the_save_makes_its_file_durable_before_its_commit(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.record("an episode about the cache layer", "observation")
    w = prepare_wrap(store)
    order: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        order.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    backend_of(store).conn.set_trace_callback(
        lambda sql: order.append("commit") if sql.strip().upper() == "COMMIT" else None)
    validated_save_continuity(store, doc(), wrap_token=w["wrap_token"])
    # the text and its name are on disk before the commit that points at them; the
    # rename after it needs no sync of its own (the next open redoes a lost one)
    assert order == ["file", "folder", "commit"]


def test_a_failed_rename_keeps_the_save_and_the_next_open_finishes_it(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as s:
        s.record("the first session chose SQLite", "decision")
        wrap(s, doc(context="- old"))
        s.record("the second session chose WAL", "decision")
        w = prepare_wrap(s)

        def refuse(*_a: object, **_k: object) -> None:
            raise PermissionError("read-only folder")

        monkeypatch.setattr(store_mod.Store, "_flush_continuity", refuse)
        with pytest.warns(UserWarning, match="could not be put in place"):
            validated_save_continuity(s, doc(context="- new"), wrap_token=w["wrap_token"])
        monkeypatch.undo()
        # committed: the store reads the new text although the file still holds the old
        assert s.continuity_path.read_text("utf-8") == doc(context="- old")
        assert s.load_continuity() == doc(context="- new")
        assert s.status().wrap_in_progress is False
        staged = _staged(db.parent)
        assert len(staged) == 1
    for p in staged:  # old enough for the leftover sweep: still kept, a save points at it
        os.utime(p, (time.time() - 3600, time.time() - 3600))
    monkeypatch.setattr(store_continuity, "publish_staged", refuse)  # nor can the next open
    with pytest.warns(UserWarning, match="could not be written"), Store(db) as s:
        assert s.load_continuity() == doc(context="- new")
    monkeypatch.undo()
    assert _staged(db.parent) == staged
    with Store(db) as s:
        assert s.continuity_path.read_text("utf-8") == doc(context="- new")
        assert s.load_continuity() == doc(context="- new")
    assert _staged(db.parent) == []


def test_a_rename_a_crash_lost_is_redone_at_the_next_open(db: Path) -> None:
    with Store(db) as s:
        s.record("the first session chose SQLite", "decision")
        wrap(s, doc(context="- old"))
        s.record("the second session chose WAL", "decision")
        wrap(s, doc(context="- new"))
        path = s.continuity_path
        record = Meta(backend_of(s)).get_meta("staged_blob:.continuity.md")
    assert record is not None
    # what the disk holds when a crash came after the commit but before the folder held
    # the rename: the new text under its staged name, the old one in place
    os.replace(path, path.with_name(record.split(" ", 1)[1]))
    path.write_text(doc(context="- old"), "utf-8")
    with Store(db, read_only=True) as s:  # a reader that changes nothing sees the save
        assert s.load_continuity() == doc(context="- new")
    with Store(db) as s:
        assert path.read_text("utf-8") == doc(context="- new")
        assert s.load_continuity() == doc(context="- new")
        assert s.status().total_wraps == 2
    assert _staged(db.parent) == []


def test_a_slower_writer_never_puts_an_older_save_over_a_newer_one(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Store(db), Store(db)
    try:
        a.record("the first episode", "observation")
        held: list[tuple[Store, object]] = []

        def hold(self: Store, staged: object = None) -> None:
            held.append((self, staged))

        monkeypatch.setattr(store_mod.Store, "_flush_continuity", hold)
        wrap(a, doc(context="- from A"))  # committed, its file not yet put in place
        monkeypatch.undo()
        assert b.load_continuity() == doc(context="- from A")  # B sees the committed save
        b.record("the second episode", "observation")
        wrap(b, doc(context="- from B"))
        assert b.continuity_path.read_text("utf-8") == doc(context="- from B")
        (slow, staged), = held
        store_mod.Store._flush_continuity(slow, staged)  # type: ignore[arg-type]
        assert a.continuity_path.read_text("utf-8") == doc(context="- from B")
        assert a.load_continuity() == doc(context="- from B")
        assert _staged(db.parent) == []  # A's outdated copy was removed, not published
    finally:
        a.close()
        b.close()


def test_an_operators_hand_edit_of_the_file_stands(db: Path) -> None:
    with Store(db) as s:
        s.record("the cache layer is slow under load", "observation")
        wrap(s, doc(patterns="- cache_pressure | 1x"))
        edited = doc(patterns="- cache_pressure | 1x (hand-checked)")
        s.continuity_path.write_text(edited, "utf-8")
        assert s.load_continuity() == edited
        s.record("another episode", "observation")
        assert prepare_wrap(s)["package"]["continuity"] == edited
    with Store(db) as s:  # opening again does not put the saved text back
        assert s.continuity_path.read_text("utf-8") == edited
        assert s.load_continuity() == edited


def test_a_raw_save_replaces_a_save_still_waiting_for_its_file(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as s:
        s.record("an episode", "observation")
        monkeypatch.setattr(store_mod.Store, "_flush_continuity", lambda *a, **k: None)
        wrap(s, doc(context="- canonical"))
        monkeypatch.undo()
        assert s.load_continuity() == doc(context="- canonical")
        s.save_continuity("# raw\n")
        assert s.load_continuity() == "# raw\n"
    with Store(db) as s:
        assert s.load_continuity() == "# raw\n"
        assert s.continuity_path.read_text("utf-8") == "# raw\n"


def test_a_pending_copy_left_by_an_earlier_build_is_written_at_open(db: Path) -> None:
    with Store(db) as s:
        s.record("an episode", "observation")
        wrap(s, doc(context="- old"))
        with backend_of(s).transaction():  # the shape an earlier build committed before its file
            Meta(backend_of(s)).set_meta("pending_blob:.continuity.md", doc(context="- pending"))
        assert s.load_continuity() == doc(context="- pending")
    with Store(db) as s:
        assert s.continuity_path.read_text("utf-8") == doc(context="- pending")
        assert Meta(backend_of(s)).get_meta("pending_blob:.continuity.md") is None
        with backend_of(s).transaction():  # one more, still there when the next save runs
            Meta(backend_of(s)).set_meta("pending_blob:.continuity.md", doc(context="- stale"))
        s.record("the next episode", "observation")
        wrap(s, doc(context="- next"))  # the save drops such a copy in its transaction
        assert s.load_continuity() == doc(context="- next")
    with Store(db) as s:
        assert s.load_continuity() == doc(context="- next")


def test_a_failed_commit_leaves_no_staged_file(store: Store, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store.record("an episode", "observation")
    w = prepare_wrap(store)
    fail_commits(store, monkeypatch)
    with pytest.raises(StoreError):
        validated_save_continuity(store, doc(), wrap_token=w["wrap_token"])
    monkeypatch.undo()
    assert _staged(tmp_path) == []
    assert store.status().wrap_in_progress is True
    assert store.load_continuity() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validated_save_continuity(store, doc(), wrap_token=w["wrap_token"])
    assert store.load_continuity() == doc()


def test_each_namespace_stages_its_own_file(store: Store, tmp_path: Path) -> None:
    alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})
    alice.record("alice prefers tea", "observation")
    bob.record("bob prefers coffee", "observation")
    wrap(alice, doc(context="- alice"))
    wrap(bob, doc(context="- bob"))
    assert alice.continuity_path != bob.continuity_path
    assert alice.continuity_path.read_text("utf-8") == doc(context="- alice")
    assert bob.load_continuity() == doc(context="- bob")
    assert store.load_continuity() is None
    assert _staged(tmp_path) == []


@pytest.mark.parametrize("scoped", [False, True])
def test_a_store_opened_by_a_relative_path_keeps_its_saved_continuity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scoped: bool) -> None:
    # `Store("memory.db")` in the working folder, as the guides write it: the staged
    # file must be put in place, not taken for an older save's and removed
    from anneal_memory import MemorySession
    from anneal_memory.testing import scripted_compress

    monkeypatch.chdir(tmp_path)
    store = Store("memory.db")
    try:
        view = store.scoped({"user": "alice"}) if scoped else store
        view.record("our heater is a Zephyrion 4000", "observation")
        assert MemorySession(view).wrap(scripted_compress).status == "saved"
        assert "Zephyrion" in (view.load_continuity() or "")
        assert "Zephyrion" in view.continuity_path.read_text()
        assert not list(tmp_path.glob("*.staged.tmp"))
    finally:
        store.close()
    again = Store("memory.db")
    try:
        view = again.scoped({"user": "alice"}) if scoped else again
        assert "Zephyrion" in (view.load_continuity() or "")
    finally:
        again.close()
