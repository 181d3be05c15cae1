"""The namespace-scoped Store view: stamped writes, every read path filtered in SQL."""

from __future__ import annotations

import json

import pytest

from anneal_memory import (
    GovernanceError,
    Store,
    ValidationError,
    prepare_wrap,
    retrieve_relevant,
    validated_save_continuity,
)
from anneal_memory.audit import AuditTrail
from anneal_memory.governance import NS_META_KEY, MemoryNamespace, ScopedStore, scoped
from anneal_memory.testing import backend_of

from wraphelp import doc

ALICE_PRICING = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
ALICE_PAYMENTS = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="payments")
ALICE = MemoryNamespace(tenant="acme", user="alice", agent="coder")
BOB_PRICING = MemoryNamespace(tenant="acme", user="bob", agent="coder", project="pricing")
GLOBEX = MemoryNamespace(tenant="globex", user="alice", agent="coder", project="pricing")
REVIEWER = MemoryNamespace(tenant="acme", user="alice", agent="reviewer", project="pricing")


@pytest.fixture
def views(store: Store) -> dict[str, ScopedStore]:
    v = {name: scoped(store, ns) for name, ns in (
        ("pricing", ALICE_PRICING), ("payments", ALICE_PAYMENTS), ("alice", ALICE),
        ("bob", BOB_PRICING), ("globex", GLOBEX), ("reviewer", REVIEWER))}
    v["pricing"].record("pricing cache invalidation bug in the quote service", "observation")
    v["pricing"].record("decided to keep the pricing cache TTL at 60s", "decision")
    v["payments"].record("payments cache invalidation bug in the ledger", "observation")
    v["alice"].record("alice prefers Python for cache examples", "context")
    v["bob"].record("bob secret cache invalidation notes", "observation")
    v["globex"].record("globex cache invalidation bug, same words", "observation")
    v["reviewer"].record("reviewer agent cache invalidation opinion", "observation")
    store.record("unscoped cache invalidation note from the host", "observation")
    return v


def test_writes_carry_the_namespace_in_columns_and_it_cannot_be_forged(views, store: Store) -> None:
    ep = views["pricing"].record("stamped", "observation", metadata={"k": 1})
    assert ep.metadata == {"k": 1}
    row = backend_of(store).get_episodes([ep.id])[ep.id]
    assert (row.ns_owner, row.ns_project) == (ALICE_PRICING.owner, "pricing")
    with pytest.raises(ValidationError):
        views["pricing"].record("forged", "observation",
                                metadata={NS_META_KEY: GLOBEX.to_dict()})


def test_keyword_recall_sees_only_its_namespace(views, store: Store) -> None:
    got = views["pricing"].recall(keyword="cache invalidation")
    texts = sorted(e.content for e in got.episodes)
    assert texts == ["pricing cache invalidation bug in the quote service"]
    words = views["pricing"].recall(keyword="cache bug ledger globex")
    assert {e.content.split()[0] for e in words.episodes} == {"pricing", "decided", "alice"}
    assert got.total_matching == 1
    assert store.recall(keyword="cache invalidation").total_matching == 6


def test_user_level_episodes_reach_projects_not_the_reverse(views) -> None:
    pricing = {e.content.split()[0] for e in views["pricing"].recall().episodes}
    assert pricing == {"pricing", "decided", "alice"}
    assert {e.content.split()[0] for e in views["alice"].recall().episodes} == {"alice"}
    assert {e.content.split()[0] for e in views["payments"].recall().episodes} == {
        "payments", "alice"}


def test_retrieve_relevant_ranks_only_scoped_episodes(views) -> None:
    res = retrieve_relevant(views["pricing"], None, "cache invalidation bug", max_episodes=10)
    firsts = {e.content.split()[0] for e in res.episodes}
    assert firsts and firsts <= {"pricing", "decided", "alice"}


def test_get_delete_and_links_refuse_other_namespaces(views, store: Store) -> None:
    theirs = views["bob"].recall().episodes[0]
    assert views["pricing"].get(theirs.id) is None
    assert views["pricing"].delete(theirs.id) is False
    assert store.get(theirs.id) is not None
    with pytest.raises(Exception):
        views["pricing"].record("replaces bob", "observation", supersedes=[theirs.id])
    assert store.get(theirs.id).superseded_by is None


def test_status_counts_and_tombstones_are_scoped(views, store: Store) -> None:
    st = views["pricing"].status()
    # it reads its user's user-level episode, but wraps only what it wrote itself
    assert st.total_episodes == 3 and st.episodes_since_wrap == 2
    assert st.episodes_by_type == {"observation": 1, "decision": 1, "context": 1}
    mine = views["pricing"].recall(keyword="quote service").episodes[0]
    assert views["pricing"].delete(mine.id)
    assert views["pricing"].status().tombstone_count == 1
    assert views["bob"].status().tombstone_count == 0
    assert store.status().total_episodes == 7


