"""The operator's instruments: the worklist, the pattern timeline, drift per wrap, hand
demotion and retirement, and the lookups the console reads (namespaces, supersession
chains, the trust filter, every namespace's review queue)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anneal_memory import (
    AuditTrail,
    ReadOnlyStoreError,
    Store,
    ValidationError,
    WrapInProgressError,
    demote_pattern,
    drift_by_wrap,
    mark_worklist_reviewed,
    pattern_timeline,
    prepare_wrap,
    retire_pattern,
    review_worklist,
)
from anneal_memory.continuity.parse import pattern_levels
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, MemoryRuntime, SourceRef
from anneal_memory.testing import repos_of

from uihelp import dated
from wraphelp import doc as plain_doc
from wraphelp import wrap


def doc(patterns: str, **kw: Any) -> str:
    return plain_doc(dated(patterns), **kw)


def cite(store: Store, name: str, level: int, words: str, *, trust: str = "agent",
         tail: str = "") -> str:
    e = store.record(f"Seen today: {words} in the service logs", "observation", trust=trust)
    return f"- {name} | {level}x [evidence: {e.id} \"{words}\"]{tail}"


def level(store: Store, name: str) -> int | None:
    return pattern_levels(store.load_continuity()).get(name.casefold())


def graduate(store: Store, name: str = "queue backlog", tail: str = " [no-contradicts]") -> None:
    wrap(store, doc(patterns=cite(store, name, 1, "amber basalt")))
    wrap(store, doc(patterns=cite(store, name, 2, "cedar dune", tail=tail)))
    assert level(store, name) == 2


def events(store: Store, event: str) -> list[dict]:
    return [e for _f, e in AuditTrail.iter_entries(store.path) if e["event"] == event]


# ---------------------------------------------------------------------- worklist

def test_worklist_lists_a_validated_graduation_with_its_cited_text_and_stance(store: Store) -> None:
    graduate(store)
    items = review_worklist(store)
    assert [(i.name, i.level, i.prior, i.stance) for i in items] == [("queue backlog", 2, 1,
                                                                       "no-contradicts")]
    assert items[0].cited[0].content == "Seen today: cedar dune in the service logs"
    assert items[0]["stance"] == "no-contradicts" and items[0].current_level == 2


def test_worklist_skips_new_demoted_and_uncorroborated_lines(store: Store) -> None:
    wrap(store, doc(patterns=cite(store, "relayed", 1, "ember fjord", trust="tool")
                    + "\n" + cite(store, "fresh", 1, "garnet harbor")))
    with pytest.warns(UserWarning):
        wrap(store, doc(patterns=cite(store, "relayed", 2, "indigo juniper", trust="tool")
                        + "\n- fresh | 2x [evidence: abcdef12 \"nothing here at all\"]"))
    assert level(store, "relayed") == 1 and level(store, "fresh") == 1
    assert review_worklist(store) == []


def test_contradiction_stance_is_carried(store: Store) -> None:
    graduate(store, "second claim", tail=" [contradicts: first claim]")
    assert review_worklist(store)[0].contradicts == ["first claim"]
    assert review_worklist(store)[0].stance == "contradicts"


def test_marking_reviewed_empties_the_worklist_until_the_next_graduation(store: Store) -> None:
    graduate(store)
    done = mark_worklist_reviewed(store)
    assert done == {"through_wrap": 2, "previous": 0, "items": 1}
    assert review_worklist(store) == []
    assert len(review_worklist(store, since_wrap=0)) == 1
    wrap(store, doc(patterns=cite(store, "queue backlog", 3, "kelp lagoon")))
    assert [i.level for i in review_worklist(store)] == [3]
    ev = events(store, "worklist_reviewed")
    assert ev and ev[-1]["actor"] == "operator" and ev[-1]["data"]["through_wrap"] == 2


def test_mark_reviewed_refuses_a_wrap_that_does_not_exist(store: Store) -> None:
    graduate(store)
    with pytest.raises(ValidationError, match="after the newest"):
        mark_worklist_reviewed(store, through_wrap=99)
    assert len(review_worklist(store)) == 1


def test_a_namespace_has_its_own_worklist(store: Store) -> None:
    alice = store.scoped({"user": "alice"})
    graduate(alice)
    assert len(review_worklist(alice)) == 1 and review_worklist(store) == []
    mark_worklist_reviewed(alice)
    assert review_worklist(alice) == []


# ---------------------------------------------------------------------- timeline, drift

def test_timeline_shows_graduation_cap_and_demotion(store: Store) -> None:
    graduate(store)
    with pytest.warns(UserWarning):
        wrap(store, doc(patterns=cite(store, "queue backlog", 7, "mesa nectar")))
    store.record("an unrelated note", "observation")
    wrap(store, doc(patterns="- queue backlog | 3x [evidence: abcdef12 \"no such thing\"]"),
         carryforward_cold_days=None)
    points = pattern_timeline(store)["queue backlog"]
    assert [p.level for p in points] == [1, 2, 3, 2]
    assert "graduated" in points[1].events and "capped" in points[2].events
    assert "demoted" in points[3].events and points[2]["claimed"] == 7


def test_timeline_marks_a_revoked_rung(store: Store) -> None:
    graduate(store)
    rung = store.pattern_grounding()["queue backlog"][-1]["ids"][0]
    store.set_trust(rung, "external")
    store.record("note", "observation")
    with pytest.warns(UserWarning):
        wrap(store, doc(patterns="- queue backlog | 2x"))
    last = pattern_timeline(store)["queue backlog"][-1]
    assert last.level == 1 and last.events[0] == "revoked"
    assert last.cap_reason == "revoked: grounding lowered"


def test_drift_verdicts_are_kept_per_wrap(store: Store) -> None:
    graduate(store)
    pid = store.add_drift_probe(pattern="queue backlog")
    store.record("note one", "observation")
    wrap(store, doc(patterns="- queue backlog | 2x"))
    store.record("note two", "observation")
    wrap(store, doc(patterns="- other | 1x"))
    rows = drift_by_wrap(store)
    assert [r["probes"][0]["status"] for r in rows[:2]] == ["lost", "held"]
    assert rows[0]["probes"][0]["id"] == pid and rows[0]["counts"] == {"lost": 1}
    assert "needs 2x" in rows[1]["probes"][0]["detail"]


# ---------------------------------------------------------------------- by hand

def test_hand_demotion_stands_at_the_next_save(store: Store) -> None:
    graduate(store)
    wrap(store, doc(patterns=cite(store, "queue backlog", 3, "onyx prairie")))
    assert demote_pattern(store, "Queue Backlog", 1) == {"name": "Queue Backlog", "from": 3, "to": 1}
    assert level(store, "queue backlog") == 1
    # the agent writes the old level back, bare: the record holds it at the operator's level
    store.record("note", "observation")
    wrap(store, doc(patterns="- queue backlog | 3x"))
    assert level(store, "queue backlog") == 1
    ev = events(store, "pattern_demoted")[-1]
    assert ev["actor"] == "operator" and (ev["data"]["from"], ev["data"]["to"]) == (3, 1)
    assert "queue backlog" not in str(ev["data"])  # a hash, never the name
    assert pattern_timeline(store)["queue backlog"][-2].events == ["operator-demoted"]


def test_demotion_defaults_to_one_rung_and_refuses_a_raise(store: Store) -> None:
    graduate(store)
    assert demote_pattern(store, "queue backlog")["to"] == 1
    with pytest.raises(ValidationError, match="lowest"):
        demote_pattern(store, "queue backlog")
    graduate(store, "other claim")
    before = store.load_continuity()
    with pytest.raises(ValidationError, match="must go lower"):
        demote_pattern(store, "other claim", 5)
    with pytest.raises(ValidationError, match="no pattern named"):
        demote_pattern(store, "never written")
    with pytest.raises(ValidationError):
        demote_pattern(store, "other claim", 0)
    assert store.load_continuity() == before and len(events(store, "pattern_demoted")) == 1


def test_hand_edits_are_refused_while_a_wrap_is_open(store: Store) -> None:
    graduate(store)
    store.record("more", "observation")
    prepare_wrap(store)
    text = store.load_continuity()
    for act in (lambda: demote_pattern(store, "queue backlog"),
                lambda: retire_pattern(store, "queue backlog")):
        with pytest.raises(WrapInProgressError):
            act()
    assert store.load_continuity() == text and events(store, "pattern_demoted") == []


def test_retired_pattern_is_gone_and_returns_as_new(store: Store) -> None:
    graduate(store)
    assert retire_pattern(store, "queue backlog")["lines_removed"] == 1
    assert level(store, "queue backlog") is None
    assert "queue backlog" not in repos_of(store).wraps.pattern_history()
    with pytest.warns(UserWarning, match="level-capped"):
        wrap(store, doc(patterns=cite(store, "queue backlog", 2, "quartz raven")))
    assert level(store, "queue backlog") == 1
    assert events(store, "pattern_retired")[-1]["data"]["from"] == 2


def test_hand_edits_refused_on_a_read_only_store(db: Path) -> None:
    with Store(db) as s:
        graduate(s)
    with Store(db, read_only=True) as ro:
        for act in (lambda: demote_pattern(ro, "queue backlog"),
                    lambda: retire_pattern(ro, "queue backlog"),
                    lambda: mark_worklist_reviewed(ro)):
            with pytest.raises(ReadOnlyStoreError):
                act()
        assert len(review_worklist(ro)) == 1


# ---------------------------------------------------------------------- lookups

def test_recall_filters_by_trust(store: Store) -> None:
    store.record("agent note on billing", "observation")
    store.record("web page on billing", "observation", trust="external")
    res = store.recall(keyword="billing", trust="external")
    assert [e.content for e in res.episodes] == ["web page on billing"]
    assert res.total_matching == 1 and res.query_params["trust"] == "external"
    with pytest.raises(ValidationError):
        store.recall(trust="nobody")


def test_supersession_chain_walks_both_ways(store: Store) -> None:
    a = store.record("User lives in Paris with family", "context")
    b = store.record("User lives in Lyon with family", "context", supersedes=[a.id])
    c = store.record("User lives in Lyon near the river with family", "context",
                     supersedes=[b.id])
    chain = store.supersession_chain(b.id)
    assert [(x["old_id"], x["new_id"], x["kind"]) for x in chain] == [
        (a.id, b.id, "explicit"), (b.id, c.id, "explicit")]
    assert store.supersession_chain(a.id) == chain
    with pytest.raises(Exception, match="no episode"):
        store.supersession_chain("nope1234")


def test_namespaces_are_listed_with_counts(store: Store) -> None:
    store.record("root note", "observation")
    alice = store.scoped({"user": "alice"})
    alice.record("alice note", "observation")
    alice.record("alice second", "observation")
    bob = store.scoped({"user": "bob", "project": "p1"})
    wrap(bob, doc(patterns=cite(bob, "bob claim", 1, "sierra tundra")))
    got = {(n["namespace"].user, n["namespace"].project): (n["episodes"], n["wraps"])
           for n in store.namespaces()}
    assert got == {("alice", None): (2, 0), ("bob", "p1"): (1, 1)}
    with pytest.raises(ValidationError):
        alice.namespaces()


def test_operator_sees_every_namespace_review_queue(store: Store) -> None:
    rt = MemoryRuntime(store)
    for user in ("alice", "bob"):
        ns = MemoryNamespace(tenant="acme", user=user, agent="coder")
        rt.write(MemoryCandidate(f"c-{user}", ns, "semantic", "notes", f"{user} prefers tea",
                                 SourceRef(f"s-{user}", "model"), confidence=0.8))
    assert len(rt.pending_reviews()) == 2
    view = store.scoped({"tenant": "acme", "user": "alice", "agent": "coder"})
    assert [r["candidate"]["content"] for r in MemoryRuntime(view).pending_reviews()] == [
        "alice prefers tea"]
    counts = {n["namespace"].user: n["pending_reviews"] for n in store.namespaces()}
    assert counts == {"alice": 1, "bob": 1}


# ---------------------------------------------------------------------- the CLI commands

def run_cli(capsys: pytest.CaptureFixture[str], db: Path, *argv: str) -> tuple[int, str, str]:
    from anneal_memory.cli import main

    code = main(["--db", str(db), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_worklist_pattern_and_probe_status(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    with Store(db) as s:
        graduate(s)
        cited = review_worklist(s)[0].cited[0]
    code, out, _ = run_cli(capsys, db, "worklist")
    assert code == 0 and "queue backlog 1x -> 2x (declared no contradiction)" in out
    assert f"[{cited.id}] {cited.content}" in out
    code, out, _ = run_cli(capsys, db, "probe", "status", "--json")
    assert code == 0 and json.loads(out)["worklist"][0]["name"] == "queue backlog"
    code, out, _ = run_cli(capsys, db, "worklist", "--mark-reviewed", "--json")
    assert json.loads(out)["items"] == 1
    assert json.loads(run_cli(capsys, db, "worklist", "--json")[1])["count"] == 0
    code, out, _ = run_cli(capsys, db, "pattern", "demote", "queue backlog")
    assert code == 0 and "queue backlog: 2x -> 1x" in out
    code, _out, err = run_cli(capsys, db, "pattern", "demote", "queue backlog")
    assert code == 1 and "lowest" in err and "Traceback" not in err
    code, out, _ = run_cli(capsys, db, "pattern", "retire", "queue backlog", "--json")
    assert code == 0 and json.loads(out)["lines_removed"] == 1
    with Store(db) as s:
        assert [e["event"] for e in events(s, "pattern_demoted")] == ["pattern_demoted"]
        assert events(s, "pattern_retired") and events(s, "worklist_reviewed")
