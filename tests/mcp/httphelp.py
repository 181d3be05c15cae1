"""Helpers for the MCP server over HTTP: the server started as docs/mcp.md documents
(``anneal-memory --db X serve --http 127.0.0.1:0``, the URL read from its first line),
tokens made with the CLI, and the official SDK's streamable HTTP client on either SDK
line (1.x ``streamablehttp_client(url, headers=...)``, 2.x ``streamable_http_client(url,
http_client=...)``)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client import streamable_http

from mcphelp import anneal_bin, cli, server_env


def start_http(db: Path, *flags: str, serve_flags: tuple[str, ...] = ()
               ) -> tuple[subprocess.Popen[str], str]:
    """``anneal-memory --db DB FLAGS serve --http 127.0.0.1:0 SERVE_FLAGS`` started;
    (the process, the endpoint URL from its first line). Its stderr goes to
    ``http-server-stderr.log`` beside the store."""
    log = open(db.parent / "http-server-stderr.log", "a", encoding="utf-8")  # noqa: SIM115
    proc = subprocess.Popen([anneal_bin(), "--db", str(db), *flags, "serve", "--http",
                             "127.0.0.1:0", *serve_flags], stdout=subprocess.PIPE, stderr=log,
                            text=True, env=server_env(db.parent), stdin=subprocess.DEVNULL)
    log.close()
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"(http://\S+/mcp)", first)
    if not m:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the server did not start: {first!r}\n"
                             + (db.parent / "http-server-stderr.log").read_text("utf-8"))
    return proc, m.group(1)


def stop(proc: subprocess.Popen[str]) -> int:
    """SIGTERM, then its exit status (killed after 10 s)."""
    proc.terminate()
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


@contextlib.contextmanager
def http_server(db: Path, *flags: str, serve_flags: tuple[str, ...] = ()) -> Iterator[str]:
    """``anneal-memory --db DB serve --http 127.0.0.1:0``; yields the endpoint URL."""
    proc, url = start_http(db, *flags, serve_flags=serve_flags)
    try:
        yield url
    finally:
        stop(proc)


def make_token(db: Path, *args: str) -> dict[str, Any]:
    """``anneal-memory --db DB token create ARGS --json``: the token's document."""
    res = cli(db, "token", "create", *args, "--json")
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout))


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None,
                  headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession over streamable HTTP, sending ``token``."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if hasattr(streamable_http, "streamablehttp_client"):  # SDK 1.x
        async with streamable_http.streamablehttp_client(url, headers=sent) as (read, write, _):
            async with ClientSession(read, write) as client:
                await client.initialize()
                yield client
        return
    import httpx2  # SDK 2.x: headers go on the client it is given

    async with httpx2.AsyncClient(headers=sent, timeout=30) as http:
        async with streamable_http.streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                yield client


def post(url: str, token: str | None = None, *, host: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, str]:
    """One raw JSON-RPC ``tools/call`` POST (a record); (status, body)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "record", "arguments": {"content": "written by a refused request",
                                        "episode_type": "observation"}}}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **({"Authorization": f"Bearer {token}"} if token else {}),
        **({"Host": host} if host else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (loopback)
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")
