"""Sizes are bounded where a model reads them (issue 52 item 4): an episode's content has a
bound on record() (Store(max_episode_chars=...), 100,000 by default), an import keeps a
longer one whole and names it, and the wrap package and a memory block show a long episode
shortened, with its id and a note that its whole text is in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import MemorySession, Store, prepare_wrap, render_package
from anneal_memory.errors import ContentTooLargeError, ValidationError
from anneal_memory.shorten import (
    PACKAGE_EPISODE_CHARS,
    PACKAGE_EPISODE_FLOOR,
    PACKAGE_EPISODES_BUDGET,
    PROMPT_EPISODE_CHARS,
    fair_cap,
)

MB = 1_000_000


def _doc(words: int, seed: str = "harbour") -> str:
    return " ".join(f"{seed}{i % 97}" for i in range(words))


def test_record_refuses_content_over_the_bound_and_writes_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        s.record("a small note", "observation")
        entries = s.audit_trail.verify_stored().total_entries
        for size in (100_001, 5 * MB, 50 * MB):
            with pytest.raises(ContentTooLargeError, match=f"{size:,} characters.*100,000"):
                s.record("x" * size, "observation")
            with pytest.raises(ContentTooLargeError):
                s.record_many([{"content": "ok", "episode_type": "observation"},
                               {"content": "y" * size, "episode_type": "observation"}])
        assert [e.content for e in s.recall(limit=10).episodes] == ["a small note"]
        check = s.audit_trail.verify_stored()
        assert check.valid and check.total_entries == entries  # no entry for a refusal
        assert s.record("z" * 100_000, "observation").content == "z" * 100_000  # at the bound


def test_the_bound_is_configurable_and_checked(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db", max_episode_chars=10) as s:
        with pytest.raises(ContentTooLargeError, match="bound of 10"):
            s.record("eleven char", "observation")
        # a scoped view keeps its parent's bound
        with pytest.raises(ContentTooLargeError):
            s.scoped({"user": "alice"}).record("eleven char", "observation")
    with Store(tmp_path / "b.db", max_episode_chars=None) as s:
        assert len(s.record("q" * (5 * MB), "observation").content) == 5 * MB
    for bad in (0, -1, 1.5, True, "100"):
        with pytest.raises(ValidationError, match="max_episode_chars"):
            Store(tmp_path / "c.db", max_episode_chars=bad)


@pytest.mark.parametrize("size", [5 * MB, 50 * MB])
def test_the_wrap_package_shows_a_huge_episode_shortened(tmp_path: Path, size: int) -> None:
    with Store(tmp_path / "m.db", max_episode_chars=None) as s:
        # 5 MB of words; 50 MB of one long run (the text indexes' cost, not the point here)
        big = s.record(_doc(size // 9) if size <= 5 * MB else "harbour " + "x" * size,
                       "observation").id
        small = s.record("Chose the harbour route because the bridge is closed", "decision").id
        w = prepare_wrap(s)
        prompt = render_package(w["package"])
        assert len(prompt) < 3 * PACKAGE_EPISODE_CHARS + len(w["package"]["instructions"]) + 3_000
        line = next(x for x in prompt.splitlines() if x.startswith(f"- [{big}]"))
        assert f"the full text is episode {big} in the store" in line
        assert "Chose the harbour route because the bridge is closed" in prompt  # whole
        assert w["package"]["shortened"]["episode_ids"] == [big]
        assert small not in w["package"]["shortened"]["episode_ids"]
        assert "shown shortened" in w["package"]["instructions"]
        assert len(s.get(big).content) >= size - 20  # the store keeps it whole


def test_many_long_episodes_share_the_package_budget(tmp_path: Path) -> None:
    n = 120  # 120 x 4,000 would be 480,000 characters of episodes
    with Store(tmp_path / "m.db") as s:
        s.record_many([{"content": _doc(900, f"w{i}x"), "episode_type": "observation"}
                       for i in range(n)])
        s.record("short one stays whole", "question")
        w = prepare_wrap(s)
        shown = sum(len(e["content"]) for e in w["package"]["episode_list"])
        cap = w["package"]["shortened"]["chars_per_episode"]
        assert cap < PACKAGE_EPISODE_CHARS
        # each shortened episode adds only its note beyond its share
        assert shown <= PACKAGE_EPISODES_BUDGET + n * 120
        assert "short one stays whole" in [e["content"] for e in w["package"]["episode_list"]]


def test_fair_cap() -> None:
    assert fair_cap([10, 20]) == PACKAGE_EPISODE_CHARS
    assert fair_cap([1000, 5000, 9000], budget=5000) == 2000
    assert fair_cap([10**6] * 10_000) == PACKAGE_EPISODE_FLOOR


def test_a_memory_block_shows_a_huge_episode_shortened(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", max_episode_chars=None) as s:
        big = s.record("harbour crane schedule " + _doc(MB // 9), "observation").id
        block = MemorySession(s).context_for("harbour crane schedule")
        assert big in block and f"the full text is episode {big} in the store" in block
        assert len(block) < PROMPT_EPISODE_CHARS + 1_000


def test_an_import_keeps_an_oversized_episode_whole_and_names_it(tmp_path: Path) -> None:
    with Store(tmp_path / "old.db", max_episode_chars=None) as old:
        big = old.record(_doc(5 * MB // 9), "observation").id
        doc = old.export()
    with Store(tmp_path / "new.db") as new:
        res = new.import_(doc)
        assert res["oversized"] == [big]
        assert new.get(big).content == doc["episodes"][0]["content"]
        w = prepare_wrap(new)
        assert w["package"]["shortened"]["episode_ids"] == [big]
