"""The Links and Wraps roles hold their own SQL (storage/roles.py), scoped by construction,
and return named rows; the Episodes role's pair results have names too.

One test per family of moved methods (supersessions, derivations, tombstones, wraps,
pattern history, drift probes): two namespaces each hold the same kind of rows, and the
role built for one sees and changes only its own (each fails when the role's scope
filter is dropped). Real SQLite files throughout (``storage.open``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from anneal_memory import storage
from anneal_memory.storage.base import (
    KEEP,
    Backend,
    EpisodeRow,
    RankedPage,
    Scope,
    SearchFilters,
    SearchPage,
)
from anneal_memory.storage.rows import (
    DerivationRow,
    LinkRow,
    OpenWrapRow,
    PatternRow,
    ProbeRow,
    Source,
    Successor,
    TombstoneRow,
    WordCounts,
    WrapCounts,
    WrapRow,
)

ALICE = Scope("alice", None)
BOB = Scope("bob", None)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[storage.Database]:
    database = storage.open(tmp_path / "links_wraps.db")
    yield database
    database.close()


def _row(eid: str, text: str = "a note about tea") -> EpisodeRow:
    return EpisodeRow(eid, "2026-01-01T00:00:00+00:00", "observation", text, "agent", None,
                      None, "agent", None, None)


def _episodes(db: storage.Database) -> None:
    """Two episodes in each of alice and bob (``a1``, ``a2``; ``b1``, ``b2``)."""
    with db.unit():
        for scope in (ALICE, BOB):
            p = str(scope.owner)[0]
            db.roles(scope).episodes.insert_episodes([_row(f"{p}1"), _row(f"{p}2")])


def _pattern(name: str) -> PatternRow:
    return PatternRow(name, 2, 2, "2026-01-01", "2026-01-02", "2026-01-03", ["why"],
                      [{"level": 2, "ids": ["a1"], "rule": "bare"}])


def test_supersessions_list_only_links_the_scope_may_read(db: storage.Database) -> None:
    _episodes(db)
    with db.unit():
        for p in "ab":
            db.roles().links.add_supersession(f"{p}1", f"{p}2", "correction", f"2026-01-0{int(p == 'b')}")
    alice, bob, root = db.roles(ALICE).links, db.roles(BOB).links, db.roles().links
    assert alice.all_supersessions() == [LinkRow("a1", "a2", "correction", "2026-01-00")]
    assert [link.old_id for link in bob.all_supersessions()] == ["b1"]
    assert alice.count_superseded() == 1 and len(root.all_supersessions()) == 2
    assert root.count_superseded() == 2
    # the links of ids the caller has read: named rows, read positionally as before
    (succ,) = alice.supersessions_of(["a1"])["a1"]
    assert isinstance(succ, Successor) and succ.new_id == "a2" and tuple(succ) == (
        "a2", "correction", "2026-01-00")
    with db.unit():
        assert alice.delete_supersessions_touching(["a2"]) == [("a1", "a2", "correction")]
    assert bob.count_superseded() == 1 and alice.count_superseded() == 0


def test_derivations_list_only_the_scopes_derived_episodes(db: storage.Database) -> None:
    _episodes(db)
    with db.unit():
        db.roles(ALICE).links.add_derivations("a2", ["a1"])
        db.roles(BOB).links.add_derivations("b2", ["b1"], pinned_trust="tool")
    alice, bob = db.roles(ALICE).links, db.roles(BOB).links
    assert alice.all_derivations() == [DerivationRow("a2", "a1", None)]
    assert bob.all_derivations() == [DerivationRow("b2", "b1", "tool")]
    assert len(db.roles().links.all_derivations()) == 2
    assert bob.derivations_of(["b2"]) == {"b2": [Source("b1", "tool")]}
    assert bob.derivations_of(["b2"])["b2"][0].removed_trust == "tool"
    assert alice.link_tables_used() == (False, True)  # no supersession anywhere yet


def test_tombstones_are_written_and_read_in_the_roles_namespace(db: storage.Database) -> None:
    with db.unit():
        for scope in (ALICE, BOB):
            db.roles(scope).links.add_tombstone(f"gone-{scope.owner}", "observation",
                                                "2026-01-01", "h", "2026-01-02", "deleted",
                                                "agent")
    alice, root = db.roles(ALICE).links, db.roles().links
    assert alice.tombstones() == {"gone-alice": TombstoneRow(
        "gone-alice", "observation", "2026-01-01", "h", "2026-01-02", "deleted", "agent",
        "alice", None)}
    assert alice.tombstones(["gone-bob"]) == {} and alice.count_tombstones() == 1
    assert set(root.tombstones()) == {"gone-alice", "gone-bob"}
    assert root.count_tombstones() == 2
    assert root.tombstones(["gone-bob"])["gone-bob"].ns_owner == "bob"


def test_each_namespace_has_its_own_wraps(db: storage.Database) -> None:
    _episodes(db)
    with db.unit():
        for scope in (ALICE, BOB):
            db.roles(scope).wraps.insert_wrap("2026-01-01", f"tok-{scope.owner}", None,
                                              [f"{str(scope.owner)[0]}1"], "2026-01-01")
    alice, bob = db.roles(ALICE).wraps, db.roles(BOB).wraps
    w = alice.open_wrap()
    assert isinstance(w, OpenWrapRow) and w.token == "tok-alice" and w.episode_ids == ["a1"]
    assert w._asdict() == {"id": w.id, "started_at": "2026-01-01", "token": "tok-alice",
                           "session_id": None, "episode_ids": ["a1"], "today": "2026-01-01"}
    with db.unit():
        db.roles(ALICE).episodes.mark_wrapped(["a1"], w.id)
        alice.close_wrap(w.id, "saved", "2026-01-02", chars=10, episodes_compressed=1,
                         metrics={"patterns_extracted": 0})
    assert alice.open_wrap() is None and bob.open_wrap().token == "tok-bob"  # type: ignore[union-attr]
    assert alice.wrap_history() == [WrapRow(w.id, "2026-01-01", "2026-01-02", 10, 1,
                                            {"patterns_extracted": 0}, None)]
    assert alice.wrap_history(1)[0]._asdict()["wrapped_at"] == "2026-01-02"
    assert bob.wrap_history() == [] and bob.wrap_counts() == WrapCounts(0, None)
    assert alice.wrap_counts() == WrapCounts(1, "2026-01-02")
    assert alice.wrapped_ids_before(w.id + 10) == {"a1"} and bob.wrapped_ids_before(w.id + 10) == set()
    assert db.roles().wraps.wrap_totals().open == 1


def test_each_namespace_has_its_own_pattern_history(db: storage.Database) -> None:
    with db.unit():
        db.roles(ALICE).wraps.upsert_pattern(_pattern("tea"))
        db.roles(BOB).wraps.upsert_pattern(_pattern("tea")._replace(level=3))
        db.roles(ALICE).wraps.upsert_pattern(_pattern("tea")._replace(level=1))  # replaces
    alice, bob = db.roles(ALICE).wraps, db.roles(BOB).wraps
    assert alice.pattern_history() == {"tea": _pattern("tea")._replace(level=1)}
    assert bob.pattern_history()["tea"].level == 3
    assert bob.pattern_history()["tea"].grounding == [{"level": 2, "ids": ["a1"], "rule": "bare"}]
    with db.unit():
        assert alice.delete_pattern("tea") == 1 and alice.delete_pattern("tea") == 0
    assert alice.pattern_history() == {} and list(bob.pattern_history()) == ["tea"]
    with db.unit():
        db.roles().meta.set_meta("pattern_history_started@bob", "2026-01-01")
    assert bob.has_pattern_history() and not alice.has_pattern_history()


def test_each_namespace_has_its_own_drift_probes(db: storage.Database) -> None:
    with db.unit():
        for scope in (ALICE, BOB):
            db.roles(scope).wraps.insert_probe(ProbeRow(
                f"p-{scope.owner}", "fact", None, None, f"{scope.owner} drinks tea", None,
                "2026-01-01"))
        db.roles(ALICE).wraps.update_probe("p-alice", "held", "found", 7)
    alice, bob = db.roles(ALICE).wraps, db.roles(BOB).wraps
    assert alice.probes() == [ProbeRow("p-alice", "fact", None, None, "alice drinks tea", None,
                                       "2026-01-01", "held", "found", 7)]
    assert [p.id for p in bob.probes()] == ["p-bob"] and bob.probes()[0].last_status is None
    with db.unit():
        assert alice.delete_probe("p-bob") == 0 and bob.delete_probe("p-bob") == 1
    assert bob.probes() == [] and len(alice.probes()) == 1


def test_the_episode_roles_pair_results_have_names(db: storage.Database) -> None:
    _episodes(db)
    episodes = db.roles(ALICE).episodes
    page = episodes.search(SearchFilters(), phrase="tea")
    assert isinstance(page, SearchPage) and page.total == 2
    assert sorted(r.id for r, _score in page.hits) == ["a1", "a2"]
    hits, total = episodes.search(SearchFilters(), words=["tea"], limit=1)
    assert total == 2 and len(hits) == 1  # unpacked as the pair it was
    ranked = episodes.ranked_ids(SearchFilters(), ["tea"], 10)
    assert isinstance(ranked, RankedPage) and ranked.total == 2 and len(ranked.hits) == 2
    assert episodes.ranked_ids(SearchFilters(), [], 10) == RankedPage([], 0)
    counts = episodes.word_counts(SearchFilters(), ["tea", "coffee"], 100)
    assert isinstance(counts, WordCounts) and counts.per_word == {"tea": 2, "coffee": 0}
    assert counts.total == 2  # alice's two, not bob's


def test_update_episode_takes_named_fields(db: storage.Database) -> None:
    _episodes(db)
    alice = db.roles(ALICE).episodes
    with db.unit():
        alice.update_episode("a1", state_key="drink")
        alice.update_episode("a1", trust="operator")  # the state key is kept
    row = alice.get_episodes(["a1"])["a1"]
    assert (row.trust, row.state_key) == ("operator", "drink")
    with db.unit():
        alice.update_episode("a1", state_key=None, trust=KEEP)  # None clears it
        alice.update_episode("a1")  # nothing to change: nothing changes
    row = alice.get_episodes(["a1"])["a1"]
    assert (row.trust, row.state_key) == ("operator", None)
    with pytest.raises(TypeError), db.unit():
        alice.update_episode("a1", content="forged")  # type: ignore[call-arg]
    assert alice.get_episodes(["a1"])["a1"].content == "a note about tea"


def test_the_backend_no_longer_holds_link_or_wrap_methods(db: storage.Database) -> None:
    for name in ("add_supersession", "supersessions_of", "tombstones", "open_wrap",
                 "wrap_history", "pattern_history", "probes", "wrap_totals"):
        assert not hasattr(Backend, name), name
        assert not hasattr(db.connection, name), name
