"""Trust classes: who an episode's content came from, carried through derivation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._seam import roles_of, unit_of
from .clock import now_iso
from .errors import EpisodeNotFoundError, TrustError
from .types import TRUST_LEVELS, coerce_trust

if TYPE_CHECKING:
    from ._unit import Ground

_BY_RANK = sorted(TRUST_LEVELS, key=TRUST_LEVELS.__getitem__)


def check_ceiling(label: str, ceiling: str) -> None:
    """Refuse a trust label above the host's ceiling."""
    if TRUST_LEVELS[label] > TRUST_LEVELS[ceiling]:
        raise TrustError(
            f"trust {label!r} is above this store's trust ceiling {ceiling!r}: only the host "
            "that opens the store can raise the ceiling (Store(..., trust_ceiling=...))"
        )


def within_ceiling(label: str, ceiling: str) -> bool:
    """Whether a host opened at ``ceiling`` could have written a ``label`` episode."""
    return TRUST_LEVELS.get(label, 0) <= TRUST_LEVELS[ceiling]


def lower(a: str, b: str) -> str:
    return a if TRUST_LEVELS[a] <= TRUST_LEVELS[b] else b


def higher(a: str, b: str) -> str:
    return a if TRUST_LEVELS[a] >= TRUST_LEVELS[b] else b


def effective_trust_map(store: Ground, ids: Sequence[str], *,
                        known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Effective trust of each id: its own class, capped at the most trusted of its
    sources, recursively. A removed source counts as the class marked at removal.
    ``known``: own classes already read in this scope (a wrap's scan of its unwrapped
    rows); only the ids it lacks are looked up."""
    r = roles_of(store)
    memo: dict[str, str] = {}

    def eff(eid: str, stack: frozenset[str]) -> str | None:
        if eid in memo:
            return memo[eid]
        rows = r.episodes.get_episodes([eid])
        if eid not in rows:
            return None
        own = rows[eid].trust
        derivs = r.links.derivations_of([eid]).get(eid, [])
        if not derivs:
            memo[eid] = own
            return own
        best: str | None = None
        for src, removed in derivs:
            if removed is not None:
                t = removed
            elif src in stack:
                t = "external"
            else:
                got = eff(src, stack | {eid})
                t = got if got is not None else "external"
            best = t if best is None else higher(best, t)
        result = lower(own, best or own)
        memo[eid] = result
        return result

    out: dict[str, str] = {}
    if known is None:
        own = r.episodes.trusts_of(list(ids))  # one column: a wrap asks this of every episode
    else:
        own = {i: known[i] for i in ids if i in known}
        missing = [i for i in ids if i not in known]
        if missing:
            own.update(r.episodes.trusts_of(missing))
    # a store without derivations (the common case) skips looking each id up in an
    # empty table: one EXISTS instead of an IN list as long as the wrap
    many = len(own) > 8
    derived = (r.links.derivations_of(list(own))
               if own and (not many or r.links.link_tables_used()[1]) else {})
    for eid in ids:
        if eid not in own:
            continue
        if eid not in derived:
            out[eid] = own[eid]
        else:
            out[eid] = eff(eid, frozenset()) or own[eid]
    return out


def set_trust(store: Ground, episode_id: str, trust_class: str, *, via: str = "library") -> str:
    """Change an episode's own class; refused above the store's ceiling. Returns the class
    it had before (as 1.0.2 does)."""
    label = coerce_trust(trust_class)
    check_ceiling(label, store.trust_ceiling)
    with unit_of(store) as tx:
        rows = tx.episodes.get_episodes([episode_id], exact=True)
        if episode_id not in rows:
            raise EpisodeNotFoundError(f"no episode {episode_id!r} in this store: check the id "
                                       "(anneal-memory search)")
        old = rows[episode_id].trust
        tx.episodes.update_episode(episode_id, trust=label)
        tx.audit.append("trust_set", {"id": episode_id, "from": old, "to": label,
                                      "trust_via": via, "at": now_iso()},
                        actor="operator")
    return old
