"""Adapters stand on public ground: what an adapter imports from the core is a public name.

An adapter is a transport (docs/architecture.md): it translates its framework's hooks onto
the core's public surface, so it imports ``anneal_memory`` itself (the names of its
``__all__``), ``anneal_memory.session`` (``MemorySession``), the exception hierarchy
``anneal_memory.errors``, ``anneal_memory.testing`` (helpers for users' tests), the MCP
package's face ``anneal_memory.mcp``, the adapters' base (``anneal_memory.adapters`` /
``anneal_memory.adapters._base``), its own package and another adapter's public face
(``anneal_memory.adapters.langchain``, its ``__all__``: never that adapter's private
modules); never a core module's internals.
Read with ``ast`` (every import, function-local ones included).

``BASELINE`` is what still reaches past that (issue 32), as a ratchet: a new reach fails,
and so does a listed one that is gone (delete its line).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ratchet import nothing_gone, nothing_new

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "adapters"

#: the core's own modules and packages (a name ``from anneal_memory import`` takes that is
#: one of these is the module, not a public name of ``__all__``)
CORE_MODULES = frozenset(p.stem if p.is_file() else p.name
                         for p in (ROOT / "core" / "anneal_memory").iterdir()
                         if (p.suffix == ".py" and p.stem != "__init__")
                         or (p / "__init__.py").exists())

PUBLIC = ("", "session", "errors", "testing", "mcp", "adapters", "adapters._base")

BASELINE = frozenset({
    # the base reads the namespace rules (FIELDS, coerce_namespace, identity_problem)
    "_base.py -> governance.namespace",
    # internals with no public name: a scoped view's class, the clock, DSN redaction, the
    # relayed trust levels
    "agno/_db.py -> clock",
    "agno/_db.py -> governance.scoped",
    "claude_agent_sdk/_session_store.py -> clock",
    "claude_agent_sdk/testing.py -> clock",
    "google_adk/_sessions.py -> clock",
    "google_adk/_uri.py -> storage.pg_location",
    "langchain/_retriever.py -> types",
    "langgraph/_store.py -> clock",
    "langgraph/_ttl.py -> clock",
})


def reaches(path: Path, source: str) -> set[str]:
    """``"<file> -> <module>"`` for each core module ``source`` imports that is not public
    ground for the adapter at ``path`` (relative to adapters/)."""
    rel = path.as_posix()
    own = f"adapters.{rel.split('/')[0]}" if "/" in rel else None
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
            if node.module == "anneal_memory":  # ``from anneal_memory import clock``
                names = [f"anneal_memory.{a.name}" if a.name in CORE_MODULES else ""
                         for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name != "anneal_memory" and not name.startswith("anneal_memory."):
                continue
            sub = name.removeprefix("anneal_memory").lstrip(".")
            if sub in PUBLIC or (own and (sub == own or sub.startswith(own + "."))):
                continue
            parts = sub.split(".")
            if len(parts) == 2 and parts[0] == "adapters" and not parts[1].startswith("_"):
                continue  # another adapter's public face
            out.add(f"{rel} -> {sub}")
    return out


def found() -> set[str]:
    out: set[str] = set()
    for p in sorted(ADAPTERS.rglob("*.py")):
        out |= reaches(p.relative_to(ADAPTERS), p.read_text("utf-8"))
    return out


def test_no_new_reach_into_the_core() -> None:
    nothing_new(found(), BASELINE,
                "these adapter imports reach core internals: import the public name (from "
                "anneal_memory import ...), or give what the adapter needs a public name first")


def test_baseline_lists_only_what_is_still_there() -> None:
    nothing_gone(found(), BASELINE, "tests/core/test_adapter_imports.py")


def test_the_reader_tells_public_from_internal() -> None:
    src = ("from anneal_memory import Store\n"
           "from anneal_memory.session import MemorySession\n"
           "from anneal_memory.adapters import MemoryAdapter\n"
           "from anneal_memory import clock, Episode\n"
           "from anneal_memory.adapters.crewai._scope import x\n"
           "from ._scope import y\n"
           "from anneal_memory.adapters.langchain import identity_of\n"
           "from anneal_memory.adapters.langchain._identity import is_template\n"
           "def f():\n"
           "    from anneal_memory.mcp.handlers import MemoryTools\n"
           "    import anneal_memory.recall\n")
    assert reaches(Path("crewai/_memory.py"), src) == {
        "crewai/_memory.py -> mcp.handlers", "crewai/_memory.py -> recall",
        "crewai/_memory.py -> clock", "crewai/_memory.py -> adapters.langchain._identity"}
    assert reaches(Path("ag2/_x.py"), "from anneal_memory.adapters.crewai._scope import x\n") \
        == {"ag2/_x.py -> adapters.crewai._scope"}
