"""Input checks the public entry points share, so every bad value is refused the same
way: a ValidationError naming the field, raised before anything is written.

What SQLite and JSON cannot hold is refused here instead of surfacing as
UnicodeEncodeError, OverflowError or RecursionError from deep inside a query:
text with a NUL or a lone surrogate (half of a UTF-16 pair, e.g. from a broken
decoder), whole numbers beyond what a query can bind, and JSON nested too deep.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ValidationError

#: The largest count, limit or offset accepted: far beyond any store, far below the
#: 64-bit integers SQLite binds (doubling it for a candidate pool still fits).
MAX_COUNT = 10**12

#: How deeply nested a JSON document (an import, a metadata dict) may be.
MAX_JSON_DEPTH = 200

#: The longest episode ``record()`` takes by default (``Store(max_episode_chars=...)``):
#: about 25,000 tokens, far above a turn, a decision or a tool result's gist, far below the
#: documents that would crowd a wrap prompt out. Imports keep a longer one whole.
DEFAULT_MAX_EPISODE_CHARS = 100_000


def episode_bound(value: Any) -> int | None:
    """A ``max_episode_chars`` option: a whole number >= 1, or None for no bound."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"max_episode_chars must be a whole number >= 1 (or None for no "
                              f"bound), not {value!r}")
    return value


def check_episode_size(content: str, bound: int | None) -> None:
    """A ContentTooLargeError when ``content`` is longer than ``bound`` characters."""
    if bound is not None and len(content) > bound:
        from .errors import ContentTooLargeError

        raise ContentTooLargeError(
            f"content is {len(content):,} characters, over this store's bound of {bound:,} "
            "(Store(max_episode_chars=...)): record a summary that names where the full "
            "document lives, or open the store with a larger bound (None: no bound)")


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text``, or None when it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def storable_text(value: Any, field: str, *, allow_empty: bool = False,
                  allow_nul: bool = False) -> str:
    """``value`` when it is a string the database can store; otherwise a ValidationError
    that says what is wrong with it."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, not {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValidationError(f"{field} is empty: pass some text")
    if not allow_nul and "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character: remove it")
    at = lone_surrogate(value)
    if at is not None:
        raise ValidationError(
            f"{field} holds a lone surrogate (U+{ord(value[at]):04X} at position {at}), "
            "which is not valid Unicode text: decode the input as UTF-8 (or replace it)")
    return value


def whole_number(value: Any, field: str, *, minimum: int = 0,
                 maximum: int = MAX_COUNT) -> int:
    """``value`` when it is an int (not a bool) in ``minimum..maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**15 else "a huge number"
        raise ValidationError(
            f"{field} must be a whole number from {minimum} to {maximum}, not {shown}")
    return value


def json_depth_ok(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` (lists and dicts) nests at most ``limit`` levels deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((c, depth + 1) for c in children)
    return True


def json_text(value: Any, field: str) -> str:
    """Canonical JSON of ``value`` (sorted keys, UTF-8 text), refused when it cannot be
    stored: not serialisable, NaN or infinity, nested too deep, or holding a lone
    surrogate."""
    if not json_depth_ok(value):
        raise ValidationError(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep: "
                              "flatten it")
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"{field} must be JSON-serialisable: {exc}") from None
    return storable_text(text, field, allow_empty=True)


#: the largest metadata an episode may carry, as canonical JSON characters (as an MCP
#: episode's content is capped at 100,000): a bound every way in enforces
MAX_METADATA_CHARS = 100_000


def metadata_text(value: Any, field: str = "metadata") -> str:
    """``json_text`` of an episode's metadata, refused past MAX_METADATA_CHARS."""
    text = json_text(value, field)
    if len(text) > MAX_METADATA_CHARS:
        raise ValidationError(f"{field} is {len(text):,} characters as JSON, over the "
                              f"{MAX_METADATA_CHARS:,} an episode's metadata may hold: keep "
                              "large data elsewhere (an item collection) and put its key here")
    return text


def load_json(text: str | bytes, field: str) -> Any:
    """Parse a JSON document, refused (not crashed on) when it is malformed, nested too
    deep, or holds NaN / infinity."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{field} is not UTF-8 text ({exc.reason})") from None

    class _NonFinite(ValueError):
        pass

    def _no_constants(name: str) -> Any:
        raise _NonFinite(name)

    try:
        data = json.loads(text, parse_constant=_no_constants)
    except _NonFinite as exc:
        err = ValidationError(
            f"{field} holds {exc}, which is not a JSON number: this store keeps strict JSON "
            "(1.0.2 kept NaN and Infinity in metadata and wrote them into its exports). "
            'Replace each (with null, or a string such as "NaN") and try again')
        err.fix_included = True  # type: ignore[attr-defined]
        raise err from None
    except RecursionError:
        raise ValidationError(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise ValidationError(f"{field} is not valid JSON ({exc})") from None
    if not json_depth_ok(data):
        raise ValidationError(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep")
    return data
