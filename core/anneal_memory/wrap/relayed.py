"""The wrap's relayed episodes, for the relayed-text rule of the save (the rule itself, pure
text, is :mod:`anneal_memory.continuity.relayed`, re-exported here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._seam import roles_of
from ..continuity.relayed import (
    GUIDANCE,
    MIN_WORDS,
    POLICIES,
    RELAYED_TRUST,
    RUN_WORDS,
    Unquoted,
    check_policy,
    find_unquoted,
    unquoted,
    words,
)
from ..trust import effective_trust_map

if TYPE_CHECKING:
    from .._unit import Ground

__all__ = ["GUIDANCE", "MIN_WORDS", "POLICIES", "RELAYED_TRUST", "RUN_WORDS", "Unquoted",
           "check_policy", "find_unquoted", "relayed_of_wrap", "unquoted", "words"]


def relayed_of_wrap(store: Ground, episode_ids: list[str]) -> list[tuple[str, str, str]]:
    """``(id, effective trust, content)`` of the wrap's relayed episodes."""
    if not episode_ids:
        return []
    # the wrap's rows are (nearly always) exactly the scope's unwrapped ones: one scan of
    # that index, not a lookup per id; ids it lacks (wrapped or deleted since) are looked up
    trust: Mapping[str, str] = effective_trust_map(
        store, episode_ids, known=roles_of(store).episodes.unwrapped_trusts())
    ids = [i for i in episode_ids if trust.get(i) in RELAYED_TRUST]
    if not ids:
        return []
    rows = roles_of(store).episodes.get_episodes(ids)
    return [(i, trust[i], rows[i].content) for i in ids if i in rows]
