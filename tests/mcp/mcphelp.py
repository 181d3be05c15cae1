"""Helpers: the server started exactly as the README documents
(``anneal-memory --db X --project-name P serve --session-id S``, the console script of
this environment), driven by the official SDK's stdio client."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SESSION = "S"
PROJECT = "P"


def anneal_bin() -> str:
    """The ``anneal-memory`` console script installed next to this interpreter."""
    here = Path(sys.executable).parent / ("anneal-memory.exe" if os.name == "nt" else "anneal-memory")
    found = str(here) if here.exists() else shutil.which("anneal-memory")
    if not found:
        raise RuntimeError("the anneal-memory console script is not installed in this "
                           "environment: pip install -e '.[mcp]'")
    return found


def server_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANNEAL_MEMORY_") and k != "ANNEAL_OPERATOR"}
    env["HOME"] = str(home)
    env.update(extra)
    return env


def serve_args(db: Path, session: str | None = SESSION, *global_flags: str) -> list[str]:
    args = ["--db", str(db), "--project-name", PROJECT, *global_flags, "serve"]
    if session is not None:
        args += ["--session-id", session]
    return args


@contextlib.asynccontextmanager
async def connect(db: Path, session: str | None = SESSION, *, env: dict[str, str] | None = None,
                  global_flags: tuple[str, ...] = ()) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=anneal_bin(),
                                   args=serve_args(db, session, *global_flags),
                                   env=env or server_env(db.parent))
    log = db.parent / "server-stderr.log"
    with open(log, "a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as client:
                try:
                    await client.initialize()
                except Exception as exc:  # show why the server went away
                    raise AssertionError(f"server did not start ({exc}); its stderr:\n"
                                         f"{log.read_text('utf-8')[-3000:]}") from None
                yield client


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run one async test body (no async pytest plugin needed)."""
    return anyio.run(fn)


def is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(client: ClientSession, tool: str, args: dict[str, Any] | None = None,
               *, ok: bool = True) -> str:
    """Call a tool; assert it succeeded (or failed, with ok=False); return its text."""
    result = await client.call_tool(tool, args or {})
    text = text_of(result)
    assert is_error(result) is (not ok), f"{tool} {args}: {text}"
    assert "Traceback" not in text
    return text


def cli(db: Path, *args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a separate process on the same store."""
    env = server_env(db.parent, **(env_extra or {}))
    return subprocess.run([anneal_bin(), "--db", str(db), *args], capture_output=True,
                          text=True, env=env, timeout=60)
