"""Hostile review of the governed runtime (docs/governance.md, docs/namespaces.md): no
tenant or user reaches another's records through any path, a runtime over a scoped view
acts only in the view's namespace, a forgotten memory never comes back (correction,
lookalike subject, import of an older export, rebuild, a late writer in another
process). Racing reviewers: tests/backends/test_hostile_parity.py."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from threadhelp import run_threads

from anneal_memory import Store, ValidationError
from anneal_memory.governance import (
    GovernanceRefusal,
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
)
from anneal_memory.recall import retrieve_relevant
from anneal_memory.testing import repos_of

T0 = datetime(2026, 8, 1, 9, 0, tzinfo=timezone.utc)
ALICE = MemoryNamespace(tenant="acme", user="alice", agent="coder")
ALICE_P = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
ALICE_Q = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="payments")
# one field different each: every one of them is another party
OTHERS = {
    "tenant": MemoryNamespace(tenant="globex", user="alice", agent="coder"),
    "user": MemoryNamespace(tenant="acme", user="bob", agent="coder"),
    "agent": MemoryNamespace(tenant="acme", user="alice", agent="reviewer"),
    "lookalike": MemoryNamespace(tenant="\u0430cme", user="alice", agent="coder"),  # Cyrillic а
}
SECRET_TEXT = "Alice keeps the spare key under the blue flowerpot"


def cand(cid: str, ns: MemoryNamespace, content: str = SECRET_TEXT, *,
         subject: str = "spare_key", kind: str = "user_message") -> MemoryCandidate:
    return MemoryCandidate(cid, ns, "semantic", subject, content, SourceRef(f"src-{cid}", kind))


@pytest.fixture
def rt(store: Store) -> MemoryRuntime:
    return MemoryRuntime(store, clock=lambda: T0)


def _every_read(rt: MemoryRuntime, ns: MemoryNamespace, ids: list[str]) -> dict[str, Any]:
    """What each read path of the runtime returns for ``ns``."""
    hit = rt.recall(ns, "spare key blue flowerpot alice", k=10)
    return {
        "recall": [i.content for i in hit.items],
        "trace": [t for t in hit.trace if any(i in str(t) for i in ids)],
        "resolve": rt.resolve(ns, ids),
        "current": rt.current(ns, "semantic", "spare_key"),
        "versions": rt.versions(ns, "semantic", "spare_key"),
        "state": rt.state(ns, "semantic", "spare_key"),
        "profile": rt.profile(ns),
        "reviews": rt.pending_reviews(ns),
    }


NOTHING = {"recall": [], "trace": [], "resolve": [], "current": None, "versions": [],
           "state": "absent", "profile": {}, "reviews": []}


@pytest.mark.parametrize("field", sorted(OTHERS))
def test_no_read_path_reaches_another_partys_records(rt: MemoryRuntime, field: str) -> None:
    mine = rt.write(cand("a1", ALICE)).record
    proj = rt.write(cand("a2", ALICE_P, "Alice's pricing key is in drawer two",
                         subject="pricing_key")).record
    queued = rt.write(cand("a3", ALICE, "Alice might like blue flowerpots",
                           subject="decor", kind="model"))
    assert mine and proj and queued.outcome == "review"
    other = OTHERS[field]
    assert _every_read(rt, other, [mine.record_id, proj.record_id]) == NOTHING
    # a decision cannot be taken on another party's review either
    with pytest.raises(GovernanceRefusal) as err:
        rt.approve(queued.review_id or "", reviewer="carol", namespace=other)
    assert err.value.reason == "unknown_review"
    # forgetting "the same" memory elsewhere refuses, and mine is untouched
    with pytest.raises(GovernanceRefusal):
        rt.forget(other, "semantic", "spare_key", reason="probe")
    assert rt.state(ALICE, "semantic", "spare_key") == "active"
    # the user-level reader does not see its own projects' records, nor does a sibling
    # project (which does see the user-level ones, as documented)
    assert rt.resolve(ALICE, [proj.record_id]) == []
    assert rt.resolve(ALICE_Q, [mine.record_id, proj.record_id]) == [mine]
    assert "drawer two" not in rt.recall(ALICE_Q, "pricing key drawer two", k=10).render()
    assert rt.resolve(ALICE_P, [mine.record_id, proj.record_id]) == [mine, proj]


def test_forget_request_ids_are_per_namespace(rt: MemoryRuntime) -> None:
    """Another party reusing my request id is neither refused nor told it exists."""
    rt.write(cand("a1", ALICE))
    rt.write(cand("b1", OTHERS["tenant"], "Globex alice keeps no key"))
    mine = rt.forget(ALICE, "semantic", "spare_key", reason="asked", request_id="del-1")
    theirs = rt.forget(OTHERS["tenant"], "semantic", "spare_key", reason="asked",
                       request_id="del-1")
    assert mine.receipt_id != theirs.receipt_id
    # and a forgotten subject in one tenant does not block the same subject in another
    assert rt.write(cand("c1", OTHERS["user"], "Bob keeps his key on a hook")).outcome == "written"


VIEW_CALLS: dict[str, Callable[[MemoryRuntime, MemoryNamespace], Any]] = {
    "write": lambda r, ns: r.write(cand("x1", ns, "Planted through the wrong view")),
    "correct": lambda r, ns: r.correct(cand("x2", ns, "Corrected through the wrong view"),
                                       expected_record_id="rec-x"),
    "forget": lambda r, ns: r.forget(ns, "semantic", "spare_key", reason="wrong view"),
    "hide": lambda r, ns: r.hide(ns, "semantic", "spare_key"),
    "current": lambda r, ns: r.current(ns, "semantic", "spare_key"),
    "versions": lambda r, ns: r.versions(ns, "semantic", "spare_key"),
    "state": lambda r, ns: r.state(ns, "semantic", "spare_key"),
    "recall": lambda r, ns: r.recall(ns, "spare key flowerpot"),
    "resolve": lambda r, ns: r.resolve(ns, ["rec-x"]),
    "profile": lambda r, ns: r.profile(ns),
    "pending_reviews": lambda r, ns: r.pending_reviews(ns),
    "approve": lambda r, ns: r.approve("rev-x", reviewer="carol", namespace=ns),
}


@pytest.mark.parametrize("call", sorted(VIEW_CALLS))
def test_a_runtime_over_a_view_cannot_name_another_namespace(store: Store, call: str) -> None:
    """A framework hands a tenant ``MemoryRuntime(store.scoped(ns))``: naming another
    namespace in a call is refused, naming the field, and changes nothing."""
    root = MemoryRuntime(store, clock=lambda: T0)
    theirs = root.write(cand("b1", OTHERS["tenant"], "Globex alice keeps the key in a safe"))
    root.write(cand("b2", OTHERS["tenant"], "Globex alice may like safes", subject="decor",
                    kind="model"))
    before = (repos_of(store).governance.events(), root.pending_reviews(OTHERS["tenant"]),
              store.audit_trail.entries())
    view_rt = MemoryRuntime(store.scoped(ALICE), clock=lambda: T0)
    with pytest.raises(ValidationError, match="namespace tenant 'globex' does not match"):
        VIEW_CALLS[call](view_rt, OTHERS["tenant"])
    assert (repos_of(store).governance.events(), root.pending_reviews(OTHERS["tenant"]),
            store.audit_trail.entries()) == before
    assert root.current(OTHERS["tenant"], "semantic", "spare_key") == theirs.record
    # its own namespace still works through the view
    assert view_rt.write(cand("a1", ALICE)).outcome == "written"
    assert [i.content for i in view_rt.recall(ALICE, "spare key flowerpot").items] == [SECRET_TEXT]


LOOKALIKES = ["spare_key", "Spare-Key.", "spare key", "SPARE\u200b key", "sp\u0430re_key",
              "\uff53pare_key"]


def test_a_forgotten_memory_never_comes_back(store: Store, db: Path) -> None:
    rt = MemoryRuntime(store, clock=lambda: T0)
    v1 = rt.write(cand("a1", ALICE)).record
    assert v1 is not None
    queued = rt.correct(cand("a2", ALICE, "Alice may keep the key under the red pot",
                             kind="model"), expected_record_id=v1.record_id)
    assert queued.outcome == "review"
    backup = store.export()
    receipt = rt.forget(ALICE, "semantic", "spare_key", reason="user request")
    assert receipt.record_ids == (v1.record_id,)
    for i, subject in enumerate(LOOKALIKES):
        res = rt.write(cand(f"w{i}", ALICE, f"The key is back {i}", subject=subject))
        assert (res.outcome, res.reason) == ("rejected", "memory_deleted"), subject
        res = rt.correct(cand(f"c{i}", ALICE, f"The key moved {i}", subject=subject),
                         expected_record_id=v1.record_id)
        assert res.reason == "memory_deleted", subject
    with pytest.raises(GovernanceRefusal) as err:
        rt.approve(queued.review_id or "", reviewer="carol")
    assert err.value.reason == "review_not_pending"
    store.import_(backup)                # an older backup restored later
    rt.rebuild_projection()              # and the projection replayed
    assert _every_read(rt, ALICE, [v1.record_id]) == {**NOTHING, "versions": [
        v for v in rt.versions(ALICE, "semantic", "spare_key")], "state": "deleted"}
    assert all(v.content is None for v in rt.versions(ALICE, "semantic", "spare_key"))
    assert rt.write(cand("a1", ALICE)).reason == "memory_deleted"  # the original retry too
    store.close()
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())
    assert b"blue flowerpot" not in raw and b"red pot" not in raw


def _late_writer(db: str, i: int, barrier: Any, out: Any) -> None:
    store = Store(db)
    try:
        rt = MemoryRuntime(store)
        barrier.wait(timeout=60)
        results = []
        for j in range(8):
            cur = rt.current(ALICE, "semantic", "spare_key")
            if cur is None:
                res = rt.write(cand(f"p{i}-{j}", ALICE, f"Key location {i}-{j}"))
            else:
                res = rt.correct(cand(f"p{i}-{j}", ALICE, f"Key location {i}-{j}"),
                                 expected_record_id=cur.record_id)
            results.append((res.outcome, res.reason, rt.state(ALICE, "semantic", "spare_key")))
        out.put((i, results))
    finally:
        store.close()


def _forgetter(db: str, barrier: Any, out: Any) -> None:
    store = Store(db)
    try:
        rt = MemoryRuntime(store)
        barrier.wait(timeout=60)
        while rt.current(ALICE, "semantic", "spare_key") is None:
            pass
        out.put(("forget", rt.forget(ALICE, "semantic", "spare_key", reason="now").receipt_id))
    finally:
        store.close()


def test_writers_in_other_processes_cannot_outlive_a_forget(db: Path) -> None:
    with Store(db) as s:
        MemoryRuntime(s)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_late_writer, args=(str(db), i, barrier, out)) for i in range(3)]
    procs.append(ctx.Process(target=_forgetter, args=(str(db), barrier, out)))
    for p in procs:
        p.start()
    got = [out.get(timeout=90) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for who, results in got:
        if who == "forget":
            continue
        seen_deleted = False
        for _outcome, reason, state in results:
            if seen_deleted:  # once a writer has seen the tombstone, nothing it does lands
                assert reason == "memory_deleted", results
            seen_deleted = seen_deleted or state == "deleted"
    with Store(db) as s:
        rt = MemoryRuntime(s)
        assert rt.state(ALICE, "semantic", "spare_key") == "deleted"
        versions = rt.versions(ALICE, "semantic", "spare_key")
        assert versions and all(v.content is None for v in versions)
        receipt = rt.forget(ALICE, "semantic", "spare_key", reason="again")
        # every version ever committed is in the receipt: none slipped in after it
        assert set(receipt.record_ids) == {v.record_id for v in versions}
        assert rt.rebuild_projection()["active"] == 0


def test_tenants_writing_from_threads_on_one_store_stay_apart(store: Store) -> None:
    tenants = [MemoryNamespace(tenant=f"t{i}", user="u", agent="a") for i in range(6)]

    def work(ns: MemoryNamespace) -> None:
        rt = MemoryRuntime(store)
        for j in range(5):
            res = rt.write(cand(f"c{j}", ns, f"{ns.tenant} fact {j} about the spare key",
                                subject=f"fact_{j}"))
            assert res.outcome == "written", res
            seen = {i.content.split()[0] for i in rt.recall(ns, "spare key fact", k=50).items}
            assert seen == {ns.tenant}, seen

    run_threads(work, tenants, timeout=60)
    rt = MemoryRuntime(store)
    for ns in tenants:
        assert len(rt.profile(ns)) == 5


def test_another_users_episodes_do_not_move_my_ranking(tmp_path: Path) -> None:
    """Ranking statistics (document frequencies) come from the reader's own episodes."""
    def ranked(noise: int) -> list[tuple[str, float]]:
        with Store(tmp_path / f"r{noise}.db") as s:
            a, b = s.scoped({"user": "alice"}), s.scoped({"user": "bob"})
            for text in ["the beta deploy failed on friday", "the gamma deploy failed on monday",
                         "beta gamma notes", "gamma release checklist"]:
                a.record(text, "observation")
            for i in range(noise):
                b.record(f"beta beta beta item {i}", "observation")
            got = retrieve_relevant(a, None, "beta gamma deploy", max_episodes=4)
            return [(e.content, round(e.score, 9)) for e in got.episodes]

    assert ranked(0) == ranked(40)


@pytest.mark.parametrize("subject", ["...", "\u200b", "-_-", " . ", "\ufeff\u00ad"])
def test_a_subject_with_nothing_left_once_compared_is_refused(rt: MemoryRuntime,
                                                              store: Store, subject: str) -> None:
    """Such subjects all compare as one empty subject: one would overwrite or (forgotten)
    block every other."""
    before = repos_of(store).governance.events()
    with pytest.raises(ValidationError, match="empty once compared"):
        rt.write(cand("e1", ALICE, "Alice likes green tea", subject=subject))
    with pytest.raises(ValidationError, match="empty once compared"):
        rt.forget(ALICE, "semantic", subject, reason="probe")
    assert repos_of(store).governance.events() == before


def test_hide_takes_a_boolean_only(rt: MemoryRuntime) -> None:
    rt.write(cand("a1", ALICE))
    with pytest.raises(ValidationError, match="hidden must be True or False"):
        rt.hide(ALICE, "semantic", "spare_key", hidden="no")  # type: ignore[arg-type]
    assert rt.state(ALICE, "semantic", "spare_key") == "active"
