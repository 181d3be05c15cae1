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
import ipaddress
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_address(host: object) -> str:
    """The one address ``host`` names, as the operating system reads it: ``"0"``,
    ``"0x0"`` or ``"000.000.000.000"`` are every interface just as ``"0.0.0.0"`` is, so
    the check is made on the resolved address, never on the spelling. A ValidationError
    for a blank host, a name that does not resolve, or any every-interface address."""
    from ..errors import ValidationError

    every = ValidationError("bind to one address (default 127.0.0.1), not every interface: "
                            "the Host check needs the address it serves")
    if not isinstance(host, str) or not host.strip():
        raise every
    name = host.strip().strip("[]")
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        raise ValidationError(f"cannot resolve the host {name[:80]!r}: pass an address such "
                              "as 127.0.0.1 or a name this machine resolves") from None
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses or any(a.is_unspecified for a in addresses):
        raise every
    if _numeric(name):  # one spelling of an address: bind (and check Host against) it
        return str(addresses[0])
    return name


def _numeric(name: str) -> bool:
    """Whether ``name`` is an address in some spelling (inet_aton's too: 127.1, 0x7f.1)."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.inet_aton(name)
        return True
    except OSError:
        return False


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values that name the bound address (lower case)."""
    shown = f"[{host}]" if ":" in host else host
    names = {f"{shown}:{port}".lower()}
    if is_loopback(host):
        names.add(f"localhost:{port}")
    return frozenset(names)


def host_ok(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether the request's Host header names this console."""
    return header is not None and header.strip().lower() in allowed


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
