"""How old an open wrap is, and when it is stale: the store's stale-wrap policy, read by
the Store's status, the wrap's lifecycle (take-over) and the CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._seam import roles_of

if TYPE_CHECKING:
    from ._unit import Facade

#: without a stale_wrap_after policy, status still calls a wrap this old stale (a notice:
#: nothing is taken over)
STALE_WRAP_NOTICE = 3600.0
#: meta key of the stale-wrap policy a store keeps for every host (seconds)
STALE_POLICY_KEY = "stale_wrap_after"


def wrap_age(w: dict[str, Any]) -> float | None:
    """Seconds since the open wrap ``w`` was prepared (None when its time is unreadable)."""
    from .clock import parse_or_none, utcnow

    started = parse_or_none(w.get("started_at"))
    return None if started is None else (utcnow() - started).total_seconds()


def stale_policy(store: Facade) -> float | None:
    """The store's stale-wrap policy in seconds: the Store's ``stale_wrap_after``, else
    the one ``set_stale_wrap_after`` saved in the store (None: off)."""
    policy = getattr(store, "stale_wrap_after", None)
    if policy is not None:
        return float(policy)
    raw = roles_of(store).meta.get_meta(STALE_POLICY_KEY)
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


def stale_wrap(store: Facade, w: dict[str, Any]) -> bool:
    """Whether the open wrap ``w`` is stale: older than the store's stale-wrap policy,
    or than STALE_WRAP_NOTICE without one."""
    age = wrap_age(w)
    limit = stale_policy(store) or STALE_WRAP_NOTICE
    return age is not None and age > limit
