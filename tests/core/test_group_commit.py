"""Group commit's batches, made deterministic: the leader's first commit waits on the
store's lock (held by the test) while the calls under test queue up in a known order, so
they are written together in the leader's next round. A batch's records that check
nothing against the store are written in one statement each for their rows and audit
entries; a record that checks something (a link, a key) keeps its own savepoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadhelp import batched

import anneal_memory.episodes_write as episodes_write
from anneal_memory import AuditTrail, Episode, Store, SupersessionError
from anneal_memory._audit_chain import canonical_json, chain_entry, chain_hash, entry_hash
from anneal_memory.audit import entry_line, same_label
from anneal_memory.storage.roles import AuditChain, Meta
from anneal_memory.testing import backend_of


def _records(store: Store) -> list[dict[str, Any]]:
    return [e for e in store.audit_trail.entries() if e["event"] == "record"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db")
    yield s
    s.close()


def test_a_refused_record_in_the_middle_fails_alone_and_the_chain_keeps_the_order(
        store: Store) -> None:
    base = store.record("the cache warms up after a deploy", "observation")
    before = store._group.commits
    got = batched(store, [
        lambda: store.record("first note of the batch", "observation"),
        lambda: store.record("a bad link", "observation", supersedes=["nosuchid"]),
        lambda: store.record("second note of the batch", "observation"),
        lambda: store.record("the cache now warms up before a deploy", "observation",
                             supersedes=[base.id]),  # checked, and allowed
        lambda: store.record("third note of the batch", "observation"),
    ])
    assert isinstance(got[1], SupersessionError)
    assert all(isinstance(g, Episode) for i, g in enumerate(got) if i != 1)
    assert store._group.commits == before + 2  # the leader's own, then the batch's
    written = [g.id for g in got if isinstance(g, Episode)]
    assert len(set(written)) == 4 and all(store.get(i) is not None for i in written)
    assert store.get(base.id).superseded_by == got[3].id
    entries = _records(store)
    # no entry for the refused record; the batch's entries in the order of its calls,
    # in the order the rows were inserted too
    assert [e["data"]["episode_id"] for e in entries[-4:]] == written
    rows = [r.id for r in backend_of(store).all_episodes(order="rowid ASC")]
    assert rows[-4:] == written
    seqs = [e["seq"] for e in store.audit_trail.entries()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert store.status().total_episodes == 1 + 1 + 4
    store.audit_trail.flush()
    assert AuditTrail.verify(store.path).valid


def test_a_batch_of_scoped_views_writes_each_record_in_its_own_namespace(store: Store) -> None:
    alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob", "project": "p"})
    got = batched(store, [
        lambda: alice.record("alice likes the window seat", "observation"),
        lambda: store.record("the root's own note", "observation"),
        lambda: bob.record("bob likes the aisle seat", "observation"),
        lambda: alice.record("alice flies on fridays", "observation"),
    ])
    assert all(isinstance(g, Episode) for g in got)
    a1, root, b1, a2 = got
    assert {e.id for e in alice.recall().episodes} == {a1.id, a2.id}
    assert {e.id for e in bob.recall().episodes} == {b1.id}
    assert bob.get(a1.id) is None and alice.get(b1.id) is None
    assert store.get(root.id) is not None and alice.get(root.id) is None
    assert alice.status().audit_entry_count == 2 and bob.status().audit_entry_count == 1
    trail = store.audit_trail
    by_id = {e["data"]["episode_id"]: e for e in _records(store)}
    for ep, view in ((a1, alice), (a2, alice), (b1, bob)):
        assert same_label(by_id[ep.id]["data"]["namespace"],
                          trail.hash_label(view.namespace.to_dict()))
    assert "namespace" not in by_id[root.id]["data"]
    store.audit_trail.flush()
    assert AuditTrail.verify(store.path).valid


def test_a_record_the_database_refuses_inside_a_run_fails_alone(store: Store) -> None:
    # a rule in the database itself (as an operator's trigger would be): the batch's run
    # is refused as a whole, then written a record at a time so only that record fails
    backend_of(store).execute(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON episodes WHEN NEW.content LIKE "
        "'%poison%' BEGIN SELECT RAISE(ABORT, 'poison is refused here'); END")
    got = batched(store, [
        lambda: store.record("a fine note", "observation"),
        lambda: store.record("a poison note", "observation"),
        lambda: store.record("another fine note", "observation"),
    ])
    assert isinstance(got[0], Episode) and isinstance(got[2], Episode)
    assert isinstance(got[1], Exception) and "poison is refused here" in str(got[1])
    assert [e["data"]["episode_id"] for e in _records(store)[-2:]] == [got[0].id, got[2].id]
    assert store.status().total_episodes == 3  # with the leader's own
    store.audit_trail.flush()
    assert AuditTrail.verify(store.path).valid


def test_a_new_id_already_held_is_drawn_again_with_its_audit_entry(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    held = store.record("an episode already here", "observation")
    gone = store.record("an episode deleted later", "observation")
    store.delete(gone.id)  # its id stays taken (a tombstone)
    draws = iter([held.id, gone.id, "feedf00d", "feedf00d", "c0ffee00"])
    real = episodes_write.id_candidate
    monkeypatch.setattr(episodes_write, "id_candidate",
                        lambda content, ts: next(draws, None) or real(content, ts))
    got = batched(store, [
        lambda: store.record("one more note", "observation"),
        lambda: store.record("yet another note", "observation"),
    ])
    ids = [g.id for g in got]
    # drawn as each call queued: the leader held.id, the batch gone.id and feedf00d; at
    # its commit the leader draws again (feedf00d: free until then), the batch then
    # draws c0ffee00 for the tombstoned id and a fresh one for feedf00d
    assert all(isinstance(g, Episode) for g in got) and len(set(ids)) == 2
    assert not {held.id, gone.id, "feedf00d"} & set(ids)
    assert [e["data"]["episode_id"] for e in _records(store)[-2:]] == ids
    assert [store.get(i).content for i in ids] == ["one more note", "yet another note"]
    store.audit_trail.flush()
    assert AuditTrail.verify(store.path).valid


def test_two_records_of_one_batch_drawing_the_same_id_get_two(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.record("the first note", "observation")
    draws = iter(["", "abcd1234", "abcd1234"])  # "" : the leader's own draws a fresh id
    real = episodes_write.id_candidate
    monkeypatch.setattr(episodes_write, "id_candidate",
                        lambda content, ts: next(draws, None) or real(content, ts))
    got = batched(store, [lambda: store.record("a note", "observation"),
                          lambda: store.record("another note", "observation")])
    assert got[0].id == "abcd1234" and got[1].id != "abcd1234"
    assert [e["data"]["episode_id"] for e in _records(store)[-2:]] == [got[0].id, got[1].id]


def test_a_backdated_record_inside_a_batch_is_noted(store: Store) -> None:
    store.record("now", "observation")
    assert Meta(backend_of(store)).get_meta("backdated_episodes") is None
    got = batched(store, [
        lambda: store.record("in the future", "observation", timestamp="2100-01-01T00:00:00Z"),
        lambda: store.record("a bit before that", "observation", timestamp="2099-01-01T00:00:00Z"),
    ])
    assert all(isinstance(g, Episode) for g in got)
    assert Meta(backend_of(store)).get_meta("backdated_episodes") == "1"


def test_a_batch_commits_once_with_one_tip_read(store: Store,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store.record("warm up", "observation")
    tips: list[int] = []
    real_tip = AuditChain.audit_tip
    monkeypatch.setattr(AuditChain, "audit_tip", lambda self: tips.append(1) or real_tip(self))
    got = batched(store, [lambda i=i: store.record(f"note {i}", "observation") for i in range(20)])
    assert all(isinstance(g, Episode) for g in got)
    assert len(tips) == 2  # the leader's own commit, and one for the 20


@settings(max_examples=200, deadline=None)
@given(seq=st.integers(min_value=0, max_value=2**40), ts=st.text(), actor=st.text(),
       event=st.text(), prev=st.text(),
       data=st.dictionaries(st.text(), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(),
           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
           max_leaves=8), max_size=5))
def test_the_writer_hashes_an_entry_as_verify_does(seq: int, ts: str, actor: str, event: str,
                                                    prev: str, data: dict[str, Any]) -> None:
    entry = {"seq": seq, "ts": ts, "actor": actor, "event": event, "data": data,
             "prev_hash": prev}
    assert chain_hash(seq, ts, actor, event, canonical_json(data), prev) == entry_hash(entry)
    h, line = chain_entry(seq, ts, actor, event, canonical_json(data), prev)
    assert h == entry_hash(entry) and line == entry_line({**entry, "hash": h})


def test_the_mirror_writes_a_row_changed_since_it_was_appended_as_stored(store: Store) -> None:
    # the lines kept for the entries this trail appended are used only for rows exactly
    # as written: a row changed in the database is mirrored as it now reads
    trail = store.audit_trail
    trail.MIRROR_SECONDS = 1e9  # type: ignore[misc]  # mirrored only when flushed below
    eps = [store.record(f"note {i}", "observation") for i in range(3)]
    seqs = {e["data"]["episode_id"]: e["seq"] for e in _records(store)}
    changed = seqs[eps[1].id]
    backend_of(store).execute("UPDATE audit_log SET data = ? WHERE seq = ?",
                              ('{"episode_id": "forged"}', changed))
    assert trail._lines  # kept for the mirror
    trail.flush()
    lines = {json.loads(x)["seq"]: json.loads(x) for x in
             trail.paths.active.read_text("utf-8").splitlines()}
    assert lines[changed]["data"] == {"episode_id": "forged"}
    assert lines[seqs[eps[0].id]]["data"]["episode_id"] == eps[0].id
    assert lines[seqs[eps[2].id]]["data"]["episode_id"] == eps[2].id
    assert not trail._lines
    assert not AuditTrail.verify(store.path).valid  # the forged entry is named


def test_a_batch_is_mirrored_once_its_callers_are_woken(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    s = Store(tmp_path / "m.db", on_audit_event=seen.append)
    try:
        s.audit_trail.MIRROR_EVERY = 3  # type: ignore[misc]
        got = batched(s, [lambda i=i: s.record(f"note {i}", "observation") for i in range(4)])
        assert all(isinstance(g, Episode) for g in got)
        assert not s.audit_trail.hold_mirror
        lines = s.audit_trail.paths.active.read_text("utf-8").splitlines()
        assert [json.loads(x)["seq"] for x in lines] == [e["seq"] for e in s.audit_trail.entries()]
        assert [e["seq"] for e in seen] == [e["seq"] for e in s.audit_trail.entries()]
    finally:
        s.close()


def test_new_ids_draw_os_randomness_in_batches_not_once_per_record(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``os.urandom`` call lets go of the interpreter lock: fifty threads recording
    at once would each wait to get it back once per episode id."""
    import os

    import anneal_memory._lazy as lazy

    calls: list[int] = []
    real = os.urandom

    def counted(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(lazy.os, "urandom", counted)
    lazy._ID_BYTES.clear()
    eps = [store.record(f"note {i} about the queue", "observation") for i in range(300)]
    assert len({e.id for e in eps}) == 300
    assert len(calls) == 1 and calls[0] >= 300 * 8


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_a_forked_child_never_draws_the_parents_id_bytes_again() -> None:
    """Two processes on one store would otherwise propose the same ids in the same order."""
    import os

    from anneal_memory._lazy import id_token

    id_token()  # the parent's batch is drawn and held
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next draw, to the parent
        try:
            os.write(w, ",".join(id_token() for _ in range(4)).encode())
        finally:
            os._exit(0)
    os.close(w)
    child = os.read(r, 4096).decode().split(",")
    os.close(r)
    os.waitpid(pid, 0)
    mine = [id_token() for _ in range(4)]
    assert len(child) == 4 and not set(child) & set(mine)
