"""What a model reads of an episode: a long one is shown shortened, with its id and a note
that the whole text stays in the store, so no prompt the library builds (the wrap package,
an adapter's memory block) grows with one oversized episode."""

from __future__ import annotations

from collections.abc import Sequence

#: The most of one episode a memory block (``context_for``, an adapter's recall) shows.
PROMPT_EPISODE_CHARS = 4_000
#: The most of one episode the wrap package shows, and the most of all its episodes together;
#: when they are over, every long episode is cut to one share, never below the floor.
PACKAGE_EPISODE_CHARS = 4_000
PACKAGE_EPISODES_BUDGET = 200_000
PACKAGE_EPISODE_FLOOR = 200


def shorten(content: str, limit: int, episode_id: str) -> str:
    """``content`` when it fits ``limit`` characters; else its first ``limit`` characters
    and a note naming the episode whose full text is in the store."""
    if len(content) <= limit:
        return content
    rest = len(content) - limit
    return (content[:limit] + f" …[shortened: {rest:,} more characters; the full text is "
            f"episode {episode_id} in the store]")


def fair_cap(lengths: Sequence[int], budget: int = PACKAGE_EPISODES_BUDGET,
             cap: int = PACKAGE_EPISODE_CHARS, floor: int = PACKAGE_EPISODE_FLOOR) -> int:
    """The largest per-episode limit (at most ``cap``, at least ``floor``) under which the
    episodes' shown text adds up to no more than ``budget``: short episodes are shown
    whole, long ones share what is left."""
    if sum(min(n, cap) for n in lengths) <= budget:
        return cap
    lo, hi = floor, cap
    while lo < hi:  # the largest limit that fits
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo
