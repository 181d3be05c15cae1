"""Item collections: keyed, ordered items kept per namespace in the store's database.

What several frameworks need beside episodic memory (a LangGraph ``BaseStore``'s items,
a chat history, an agent SDK's session items or transcripts) lives here once instead of
being rebuilt from episodes in each adapter: ``store.items("history")`` is one
collection of the store's (or a scoped view's) namespace. Values are JSON; filters,
ordering and paging run in SQL on an index led by the namespace, so one user's list
costs what their own items cost. Items are framework state, not memory: they are not
recalled, wrapped or written to the audit trail.
"""

from __future__ import annotations

import builtins
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._seam import roles_of, unit_of
from .clock import now_iso
from .errors import ValidationError

if TYPE_CHECKING:
    from ._unit import Ground

_MAX_KEY = 1000


@dataclass(frozen=True)
class Item:
    """One stored item; ``seq`` orders items by first insertion."""

    key: str
    value: Any
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    seq: int
    collection: str = ""

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value or len(value) > limit or "\x00" in value:
        raise ValidationError(f"an item {name} must be a non-empty string of at most {limit} "
                              f"characters without NUL, not {value!r:.60}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"the item {name} is not valid text (lone surrogate)") from None
    return value


def _json(name: str, value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"the item {name} must be JSON-serialisable: {exc}") from None


def _item(row: tuple[Any, ...]) -> Item:
    return Item(seq=int(row[0]), collection=row[1], key=row[2], value=json.loads(row[3]),
                metadata=json.loads(row[4]) if row[4] else {}, created_at=row[5],
                updated_at=row[6])


def _fields(where: object) -> dict[str, Any] | None:
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise ValidationError("where must be a dict of metadata field -> value")
    for k, v in where.items():
        if not isinstance(k, str) or not k or '"' in k or "\x00" in k:
            raise ValidationError(f"where field {k!r} must be a plain non-empty name")
        if not isinstance(v, (str, int, float, bool)) or isinstance(v, float) and v != v:
            raise ValidationError(f"where value for {k!r} must be a string, number or bool")
    return dict(where)


def _page(limit: Any, offset: Any) -> tuple[int | None, int]:
    for name, v in (("limit", limit), ("offset", offset)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0
                              or v > 2**53):
            raise ValidationError(f"{name} must be a whole number >= 0")
    return limit, offset or 0


class ItemCollection:
    """One named collection of items in one namespace of a Store."""

    def __init__(self, store: Ground, name: str) -> None:
        self.store = store
        self.name = _text("collection name", name, 200)

    def __repr__(self) -> str:
        return f"ItemCollection({self.name!r})"

    def put(self, key: str, value: object, *,
            metadata: Mapping[str, object] | None = None) -> Item:
        """Insert or replace the item at ``key`` (durable when it returns)."""
        k = _text("key", key, _MAX_KEY)
        v = _json("value", value)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("item metadata must be a dict (or None)")
        m = _json("metadata", dict(metadata)) if metadata else None
        with unit_of(self.store) as tx:
            row = tx.items.item_put(self.name, k, v, m, now_iso())
        return _item(row)

    def append(self, value: object, *, metadata: Mapping[str, object] | None = None) -> Item:
        """Add an item under a new key that sorts after every earlier one."""
        return self.put(f"{time.time_ns():020d}-{secrets.token_hex(4)}", value, metadata=metadata)

    def get(self, key: str) -> Item | None:
        row = roles_of(self.store).items.item_get(self.name, _text("key", key, _MAX_KEY))
        return None if row is None else _item(row)

    def list(self, *, prefix: str | None = None, where: Mapping[str, object] | None = None,
             contains: str | None = None, order: str = "asc", limit: int | None = None,
             offset: int = 0) -> list[Item]:
        """Items in insertion order (``order="desc"``: newest first), optionally only
        keys starting with ``prefix``, metadata fields equal to ``where``, or values
        containing ``contains`` (case-insensitive); paged by ``limit`` / ``offset``."""
        if order not in ("asc", "desc"):
            raise ValidationError("order must be 'asc' or 'desc'")
        lim, off = _page(limit, offset)
        rows = roles_of(self.store).items.item_list(
            self.name, prefix=_text("prefix", prefix, _MAX_KEY) if prefix else None,
            where=_fields(where), contains=_text("search text", contains, 2000) if contains
            else None, order=order, limit=lim, offset=off)
        return [_item(r) for r in rows]

    def search(self, text: str, *, limit: int = 10) -> builtins.list[Item]:
        """Items whose value contains ``text`` (case-insensitive), newest first."""
        return self.list(contains=text, order="desc", limit=limit)

    def count(self, *, prefix: str | None = None,
              where: Mapping[str, object] | None = None) -> int:
        """How many items ``list`` would return for these filters (unpaged)."""
        return roles_of(self.store).items.item_count(
            self.name, prefix=_text("prefix", prefix, _MAX_KEY) if prefix else None,
            where=_fields(where))

    def delete(self, key: str) -> bool:
        """Remove one item; False when there was none."""
        k = _text("key", key, _MAX_KEY)
        with unit_of(self.store) as tx:
            return bool(tx.items.item_delete(self.name, key=k))

    def delete_prefix(self, prefix: str) -> int:
        """Remove every item whose key starts with ``prefix``; how many went."""
        p = _text("prefix", prefix, _MAX_KEY)
        with unit_of(self.store) as tx:
            return int(tx.items.item_delete(self.name, prefix=p))

    def clear(self) -> int:
        """Remove every item of this collection (in this namespace only)."""
        with unit_of(self.store) as tx:
            return int(tx.items.item_delete(self.name))
