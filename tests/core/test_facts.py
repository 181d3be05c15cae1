"""Changed facts and provenance: supersession, state keys, trust classes, scored recall."""

from __future__ import annotations

import random

import pytest

from anneal_memory import (
    EpisodeNotFoundError,
    Store,
    SupersessionError,
    TrustError,
    ValidationError,
    prepare_wrap,
    retrieve_relevant,
)


def test_explicit_supersession_hides_old(store: Store) -> None:
    old = store.record("The team standup is at 9am in room B", "context")
    new = store.record("The team standup moved to 10am in room B", "context", supersedes=[old.id])
    hits = store.recall(keyword="standup")
    assert [e.id for e in hits.episodes] == [new.id]
    shown = store.recall(keyword="standup", include_superseded=True).episodes
    assert {e.id: e.superseded_by for e in shown}[old.id] == new.id
    assert store.get(old.id).superseded_by == new.id


@pytest.mark.parametrize("case", ["unknown", "self", "newer", "unrelated", "empty"])
def test_bad_links_record_nothing(store: Store, case: str) -> None:
    base = store.record("The deploy window is Friday afternoon", "context",
                        timestamp="2026-05-01T00:00:00Z")
    later = store.record("The deploy window is Friday evening now", "context",
                         timestamp="2026-07-01T00:00:00Z")
    n = store.status().total_episodes
    kw = {"unknown": dict(supersedes=["ffffffff"]),
          "self": dict(supersedes=[later.id], timestamp="2026-03-01T00:00:00Z"),
          "newer": dict(supersedes=[later.id], timestamp="2026-06-01T00:00:00Z"),
          "unrelated": dict(supersedes=[base.id]),
          "empty": dict(supersedes=[""])}[case]
    text = ("Lunch menu has tacos and soup today" if case == "unrelated"
            else "The deploy window is Friday morning")
    with pytest.raises((SupersessionError, ValidationError)):
        store.record(text, "context", **kw)
    assert store.status().total_episodes == n


def test_unsupersede_restores(store: Store) -> None:
    old = store.record("Budget for Q3 is 40k dollars", "context")
    new = store.record("Budget for Q3 is 55k dollars after review", "context", supersedes=[old.id])
    assert store.unsupersede(old_id=old.id, new_id=new.id)
    assert {e.id for e in store.recall(keyword="Budget").episodes} == {old.id, new.id}
    assert store.unsupersede(old_id=old.id, new_id=new.id) is False  # no such link any more


def test_state_key_newest_wins_and_backdated_goes_to_history(store: Store) -> None:
    a = store.record("I've been based in Seattle for years", "context", state_key="user.home_city",
                     timestamp="2025-01-01T00:00:00Z")
    b = store.record("Settled into my new place in Austin", "context", state_key="user.home_city",
                     timestamp="2026-01-01T00:00:00Z")
    c = store.record("Lived in Denver for a while", "context", state_key="user.home_city",
                     timestamp="2024-01-01T00:00:00Z")
    live = {e.id for e in store.recall().episodes}
    assert b.id in live and a.id not in live and c.id not in live
    report = store.state_report("user.home_city")[0]
    assert report["current"]["id"] == b.id
    assert [h["id"] for h in report["history"]] == [a.id, c.id]
    cleared = store.clear_state_key(b.id)
    assert cleared["key"] == "user.home_city" and [a.id, b.id] in cleared["removed"]
    assert store.state_report("user.home_city")[0]["current"]["id"] == a.id


def test_keyed_episode_replaced_only_through_key(store: Store) -> None:
    a = store.record("Favourite editor is vim for all coding", "context", state_key="user.editor")
    with pytest.raises(SupersessionError):
        store.record("Favourite editor is now emacs for all coding", "context", supersedes=[a.id])


@pytest.mark.parametrize("key", ["", "   ", "has space", "semi;colon", "x" * 300, "émoji🙂"])
def test_bad_state_keys(store: Store, key: str) -> None:
    with pytest.raises(SupersessionError):
        store.record("a fact", "context", state_key=key)
    assert store.status().total_episodes == 0


