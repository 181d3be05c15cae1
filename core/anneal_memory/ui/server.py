"""The console's HTTP server (standard library ``http.server``): checks who is asking
(``security``), serves the pages (``pages``) and runs the actions (``actions``).

A GET renders one page (the first one, opened by the login link, also sets the session
cookie); a POST runs one action and redirects back (303) with a message, or answers 400
with the library's refusal. Nothing is served before the Host check and
the session check; nothing is changed without the session's CSRF token.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import threading
import traceback
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypedDict
from urllib.parse import parse_qs, urlencode, urlsplit

from .._hostcheck import listen_error
from ..errors import AnnealMemoryError, ReadOnlyStoreError, ValidationError
from ..storage.pg_location import pg_dsn, redact
from ..store import Store
from . import actions, pages
from .render import CSS, Frame, esc

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .security import Session
from .security import (
    HEADERS,
    Sessions,
    allowed_hosts,
    bind_address,
    cookie_name,
    csrf_ok,
    host_ok,
    is_loopback,
    read_cookie,
    same_origin,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: the largest form a POST may send
MAX_BODY = 64 * 1024


class Console:
    """The operator console over one store. ``with Console(path, port=0) as c:`` serves
    it on a background thread; ``c.login_url()`` gives a one-time login link.

    ``read_only``: show no actions (also when the store is opened read-only, or its file
    is not writable). ``operator_via``: how the operator gate was passed at start
    (``"tty"`` or ``"env"``); only then may the console raise an episode's trust, and the
    store is opened at the operator trust ceiling. ``anchor``: an audit anchor (hash,
    ``SEQ:HASH`` or a file) the audit page checks the chain against.
    """

    def __init__(self, store: Store | str | os.PathLike[str], *, host: str = DEFAULT_HOST,
                 port: int = DEFAULT_PORT, read_only: bool = False,
                 operator_via: str | None = None, anchor: Any = None,
                 reviewer: str | None = None, log: TextIO | None = None,
                 project_name: str | None = None) -> None:
        address = bind_address(host)  # the resolved address, whatever the spelling
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValidationError("port must be a whole number from 0 to 65535 (0: a free one)")
        self.host = address
        self._owns = not isinstance(store, Store)
        if isinstance(store, Store):
            self.store = store
        else:
            loc = pg_dsn(str(store)) or Path(store).expanduser()
            if isinstance(loc, Path) and loc.exists() and not os.access(loc, os.W_OK):
                read_only = True  # a store this user cannot write is opened read-only
            try:
                self.store = Store(loc, read_only=read_only, project_name=project_name,
                                   trust_ceiling="operator" if operator_via and not read_only
                                   else "agent")
            except ReadOnlyStoreError:  # its folder cannot be written: read-only all the same
                read_only = True
                self.store = Store(loc, read_only=True, project_name=project_name)
        self.read_only = bool(read_only or self.store.read_only)
        self.operator_via = operator_via if not self.read_only else None
        self.anchor = anchor
        self.reviewer = reviewer or _user()
        self.log = log
        self.sessions = Sessions()
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self.httpd = ThreadingHTTPServer((self.host, port), _handler(self), bind_and_activate=False)
        self.httpd.daemon_threads = True
        try:
            self.httpd.server_bind()
            self.httpd.server_activate()
        except OSError as exc:
            self.httpd.server_close()
            if self._owns:
                self.store.close()
            raise listen_error(self.host, port, exc) from None
        self.port = int(self.httpd.server_address[1])
        self.allowed = allowed_hosts(self.host, self.port)

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def login_url(self, path: str = "/") -> str:
        """A fresh login link to ``path`` (a page, with its query if any): it works once,
        then the browser holds a session cookie."""
        sep = "&" if "?" in path else "?"
        return (f"{self.url.rstrip('/')}{path}{sep}"
                f"{urlencode({'token': self.sessions.new_login()})}")

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self) -> Console:
        """Serve on a background thread (for tests and embedding)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                            name="anneal-memory-console")
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close the store if the console opened it."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
        if self._owns:
            self.store.close()

    def __enter__(self) -> Console:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def view(self, query: Mapping[str, str], session: Session, *, flash: bool = True) -> pages.View:
        token = query.get("ns", "").strip()
        ns = pages.parse_ns_token(token) if token else None
        target = self.store.scoped(ns) if ns is not None else self.store
        where = redact(self.store.dsn) if self.store.dsn else str(self.store.path)
        label = f"{ns.label()} · {where}" if ns is not None else f"root store · {where}"
        messages = list(session.flash) if flash else []
        if flash:
            session.flash.clear()
        frame = Frame(ns=token or None, scope_label=label, csrf=session.csrf,
                      read_only=self.read_only, flash=messages)
        return pages.View(store=target, root=self.store, namespace=ns, frame=frame, query=query,
                          anchor=self.anchor, reviewer=self.reviewer,
                          operator=self.operator_via is not None)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "operator"


