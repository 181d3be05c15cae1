"""The governed memory runtime: write gate, review queue, versions, tombstones, recall."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from anneal_memory import AuditTrail, GovernanceError, Store, ValidationError
from anneal_memory.governance import (
    REASONS,
    Authority,
    GovernanceRefusal,
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
    evaluate,
    scan_secrets,
)
from anneal_memory.storage import governance_sql as sql
from anneal_memory.testing import repos_of, unit_of

T0 = datetime(2026, 8, 1, 9, 0, tzinfo=timezone.utc)
USER = MemoryNamespace(tenant="acme", user="alice", agent="coder")
PRICING = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
PAYMENTS = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="payments")
BOB = MemoryNamespace(tenant="acme", user="bob", agent="coder", project="pricing")
GLOBEX = MemoryNamespace(tenant="globex", user="alice", agent="coder", project="pricing")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rt(store: Store, clock: Clock) -> MemoryRuntime:
    return MemoryRuntime(store, clock=clock)


def cand(cid: str = "c1", content: str = "Prefer Python for code examples", *,
         ns: MemoryNamespace = USER, kind: str = "user_message", mtype: str = "semantic",
         subject: str = "preferred_language", **kw) -> MemoryCandidate:
    return MemoryCandidate(cid, ns, mtype, subject, content, SourceRef(f"src-{cid}", kind), **kw)


def fake_secret() -> str:
    return "ghp_" + "A1b2C3d4" * 5


# ---------------------------------------------------------------------- write gate
def test_explicit_preference_is_written_as_version_one(rt: MemoryRuntime) -> None:
    res = rt.write(cand())
    assert (res.outcome, res.reason) == ("written", "accepted")
    rec = res.record
    assert rec.version == 1 and rec.supersedes is None
    assert rec.authority == Authority.USER_EXPLICIT
    assert rec.memory_id == cand().memory_id and rec.record_id != rec.memory_id
    assert rec.created_at.startswith("2026-08-01T09:00")
    assert rt.current(USER, "semantic", "preferred_language") == rec


@pytest.mark.parametrize("kwargs, reason", [
    ({"lifetime": "one_time"}, "one_time_content"),
    ({"lifetime": "task"}, "task_state_content"),
    ({"sensitivity": "secret"}, "sensitive_content"),
    ({"confidence": 0.2}, "low_confidence"),
    ({"content": "ok !"}, "low_value_content"),
])
def test_gate_rejections_write_nothing(rt: MemoryRuntime, store: Store, kwargs, reason) -> None:
    res = rt.write(cand(**kwargs))
    assert (res.outcome, res.reason) == ("rejected", reason)
    assert rt.current(USER, "semantic", "preferred_language") is None
    assert repos_of(store).governance.events() == []


def test_secret_scanner_catches_a_mislabelled_credential(rt: MemoryRuntime) -> None:
    res = rt.write(cand(content=f"Deploy retried with token {fake_secret()}",
                        sensitivity="internal", kind="tool_output"))
    assert res.reason == "sensitive_content"


def test_low_confidence_secret_is_still_sensitive(rt: MemoryRuntime) -> None:
    res = rt.write(cand(content="password: hunter2hunter2", confidence=0.1, lifetime="one_time"))
    assert res.reason == "sensitive_content"


@pytest.mark.parametrize("text, kind", [
    ("-----BEGIN RSA PRIVATE KEY-----", "private_key"),
    ("AKIA" + "ABCDEFGHIJKLMNOP", "aws_access_key"),
    ("https://admin:s3cretpass@db.example.com/x", "url_password"),
    ("Authorization: Bearer " + "abcDEF123456" * 3, "bearer_token"),
    ("OPENAI key sk-" + "abc123XYZ789" * 3, "api_key"),
    ("xoxb-" + "1234567890-abcdef", "slack_token"),
])
def test_scanner_names_the_kind_never_the_text(text: str, kind: str) -> None:
    assert kind in scan_secrets(text)


def test_scanner_leaves_ordinary_prose_alone() -> None:
    assert scan_secrets("Prefer Python; confirm before changing a public API") == []


def test_claimed_authority_beyond_the_source_is_rejected(rt: MemoryRuntime) -> None:
    for claim in ("user_explicit", "repository_verified", "human_reviewed"):
        res = rt.write(cand(f"c-{claim}", kind="tool_output", authority=claim))
        assert res.reason == "authority_exceeds_source", claim
    assert rt.current(USER, "semantic", "preferred_language") is None


def test_a_claim_may_lower_authority_to_an_inference(rt: MemoryRuntime) -> None:
    res = rt.write(cand(authority="model_inferred"))
    assert (res.outcome, res.reason) == ("review", "model_inferred_needs_review")


def test_duplicate_and_conflict(rt: MemoryRuntime) -> None:
    rt.write(cand())
    assert rt.write(cand("c2")).reason == "duplicate_memory"
    res = rt.write(cand("c3", "Prefer TypeScript for code examples"))
    assert res.reason == "conflict_requires_correction"
    assert rt.current(USER, "semantic", "preferred_language").content.endswith("Python for code examples")


def test_every_reason_returned_is_a_documented_code(rt: MemoryRuntime) -> None:
    c = cand()
    for current, deleted, mode in ((None, False, "write"), (None, True, "write"),
                                   (None, False, "correct")):
        assert evaluate(c, current=current, deleted=deleted, mode=mode).reason in REASONS


# ---------------------------------------------------------------------- idempotency
def test_retry_is_idempotent_and_changed_payload_conflicts(rt: MemoryRuntime, store: Store,
                                                           clock: Clock) -> None:
    first = rt.write(cand())
    clock.now += timedelta(minutes=5)
    again = rt.write(cand())
    assert again.outcome == "idempotent" and again.record == first.record
    changed = rt.write(cand(content="Prefer Python for all examples"))
    assert (changed.outcome, changed.reason) == ("rejected", "record_id_conflict")
    assert len(rt.versions(USER, "semantic", "preferred_language")) == 1


def test_record_id_is_namespaced(rt: MemoryRuntime) -> None:
    a = rt.write(cand()).record
    b = rt.write(cand(ns=BOB)).record
    assert a.memory_id != b.memory_id and a.record_id != b.record_id


def test_ids_come_from_a_digest_not_a_slug(rt: MemoryRuntime) -> None:
    a = rt.write(cand("c1", subject="首选语言")).record
    b = rt.write(cand("c2", subject="偏好框架", content="Prefer Django for web examples")).record
    assert a.memory_id != b.memory_id
    assert cand(subject="Preferred  Language").memory_id == cand(subject="preferred language").memory_id


# ---------------------------------------------------------------------- review queue
def test_review_then_approval_commits_as_human_reviewed(rt: MemoryRuntime) -> None:
    c = cand(kind="model", confidence=0.8, content="Prefers concise patch notes",
             subject="patch_notes")
    res = rt.write(c)
    assert res.outcome == "review" and res.review_id
    assert rt.write(c).review_id == res.review_id  # retry: same item, not two
    assert len(rt.pending_reviews(USER)) == 1
    assert rt.pending_reviews(BOB) == []
    assert rt.current(USER, "semantic", "patch_notes") is None
    done = rt.approve(res.review_id, reviewer="carol")
    assert done.outcome == "written" and done.record.authority == Authority.HUMAN_REVIEWED
    assert done.record.authority != Authority.REPOSITORY_VERIFIED
    assert rt.pending_reviews(USER) == []
    with pytest.raises(GovernanceRefusal) as exc:
        rt.approve(res.review_id, reviewer="carol")
    assert exc.value.reason == "review_not_pending"


def test_tool_observation_waits_for_review_and_can_be_rejected(rt: MemoryRuntime) -> None:
    res = rt.write(cand(kind="tool_output", content="Build uses Python 3.12 interpreter",
                        subject="build_python"))
    assert res.reason == "tool_observed_needs_review"
    rt.reject_review(res.review_id, reviewer="carol")
    assert rt.current(USER, "semantic", "build_python") is None
    with pytest.raises(ValidationError):
        rt.approve(res.review_id, reviewer=" ")


def test_approval_still_runs_the_other_gates(rt: MemoryRuntime) -> None:
    res = rt.write(cand(kind="model", confidence=0.9))
    rt.write(cand("c-user"))
    done = rt.approve(res.review_id, reviewer="carol")
    assert (done.outcome, done.reason) == ("rejected", "duplicate_memory")


# ---------------------------------------------------------------------- correct
def test_correction_is_a_new_version_and_a_stale_writer_is_refused(rt: MemoryRuntime) -> None:
    v1 = rt.write(cand()).record
    v2 = rt.correct(cand("c-ts", "Prefer TypeScript for code examples"),
                    expected_record_id=v1.record_id)
    assert v2.outcome == "written"
    assert (v2.record.version, v2.record.supersedes) == (2, v1.record_id)
    stale = rt.correct(cand("c-go", "Prefer Go for code examples"),
                       expected_record_id=v1.record_id)
    assert (stale.outcome, stale.reason) == ("rejected", "stale_expected_record")
    history = rt.versions(USER, "semantic", "preferred_language")
    assert [r.content for r in history] == ["Prefer Python for code examples",
                                            "Prefer TypeScript for code examples"]
    assert rt.current(USER, "semantic", "preferred_language").record_id == v2.record.record_id
    retry = rt.correct(cand("c-ts", "Prefer TypeScript for code examples"),
                       expected_record_id=v1.record_id)
    assert retry.outcome == "idempotent"


def test_correct_without_a_memory_or_with_bad_expectation(rt: MemoryRuntime) -> None:
    assert rt.correct(cand(), expected_record_id="rec-x").reason == "no_current_record"
    with pytest.raises(ValidationError):
        rt.correct(cand(), expected_record_id="")


# ---------------------------------------------------------------------- forget
def test_forget_stops_recall_blocks_appends_and_leaves_no_content(
        rt: MemoryRuntime, store: Store, db) -> None:
    v1 = rt.write(cand()).record
    rt.correct(cand("c-ts", "Prefer TypeScript for code examples"),
               expected_record_id=v1.record_id)
    assert rt.recall(USER, "TypeScript code examples").items
    receipt = rt.forget(USER, "semantic", "preferred_language", reason="user asked",
                        request_id="req-1")
    assert len(receipt.record_ids) == 2 and len(receipt.content_digests) == 2
    assert "TypeScript" not in json.dumps(receipt.to_dict())
    assert rt.recall(USER, "TypeScript Python code examples").items == []
    assert rt.resolve(USER, list(receipt.record_ids)) == []
    assert rt.state(USER, "semantic", "preferred_language") == "deleted"
    for res in (rt.write(cand("c-new")), rt.write(cand()),
                rt.correct(cand("c-x", "Prefer Rust"), expected_record_id=receipt.record_ids[-1])):
        assert res.reason == "memory_deleted"
    assert all(r.content is None for r in rt.versions(USER, "semantic", "preferred_language"))
    assert rt.forget(USER, "semantic", "preferred_language", reason="again") == receipt
    assert rt.forget(USER, "semantic", "preferred_language", reason="x",
                     request_id="req-1") == receipt
    store.close()
    raw = db.read_bytes() + (db.parent / (db.name + "-wal")).read_bytes() \
        if (db.parent / (db.name + "-wal")).exists() else db.read_bytes()
    assert b"Prefer TypeScript" not in raw


def test_forget_request_id_reused_for_another_memory(rt: MemoryRuntime) -> None:
    rt.write(cand())
    rt.write(cand("c2", "Likes ramen for lunch", subject="lunch"))
    rt.forget(USER, "semantic", "preferred_language", reason="x", request_id="r")
    with pytest.raises(GovernanceRefusal) as exc:
        rt.forget(USER, "semantic", "lunch", reason="x", request_id="r")
    assert exc.value.reason == "request_id_conflict"
    with pytest.raises(GovernanceError):
        rt.forget(USER, "semantic", "never_written", reason="x")


def test_forget_cancels_pending_reviews(rt: MemoryRuntime) -> None:
    rt.write(cand())
    queued = rt.write(cand("c-m", "Prefer Python 3 for examples", kind="model", confidence=0.9))
    assert queued.outcome == "review"
    rt.forget(USER, "semantic", "preferred_language", reason="user asked")
    assert rt.pending_reviews(USER) == []
    with pytest.raises(GovernanceRefusal):
        rt.approve(queued.review_id, reviewer="carol")


def test_replay_rebuilds_the_projection_and_never_resurrects(rt: MemoryRuntime,
                                                             store: Store) -> None:
    v1 = rt.write(cand()).record
    rt.correct(cand("c-ts", "Prefer TypeScript for code examples"), expected_record_id=v1.record_id)
    rt.write(cand("c-l", "Likes ramen for lunch", subject="lunch"))
    rt.forget(USER, "semantic", "lunch", reason="user asked")
    before = rt.profile(USER)
    with unit_of(store) as tx:
        tx.governance.clear_projection()
    assert rt.profile(USER) == {}
    assert rt.rebuild_projection() == {"active": 1, "deleted": 1, "events": 4}
    assert rt.profile(USER) == before
    assert set(before) == {"preferred_language"}
    assert before["preferred_language"]["version"] == 2
    assert rt.state(USER, "semantic", "lunch") == "deleted"


# ---------------------------------------------------------------------- states
def test_expiry_hiding_deletion_and_correction_are_distinct(rt: MemoryRuntime,
                                                            clock: Clock) -> None:
    rt.write(cand("c-trip", "Travelling in Singapore next week", subject="location",
                  valid_from=T0, expires_at=T0 + timedelta(days=7)))
    rt.write(cand("c-lunch", "Likes ramen for lunch", subject="lunch"))
    v1 = rt.write(cand()).record
    rt.correct(cand("c-ts", "Prefer TypeScript for code examples"), expected_record_id=v1.record_id)
    rt.write(cand("c-x", "Uses dark editor themes", subject="theme"))
    rt.forget(USER, "semantic", "theme", reason="asked")
    assert rt.hide(USER, "semantic", "lunch")
    clock.now = T0 + timedelta(days=8)
    states = {s: rt.state(USER, "semantic", s)
              for s in ("location", "lunch", "preferred_language", "theme", "unknown")}
    assert states == {"location": "expired", "lunch": "hidden", "preferred_language": "active",
                      "theme": "deleted", "unknown": "absent"}
    assert [r.version for r in rt.versions(USER, "semantic", "preferred_language")] == [1, 2]
    assert set(rt.profile(USER)) == {"preferred_language"}  # hidden, expired, deleted: out
    assert rt.recall(USER, "ramen lunch").items  # hiding is not forgetting
    assert rt.recall(USER, "Singapore").items == []
    assert rt.recall(USER, "Singapore", at=T0 + timedelta(days=1)).items


# ---------------------------------------------------------------------- recall
def seed_recall(rt: MemoryRuntime) -> None:
    rt.write(cand())
    rt.write(cand("c-api", "Confirm with the user before changing a public API", ns=PRICING,
                  kind="repository", mtype="procedural", subject="public_api"))
    rt.write(cand("c-lunch", "Likes ramen for lunch", subject="lunch"))
    rt.write(cand("c-globex", ns=GLOBEX))
    rt.write(cand("c-pay", "Confirm before changing a public API in payments", ns=PAYMENTS,
                  kind="repository", mtype="procedural", subject="public_api"))
    queued = rt.write(cand("c-secret", "Internal salary band notes", subject="salary",
                           sensitivity="confidential", kind="user_message"))
    assert queued.reason == "confidential_needs_review"
    assert rt.approve(queued.review_id, reviewer="carol").outcome == "written"


def test_recall_filters_scope_before_ranking_and_keeps_a_trace(rt: MemoryRuntime) -> None:
    seed_recall(rt)
    out = rt.recall(PRICING, "Python public API examples", k=2)
    assert [i.memory_type for i in out.items] == ["procedural", "semantic"] or \
        [i.memory_type for i in out.items] == ["semantic", "procedural"]
    assert all(PRICING.can_read(r.namespace) for r in out.records)
    seen = {t["memory_id"] for t in out.trace}
    foreign = {cand("c-globex", ns=GLOBEX).memory_id,
               cand("c-pay", ns=PAYMENTS, mtype="procedural", subject="public_api").memory_id}
    assert not seen & foreign  # never scored, never traced
    selected = [t for t in out.trace if t["stage"] == "selected"]
    assert [set(t["score"]) for t in selected] == [
        {"task_match", "authority", "recency", "confidence", "total"}] * 2
    assert {t["stage"] for t in out.trace} >= {"selected", "below_threshold"}
    text = out.render()
    assert "source: pricing" not in text and "reason: task_match=" in text


def test_recall_budget_sensitivity_and_type_filters(rt: MemoryRuntime) -> None:
    seed_recall(rt)
    assert len(rt.recall(PRICING, "Python public API examples", k=1).items) == 1
    assert rt.recall(USER, "salary band").items == []
    assert rt.recall(USER, "salary band", sensitivity=["internal", "confidential"]).items
    only = rt.recall(PRICING, "Python public API", memory_types=["procedural"])
    assert [i.memory_type for i in only.items] == ["procedural"]
    assert rt.recall(PRICING, "unrelated words entirely").items == []


def test_user_level_records_reach_projects_but_project_records_stay(rt: MemoryRuntime) -> None:
    seed_recall(rt)
    pricing = rt.profile(PRICING)
    assert "preferred_language" in pricing and pricing["preferred_language"]["scope"] == "user"
    user_only = rt.recall(USER, "public API changing")
    assert user_only.items == []
    assert rt.recall(BOB, "Python examples").items == []


def test_authority_and_recency_are_part_of_the_score(rt: MemoryRuntime, clock: Clock) -> None:
    rt.write(cand("c-old", "Use pytest fixtures for tests", subject="testing"))
    clock.now = T0 + timedelta(days=200)
    res = rt.write(cand("c-new", "Use pytest markers for tests", subject="markers",
                        kind="model", confidence=0.9))
    rt.approve(res.review_id, reviewer="carol")
    out = rt.recall(USER, "pytest tests", k=2)
    parts = {t["record_id"]: t["score"] for t in out.trace if t["stage"] == "selected"}
    scores = sorted(parts.values(), key=lambda s: s["authority"])
    assert scores[0]["authority"] == 2 and scores[0]["recency"] == 2
    assert scores[1]["authority"] == 3 and scores[1]["recency"] == 0


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("make", [
    lambda: MemoryNamespace.from_dict({"tenant": "a", "user": "u", "agent": "x", "team": "t"}),
    lambda: MemoryNamespace.from_dict({"tenant": "a", "user": "u"}),
    lambda: MemoryNamespace(tenant="", user="u", agent="a"),
    lambda: MemoryNamespace(tenant="a", user="u", agent="a", project=" p"),
    lambda: cand(subject="   "),
    lambda: cand(content=""),
    lambda: cand(valid_from=T0, expires_at=T0 - timedelta(days=1)),
    lambda: cand(confidence=1.5),
    lambda: cand(kind="rumour"),
    lambda: cand(mtype="feelings"),
    lambda: MemoryCandidate("c", {"tenant": "a", "user": "u", "agent": "x", "org": "o"},
                            "semantic", "s", "content here", SourceRef("s", "user_message")),
])
def test_bad_input_is_a_typed_error(make) -> None:
    with pytest.raises(ValidationError):
        make()


def test_bad_calls_write_nothing(rt: MemoryRuntime, store: Store) -> None:
    with pytest.raises(ValidationError):
        rt.write({"content": "Prefer Python"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        rt.forget(USER, "semantic", "", reason="x")
    with pytest.raises(ValidationError):
        rt.recall({"tenant": "a", "user": "u", "agent": "x", "team": "t"}, "q")
    with pytest.raises(ValidationError):
        rt.forget(USER, "semantic", "preferred_language", reason=" ")
    assert repos_of(store).governance.events() == []


# ---------------------------------------------------------------------- audit
def test_every_governance_audit_entry_names_its_namespace(store: Store, db, clock: Clock) -> None:
    rt = MemoryRuntime(store, clock=clock)
    v1 = rt.write(cand()).record
    rt.write(cand("c-skip", "Skip slow tests", lifetime="one_time"))
    q = rt.write(cand("c-m", "Prefers short answers", subject="answers", kind="model",
                      confidence=0.9))
    rt.approve(q.review_id, reviewer="carol")
    rt.correct(cand("c-ts", "Prefer TypeScript for code examples"), expected_record_id=v1.record_id)
    rt.correct(cand("c-go", "Prefer Go"), expected_record_id=v1.record_id)
    rt.forget(USER, "semantic", "preferred_language", reason="asked")
    entries = [e for e in store.audit_trail.entries() if e["event"].startswith("gov_")]
    events = {e["event"] for e in entries}
    assert {"gov_write", "gov_decision", "gov_review_queued", "gov_approve", "gov_correct",
            "gov_refused", "gov_forget", "gov_review_decided"} <= events
    # namespace ids, reviewers and the forget reason are salted hashes, like content
    hashed_ns = store.audit_trail.hash_label(USER.to_dict())
    assert all(e["data"]["namespace"] == hashed_ns for e in entries)
    text = json.dumps(entries)
    assert not any(word in text for word in ("TypeScript", USER.user, "carol", "asked"))
    assert AuditTrail.verify(db).valid


def test_a_non_sqlite_backend_is_refused_with_a_typed_error() -> None:
    with pytest.raises(GovernanceError):
        sql.ensure_schema(object())  # type: ignore[arg-type]


def test_a_review_of_another_namespace_cannot_be_decided_through_it(rt: MemoryRuntime,
                                                                   store: Store) -> None:
    res = rt.write(cand(kind="model", confidence=0.8, content="Prefers concise patch notes",
                        subject="patch_notes"))
    assert res.outcome == "review"
    for refused in (lambda: rt.approve(res.review_id, reviewer="mallory", namespace=BOB),
                    lambda: rt.reject_review(res.review_id, reviewer="mallory", namespace=BOB),
                    lambda: MemoryRuntime(store.scoped(BOB)).approve(res.review_id,
                                                                     reviewer="mallory")):
        with pytest.raises(GovernanceRefusal) as exc:
            refused()
        assert exc.value.reason == "unknown_review"  # no oracle: reads as an unknown id
    assert len(rt.pending_reviews(USER)) == 1
    done = rt.approve(res.review_id, reviewer="carol", namespace=USER)
    assert done.outcome == "written"
