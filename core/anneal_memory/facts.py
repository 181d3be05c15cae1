"""Changed facts: supersession links and state keys.

A link says one episode replaces another; recall then stops serving the old one. An
explicit link is checked like a citation (the old episode exists and is not newer, no
cycle, enough shared words, no trust raise). A state key names a slot that holds one
value at a time: the newest episode in the slot, by its own timestamp, replaces the rest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from ._inputs import storable_text
from ._seam import roles_of, unit_of
from .clock import now_iso
from .errors import EpisodeNotFoundError, SupersessionError, ValidationError
from .storage.base import EpisodeRow
from .text import overlap_fraction_of_shorter
from .types import TRUST_LEVELS

if TYPE_CHECKING:
    from ._unit import Ground

#: minimum shared meaningful words, as a share of the shorter text's
SUPERSEDE_OVERLAP_FLOOR = 0.25
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$")
#: link kinds that recall may swap in for a replaced hit
SWAPPABLE = frozenset({"explicit", "state_key"})


class FactVersion(TypedDict):
    """One episode of a state-key slot, as the state reports show it."""

    id: str
    timestamp: str
    content: str


class StateSlot(TypedDict):
    """A slot of :func:`state_report`: the episode holding it and those it replaced, newest
    first."""

    key: str
    current: FactVersion
    history: list[FactVersion]


class StateKeySlot(TypedDict):
    """A slot of :func:`state_key_report` (1.0.2's shape)."""

    key: str
    current: list[FactVersion]
    replaced: list[FactVersion]


class StateKeyCleared(TypedDict):
    """What :func:`clear_state_key` did: the slot ``key`` (None when the episode held
    none), the links ``removed`` and ``added`` as [old_id, new_id] pairs, and the episodes
    ``left_live``."""

    key: str | None
    removed: list[list[str]]
    added: list[list[str]]
    left_live: list[str]


class ChainLink(TypedDict):
    """One link of :func:`supersession_chain`."""

    old_id: str
    new_id: str
    kind: str
    created_at: str | None


def normalize_ids(value: object, field: str) -> list[str]:
    """``value`` (None, one id or a list of ids) as a list of distinct stripped ids;
    anything else is refused with a ValidationError."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, set)):
        raise ValidationError(f"{field} must be a list of episode ids")
    seen: dict[str, None] = {}  # insertion-ordered set: linear in the number of ids
    for v in value:
        if not isinstance(v, str) or not v.strip():
            raise ValidationError(f"{field} holds an empty or non-string id: {v!r}")
        seen.setdefault(v.strip())
    return list(seen)


def validate_state_key(key: object) -> str:
    """``key`` stripped, if it can name a state-key slot (else SupersessionError)."""
    if not isinstance(key, str) or not key.strip():
        raise SupersessionError("state key is empty: name the slot, e.g. user.home_city")
    k = key.strip()
    if len(k) > 200 or not _KEY_RE.match(k):
        raise SupersessionError(
            f"state key {key!r} has characters a key cannot hold: use letters, digits and "
            ". _ - : / @ + (e.g. user.home_city or user.pet/archie), at most 200 characters"
        )
    return k


def _reaches(store: Ground, start: str, target: str) -> bool:
    """Does a chain of links lead from ``start`` (as old) to ``target``?"""
    seen, frontier = {start}, [start]
    while frontier:
        nxt = []
        for links in roles_of(store).links.supersessions_of(frontier).values():
            for new, _k, _c in links:
                if new == target:
                    return True
                if new not in seen:
                    seen.add(new)
                    nxt.append(new)
        frontier = nxt
    return False


def check_link(store: Ground, old: EpisodeRow | None, old_id: str, new: EpisodeRow,
               new_trust: str, *, kind: str) -> str | None:
    """Why ``old_id -> new`` cannot be a link, or None if it can (record, supersede, a
    wrap's proposals and an import's links all ask this)."""
    if old_id == new.id:
        return "an episode cannot supersede itself"
    if old is None or old.scope != new.scope:
        # another namespace's episode reads exactly like an unknown id
        return f"no episode {old_id!r} in this store"
    if old.state_key:
        return (f"episode {old_id} holds state key {old.state_key!r}: a keyed episode is replaced "
                "only through its key (record the update with the same state_key)")
    if new.state_key:
        return (f"the new episode holds state key {new.state_key!r}: a keyed episode takes part "
                "in links only through its key")
    if old.timestamp > new.timestamp:
        return f"episode {old_id} is newer than the episode that would replace it"
    if _reaches(store, new.id, old_id):
        return "the link would close a cycle"
    eff_old = store.effective_trust_map([old_id]).get(old_id, old.trust)
    if TRUST_LEVELS[new_trust] < TRUST_LEVELS[eff_old]:
        return (f"a {new_trust} episode cannot supersede a {eff_old} one: relayed content "
                "cannot hide a more trusted record")
    if kind != "rewired" and overlap_fraction_of_shorter(old.content, new.content) < SUPERSEDE_OVERLAP_FLOOR:
        # a rewired link (a delete joined old to what replaced the removed middle) is
        # checked for everything else: its two texts need not share words
        return ("the two texts share too few words (fewer than a quarter of the shorter one's "
                "meaningful words): link the episode this one really updates, or use a state key")
    return None


def validate_explicit_links(store: Ground, new: EpisodeRow, olds: Sequence[str],
                            derived_from: Sequence[str]) -> None:
    rows = roles_of(store).episodes.get_episodes(list(olds))
    new_trust = new_episode_trust(store, new.trust, derived_from)
    for old_id in olds:
        why = check_link(store, rows.get(old_id), old_id, new, new_trust, kind="explicit")
        if why:
            raise SupersessionError(f"cannot record supersedes={old_id!r}: {why}; nothing was recorded")


def check_key_trust(store: Ground, row: EpisodeRow, key: str, trust_label: str | None = None) -> None:
    """Refuse a state-key update that would hide a more trusted holder of the key: relayed
    content cannot replace an operator's fact through a key any more than through an
    explicit ``supersedes`` link."""
    holders = [m for m in roles_of(store).episodes.state_key_holders(key) if m.id != row.id]
    if not holders or any(m.timestamp > row.timestamp for m in holders):
        return  # nothing held, or the row goes into the key's history and hides nothing
    mine = trust_label or store.effective_trust_map([row.id]).get(row.id, row.trust)
    eff = store.effective_trust_map([m.id for m in holders])
    for m in holders:
        theirs = eff.get(m.id, m.trust)
        if TRUST_LEVELS[mine] < TRUST_LEVELS[theirs]:
            raise SupersessionError(
                f"a {mine} episode cannot take state key {key!r} from a {theirs} one: relayed "
                "content cannot hide a more trusted record; record it without the key (or "
                "with operator trust); nothing was recorded")


def new_episode_trust(store: Ground, label: str, derived_from: Sequence[str]) -> str:
    """A new episode's effective trust: its label, capped by its most trusted source."""
    from . import trust

    if not derived_from:
        return label
    src = trust.effective_trust_map(store, list(derived_from))
    if not src:
        return label
    return trust.lower(label, max(src.values(), key=TRUST_LEVELS.__getitem__))


def apply_state_key(store: Ground, row: EpisodeRow) -> list[str]:
    """Recompute a slot after ``row`` joined it; return the ids newly replaced."""
    return _recompute_slot(store, row.state_key or "", audit=False)


def recompute_slot(store: Ground, key: str) -> list[str]:
    """Relink the slot ``key`` (in ``store``'s namespace) so its newest holder replaces
    the rest; returns the ids newly replaced (an import settles its keys with this)."""
    return _recompute_slot(store, key, audit=False)


def _recompute_slot(store: Ground, key: str, *, audit: bool) -> list[str]:
    r = roles_of(store)
    members = r.episodes.state_key_holders(key)
    member_ids = {m.id for m in members}
    before = {o for o, links in r.links.supersessions_of(list(member_ids)).items()
              if any(k == "state_key" for _n, k, _c in links)}
    for m in members:
        for new, kind, _c in r.links.supersessions_of([m.id]).get(m.id, []):
            if kind == "state_key":
                r.links.remove_supersession(m.id, new)
    if not members:
        return []
    head = max(members, key=lambda m: (m.timestamp, m.rowid))
    for m in members:
        if m.id != head.id:
            r.links.add_supersession(m.id, head.id, "state_key", now_iso())
    after = {m.id for m in members if m.id != head.id}
    return sorted(after - before)


def set_state_key(store: Ground, episode_id: str, key: str) -> list[tuple[str, str]]:
    """Key an existing episode; returns the links the slot gained, as (old_id, new_id)."""
    k = validate_state_key(key)
    with unit_of(store) as tx:
        rows = tx.episodes.get_episodes([episode_id], exact=True)
        if episode_id not in rows:
            raise EpisodeNotFoundError(f"no episode {episode_id!r} in this store: check the id")
        row = rows[episode_id]
        check_key_trust(store, row, k)
        explicit = [n for n, kind, _ in tx.links.supersessions_of([episode_id]).get(episode_id, [])
                    if kind != "state_key"]
        if explicit or any(kind in ("explicit", "wrap")
                           for _o, kind in tx.links.superseded_by_new(episode_id)):
            raise SupersessionError(
                f"episode {episode_id} takes part in explicit supersession links: remove them "
                "with unsupersede before keying it")
        old_key = row.state_key
        before = _slot_links(store, k)
        tx.episodes.update_episode(episode_id, state_key=k)
        if old_key and old_key != k:
            _recompute_slot(store, old_key, audit=False)
        replaced = _recompute_slot(store, k, audit=False)
        added = sorted(_slot_links(store, k) - before)
        tx.audit.append("state_key_set", {"id": episode_id, "key": k, "replaced": replaced},
                        actor="operator")
    return added


def _slot_links(store: Ground, key: str) -> set[tuple[str, str]]:
    """The state-key links (old_id, new_id) among the holders of ``key``."""
    ids = [m.id for m in roles_of(store).episodes.state_key_holders(key)]
    return {(old, new) for old, links in roles_of(store).links.supersessions_of(ids).items()
            for new, kind, _c in links if kind == "state_key"}


def clear_state_key(store: Ground, episode_id: str) -> StateKeyCleared:
    """Take an episode out of its slot. Returns ``key`` (None when it held none), the links
    ``removed`` and ``added`` as [old_id, new_id] pairs, and ``left_live``: episodes the
    slot no longer hides."""
    storable_text(episode_id, "episode id")
    with unit_of(store) as tx:
        rows = tx.episodes.get_episodes([episode_id], exact=True)
        if episode_id not in rows:
            raise EpisodeNotFoundError(f"no episode {episode_id!r} in this store: check the id")
        key = rows[episode_id].state_key
        if not key:
            return {"key": None, "removed": [], "added": [], "left_live": []}
        before = _slot_links(store, key)
        for new, kind, _ in tx.links.supersessions_of([episode_id]).get(episode_id, []):
            if kind == "state_key":
                tx.links.remove_supersession(episode_id, new)
                before.add((episode_id, new))
        tx.episodes.update_episode(episode_id, state_key=None)
        _recompute_slot(store, key, audit=False)
        after = _slot_links(store, key)
        hidden_after = {o for o, _n in after}
        tx.audit.append("state_key_cleared", {"id": episode_id, "key": key},
                        actor="operator")
    return {"key": key, "removed": [list(x) for x in sorted(before - after)],
            "added": [list(x) for x in sorted(after - before)],
            "left_live": sorted({o for o, _n in before if o not in hidden_after
                                 and o != episode_id})}


def state_report(store: Ground, key: str | None = None) -> list[StateSlot]:
    """Each state-key slot (or only ``key``'s): its current holder and its history."""
    if key is not None:
        storable_text(key, "state key")
    rows = roles_of(store).episodes.state_key_holders(key)
    slots: dict[str, list[EpisodeRow]] = {}
    for r in rows:
        slots.setdefault(r.state_key or "", []).append(r)
    out: list[StateSlot] = []
    for k, members in sorted(slots.items()):
        head = max(members, key=lambda m: (m.timestamp, m.rowid))
        history = sorted((m for m in members if m.id != head.id),
                         key=lambda m: (m.timestamp, m.rowid), reverse=True)
        out.append({
            "key": k,
            "current": {"id": head.id, "timestamp": head.timestamp, "content": head.content},
            "history": [{"id": m.id, "timestamp": m.timestamp, "content": m.content}
                        for m in history],
        })
    return out


def supersede(store: Ground, old_id: str, new_id: str) -> bool:
    """Link ``new_id`` as replacing ``old_id`` after the fact, validated as a link written
    at record time; False when the link already exists."""
    with unit_of(store) as tx:
        rows = tx.episodes.get_episodes([old_id, new_id])
        new = rows.get(new_id)
        if new is None:
            raise EpisodeNotFoundError(f"no episode {new_id!r} in this store: check the id")
        if new_id in {n for n, _k, _c in tx.links.supersessions_of([old_id]).get(old_id, [])}:
            return False
        new_trust = store.effective_trust_map([new_id]).get(new_id, new.trust)
        why = check_link(store, rows.get(old_id), old_id, new, new_trust, kind="explicit")
        if why:
            raise SupersessionError(f"cannot link {old_id} -> {new_id}: {why}")
        tx.links.add_supersession(old_id, new_id, "explicit", now_iso())
        tx.audit.append("supersede", {"old_id": old_id, "new_id": new_id},
                        actor="operator")
    return True


def state_key_report(store: Ground, key: str | None = None) -> list[StateKeySlot]:
    """1.0.2's shape of the state report: per key, ``current`` and ``replaced`` as lists of
    ``{id, timestamp, content}``."""
    return [{"key": slot["key"], "current": [slot["current"]], "replaced": slot["history"]}
            for slot in state_report(store, key)]


def unsupersede(store: Ground, old_id: str, new_id: str) -> bool:
    """Remove the link ``old_id -> new_id``; False when both episodes exist and no such
    link does (as 1.0.2). An id this store (or view) does not hold is refused."""
    storable_text(old_id, "old_id")
    storable_text(new_id, "new_id")
    with unit_of(store) as tx:
        mine = tx.episodes.get_episodes([old_id, new_id], exact=True)
        missing = [i for i in (old_id, new_id) if i not in mine]
        if missing:
            raise SupersessionError(f"no episode {missing[0]!r} in this store: there is no "
                                    f"link {old_id} -> {new_id} to remove")
        links = tx.links.supersessions_of([old_id]).get(old_id, []) if old_id in mine else []
        kinds = {n: k for n, k, _ in links if n in mine}
        if new_id not in kinds:
            return False
        tx.links.remove_supersession(old_id, new_id)
        tx.audit.append("unsupersede", {"old_id": old_id, "new_id": new_id,
                                        "kind": kinds[new_id]}, actor="operator")
    return True


def propose_wrap_link(store: Ground, old_id: str, new_id: str, snapshot: set[str]) -> str | None:
    """Record a link a wrap proposed; return why it was rejected, or None."""
    r = roles_of(store)
    rows = r.episodes.get_episodes([old_id, new_id], exact=True)
    if new_id not in snapshot:
        return f"{new_id} is not an episode of this wrap"
    new = rows.get(new_id)
    if new is None:
        return f"no episode {new_id!r} in this store"
    new_trust = store.effective_trust_map([new_id]).get(new_id, new.trust)
    why = check_link(store, rows.get(old_id), old_id, new, new_trust, kind="wrap")
    if why:
        return why
    existing = {n for n, _k, _c in r.links.supersessions_of([old_id]).get(old_id, [])}
    if new_id not in existing:
        r.links.add_supersession(old_id, new_id, "wrap", now_iso())
    return None


def detach_links(store: Ground, eid: str) -> None:
    """Before an episode is removed: drop its outgoing links and rewire links that
    pointed at it to what replaced it (never swapped in by recall)."""
    r = roles_of(store)
    onward = [n for n, _k, _c in r.links.supersessions_of([eid]).get(eid, [])]
    incoming = r.links.superseded_by_new(eid)
    r.links.delete_supersessions_touching([eid])
    if onward:
        for old, _kind in incoming:
            if old != onward[-1]:
                r.links.add_supersession(old, onward[-1], "rewired", now_iso())


def link_chain_head(store: Ground, eid: str) -> tuple[str | None, bool]:
    """Follow links from a replaced episode to the live one that replaces it.

    Returns (head id, swappable): swappable is False when any link on the way was
    proposed by a wrap or rewired by a delete.
    """
    r = roles_of(store)
    cur, swappable, seen = eid, True, {eid}
    while True:
        links = r.links.supersessions_of([cur]).get(cur, [])
        if not links:
            return (None if cur == eid else cur), swappable
        new, kind, _ = links[-1]
        if kind not in SWAPPABLE:
            swappable = False
        if new in seen:
            return None, False
        seen.add(new)
        cur = new


#: how far ``supersession_chain`` walks each way (a chain longer than this is cut)
CHAIN_LIMIT = 100


def supersession_chain(store: Ground, episode_id: str) -> list[ChainLink]:
    """The replacement chain through an episode, oldest first: each link ``{"old_id",
    "new_id", "kind", "created_at"}`` (kind ``explicit``, ``state_key``, ``wrap`` or
    ``rewired``), walking back through what it replaced and on through what replaced it.
    Only episodes this store (or view) can see are followed."""
    storable_text(episode_id, "episode id")
    r = roles_of(store)
    if episode_id not in r.episodes.get_episodes([episode_id]):
        raise EpisodeNotFoundError(f"no episode {episode_id!r} in this store: check the id "
                                   "(anneal-memory search)")
    links: dict[tuple[str, str], ChainLink] = {}
    todo, seen = [episode_id], {episode_id}
    while todo and len(seen) <= CHAIN_LIMIT:
        cur = todo.pop()
        found: list[tuple[str, str, str, str | None]] = [
            (cur, n, k, c) for n, k, c in r.links.supersessions_of([cur]).get(cur, [])]
        found += [(o, cur, k, None) for o, k in r.links.superseded_by_new(cur)]
        visible = r.episodes.get_episodes([x for f in found for x in f[:2]])
        for old, new, kind, created in found:
            if old not in visible or new not in visible:
                continue
            rec = links.setdefault((old, new), {"old_id": old, "new_id": new, "kind": kind,
                                                "created_at": created})
            rec["created_at"] = rec["created_at"] or created
            for nxt in (old, new):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    stamps = {i: row.timestamp for i, row in r.episodes.get_episodes(list(seen)).items()}
    return sorted(links.values(), key=lambda x: (stamps.get(x["old_id"], ""),
                                                 stamps.get(x["new_id"], "")))
