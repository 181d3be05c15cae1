"""Forget and delete hold: no text survives a forget (reviews included), no lookalike
spelling brings a forgotten memory back, and no re-spelt id re-imports a deleted episode."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from anneal_memory import Store, ValidationError
from anneal_memory._identity import episode_id_key, is_canonical_id, subject_key
from anneal_memory.governance import (
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
)
from anneal_memory.testing import backend_of

NS = MemoryNamespace(tenant="acme", user="alice", agent="coder")
SECRET_TEXT = "Prefers the Zanzibar deployment checklist"

#: Spellings of ``preferred_language`` that look the same (or nearly) to a reader.
LOOKALIKES = [
    "preferred\u200b_language",      # zero-width space
    "prefer\u00adred_language",      # soft hyphen
    "ｐｒｅｆｅｒｒｅｄ_language",     # full-width letters
    "pr\u0435ferred_l\u0430nguage",  # Cyrillic е and а
    "preferred_language.",           # trailing full stop
    "preferred-language",            # '-' for '_'
    "preferred language",            # space for '_'
    "Preferred_Language",            # other case
    " preferred__language ",         # doubled separator, stray spaces
    "preferred_language\ufeff",      # byte-order mark
    "preferred\u2010language",       # Unicode hyphen
    "preferred_language!",           # trailing punctuation
]


def cand(cid: str, content: str = SECRET_TEXT, *, subject: str = "preferred_language",
         kind: str = "user_message") -> MemoryCandidate:
    return MemoryCandidate(cid, NS, "semantic", subject, content, SourceRef(f"s-{cid}", kind))


@pytest.fixture
def rt(store: Store) -> MemoryRuntime:
    return MemoryRuntime(store)


def _raw_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir()
                    if p.name.startswith(db.name) and p.is_file())


# ---------------------------------------------------------------------- scrubbing
def test_forget_scrubs_every_version_and_every_review_item(rt: MemoryRuntime, store: Store,
                                                           db: Path) -> None:
    # v1 through review (model-inferred), then a rejected review, then a pending one
    queued = rt.write(cand("m1", kind="model"))
    assert queued.outcome == "review"
    rt.approve(queued.review_id, reviewer="carol")
    v1 = rt.current(NS, "semantic", "preferred_language")
    assert v1 is not None and v1.content == SECRET_TEXT
    other = rt.correct(cand("m2", SECRET_TEXT + " for every release", kind="model"),
                       expected_record_id=v1.record_id)
    rt.reject_review(other.review_id, reviewer="carol")
    pending = rt.correct(cand("m3", SECRET_TEXT + " in staging", kind="model"),
                         expected_record_id=v1.record_id)
    assert pending.outcome == "review"
    assert SECRET_TEXT.encode() in _raw_bytes(db)

    rt.forget(NS, "semantic", "preferred_language", reason="user asked")
    b = backend_of(store)
    bodies = [json.loads(r[0]) for r in b.q("SELECT body FROM gov_records")]
    assert bodies and all(x["content"] is None for x in bodies)
    cands = [json.loads(r[0]) for r in b.q("SELECT candidate FROM gov_reviews")]
    assert len(cands) == 3 and all(c.get("content") is None for c in cands)
    store.close()
    assert SECRET_TEXT.encode() not in _raw_bytes(db)
    assert b"Zanzibar" not in _raw_bytes(db)


def test_forget_refuses_every_later_write_under_a_lookalike(rt: MemoryRuntime) -> None:
    assert rt.write(cand("c1")).outcome == "written"
    rt.forget(NS, "semantic", "preferred_language", reason="user asked")
    accepted = []
    for i, spelling in enumerate(LOOKALIKES):
        res = rt.write(cand(f"again-{i}", "Prefers Rust for code examples", subject=spelling))
        if res.outcome != "rejected" or res.reason != "memory_deleted":
            accepted.append(spelling)
        assert rt.state(NS, "semantic", spelling) == "deleted"
    assert accepted == []
    assert rt.recall(NS, "code examples").records == []


def test_lookalike_subjects_are_one_memory_for_duplicates(rt: MemoryRuntime) -> None:
    assert rt.write(cand("c1", "Prefers Python for code examples")).outcome == "written"
    for i, spelling in enumerate(LOOKALIKES):
        same = rt.write(cand(f"d-{i}", "Prefers Python for code examples", subject=spelling))
        assert (same.outcome, same.reason) == ("rejected", "duplicate_memory"), spelling
        other = rt.write(cand(f"o-{i}", "Prefers Go for code examples", subject=spelling))
        assert other.reason == "conflict_requires_correction", spelling
    # content differing only by invisible characters or case is a duplicate too
    dup = rt.write(cand("z", "prefers\u200b PYTHON for code  examples"))
    assert dup.reason == "duplicate_memory"


def test_distinct_subjects_stay_distinct() -> None:
    keys = {subject_key(s) for s in ("preferred language", "preferred languages",
                                     "language preferred", "préféré language",
                                     "C++ style", "C style", "日本語の設定")}
    assert len(keys) == 7


# ---------------------------------------------------------------------- episode ids
def test_a_deleted_episode_is_not_reimported_under_a_respelt_id(store: Store) -> None:
    eid = "ab12cd34"
    doc = {"format": "anneal-memory-export", "version": 1, "episodes": [
        {"id": eid, "content": "the launch code is tangerine", "type": "observation",
         "timestamp": "2026-01-01T00:00:00Z"}]}
    assert store.import_(doc)["imported"] == 1
    assert store.delete(eid)
    variants = [" " + eid, eid + " ", eid.upper(), "Ab12cd34", "ab\u200b12cd34",
                "\u0430b12cd34", "\uff41\uff42" + "12cd34", "ab12cd34\ufeff", "ab12cd34\n"]
    for v in variants:
        bad = json.loads(json.dumps(doc))
        bad["episodes"][0]["id"] = v
        with pytest.raises(ValidationError, match="not canonical"):
            store.import_(bad)
    assert store.import_(doc)["refused_deleted"] == [eid]
    assert store.recall(keyword="tangerine").episodes == []
    assert store.status().total_episodes == 0


def test_tombstones_compare_folded_ids(store: Store, db: Path) -> None:
    # an id written by an older version, not canonical, deleted: the canonical spelling
    # of it still counts as deleted
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO tombstones(id, type, timestamp, content_hash, removed_at, "
                  "reason, trust) VALUES ('AB12CD34', 'observation', '2026-01-01', 'x', "
                  "'2026-01-02', 'deleted', 'agent')")
    doc = {"format": "anneal-memory-export", "version": 1, "episodes": [
        {"id": "ab12cd34", "content": "came back", "type": "observation",
         "timestamp": "2026-01-01T00:00:00Z"}]}
    assert store.import_(doc)["refused_deleted"] == ["ab12cd34"]
    assert store.get("ab12cd34") is None


def test_id_folding() -> None:
    assert episode_id_key(" AB12\u200bCD34 ") == "ab12cd34"
    assert is_canonical_id("ab12cd34") and is_canonical_id("ep-1.2_x")
    for bad in ("AB12CD34", " ab12", "ab 12", "", "a" * 65, "-ab", "ab\u200b12", "ab/12",
                "ab12\n"):
        assert not is_canonical_id(bad), bad
