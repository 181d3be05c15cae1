"""Opening, finding and cancelling the one open wrap of a store (finding and cancelling
live in :mod:`..wrap_state`, below the Store, whose ``wrap_cancelled`` calls them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._seam import roles_of
from .._wrap_age import stale_policy, wrap_age
from ..clock import now_iso
from ..wrap_state import cancel_wrap as cancel_wrap  # public here as it was
from ..wrap_state import open_wrap_info as open_wrap_info

if TYPE_CHECKING:
    from .._unit import Facade
    from ..storage.rows import OpenWrapRow


def take_over_stale(store: Facade, w: OpenWrapRow, session_id: str | None) -> bool:
    """Inside prepare_wrap's transaction: when the store's policy allows it, close the
    stale open wrap ``w`` (its episodes are unwrapped still, so the new wrap takes them
    with the ones since) and audit who took it over. False when the policy is off or the
    wrap is not stale."""
    limit = stale_policy(store)
    age = wrap_age(w._asdict())
    if limit is None or age is None or age <= limit:
        return False
    roles_of(store).wraps.close_wrap(w.id, "cancelled", now_iso())
    store.audit_trail.append("wrap_taken_over", {
        "wrap_id": w.id, "episodes": len(w.episode_ids), "age_seconds": int(age),
        "stale_wrap_after": int(limit), "session_id": session_id}, actor="system")
    return True
