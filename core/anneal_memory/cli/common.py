"""Helpers every command module shares: where the store is, opening it, output, progress,
input, confirmations and the operator gate."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypedDict

from .._inputs import load_json
from ..errors import StoreError, ValidationError

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import TypeAlias

    from typing_extensions import Unpack

    from .._namespace import MemoryNamespace
    from ..store import Store
    from ..types import Episode

    #: what ``add_subparsers()`` returns: where a command module declares its commands
    Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
    #: a command's body: the parsed arguments in, the exit status out
    Handler: TypeAlias = "Callable[[argparse.Namespace], int | None]"

OPERATOR_ENV = "ANNEAL_OPERATOR"
#: how many items of a long list plain output shows before summarizing (--verbose: all)
SHOWN = 5


class StoreOptions(TypedDict, total=False):
    """The Store options a command opens its store with (the rest come from the flags)."""

    read_only: bool
    trust_ceiling: str
    max_episode_chars: int | None
    consolidate_requires_baton_on_create: bool
    embedder: object
    section_schema: Sequence[Mapping[str, object]] | None


class Refused(ValidationError):
    """The operator declined (or could not be asked for) a confirmation."""


class NoStoreError(StoreError):
    """A command that needs an existing store was pointed at a path that holds none."""


# ---------------------------------------------------------------------- declaring commands

def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on standard output (messages go to stderr)")


def add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true",
                   help="list every id in full instead of counts and the first few")


def command(sub: Subcommands, name: str, help_text: str, func: Handler,
            aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """Declare a command that prints data (so it takes --json) and runs ``func``."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help_text,
                                                description=_sentence(help_text),
                                                aliases=list(aliases))
    add_json(p)
    p.set_defaults(func=func)
    return p


def group(sub: Subcommands, name: str,
          help_text: str) -> tuple[argparse.ArgumentParser, Subcommands]:
    """A command with subcommands; given alone it prints its own help (exit 2)."""
    p = sub.add_parser(name, help=help_text, description=_sentence(help_text))
    p.set_defaults(parser=p)
    return p, p.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", ")")) else ".")


# ---------------------------------------------------------------------- output

def emit(args: argparse.Namespace, data: object, text: str | None = None) -> None:
    """Print ``data`` as one JSON document with --json, else ``text``."""
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)


def brief(items: Sequence[object], verbose: bool = False, shown: int = SHOWN) -> str:
    """A list for a person to read: all of it when short (or ``verbose``), else the count
    and the first few: ``50,000 (a, b, c, d, e, ... 49,995 more; --verbose lists all)``."""
    texts = [str(i) for i in items]
    if verbose or len(texts) <= shown:
        return ", ".join(texts) or "none"
    return (f"{len(texts):,} ({', '.join(texts[:shown])}, ... {len(texts) - shown:,} more; "
            "--verbose lists all)")


def brief_lists(data: object, verbose: bool = False, shown: int = SHOWN) -> object:
    """``data`` with every list longer than ``shown`` cut to its first few and a count,
    for plain output of documents that may hold thousands of ids."""
    if verbose:
        return data
    if isinstance(data, dict):
        return {k: brief_lists(v, verbose, shown) for k, v in data.items()}
    if isinstance(data, list):
        if len(data) > shown:
            return [brief_lists(v, verbose, shown) for v in data[:shown]] + [
                f"... {len(data) - shown:,} more (--verbose lists all)"]
        return [brief_lists(v, verbose, shown) for v in data]
    return data


