"""Keyword recall returns the same episodes, in the same order, after the scale work of
issue 54 as before it: a few thousand episodes, every query class (a stored phrase, words
of different episodes, a whole question, made-up words), with and without a type filter,
in the whole store and in one user's namespace. The expected digests were taken from the
code before the change (commit 36803b5); any change of a result, its order, its total or
its reason changes the digest."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anneal_memory import Store, retrieve_relevant

#: words with a Zipf-like spread (a few very common, a long tail of rare ones)
_WORDS = ("the I you it and to a was that my of we so it's really just like in what "
          "have for is do me think yeah love know oh go time she he good great day when "
          "how about feel friends family kids work painting camping hike beach book "
          "music guitar violin concert adopt dog cat pottery meteor shower museum lake "
          "mountain sunrise festival garden recipe bakery marathon charity support group "
          "transgender counseling career school degree library poem journal photo paris "
          "tokyo sweden canada birthday wedding parade roadtrip volunteer shelter").split()
_TYPES = ("observation", "decision", "tension", "question", "outcome", "context")
_QUESTIONS = ("When did Caroline go to the support group?", "What book did Melanie read?",
              "How did she feel at the meteor shower?", "Where did they go camping?",
              "What does Melanie paint?", "Which city did they visit for the festival?",
              "When is the charity marathon?", "Would she adopt a dog?")
SIZE = 3000


def _text(rng: random.Random) -> str:
    weights = [1.0 / (i + 1) for i in range(len(_WORDS))]
    return " ".join(rng.choices(_WORDS, weights=weights, k=rng.randint(6, 30))).capitalize() + "."


def _fill(path: Path) -> Store:
    """SIZE episodes, a tenth in one user's namespace, ten seconds apart (so the context
    rule, which spreads a score within the hour, is in play), types skewed as an agent's."""
    rng = random.Random(54)
    store = Store(str(path), project_name="size")
    alice = store.scoped({"user": "alice"})
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    mine, theirs = [], []
    for i in range(SIZE):
        item = {"content": _text(rng),
                "episode_type": rng.choices(_TYPES, weights=(50, 15, 8, 8, 12, 7))[0],
                "timestamp": (start + timedelta(seconds=10 * i)).isoformat()}
        (mine if i % 10 == 3 else theirs).append(item)
    store.record_many(theirs)
    alice.record_many(mine)
    return store


def _queries() -> dict[str, list[str]]:
    rng = random.Random(7)
    phrases = []
    for _ in range(25):
        words = rng.sample(_WORDS[20:], 1) + rng.sample(_WORDS, rng.choice((0, 1)))
        phrases.append(" ".join(words))
    word_sets = [" ".join(rng.sample(_WORDS[30:], rng.choice((2, 3)))) for _ in range(25)]
    common = [" ".join(rng.sample(_WORDS[:25], 2)) for _ in range(10)]
    return {"phrase": phrases, "words": word_sets, "common": common,
            "question": list(_QUESTIONS), "miss": ["zqx flurble", "qwv"]}


def _digest(store: Store, scoped: Store) -> dict[str, str]:
    out = {}
    for name, qs in _queries().items():
        for where, s in (("all", store), ("alice", scoped)):
            for etype in (None, "decision"):
                got = []
                for q in qs:
                    for limit, offset in ((10, 0), (5, 5)):
                        r = s.recall(keyword=q, limit=limit, offset=offset, episode_type=etype)
                        got.append([q, r.total_matching, r.query_params.get("match"),
                                    [(e.content, e.timestamp, r.query_params.get("why", {}).get(e.id, "")
                                      .split(" ")[0]) for e in r.episodes]])
                    rel = retrieve_relevant(s, None, q, max_episodes=5, episode_type=etype)
                    got.append([q, [(e.content, round(e.score, 4)) for e in rel.episodes]])
                blob = json.dumps(got, sort_keys=True).encode()
                out[f"{name}/{where}/{etype}"] = hashlib.sha256(blob).hexdigest()[:16]
    return out


