"""The MCP server over HTTP for many users: the official SDK's streamable HTTP transport.

``anneal-memory --db STORE serve --http 127.0.0.1:8765`` serves ``/mcp``. Every request
carries a bearer token (``tokens.py``); the token names the namespace and the trust
ceiling the request is served at: the tools run on ``store.scoped(namespace)`` with the
view's ceiling lowered to the token's, so no tool argument can widen the namespace or
raise the trust. The transport is stateless (every POST stands alone), so each message
is served as the token on its own request allows, and a revoked token is refused on its
next request. Binding follows the console's rules (``_hostcheck``): one address, never
every interface, and a request whose ``Host`` header names another is refused. TLS is a
reverse proxy's job in front of it (docs/mcp.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .._hostcheck import allowed_hosts, bind_address, host_ok
from ..errors import ValidationError
from ..governance.namespace import MemoryNamespace, coerce_namespace
from ..store import Store
from .handlers import MemoryTools
from .tokens import TokenError, TokenInfo, authenticate, check_namespace

#: the endpoint's path
PATH = "/mcp"
#: a request may name the namespace it expects (JSON, or KEY=VALUE pairs joined by ';');
#: it must be its token's (a client configured for bob with alice's token is refused)
NAMESPACE_HEADER = "anneal-namespace"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_CURRENT: contextvars.ContextVar[MemoryTools | None] = contextvars.ContextVar(
    "anneal_memory_mcp_tools", default=None)
_SCOPE_KEY = "anneal_memory.tools"


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (bind address, port); a ValidationError
    naming the form otherwise, and for every-interface hosts as the console refuses them."""
    if not isinstance(value, str) or ":" not in value:
        raise ValidationError(f"--http {value!r} is not HOST:PORT: pass e.g. --http "
                              "127.0.0.1:8765")
    host, _, port_text = value.strip().rpartition(":")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValidationError(f"--http {value!r}: the port must be a whole number from 0 to "
                              "65535 (0: a free one), e.g. --http 127.0.0.1:8765")
    return bind_address(host), int(port_text)


def parse_namespace_header(value: str | None) -> MemoryNamespace | None:
    """The namespace an ``Anneal-Namespace`` header names (None when absent)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.startswith("{"):
        try:
            fields = json.loads(text)
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            raise ValidationError("the Anneal-Namespace header is not a JSON object: send "
                                  'e.g. {"user": "alice"} or user=alice')
    else:
        fields = {}
        for part in text.split(";"):
            key, sep, val = part.partition("=")
            if not sep or not key.strip():
                raise ValidationError(f"the Anneal-Namespace header part {part.strip()!r} is "
                                      "not KEY=VALUE: send e.g. user=alice;project=p1")
            fields[key.strip()] = val
    return coerce_namespace(fields, partial=True)


class Principals:
    """The tools each token is served with: its namespace's view at its ceiling (one per
    token, made on its first request). Thread-safe."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tools: dict[str, MemoryTools] = {}
        self._lock = threading.Lock()

    def tools_for(self, info: TokenInfo) -> MemoryTools:
        with self._lock:
            tools = self._tools.get(info.id)
            if tools is None:
                view = self.store.scoped(info.namespace)
                view.trust_ceiling = info.trust_ceiling  # the view's own: the parent keeps its
                tools = self._tools[info.id] = MemoryTools(view, info.session_id)
            return tools


def current_tools() -> MemoryTools:
    """The tools of the request being served (set by the app before the SDK runs it)."""
    tools = _CURRENT.get()
    if tools is None:  # never served without a token: refuse rather than guess
        raise TokenError("no authenticated request is being served")
    return tools


async def _reply(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]]
                 | None = None) -> None:
    body = (message.rstrip() + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store"),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class App:
    """The ASGI application: Host check, token, then the SDK's session manager."""

    def __init__(self, store: Store, host: str, port: int) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from .sdk import build_server

        self.store = store
        self.allowed = allowed_hosts(host, port)
        self.principals = Principals(store)
        self.manager = StreamableHTTPSessionManager(
            app=build_server(current_tools, offload=True), stateless=True, json_response=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with self.manager.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        import anyio

        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if not host_ok(headers.get("host"), self.allowed):
            # a DNS-rebinding page reaches us under its own name: refuse it
            await _reply(send, 403, "this server answers only to Host "
                         + " or ".join(sorted(self.allowed))
                         + " (behind a proxy, forward that Host header)")
            return
        if scope.get("path") != PATH:
            await _reply(send, 404, f"not found: the MCP endpoint is {PATH}")
            return
        try:
            info = await anyio.to_thread.run_sync(authenticate, self.store,
                                                  headers.get("authorization"))
            check_namespace(info, parse_namespace_header(headers.get(NAMESPACE_HEADER)))
        except TokenError as exc:
            extra = ([(b"www-authenticate", b'Bearer realm="anneal-memory"')]
                     if exc.status == 401 else None)
            await _reply(send, exc.status, str(exc), extra)
            return
        except ValidationError as exc:  # a malformed Anneal-Namespace header
            await _reply(send, 400, str(exc))
            return
        tools = self.principals.tools_for(info)
        scope[_SCOPE_KEY] = tools
        reset = _CURRENT.set(tools)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            _CURRENT.reset(reset)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ValidationError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick "
                              "another port, or 0 for a free one") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_http(store: Store, address: str) -> None:
    """Serve ``store`` over streamable HTTP on ``address`` (HOST:PORT) until interrupted.
    Prints the endpoint's URL on stdout once listening."""
    import uvicorn

    host, port = parse_address(address)
    sock = _listen(host, port)
    port = sock.getsockname()[1]
    app = App(store, host, port)
    shown = f"[{host}]" if ":" in host else host
    print(f"anneal-memory: MCP over HTTP at http://{shown}:{port}{PATH} (each request needs "
          "a bearer token: anneal-memory token create)", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    with contextlib.closing(sock):
        uvicorn.Server(config).run(sockets=[sock])
    sys.stdout.flush()
