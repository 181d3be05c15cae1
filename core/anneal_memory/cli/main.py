"""Argument parsing and dispatch. Exit codes: 0 ok, 1 refused or invalid input (one line
naming the problem and the fix), 2 usage."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..errors import AnnealMemoryError


def _utf8_streams() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, io.TextIOWrapper) and (stream.encoding or "").lower() not in ("utf-8", "utf8"):
            stream.reconfigure(encoding="utf-8", errors="replace")
    if isinstance(sys.stdin, io.TextIOWrapper) and (sys.stdin.encoding or "").lower() not in ("utf-8", "utf8"):
        sys.stdin.reconfigure(encoding="utf-8", errors="strict")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="anneal-memory",
                                description="Living, governed memory for AI agents.")
    p.add_argument("--version", action="version", version=f"anneal-memory {__version__}")
    p.add_argument("--db", help="store path (default: $ANNEAL_MEMORY_DB, else ~/.anneal-memory/memory.db)")
    p.add_argument("--project-name", default=None, help="name in the continuity header (default Agent)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    from . import commands

    commands.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    _utf8_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except AnnealMemoryError as exc:
        print(f"anneal-memory: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        print("anneal-memory: interrupted", file=sys.stderr)
        return 130
    except (OSError, UnicodeDecodeError) as exc:
        print(f"anneal-memory: error: {exc}", file=sys.stderr)
        return 1


def emit(args: argparse.Namespace, data: Any, text: str | None = None) -> None:
    """Print ``data`` as one JSON document with --json, else ``text``."""
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)


def open_store(args: argparse.Namespace, **kw: Any) -> Any:
    from ..store import Store

    return Store(args.db or os.environ.get("ANNEAL_MEMORY_DB") or None,
                 project_name=args.project_name, **kw)
