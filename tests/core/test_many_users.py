"""Many users in one store: every read path stays in its namespace, every write through a
view reaches only its own rows, and a hundred users' session ends all save."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
from pathlib import Path

import pytest

from anneal_memory import (
    AuditTrail,
    EpisodeNotFoundError,
    MemorySession,
    Store,
    SupersessionError,
    TrustError,
    ValidationError,
    baton_status,
    claim_baton,
    prepare_wrap,
    retrieve_relevant,
    validated_save_continuity,
)
from anneal_memory.testing import backend_of, repos_of

from wraphelp import doc

ALICE = {"user": "alice"}
BOB = {"user": "bob"}


def _continuity(prompt: str, marker: str) -> str:
    return doc(context=f"- {marker}")


@pytest.fixture
def two(store: Store) -> tuple[MemorySession, MemorySession]:
    a = MemorySession(store, namespace=ALICE)
    b = MemorySession(store, namespace=BOB)
    # interleaved, with the same words, so only the namespace can tell them apart
    for i in range(20):
        a.record_observation(f"alice's PIN for the vault is 4{i:03d} shared bank detail")
        b.record_observation(f"bob's PIN for the vault is 9{i:03d} shared bank detail")
    a.record_decision("alice decided the vault PIN rotates monthly")
    b.record_decision("bob decided the vault PIN never rotates")
    return a, b


def _texts(block: str) -> str:
    return block.lower()


def test_every_read_path_keeps_users_apart(two, store: Store) -> None:
    a, b = two
    bob_ids = {e.id for e in store.scoped(BOB).recall(limit=1000).episodes}
    assert len(bob_ids) == 21
    for query in ("vault PIN", "PIN", "shared bank detail", "bob", "9005"):
        seen = [
            a.context_for(query), "\n".join(a.recall_items(query)),
            json.dumps([e.content for e in a.recall(query, limit=50)]),
            json.dumps([e.content for e in a.store.recall(keyword=query, limit=1000).episodes]),
            json.dumps([e.content for e in retrieve_relevant(a.store, None, query,
                                                             max_episodes=50).episodes]),
        ]
        for text in seen:
            assert "bob" not in _texts(text), (query, text[:200])
            assert not any(i in text for i in bob_ids)
    exported = json.dumps(a.store.export())
    assert "bob" not in exported and not any(i in exported for i in bob_ids)
    assert a.store.status().total_episodes == 21
    w = prepare_wrap(a.store)
    assert "bob" not in json.dumps(w["package"]).lower()
    for i in bob_ids:
        assert a.store.get(i) is None
        assert a.store.get_many([i]) == {}
    # the operator's root view sees both
    assert store.recall(keyword="shared bank detail", limit=1000).total_matching == 40


def test_continuity_and_wraps_are_per_user(two, store: Store) -> None:
    a, b = two
    assert a.wrap(lambda p: _continuity(p, "alice continuity")).saved
    assert "alice continuity" in a.start()
    assert b.start() == "" and store.load_continuity() is None
    assert b.wrap(lambda p: _continuity(p, "bob continuity")).saved
    assert "bob continuity" in b.start() and "alice" not in b.start()
    assert a.store.status().total_wraps == 1 and store.status().total_wraps == 0


def _snapshot(store: Store) -> str:
    data = store.export()
    data.pop("exported_at", None)
    return json.dumps(data, sort_keys=True)


def test_writes_through_a_view_never_reach_another_namespace(two, store: Store) -> None:
    a, b = two
    alice_view, bob_view = a.store, b.store
    theirs = alice_view.recall(keyword="rotates monthly").episodes[0]
    keyed = alice_view.record("alice lives in Paris", "context", state_key="user.city")
    probe = alice_view.add_drift_probe(fact="PIN")
    w = prepare_wrap(alice_view)
    before = _snapshot(store)
    assert bob_view.delete(theirs.id) is False
    with pytest.raises(EpisodeNotFoundError):
        bob_view.set_trust(theirs.id, "tool")
    with pytest.raises(EpisodeNotFoundError):
        bob_view.set_state_key(theirs.id, "x.y")
    with pytest.raises(EpisodeNotFoundError):
        bob_view.clear_state_key(keyed.id)
    with pytest.raises(SupersessionError):
        bob_view.unsupersede(old_id=theirs.id, new_id=keyed.id)
    with pytest.raises(SupersessionError, match="no episode"):
        bob_view.record("bob rotates alice's PIN monthly", "decision", supersedes=[theirs.id])
    with pytest.raises(ValidationError):
        bob_view.record("derived from alice", "observation", derived_from=[theirs.id])
    # bob's own state key of the same name is his: alice's keyed fact is not replaced
    bob_view.record("bob lives in Oslo", "context", state_key="user.city")
    assert bob_view.prune(older_than_days=0) >= 1  # bob's own episodes only
    assert not bob_view.wrap_cancelled(force=True)  # alice's open wrap is not his (falsy receipt)
    assert not repos_of(bob_view).wraps.probes()
    assert repos_of(bob_view).wraps.delete_probe(probe) == 0
    assert _snapshot(alice_view) and repos_of(store).within(alice_view.scope).wraps.open_wrap()
    after = _snapshot(alice_view)
    assert json.loads(after)["episodes"] == [e for e in json.loads(before)["episodes"]
                                             if e["id"] in {x["id"] for x in json.loads(after)["episodes"]}]
    assert alice_view.get(keyed.id).superseded_by is None
    assert alice_view.get(theirs.id) is not None
    assert validated_save_continuity(alice_view, doc(), wrap_token=w["wrap_token"])["chars"] > 0


def test_a_state_key_in_a_project_does_not_supersede_the_users_fact(store: Store) -> None:
    user = store.scoped({"user": "carol"})
    proj = store.scoped({"user": "carol", "project": "travel"})
    other = store.scoped({"user": "carol", "project": "work"})
    fact = user.record("carol's home city is Lisbon", "context", state_key="user.city")
    proj.record("carol's home city is Rome for this trip", "context", state_key="user.city")
    assert user.get(fact.id).superseded_by is None
    assert [e.id for e in other.recall(keyword="home city").episodes] == [fact.id]


def test_an_explicit_supersession_inside_a_namespace(store: Store) -> None:
    alice = store.scoped({"user": "alice"})
    old = alice.record("alice's seed tin is blue", "context")
    new = alice.record("alice's seed tin is green now", "context", supersedes=[old.id])
    assert alice.get(old.id).superseded_by == new.id
    bob = store.scoped({"user": "bob"})
    with pytest.raises(SupersessionError, match="no episode"):
        bob.record("bob's seed tin is green now", "context", supersedes=[new.id])


def test_relayed_content_cannot_take_an_operators_state_key(store: Store) -> None:
    store_op = Store(store.path, trust_ceiling="operator")
    try:
        fact = store_op.record("the admin email is ops@example.org", "context",
                               state_key="admin.email", trust="operator")
        for label in ("tool", "external", "agent"):
            with pytest.raises(SupersessionError, match="more trusted"):
                store.record(f"the admin email is evil@{label}.test", "context",
                             state_key="admin.email", trust=label)
        assert [e.id for e in store.recall(keyword="admin email").episodes] == [fact.id]
        newer = store_op.record("the admin email is root@example.org", "context",
                                state_key="admin.email", trust="operator")
        assert store.get(fact.id).superseded_by == newer.id
    finally:
        store_op.close()


@pytest.mark.parametrize("bad", [
    {"usr": "alice"}, {}, {"user": ""}, {"user": 5}, {"user": " alice"}, {"user": None},
    "alice", ["user", "alice"],
])
def test_bad_namespaces_are_refused_and_write_nothing(store: Store, bad: object) -> None:
    with pytest.raises(ValidationError) as err:
        MemorySession(store, namespace=bad)
    if isinstance(bad, dict) and "usr" in bad:
        assert "usr" in str(err.value)
    assert store.status().total_episodes == 0


def test_a_namespace_that_differs_from_its_view_is_refused(store: Store) -> None:
    view = store.scoped(ALICE)
    with pytest.raises(ValidationError, match="user 'bob'"):
        MemorySession(view, namespace=BOB)
    assert MemorySession(view, namespace=ALICE).store is view


def test_for_namespace_keeps_one_session_per_user(store: Store) -> None:
    root = MemorySession(store)
    a1, a2 = root.for_namespace(ALICE), root.for_namespace({"user": "alice"})
    assert a1 is a2 and root.for_namespace(BOB) is not a1
    assert a1.for_namespace(BOB) is root.for_namespace(BOB)


def _wrap_user(store: Store, user: str, errors: list[str]) -> None:
    s = MemorySession(store, namespace={"user": user})
    try:
        out = s.wrap(lambda p: _continuity(p, f"continuity of {user}"))
        if not out.saved:
            errors.append(f"{user}: {out.status} {out.message}")
    except Exception as exc:  # pragma: no cover - reported below
        errors.append(f"{user}: {exc!r}")


def test_a_hundred_users_end_their_sessions_at_once(store: Store) -> None:
    users = [f"user{i:03d}" for i in range(100)]
    for u in users:
        s = MemorySession(store, namespace={"user": u})
        s.record_observation(f"{u} observed the queue latency")
        s.record_decision(f"{u} chose retries with backoff")
    errors: list[str] = []
    threads = [threading.Thread(target=_wrap_user, args=(store, u, errors)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for u in users:
        view = store.scoped({"user": u})
        text = view.load_continuity() or ""
        assert f"continuity of {u}" in text and text.count("continuity of") == 1
        assert view.status().total_wraps == 1 and view.status().episodes_since_wrap == 0


def _process_wraps(path: str, users: list[str], q: multiprocessing.Queue) -> None:
    errors: list[str] = []
    with Store(path) as s:
        for u in users:
            _wrap_user(s, u, errors)
    q.put(errors)


def test_users_wrapping_from_many_processes_all_save(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    users = [f"p{i:02d}" for i in range(24)]
    with Store(path) as s:
        for u in users:
            MemorySession(s, namespace={"user": u}).record_observation(f"{u} saw a spike")
    ctx = multiprocessing.get_context("spawn")
    q: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_process_wraps, args=(str(path), users[i::4], q))
             for i in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == [[], [], [], []]
    with Store(path) as s:
        for u in users:
            assert f"continuity of {u}" in (s.scoped({"user": u}).load_continuity() or "")


def test_one_open_wrap_per_namespace_not_per_database(store: Store) -> None:
    a, b = store.scoped(ALICE), store.scoped(BOB)
    a.record("alice note", "observation")
    b.record("bob note", "observation")
    store.set_consolidate_requires_baton(True)
    claim_baton(a, "s1")
    claim_baton(b, "s1")  # one baton per namespace: both hold their own
    assert baton_status(a)["holder"] == "s1" and baton_status(store)["holder"] is None
    wa = prepare_wrap(a, session_id="s1")
    wb = prepare_wrap(b, session_id="s1")
    assert wa["status"] == wb["status"] == "ready" and wa["wrap_token"] != wb["wrap_token"]
    assert prepare_wrap(a, session_id="other-session")["status"] != "ready"
    validated_save_continuity(b, doc(), wrap_token=wb["wrap_token"], session_id="s1")
    validated_save_continuity(a, doc(), wrap_token=wa["wrap_token"], session_id="s1")


def test_async_twins_record_recall_and_wrap_for_many_sessions(store: Store) -> None:
    async def run() -> list[str]:
        sessions = [MemorySession(store, namespace={"user": f"u{i}"}) for i in range(50)]
        await asyncio.gather(*(s.arecord_observation(f"u{i} likes tea number {i}")
                               for i, s in enumerate(sessions)))
        blocks = await asyncio.gather(*(s.acontext_for("likes tea") for s in sessions))
        outs = await asyncio.gather(*(s.awrap(lambda p: _continuity(p, "tea")) for s in sessions[:10]))
        assert all(o.saved for o in outs)
        return blocks

    blocks = asyncio.run(run())
    for i, block in enumerate(blocks):
        assert f"u{i} likes tea number {i}" in block
        assert sum(f"u{j} likes" in block for j in range(50)) == 1


def test_item_collections_are_per_namespace(store: Store) -> None:
    a, b = store.scoped(ALICE).items("history"), store.scoped(BOB).items("history")
    for i in range(30):
        a.put(f"thread1/{i:03d}", {"role": "user", "text": f"alice message {i}"},
              metadata={"thread": "t1", "n": i})
    b.put("thread1/000", {"text": "bob message"})
    assert a.count() == 30 and b.count() == 1 and store.items("history").count() == 0
    assert b.get("thread1/001") is None and b.get("thread1/000").value == {"text": "bob message"}
    page = a.list(prefix="thread1/", order="desc", limit=5, offset=5)
    assert [i.key for i in page] == [f"thread1/{n:03d}" for n in range(24, 19, -1)]
    assert [i.key for i in a.list(where={"n": 7})] == ["thread1/007"]
    assert [i.key for i in a.search("MESSAGE 2", limit=3)] == [
        "thread1/029", "thread1/028", "thread1/027"]
    updated = a.put("thread1/000", "replaced")
    assert updated.value == "replaced" and updated.seq == a.list(limit=1)[0].seq
    assert b.delete("thread1/002") is False and a.delete("thread1/002") is True
    assert b.delete_prefix("thread1/") == 1 and a.count() == 29
    appended = [a.append({"n": n}) for n in range(3)]
    assert [i.value for i in a.list(order="desc", limit=3)] == [{"n": 2}, {"n": 1}, {"n": 0}]
    assert appended[0]["key"] < appended[2]["key"]
    for bad in (lambda: a.put("", 1), lambda: a.put("k", object()), lambda: a.list(limit=-1),
                lambda: a.list(order="up"), lambda: a.put("k\x00", 1),
                lambda: a.list(where={"a": [1]})):
        with pytest.raises(ValidationError):
            bad()
    assert a.count() == 32


def test_a_caller_cannot_delete_or_prune_above_its_trust_ceiling(db: Path) -> None:
    with Store(db, trust_ceiling="operator") as op:
        fact = op.record("the operator's retention rule", "context", trust="operator",
                         timestamp="2020-01-01T00:00:00+00:00")
        mine = op.record("an old agent note", "observation", timestamp="2020-01-01T00:00:00+00:00")
    with Store(db) as agent:  # the default ceiling, as the MCP server opens it
        with pytest.raises(TrustError, match="above this store's trust ceiling"):
            agent.delete(fact.id)
        assert agent.get(fact.id) is not None
        refusals = [e for e in agent.audit_trail.entries() if e["event"] == "delete_refused"]
        assert [e["data"]["id"] for e in refusals] == [fact.id]
        assert agent.prune(older_than_days=30) == 1  # the agent's own old note only
        assert agent.get(mine.id) is None and agent.get(fact.id) is not None
    with Store(db, trust_ceiling="operator") as op:
        assert op.delete(fact.id) is True


def test_a_users_recall_in_a_crowded_store_matches_their_store_alone(tmp_path: Path) -> None:
    # In a store of many users one user's search runs from their own rows (the
    # namespace index); results must be what the same episodes give in a store alone.
    texts = ["Äpfel und Birnen im Lager", "the invoice queue retried twice",
             "数据库连接池 is the bottleneck", "invoice totals were rounded", "Cache misses"]
    crowded, alone = Store(tmp_path / "crowded.db"), Store(tmp_path / "alone.db")
    try:
        for u in range(250):  # more rows than a small store's scan: the namespace decides
            crowded.scoped({"user": f"u{u}"}).record_many(
                {"content": f"{t} (u{u})" if u else t, "episode_type": "observation"} for t in texts)
        alone.record_many({"content": t, "episode_type": "observation"} for t in texts)
        me = crowded.scoped({"user": "u0"})
        assert backend_of(me).inner._few_rows(__import__(  # type: ignore[attr-defined]
            "anneal_memory.storage.base", fromlist=["SearchFilters"]).SearchFilters(scope=me.scope))
        for q in ("äpfel", "ÄPFEL UND", "invoice", "连接", "cache MISSES", "queue invoice",
                  "rounded totals", "nothing here"):
            got = me.recall(keyword=q)
            want = alone.recall(keyword=q)
            assert [e.content for e in got.episodes] == [e.content for e in want.episodes], q
            assert got.total_matching == want.total_matching, q
    finally:
        crowded.close()
        alone.close()


def test_concurrent_writers_share_commits_and_lose_nothing(db: Path) -> None:
    store = Store(db)
    base = store.record("the base fact about the cache", "observation")
    errors: list[BaseException] = []
    ids: list[str] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        view = store.scoped({"user": f"writer{w % 5}"}) if w % 2 else store
        for i in range(40):
            try:
                if i % 10 == 9:  # a refused record: rolls back alone
                    view.record(f"w{w} bad {i}", "observation", supersedes=["nosuchid"])
                else:
                    ep = view.record(f"w{w} note {i} about the cache", "observation")
                    with lock:
                        ids.append(ep.id)
            except SupersessionError as exc:
                with lock:
                    errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(errors) == 50 * 4 and len(ids) == 50 * 36 == len(set(ids))
        assert store.status().total_episodes == 1 + 50 * 36
        assert all(store.get(i) is not None for i in ids[:50])
        records = [e for e in store.audit_trail.entries() if e["event"] == "record"]
        assert len(records) == 1 + 50 * 36  # no audit entry of a refused record survived
        assert store._group.commits < store._group.records  # fsyncs were shared
        assert store.get(base.id).superseded_by is None
    finally:
        store.close()
    assert AuditTrail.verify(db).valid
    with Store(db) as s:
        assert s.status().total_episodes == 1 + 50 * 36


def test_a_session_that_names_nobody_never_reads_a_users_memory(store: Store) -> None:
    alice = MemorySession(store, namespace=ALICE)
    alice.record_observation("alice's vault PIN is 4242")
    anon = MemorySession(store)  # a run without an identity, on the same store
    anon.record_observation("the shared vault has a PIN policy")
    for text in (anon.context_for("vault PIN"), "\n".join(anon.recall_items("vault PIN")),
                 json.dumps([e.content for e in anon.recall("vault PIN")])):
        assert "4242" not in text and "shared vault" in text
    assert "4242" not in json.dumps(prepare_wrap(anon.store)["package"], default=str)
    assert anon.store is store  # the session's store is still the one given
    # the operator's own view of the store still sees everything
    assert store.recall(keyword="vault").total_matching == 2
    assert anon.for_namespace(ALICE).context_for("vault PIN").count("4242") == 1
    anon.reads_all_namespaces = True  # a framework's root scope over its scope tree
    assert "4242" in anon.context_for("vault PIN")