class Progress:
    """One status line on stderr that moves in place while a long run works, shown only
    when stderr is a terminal (never in a pipe, a log or a test capture)."""

    #: least seconds between two redraws
    INTERVAL = 0.1

    def __init__(self, stream: TextIO | None = None, interval: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on = _isatty(self.stream)
        self.interval = self.INTERVAL if interval is None else interval
        self._last = 0.0
        self._width = 0

    def update(self, text: str, *, force: bool = False) -> None:
        """Replace the status line with ``text`` (at most every ``interval`` seconds)."""
        if not self.on:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def done(self, text: str | None = None) -> None:
        """End the status line (with a final ``text``)."""
        if not self.on:
            return
        if text is not None:
            self.update(text, force=True)
        if self._width:
            self.stream.write("\n")
            self.stream.flush()
        self._width = 0


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress(message: str) -> None:
    """A one-off progress line on stderr, only when a person is watching."""
    if _isatty(sys.stderr):
        print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- where the store is

def _explicit(args: argparse.Namespace) -> str | None:
    from ..store import ENV_DB

    return args.db or os.environ.get(ENV_DB) or None


def store_location(args: argparse.Namespace) -> Path | str:
    """The store: --db, else $ANNEAL_MEMORY_DB, else ~/.anneal-memory/memory.db. A
    ``postgresql://`` URL is returned as it was given (never mangled into a path)."""
    from ..storage.pg_location import pg_dsn
    from ..store import default_db_path

    if getattr(args, "db", None) is not None and not args.db.strip():
        raise ValidationError("--db is empty: pass the path of a store file, e.g. "
                              "--db ./memory.db (or leave --db out for the default)")
    raw = _explicit(args)
    if raw is None:
        return default_db_path()
    return pg_dsn(raw) or Path(raw).expanduser()


def is_pg(args: argparse.Namespace) -> bool:
    return isinstance(store_location(args), str)


def db_path(args: argparse.Namespace) -> Path:
    """The local base path of the store's sidecar files (crystal, spores, outcomes, baton,
    the instructions ack): the database file itself for SQLite, the per-host folder the
    Store uses for a PostgreSQL URL."""
    loc = store_location(args)
    if isinstance(loc, str):
        from ..storage.pg_location import sidecar_base

        return sidecar_base(loc)
    return loc


def shown_location(args: argparse.Namespace) -> str:
    loc = store_location(args)
    if isinstance(loc, str):
        from ..storage.pg_location import redact

        return redact(loc)
    return str(loc)


def require_store(args: argparse.Namespace) -> Path | str:
    """The location of an existing store; raises NoStoreError (and creates nothing) when
    a SQLite path holds none. A PostgreSQL URL is checked when it is opened."""
    loc = store_location(args)
    if isinstance(loc, Path) and (not loc.exists() or loc.is_file()):
        from ..storage.sqlite_files import check_not_gone

        check_not_gone(loc)  # a lost database: say so, never "no store" nor a new one
        if loc.is_file() and loc.stat().st_size == 0:
            raise NoStoreError(f"no store at {loc}: the file is empty (0 bytes) and nothing "
                               "was written to it; create a store there with anneal-memory "
                               "init, or pass --db PATH of an existing store")
    if isinstance(loc, Path) and not loc.exists():
        if _explicit(args) is None:
            raise NoStoreError(f"no store at {loc} yet: create one with anneal-memory init, "
                               "or pass --db PATH of an existing store")
        raise NoStoreError(f"no store at {loc}: check the path (--db or ANNEAL_MEMORY_DB), "
                           "or create one there with anneal-memory init")
    if isinstance(loc, Path) and not loc.is_file():
        raise StoreError(f"{str(loc)!r} is not a store file (a folder, pipe or device): "
                         "pass --db PATH of the store's database")
    return loc


def ensure_folder(args: argparse.Namespace) -> Path | str:
    """The location of a store about to be made, with its folder ready. Only the default
    home folder is made for the user, private to them (mode 700); a folder named with
    --db must already exist (a typo should not grow folders)."""
    loc = store_location(args)
    if not isinstance(loc, Path) or loc.parent.exists():
        return loc
    if _explicit(args) is None:
        loc.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(loc.parent, 0o700)
        return loc
    raise StoreError(f"the folder {str(loc.parent)!r} for the store does not exist: create "
                     "it, or pass another --db PATH")


# ---------------------------------------------------------------------- --namespace

#: commands that act on the whole store (or on none): --namespace is refused there
#: rather than silently ignored
STORE_WIDE = {
    "init": "init creates the store itself; record into a namespace with record --namespace",
    "verify": "the audit chain is one for the whole store",
    "audit": "the audit chain is one for the whole store",
    "audit-repair": "the audit chain is one for the whole store",
    "import": "an export's episodes carry their own namespaces",
    "migrate-store": "migrate-store copies the whole store",
    "migrate": "instruction snippets belong to no namespace",
    "demo": "demo uses a store of its own",
    "eval": "eval uses stores of its own",
    "namespaces": "it lists every namespace",
    "serve": "the MCP server serves the store it opens (over HTTP each request's token "
             "names its namespace)",
    "ui": "the console has a view per namespace (pick one on its Namespaces page)",
    "crystal": "crystals belong to the whole store",
    "graph": "associations belong to the whole store",
    "associations": "associations belong to the whole store",
    "pattern-associations": "associations belong to the whole store",
}
NAMESPACE_HELP = ("KEY=VALUE, repeatable (keys: tenant, user, project, agent; "
                  "e.g. --namespace user=alice), or one JSON object: act on that "
                  "namespace's memory only, as store.scoped(...) does")


def namespace_of(args: argparse.Namespace) -> MemoryNamespace | None:
    """The MemoryNamespace that ``--namespace`` names, validated as the library validates
    a view's (None when it was not given)."""
    raw = getattr(args, "namespace", None)
    if not raw:
        return None
    from ..governance.namespace import coerce_namespace

    fields: dict[str, object] = {}
    for item in raw:
        if item.lstrip().startswith("{"):
            doc = parse_json(item, "--namespace", "namespace",
                             'pass one JSON object, e.g. --namespace \'{"user": "alice"}\'')
            if not isinstance(doc, dict):
                raise ValidationError(f"--namespace {item!r} is JSON but not an object: pass "
                                      'e.g. --namespace \'{"user": "alice"}\'')
            pairs = list(doc.items())
        else:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValidationError(
                    f"--namespace {item!r} is not KEY=VALUE: pass e.g. --namespace "
                    "user=alice (keys: tenant, user, project, agent), once per key")
            pairs = [(key.strip(), value)]
        for key, value in pairs:
            if key in fields and fields[key] != value:
                raise ValidationError(f"--namespace gives {key} twice ({fields[key]!r} and "
                                      f"{value!r}): pass each key once")
            fields[key] = value
    return coerce_namespace(fields, partial=True)


def check_namespace_applies(args: argparse.Namespace) -> None:
    """Refuse --namespace (validated first) on a command that acts on the whole store."""
    if namespace_of(args) is None:
        return
    why = STORE_WIDE.get(getattr(args, "command", "") or "")
    if why:
        raise ValidationError(f"--namespace does not apply to {args.command}: {why} "
                              "(leave --namespace out)")


def open_store(args: argparse.Namespace, *, create: bool = False,
               **kw: Unpack[StoreOptions]) -> Store:
    """Open the store read-write. Only commands that make a store (init, record, import,
    serve) pass ``create``; every other command refuses a path that holds none. With
    ``--namespace`` the command gets that namespace's view (the store itself is closed
    when the command ends)."""
    from ..store import Store

    ns = namespace_of(args)
    if getattr(args, "read_only", False) is True:  # --read-only: never create or write
        kw["read_only"], create = True, False
        kw.pop("trust_ceiling", None)
    if hasattr(args, "max_episode_chars"):  # --max-episode-chars given (None: no bound)
        kw.setdefault("max_episode_chars", args.max_episode_chars)
    loc = ensure_folder(args) if create else require_store(args)
    store = Store(loc, project_name=args.project_name, **kw)
    if ns is None:
        return store
    try:
        view = store.scoped(ns)
    except BaseException:
        store.close()
        raise
    OPEN_STORES.append(store)
    return view


def read_store(args: argparse.Namespace) -> Store:
    """An existing store opened read-only (a missing one is NoStoreError)."""
    return open_store(args, read_only=True)


def read_store_writable(args: argparse.Namespace, **kw: Unpack[StoreOptions]) -> Store:
    """An existing store opened read-write for a command that only reads but reports
    more from a writable handle (status: the audit trail's state); read-only when the
    store cannot be written (a read-only folder or file) or --read-only was given."""
    from ..errors import ReadOnlyStoreError

    try:
        return open_store(args, **kw)
    except ReadOnlyStoreError:
        return open_store(args, read_only=True)


def sidecar(args: argparse.Namespace) -> Path:
    """The base path for a tier's sidecar files, after checking the store exists."""
    require_store(args)
    return db_path(args)


#: stores opened by tier_home for the command being run; main() closes them
OPEN_STORES: list[Store] = []


def tier_home(args: argparse.Namespace, *, reading: bool = False) -> Store:
    """The open store whose database holds the long-term tiers (crystals, spores, the
    outcome log), closed when the command ends; ``reading``: a command that only reads,
    which falls back to a read-only handle where the store cannot be written."""
    store = read_store_writable(args) if reading else open_store(args)
    OPEN_STORES.append(store)
    return store


def close_open_stores() -> None:
    while OPEN_STORES:
        with contextlib.suppress(Exception):
            OPEN_STORES.pop().close()


# ---------------------------------------------------------------------- input

def read_text(source: str, what: str) -> str:
    """The text of FILE, or of stdin for ``-``, as UTF-8."""
    try:
        if source == "-":
            return _stdin_text()
        return Path(source).read_text("utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{what} file {source!r} does not exist: check the path "
                              "(or pass - to read standard input)") from None
    except IsADirectoryError:
        raise ValidationError(f"{what} {source!r} is a folder: pass a file") from None
    except UnicodeDecodeError as exc:
        where = "standard input" if source == "-" else repr(source)
        raise ValidationError(
            f"{what} from {where} is not UTF-8 text: byte 0x{exc.object[exc.start]:02X} at "
            f"byte offset {exc.start} ({exc.reason}); convert it to UTF-8 (e.g. iconv -f "
            "LATIN1 -t UTF-8)") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {what} {source!r}: {exc.strerror or exc}") from None


def _stdin_text() -> str:
    """Standard input decoded as UTF-8, strictly: invalid bytes raise UnicodeDecodeError
    (with their byte offset), never pass on as lone surrogates (Python's stdin decodes
    with surrogateescape under some locales)."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is not None:
        return str(raw.read().decode("utf-8"))
    text = sys.stdin.read()  # a text stream handed in (tests, embedding programs)
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        text.encode("utf-8", "surrogateescape").decode("utf-8")
    return text


def new_store_undone(args: argparse.Namespace) -> AbstractContextManager[object]:
    """Around a command that may create the store: when the path held no store (no file,
    or an empty one) and the command is refused or fails, the files it made are removed,
    so a refusal leaves the path as it was."""
    from ..storage.sqlite_files import is_empty, undone_on_failure

    loc = store_location(args)
    if isinstance(loc, Path) and is_empty(loc):
        return undone_on_failure(loc)
    return contextlib.nullcontext()


def parse_json(text: str, source: str, what: str, fix: str) -> object:
    """``text`` (read from ``source``) as JSON, or a ValidationError naming ``fix``."""
    try:
        return load_json(text, f"{what} {source!r}")
    except ValidationError as exc:
        if getattr(exc, "fix_included", False):  # it already says what to change
            raise
        raise ValidationError(f"{exc}: {fix}") from None


def read_json(source: str, what: str) -> object:
    return parse_json(read_text(source, what), source, what,
                      "pass the file that 'anneal-memory export' wrote")


# ---------------------------------------------------------------------- confirmations

def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _ask(question: str) -> bool:
    print(f"anneal-memory: {question} [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def confirm(question: str, yes: bool, *, refusal: str) -> None:
    """Go ahead with a destructive action: ``--yes`` given, or a yes on a terminal.
    Otherwise Refused (nothing changed): ``refusal`` says what would have happened."""
    if yes:
        return
    if _interactive():
        if _ask(question + " Proceed?"):
            return
        raise Refused(f"{refusal}: not confirmed, nothing was changed")
    raise Refused(f"{refusal}: confirm on a terminal or pass --yes (nothing was changed)")


def operator_gate(action: str) -> str:
    """Confirm an operator-only action: ``env`` with ANNEAL_OPERATOR=1, else ``tty`` after
    a yes on a terminal. Refused (nothing changed) otherwise."""
    if os.environ.get(OPERATOR_ENV) == "1":
        return "env"
    if _interactive():
        if _ask(f"{action}. This is an operator-only action. Proceed?"):
            return "tty"
        raise Refused(f"{action}: not confirmed, nothing was changed")
    raise Refused(f"{action} is operator-only: confirm it on a terminal, or set "
                  f"{OPERATOR_ENV}=1 in the operator's own shell")


@contextmanager
def operator_store(args: argparse.Namespace, action: str, *,
                   create: bool = False) -> Iterator[tuple[Store, str]]:
    """A store opened at the operator trust ceiling, only after the gate."""
    if not create:
        require_store(args)
    via = operator_gate(action)
    with open_store(args, create=create, trust_ceiling="operator") as store:
        yield store, via


def episode_line(e: Episode) -> str:
    flags = []
    if e.superseded_by:
        flags.append(f"replaced by {e.superseded_by}")
    if e.trust != "agent":
        flags.append(f"trust {e.trust}")
    if e.state_key:
        flags.append(f"key {e.state_key}")
    extra = f" ({'; '.join(flags)})" if flags else ""
    return f"[{e.id}] {e.type.value:<11} {e.timestamp[:19]}  {e.content}{extra}"


@contextmanager
def cli_hint(types: type[BaseException] | tuple[type[BaseException], ...],
             text: str) -> Iterator[None]:
    """Add the CLI's own way to fix a library refusal (library messages name library
    arguments, never CLI flags): ``message (text)``, same error class."""
    try:
        yield
    except types as exc:
        if text in str(exc):
            raise
        raise type(exc)(f"{exc} ({text})") from None


def store_name(store: Store) -> str:
    """How messages name an open store: its path, or its URL without the password."""
    dsn = getattr(store, "dsn", None)
    if dsn:
        from ..storage.pg_location import redact

        return redact(dsn)
    return str(store.path)
