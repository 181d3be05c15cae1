"""The MCP server over HTTP for many users: the official SDK's streamable HTTP transport.

``anneal-memory --db STORE serve --http 127.0.0.1:8765`` serves ``/mcp``. Every request
carries a bearer token (``tokens.py``); the token names the namespace and the trust
ceiling the request is served at: the tools run on ``store.scoped(namespace)`` with the
view's ceiling lowered to the token's, so no tool argument can widen the namespace or
raise the trust. The transport is stateless (every POST stands alone), so each message
is served as the token on its own request allows, and a revoked token is refused on its
next request. Binding follows the console's rules (``_hostcheck``): one address, never
every interface, and a request whose ``Host`` header names another is refused. The edge
(``edge.py``) checks each request before its token is read: one value per security
header, the ``Origin`` of a browser page, POST only, a body of at most 4 MiB, then a
per-token rate limit. ``GET /healthz`` answers a load balancer without a token. TLS is a
reverse proxy's job in front of it (docs/mcp.md).

For many users at once (issue 54): a plain ``tools/call`` is answered directly
(``fastpath.py``) instead of through a per-request SDK session, its tool run on the
server's own threads (``Offload``) and its reply written as built; a SQLite store's tokens
are read on the event loop from a read-only connection of their own (no worker-thread
hop, and every read sees the last commit of any process, so a revocation counts at
once), a token's record parsed again only when its stored text changed; the tokens'
last use is written together, one write at a time; uvicorn runs on ``httptools`` and
``uvloop`` when installed (the ``mcp`` extra installs them); ``--workers N`` serves from
N processes sharing the listening socket and the store (SQLite's write-ahead log and the
store's own locks keep one audit chain).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import queue
import socket
import sys
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any, TypeVar

from .. import tracing
from .._hostcheck import allowed_hosts, bind_address, host_ok, listen_error
from .._seam import roles_of
from ..clock import iso, utcnow
from ..errors import ValidationError
from ..governance.namespace import MemoryNamespace, coerce_namespace
from ..store import Store
from . import edge, fastpath
from .handlers import MemoryTools
from .sdk import call_tool
from .tokens import (
    TokenError,
    TokenInfo,
    TokenReader,
    authenticate,
    check_namespace,
    record_use,
)

#: the endpoint's path
PATH = "/mcp"
#: the load balancer's health check: no token, no store details
HEALTH = "/healthz"
#: seconds a shutdown waits for the requests in flight before it closes them
GRACE = 30
#: threads per process running the direct path's tool calls: as many records in flight
#: as group commit can gather into one transaction (anyio's default, 40; measured under
#: 200 clients: 6 threads gave 0.84x the requests/s of 16, and 40 1.12x of 16 at 0.94x
#: the CPU per request)
CALL_THREADS = 40
log = logging.getLogger("anneal_memory.mcp.http")
#: a request may name the namespace it expects (JSON, or KEY=VALUE pairs joined by ';');
#: it must be its token's (a client configured for bob with alice's token is refused)
NAMESPACE_HEADER = "anneal-namespace"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_CURRENT: contextvars.ContextVar[MemoryTools | None] = contextvars.ContextVar(
    "anneal_memory_mcp_tools", default=None)
_SCOPE_KEY = "anneal_memory.tools"
_T = TypeVar("_T")


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
    """The namespace an ``Anneal-Namespace`` header names (None when absent); a
    ValidationError that quotes at most a few characters of it for anything else
    (too long, not a JSON object or KEY=VALUE pairs, nested, a bad field)."""
    if value is None or not value.strip():
        return None
    if len(value) > edge.HEADER_LIMIT:
        raise ValidationError(f"the Anneal-Namespace header is {len(value):,} characters, over "
                              f"the limit of {edge.HEADER_LIMIT:,}: send e.g. user=alice")
    text = value.strip()
    if text.startswith("{"):
        try:
            fields = json.loads(text)
        except (ValueError, RecursionError):
            fields = None
        if not isinstance(fields, dict) or not all(
                isinstance(v, str) or v is None for v in fields.values()):
            raise ValidationError("the Anneal-Namespace header is not a flat JSON object of "
                                  'strings: send e.g. {"user": "alice"} or user=alice')
    else:
        fields = {}
        for part in text.split(";"):
            key, sep, val = part.partition("=")
            if not sep or not key.strip():
                raise ValidationError(f"the Anneal-Namespace header part "
                                      f"{edge.clip(part.strip())} is not KEY=VALUE: send e.g. "
                                      "user=alice;project=p1")
            fields[key.strip()] = val
    try:
        return coerce_namespace(fields, partial=True)
    except ValidationError as exc:
        raise ValidationError(f"the Anneal-Namespace header: {edge.clip(str(exc), 200)}"
                              ) from None


class _TokenAudit:
    """A view's audit trail that names the token in every entry its requests cause
    (its id, never its secret)."""

    def __init__(self, inner: Any, token_id: str) -> None:
        self._inner = inner
        self._token = token_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stage(self, event: str, data: Mapping[str, Any], *, actor: str = "agent") -> Any:
        return self._inner.stage(event, {**data, "token_id": self._token}, actor=actor)

    def append(self, event: str, data: dict[str, Any], *, actor: str = "agent") -> Any:
        if not self._inner.enabled:
            return None
        entries = self._inner.append_staged([self.stage(event, data, actor=actor)])
        return entries[0] if entries else None


class Principals:
    """The tools each token is served with: its namespace's view at its ceiling, made on
    its first request and kept for the next ones, at most ``KEEP`` tokens' (the least
    recently served go first: a view costs a little memory, not a connection; one
    evicted is made again on its token's next request). Thread-safe."""

    KEEP = 4096

    def __init__(self, store: Store, keep: int = KEEP) -> None:
        self.store = store
        self.keep = keep
        self._tools: OrderedDict[str, MemoryTools] = OrderedDict()
        self._lock = threading.Lock()

    def tools_for(self, info: TokenInfo) -> MemoryTools:
        with self._lock:
            tools = self._tools.get(info.id)
            if tools is not None:
                self._tools.move_to_end(info.id)
                return tools
            view = self.store.scoped(info.namespace)
            view.trust_ceiling = info.trust_ceiling  # the view's own: the parent keeps its
            view._audit = _TokenAudit(view._audit, info.id)  # type: ignore[assignment]
            tools = self._tools[info.id] = MemoryTools(view, info.session_id, remote=True)
            while len(self._tools) > self.keep:
                self._tools.popitem(last=False)
            return tools