def test_set_state_key_on_existing(store: Store) -> None:
    a = store.record("Prefers tea in the morning", "context", timestamp="2026-01-01")
    b = store.record("Switched to coffee in the morning", "context", timestamp="2026-02-01")
    store.set_state_key(a.id, "user.morning_drink")
    assert store.set_state_key(b.id, "user.morning_drink") == [(a.id, b.id)]
    assert a.id not in {e.id for e in store.recall().episodes}
    with pytest.raises(EpisodeNotFoundError):
        store.set_state_key("ffffffff", "x")


def test_trust_ceiling_and_lower_trust_cannot_supersede(store: Store) -> None:
    with pytest.raises(TrustError):
        store.record("I am the operator", "context", trust="operator")
    mine = store.record("The release branch is frozen until Monday", "decision")
    with pytest.raises(SupersessionError):
        store.record("The release branch is unfrozen since Monday", "decision", trust="external",
                     supersedes=[mine.id])


def test_derived_trust_is_capped_by_sources(db) -> None:
    with Store(db, trust_ceiling="operator") as s:
        page = s.record("web page claims the moon is cheese", "observation", trust="external")
        summ = s.record("summary: moon cheese claim", "observation", derived_from=[page.id])
        summ2 = s.record("summary of summary", "observation", derived_from=[summ.id])
        assert s.effective_trust_map([summ.id, summ2.id]) == {summ.id: "external", summ2.id: "external"}
        s.set_trust(page.id, "agent")
        assert s.effective_trust_map([summ2.id])[summ2.id] == "agent"
        s.set_trust(page.id, "tool")
        assert s.get(summ2.id).trust == "tool"
        s.delete(page.id)
        assert s.effective_trust_map([summ.id])[summ.id] == "external"
        exported = {e["id"]: e["trust"] for e in s.export()["episodes"]}
        assert exported[summ2.id] == "external"



def test_derived_trust_is_capped_in_a_map_of_many_ids(db) -> None:
    # a map of many ids (a wrap asks one of every episode) looks derivations up only when
    # the store holds some: it must still find the one derived episode among them
    with Store(db) as s:
        plain = [s.record(f"note {i} about the queue depth", "observation") for i in range(12)]
        assert s.effective_trust_map([e.id for e in plain]) == {e.id: "agent" for e in plain}
        page = s.record("web page claims the queue never drains", "observation", trust="external")
        summ = s.record("summary: queue never drains", "observation", derived_from=[page.id])
        ids = [e.id for e in plain] + [summ.id]
        got = s.effective_trust_map(ids)
        assert got[summ.id] == "external"
        assert all(got[e.id] == "agent" for e in plain)
        w = prepare_wrap(s)
        listed = {e["id"]: e["trust"] for e in w["package"]["episode_list"]}
        assert listed[summ.id] == "external" and len(listed) == 14


def test_set_trust_refuses_above_ceiling(store: Store) -> None:
    e = store.record("x y z", "observation", trust="tool")
    with pytest.raises(TrustError):
        store.set_trust(e.id, "operator")
    assert store.set_trust(e.id, "agent") == "tool"  # returns the class it had


def test_scored_recall_swaps_replacement_into_slot(store: Store) -> None:
    old = store.record("Maria's favourite cafe is Blue Bottle on 5th street near the park", "context")
    new = store.record("Maria's favourite cafe is now Ritual Roasters", "context", supersedes=[old.id])
    res = retrieve_relevant(store, None, "which cafe on 5th street near the park", max_episodes=3)
    assert res.episodes[0].id == new.id
    assert [r.id for r in res.episodes[0].replaces] == [old.id]
    assert all(e.id != old.id for e in res.episodes)


def test_scored_recall_labels_relayed_trust(store: Store) -> None:
    store.record("The tool reported disk usage at 91 percent", "observation", trust="tool")
    res = retrieve_relevant(store, None, "disk usage percent")
    assert res.episodes and res.episodes[0].trust == "tool"


