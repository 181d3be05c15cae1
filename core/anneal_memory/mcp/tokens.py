"""Bearer tokens for the MCP server over HTTP: each names one namespace and a trust ceiling.

The operator makes them with ``anneal-memory token create --namespace user=alice``; the
secret is printed once and the store keeps only its SHA-256, in an item collection of
the root (no namespace), so a token is one database's and reaches every host of it.
A request's token decides whose memory it acts on and at what trust: the server serves
it through ``store.scoped(namespace)`` opened at the token's ceiling, and no tool
argument names a namespace or a ceiling. SDK-free, like the tool definitions.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from ..clock import iso, parse_timestamp, utcnow
from ..erasure import MCP_TOKENS
from ..errors import AnnealMemoryError, EpisodeNotFoundError, TrustError, ValidationError
from ..governance.namespace import MemoryNamespace, coerce_namespace
from ..types import coerce_trust

if TYPE_CHECKING:
    from ..store import Store

#: the root's item collection holding the tokens (reserved: only this module writes it;
#: erasing a namespace deletes its tokens there, so the erasure names it)
COLLECTION = MCP_TOKENS
#: the root's item collection of each token's last use (``record_use``): its id and a
#: time, apart from the token's own record so a write of it never races a revocation
USE_COLLECTION = "_mcp_token_use"
#: what every token starts with, so a leaked one is recognisable (and greppable)
PREFIX = "amt_"
#: the ceilings a token may carry: an agent's at most (operator acts are the CLI's)
CEILINGS = ("agent", "tool", "external")
_TOKEN = re.compile(r"^amt_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_AGE = re.compile(r"^\s*(\d{1,6})\s*([hdw])\s*$")
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


class TokenError(AnnealMemoryError):
    """A request the HTTP server refuses: ``status`` is its HTTP status (401: no or a bad
    token, 403: a token that may not do this), the message one line naming the fix."""

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class TokenDict(TypedDict):
    """``TokenInfo.to_dict()``: a token as ``token list --json`` shows it (never its hash)."""

    id: str
    namespace: dict[str, str | None]
    label: str | None
    trust_ceiling: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None
    state: str


@dataclass(frozen=True)
class TokenInfo:
    """One token as the store keeps it (never the secret)."""

    id: str
    namespace: MemoryNamespace
    trust_ceiling: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None
    label: str | None = None
    last_used_at: str | None = None

    @property
    def session_id(self) -> str:
        """The session the token's requests wrap as (the baton holder it needs)."""
        return f"token-{self.id}"

    def state(self, now: datetime | None = None) -> str:
        """``active``, ``expired`` or ``revoked``."""
        if self.revoked_at:
            return "revoked"
        if self.expires_at and parse_timestamp(self.expires_at) <= (now or utcnow()):
            return "expired"
        return "active"

    def to_dict(self) -> TokenDict:
        return {"id": self.id, "namespace": self.namespace.to_dict(),
                "label": self.label, "trust_ceiling": self.trust_ceiling,
                "created_at": self.created_at, "expires_at": self.expires_at,
                "revoked_at": self.revoked_at, "last_used_at": self.last_used_at,
                "state": self.state()}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _root(store: Store) -> Any:
    from ..store import Store

    if not isinstance(store, Store) or getattr(store, "parent", None) is not None:
        raise ValidationError("MCP tokens belong to the whole store: pass the Store itself, "
                              "not a scoped view")
    return store.items(COLLECTION)


def _info(key: str, value: Any, last_used_at: str | None = None) -> TokenInfo:
    return TokenInfo(id=key, namespace=coerce_namespace(value["namespace"]),
                     trust_ceiling=value["trust_ceiling"], created_at=value["created_at"],
                     expires_at=value.get("expires_at"), revoked_at=value.get("revoked_at"),
                     label=value.get("label"), last_used_at=last_used_at)


