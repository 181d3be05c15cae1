"""The team server's edge: what a request must be before a token or the SDK sees it.

SDK-free helpers for ``http.App``: one value per security header (a second
``Authorization`` that a proxy and this server could read differently is refused), the
``Origin`` check the MCP streamable-HTTP transport requires against DNS rebinding, the
request body read under a fixed limit, a per-token rate limit, each token's last use,
replies that never echo a long header value nor quote the SDK's pydantic internals, and
a log filter that writes a client's mistake as one line instead of a traceback.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from .._hostcheck import is_loopback
from ..errors import ValidationError

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: the largest request body served (bytes); a larger one is answered 413 unread
BODY_LIMIT = 4 * 1024 * 1024
#: the longest Authorization or Anneal-Namespace value read (a token is ~60 characters)
HEADER_LIMIT = 1024
#: how much of a refused value a reply may quote
ECHO = 60
#: headers a request may carry once: two values a proxy and this server could each
#: read differently (RFC 9110 allows one Authorization, one Host)
SINGLE = ("host", "authorization", "anneal-namespace", "origin", "content-type",
          "content-length")
#: the default per-token rate limit (``serve --rate-limit``)
DEFAULT_RATE = "1200/min"
_RATE = re.compile(r"^\s*(\d{1,7})\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$", re.I)
_UNIT = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
         "h": 3600.0, "hour": 3600.0}


class Refusal(Exception):
    """A request answered with ``status`` and one line, before the SDK sees it."""

    def __init__(self, status: int, message: str,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or []


class ClientGone(Exception):
    """The client closed the connection before its request body was complete."""


def clip(value: str, limit: int = ECHO) -> str:
    """``value`` quoted for a reply or a log line, at most ``limit`` characters of it."""
    return repr(value[:limit]) + (f" (+{len(value) - limit:,} characters)"
                                  if len(value) > limit else "")


def single_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers, lower-cased names; a Refusal (400) when one of ``SINGLE``
    comes more than once."""
    headers: dict[str, str] = {}
    for k, v in raw:
        name = k.decode("latin-1").lower()
        if name in headers and name in SINGLE:
            raise Refusal(400, f"the request has more than one {name.title()} header: send "
                          "exactly one (a proxy and this server could read two differently)")
        headers[name] = v.decode("latin-1")
    return headers


def parse_origins(values: Iterable[str] | None) -> frozenset[str]:
    """``--allow-origin`` values (``https://app.example.com``) as the checker compares them;
    a ValidationError for anything that is not ``scheme://host[:port]``."""
    out = set()
    for value in values or ():
        text = value.strip().lower().rstrip("/") if isinstance(value, str) else ""
        try:
            u = urlsplit(text)
            ok = (u.scheme in ("http", "https") and bool(u.hostname) and not u.path
                  and not u.query and not u.fragment and u.username is None)
            _ = u.port
        except ValueError:
            ok = False
        if not ok:
            raise ValidationError(f"--allow-origin {clip(str(value))} is not an origin: pass "
                                  "scheme://host[:port], e.g. https://app.example.com")
        out.add(text)
    return frozenset(out)


def origin_ok(origin: str | None, allowed_hosts: frozenset[str],
              extra: frozenset[str] = frozenset()) -> bool:
    """Whether a request's ``Origin`` may be served: none (not a browser), this server's
    own host and port, a page on this machine (localhost), or one the operator allowed.
    A page of another site (a DNS-rebinding page included) is refused."""
    if origin is None:
        return True
    text = origin.strip().lower().rstrip("/")
    if text in extra:
        return True
    try:
        u = urlsplit(text)
        host, port = u.hostname, u.port
    except ValueError:
        return False
    if u.scheme not in ("http", "https") or not host or u.path or u.username is not None:
        return False
    if is_loopback(host):
        return True
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port or (443 if u.scheme == 'https' else 80)}" in allowed_hosts


async def read_body(receive: Receive, headers: dict[str, str], limit: int = BODY_LIMIT) -> bytes:
    """The whole request body, at most ``limit`` bytes: a Refusal (413) past it (by its
    Content-Length before anything is read), ClientGone when the client went away."""
    declared = headers.get("content-length")
    too_big = Refusal(413, f"the request body is over the limit of {limit:,} bytes: send "
                      "less at once (a tool's text is at most 100,000 characters)")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            await _drain(receive, limit)
            raise too_big
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _drain(receive: Receive, most: int) -> None:
    """Read and drop the rest of a refused body, up to ``most`` more bytes: a client
    still sending when the refusal closes the connection gets a reset instead of the
    413 (seen with httptools, which closes sooner than h11)."""
    dropped = 0
    while dropped <= most:
        message = await receive()
        if message["type"] == "http.disconnect" or not message.get("more_body"):
            return
        dropped += len(message.get("body", b""))


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the SDK the body already read, then the connection's own
    messages (its disconnect)."""
    sent = False

    async def again() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


NOSNIFF = (b"x-content-type-options", b"nosniff")
_INTERNALS = (b"validation error", b"errors.pydantic.dev", b"input_value=", b"[type=")
_SCHEMA = ("Invalid request: the body is not an MCP JSON-RPC 2.0 message as the method "
           "defines it (an object with \"jsonrpc\": \"2.0\", a \"method\", an \"id\" for a "
           "request, and \"params\" as an object)")


def clean_errors(body: bytes) -> bytes | None:
    """``body`` with every JSON-RPC error message that quotes the SDK's pydantic
    internals replaced by one line naming the fix; None when nothing needed it."""
    low = body.lower()
    if not any(m in low for m in _INTERNALS):
        return None
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    changed = False
    for msg in doc if isinstance(doc, list) else [doc]:
        err = msg.get("error") if isinstance(msg, dict) else None
        if not isinstance(err, dict):
            continue
        text = json.dumps([err.get("message"), err.get("data")]).lower()
        if any(m.decode() in text for m in _INTERNALS):
            err["message"] = _SCHEMA
            err.pop("data", None)
            changed = True
    return json.dumps(doc).encode("utf-8") if changed else None


def hardened(send: Send) -> Send:
    """A send that adds ``X-Content-Type-Options: nosniff`` to every reply and cleans
    the SDK's error replies (``clean_errors``), fixing their Content-Length."""
    start: MutableMapping[str, Any] | None = None

    async def out(message: MutableMapping[str, Any]) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() != NOSNIFF[0]]
            start = {**message, "headers": [*headers, NOSNIFF]}
            return
        if message["type"] == "http.response.body" and start is not None:
            head, start = start, None
            if not message.get("more_body"):
                cleaned = clean_errors(message.get("body", b""))
                if cleaned is not None:
                    message = {**message, "body": cleaned}
                    head["headers"] = [h for h in head["headers"]
                                       if h[0].lower() != b"content-length"]
                    head["headers"].append((b"content-length", str(len(cleaned)).encode()))
            await send(head)
        await send(message)

    return out


