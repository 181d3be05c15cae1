"""Helpers every command module shares: output, store opening, input, the operator gate."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._inputs import load_json
from ..errors import ValidationError

OPERATOR_ENV = "ANNEAL_OPERATOR"


class Refused(ValidationError):
    """The operator declined (or could not be asked for) a confirmation."""


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document")


def command(sub: Any, name: str, help_text: str, func: Any) -> argparse.ArgumentParser:
    """Declare a command that prints data (so it takes --json) and runs ``func``."""
    p = sub.add_parser(name, help=help_text)
    add_json(p)
    p.set_defaults(func=func)
    return p


def emit(args: argparse.Namespace, data: Any, text: str | None = None) -> None:
    """Print ``data`` as one JSON document with --json, else ``text``."""
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)


def progress(message: str) -> None:
    """A progress line on stderr, only when a person is watching."""
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def db_path(args: argparse.Namespace) -> Path:
    """The store path: --db, else $ANNEAL_MEMORY_DB, else the default under home."""
    from ..store import default_db_path

    if args.db is not None:
        if not args.db.strip():
            raise ValidationError("--db is empty: pass the path of a store file, e.g. "
                                  "--db ./memory.db (or leave --db out for the default)")
        return Path(args.db).expanduser()
    return default_db_path()


def open_store(args: argparse.Namespace, **kw: Any) -> Any:
    from ..store import Store

    return Store(db_path(args), project_name=args.project_name, **kw)


def read_store(args: argparse.Namespace) -> Any:
    """A store for a read-only command: an existing one is opened read-only."""
    return open_store(args, read_only=db_path(args).exists())


def read_text(source: str, what: str) -> str:
    """The text of FILE, or of stdin for ``-``, as UTF-8."""
    try:
        if source == "-":
            return sys.stdin.read()
        return Path(source).read_text("utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{what} file {source!r} does not exist: check the path "
                              "(or pass - to read standard input)") from None
    except IsADirectoryError:
        raise ValidationError(f"{what} {source!r} is a folder: pass a file") from None
    except UnicodeDecodeError as exc:
        where = "standard input" if source == "-" else repr(source)
        raise ValidationError(f"{what} from {where} is not UTF-8 text ({exc.reason}): "
                              "convert it to UTF-8") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {what} {source!r}: {exc.strerror or exc}") from None


def read_json(source: str, what: str) -> Any:
    text = read_text(source, what)
    try:
        return load_json(text, f"{what} {source!r}")
    except ValidationError as exc:
        raise ValidationError(f"{exc}: pass the file that 'anneal-memory export' wrote") from None


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def operator_gate(action: str) -> str:
    """Confirm an operator-only action: ``env`` with ANNEAL_OPERATOR=1, else ``tty`` after
    a yes on a terminal. Refused (nothing changed) otherwise."""
    if os.environ.get(OPERATOR_ENV) == "1":
        return "env"
    if _interactive():
        print(f"anneal-memory: {action}. This is an operator-only action. Proceed? [y/N] ",
              end="", file=sys.stderr, flush=True)
        try:
            answer = input()
        except EOFError:
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return "tty"
        raise Refused(f"{action}: not confirmed, nothing was changed")
    raise Refused(f"{action} is operator-only: confirm it on a terminal, or set "
                  f"{OPERATOR_ENV}=1 in the operator's own shell")


@contextmanager
def operator_store(args: argparse.Namespace, action: str) -> Iterator[tuple[Any, str]]:
    """A store opened at the operator trust ceiling, only after the gate."""
    via = operator_gate(action)
    with open_store(args, trust_ceiling="operator") as store:
        yield store, via


def episode_line(e: Any) -> str:
    flags = []
    if e.superseded_by:
        flags.append(f"replaced by {e.superseded_by}")
    if e.trust != "agent":
        flags.append(f"trust {e.trust}")
    if e.state_key:
        flags.append(f"key {e.state_key}")
    extra = f" ({'; '.join(flags)})" if flags else ""
    return f"[{e.id}] {e.type.value:<11} {e.timestamp[:19]}  {e.content}{extra}"


def group(sub: Any, name: str, help_text: str) -> tuple[argparse.ArgumentParser, Any]:
    """A command with subcommands; given alone it prints its own help (exit 2)."""
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.set_defaults(parser=p)
    return p, p.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
