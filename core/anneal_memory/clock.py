"""Time helpers: every stored timestamp is ISO 8601 in UTC with microseconds."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

from .errors import ValidationError

_REL_RE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(dt: datetime) -> str:
    """Canonical stored form: ``2026-11-29T12:00:00.000000+00:00``."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


def now_iso() -> str:
    return iso(utcnow())


def today_iso() -> str:
    return utcnow().date().isoformat()


def parse_timestamp(value: str | datetime | date, *, field: str = "timestamp") -> datetime:
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
        except ValueError:
            raise ValidationError(
                f"{field} {value!r} is not an ISO 8601 date or time: "
                "use e.g. 2026-04-01 or 2026-04-01T09:30:00Z"
            ) from None
    else:
        raise ValidationError(
            f"{field} must be an ISO 8601 string or a datetime, not {type(value).__name__}"
        )
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def normalize_timestamp(value: str | datetime | date, *, field: str = "timestamp") -> str:
    return iso(parse_timestamp(value, field=field))


def parse_since(value: str | datetime | date, *, field: str = "since") -> str:
    """Like normalize_timestamp, but also accepts relative ages: 30m, 12h, 7d, 2w."""
    if isinstance(value, str):
        m = _REL_RE.match(value)
        if m:
            n, unit = int(m.group(1)), m.group(2)
            seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit] * n
            return iso(utcnow() - timedelta(seconds=seconds))
    return normalize_timestamp(value, field=field)


def days_between(earlier: str, later: str) -> int:
    """Whole days from one ISO date (or timestamp) to another."""
    a = parse_timestamp(earlier).date()
    b = parse_timestamp(later).date()
    return (b - a).days
