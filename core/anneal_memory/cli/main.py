"""Argument parsing and dispatch. Exit codes: 0 ok, 1 refused or invalid input (one line
naming the problem and the fix), 2 usage."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..errors import AnnealMemoryError, ReadOnlyStoreError, StoreLocationError
from .common import NAMESPACE_HELP, emit, open_store  # noqa: F401  (re-exported)


def _utf8_streams() -> None:
    # The locale's encoding (cp1252, ASCII under LC_ALL=C) would mangle or refuse
    # non-ASCII memory content: the CLI always speaks UTF-8.
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, io.TextIOWrapper) and (stream.encoding or "").lower() not in ("utf-8", "utf8"):
            stream.reconfigure(encoding="utf-8", errors="replace")
    if isinstance(sys.stdin, io.TextIOWrapper) and (sys.stdin.encoding or "").lower() not in ("utf-8", "utf8"):
        sys.stdin.reconfigure(encoding="utf-8", errors="strict")


def _utf8_argv(argv: Sequence[str]) -> list[str]:
    # Under a non-UTF-8 locale Python hands over UTF-8 argument bytes as surrogate escapes.
    out = []
    for a in argv:
        if any("\udc80" <= ch <= "\udcff" for ch in a):
            try:
                a = a.encode(sys.getfilesystemencoding(), "surrogateescape").decode("utf-8")
            except UnicodeError:
                pass
        out.append(a)
    return out


class UsageError(Exception):
    """A command line argparse cannot read: its message, and the parser that said it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is raised (main prints it once, and under --json
    also as one JSON document) and a mistyped command gets a "did you mean"."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(self, message + _did_you_mean(self, message))


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    if "invalid choice: '" not in message:
        return ""
    wrong = message.split("invalid choice: '", 1)[1].split("'", 1)[0]
    choices = [c for a in parser._actions if isinstance(a, argparse._SubParsersAction)
               for c in a.choices]
    close = difflib.get_close_matches(wrong, choices, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _episode_bound(text: str) -> int | None:
    """``--max-episode-chars``: a whole number >= 1, or 'none' for no bound."""
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1 (or 'none' "
                                         "for no bound)")
    return value


def _global_options(p: argparse.ArgumentParser, *, after: bool = False,
                    serve: bool = True) -> None:
    # Declared on the top-level parser, and again (defaults suppressed, so a value given
    # before the command is kept) on every command: `status --db X` works like
    # `--db X status`, as in most CLIs.
    d: dict[str, Any] = {"default": argparse.SUPPRESS} if after else {}
    g = p.add_argument_group("global options (before or after the command)") if after else p
    g.add_argument("--version", action="version", version=f"anneal-memory {__version__}",
                   help="print the version and exit")
    g.add_argument("--db", metavar="PATH", help="the store: a .db path or a postgresql:// URL "
                   "(default: $ANNEAL_MEMORY_DB, else ~/.anneal-memory/memory.db)", **d)
    g.add_argument("--project-name", metavar="NAME",
                   help="name in the continuity header and the wrap instructions "
                        "(default Agent)", **({"default": None} if not after else d))
    g.add_argument("--namespace", action="append", metavar="KEY=VALUE", help=NAMESPACE_HELP,
                   **d)
    g.add_argument("--max-episode-chars", type=_episode_bound, metavar="N",
                   help="the longest episode a record or import takes, in characters "
                        "(default 100,000; 'none': no bound)", default=argparse.SUPPRESS)
    if not p.prog.endswith(" ui"):  # the console has its own --read-only (the same meaning)
        g.add_argument("--read-only", action="store_true", dest="read_only_global",
                       help="open the store read-only: never write or create a file (reads "
                            "work in a read-only folder or file; writes are refused)", **d)
    if not serve:  # the two serve flags are shown where they mean something
        return
    g.add_argument("--skip-integrity", action="store_true",
                   help="serve: do not check the MCP tool-integrity manifest", **d)
    g.add_argument("--generate-integrity", action="store_true",
                   help="serve: write the MCP tool-integrity manifest and exit", **d)


def _subparsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [child for a in p._actions if isinstance(a, argparse._SubParsersAction)
            for child in dict.fromkeys(a.choices.values())]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="anneal-memory",
                                description="Living, governed memory for AI agents.")
    _global_options(p)
    p.add_argument("--json", action="store_true", dest="json_global",
                   help="print one JSON document (1.0.2's form of each command's --json)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    from . import (
        admin,
        audit,
        commands,
        console,
        episodes,
        review,
        semantic,
        tiers,
        tokens,
        views,
        wrap,
    )

    for module in (episodes, views, wrap, audit, admin, tiers, commands, review, console,
                   tokens, semantic):
        module.register(sub)
    todo = _subparsers(p)
    while todo:
        child = todo.pop()
        _global_options(child, after=True, serve=child.prog.endswith(" serve"))
        todo.extend(_subparsers(child))
    return p


