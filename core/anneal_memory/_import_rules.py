"""The rules an import's links and state keys obey: the ones ``record`` applies.

An export is data from outside the store, so its supersession links, state keys and
derivations are checked by the same functions a write uses (:func:`facts.check_link`
and :func:`facts.check_key_trust`): the trust ceiling (relayed content cannot hide a
more trusted record), the namespace (an episode of another namespace reads as an
unknown id), existence, the supersede floor, no cycle. The first refusal raises a typed
error naming the entry (its index and field) inside the import's one transaction, so
nothing is written. Malformed fields are ``ValidationError`` before anything is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import facts
from ._seam import roles_of
from .clock import normalize_timestamp
from .errors import SupersessionError, ValidationError
from .storage.base import EpisodeRow

if TYPE_CHECKING:
    from ._unit import Facade

#: the link kinds a store writes (a state_key link is recomputed from the keys, never
#: taken from the file)
LINK_KINDS = ("explicit", "state_key", "wrap", "rewired")


def links_in(doc: Mapping[str, Any], check_id: Any) -> list[dict[str, Any]]:
    """The export's ``supersessions``, each field validated (``check_id`` validates an
    id as the episodes' are)."""
    raw = doc.get("supersessions")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError("the import's 'supersessions' must be a list of objects with "
                              f"old_id, new_id, kind and created_at, not {type(raw).__name__}")
    out = []
    for i, link in enumerate(raw):
        where = f"supersessions[{i}]"
        if not isinstance(link, Mapping):
            raise ValidationError(f"{where} is not an object")
        old = check_id(link.get("old_id"), f"{where} old_id")
        new = check_id(link.get("new_id"), f"{where} new_id")
        kind = link.get("kind") or "explicit"
        if kind not in LINK_KINDS:
            raise ValidationError(f"{where} kind {str(kind)[:40]!r} is not a link kind: use one "
                                  f"of {', '.join(LINK_KINDS)}")
        created = link.get("created_at")
        created = (normalize_timestamp(created, field=f"{where} created_at")
                   if created is not None else None)
        out.append({"index": i, "old_id": old, "new_id": new, "kind": kind,
                    "created_at": created})
    return out


class ImportRules:
    """The checks for one import, with a view per namespace the import writes in (a
    state key's slot is per namespace, as a view's record sees it)."""

    def __init__(self, store: Facade) -> None:
        self.store = store
        self._views: dict[tuple[str | None, str | None], Facade] = {}
        self.keys: set[tuple[tuple[str | None, str | None], str]] = set()
        #: ids a source may name besides the store's: the import's own and its deletions
        self.known: set[str] = set()

    def view(self, item: Mapping[str, Any]) -> Facade:
        """The store as the item's namespace sees it (the root store without one)."""
        key = (item["ns_owner"], item["ns_project"])
        if key not in self._views:
            ns = item.get("ns")
            self._views[key] = self.store if ns is None else self.store.scoped(ns)
        return self._views[key]

    def check_episode(self, item: Mapping[str, Any], row: EpisodeRow) -> None:
        """Before ``row`` is written: its sources exist, and its state key does not take
        a more trusted episode's slot."""
        where = f"episode {item['index']} ({row.id})"
        if item["derived_from"]:
            known = set(roles_of(self.store).episodes.get_episodes(item["derived_from"], exact=True))
            missing = [s for s in item["derived_from"] if s not in known and s not in self.known]
            if missing:
                raise ValidationError(f"{where} derived_from names unknown episode(s) "
                                      f"{missing[:5]}: nothing was imported")
        if row.state_key:
            try:
                facts.check_key_trust(self.view(item), row, row.state_key, item["trust"])
            except SupersessionError as exc:
                raise SupersessionError(f"{where} state_key: {exc}; nothing was "
                                        "imported") from None
            self.keys.add(((row.ns_owner, row.ns_project), row.state_key))

    def settle_keys(self) -> None:
        """Recompute each slot an imported episode joined, in its own namespace."""
        for scope, key in sorted(self.keys, key=lambda k: (str(k[0]), k[1])):
            facts.recompute_slot(self._views[scope], key)

    def add_links(self, links: list[dict[str, Any]], new: set[str], gone: set[str]) -> int:
        """Write the links that touch an imported episode, each checked as a link written
        at record time; returns how many were added."""
        from .clock import now_iso

        b = roles_of(self.store)
        added = 0
        for link in links:
            o, n, kind = link["old_id"], link["new_id"], link["kind"]
            if kind == "state_key" or not (o in new or n in new) or {o, n} & gone:
                continue  # recomputed from the keys; not this import's; a deleted end
            where = f"supersessions[{link['index']}] ({o} -> {n}, {kind})"
            rows = b.episodes.get_episodes([o, n], exact=True)
            if n not in rows:
                raise SupersessionError(f"{where} new_id: no episode {n!r} in this store or "
                                        "the import; nothing was imported")
            if n in {x for x, _k, _c in b.links.supersessions_of([o]).get(o, [])}:
                continue
            trust = self.store.effective_trust_map([n]).get(n, rows[n].trust)
            why = facts.check_link(self.store, rows.get(o), o, rows[n], trust, kind=kind)
            if why:
                raise SupersessionError(f"{where} old_id: {why}; nothing was imported")
            b.links.add_supersession(o, n, kind, link["created_at"] or now_iso())
            added += 1
        return added
