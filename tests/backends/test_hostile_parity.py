"""Hostile use, the same on SQLite and PostgreSQL (docs/postgres.md: "The library and the
CLI behave the same way on both backends"): bad values refused alike and nothing written,
query-syntax characters taken literally, the governed runtime's namespace walls and
forget, racing reviewers, one Store shared by threads, and a MemorySession serving many
users from many threads (each user's context and wrap stay theirs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from threadhelp import batched, run_threads

from anneal_memory import AnnealMemoryError, AuditTrail, MemorySession, Store, ValidationError
from anneal_memory.governance import (
    GovernanceRefusal,
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
)
from anneal_memory.testing import repos_of

BAD_RECORDS: dict[str, dict[str, Any]] = {
    "nul content": {"content": "a\x00b"},
    "surrogate content": {"content": "a\ud800b"},
    "nul source": {"content": "ok", "source": "s\x00"},
    "surrogate metadata": {"content": "ok", "metadata": {"k": "\udfff"}},
    "nan metadata": {"content": "ok", "metadata": {"k": float("nan")}},
    "reserved metadata": {"content": "ok", "metadata": {"_anneal_ns": "x"}},
    "bad state key": {"content": "ok", "state_key": "k\x00"},
    "unknown supersedes": {"content": "ok", "supersedes": ["ghost"]},
    "unknown derived_from": {"content": "ok", "derived_from": ["ghost"]},
    "operator trust": {"content": "ok", "trust": "root"},
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_a_bad_record_is_refused_alike_and_writes_nothing(store: Store, case: str) -> None:
    kw = dict(BAD_RECORDS[case])
    before = (store.status().total_episodes, len(store.audit_trail.entries()))
    with pytest.raises(AnnealMemoryError) as err:  # a typed refusal, not a driver error
        store.record(kw.pop("content"), "observation", **kw)
    assert str(err.value)
    assert (store.status().total_episodes, len(store.audit_trail.entries())) == before


def test_metadata_the_json_column_must_keep_is_kept_exactly(store: Store) -> None:
    """A NUL inside metadata text, a key with one, a 70-bit integer and deep nesting are
    legal JSON: both backends store and return them unchanged (jsonb cannot hold \\u0000)."""
    deep: dict[str, Any] = {}
    cur = deep
    for _ in range(100):
        cur["a"] = {}
        cur = cur["a"]
    meta = {"text": "a\x00b", "k\x00": 1, "big": 2**70, "deep": deep, "f": 0.1 + 0.2}
    ep = store.record("metadata probe", "observation", metadata=meta)
    assert store.get(ep.id).metadata == meta  # type: ignore[union-attr]


CORPUS = ["100% sure_thing", "back\\slash path", 'she said "double"', "it's a quote",
          "NEAR OR AND NOT", "a:b (grouped) *star*", "Ärger über die Straße",
          "ПРИВЕТ мир", "東京タワー", "emoji 🎉 party", "plain words only"]
KEYWORDS = ["100%", "%", "_", "sure_", "\\", '"double"', '"', "'", "NEAR", "OR", "NOT",
            "-", "*", "a:b", "(", ")", "ärger", "ÄRGER", "привет", "東京", "京タ", "🎉",
            "%_%", "sure_thing OR plain"]


def test_query_syntax_in_a_keyword_is_literal_and_answers_alike(store: Store) -> None:
    """Each keyword's phrase matches are exactly the episodes containing it (any case):
    LIKE wildcards, FTS5 and tsquery operators are never interpreted."""
    for text in CORPUS:
        store.record(text, "context")
    for kw in KEYWORDS:
        res = store.recall(keyword=kw, limit=50)
        expected = {t for t in CORPUS if kw.casefold() in t.casefold()}
        if expected:
            assert res.query_params["match"] == "phrase", kw
            assert {e.content for e in res.episodes} == expected, kw
        else:  # no substring: word recall, which may match no word at all but never errs
            assert res.query_params["match"] == "words", kw


def test_extreme_limits_and_dates_answer_or_refuse_alike(store: Store) -> None:
    store.record("one episode", "context")
    assert len(store.recall(limit=10**12).episodes) == 1
    assert store.recall(offset=10**12).episodes == []
    assert store.recall(since="9999-12-31").episodes == []
    assert store.recall(until="0001-01-02").episodes == []
    for bad in ({"limit": 10**13}, {"offset": -1}, {"limit": True}, {"since": "99999999d"},
                {"since": "2026-13-45"}):
        with pytest.raises(ValidationError):
            store.recall(**bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- governed runtime
ALICE = MemoryNamespace(tenant="acme", user="alice", agent="coder")
GLOBEX = MemoryNamespace(tenant="globex", user="alice", agent="coder")


def cand(cid: str, ns: MemoryNamespace, content: str, subject: str = "spare_key",
         kind: str = "user_message") -> MemoryCandidate:
    return MemoryCandidate(cid, ns, "semantic", subject, content, SourceRef(f"src-{cid}", kind))


def test_a_runtime_over_a_view_stays_in_it_on_both_backends(store: Store) -> None:
    root = MemoryRuntime(store)
    theirs = root.write(cand("g1", GLOBEX, "Globex alice keeps the key in a safe")).record
    assert theirs is not None
    view_rt = MemoryRuntime(store.scoped(ALICE))
    calls: list[Callable[[], Any]] = [
        lambda: view_rt.recall(GLOBEX, "key safe"),
        lambda: view_rt.resolve(GLOBEX, [theirs.record_id]),
        lambda: view_rt.profile(GLOBEX),
        lambda: view_rt.write(cand("x1", GLOBEX, "Planted through the wrong view")),
        lambda: view_rt.forget(GLOBEX, "semantic", "spare_key", reason="wrong view"),
    ]
    for call in calls:
        with pytest.raises(ValidationError, match="tenant 'globex' does not match"):
            call()
    assert root.current(GLOBEX, "semantic", "spare_key") == theirs
    assert view_rt.resolve(ALICE, [theirs.record_id]) == []
    assert root.recall(ALICE, "key safe globex").items == []


def test_a_forgotten_memory_stays_forgotten_after_restoring_an_older_export(store: Store) -> None:
    rt = MemoryRuntime(store)
    v1 = rt.write(cand("a1", ALICE, "Alice keeps the spare key under the blue flowerpot")).record
    assert v1 is not None
    backup = store.export()
    rt.forget(ALICE, "semantic", "spare_key", reason="user request")
    store.import_(backup)
    rt.rebuild_projection()
    assert rt.state(ALICE, "semantic", "spare_key") == "deleted"
    assert rt.resolve(ALICE, [v1.record_id]) == []
    assert rt.recall(ALICE, "spare key blue flowerpot").items == []
    assert rt.write(cand("a2", ALICE, "Back under the flowerpot", "Spare-Key.")).reason == \
        "memory_deleted"
    assert all(v.content is None for v in rt.versions(ALICE, "semantic", "spare_key"))


def test_racing_reviewers_decide_once_on_both_backends(open_store: Callable[..., Store]) -> None:
    q = MemoryRuntime(open_store()).write(cand("m1", ALICE, "Alice may prefer tea", "drink",
                                               kind="model"))
    assert q.review_id
    stores = [open_store() for _ in range(4)]
    barrier = threading.Barrier(4)
    results: list[str] = []

    def decide(i: int) -> None:
        rt = MemoryRuntime(stores[i])
        barrier.wait(timeout=30)
        try:
            if i % 2:
                results.append(rt.approve(q.review_id or "", reviewer=f"r{i}").outcome)
            else:
                rt.reject_review(q.review_id or "", reviewer=f"r{i}")
                results.append("review_rejected")
        except GovernanceRefusal as exc:
            results.append(exc.reason)

    run_threads(decide, range(4), timeout=60)
    assert results.count("review_not_pending") == 3, results  # the first decision holds
    check = open_store()
    entries = check.audit_trail.entries()
    assert len([e for e in entries if e["event"] == "gov_review_decided"]) == 1
    written = MemoryRuntime(check).current(ALICE, "semantic", "drink") is not None
    assert written is ("written" in results)
    assert written is (repos_of(check).governance.review(q.review_id).status == "approved")


# ---------------------------------------------------------------------- threads
def test_threads_sharing_one_store_lose_nothing_and_keep_the_chain(store: Store,
                                                                   location: str) -> None:
    def work(i: int) -> None:
        view = store.scoped({"user": f"u{i}"})
        for j in range(6):
            view.record(f"user u{i} note {j} about the cache", "observation")
            got = view.recall(keyword="cache", limit=50).episodes
            assert {e.content.split()[1] for e in got} == {f"u{i}"}

    run_threads(work, range(6))
    assert store.status().total_episodes == 36
    assert AuditTrail.verify(location).valid


def test_a_group_commit_batch_writes_each_record_alike(store: Store, location: str) -> None:
    # one batch: namespaces mixed, a refused link in the middle, a checked link allowed
    base = store.record("the cache warms up after a deploy", "observation")
    alice, bob = store.scoped({"user": "alice"}), store.scoped({"user": "bob"})
    got = batched(store, [
        lambda: alice.record("alice's note about the cache", "observation"),
        lambda: store.record("a bad link", "observation", supersedes=["ghost"]),
        lambda: bob.record("bob's note about the cache", "observation"),
        lambda: store.record("the cache now warms up before a deploy", "observation",
                             supersedes=[base.id]),
        lambda: alice.record("alice's second note", "observation"),
    ])
    assert isinstance(got[1], AnnealMemoryError)
    written = [g.id for i, g in enumerate(got) if i != 1]
    entries = [e for e in store.audit_trail.entries() if e["event"] == "record"]
    assert [e["data"]["episode_id"] for e in entries[-4:]] == written
    assert {e.id for e in alice.recall().episodes} == {written[0], written[3]}
    assert {e.id for e in bob.recall().episodes} == {written[1]}
    assert alice.status().audit_entry_count == 2 and bob.status().audit_entry_count == 1
    assert store.get(base.id).superseded_by == written[2]  # type: ignore[union-attr]
    assert store.status().total_episodes == 6
    store.audit_trail.flush()
    assert AuditTrail.verify(location).valid


CONTINUITY = ("## State\n- {who} is working\n\n## Patterns\n- none yet | 1x\n\n"
              "## Decisions\n- none\n\n## Context\n- {who}'s notes\n")


def test_a_session_serving_many_users_from_threads_keeps_each_users_memory(
        store: Store) -> None:
    """What a framework server does: one MemorySession, ``for_namespace`` per request,
    every user recording, recalling and wrapping at the same moment."""
    root = MemorySession(store)
    users = [f"user{i:02d}" for i in range(12)]
    barrier = threading.Barrier(len(users))
    outcomes: dict[str, Any] = {}

    def request(who: str) -> None:
        me = root.for_namespace({"user": who})
        for n in range(3):
            me.record_observation(f"{who} private fact {n}: the vault code is {who}-{n}")
        context = me.context_for("vault code private fact")
        assert who in context and all(u not in context for u in users if u != who), context
        barrier.wait(timeout=60)  # every user wraps at once
        seen: list[str] = []

        def compress(prompt: str) -> str:
            seen.append(prompt)
            return CONTINUITY.format(who=who)

        outcomes[who] = (me.wrap(compress), seen)

    run_threads(request, users)
    for who in users:
        outcome, prompts = outcomes[who]
        assert outcome.saved, (who, outcome)
        assert outcome.result["episodes_compressed"] == 3
        assert all(u not in prompts[0] for u in users if u != who)  # the wrap saw only theirs
        me = root.for_namespace({"user": who})
        assert me.start().count(who) >= 1 and all(u not in me.start() for u in users if u != who)
        assert me.store.status().episodes_since_wrap == 0
    assert root.start() == ""  # the operator's unscoped continuity was not written


def _rows_holding(location: str, needle: bytes) -> list[str]:
    """Where a row the database still keeps (live, or dead but not vacuumed away) holds
    ``needle``: the raw files on SQLite, every used line pointer's tuple on PostgreSQL."""
    if not location.startswith("postgresql"):
        from pathlib import Path

        db = Path(location)
        return [p.name for p in db.parent.glob(db.name + "*")
                if p.is_file() and needle in p.read_bytes()]
    import os

    import psycopg

    with psycopg.connect(os.environ["ANNEAL_TEST_PG_DSN"], autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
    found = []
    with psycopg.connect(location, autocommit=True) as c:
        for table in ("episodes", "gov_records", "gov_reviews"):
            pages = c.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int",
                              (table,)).fetchone()[0]  # type: ignore[index]
            for page in range(pages):
                rows = c.execute("SELECT t_data FROM public.heap_page_items("
                                 "public.get_raw_page(%s, %s)) WHERE lp_flags = 1",
                                 (table, page)).fetchall()
                found += [table for (data,) in rows if data and needle in bytes(data)]
    return found