def current_tools() -> MemoryTools:
    """The tools of the request being served (set by the app before the SDK runs it)."""
    tools = _CURRENT.get()
    if tools is None:  # never served without a token: refuse rather than guess
        raise TokenError("no authenticated request is being served")
    return tools


async def _reply(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]]
                 | None = None) -> None:
    """One line of plain text (at most 600 characters of it), never cached."""
    line = " ".join(message.split())
    body = ((line if len(line) <= 600 else line[:600] + "...") + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store"),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Offload:
    """Blocking calls (the tools, the store's writes) run on ``threads`` threads of
    their own, each call in a copy of the caller's context (its trace span), its
    result handed back to the event loop. A lean stand-in for
    ``anyio.to_thread.run_sync`` on the direct path: one queue put, one wake-up of the
    loop, no capacity limiter or cancel scope per call (anyio's hop was ~28% of the
    event loop's CPU per request under load). The threads start on first use and end
    with ``close``; a call whose awaiting request was cancelled still runs to its end
    (as anyio's does), its result dropped."""

    def __init__(self, threads: int = 16) -> None:
        self.threads = threads
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._started: list[threading.Thread] = []
        self._lock = threading.Lock()

    async def run(self, fn: Callable[..., _T], *args: object) -> _T:
        """``fn(*args)`` on one of the threads; its result, or its exception raised."""
        if len(self._started) < self.threads:
            self._start()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_T] = loop.create_future()
        self._jobs.put((loop, done, contextvars.copy_context(), fn, args))
        return await done

    def _start(self) -> None:
        with self._lock:
            while len(self._started) < self.threads:
                worker = threading.Thread(target=self._work, daemon=True,
                                          name=f"anneal-memory-call-{len(self._started) + 1}")
                worker.start()
                self._started.append(worker)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, done, ctx, fn, args = job
            try:
                result, error = ctx.run(fn, *args), None
            except BaseException as exc:  # handed to the awaiting request
                result, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(_settle, done, result, error)
            del job, done, result, error

    def close(self, wait: float = GRACE) -> None:
        """End the threads once the calls queued before this one are done."""
        with self._lock:
            started, self._started = self._started, []
        for _ in started:
            self._jobs.put(None)
        for worker in started:
            worker.join(wait)


