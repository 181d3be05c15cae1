"""A saved wrap as 1.0.2 lists it: the shape history, diff and the JSON export share."""

from __future__ import annotations

from typing import Any


def wrap_record(w: dict[str, Any]) -> dict[str, Any]:
    """One saved wrap in the shape 1.0.2's history and diff print."""
    m = w.get("metrics") or {}
    return {"id": w["id"], "wrapped_at": w.get("wrapped_at"),
            "episodes_compressed": w.get("episodes_compressed"),
            "continuity_chars": w.get("chars"),
            "graduations_validated": m.get("graduations_validated", 0),
            "graduations_demoted": m.get("graduations_demoted", 0),
            "citation_reuse_max": m.get("citation_reuse_max", 0),
            "patterns_extracted": m.get("patterns_extracted", 0),
            "associations_formed": 0, "associations_strengthened": 0,
            "associations_decayed": 0, "metrics": m}