def parse_rate(value: str | None) -> tuple[int, float] | None:
    """``--rate-limit``: ``N/s``, ``N/min`` or ``N/h`` as (requests, seconds); ``off``:
    None (no limit). A ValidationError otherwise."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("off", "0")):
        return None
    m = _RATE.match(value) if isinstance(value, str) else None
    if not m or int(m.group(1)) < 1:
        raise ValidationError(f"--rate-limit {clip(str(value))} is not a rate: pass requests "
                              "per second, minute or hour, e.g. 20/s, 1200/min, or off")
    return int(m.group(1)), _UNIT[m.group(2).lower()]


class RateLimiter:
    """A token bucket per bearer token: up to ``count`` requests at once, refilled at
    ``count`` per ``per`` seconds. ``take`` says how long to wait (0: serve it)."""

    def __init__(self, count: int, per: float) -> None:
        self.capacity = float(count)
        self.refill = count / per
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> float:
        """0 when ``key`` may make a request now (one is used), else the seconds until
        it may."""
        t = time.monotonic() if now is None else now
        with self._lock:
            level, last = self._buckets.get(key, (self.capacity, t))
            level = min(self.capacity, level + (t - last) * self.refill)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, t)
                return 0.0
            self._buckets[key] = (level, t)
            return (1.0 - level) / self.refill


def retry_after(seconds: float) -> bytes:
    """A Retry-After value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds))).encode()


class Usage:
    """Each token's last request, kept in memory and written to the store at most once
    a minute per token, every due token in one write (``take_due``), so ``token list``
    can say when a token was last used without a write per request: a thousand tokens
    first seen at once cost a few transactions, not a thousand."""

    EVERY = 60.0

    def __init__(self, write: Callable[[dict[str, str]], Any]) -> None:
        self._write = write
        self._pending: dict[str, str] = {}
        self._written: dict[str, float] = {}
        self._lock = threading.Lock()

    def touch(self, token_id: str, at: str) -> bool:
        """Note a request of ``token_id`` at ``at``; True when it is due to be written."""
        with self._lock:
            self._pending[token_id] = at
            return time.monotonic() - self._written.get(token_id, -math.inf) >= self.EVERY

    def take_due(self) -> dict[str, str]:
        """The pending last-use times of every token due to be written (taken: a write
        that fails hands them back with ``give_back``)."""
        with self._lock:
            now = time.monotonic()
            due = {i: at for i, at in self._pending.items()
                   if now - self._written.get(i, -math.inf) >= self.EVERY}
            for i in due:
                del self._pending[i]
                self._written[i] = now
            return due

    def give_back(self, due: dict[str, str]) -> None:
        """Times ``take_due`` gave that could not be written: pending and due again
        (unless a newer request of the token came meanwhile)."""
        with self._lock:
            for i, at in due.items():
                self._pending.setdefault(i, at)
                self._written.pop(i, None)

    def write(self, due: dict[str, str]) -> None:
        """Write ``due`` (from ``take_due``) to the store in one go."""
        if due:
            self._write(due)

    def flush(self, token_id: str | None = None) -> None:
        """Write the pending last-use times (one token's, or every one's)."""
        with self._lock:
            ids = [token_id] if token_id is not None else list(self._pending)
            due = {i: self._pending.pop(i) for i in ids if i in self._pending}
            now = time.monotonic()
            for i in due:
                self._written[i] = now
        if due:
            self._write(due)


_CLIENT_FAULTS = frozenset({
    "ClientDisconnect", "ClosedResourceError", "BrokenResourceError", "EndOfStream",
    "ValidationError", "JSONDecodeError", "UnicodeDecodeError", "ConnectionResetError",
    "BrokenPipeError", "LocalProtocolError", "RemoteProtocolError"})


class OneLineClientErrors(logging.Filter):
    """Writes a log record whose exception a client caused (it went away, sent a body
    that is not JSON-RPC) as one line, without the traceback the SDK attaches."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ in _CLIENT_FAULTS:
            first = (str(exc).splitlines() or [""])[0]
            record.msg = (f"{record.getMessage()} (a client's request: {type(exc).__name__}"
                          + (f": {clip(first, 200)}" if first else "") + ")")
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True