def _settle(done: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


class App:
    """The ASGI application: the edge's checks, the token, then the SDK's session
    manager."""

    def __init__(self, store: Store, host: str, port: int, *,
                 rate_limit: str | None = edge.DEFAULT_RATE,
                 allow_origins: Iterable[str] = (), call_threads: int = CALL_THREADS) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from .sdk import build_server

        self.store = store
        self.allowed = allowed_hosts(host, port)
        self.origins = edge.parse_origins(allow_origins)
        rate = edge.parse_rate(rate_limit)
        self.limiter = edge.RateLimiter(*rate) if rate else None
        self.principals = Principals(store)
        self.usage = edge.Usage(lambda seen: record_use(store, seen))
        self.on_ready: Callable[[], None] | None = None  # called once it is serving
        self.manager = StreamableHTTPSessionManager(
            app=build_server(current_tools, offload=True), stateless=True, json_response=True)
        #: the protocol versions whose plain tools/call is answered without the SDK
        self.versions = fastpath.handshake_versions()
        #: requests answered directly (``fastpath``) and through the SDK, for the tests
        self.served = {"direct": 0, "sdk": 0}
        #: a SQLite store's tokens are read on the event loop from this connection of
        #: their own (autocommit: every read sees the last commit of any process); over
        #: PostgreSQL a read is a network round trip, so it stays in a worker thread
        self.token_reader = TokenReader.open(store)
        #: the threads the direct path's tool calls and the store's writes run on
        self.offload = Offload(call_threads)
        self._flushing = False  # a write of the tokens' last use is under way

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            hardened = edge.hardened(send)
            with tracing.server_request(scope) as traced:
                if traced is None:
                    # the direct reply is written as is (``_answer``): it has no SDK error
                    # for ``hardened`` to clean, and carries its nosniff header itself
                    await self._http(scope, receive, hardened, send)
                else:
                    async def send_traced(message: MutableMapping[str, Any]) -> None:
                        if message.get("type") == "http.response.start":
                            traced.set("http.response.status_code", int(message["status"]))
                        await hardened(message)
                    await self._http(scope, receive, send_traced, send_traced)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        import anyio

        await receive()  # lifespan.startup
        async with self.manager.run():
            if self.on_ready is not None:  # signals are handled from here on
                self.on_ready()
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown: every request in flight has finished
        with contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(self.usage.flush)
        await anyio.to_thread.run_sync(self.offload.close)
        if self.token_reader is not None:
            self.token_reader.close()
        await send({"type": "lifespan.shutdown.complete"})

    async def _health(self, scope: Scope, send: Send) -> None:
        """``GET /healthz``: 200 ``ok`` while the store answers, 503 when it does not
        (a stopping server accepts no new connection). Nothing about the store is said."""
        import anyio

        if scope.get("method") not in ("GET", "HEAD"):
            await _reply(send, 405, f"{HEALTH} answers GET", [(b"allow", b"GET, HEAD")])
            return
        try:
            await anyio.to_thread.run_sync(roles_of(self.store).meta.get_meta, "store_id")
        except Exception:
            log.warning("health check: the store cannot be read")
            await _reply(send, 503, "unavailable: the store cannot be read")
            return
        await _reply(send, 200, "ok")

    async def _http(self, scope: Scope, receive: Receive, send: Send, direct: Send) -> None:
        """One request: ``send`` answers it through the edge's hardening, ``direct``
        writes the direct path's reply as built."""
        try:
            headers = edge.single_headers(scope.get("headers", []))
            if scope.get("path") == HEALTH:
                await self._health(scope, send)
                return
            self._check_edge(scope, headers)
            if self.token_reader is not None:  # a point read on its own connection
                info = authenticate(self.store, headers.get("authorization"),
                                    self.token_reader)
            else:
                info = await self.offload.run(authenticate, self.store,
                                              headers.get("authorization"))
            check_namespace(info, parse_namespace_header(headers.get(NAMESPACE_HEADER)))
            wait = self.limiter.take(info.id) if self.limiter is not None else 0.0
            if wait:
                raise edge.Refusal(429, f"token {info.id} is over its rate limit: retry in "
                                   f"{edge.retry_after(wait).decode()} s",
                                   [(b"retry-after", edge.retry_after(wait))])
            body = await edge.read_body(receive, headers)
        except TokenError as exc:
            extra = ([(b"www-authenticate", b'Bearer realm="anneal-memory"')]
                     if exc.status == 401 else None)
            await _reply(send, exc.status, str(exc), extra)
            return
        except ValidationError as exc:  # a malformed Anneal-Namespace header
            await _reply(send, 400, str(exc))
            return
        except edge.Refusal as exc:
            await _reply(send, exc.status, str(exc), exc.headers)
            return
        except edge.ClientGone:
            log.warning("a client closed its connection before its request body was complete")
            return
        tools = self.principals.tools_for(info)
        call = fastpath.plan(headers, body, self.versions)
        if call is not None:
            self.served["direct"] += 1
            text, is_error = await self.offload.run(call_tool, tools, call.name, call.arguments)
            payload = fastpath.reply(call, text, is_error)
            await direct({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()), edge.NOSNIFF]})
            await direct({"type": "http.response.body", "body": payload})
        else:
            self.served["sdk"] += 1
            scope[_SCOPE_KEY] = tools
            reset = _CURRENT.set(tools)
            try:
                await self.manager.handle_request(scope, edge.replay(body, receive), send)
            finally:
                _CURRENT.reset(reset)
        if self.usage.touch(info.id, iso(utcnow())) and not self._flushing:
            await self._write_usage()

    async def _write_usage(self) -> None:
        """Write every token's last use that is due, in one write at a time: the
        requests that come meanwhile are picked up by the next round of this one."""
        self._flushing = True
        try:
            while due := self.usage.take_due():
                try:
                    await self.offload.run(self.usage.write, due)
                except Exception as exc:  # the requests were served: their times wait
                    self.usage.give_back(due)
                    log.warning("could not write %d token(s)' last use: %s", len(due),
                                edge.clip(str(exc), 200))
                    return
        finally:
            self._flushing = False

    def _check_edge(self, scope: Scope, headers: dict[str, str]) -> None:
        """The checks before the token: Host, Origin, path, method, header sizes."""
        if not host_ok(headers.get("host"), self.allowed):
            # a DNS-rebinding page reaches us under its own name: refuse it
            raise edge.Refusal(403, "this server answers only to Host "
                               + " or ".join(sorted(self.allowed))
                               + " (behind a proxy, forward that Host header)")
        if not edge.origin_ok(headers.get("origin"), self.allowed, self.origins):
            raise edge.Refusal(403, f"a page from Origin {edge.clip(headers['origin'])} may "
                               "not call this server (a browser page of another site); the "
                               "operator can allow it with serve --allow-origin ORIGIN")
        if scope.get("path") != PATH:
            raise edge.Refusal(404, f"not found: the MCP endpoint is {PATH}")
        if scope.get("method") != "POST":
            raise edge.Refusal(405, f"{PATH} answers POST only: this server is stateless and "
                               "opens no event stream (GET) nor session to delete (DELETE)",
                               [(b"allow", b"POST")])
        auth = headers.get("authorization")
        if auth is not None and len(auth) > edge.HEADER_LIMIT:
            raise edge.Refusal(400, f"the Authorization header is {len(auth):,} characters, "
                               "over the limit of 1,024: send 'Authorization: Bearer amt_...'")


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, made as TCP by name: asyncio sets TCP_NODELAY on the
    connections it accepts only then, and without it a reused connection's reply body
    waits ~40 ms for the client's delayed ACK (Nagle's algorithm)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise listen_error(host, port, exc) from None
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def _one_line_logs() -> None:
    """Client errors as one line: on the handlers the SDK's and uvicorn's records reach."""
    one = edge.OneLineClientErrors()
    for name in ("", "uvicorn", "uvicorn.error"):
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, edge.OneLineClientErrors) for f in handler.filters):
                handler.addFilter(one)