# -- the stale-fact probe -------------------------------------------------------------------
PAIRS = [
    ("The project deadline is March 3 for the Atlas launch", "The project deadline for the Atlas launch moved to April 10", "Atlas launch"),
    ("Our office wifi password is sunflower42 on the guest network", "Our office wifi password on the guest network is now tulip77", "guest network wifi"),
    ("The database server runs PostgreSQL 14 on host db1", "The database server on host db1 was upgraded to PostgreSQL 16", "host db1 database server"),
    ("Anna manages the billing team from the Lisbon office", "Anna now manages the billing team from the Porto office", "billing team"),
    ("The weekly sync happens on Tuesday at noon with design", "The weekly sync with design moved to Thursday at noon", "weekly sync design"),
    ("Our cloud budget is 12000 dollars per month for staging", "Our cloud budget for staging is 15000 dollars per month now", "cloud budget staging"),
    ("The API rate limit is 100 requests per minute per key", "The API rate limit per key was raised to 300 requests per minute", "API rate limit"),
    ("Tom drives a blue Honda Civic to the warehouse", "Tom now drives a red Tesla Model 3 to the warehouse", "Tom warehouse car"),
    ("The support hotline number is 555-0100 for enterprise clients", "The support hotline for enterprise clients changed to 555-0199", "support hotline enterprise"),
    ("The build uses Python 3.9 in the CI pipeline", "The CI pipeline build now uses Python 3.12", "CI pipeline Python"),
    ("Lena's favourite restaurant is Sakura on Elm Street", "Lena's favourite restaurant is now Olive Garden downtown", "Lena restaurant"),
    ("The backup job runs at 2am every night on the NAS", "The nightly backup job on the NAS now runs at 4am", "backup job NAS"),
    ("The marketing lead for Europe is Pierre in Paris", "The marketing lead for Europe is now Sofia in Madrid", "marketing lead Europe"),
    ("Our main competitor is Acme Corp in the logistics market", "Our main competitor in the logistics market is now Globex", "competitor logistics market"),
    ("The conference room booking system is Skedda for floor 3", "The conference room booking system for floor 3 switched to Robin", "conference room booking"),
    ("The cat's name is Whiskers and she is 3 years old", "The cat Whiskers turned 4 years old last week", "cat Whiskers old"),
]


def _filler(n: int) -> list[str]:
    rng = random.Random(7)
    words = ("garden invoice rocket harbor piano tundra lantern cobalt meadow quartz falcon "
             "ledger orchard canyon velvet ember glacier prism saddle bramble").split()
    return [" ".join(rng.choice(words) for _ in range(8)) + f" note {i}" for i in range(n)]


@pytest.mark.parametrize("mode", ["none", "explicit", "state_key"])
def test_stale_fact_probe(db, mode: str) -> None:
    with Store(db) as s:
        for t in _filler(120):
            s.record(t, "observation", timestamp="2026-01-01T00:00:00Z")
        pairs = []
        for i, (old, new, _q) in enumerate(PAIRS):
            key = f"fact.{i}" if mode == "state_key" else None
            o = s.record(old, "context", timestamp="2026-02-01T00:00:00Z", state_key=key)
            n = s.record(new, "context", timestamp="2026-03-01T00:00:00Z", state_key=key,
                         supersedes=[o.id] if mode == "explicit" else None)
            pairs.append((o, n))
        stale_kw = stale_scored = current_first = 0
        for (o, n), (_old, _new, q) in zip(pairs, PAIRS):
            kw_ids = {e.id for e in s.recall(keyword=q, limit=10).episodes}
            sc = retrieve_relevant(s, None, q, max_episodes=5).episodes
            stale_kw += o.id in kw_ids
            stale_scored += o.id in {e.id for e in sc}
            current_first += bool(sc) and sc[0].id == n.id
        if mode == "none":
            assert stale_kw >= 12  # keyword recall serves the stale fact beside the new one
        else:
            assert stale_kw == 0 and stale_scored == 0
            assert current_first == 16
