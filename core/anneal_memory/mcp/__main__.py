"""``python -m anneal_memory.mcp``: the MCP server without the CLI (same flags)."""

from __future__ import annotations

import argparse
import sys

from .server import run_server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m anneal_memory.mcp",
                                description="anneal-memory MCP server over stdio (or HTTP)")
    p.add_argument("--db", help="store path (default: $ANNEAL_MEMORY_DB, else ~/.anneal-memory/memory.db)")
    p.add_argument("--project-name", default=None)
    p.add_argument("--session-id", default=None,
                   help="this client's session id for the consolidation baton "
                        "(default: $ANNEAL_MEMORY_SESSION_ID)")
    p.add_argument("--skip-integrity", action="store_true",
                   help="start even if tool descriptions do not match the manifest (development)")
    p.add_argument("--generate-integrity", action="store_true",
                   help="rewrite the tool integrity manifest and exit")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                        "(bearer tokens: anneal-memory token create)")
    p.add_argument("--rate-limit", metavar="RATE",
                   help="with --http: requests per token, e.g. 20/s, 1200/min (default), off")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="with --http: a browser page's origin to allow (repeatable)")
    a = p.parse_args(argv)
    return run_server(a.db, a.project_name, a.session_id, a.skip_integrity, a.generate_integrity,
                      http=a.http, rate_limit=a.rate_limit, allow_origins=a.allow_origin)


if __name__ == "__main__":
    sys.exit(main())
