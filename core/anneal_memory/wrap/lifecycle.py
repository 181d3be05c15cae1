"""Opening, finding and cancelling the one open wrap of a store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._wrap_age import stale_policy, wrap_age
from ..clock import now_iso
from ..errors import BatonError, WrapInProgressError, WrapTokenError
from ..types import WrapCancelReceipt

if TYPE_CHECKING:
    from .._unit import Facade
    from ..storage.rows import OpenWrapRow


def cancel_wrap(store: Facade, *, wrap_token: str | None = None, session_id: str | None = None,
                force: bool = False, expect_partial: bool = False) -> WrapCancelReceipt:
    """Abandon the open wrap; its episodes go to the next one. A wrap prepared under a
    session needs its token, that session id, or ``force``. Naming a token cancels only
    that wrap: any other (or none) is refused and nothing changes. ``expect_partial`` asks
    to clear only a half-written wrap state, which this store never leaves: an open wrap
    is refused."""
    with store.transaction() as tx:
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
    w = store.repos.wraps.open_wrap()
    return None if w is None else w._asdict()


def take_over_stale(store: Facade, w: OpenWrapRow, session_id: str | None) -> bool:
    """Inside prepare_wrap's transaction: when the store's policy allows it, close the
    stale open wrap ``w`` (its episodes are unwrapped still, so the new wrap takes them
    with the ones since) and audit who took it over. False when the policy is off or the
    wrap is not stale."""
    limit = stale_policy(store)
    age = wrap_age(w._asdict())
    if limit is None or age is None or age <= limit:
        return False
    store.repos.wraps.close_wrap(w.id, "cancelled", now_iso())
    store.audit_trail.append("wrap_taken_over", {
        "wrap_id": w.id, "episodes": len(w.episode_ids), "age_seconds": int(age),
        "stale_wrap_after": int(limit), "session_id": session_id}, actor="system")
    return True
