"""The single-consolidator gate: one claimed session may wrap a store.

The baton is a sidecar file beside the store (``<stem>.baton.json``), written atomically
under a lock, never part of the store's database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._fileio import atomic_write_json, file_lock, sidecar_path
from ..clock import now_iso
from ..errors import BatonError, SidecarError, ValidationError


def baton_path(db_path: str | Path) -> Path:
    return sidecar_path(db_path, ".baton.json")


def _read(db_path: str | Path) -> dict[str, Any]:
    p = baton_path(db_path)
    if not p.exists():
        return {"holder": None, "claimed_at": None, "history": []}
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise SidecarError(f"the baton file {str(p)!r} is unreadable ({exc}): delete it and "
                           "claim the baton again") from None
    if not isinstance(data, dict):
        raise SidecarError(f"the baton file {str(p)!r} is malformed: delete it and claim again")
    data.setdefault("history", [])
    return data


def baton_status(db_path: str | Path) -> dict[str, Any]:
    """Who holds the baton (``holder`` None when nobody does)."""
    d = _read(db_path)
    return {"holder": d.get("holder"), "claimed_at": d.get("claimed_at"),
            "history": d.get("history", [])[-10:]}


def baton_holder(db_path: str | Path) -> str | None:
    return _read(db_path).get("holder")


def _check_session(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise ValidationError("a session id is a non-empty name of at most 200 characters")
    return session_id.strip()


def claim_baton(db_path: str | Path, session_id: str, *, take: bool = False) -> dict[str, Any]:
    """Designate ``session_id`` as the consolidating session. Taking the baton from
    another session needs ``take=True``."""
    sid = _check_session(session_id)
    p = baton_path(db_path)
    with file_lock(p.with_suffix(".lock")):
        d = _read(db_path)
        holder = d.get("holder")
        if holder and holder != sid and not take:
            raise BatonError(f"the baton is held by session {holder!r}: take it explicitly "
                             f"(anneal-memory baton claim {sid} --take)")
        d["history"].append({"holder": sid, "at": now_iso(), "from": holder,
                             "took": bool(holder and holder != sid)})
        d["holder"], d["claimed_at"] = sid, now_iso()
        atomic_write_json(p, d)
    return {"holder": sid, "previous": holder}


def release_baton(db_path: str | Path, session_id: str | None = None) -> bool:
    p = baton_path(db_path)
    with file_lock(p.with_suffix(".lock")):
        d = _read(db_path)
        if d.get("holder") is None or (session_id is not None and d["holder"] != session_id):
            return False
        d["history"].append({"holder": None, "at": now_iso(), "from": d["holder"], "took": False})
        d["holder"], d["claimed_at"] = None, None
        atomic_write_json(p, d)
    return True
