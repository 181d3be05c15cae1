"""The governed runtime on every backend: the gate's reasons, idempotent retries, versions
with compare-and-set, tombstones, and recall that never crosses a namespace."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from anneal_memory import AuditTrail, GovernanceError, ReadOnlyStoreError, Store
from anneal_memory.governance import (
    REASONS,
    GovernanceRefusal,
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
)
from anneal_memory.testing import backend_of

USER = MemoryNamespace(tenant="acme", user="alice", agent="coder")
PRICING = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
PAYMENTS = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="payments")
BOB = MemoryNamespace(tenant="acme", user="bob", agent="coder", project="pricing")
GLOBEX = MemoryNamespace(tenant="globex", user="alice", agent="coder", project="pricing")
PAST = (datetime.now(timezone.utc) - timedelta(days=1)).isoformat()


def cand(cid: str, content: str, *, ns: MemoryNamespace = PRICING, subject: str = "language",
         kind: str = "user_message", memory_type: str = "semantic", **kw: object
         ) -> MemoryCandidate:
    return MemoryCandidate(cid, ns, memory_type, subject, content,  # type: ignore[arg-type]
                           SourceRef(f"{cid}#src", kind), **kw)  # type: ignore[arg-type]


@pytest.fixture
def rt(store: Store) -> MemoryRuntime:
    return MemoryRuntime(store)


def verify(location: str, store: Store) -> bool:
    return AuditTrail.verify(location if location.startswith("postgres") else store.path).valid


def test_the_gate_answers_every_case_with_its_reason(rt: MemoryRuntime) -> None:
    assert rt.write(cand("base", "Prefer Python for code examples")).reason == "accepted"
    cases = [
        (cand("k", "deploy with AKIAABCDEFGHIJKLMNOP now", subject="deploy"), "sensitive_content"),
        (cand("s", "the vault layout is documented", subject="vault", sensitivity="secret"),
         "sensitive_content"),
        (cand("o", "reply in French this once", subject="reply", lifetime="one_time"),
         "one_time_content"),
        (cand("t", "step three of the migration is running", subject="step", lifetime="task"),
         "task_state_content"),
        (cand("a", "Prefer Go for services", subject="services", kind="model",
              authority="user_explicit"), "authority_exceeds_source"),
        (cand("v", "ok", subject="ack"), "low_value_content"),
        (cand("c", "Prefer tabs over spaces", subject="indent", confidence=0.2), "low_confidence"),
        (cand("d", "Prefer Python for code examples"), "duplicate_memory"),
        (cand("x", "Prefer Rust for code examples"), "conflict_requires_correction"),
        (cand("e", "Sprint demo on Friday", subject="demo", expires_at=PAST),
         "expired_on_arrival"),
    ]
    got = [rt.write(c) for c, _r in cases]
    assert [(w.outcome, w.reason) for w in got] == [("rejected", r) for _c, r in cases]
    queued = [rt.write(cand("m", "Prefers short answers", subject="tone", kind="model")),
              rt.write(cand("w", "CI uses Python 3.11", subject="ci", kind="tool_output")),
              rt.write(cand("f", "Pricing runs on Postgres", subject="db",
                            sensitivity="confidential"))]
    assert [(w.outcome, w.reason) for w in queued] == [
        ("review", "model_inferred_needs_review"), ("review", "tool_observed_needs_review"),
        ("review", "confidential_needs_review")]
    assert {r for _c, r in cases} | {w.reason for w in queued} <= REASONS
    for subject in ("deploy", "vault", "reply", "step", "services", "ack", "indent", "demo"):
        assert rt.state(PRICING, "semantic", subject) == "absent"
    assert [v.content for v in rt.versions(PRICING, "semantic", "language")] == [
        "Prefer Python for code examples"]


def test_review_queue_approve_and_reject(rt: MemoryRuntime) -> None:
    first = rt.write(cand("m1", "Prefers short answers", subject="tone", kind="model"))
    again = rt.write(cand("m1", "Prefers short answers", subject="tone", kind="model"))
    assert again.review_id == first.review_id
    assert [r["review_id"] for r in rt.pending_reviews(PRICING)] == [first.review_id]
    assert rt.pending_reviews(BOB) == [] and rt.pending_reviews(PAYMENTS) == []
    res = rt.approve(first.review_id, reviewer="carol")
    assert (res.outcome, res.reason) == ("written", "human_reviewed")
    assert res.record is not None and res.record.authority.value == "human_reviewed"
    with pytest.raises(GovernanceRefusal) as exc:
        rt.approve(first.review_id, reviewer="carol")
    assert exc.value.reason == "review_not_pending"
    other = rt.write(cand("m2", "Likes emoji", subject="emoji", kind="model"))
    rt.reject_review(other.review_id, reviewer="carol")
    assert rt.pending_reviews(PRICING) == [] and rt.state(PRICING, "semantic", "emoji") == "absent"


def test_a_retry_is_idempotent_and_a_reused_id_conflicts(rt: MemoryRuntime,
                                                          location: str, store: Store) -> None:
    c = cand("c1", "Prefer Python for code examples")
    first = rt.write(c)
    retry = rt.write(c)
    assert (retry.outcome, retry.reason) == ("idempotent", "idempotent")
    assert retry.record == first.record
    clash = rt.write(cand("c1", "Prefer Kotlin for code examples"))
    assert (clash.outcome, clash.reason) == ("rejected", "record_id_conflict")
    assert [v.content for v in rt.versions(PRICING, "semantic", "language")] == [c.content]
    # the same request id in another namespace is another request
    assert rt.write(cand("c1", c.content, ns=BOB)).reason == "accepted"
    assert verify(location, store)


def test_correction_is_compare_and_set(rt: MemoryRuntime) -> None:
    v1 = rt.write(cand("c1", "Prefer Python for code examples")).record
    assert v1 is not None
    v2 = rt.correct(cand("c2", "Prefer TypeScript for code examples"),
                    expected_record_id=v1.record_id).record
    assert v2 is not None and (v2.version, v2.supersedes) == (2, v1.record_id)
    stale = rt.correct(cand("c3", "Prefer Go for code examples"),
                       expected_record_id=v1.record_id)
    assert (stale.outcome, stale.reason) == ("rejected", "stale_expected_record")
    v3 = rt.correct(cand("c3", "Prefer Go for code examples"), expected_record_id=v2.record_id)
    assert v3.reason == "accepted" and v3.record is not None and v3.record.version == 3
    assert [v.version for v in rt.versions(PRICING, "semantic", "language")] == [1, 2, 3]
    assert rt.current(PRICING, "semantic", "language") == v3.record
    none = rt.correct(cand("n1", "Prefer vim keybindings", subject="editor"),
                      expected_record_id=v1.record_id)
    assert none.reason == "no_current_record"
    assert rt.rebuild_projection() == {"active": 1, "deleted": 0, "events": 3}
    assert rt.current(PRICING, "semantic", "language") == v3.record


def test_forget_blocks_later_appends_and_recall(rt: MemoryRuntime, store: Store,
                                                location: str) -> None:
    c = cand("c1", "Prefer Python for pricing scripts")
    v1 = rt.write(c).record
    assert v1 is not None
    v2 = rt.correct(cand("c2", "Prefer Julia for pricing scripts"),
                    expected_record_id=v1.record_id).record
    assert v2 is not None
    queued = rt.write(cand("m1", "Prefer R for pricing scripts", kind="model"))
    receipt = rt.forget(PRICING, "semantic", "language", reason="user asked",
                        request_id="req-1")
    assert receipt.record_ids == (v1.record_id, v2.record_id)
    assert len(receipt.content_digests) == 2 and "Julia" not in json.dumps(receipt.to_dict())
    assert rt.state(PRICING, "semantic", "language") == "deleted"
    assert rt.recall(PRICING, "pricing scripts", k=5).records == []
    assert rt.resolve(PRICING, [v1.record_id, v2.record_id]) == []
    later = [rt.write(c), rt.write(cand("c9", "Prefer Zig for pricing scripts")),
             rt.correct(cand("c8", "Prefer C for pricing scripts"),
                        expected_record_id=v2.record_id)]
    assert [(r.outcome, r.reason) for r in later] == [("rejected", "memory_deleted")] * 3
    assert rt.pending_reviews(PRICING) == []
    with pytest.raises(GovernanceRefusal) as exc:
        rt.approve(queued.review_id, reviewer="carol")
    assert exc.value.reason == "review_not_pending"
    assert [v.content for v in rt.versions(PRICING, "semantic", "language")] == [None, None]
    assert rt.forget(PRICING, "semantic", "language", reason="again",
                     request_id="req-1") == receipt
    rt.write(cand("d1", "Deploys happen on Tuesdays", subject="deploys"))
    with pytest.raises(GovernanceRefusal) as exc:
        rt.forget(PRICING, "semantic", "deploys", reason="x", request_id="req-1")
    assert exc.value.reason == "request_id_conflict"
    assert rt.rebuild_projection()["deleted"] == 1
    assert rt.state(PRICING, "semantic", "language") == "deleted"
    trail = json.dumps(store.audit_trail.entries())
    assert "Julia" not in trail and "Python" not in trail
    assert verify(location, store)


def test_recall_never_crosses_a_namespace(rt: MemoryRuntime) -> None:
    writes = {"pricing": PRICING, "user": USER, "payments": PAYMENTS, "bob": BOB,
              "globex": GLOBEX}
    ids = {}
    for name, ns in writes.items():
        rec = rt.write(cand(f"{name}-1", f"{name} cache TTL is sixty seconds", ns=ns,
                            subject="cache ttl")).record
        assert rec is not None
        ids[rec.memory_id] = name
    expect = {PRICING: {"pricing", "user"}, PAYMENTS: {"payments", "user"}, USER: {"user"},
              BOB: {"bob"}, GLOBEX: {"globex"}}
    for reader, visible in expect.items():
        out = rt.recall(reader, "cache ttl seconds", k=10)
        assert {ids[r.memory_id] for r in out.records} == visible, reader
        assert {ids[t["memory_id"]] for t in out.trace} == visible, reader
        assert set(rt.profile(reader)) == {"cache ttl"}
    assert rt.profile(PRICING)["cache ttl"]["scope"] == "project"
    assert rt.hide(PRICING, "semantic", "cache ttl")
    assert rt.profile(PRICING)["cache ttl"]["scope"] == "user"
    assert len(rt.recall(PRICING, "cache ttl", k=10).records) == 2  # hidden is not deleted


def test_the_governance_tables_are_created_once_and_idempotently(open_store: Callable[..., Store]
                                                                 ) -> None:
    from anneal_memory.storage import governance_sql as sql

    a, b = open_store(), open_store()
    MemoryRuntime(a).write(cand("c1", "Prefer Python for code examples"))
    d = sql.dialect(backend_of(b))
    with backend_of(b).transaction():
        d.create_schema(backend_of(b))
        d.create_schema(backend_of(b))
    assert sql.has_schema(backend_of(b))
    assert MemoryRuntime(b).current(PRICING, "semantic", "language") is not None


def test_read_only_stores_read_and_refuse_writes(open_store: Callable[..., Store]) -> None:
    plain = open_store()
    plain.record("an episode", "observation")
    with pytest.raises(GovernanceError):
        MemoryRuntime(open_store(read_only=True))
    MemoryRuntime(plain).write(cand("c1", "Prefer Python for code examples"))
    ro = MemoryRuntime(open_store(read_only=True))
    assert [r.subject for r in ro.recall(PRICING, "python code", k=3).records] == ["language"]
    with pytest.raises(ReadOnlyStoreError):
        ro.write(cand("c2", "Prefer tabs", subject="indent"))