def test_forget_and_delete_leave_no_row_holding_the_text(store: Store, location: str) -> None:
    """docs/governance.md: the text of every version, and the candidate text of its review
    items, is scrubbed from the database; a deleted episode's text is gone too."""
    rt = MemoryRuntime(store)
    rt.write(cand("a1", ALICE, "ZQXFIRST the key is under the pot"))
    assert rt.write(cand("a2", ALICE, "ZQXSECOND the key may be in the shed",
                         kind="model")).outcome == "review"
    ep = store.record("ZQXEPISODE the alarm code", "observation")
    store.delete(ep.id)
    rt.forget(ALICE, "semantic", "spare_key", reason="user request")
    store.close()
    for needle in (b"ZQXFIRST", b"ZQXSECOND", b"ZQXEPISODE"):
        assert _rows_holding(location, needle) == [], needle


def test_async_users_wrapping_at_once_each_get_their_own_wrap(store: Store) -> None:
    """The async twins (docs/namespaces.md) under asyncio.gather: twelve users record,
    recall and wrap concurrently on one event loop; each wrap sees and saves only theirs."""
    import asyncio

    root = MemorySession(store)
    users = [f"au{i:02d}" for i in range(12)]

    async def one(who: str) -> str:
        me = root.for_namespace({"user": who})
        for n in range(3):
            await me.arecord_observation(f"{who} fact {n} about the vault")
        context = await me.acontext_for("vault fact")
        assert who in context and all(u not in context for u in users if u != who)

        async def compress(prompt: str) -> str:
            await asyncio.sleep(0.01)  # let the other users' wraps interleave
            assert all(u not in prompt for u in users if u != who)
            return CONTINUITY.format(who=who)

        return (await me.awrap(compress)).status

    async def everyone() -> list[str]:
        return await asyncio.gather(*(one(u) for u in users))

    assert asyncio.run(everyone()) == ["saved"] * len(users)
    for who in users:
        text = root.for_namespace({"user": who}).store.load_continuity() or ""
        assert f"{who} is working" in text and all(u not in text for u in users if u != who)
