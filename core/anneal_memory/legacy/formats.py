"""Documents in 1.0.2's layout read into ours: the crystal and spore sidecars (written
back in ours on their next change) and a JSON export (imported by ``Store.import_``); and
a saved wrap in the shape 1.0.2 lists it (history, diff and the JSON export share it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypedDict

from ..errors import StoreError, ValidationError

# --------------------------------------------------------------------------- sidecars

_SPORE_NUM = re.compile(r"(\d+)$")


def _listed(value: object) -> list[object]:
    """``list(value or [])`` for a JSON value: a non-iterable raises TypeError, as
    ``list()`` does."""
    if not value:
        return []
    if isinstance(value, Iterable):
        return list(value)
    raise TypeError(f"{type(value).__name__!r} object is not iterable")


def adopt_crystals(data: dict[str, object]) -> dict[str, object]:
    """A crystal document in our layout; 1.0.2's (``crystal`` and ``retired`` lists, the
    text under ``explanation``, evidence as bare ids) is converted."""
    if "crystals" in data or not ("crystal" in data or "retired" in data):
        return data
    rows = []
    retired_rows = _listed(data.get("retired"))
    for src in _listed(data.get("crystal")) + retired_rows:
        if not isinstance(src, dict):
            raise StoreError("a 1.0.2 crystal file holds a row that is not an object: "
                             "repair it by hand")
        retired = src.get("status") == "retired" or src in retired_rows
        rows.append({
            "name": src.get("name", ""), "text": src.get("explanation") or src.get("name", ""),
            "level": src.get("level", 2),
            "evidence": [{"id": str(e), "why": ""} for e in src.get("evidence") or []],
            "crystallized_on": src.get("crystallized_on", ""),
            "last_activated_on": src.get("last_activated_on", ""),
            "status": "retired" if retired else "live", "retirement": src.get("retirement"),
            "permanence": src.get("permanence", "timeless"),
            "activation_mode": src.get("activation_mode", "just-in-time"),
            "tags": list(src.get("tags") or []), "source": src.get("source"),
            "notes": list(src.get("notes") or []),
        })
    return {"schema_version": 1, "crystals": rows, "surfaced_mark": None}


def adopt_spores(data: dict[str, object]) -> dict[str, object]:
    """A spore document in our layout; 1.0.2's (``spores`` open, ``resolved`` closed) is
    converted, and the id counter continues after its highest ``spore-NNN``."""
    if "open" in data or not ("spores" in data or "resolved" in data):
        return data
    opened = [dict(r) for r in _listed(data.get("spores")) if isinstance(r, dict)]
    closed = [dict(r, status="resolved") for r in _listed(data.get("resolved"))
              if isinstance(r, dict)]
    nums = [int(m.group(1)) for r in opened + closed
            if (m := _SPORE_NUM.search(str(r.get("id", ""))))]
    return {"schema_version": 1, "last_id": max(nums, default=0), "open": opened,
            "closed": closed}


# --------------------------------------------------------------------------- JSON export

def is_legacy_export(doc: object) -> bool:
    """A JSON export 1.0.2 wrote: ``anneal_memory_export: true`` and none of our ``format``
    key (ours carry both)."""
    return isinstance(doc, dict) and doc.get("anneal_memory_export") is True \
        and "format" not in doc


def _small_int(value: object) -> int | None:
    """A wrap or session number written as 12 or "12"; None for anything else (a "²",
    a 5,000-digit number, a bool), which then counts as no wrap."""
    if isinstance(value, bool):
        return None
    text = str(value).strip() if isinstance(value, (int, str)) else ""
    if not (text.isascii() and text.isdecimal()) or len(text) > 18:
        return None
    return int(text)


def adopt_export(doc: dict[str, object], fmt: str, version: int) -> dict[str, object]:
    """A 1.0.2 export in our export layout, for ``Store.import_``: trust defaults to agent
    (1.0.2 writes it only when it is not), an episode counts as wrapped when its session
    number is one of the exported wraps, and each link keeps its kind. 1.0.2 exports
    carry no state keys or tombstones; their wraps and retired association links are not
    imported. ``fmt`` and ``version`` are the export format's name and version the result
    carries (the export module's, passed in so that this module does not import it)."""

    for key in ("episodes", "supersessions", "wraps", "associations"):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            raise ValidationError(f"the 1.0.2 export's {key!r} must be a list, not "
                                  f"{type(doc[key]).__name__}")
    wraps = {n for n in (_small_int(w.get("id")) for w in _listed(doc.get("wraps"))
                         if isinstance(w, dict)) if n is not None}
    episodes: list[object] = []
    for e in _listed(doc.get("episodes")):
        if not isinstance(e, dict):
            episodes.append(e)  # refused, with its position, by the import's checks
            continue
        session = _small_int(e.get("session_id"))
        episodes.append({
            "id": e.get("id"), "timestamp": e.get("timestamp"), "type": e.get("type"),
            "content": e.get("content"), "source": e.get("source") or "agent",
            "session_id": e.get("session_id"), "metadata": e.get("metadata"),
            "trust": e.get("trust") or "agent", "state_key": e.get("state_key"),
            "derived_from": list(e.get("derived_from") or []),
            "wrapped": session is not None and session in wraps,
        })
    kinds = {"state_key": "state_key", "wrap": "wrap", "rewired": "rewired"}
    links = [{"old_id": s.get("old_id"), "new_id": s.get("new_id"),
              "kind": kinds.get(str(s.get("source")), "explicit"),
              "created_at": s.get("recorded_at")} if isinstance(s, dict) else s
             for s in _listed(doc.get("supersessions"))]  # a non-object: refused by position
    return {"format": fmt, "version": version, "episodes": episodes, "supersessions": links,
            "tombstones": [], "continuity": doc.get("continuity"),
            "legacy": {"from_version": str(doc.get("version")), "wraps": len(wraps),
                       "associations": len(_listed(doc.get("associations")))}}


# --------------------------------------------------------------------------- wraps

class LegacyWrap(TypedDict):
    """A saved wrap as 1.0.2's history, diff and export list it (``wrap_record``); its
    values are the stored wrap's, as read."""

    id: object
    wrapped_at: object
    episodes_compressed: object
    continuity_chars: object
    graduations_validated: object
    graduations_demoted: object
    citation_reuse_max: object
    patterns_extracted: object
    associations_formed: int
    associations_strengthened: int
    associations_decayed: int
    metrics: Mapping[str, object]


def wrap_record(w: Mapping[str, object]) -> LegacyWrap:
    """One saved wrap in the shape 1.0.2's history and diff print."""
    metrics = w.get("metrics")
    m: Mapping[str, object] = metrics if isinstance(metrics, Mapping) and metrics else {}
    return {"id": w["id"], "wrapped_at": w.get("wrapped_at"),
            "episodes_compressed": w.get("episodes_compressed"),
            "continuity_chars": w.get("chars"),
            "graduations_validated": m.get("graduations_validated", 0),
            "graduations_demoted": m.get("graduations_demoted", 0),
            "citation_reuse_max": m.get("citation_reuse_max", 0),
            "patterns_extracted": m.get("patterns_extracted", 0),
            "associations_formed": 0, "associations_strengthened": 0,
            "associations_decayed": 0, "metrics": m}