def _have(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


#: the most bytes a request's line and headers may take (h11, the fallback, refuses
#: beyond its own bound too; httptools has none of its own)
HEAD_LIMIT = 64 * 1024


def _bounded_httptools() -> Any:
    """uvicorn's httptools protocol with a bound on the request head: without one, a
    client could send megabytes of headers (measured: 20 MB accepted) and the server
    would hold them all. Past ``HEAD_LIMIT`` the request is answered 400 and closed."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
        _in_body = False  # the head of the request being read is complete
        _head = 0  # bytes of the head so far: its headers, as the parser hands them
        _pending = 0  # bytes received while the head was incomplete
        _too_big = False

        def on_message_begin(self) -> None:
            self._in_body, self._head, self._pending = False, 0, 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._in_body = True
            super().on_headers_complete()

        def _count(self, size: int) -> None:
            self._head += size
            if self._head > HEAD_LIMIT:  # the parser turns this into a 400 below
                self._too_big = True
                raise ValueError("the request's headers are too large")

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._in_body and not self.transport.is_closing():
                # one header still arriving (the parser holds it whole until it ends)
                self._pending += len(data)
                if self._pending > HEAD_LIMIT:
                    self._too_big = True
                    self.logger.warning("a request's headers are over %d bytes: refused",
                                        HEAD_LIMIT)
                    self.send_400_response("")

        def send_400_response(self, msg: str) -> None:
            if self._too_big:
                msg = (f"the request's headers are over {HEAD_LIMIT:,} bytes: send fewer "
                       "or shorter headers")
            super().send_400_response(msg)

    return BoundedHttpToolsProtocol


def _config(app: App) -> Any:
    """uvicorn's configuration, loaded: ``httptools`` and ``uvloop`` when installed (the
    ``mcp`` extra installs both: the pure-Python ``h11`` parser was ~48% of a request's
    CPU under load), else ``h11`` and ``asyncio``."""
    import uvicorn

    uvloop = _have("uvloop") and sys.platform != "win32"
    # proxy_headers off: nothing here reads the client address or scheme uvicorn's
    # X-Forwarded-* middleware would rewrite (the Host header is checked as sent), and
    # it wrapped every request
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                            timeout_graceful_shutdown=GRACE, backlog=BACKLOG,
                            proxy_headers=False,
                            http=_bounded_httptools() if _have("httptools") else "h11",
                            loop="uvloop" if uvloop else "asyncio")
    config.load()
    return config


def engines(config: object) -> dict[str, str]:
    """The HTTP parser and event loop a loaded uvicorn ``config`` runs on, as the ready
    line names them (``httptools`` / ``h11``, ``uvloop`` / ``asyncio``)."""
    cls = getattr(config, "http_protocol_class", None)
    name = getattr(cls, "__name__", "")
    return {"http": "httptools" if "HttpTools" in name else "h11" if "H11" in name
            else name or "unknown", "loop": str(getattr(config, "loop", ""))}


def _server_class() -> Any:
    import uvicorn

    class _Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            # uvicorn raises the signal again once it has stopped, which would end the
            # process before the store is closed (its audit files flushed): the stop
            # asked for has happened, so return instead (Ctrl-C twice still forces it)
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list) and sig in captured:
                captured.remove(sig)

    return _Server


def _ready_line(host: str, port: int, workers: int, chosen: dict[str, str]) -> str:
    shown = f"[{host}]" if ":" in host else host
    return (f"anneal-memory: MCP over HTTP at http://{shown}:{port}{PATH} (each request needs "
            f"a bearer token: anneal-memory token create; {workers} worker"
            f"{'s' if workers != 1 else ''}, {chosen['http']} parser, {chosen['loop']} loop)")


def serve_http(store: Store, address: str, *, rate_limit: str | None = edge.DEFAULT_RATE,
               allow_origins: Iterable[str] = (), workers: int = 1) -> None:
    """Serve ``store`` over streamable HTTP on ``address`` (HOST:PORT) until interrupted.
    Prints the endpoint's URL on stdout once listening. On SIGTERM or Ctrl-C it stops
    accepting, finishes the requests in flight (up to ``GRACE`` seconds) and returns.
    ``workers`` > 1: that many processes serve from the one listening socket, each with
    its own connection to the store (``_worker``); this process only supervises them."""
    host, port = parse_address(address)
    count = check_workers(workers)
    sock = _listen(host, port)
    port = sock.getsockname()[1]
    _one_line_logs()
    if count > 1:
        with contextlib.closing(sock):
            _supervise(store, sock, host, port, count, rate_limit=rate_limit,
                       allow_origins=list(allow_origins))
        sys.stdout.flush()
        return
    app = App(store, host, port, rate_limit=rate_limit, allow_origins=allow_origins)
    # the line says it is ready: printed once uvicorn handles SIGTERM (a stop asked for
    # right after it is graceful) and the listening socket accepts
    config = _config(app)
    app.on_ready = lambda: print(_ready_line(host, port, 1, engines(config)), flush=True)
    with contextlib.closing(sock):
        _server_class()(config).run(sockets=[sock])
    sys.stdout.flush()


#: the most worker processes ``--workers`` starts
MAX_WORKERS = 64
#: connections waiting to be accepted (200 clients connecting at once fit)
BACKLOG = 2048


def check_workers(value: object) -> int:
    """``--workers``: a whole number from 1 to ``MAX_WORKERS``; a ValidationError
    naming the fix otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ValidationError(f"--workers {value!r} is not a number of processes: pass a whole "
                              f"number from 1 to {MAX_WORKERS} (e.g. the machine's cores)")
    return value