def test_export_holds_only_the_namespace(views) -> None:
    data = views["pricing"].export()
    firsts = sorted(e["content"].split()[0] for e in data["episodes"])
    assert firsts == ["alice", "decided", "pricing"]
    blob = json.dumps(data)
    for other in ("bob secret", "globex", "payments cache", "unscoped", "reviewer agent"):
        assert other not in blob
    with pytest.raises(GovernanceError):
        views["pricing"].import_(data)


def test_wrap_package_is_scoped_and_continuity_is_per_namespace(views, store: Store) -> None:
    w = prepare_wrap(views["pricing"])
    assert w["status"] == "ready"
    firsts = sorted(e["content"].split()[0] for e in w["package"]["episode_list"])
    assert firsts == ["decided", "pricing"]  # the user-level episode is the user-level wrap's
    assert views["alice"].status().episodes_since_wrap == 1
    validated_save_continuity(views["pricing"], doc(), wrap_token=w["wrap_token"])
    assert views["pricing"].load_continuity() is not None
    assert store.load_continuity() is None and views["bob"].load_continuity() is None
    assert views["pricing"].continuity_path != views["bob"].continuity_path
    assert views["pricing"].status().episodes_since_wrap == 0
    assert views["bob"].status().episodes_since_wrap == 1


def test_audit_entries_from_a_view_carry_the_namespace(views, store: Store) -> None:
    entries = [e for e in store.audit_trail.entries() if e["event"] == "record"]
    stamped = [e for e in entries if "namespace" in e["data"]]
    assert len(stamped) == 7 and len(entries) == 8
    assert {json.dumps(e["data"]["namespace"], sort_keys=True) for e in stamped} >= {
        json.dumps(store.audit_trail.hash_label(ALICE_PRICING.to_dict()), sort_keys=True)}
    assert not any("alice" in json.dumps(e["data"]) for e in stamped)


def test_a_views_trail_is_the_parents_seen_from_a_namespace(views, store: Store) -> None:
    """A view writes through the parent's own trail (one set of pending entries, mirror
    state and switches, not a copy), stamping its namespace on what it appends."""
    trail, seen = store.audit_trail, views["pricing"].audit_trail
    assert isinstance(seen, AuditTrail) and seen is not trail
    before = len(trail.entries())
    views["pricing"].record("through the view", "observation")
    assert len(trail.entries()) == before + 1
    assert trail.entries()[-1]["data"]["namespace"] == trail.hash_label(ALICE_PRICING.to_dict())
    trail.enabled = False  # the parent's switch is the view's
    try:
        assert seen.enabled is False
        views["pricing"].record("not audited", "observation")
        assert len(trail.entries()) == before + 1
    finally:
        trail.enabled = True


def test_closing_a_view_leaves_the_parent_open(views, store: Store) -> None:
    with views["pricing"] as v:
        v.record("inside", "observation")
    assert store.status().total_episodes == 9
    with pytest.raises(ValidationError):
        ScopedStore(views["pricing"], ALICE)
    with pytest.raises(ValidationError):
        scoped(store, {"tenant": "acme", "user": "alice", "agent": "coder", "team": "x"})


def test_every_backend_method_is_classified_for_scoped_views() -> None:
    # A backend member that is neither defined on the scoped backend (passing the view's
    # scope) nor declared namespace-neutral is refused through a view; a method that
    # takes a scope must never be forwarded unscoped.
    import inspect

    from anneal_memory.storage.scoped import NEUTRAL, ScopedBackend
    from anneal_memory.storage.sqlite import SQLiteBackend

    public = {n for n, f in inspect.getmembers(SQLiteBackend) if not n.startswith("_")
              and (inspect.isfunction(f) or isinstance(f, property))}
    scoped_here = {n for n in vars(ScopedBackend) if not n.startswith("_")}
    assert public - scoped_here - NEUTRAL == set()
    takes_scope = {n for n in public if inspect.isfunction(getattr(SQLiteBackend, n))
                   and "scope" in inspect.signature(getattr(SQLiteBackend, n)).parameters}
    assert takes_scope and not takes_scope & NEUTRAL
    assert takes_scope <= scoped_here


def test_effective_trust_reads_only_the_views_own_episodes(views: dict[str, ScopedStore]) -> None:
    """A view asking the trust of another user's episode id learns nothing of it (not even
    that it exists); its own episodes are answered."""
    bob_id = views["bob"].recall().episodes[0].id
    own = views["pricing"].recall().episodes[0].id
    assert views["pricing"].effective_trust_map([bob_id, own]) == {own: "agent"}
    assert views["bob"].effective_trust_map([bob_id]) == {bob_id: "agent"}
