"""The one open wrap of a store as the Store's own methods see it: reading it and
cancelling it. Kept below the Store so ``Store.wrap_cancelled`` calls down;
:mod:`.wrap.lifecycle` re-exports both names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._seam import roles_of, unit_of
from .clock import now_iso
from .errors import BatonError, WrapInProgressError, WrapTokenError
from .types import WrapCancelReceipt

if TYPE_CHECKING:
    from ._unit import Facade


def cancel_wrap(store: Facade, *, wrap_token: str | None = None, session_id: str | None = None,
                force: bool = False, expect_partial: bool = False) -> WrapCancelReceipt:
    """Abandon the open wrap; its episodes go to the next one. A wrap prepared under a
    session needs its token, that session id, or ``force``. Naming a token cancels only
    that wrap: any other (or none) is refused and nothing changes. ``expect_partial`` asks
    to clear only a half-written wrap state, which this store never leaves: an open wrap
    is refused."""
    with unit_of(store) as tx:
        w = tx.wraps.open_wrap()
        if wrap_token is not None and (w is None or w.token != wrap_token):
            raise WrapTokenError("the named wrap is not the one in progress (saved, cancelled "
                                 "or another): nothing was cancelled")
        if w is None:
            return WrapCancelReceipt(None, None, None, False)
        if expect_partial:
            raise WrapInProgressError("the open wrap is complete, not a partial state: cancel "
                                      "it without partial (its token, session or force)")
        gated = bool(w.session_id) or store.consolidate_requires_baton()
        if gated and not force and wrap_token != w.token and (
                session_id is None or session_id != w.session_id):
            raise BatonError(
                "this wrap was prepared under the baton gate: cancel it with its wrap_token, "
                "the session_id that prepared it, or force=True")
        tx.wraps.close_wrap(w.id, "cancelled", now_iso())
        tx.audit.append("wrap_cancelled", {"wrap_id": w.id,
                                           "episodes": len(w.episode_ids),
                                           "forced": bool(force)}, actor="operator")
    return WrapCancelReceipt(w.token, w.started_at, list(w.episode_ids), False)


def open_wrap_info(store: Facade) -> dict[str, Any] | None:
    """The open wrap's row as a dict (its fields by name), or None when no wrap is open."""
    w = roles_of(store).wraps.open_wrap()
    return None if w is None else w._asdict()