def _worker(sock: socket.socket, opened: dict[str, Any], host: str, port: int,
            rate_limit: str | None, allow_origins: list[str], ready: Any) -> None:
    """One worker process: its own Store on the same database, the app, uvicorn on the
    shared listening socket; tells the supervisor through ``ready`` once it serves."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    _one_line_logs()
    store = Store(opened["path"], project_name=opened["project_name"], trust_ceiling="agent",
                  audit=opened["audit"], consolidate_requires_baton_on_create=True)
    try:
        app = App(store, host, port, rate_limit=rate_limit, allow_origins=allow_origins)
        config = _config(app)
        app.on_ready = lambda: ready.put(engines(config))
        with contextlib.closing(sock):
            _server_class()(config).run(sockets=[sock])
    finally:
        store.close()


def _supervise(store: Store, sock: socket.socket, host: str, port: int, count: int, *,
               rate_limit: str | None, allow_origins: list[str]) -> None:
    """Start ``count`` worker processes on ``sock``, print the ready line once every one
    serves, and on SIGTERM / Ctrl-C stop them all (each finishes its requests in flight).
    A worker that dies is reported on stderr and the others are stopped too."""
    import multiprocessing
    import queue
    import signal

    ctx = multiprocessing.get_context("spawn")  # no SQLite connection crosses a fork
    ready = ctx.Queue()
    opened = {"path": store.dsn or str(store.path), "project_name": store.project_name,
              "audit": bool(getattr(store, "_audit_requested", True))}
    procs = [ctx.Process(target=_worker, name=f"anneal-memory-http-{i + 1}", daemon=False,
                         args=(sock, opened, host, port, rate_limit, allow_origins, ready))
             for i in range(count)]
    stopping = threading.Event()

    def stop(sig: int, frame: Any) -> None:
        stopping.set()

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for p in procs:
            p.start()
        started, chosen = 0, {"http": "unknown", "loop": "unknown"}
        while started < count and not stopping.is_set():
            try:
                chosen = ready.get(timeout=0.2)
                started += 1
            except queue.Empty:
                if any(p.exitcode is not None for p in procs):
                    break
        if started == count:
            print(_ready_line(host, port, count, chosen), flush=True)
        while not stopping.is_set() and all(p.exitcode is None for p in procs):
            stopping.wait(0.2)
        if not stopping.is_set():
            dead = [p.name for p in procs if p.exitcode is not None]
            log.error("worker %s stopped unexpectedly: stopping the others", ", ".join(dead))
    finally:
        for p in procs:
            if p.pid is not None and p.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            if p.pid is not None:
                p.join(GRACE + 5)
                if p.exitcode is None:
                    p.kill()
                    p.join()
        for s, handler in old.items():
            signal.signal(s, handler)
