"""The one clock: every read and every parse of time in the library goes through here.

Stored timestamps are ISO 8601 in UTC with microseconds; "today" is the UTC date, for
the wrap, the crystal tier, spores and worth alike, so they never disagree near local
midnight. Tests (and hosts that replay a log) freeze it with :func:`frozen`::

    with clock.frozen("2026-11-29T23:59:00Z"):
        ...  # now_iso(), today(), every default timestamp and date read this time

Bad values (unparseable text, a date that overflows once moved to UTC, an age beyond
the calendar) are a :class:`~anneal_memory.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone

from .errors import ValidationError

_REL_RE = re.compile(r"^\s*(\d{1,30})\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _system_now() -> datetime:
    return datetime.now(timezone.utc)


_source: Callable[[], datetime] = _system_now


def utcnow() -> datetime:
    """The current time as an aware UTC datetime (the frozen time inside :func:`frozen`)."""
    dt = _source()
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def set_source(source: Callable[[], datetime] | None) -> None:
    """Replace the time source (None restores the system clock)."""
    global _source
    _source = source or _system_now


@contextlib.contextmanager
def frozen(at: str | datetime | date | Callable[[], datetime]) -> Iterator[None]:
    """Stop the clock at ``at`` (an ISO string, datetime, date, or a callable giving
    the time) for the duration of the block; the previous source comes back after."""
    global _source
    previous = _source
    if callable(at) and not isinstance(at, (datetime, date)):
        _source = at
    else:
        fixed = parse_timestamp(at, field="frozen clock")
        _source = lambda: fixed  # noqa: E731
    try:
        yield
    finally:
        _source = previous


def iso(dt: datetime) -> str:
    """Canonical stored form: ``2026-11-29T12:00:00.000000+00:00``."""
    return _to_utc(dt, "timestamp").isoformat(timespec="microseconds")


def now_iso() -> str:
    return iso(utcnow())


def today() -> date:
    """Today's date in UTC."""
    return utcnow().date()


def today_iso() -> str:
    return today().isoformat()


def stamp(dt: datetime | None = None) -> str:
    """Second-precision UTC stamp ``2026-11-29T12:00:00Z`` (sidecar files)."""
    return _to_utc(dt or utcnow(), "timestamp").strftime("%Y-%m-%dT%H:%M:%SZ")


def _to_utc(dt: datetime, field: str) -> datetime:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return dt.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise ValidationError(
            f"{field} {dt.isoformat()!r} falls outside years 1 to 9999 once moved to UTC: "
            "use a time inside the calendar") from None


def parse_timestamp(value: object, *, field: str = "timestamp") -> datetime:
    """Parse an ISO 8601 string, a datetime or a date into an aware UTC datetime.

    A naive value is taken as UTC. Anything else is a ValidationError naming the field.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except (ValueError, OverflowError):
            raise ValidationError(
                f"{field} {value[:80]!r} is not an ISO 8601 date or time: "
                "use e.g. 2026-04-01 or 2026-04-01T09:30:00Z"
            ) from None
    else:
        raise ValidationError(
            f"{field} must be an ISO 8601 string or a datetime, not {type(value).__name__}"
        )
    return _to_utc(dt, field)


def parse_or_none(value: object) -> datetime | None:
    """Lenient parse for values read back from files: a UTC datetime, or None."""
    if not isinstance(value, (str, datetime, date)):
        return None
    try:
        return parse_timestamp(value)
    except ValidationError:
        return None


def normalize_timestamp(value: object, *, field: str = "timestamp") -> str:
    return iso(parse_timestamp(value, field=field))


def as_date(value: date | str | None, *, field: str = "date") -> date:
    """A ``date`` from a date, a datetime (its UTC date), a ``YYYY-MM-DD...`` string, or
    None (today, in UTC)."""
    if value is None:
        return today()
    if isinstance(value, datetime):
        return _to_utc(value, field).date() if value.tzinfo else value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise ValidationError(f"bad {field} {str(value)[:80]!r}: use YYYY-MM-DD") from None


def age_seconds(value: str) -> int | None:
    """Seconds in a relative age such as ``30m``, ``12h``, ``7d``, ``2w``; None if
    ``value`` is not one."""
    m = _REL_RE.match(value)
    if not m:
        return None
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def ago(seconds: int | float, *, field: str = "age") -> datetime:
    """The time ``seconds`` before now; refused when that is before year 1."""
    try:
        return utcnow() - timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        raise ValidationError(
            f"{field} reaches back before year 1: use a shorter age or an ISO date") from None


def parse_since(value: object, *, field: str = "since") -> str:
    """Like normalize_timestamp, but also accepts relative ages: 30m, 12h, 7d, 2w."""
    if isinstance(value, str):
        seconds = age_seconds(value)
        if seconds is not None:
            return iso(ago(seconds, field=f"{field} {value.strip()!r}"))
        try:
            return normalize_timestamp(value, field=field)
        except ValidationError as exc:  # name the relative form this field also takes
            raise ValidationError(f"{exc} (or an age such as 30m, 12h, 7d, 2w)") from None
    return normalize_timestamp(value, field=field)


def days_between(earlier: str, later: str) -> int:
    """Whole days from one ISO date (or timestamp) to another."""
    a = parse_timestamp(earlier).date()
    b = parse_timestamp(later).date()
    return (b - a).days


def seconds_between(a: str, b: str) -> float:
    """Absolute seconds between two ISO timestamps."""
    return abs((parse_timestamp(a) - parse_timestamp(b)).total_seconds())


def iso_week(value: str | datetime) -> str | None:
    """The ISO week ``YYYY-Www`` of a timestamp (None when it cannot be read); week
    labels sort in time order."""
    dt = parse_or_none(value)
    if dt is None:
        return None
    y, w, _ = dt.isocalendar()
    return f"{y:04d}-W{w:02d}"