def parse_expiry(expires: str | timedelta | None) -> timedelta | None:
    """``30d``, ``12h``, ``2w`` (or a timedelta) as a timedelta; None: never expires."""
    if expires is None or isinstance(expires, timedelta):
        if isinstance(expires, timedelta) and expires <= timedelta(0):
            raise ValidationError("a token's lifetime must be positive (e.g. 30d)")
        return expires
    m = _AGE.match(expires) if isinstance(expires, str) else None
    if not m or int(m.group(1)) < 1:
        raise ValidationError(f"--expires {expires!r} is not a lifetime: pass hours, days or "
                              "weeks, e.g. 12h, 30d, 2w")
    return int(m.group(1)) * _UNIT[m.group(2)]


def create_token(store: Store, namespace: MemoryNamespace | Mapping[str, object], *,
                 trust_ceiling: str = "agent", expires: str | timedelta | None = None,
                 label: str | None = None) -> tuple[str, TokenInfo]:
    """A new token for ``namespace``: (the secret, shown once; what the store keeps)."""
    if namespace is None:
        raise ValidationError("a token serves one namespace: pass --namespace, e.g. "
                              "--namespace user=alice")
    ns = coerce_namespace(namespace, partial=True)
    ceiling = coerce_trust(trust_ceiling)
    if ceiling not in CEILINGS:
        raise TrustError(f"a token's trust ceiling is at most agent, not {ceiling!r}: operator "
                         "acts go through the CLI or the console (use agent, tool or external)")
    lifetime = parse_expiry(expires)
    if label is not None and (not isinstance(label, str) or not label.strip()
                              or len(label) > 200):
        raise ValidationError("--label must be a non-empty name of at most 200 characters")
    items = _root(store)
    token_id = secrets.token_hex(6)
    while items.get(token_id) is not None:
        token_id = secrets.token_hex(6)
    secret = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    now = utcnow()
    value = {"hash": _digest(secret), "namespace": ns.to_dict(), "trust_ceiling": ceiling,
             "created_at": iso(now), "expires_at": iso(now + lifetime) if lifetime else None,
             "revoked_at": None, "label": label}
    with store.batch():
        items.put(token_id, value)
        store.audit_event("mcp_token_created", {"token_id": token_id, "namespace": ns.to_dict(),
                                                "trust_ceiling": ceiling})
    return secret, _info(token_id, value)


def list_tokens(store: Store) -> list[TokenInfo]:
    """Every token, oldest first (revoked and expired ones too, marked), with its last
    use as the server wrote it (to the minute: ``record_use``)."""
    tokens = _root(store).list()
    used = {item.key: item.value.get("last_used_at") for item in
            store.items(USE_COLLECTION).list()} if tokens else {}
    return [_info(item.key, item.value, used.get(item.key)) for item in tokens]


def record_use(store: Store, seen: dict[str, str]) -> None:
    """Write each token's last request time (``{token id: ISO time}``), one transaction;
    the server calls it at most once a minute per token."""
    _root(store)  # the whole store's, never a view's
    uses = store.items(USE_COLLECTION)
    with store.batch():
        for token_id, at in seen.items():
            uses.put(token_id, {"last_used_at": at})


def revoke_token(store: Store, token_id: str) -> TokenInfo:
    """Revoke one token: its next request is refused (the record stays, marked)."""
    items = _root(store)
    item = items.get(token_id) if isinstance(token_id, str) and token_id else None
    if item is None:
        raise EpisodeNotFoundError(f"no token {token_id!r}: 'anneal-memory token list' shows "
                                   "the ids")
    value = dict(item.value)
    if not value.get("revoked_at"):
        value["revoked_at"] = iso(utcnow())
        with store.batch():
            items.put(token_id, value)
            store.audit_event("mcp_token_revoked", {"token_id": token_id})
    return _info(token_id, value)