# Library refusals name library calls; on the command line the same fix is a command.
_CLI_WORDS = (
    ("AuditTrail.repair rebuilds it from the database's copy of the chain",
     "run anneal-memory audit-repair to rebuild it from the database's copy"),
    ("AuditTrail.head() (the CLI's audit head)", "'anneal-memory audit head --json'"),
    ("the output of AuditTrail.head()", "the output of 'anneal-memory audit head --json'"),
    ("save it, re-open it with its wrap token, or abandon it with wrap_cancel",
     "save it with 'anneal-memory save-continuity FILE --wrap-token TOKEN' ('anneal-memory "
     "wrap-token-current' prints its token, 'anneal-memory wrap-status' shows it), or abandon "
     "it with 'anneal-memory wrap-cancel'"),
    ("open it read-only (read_only=True) to read it", "read it with --read-only"),
    ("(Store(max_episode_chars=...))", "(--max-episode-chars N)"),
    ("or open the store with a larger bound (None: no bound)",
     "or give a larger --max-episode-chars ('none': no bound)"),
    ("by moving the old files aside first (move_aside does, into a timestamped folder)",
     "with 'anneal-memory init --force', which moves the old files aside into a timestamped "
     "folder first"),
    ("new store (a path that holds none), or import it without restore",
     "new store (--db a path that holds none), or import it without --restore"),
)


# The lifecycle calls a library refusal names, by their command names.
_CALL_NAMES = re.compile(r"\b(wrap_cancel|prepare_wrap|save_continuity|wrap_status)\b")


def _cli_message(exc: AnnealMemoryError) -> str:
    """The refusal as the CLI says it: library fixes in CLI terms, plus a hint the library
    cannot give (it knows no flags)."""
    message = str(exc)
    for library, cli in _CLI_WORDS:
        message = message.replace(library, cli)
    message = _CALL_NAMES.sub(lambda m: m.group(1).replace("_", "-"), message)
    if isinstance(exc, ReadOnlyStoreError) and "opened read_only" in message:
        message += (" (it was opened read-only: --read-only was given, or the command only "
                    "reads; leave --read-only out for a command that writes)")
    if isinstance(exc, StoreLocationError) and "--db" not in message:
        message += " (pass --db PATH or set ANNEAL_MEMORY_DB)"
    return message


def _usage_error(exc: UsageError, *, json_wanted: bool) -> int:
    """argparse's usage line and message on stderr (exit 2); under --json the same
    message as one JSON document on stdout, as every other refusal."""
    if json_wanted:
        _print_error_doc({}, "UsageError", str(exc))
    exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
    return 2


def _print_error_doc(data: dict[str, Any], kind: str, message: str) -> None:
    """The one JSON document a refused --json command prints on stdout."""
    doc = {**data, "error": {"type": kind, "message": message}}
    print(json.dumps(doc, indent=2, ensure_ascii=False, default=str))


def _fail(message: str) -> int:
    print(f"anneal-memory: error: {message}", file=sys.stderr)
    return 1


def _stdout_gone() -> None:
    """Stop writing to a closed pipe: later flushes (at exit too) go nowhere, quietly."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _run(args: argparse.Namespace) -> int:
    # The library's UserWarnings (level-capped, schema roles ...) become one clean line each.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            return int(args.func(args) or 0)
        finally:
            for w in caught:
                print(f"anneal-memory: warning: {w.message}", file=sys.stderr)


def _run_closing(args: argparse.Namespace) -> int:
    from .common import close_open_stores

    try:
        return _run(args)
    finally:
        close_open_stores()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (never raises, never a traceback)."""
    _utf8_streams()
    parser = build_parser()
    words = _utf8_argv(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 2
    except UsageError as exc:
        return _usage_error(exc, json_wanted="--json" in words)
    if getattr(args, "json_global", False):  # 1.0.2's form: anneal-memory --json COMMAND
        args.json = True
    if getattr(args, "read_only_global", False):
        args.read_only = True
    if not getattr(args, "command", None):
        if args.generate_integrity:  # `anneal-memory --generate-integrity` on its own
            from ..mcp.integrity import generate

            print(f"anneal-memory: wrote {generate()}")
            return 0
        parser.print_help()
        return 2
    if not hasattr(args, "func"):  # a command group given without its subcommand
        args.parser.print_help(sys.stderr)
        return 2
    try:
        from .common import check_namespace_applies

        check_namespace_applies(args)
        return _run_closing(args)
    except AnnealMemoryError as exc:
        message = _cli_message(exc)
        try:
            if getattr(args, "json", False):  # --json promises one document on stdout
                _print_error_doc(getattr(exc, "json_data", None) or {}, type(exc).__name__,
                                 message)
        except BrokenPipeError:  # the reader went away (`| head`): the message still counts
            _stdout_gone()
        print(f"anneal-memory: error: {message}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        print("anneal-memory: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): nothing left to say to it
        _stdout_gone()
        return 1
    except (OSError, UnicodeError) as exc:
        return _fail(f"{exc}: check the path and its permissions")
    except Exception as exc:  # a bug: still one line, never a traceback
        if os.environ.get("ANNEAL_MEMORY_DEBUG"):
            raise
        return _fail(f"internal error {type(exc).__name__}: {exc} (re-run with "
                     "ANNEAL_MEMORY_DEBUG=1 for details and report it)")

