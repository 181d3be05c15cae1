"""The deep check: every stored episode against the audit entry that recorded it.

The hash chain proves the trail was not rewritten; this proves the tables were not
rewritten under it. Each episode's content (its salted hash), type, trust class,
namespace and state key must be what the trail last said of it: the ``record`` entry (or
the ``import_hashes`` entry of an import), as changed by later ``trust_set`` and
``state_key_set`` / ``state_key_cleared`` entries. An episode no entry covers (written
before its store kept per-episode entries, e.g. by an import of an earlier build) is
listed as uncovered, never counted as a match.

What was removed is checked too (issue 52 item 6): an episode the trail recorded must
still have its row unless a ``delete`` entry or a tombstone (every deletion, prune and
erase leaves one) accounts for it; an explicit supersession link the trail made (a
record's ``supersedes``, ``supersede``, an import's carried links) must still be there while both its episodes are,
unless ``unsupersede`` removed it; and every state-key slot must still link its older
holders to its newest, as the library keeps it. Each finding is a mismatch naming the
episode (``field``: ``row``, ``link`` with ``to``, ``state_key``).

Cost: one pass over the trail and one over the episodes, hashing each content once,
plus one read of the links table and of the tombstones of missing ids: linear in all
(about 2 s per 100k episodes in the closing note of issue 29; at 10k episodes best of
three 0.87-1.16 s before the removal checks, 0.89-1.18 s with them, on a loaded machine).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ._seam import roles_of
from .audit import same_label

if TYPE_CHECKING:
    from ._unit import Facade

#: how many imported episodes one ``import_hashes`` entry covers
IMPORT_HASH_BATCH = 1000
#: hex digits of each imported episode's salted content hash kept in that entry
IMPORT_HASH_HEX = 16


@dataclass
class ContentCheck:
    """The deep check's result: ``valid`` when no stored episode differs from its
    audited record (uncovered ones are reported, not failures)."""

    checked: int = 0
    mismatches: list[dict[str, str]] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "valid": self.valid}

    @staticmethod
    def describe(m: dict[str, str]) -> str:
        """One mismatch in words: ``episode X, its content`` and the like."""
        eid, what = m["episode_id"], m["field"]
        if what == "row":
            return (f"episode {eid}, its row: removed with no deletion, prune, erase or "
                    "tombstone in the audit")
        if what == "link":
            return f"episode {eid}, its link to {m.get('to')}: removed outside the library"
        return f"episode {eid}, its {what}"


def import_hash_entries(store: Facade, rows: list[Any]) -> list[dict[str, Any]]:
    """The data of the ``import_hashes`` entries for imported rows: per batch, each id's
    type, trust, namespace, a prefix of its salted content hash and its state key (hashed
    as the trail writes labels), and the supersession links the import gave them."""
    trail = store.audit_trail
    out = []
    for i in range(0, len(rows), IMPORT_HASH_BATCH):
        batch = rows[i:i + IMPORT_HASH_BATCH]
        episodes: dict[str, list[Any]] = {}
        for r in batch:
            labels = trail.redact("record", {"namespace": _ns(r.ns_owner, r.ns_project),
                                             "state_key": r.state_key})
            episodes[r.id] = [trail.hash_content(r.content)[:IMPORT_HASH_HEX], r.type, r.trust,
                              labels["namespace"], labels["state_key"]]
        # the supersession links the import carried from these episodes (not a slot's:
        # those follow from the state keys)
        carried = roles_of(store).links.supersessions_of([r.id for r in batch])
        links = sorted([old, new] for old, held in carried.items()
                       for new, kind, _c in held if kind != "state_key")
        out.append({"episodes": episodes, **({"links": links} if links else {})})
    return out


def _ns(owner: str | None, project: str | None) -> dict[str, Any] | None:
    if owner is None:
        return None
    tenant, user, agent = json.loads(owner)
    return {"tenant": tenant, "user": user, "project": project, "agent": agent}


def deep_check(store: Facade) -> ContentCheck:
    """Compare every episode of ``store`` (the root: all of them) with its audit entry,
    and what the trail recorded with what is still there: an episode row, an explicit
    link or a state key gone without the entry that removes it is a mismatch."""
    trail = store.audit_trail
    b = roles_of(store)
    want: dict[str, dict[str, Any]] = {}
    # explicit links the trail made and did not unmake: (old, new) -> made
    links: dict[tuple[str, str], bool] = {}
    deleted: set[str] = set()
    with b.read():
        for entry in trail.entries():
            ev, d = entry.get("event"), entry.get("data") or {}
            if ev == "record" and isinstance(d.get("episode_id"), str):
                eid = d["episode_id"]
                want[eid] = {"hash": d.get("content_hash"), "type": d.get("type"),
                             "trust": d.get("trust"), "namespace": d.get("namespace"),
                             "state_key": d.get("state_key")}
                for old in _ids(d.get("supersedes")):
                    links[(old, eid)] = True
            elif ev == "import_hashes":
                for eid, vals in (d.get("episodes") or {}).items():
                    h, typ, tr, ns = vals[:4]
                    want[eid] = {"hash": h, "type": typ, "trust": tr, "namespace": ns,
                                 "prefix": True}
                    if len(vals) > 4:  # imports before this one did not say
                        want[eid]["state_key"] = vals[4]
                for pair in d.get("links") or []:
                    links[(str(pair[0]), str(pair[1]))] = True
            elif ev == "trust_set" and d.get("id") in want:
                want[d["id"]]["trust"] = d.get("to")
            elif ev == "state_key_set" and d.get("id") in want:
                want[d["id"]]["state_key"] = d.get("key")
            elif ev == "state_key_cleared" and d.get("id") in want:
                want[d["id"]]["state_key"] = None
            elif ev == "supersede" and isinstance(d.get("old_id"), str):
                links[(d["old_id"], str(d.get("new_id")))] = True
            elif ev == "unsupersede":
                links.pop((str(d.get("old_id")), str(d.get("new_id"))), None)
            elif ev == "delete" and isinstance(d.get("episode_id"), str):
                deleted.add(d["episode_id"])
        result = ContentCheck()
        present: set[str] = set()
        slots: dict[tuple[str, str | None, str], list[Any]] = {}
        for row in b.episodes.all_episodes():
            result.checked += 1
            present.add(row.id)
            if row.state_key is not None:
                slots.setdefault((row.state_key, row.ns_owner, row.ns_project or ""),
                                 []).append(row)
            w = want.get(row.id)
            if w is None:
                result.uncovered.append(row.id)
                continue
            got_hash = trail.hash_content(row.content)
            ok_hash = (got_hash.startswith(w["hash"]) if w.get("prefix")
                       else w["hash"] == got_hash) if isinstance(w["hash"], str) else False
            clear = {"type": row.type, "trust": row.trust,
                     "namespace": _ns(row.ns_owner, row.ns_project), "state_key": row.state_key}
            stored = trail.redact("record", clear)  # as the trail writes them now
            checks = [("content", ok_hash)] + [
                (k, w[k] == clear[k] or bool(same_label(w[k], stored[k])))
                for k in ("type", "trust", "namespace", "state_key") if k in w]
            for name, ok in checks:
                if not ok:
                    result.mismatches.append({"episode_id": row.id, "field": name})
        # rows the trail recorded and never removed
        missing = [eid for eid in want if eid not in present]
        gone = deleted | set(b.links.tombstones(missing)) if missing else deleted
        for eid in missing:
            if eid not in gone:
                result.mismatches.append({"episode_id": eid, "field": "row"})
        table = {(o, n): k for o, n, k, _c in b.links.all_supersessions()} if (
            links or slots) else {}
        # explicit links between two episodes still here
        for (old, new), _made in links.items():
            if old in present and new in present and (old, new) not in table:
                result.mismatches.append({"episode_id": old, "field": "link", "to": new})
        # a slot's newest holder replaces the rest of it (facts.recompute_slot; an
        # upgraded 1.0.2 store's slots are relinked the same way when it is upgraded)
        for members in slots.values():
            head = max(members, key=lambda m: (m.timestamp, m.rowid))
            for m in members:
                if m.id != head.id and table.get((m.id, head.id)) != "state_key":
                    result.mismatches.append({"episode_id": m.id, "field": "link",
                                              "to": head.id})
    return result


def _ids(value: Any) -> list[str]:
    """Episode ids given as one id or a list of them."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
