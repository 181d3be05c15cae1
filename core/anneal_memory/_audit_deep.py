"""The deep check: every stored episode against the audit entry that recorded it.

The hash chain proves the trail was not rewritten; this proves the episodes table was not
rewritten under it. Each episode's content (its salted hash), type, trust class and
namespace must be what the trail last said of it: the ``record`` entry (or the
``import_hashes`` entry of an import), as changed by later ``trust_set`` entries. An
episode no entry covers (written before its store kept per-episode entries, e.g. by an
import of an earlier build) is listed as uncovered, never counted as a match.

Cost: one pass over the trail and one over the episodes, hashing each content once:
linear in both (measured in the closing note of issue 29: about 2 s per 100k episodes).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .audit import same_label

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


def import_hash_entries(store: Any, rows: list[Any]) -> list[dict[str, Any]]:
    """The data of the ``import_hashes`` entries for imported rows: per batch, each id's
    type, trust, namespace and a prefix of its salted content hash."""
    trail = store.audit_trail
    out = []
    for i in range(0, len(rows), IMPORT_HASH_BATCH):
        batch = rows[i:i + IMPORT_HASH_BATCH]
        out.append({"episodes": {
            r.id: [trail.hash_content(r.content)[:IMPORT_HASH_HEX], r.type, r.trust,
                   trail.redact("record", {"namespace": _ns(r.ns_owner, r.ns_project)})[
                       "namespace"]] for r in batch}})
    return out


def _ns(owner: str | None, project: str | None) -> dict[str, Any] | None:
    if owner is None:
        return None
    tenant, user, agent = json.loads(owner)
    return {"tenant": tenant, "user": user, "project": project, "agent": agent}


def deep_check(store: Any) -> ContentCheck:
    """Compare every episode of ``store`` (the root: all of them) with its audit entry."""
    trail = store.audit_trail
    b = store.repos
    want: dict[str, dict[str, Any]] = {}
    with b.read():
        for entry in trail.entries():
            ev, d = entry.get("event"), entry.get("data") or {}
            if ev == "record" and isinstance(d.get("episode_id"), str):
                want[d["episode_id"]] = {"hash": d.get("content_hash"), "type": d.get("type"),
                                         "trust": d.get("trust"),
                                         "namespace": d.get("namespace")}
            elif ev == "import_hashes":
                for eid, (h, typ, tr, ns) in (d.get("episodes") or {}).items():
                    want[eid] = {"hash": h, "type": typ, "trust": tr, "namespace": ns,
                                 "prefix": True}
            elif ev == "trust_set" and d.get("id") in want:
                want[d["id"]]["trust"] = d.get("to")
        result = ContentCheck()
        for row in b.episodes.all_episodes():
            result.checked += 1
            w = want.get(row.id)
            if w is None:
                result.uncovered.append(row.id)
                continue
            got_hash = trail.hash_content(row.content)
            ok_hash = (got_hash.startswith(w["hash"]) if w.get("prefix")
                       else w["hash"] == got_hash) if isinstance(w["hash"], str) else False
            clear = {"type": row.type, "trust": row.trust,
                     "namespace": _ns(row.ns_owner, row.ns_project)}
            stored = trail.redact("record", clear)  # as the trail writes them now
            checks = [("content", ok_hash)] + [
                (k, w[k] == clear[k] or bool(same_label(w[k], stored[k])))
                for k in ("type", "trust", "namespace")]
            for name, ok in checks:
                if not ok:
                    result.mismatches.append({"episode_id": row.id, "field": name})
    return result
