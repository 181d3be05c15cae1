"""Framework data with NaN or ±Infinity in the store's item collections.

A framework's own stores keep such values: the tool result, the model's token scores, a
state field. They write Python's JSON (``NaN``, ``Infinity``: what ``json.dumps`` writes by
default) or keep the objects in memory. The store's item values are strict JSON and refuse
them ("Out of range float values are not JSON compliant"). An adapter that keeps a
framework's records as items stores each one through :func:`item_value` and reads it back
through :func:`from_item_value`: a record without such a value is kept as it is (as
before: existing items read unchanged); one with such a value is kept as its JSON text,
written as Python's JSON writes it, and parsed back with it.

Only for records that are never a string themselves (a message's dict, an event's dict,
a list of entries): a string item value is always such a text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from anneal_memory.errors import ValidationError

__all__ = ["from_item_value", "has_non_finite", "item_value"]


def has_non_finite(value: Any) -> bool:
    """Whether ``value`` holds a NaN or an infinity anywhere in its dicts, lists, tuples."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def item_value(record: Any) -> Any:
    """What an item keeps of ``record`` (a dict or list, never a string): the record, or,
    when it holds NaN or an infinity, its JSON text with ``NaN`` / ``Infinity`` in it."""
    if has_non_finite(record):
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return record


def from_item_value(value: Any, what: str) -> Any:
    """The record an item keeps (see :func:`item_value`); a text that is not JSON is
    refused with a :class:`ValidationError` naming ``what``."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ValidationError(f"{what} is not a stored record (its text is not JSON)") from None