EXPECTED: dict[str, str] = {
    "phrase/all/None": "cfe2985bd9a434fb", "phrase/all/decision": "7b8eb0f18569624e",
    "phrase/alice/None": "1bbfe1ee7c83be8e", "phrase/alice/decision": "27ac9bda367c88be",
    "words/all/None": "e4e921051abe4319", "words/all/decision": "79ac72178a65f61f",
    "words/alice/None": "70a9d18c9f6265d1", "words/alice/decision": "1093648058ee043b",
    "common/all/None": "9ac597a064eb4576", "common/all/decision": "28c6481c8bf26a27",
    "common/alice/None": "cb26420b19dff3a3", "common/alice/decision": "56dfe833dd4db122",
    "question/all/None": "a784d5435a9a4e25", "question/all/decision": "5ee518e9ed441064",
    "question/alice/None": "255814f4b254beba", "question/alice/decision": "59119a464ede6ea7",
    "miss/all/None": "f9b8e090d7fb42f9", "miss/all/decision": "f9b8e090d7fb42f9",
    "miss/alice/None": "f9b8e090d7fb42f9", "miss/alice/decision": "f9b8e090d7fb42f9",
}


@pytest.fixture(scope="module")
def digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    store = _fill(tmp_path_factory.mktemp("size") / "memory.db")
    try:
        return _digest(store, store.scoped({"user": "alice"}))
    finally:
        store.close()


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_results_unchanged(digests: dict[str, str], key: str) -> None:
    assert digests[key] == EXPECTED[key]


def test_every_class_is_checked(digests: dict[str, str]) -> None:
    assert set(digests) == set(EXPECTED) and len(EXPECTED) == 20


# ---------------------------------------------------------------- the bounded word walk

def _walk_store(path: Path) -> Store:
    """400 episodes saying a common word, one old episode also saying a rare one."""
    store = Store(str(path), project_name="walk")
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    items = [{"content": f"coffee again number {i} today", "episode_type": "observation",
              "timestamp": (start + timedelta(minutes=i)).isoformat()} for i in range(400)]
    items[5]["content"] = "coffee with the astronomer at dawn"
    store.record_many(items)
    return store


def test_a_word_query_past_the_walk_ranks_newest_matches_and_every_rare_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory.storage.sqlite import SQLiteBackend

    store = _walk_store(tmp_path / "m.db")
    try:
        whole = store.recall(keyword="coffee astronomer zzz", limit=10)
        assert "total_estimated" not in whole.query_params
        assert whole.total_matching == 400
        store.close()
        store = Store(str(tmp_path / "m.db"))  # a fresh connection: nothing memoized
        monkeypatch.setattr(SQLiteBackend, "WORD_WALK", 50)
        monkeypatch.setattr(SQLiteBackend, "RARE_MATCHES", 5)
        walked = store.recall(keyword="coffee astronomer zzz", limit=10)
        # the rare word's one match is 395 rows older than the newest: still first
        assert walked.episodes[0].content == "coffee with the astronomer at dawn"
        assert [e.id for e in walked.episodes] == [e.id for e in whole.episodes]
        # the count past the walk is an estimate, said so, and near the truth
        assert walked.query_params["total_estimated"] is True
        assert 380 <= walked.total_matching <= 420
        # a common word alone: the newest matches of the walk only
        common = store.recall(keyword="coffee zzz", limit=5, context=False)
        assert all(int(e.content.split()[3]) >= 350 for e in common.episodes)
    finally:
        store.close()


def test_the_walk_leaves_a_query_under_its_bound_alone(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory.storage.sqlite import SQLiteBackend

    store = _walk_store(tmp_path / "m.db")
    try:
        before = store.recall(keyword="coffee number zzz", limit=10)
        store.close()
        store = Store(str(tmp_path / "m.db"))  # a fresh connection: nothing memoized
        monkeypatch.setattr(SQLiteBackend, "WORD_WALK", 400)  # every match fits
        after = store.recall(keyword="coffee number zzz", limit=10)
        assert [e.id for e in after.episodes] == [e.id for e in before.episodes]
        assert after.total_matching == 400 and "total_estimated" not in after.query_params
    finally:
        store.close()


def test_ranked_rows_are_found_by_row_id_not_walked_off_the_type_index(tmp_path: Path) -> None:
    """A typed word recall loads its ranked rows and their neighbours' times by row id:
    left to choose, SQLite walked every row of the type off the type index (200 ms per
    recall at a million episodes)."""
    from anneal_memory.testing import backend_of

    store = _fill(tmp_path / "m.db")
    try:
        conn = backend_of(store).conn
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        r = store.recall(keyword="meteor zqxv", limit=10, episode_type="decision")
        conn.set_trace_callback(None)
        assert r.query_params["match"] == "words" and r.episodes
        by_ids = [s for s in seen if "rowid IN (" in s and s.startswith("SELECT")]
        assert len(by_ids) >= 2  # the neighbours' times and the rows shown
        for sql in by_ids:
            plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
            assert "ix_episodes_type_ts" not in plan, plan
            assert "INTEGER PRIMARY KEY" in plan, plan
    finally:
        store.close()