class TokenReader:
    """A SQLite store's tokens read on a connection of their own (see
    :class:`~..storage.sqlite_peek.LiveItems`): a revocation by any process counts at the
    next request, with no worker-thread hop. Not a second ``Store``: ``open`` gives None
    where such a connection cannot be had (PostgreSQL, a read-only folder): the caller
    reads through the store instead.

    Every request still reads its token's stored record; what that record says (its
    namespace checked and built, ~60 us a request under load) is kept per token while
    the stored text is the same, at most ``KEEP`` tokens (then it starts over)."""

    KEEP = 4096

    def __init__(self, items: Any) -> None:
        self._items = items
        self._parsed: dict[str, tuple[str, dict[str, object], TokenInfo]] = {}

    @classmethod
    def open(cls, store: Store) -> TokenReader | None:
        """A reader of ``store``'s tokens, or None (PostgreSQL, a read-only folder)."""
        if getattr(store, "dsn", None):
            return None
        from ..storage.sqlite_peek import LiveItems

        items = LiveItems.open(store.path, COLLECTION)
        return None if items is None else cls(items)

    def get(self, token_id: str) -> dict[str, object] | None:
        """The stored record of token ``token_id`` as read (None: no such token)."""
        text = self._items.get(token_id)
        value = json.loads(text) if text is not None else None
        return value if isinstance(value, dict) else None

    def read(self, token_id: str) -> tuple[dict[str, object], TokenInfo] | None:
        """Token ``token_id`` as stored now: (its record, what it says); None when there
        is no such token or its record is not one. Read on every call; parsed only when
        the stored text differs from the last one read."""
        text = self._items.get(token_id)
        if text is None:
            return None
        seen = self._parsed.get(token_id)
        if seen is not None and seen[0] == text:
            return seen[1], seen[2]
        value = json.loads(text)
        if not isinstance(value, dict):
            return None
        info = _info(token_id, value)
        if len(self._parsed) >= self.KEEP:
            self._parsed.clear()
        self._parsed[token_id] = (text, value, info)
        return value, info

    def close(self) -> None:
        self._items.close()


def authenticate(store: Store, authorization: str | None,
                 reader: TokenReader | None = None) -> TokenInfo:
    """The active token an ``Authorization`` header carries; else a TokenError (401)
    saying what to send. Reads the store (or ``reader``) on every call, so a revocation
    counts at once."""
    fix = ("send the header 'Authorization: Bearer amt_...' with a token the operator made "
           "with: anneal-memory token create --namespace user=NAME")
    if not authorization or not authorization.strip():
        raise TokenError(f"no bearer token: {fix}")
    scheme, _, given = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise TokenError(f"the Authorization header is not a bearer token: {fix}")
    m = _TOKEN.match(given.strip())
    value: dict[str, Any] | None = None
    info: TokenInfo | None = None
    if m and reader is not None:
        found = reader.read(m.group(1))
        if found is not None:
            value, info = found
    elif m:
        item = _root(store).get(m.group(1))
        value = item.value if item is not None else None
    if value is None or not hmac.compare_digest(str(value.get("hash", "")),
                                                _digest(given.strip())):
        raise TokenError(f"unknown token (mistyped, or made for another store): {fix}")
    assert m is not None
    if info is None:
        info = _info(m.group(1), value)
    state = info.state()
    if state == "revoked":
        raise TokenError(f"token {info.id} was revoked at {info.revoked_at}: ask the operator "
                         "for a new one (anneal-memory token create)")
    if state == "expired":
        raise TokenError(f"token {info.id} expired at {info.expires_at}: ask the operator for "
                         "a new one (anneal-memory token create --expires ...)")
    return info


def check_namespace(info: TokenInfo, asked: MemoryNamespace | None) -> None:
    """A TokenError (403) when a request asks for another namespace than its token's."""
    if asked is not None and asked != info.namespace:
        raise TokenError(f"token {info.id} serves namespace {info.namespace.label()}, not "
                         f"{asked.label()}: use a token made for that namespace", status=403)