def _first(query: str) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, max_num_fields=64, errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise ValidationError("the request's parameters cannot be read (not UTF-8, or too "
                              "many): use the console's own links and forms") from None
    return {k: v[0] for k, v in parsed.items()}


def _message_page(title: str, message: str, *, back: str | None = None) -> str:
    link = f'<p><a href="{esc(back)}">back</a></p>' if back else ""
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>{esc(title)} · anneal-memory</title>"
            '<link rel="stylesheet" href="/static/console.css"></head><body><main>'
            f'<h1>{esc(title)}</h1><p class="flash error" id="message">{esc(message)}</p>{link}'
            "</main></body></html>")


def _handler(console: Console) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "anneal-memory-console"
        sys_version = ""
        timeout = 30

        # -------------------------------------------------------------- plumbing
        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            if console.log is not None:  # the path only: a query may hold the login token
                path = urlsplit(self.path).path
                console.log.write(f"{self.command} {path} {int(code) if str(code).isdigit() else code}\n")
                console.log.flush()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, body: str | bytes, *, ctype: str = "text/html; charset=utf-8",
                  headers: Mapping[str, str] | None = None) -> None:
            data = body.encode("utf-8") if isinstance(body, str) else body
            self.send_response(status)
            # a login request's session cookie rides on whatever answers it, a refusal too
            for k, v in {**HEADERS, **self._cookie, **(headers or {})}.items():
                self.send_header(k, v)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _refuse(self, status: int, title: str, message: str) -> None:
            self._send(status, _message_page(title, message))

        def do_GET(self) -> None:  # noqa: N802
            self._handle()

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def do_HEAD(self) -> None:  # noqa: N802
            self._refuse(405, "Not allowed", "use GET")

        # -------------------------------------------------------------- one request
        _cookie: dict[str, str] = {}

        def _handle(self) -> None:
            self._cookie = {}
            try:
                self._route()
            except pages.NotFound as exc:
                self._refuse(404, "Not found", str(exc))
            except AnnealMemoryError as exc:
                self._refuse(400, "Refused", str(exc))
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as exc:  # a bug: one line for the operator, the trace on stderr
                traceback.print_exc(file=sys.stderr)
                self._refuse(500, "Internal error",
                             f"internal error {type(exc).__name__}: please report it")

        def _route(self) -> None:
            if not host_ok(self.headers.get("Host"), console.allowed):
                # a DNS-rebinding page reaches us under its own name: refuse it
                self._refuse(403, "Wrong host", "this console answers only to "
                             + " or ".join(sorted(console.allowed)))
                return
            url = urlsplit(self.path)
            path = url.path
            if path == "/static/console.css" and self.command == "GET":
                self._send(200, CSS, ctype="text/css; charset=utf-8")
                return
            query = _first(url.query)
            cookie = cookie_name(console.port)
            token = query.pop("token", None) if self.command == "GET" else None
            session = console.sessions.get(read_cookie(self.headers.get("Cookie"), cookie))
            if session is None and token is not None:
                # the login link: used up here, the page served with the session cookie (a
                # browser holding the cookie ignores the spent token on a reload)
                sid = console.sessions.redeem(token)
                if sid is None:
                    self._refuse(403, "Login link used", "this login link is not valid or was "
                                 "already used: each link works once; restart anneal-memory ui "
                                 "for a new one, or use the browser that opened it first")
                    return
                session = console.sessions.get(sid)
                self._cookie = {"Set-Cookie": f"{cookie}={sid}; HttpOnly; SameSite=Strict; Path=/"}
            if session is None:
                self._refuse(403, "Log in first", "open the login link anneal-memory ui printed "
                             "when it started (each link works once)")
                return
            if self.command == "GET":
                page = pages.PAGES.get(path)
                if page is None:
                    raise pages.NotFound(f"no page {path!r}")
                with console._lock:
                    html = page(console.view(query, session))
                self._send(200, html)
                return
            self._post(path, session)

        def _post(self, path: str, session: Any) -> None:
            if not same_origin(self.headers.get("Origin"), self.headers.get("Sec-Fetch-Site"),
                               console.allowed):
                self._refuse(403, "Cross-site request", "this action came from another site: "
                             "nothing was changed")
                return
            act = actions.ACTIONS.get(path)
            if act is None:
                raise pages.NotFound(f"no action {path!r}")
            try:
                length = int(self.headers.get("Content-Length") or "0")
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self._refuse(413, "Too large", f"a form is at most {MAX_BODY} bytes")
                return
            raw = self.rfile.read(length)
            try:
                form = _first(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ValidationError("the form is not UTF-8 text") from None
            if not csrf_ok(session, form.get("csrf")):
                self._refuse(403, "Refused", "the form's CSRF token is missing or wrong (reload "
                             "the page and try again): nothing was changed")
                return
            if console.read_only:
                self._refuse(403, "Read-only", "this console is read-only (the store was opened "
                             "read-only): nothing was changed")
                return
            with console._lock:
                view = console.view(form, session, flash=False)
                message = act(actions.Act(view.store, form, console.operator_via,
                                          console.reviewer))
            session.flash.append(("ok", message))
            back = form.get("back", "/")
            back = back if back in pages.PAGES else "/"
            params = {k: form[k] for k in ("ns",) if form.get(k)}
            if back == "/episode" and form.get("id"):
                params["id"] = form["id"]
            self._send(303, "", headers={"Location": back + (f"?{urlencode(params)}" if params else "")})

    return Handler


class ConsoleOptions(TypedDict, total=False):
    """The ``Console`` options ``serve`` passes on."""

    host: str
    port: int
    read_only: bool
    operator_via: str | None
    anchor: str | os.PathLike[str] | None
    reviewer: str | None
    log: TextIO | None
    project_name: str | None


def serve(store: Store | str | os.PathLike[str], *, out: TextIO | None = None,
          as_json: bool = False, **options: Unpack[ConsoleOptions]) -> int:
    """Run the console until interrupted, printing its one-time login link to ``out``
    (``as_json``: one JSON line with ``login_url``, ``url``, ``store``, ``read_only``)."""
    out = out or sys.stdout
    given: ConsoleOptions = {**options, "log": options.get("log", sys.stderr)}
    console = Console(store, **given)
    try:
        where = redact(console.store.dsn) if console.store.dsn else str(console.store.path)
        if as_json:
            out.write(json.dumps({"login_url": console.login_url(), "url": console.url,
                                  "store": where, "read_only": console.read_only,
                                  "operator": console.operator_via is not None}) + "\n")
        else:
            mode = " (read-only)" if console.read_only else ""
            out.write(f"anneal-memory console for {where}{mode}\n"
                      f"open this link (it works once; the browser then keeps a session):\n"
                      f"  {console.login_url()}\n"
                      "press Ctrl-C to stop\n")
        out.flush()
        console.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        console.close()
    return 0
