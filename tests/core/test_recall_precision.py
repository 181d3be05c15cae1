"""Keyword recall returns and counts what matched (issue 31 part 1), and an episode's
metadata has one size bound on every way in (part 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import CrystalStore, MemorySession, Store, ValidationError, retrieve_relevant
from anneal_memory._inputs import MAX_METADATA_CHARS


def test_an_absent_phrase_counts_only_its_matches(store: Store) -> None:
    for i in range(20):
        store.record(f"filler note {i} about gardening", "observation")
    tax = store.record("Quarterly tax filing is due in April", "observation")
    for i in range(3):
        store.record(f"filler note after {i} about gardening", "observation")
    r = store.recall(keyword="quarterly deadline")
    assert r.total_matching == 1 and [e.id for e in r.episodes] == [tax.id]
    assert r.why == {tax.id: "words"}


def test_a_small_store_is_not_padded_with_its_neighbours(store: Store) -> None:
    for text in ("Standup moved to 10am", "Quarterly tax is due in April", "Lunch was pasta",
                 "Booked the dentist"):
        store.record(text, "observation")
    r = store.recall(keyword="when is tax due")
    assert [e.content for e in r.episodes] == ["Quarterly tax is due in April"]
    assert r.total_matching == 1


def test_the_readmes_question_gets_its_answer_only(store: Store) -> None:
    store.record("Connection pool is the real bottleneck", "observation")
    chose = store.record("Chose PostgreSQL as the database because ACID outweighs speed",
                         "decision")
    got = retrieve_relevant(store, CrystalStore(store), "which database?", max_episodes=3)
    assert [e.id for e in got.episodes] == [chose.id]
    assert "bottleneck" not in MemorySession(store).context_for("which database?")


def test_a_present_phrase_keeps_substring_semantics(store: Store) -> None:
    a = store.record("the database migration", "observation")
    b = store.record("DATABASES are hard", "observation")
    store.record("unrelated", "observation")
    r = store.recall(keyword="database")
    assert {e.id for e in r.episodes} == {a.id, b.id} and r.total_matching == 2
    assert set(r.why.values()) == {"phrase"}


def test_context_that_outranks_a_match_is_marked_as_context(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        q = s.record("what did the plumber charge for the boiler?", "observation",
                     timestamp="2026-01-01T10:00:00Z")
        a = s.record("ninety pounds", "observation", timestamp="2026-01-01T10:00:05Z")
        s.record("the boiler manual is in the drawer", "observation",
                 timestamp="2026-02-01T10:00:00Z")
        r = s.recall(keyword="How much did the plumber charge for the boiler?")
        assert r.why[a.id] == f"next to {q.id}" and r.total_matching == 2
    out = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "search",
                          "How much did the plumber charge for the boiler?"],
                         capture_output=True, text=True, timeout=60).stdout
    assert f"(context: next to {q.id})" in out and "1 shown as context" in out


def _big(n: int) -> dict[str, str]:
    return {"blob": "x" * n}


def test_metadata_over_the_bound_is_refused_on_every_way_in(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        s.record("fits", "observation", metadata=_big(MAX_METADATA_CHARS - 20))
        with pytest.raises(ValidationError, match="metadata is .* characters as JSON"):
            s.record("too big", "observation", metadata=_big(MAX_METADATA_CHARS))
        with pytest.raises(ValidationError, match="metadata"):
            s.record_many([{"content": "ok", "episode_type": "observation"},
                           {"content": "too big", "episode_type": "observation",
                            "metadata": _big(2_000_000)}])
        assert s.status().total_episodes == 1  # nothing of the refused calls was written
        doc = s.export()
    doc["episodes"][0]["metadata"] = _big(MAX_METADATA_CHARS)
    with Store(tmp_path / "other.db") as t:
        with pytest.raises(ValidationError, match="episode 0 .* metadata"):
            t.import_(doc)
        assert t.status().total_episodes == 0
    r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "--json",
                        "record", "x", "--metadata", json.dumps(_big(MAX_METADATA_CHARS))],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["type"] == "ValidationError"
