"""The team server for many users (issue 54, goal 2), on real servers and real stores:
the compiled HTTP parser and event loop in use, a plain ``tools/call`` answered without a
per-request SDK session and exactly as the SDK answers it, the token read on the event
loop (no worker-thread hop), ``--workers N`` processes that each refuse a token revoked
by another process at once, and no cross-user result while many official SDK clients
record and recall at once across workers, with one valid audit chain after."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from anneal_memory import Store
from anneal_memory.mcp import http as team

from httphelp import connect, http_server, make_token, post, start_http, stop
from mcphelp import call, cli, run

VERSION = "2025-06-18"  # a handshake version both SDK lines negotiate
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads which process holds a connection from /proc")


@contextlib.contextmanager
def in_process(db: Path) -> Iterator[tuple[team.App, str]]:
    """The app on a real uvicorn server in a thread of this process (its counters and
    token reads observable); yields (app, endpoint URL)."""
    import uvicorn

    store = Store(db, trust_ceiling="agent", consolidate_requires_baton_on_create=True)
    sock = team._listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = team.App(store, "127.0.0.1", port, rate_limit="off")
    server = uvicorn.Server(team._config(app))
    ready = threading.Event()
    app.on_ready = ready.set
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert ready.wait(60), "the in-process server did not start"
        yield app, f"http://127.0.0.1:{port}{team.PATH}"
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()
        store.close()


def _raw(url: str, token: str, message: Any, headers: dict[str, str] | None = None
         ) -> tuple[int, str, str]:
    """One POST of ``message`` (JSON) on a fresh connection: (status, content type, body)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("POST", u.path, body=json.dumps(message).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type") or "", resp.read().decode()
    finally:
        conn.close()


def _tool_call(name: str, arguments: Any = None, rid: int | str = 7) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _token(db: Path, user: str) -> str:
    with Store(db, consolidate_requires_baton_on_create=True) as store:
        from anneal_memory.mcp.tokens import create_token

        return create_token(store, {"user": user})[0]


def test_ready_line_names_the_compiled_parser_and_loop(tmp_path: Path) -> None:
    """The mcp extra installs httptools and uvloop, and the server runs on them (the
    line names what uvicorn loaded, not what is installed)."""
    db = tmp_path / "team.db"
    for serve_flags, workers in (((), "1 worker,"), (("--workers", "2"), "2 workers,")):
        line = _ready_line(db, serve_flags)
        assert workers in line and "httptools parser" in line and "uvloop loop" in line, line


def _ready_line(db: Path, serve_flags: tuple[str, ...]) -> str:
    import subprocess

    from mcphelp import anneal_bin, server_env

    proc = subprocess.Popen([anneal_bin(), "--db", str(db), "serve", "--http", "127.0.0.1:0",
                             *serve_flags], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=server_env(db.parent), stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    stop(proc)  # type: ignore[arg-type]
    return line


def test_loaded_config_uses_httptools_and_uvloop(tmp_path: Path) -> None:
    """What the server runs on, read from uvicorn's loaded configuration."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    with Store(tmp_path / "team.db") as store:
        app = team.App(store, "127.0.0.1", 8765)
        config = team._config(app)
        assert issubclass(config.http_protocol_class, HttpToolsProtocol)
        assert team.engines(config) == {"http": "httptools", "loop": "uvloop"}
        if app.token_reader is not None:
            app.token_reader.close()


def test_request_heads_over_the_limit_are_refused_and_the_server_goes_on(
        tmp_path: Path) -> None:
    """httptools has no bound of its own on a request's headers (20 MB were accepted):
    many headers, or one endless header value, past 64 KiB are answered 400 and closed;
    the next request is served."""
    import socket

    db = tmp_path / "team.db"
    alice = _token(db, "alice")
    with in_process(db) as (_app, url):
        port = urlsplit(url).port
        assert port is not None
        many = "".join(f"X-Pad-{i}: {'a' * 990}\r\n" for i in range(80))
        one_long = f"X-Pad: {'b' * 300_000}\r\n"
        for pad in (many, one_long):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                with contextlib.suppress(ConnectionError):
                    s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{pad}"
                              "\r\n".encode())
                reply = s.recv(4096)
            assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
            assert b"over 65,536 bytes" in reply, reply
        # one header that never ends: refused once 64 KiB of it have arrived
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: ".encode())
            with contextlib.suppress(ConnectionError):
                for _ in range(20):
                    s.sendall(b"c" * 8192)
            reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 400") and b"over 65,536 bytes" in reply, reply
        # a head under the limit, and the next request, are served
        ok = "".join(f"X-Pad-{i}: {'a' * 990}\r\n" for i in range(40))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{ok}\r\n".encode())
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
        assert _raw(url, alice, _tool_call("status", {}), {"mcp-protocol-version": VERSION}
                    )[0] == 200


def test_plain_tool_call_is_answered_directly_as_the_sdk_answers_it(tmp_path: Path) -> None:
    """The same tools/call answered directly (with the protocol version header) and by
    the SDK's per-request session (without it): equal replies; everything unusual still
    goes to the SDK, which answers it as before."""
    db = tmp_path / "team.db"
    alice = _token(db, "alice")
    with in_process(db) as (app, url):
        assert _raw(url, alice, _tool_call("record", {
            "content": "alice's kiwi orchard é \u2028 ✓", "episode_type": "observation"}),
            {"mcp-protocol-version": VERSION})[0] == 200
        cases = [_tool_call("status", {}), _tool_call("recall", {"keyword": "kiwi"}, "r-1"),
                 _tool_call("no_such_tool", {}), _tool_call("record", {"content": 5}),
                 _tool_call("record"), _tool_call("recall", {"keyword": "orchard é"}, 0)]
        for message in cases:
            before = dict(app.served)
            direct = _raw(url, alice, message, {"mcp-protocol-version": VERSION})
            assert app.served["direct"] == before["direct"] + 1, message
            via_sdk = _raw(url, alice, message)
            assert app.served["sdk"] == before["sdk"] + 1, message
            assert direct[0] == via_sdk[0] == 200
            assert direct[1].split(";")[0] == via_sdk[1].split(";")[0] == "application/json"
            assert json.loads(direct[2]) == json.loads(via_sdk[2]), message
        # not a plain tools/call: the SDK's, unchanged
        sdk_only = [({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {}),
                    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
                    ([_tool_call("status", {})], {}),
                    ({**_tool_call("status", {}), "extra": 1}, {}),
                    (_tool_call("status", {}), {"Accept": "text/html"}),
                    ({**_tool_call("status", {}), "id": True}, {})]
        for message, extra in sdk_only:
            before = dict(app.served)
            _raw(url, alice, message, {"mcp-protocol-version": VERSION, **extra})
            assert app.served == {**before, "sdk": before["sdk"] + 1}, message
        status, _ctype, body = _raw(url, alice, _tool_call("status", {}),
                                    {"mcp-protocol-version": VERSION, "Accept": "text/html"})
        assert status == 406, body  # the SDK's refusal, as before


def test_token_is_read_on_the_event_loop_without_a_thread_hop(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Every token check of a SQLite store runs on the event loop's own thread (the
    worker-thread hop made a tokened ping wait behind the tool calls under load)."""
    db = tmp_path / "team.db"
    alice = _token(db, "alice")
    threads: list[str] = []
    real = team.authenticate

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(team, "authenticate", spy)
    with in_process(db) as (app, url):
        loop_thread = [t.name for t in threading.enumerate()
                       if t.name.startswith("Thread") and t.daemon]
        for i in range(5):
            assert _raw(url, alice, _tool_call("status", {}, i),
                        {"mcp-protocol-version": VERSION})[0] == 200
        assert post(url, "amt_000000000000_" + "x" * 40)[0] == 401
    assert len(threads) == 6
    assert set(threads) <= set(loop_thread), (threads, loop_thread)
    assert not any("AnyIO" in t or "worker" in t.lower() for t in threads), threads


# ------------------------------------------------------------------ worker processes
def _worker_pids(server_pid: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == server_pid and b"spawn_main" in cmd:
            pids.append(int(stat.parent.name))
    return sorted(pids)


def _holder(server_port: int, client_port: int, pids: list[int]) -> int | None:
    """The worker process holding the server end of the connection from ``client_port``."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                f = row.split()
                if (int(f[1].rsplit(":", 1)[1], 16) == server_port
                        and int(f[2].rsplit(":", 1)[1], 16) == client_port):
                    inode = f[9]
    if inode is None:
        return None
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if fd.readlink().name == f"socket:[{inode}]":
                    return pid
    return None


def _status(conn: http.client.HTTPConnection, token: str, rid: int) -> int:
    conn.request("POST", team.PATH, body=json.dumps(_tool_call("status", {}, rid)).encode(),
                 headers={"Content-Type": "application/json",
                          "Accept": "application/json, text/event-stream",
                          "Authorization": f"Bearer {token}",
                          "mcp-protocol-version": VERSION})
    resp = conn.getresponse()
    resp.read()
    return resp.status


@linux_only
def test_a_token_revoked_in_another_process_is_refused_by_every_worker_at_once(
        tmp_path: Path) -> None:
    """Kept-alive connections held by each of two workers: the CLI revokes the token in
    a process of its own, and the very next request on every connection is refused."""
    db = tmp_path / "team.db"
    assert cli(db, "init").returncode == 0
    alice = make_token(db, "--namespace", "user=alice")
    proc, url = start_http(db, serve_flags=("--workers", "2"))
    conns: list[http.client.HTTPConnection] = []
    try:
        port = urlsplit(url).port
        assert port is not None
        pids = _worker_pids(proc.pid)
        assert len(pids) == 2, pids
        held: dict[int, list[http.client.HTTPConnection]] = {p: [] for p in pids}
        for i in range(60):  # until each worker holds a connection
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            assert _status(conn, alice["token"], i) == 200
            conns.append(conn)
            holder = _holder(port, conn.sock.getsockname()[1], pids)
            assert holder in held, (holder, pids)
            held[holder].append(conn)
            if all(held.values()) and len(conns) >= 4:
                break
        assert all(held.values()), {p: len(c) for p, c in held.items()}
        # tokens made by other processes while it serves are known at once, every time
        # (a second Store in the server's process once lost the database's shared index
        # to another process's close: new tokens unknown, then "disk I/O error")
        for n in range(3):
            carol = make_token(db, "--namespace", f"user=carol{n}")
            assert [_status(c, carol["token"], 50 + i) for i, c in enumerate(conns)
                    ] == [200] * len(conns)
        res = cli(db, "token", "revoke", alice["id"])
        assert res.returncode == 0, res.stderr
        refused = [_status(c, alice["token"], 100 + i) for i, c in enumerate(conns)]
        assert refused == [401] * len(conns), refused
    finally:
        for c in conns:
            c.close()
        assert stop(proc) == 0


def test_many_clients_across_workers_see_only_their_own_memory(tmp_path: Path) -> None:
    """Eight users' official SDK clients record and recall at once through two worker
    processes: every recall returns only its user's episodes, every acknowledged record
    is in its user's namespace afterwards, and the audit chain is one valid chain."""
    db = tmp_path / "team.db"
    users = [f"user{i}" for i in range(8)]
    tokens = {u: _token(db, u) for u in users}
    acked: dict[str, list[str]] = {u: [] for u in users}
    seen: dict[str, list[str]] = {u: [] for u in users}

    async def one(url: str, user: str) -> None:
        async with connect(url, tokens[user]) as client:
            for i in range(6):
                reply = await call(client, "record", {
                    "content": f"{user} shared orchard note {i}", "episode_type": "observation"})
                m = re.search(r"Recorded \[([0-9a-f]+)\]", reply)
                assert m, reply
                acked[user].append(m.group(1))
                seen[user].append(await call(client, "recall", {"keyword": "orchard",
                                                                "limit": 50}))

    async def body(url: str) -> None:
        async with anyio.create_task_group() as tg:
            for u in users:
                tg.start_soon(one, url, u)

    with http_server(db, serve_flags=("--workers", "2", "--rate-limit", "off")) as url:
        run(lambda: body(url))
    for user in users:
        for reply in seen[user]:
            lines = re.findall(r"^- \[[0-9a-f]+\] \([^)]*\) (.*)$", reply, re.MULTILINE)
            assert lines, reply
            assert all(line.startswith(f"{user} ") for line in lines), (user, reply)
    with Store(db, read_only=True) as store:
        for user in users:
            view = store.scoped({"user": user})
            assert sorted(e.id for e in view.recall(limit=100).episodes) == sorted(acked[user])
            for other in users:
                if other != user:
                    assert all(store.scoped({"user": other}).get(i) is None
                               for i in acked[user])
    res = cli(db, "verify")
    assert res.returncode == 0 and "valid" in res.stdout.lower(), res.stdout + res.stderr


@pytest.mark.parametrize("flags,needle", [
    (("serve", "--http", "127.0.0.1:0", "--workers", "0"), "--workers 0"),
    (("serve", "--http", "127.0.0.1:0", "--workers", "65"), "--workers 65"),
    (("serve", "--workers", "2"), "are for --http"),
])
def test_bad_workers_are_refused_before_anything_starts(tmp_path: Path,
                                                        flags: tuple[str, ...],
                                                        needle: str) -> None:
    db = tmp_path / "team.db"
    res = cli(db, *flags)
    assert res.returncode != 0 and needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert not db.exists()  # nothing was created


# ------------------------------------------------------------------ the per-request cost
def test_offload_runs_each_call_on_its_own_threads_in_the_caller_s_context() -> None:
    """The direct path's hop to a thread: the call sees the request's context (its
    trace span), its exception reaches the request, and ``close`` ends the threads."""
    import asyncio
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")
    offload = team.Offload(2)

    def where() -> tuple[str, str]:
        return var.get(), threading.current_thread().name

    def boom() -> None:
        raise ValueError("a tool's failure")

    async def one(name: str) -> tuple[str, str]:
        var.set(name)
        return await offload.run(where)

    async def main() -> list[tuple[str, str]]:
        got = await asyncio.gather(*(one(f"request-{i}") for i in range(6)))
        with pytest.raises(ValueError, match="a tool's failure"):
            await offload.run(boom)
        return got

    try:
        got = asyncio.run(main())
    finally:
        offload.close()
    assert [g[0] for g in got] == [f"request-{i}" for i in range(6)]
    assert {g[1] for g in got} <= {"anneal-memory-call-1", "anneal-memory-call-2"}
    assert not [t for t in threading.enumerate() if t.name.startswith("anneal-memory-call")]


def test_a_token_s_record_is_parsed_once_until_it_changes(tmp_path: Path) -> None:
    """Every request reads its token's stored record; the record is parsed again only
    when its text changed, so a revocation counts at the next request all the same."""
    from anneal_memory.mcp.tokens import TokenError, TokenReader, authenticate, revoke_token
    from anneal_memory.mcp.tokens import create_token as make

    with Store(tmp_path / "team.db") as store:
        secret, made = make(store, {"user": "alice"})
        reader = TokenReader.open(store)
        assert reader is not None
        try:
            first = authenticate(store, f"Bearer {secret}", reader)
            assert authenticate(store, f"Bearer {secret}", reader) is first  # parsed once
            assert first.namespace == made.namespace and first.state() == "active"
            revoke_token(store, made.id)
            with pytest.raises(TokenError, match="revoked"):
                authenticate(store, f"Bearer {secret}", reader)
            with pytest.raises(TokenError, match="unknown token"):
                authenticate(store, f"Bearer {secret[:-2]}xx", reader)
        finally:
            reader.close()


def test_the_last_use_of_many_tokens_is_written_in_few_writes_and_none_is_lost(
        tmp_path: Path) -> None:
    """Twenty tokens' first requests at once: their last-use times are written together
    (the requests that come while one write is under way go into the next), and every
    one of them is in the store before the server stops."""
    import time as _time

    from anneal_memory.mcp.tokens import list_tokens

    db = tmp_path / "team.db"
    with Store(db, consolidate_requires_baton_on_create=True) as store:
        from anneal_memory.mcp.tokens import create_token as make

        made = [make(store, {"user": f"user{i}"}) for i in range(20)]
    writes: list[int] = []
    with in_process(db) as (app, url):
        real = app.usage._write

        def slow_write(due: dict[str, str]) -> None:  # the first write takes a while
            writes.append(len(due))
            if len(writes) == 1:
                _time.sleep(0.5)
            real(due)

        app.usage._write = slow_write
        first = threading.Thread(target=_raw, args=(url, made[0][0], _tool_call("status", {}),
                                                    {"mcp-protocol-version": VERSION}))
        first.start()
        while not writes:
            _time.sleep(0.01)
        rest = [threading.Thread(target=_raw, args=(url, s, _tool_call("status", {}),
                                                    {"mcp-protocol-version": VERSION}))
                for s, _info in made[1:]]
        for t in rest:
            t.start()
        for t in [first, *rest]:
            t.join(60)
        deadline = _time.monotonic() + 20
        while sum(writes) < 20 and _time.monotonic() < deadline:
            _time.sleep(0.05)
        assert writes[0] == 1 and sum(writes) == 20 and len(writes) < 20, writes
        with Store(db, read_only=True) as store:
            used = {t.id: t.last_used_at for t in list_tokens(store)}
        assert all(used[info.id] for _s, info in made), used


def test_the_views_kept_per_worker_are_bounded_and_a_dropped_one_is_made_again(
        tmp_path: Path) -> None:
    """At most ``keep`` tokens' views are kept (the least recently served go first); a
    token whose view was dropped gets a new one on its own namespace and ceiling."""
    from anneal_memory.mcp.tokens import create_token as make

    with Store(tmp_path / "team.db", trust_ceiling="agent") as store:
        infos = [make(store, {"user": f"user{i}"}, trust_ceiling="tool" if i == 0 else "agent"
                      )[1] for i in range(3)]
        principals = team.Principals(store, keep=2)
        first = principals.tools_for(infos[0])
        second = principals.tools_for(infos[1])
        assert principals.tools_for(infos[0]) is first  # served again: the newest now
        principals.tools_for(infos[2])  # over the bound: user1's view goes
        assert principals.tools_for(infos[0]) is first
        again = principals.tools_for(infos[1])
        assert again is not second and again.store.namespace == infos[1].namespace
        assert principals.tools_for(infos[2]) is not None and len(principals._tools) == 2
        assert first.store.trust_ceiling == "tool" and again.store.trust_ceiling == "agent"
        again.call("record", {"content": "user1's own note", "episode_type": "observation"})
        assert [e.content for e in store.scoped(infos[1].namespace).recall().episodes] == [
            "user1's own note"]
        assert store.scoped(infos[0].namespace).recall().episodes == []


@pytest.mark.parametrize("rid", [0, 7, -3, 2**60, "r-1", "", "id \"quoted\" é \u2028"])
@pytest.mark.parametrize("text", ["", "Recorded [abc] (observation, trust agent).",
                                  "line\nnext\t\"q\" \\ é ✓ \u2028 \x00 \U0001f600 </script>",
                                  "x" * 5000])
def test_the_direct_reply_is_byte_for_byte_the_json_of_the_sdk_s_result(rid: Any, text: str
                                                                         ) -> None:
    """The direct path writes its reply from parts; every byte is the one json.dumps
    writes for the whole response (what the SDK's JSON is compared against above)."""
    from anneal_memory.mcp import fastpath

    for is_error in (False, True):
        call = fastpath.ToolCall(rid, "status", None)
        whole = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": text}], "isError": is_error}},
            ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        assert fastpath.reply(call, text, is_error) == whole
