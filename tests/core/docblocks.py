"""Running the documentation's code blocks as written (shared by the core docs test and the
PostgreSQL one in tests/backends).

Every fenced block of README.md and docs/**.md is one of:

- ``python``: the blocks of one file run in order as one script, in a fresh folder;
- ``sh`` / ``bash``: the blocks of one file run in order under ``bash -e`` in that folder,
  with the real ``anneal-memory`` and ``python``; ``pip``, ``nox`` and ``uvx`` are stand-ins
  that check what the line asks for (the extra, package or nox session exists) instead of
  installing anything, and ``uvx --from SPEC CMD ...`` then runs CMD for real;
- ``json`` / ``toml``: parsed, and an MCP server entry's arguments parsed by the CLI.

Framework guides (docs/integrations) need their framework and a model, which the core
session has neither of: their Python blocks are compiled and every anneal_memory name they
import must exist; their install lines are checked like any other.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (the sqlite-oldest session): the same parser, from PyPI
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SERVER_URL = re.compile(r"postgres(?:ql)?://[^\s\"')]+")
SERVE = re.compile(r"^[^#\n]*\banneal-memory\b[^#\n]*\sserve\b", re.M)
SHELL = {"sh", "bash"}
#: ``text``: output a document shows (a trace, a table a command printed), not code to run
KNOWN = {"python", "json", "toml", "text"} | SHELL


@dataclass(frozen=True)
class Block:
    doc: str   # path relative to the repository root
    line: int  # line of the opening fence
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def needs_server(self) -> bool:
        return bool(SERVER_URL.search(self.text))

    @property
    def needs_otel(self) -> bool:
        """A block that configures an OpenTelemetry SDK, in code or through the ``OTEL_*``
        environment (the otel suite installs one)."""
        return (self.lang == "python" and "opentelemetry" in self.text) or (
            self.lang in SHELL and "OTEL_" in self.text)

    @property
    def needs_mcp(self) -> bool:
        """A shell block that starts the MCP server (the mcp extra must be installed)."""
        return self.lang in SHELL and bool(SERVE.search(self.text))


def documents() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def blocks(path: Path) -> list[Block]:
    text = path.read_text("utf-8")
    rel = path.relative_to(ROOT).as_posix()
    return [Block(rel, text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in FENCE.finditer(text)]


def all_blocks() -> list[Block]:
    return [b for p in documents() for b in blocks(p)]


def is_guide(doc: str) -> bool:
    return doc.startswith("docs/integrations/")


def kind_of(block: Block) -> str | None:
    return "python" if block.lang == "python" else "shell" if block.lang in SHELL else None


def groups() -> dict[tuple[str, str], list[Block]]:
    """(doc, python|shell) -> that file's blocks of the kind, in order: one program each."""
    out: dict[tuple[str, str], list[Block]] = {}
    for b in all_blocks():
        kind = kind_of(b)
        if kind and not (is_guide(b.doc) and kind == "python"):
            out.setdefault((b.doc, kind), []).append(b)
    return out


def suite_for(group: list[Block]) -> str:
    """Which test suite runs a group: a block that needs a server or the MCP extra takes
    its whole file's group there (later blocks may use what it made)."""
    if any(b.needs_server for b in group):
        return "backends"
    if any(b.needs_mcp for b in group):
        return "mcp"
    if any(b.needs_otel for b in group):
        return "otel"
    return "core"


# ---------------------------------------------------------------------- what the stand-ins check

def extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"]


def nox_sessions() -> set[str]:
    """The session names noxfile.py declares (read by running it against a stand-in nox)."""
    names: set[str] = set()

    def session(*_a: object, name: str | None = None, **_kw: object):  # type: ignore[no-untyped-def]
        def register(func):  # type: ignore[no-untyped-def]
            names.add(name or func.__name__)
            return func
        return register

    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    fake.session = session  # type: ignore[attr-defined]
    fake.Session = object  # type: ignore[attr-defined]
    saved = sys.modules.get("nox")
    sys.modules["nox"] = fake
    try:
        code = compile((ROOT / "noxfile.py").read_text("utf-8"), "noxfile.py", "exec")
        exec(code, {"__name__": "noxfile", "__file__": str(ROOT / "noxfile.py")})
    finally:
        if saved is None:
            sys.modules.pop("nox", None)
        else:
            sys.modules["nox"] = saved
    return names


def check_requirement(spec: str) -> str | None:
    """Why ``pip install SPEC`` would not do what the docs say, or None."""
    if spec in (".", "-e", "-U", "--upgrade"):
        return None
    local = re.fullmatch(r"\.\[([A-Za-z0-9_,.-]+)\]", spec)  # this checkout, with extras
    if local:
        missing = [e for e in local.group(1).split(",") if e and e not in extras()]
        return f"this package has no extra {missing}" if missing else None
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[([A-Za-z0-9_,.-]+)\])?(?:[<>=!~].*)?", spec)
    if not m:
        return f"cannot read the requirement {spec!r}"
    name, wanted = m.group(1).lower().replace("_", "-"), m.group(2)
    if name == "anneal-memory":
        missing = [e for e in (wanted or "").split(",") if e and e not in extras()]
        return f"anneal-memory has no extra {missing}" if missing else None
    declared = {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0].lower().replace("_", "-")
                for deps in extras().values() for d in deps}
    if name not in declared:
        return f"{spec!r} is not a dependency pyproject.toml declares"
    return None


