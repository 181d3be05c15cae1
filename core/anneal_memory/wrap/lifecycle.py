"""Opening, finding and cancelling the one open wrap of a store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..clock import now_iso
from ..errors import BatonError

if TYPE_CHECKING:
    from ..store import Store


def cancel_wrap(store: Store, *, wrap_token: str | None = None, session_id: str | None = None,
                force: bool = False) -> bool:
    """Abandon the open wrap; its episodes go to the next one. A wrap prepared under a
    session needs its token, that session id, or ``force``."""
    with store._write():
        w = store.backend.open_wrap()
        if w is None:
            return False
        gated = bool(w["session_id"]) or store.consolidate_requires_baton
        if gated and not force and wrap_token != w["token"] and (
                session_id is None or session_id != w["session_id"]):
            raise BatonError(
                "this wrap was prepared under the baton gate: cancel it with its wrap_token, "
                "the session_id that prepared it, or force=True")
        store.backend.close_wrap(w["id"], "cancelled", now_iso())
        store.audit_trail.append("wrap_cancelled", {"wrap_id": w["id"],
                                                    "episodes": len(w["episode_ids"]),
                                                    "forced": bool(force)}, actor="operator")
    return True


def open_wrap_info(store: Store) -> dict[str, Any] | None:
    return store.backend.open_wrap()
