"""Who may use the console: the Host check, one-time login tokens, session cookies and
per-session CSRF tokens, and the headers every response carries.

The console binds a loopback address by default. A request is served only when its
``Host`` header names the bound address (a DNS-rebinding page carries its own name),
and only to a browser holding a session cookie, which it got by opening the one-time
login URL printed at start (another local user cannot guess it). Every POST must carry
the session's CSRF token and come from the console's own origin.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

# the bind and Host checks are shared with the MCP server over HTTP
from .._hostcheck import allowed_hosts as allowed_hosts
from .._hostcheck import bind_address as bind_address
from .._hostcheck import host_ok as host_ok
from .._hostcheck import is_loopback as is_loopback

#: what a page may load: its own stylesheet, nothing else; no script runs at all
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: how long an unused login link and an idle session stay valid (seconds)
LOGIN_TTL = 24 * 3600
SESSION_TTL = 12 * 3600


def cookie_name(port: int) -> str:
    # cookies are per host, not per port: two consoles on one machine keep their own
    return f"anneal_console_{port}"


def read_cookie(header: str | None, name: str) -> str | None:
    if not header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


@dataclass
class Session:
    """One logged-in browser: its CSRF token and the messages waiting for its next page."""

    csrf: str
    seen: float
    flash: list[tuple[str, str]] = field(default_factory=list)


class Sessions:
    """Login tokens (each good once) and the sessions they opened. Thread-safe."""

    def __init__(self) -> None:
        self._logins: dict[str, float] = {}
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new_login(self) -> str:
        """A fresh one-time login token."""
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._logins[token] = time.monotonic()
        return token

    def redeem(self, token: str) -> str | None:
        """Use up a login token; returns the new session id, or None if it is not valid."""
        now = time.monotonic()
        with self._lock:
            match = next((t for t in self._logins if hmac.compare_digest(t, token)), None)
            if match is None:
                return None
            issued = self._logins.pop(match)
            if now - issued > LOGIN_TTL:
                return None
            sid = secrets.token_urlsafe(32)
            self._sessions[sid] = Session(csrf=secrets.token_urlsafe(32), seen=now)
            return sid

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        now = time.monotonic()
        with self._lock:
            match = next((s for s in self._sessions if hmac.compare_digest(s, sid)), None)
            if match is None:
                return None
            session = self._sessions[match]
            if now - session.seen > SESSION_TTL:
                del self._sessions[match]
                return None
            session.seen = now
            return session


def csrf_ok(session: Session, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(session.csrf.encode(), str(sent).encode())


def same_origin(origin: str | None, fetch_site: str | None, allowed: frozenset[str]) -> bool:
    """A POST from the console's own pages: no foreign Origin, no cross-site fetch."""
    if fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none"):
        return False
    if origin is None:
        return True
    origin = origin.strip().lower()
    return origin.startswith("http://") and origin[len("http://"):] in allowed