def shim_main(argv: list[str]) -> int:
    """``python docblocks.py pip|nox|uvx ARGS``: the stand-ins' checks."""
    tool, args = argv[0], argv[1:]
    problems: list[str] = []
    if tool == "pip":
        if not args or args[0] != "install":
            problems.append(f"pip {' '.join(args)}: the docs only ever install")
        problems += [p for a in args[1:] if (p := check_requirement(a))]
    elif tool == "nox":
        known = nox_sessions()
        for i, a in enumerate(args):
            if a == "-s":
                for s in args[i + 1:]:
                    if s.startswith("-"):
                        break
                    if s not in known:
                        problems.append(f"nox has no session {s!r}")
    elif tool == "uvx":
        if len(args) < 3 or args[0] != "--from":
            problems.append(f"uvx {' '.join(args)}: expected uvx --from SPEC CMD ...")
        else:
            problems += [p for p in [check_requirement(args[1])] if p]
            if not problems:
                return subprocess.call(args[2:])
    for p in problems:
        print(f"docs stand-in {tool}: {p}", file=sys.stderr)
    return 1 if problems else 0


# ---------------------------------------------------------------------- running blocks

def environment(home: Path, shims: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEAL_")}
    bindir = str(Path(sys.executable).parent)
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1",
               PATH=os.pathsep.join(p for p in (str(shims) if shims else "", bindir,
                                                env.get("PATH", "")) if p))
    return env


def make_shims(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve()
    for tool in ("pip", "nox", "uvx"):
        script = folder / tool
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{here}" {tool} "$@"\n', "utf-8")
        script.chmod(0o755)
    return folder


def substitute(text: str, urls: dict[str, str]) -> str:
    """Each PostgreSQL URL of the docs replaced by a real location (same URL, same place)."""
    return SERVER_URL.sub(lambda m: urls.get(m.group(0), m.group(0)), text)


def run(blocks_: list[Block], lang: str, workdir: Path,
        urls: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one file's blocks of ``lang`` (python, or shell) in order, as one program."""
    workdir.mkdir(parents=True, exist_ok=True)
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    body = "\n".join(substitute(b.text, urls or {}) for b in blocks_)
    # from a file, stdin closed: a command in a block (serve) must not read the script
    if lang == "python":
        script = workdir / ".doc-blocks.py"
        cmd = [sys.executable, str(script)]
    else:
        body = "set -eo pipefail\n" + body
        script = workdir / ".doc-blocks.sh"
        cmd = ["bash", str(script)]
    script.write_text(body, "utf-8")
    env = environment(home, make_shims(workdir / ".shims"))
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def check_guide_python(block: Block) -> list[str]:
    """A framework guide's Python block: it compiles, and each name it imports from
    anneal_memory exists."""
    try:
        tree = compile(block.text, block.where, "exec",
                       flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return [f"{block.where}: does not compile: {exc}"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("anneal_memory"):
            exported = _exported(node.module or "")
            problems += [f"{block.where}: {node.module} has no {a.name!r}"
                         for a in node.names if a.name not in exported]
    return problems


def _exported(module: str) -> set[str]:
    parts = module.split(".")[1:]
    base = ROOT / ("adapters" if parts[:1] == ["adapters"] else "core/anneal_memory")
    rest = parts[1:] if parts[:1] == ["adapters"] else parts
    path = base.joinpath(*rest)
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(source.read_text("utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                for t in node.targets):
            names |= set(ast.literal_eval(node.value))
    if not names:  # no __all__: whatever the module defines or imports at top level
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def check_config(block: Block) -> list[str]:
    """An MCP configuration block: it parses, and the server arguments parse as a CLI."""
    from anneal_memory.cli.main import build_parser

    data = json.loads(block.text) if block.lang == "json" else tomllib.loads(block.text)
    servers = data.get("mcpServers") or data.get("mcp_servers") or {}
    problems = [] if servers else [f"{block.where}: no MCP server entry"]
    for name, entry in servers.items():
        if "url" in entry:  # a server over HTTP (serve --http): its endpoint and a token
            auth = str(entry.get("headers", {}).get("Authorization", ""))
            if not re.match(r"^https?://[^/\s]+/mcp$", str(entry["url"])) \
                    or not auth.startswith("Bearer amt_"):
                problems.append(f"{block.where}: {name}: an HTTP entry needs a url ending "
                                "in /mcp and an 'Authorization: Bearer amt_...' header")
            continue
        args = list(entry.get("args", []))
        if entry.get("command") == "uvx":
            spec = args[1] if args[:1] == ["--from"] else ""
            if (why := check_requirement(spec)) or len(args) < 3:
                problems.append(f"{block.where}: {name}: uvx --from {spec!r}: {why}")
            args = args[3:]
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit:
            problems.append(f"{block.where}: {name}: the CLI refuses {args}")
            continue
        if parsed.command != "serve":
            problems.append(f"{block.where}: {name}: does not start the server")
    return problems


if __name__ == "__main__":
    sys.exit(shim_main(sys.argv[1:]))
