"""The core's imports point down the layer table (docs/architecture.md), with no cycle.

The import graph is read with ``ast`` from every module of ``core/anneal_memory``: every
``import`` and ``from ... import``, at module level, inside a function or under
``if TYPE_CHECKING`` alike. ``from . import x`` is an edge to the submodule ``x`` when
there is one, else to the package's ``__init__``; importing a submodule is no edge to its
parent package (its ``__init__`` counts as a module of its own).

An edge is a violation when it climbs (its target sits on a higher layer than its source)
or when it closes a cycle inside one layer (both ends in one strongly connected component
of the same-layer edges). A cycle across layers always contains a climbing edge, so these
two kinds are every cycle.

The code does not obey the table yet. ``BASELINE`` is the exact set of violations on main
today: the test fails on a violation that is not in it (a new one) AND on an entry that is
no longer found (a fixed one: delete its line, so the list only shrinks).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from ratchet import nothing_gone, nothing_new

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "core" / "anneal_memory"
DOC = ROOT / "docs" / "architecture.md"

#: the layers, bottom first; a module may import its own layer (without a cycle) and any
#: layer below it
LAYERS = ("base", "storage", "continuity", "legacy", "episodes", "rules", "wrap", "lifecycle",
          "face", "transports")

#: module (dotted, below ``anneal_memory``; a package name covers its submodules) -> layer.
#: The longest matching name wins. ``""`` is the package's ``__init__``.
LAYER_OF = {
    # text, clock and the value types everything shares
    "text": "base", "stem": "base", "clock": "base", "errors": "base", "types": "base",
    "shorten": "base", "tracing": "base",
    "_fileio": "base", "_lazy": "base", "_version": "base", "_identity": "base",
    "_inputs": "base", "_audit_chain": "base", "_namespace": "base", "embedding": "base",
    "_audit_files": "base",
    "vector_cache": "base", "fusion": "base",
    # SQL and connections
    "storage": "storage",
    # pure text rules of the continuity file
    "continuity": "continuity",
    # reading what 1.0.2 wrote (its database, audit files, sidecars, exports)
    "legacy": "legacy",
    # the Store facade and what it owns
    "store": "episodes", "store_continuity": "episodes", "group_commit": "episodes",
    "recall": "episodes", "episode_rows": "episodes", "episodes_write": "episodes",
    "ranking": "episodes", "facts": "episodes", "trust": "episodes",
    "items": "episodes", "audit": "episodes", "_audit_verify": "episodes",
    "_audit_deep": "episodes", "crystal": "episodes", "spores": "episodes",
    "worth": "episodes", "tiers_db": "episodes", "portability": "episodes",
    "_import_rules": "episodes", "restore": "episodes", "erasure": "episodes",
    "migrate_store": "episodes", "semantic": "episodes", "_unit": "episodes",
    "_wrap_age": "episodes", "_seam": "episodes",
    # the drift probes' records, and reading / cancelling the open wrap: what the Store's
    # own methods (add_drift_probe, wrap_cancelled, ...) run
    "probes_db": "episodes", "wrap_state": "episodes",
    # the copy behind migrate_store and the run behind eval: below the CLI, which calls
    # them, and below those packages, whose ``python -m`` entries call the CLI
    "store_copy": "episodes", "governance_eval": "rules",
    # immune system and governance
    "immune": "rules", "governance": "rules", "eval": "rules",
    # prepare_wrap, the save pipeline, the baton
    "wrap": "wrap",
    # the session every transport shares
    "session": "lifecycle", "engine": "lifecycle", "testing": "lifecycle",
    # the public names re-exported by ``anneal_memory/__init__.py``
    "": "face",
    # translate, no memory logic
    "cli": "transports", "mcp": "transports", "ui": "transports", "__main__": "transports",
    "eval.__main__": "transports", "migrate_store.__main__": "transports",
    "_hostcheck": "transports",
}

# The violations on main when this test was written (issue 32). Each line is a debt: the
# fix removes the import (or moves the name it takes down a layer) and deletes the line.
BASELINE = frozenset({
    # --- climbing imports (0)
    # --- cycles inside one layer (0)
})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    base = mod.split(".") if mod else []
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _known(target: str) -> str | None:
    """The module of the package that ``target`` names (or lies in), or None outside it."""
    mods = modules()
    while target not in mods:
        if "." not in target:
            return None
        target = target.rpartition(".")[0]
    return target


def edges_of(mod: str, source: str, is_pkg: bool) -> set[str]:
    """Every module of the package that ``source`` (the text of ``mod``) imports."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name.removeprefix("anneal_memory").lstrip(".") for a in node.names
                       if a.name == "anneal_memory" or a.name.startswith("anneal_memory.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve(mod, is_pkg, node.level, node.module)
            elif node.module and (node.module == "anneal_memory"
                                  or node.module.startswith("anneal_memory.")):
                base = node.module.removeprefix("anneal_memory").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                targets.append(sub if sub in modules() else base)
        for t in targets:
            found = _known(t) if t else ""
            if found is not None and found != mod:
                out.add(found)
    return out


@cache
def graph() -> dict[str, frozenset[str]]:
    return {m: frozenset(edges_of(m, p.read_text("utf-8"), p.name == "__init__.py"))
            for m, p in modules().items()}


def layer(mod: str) -> str:
    best = max((k for k in LAYER_OF if k == "" or mod == k or mod.startswith(k + ".")),
               key=len, default=None)
    if best is None or (best == "" and mod != ""):
        raise AssertionError(f"module anneal_memory.{mod} has no layer: add it to LAYER_OF "
                             "in tests/core/test_layers.py and to docs/architecture.md")
    return LAYER_OF[best]


def sccs(nodes: Iterable[str], succ: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(succ.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _label(mod: str) -> str:
    return mod or "__init__"


def violations(g: dict[str, frozenset[str]]) -> set[str]:
    """Climbing edges and edges of a same-layer cycle, as ``"a -> b  (kind)"`` lines."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = set()
    same: dict[str, set[str]] = {}
    for a, targets in g.items():
        for b in targets:
            la, lb = layer(a), layer(b)
            if rank[lb] > rank[la]:
                found.add(f"{_label(a)} -> {_label(b)}  (climbs {la} -> {lb})")
            elif la == lb:
                same.setdefault(a, set()).add(b)
    for comp in sccs(sorted(g), same):
        for a in sorted(comp):
            for b in sorted(same.get(a, set()) & comp):
                found.add(f"{_label(a)} -> {_label(b)}  (cycle in {layer(a)})")
    return found


def largest_cycle(g: dict[str, frozenset[str]]) -> set[str]:
    comps = sccs(sorted(g), {a: set(b) for a, b in g.items()})
    return max(comps, key=len, default=set())


def test_every_module_has_a_layer_and_every_entry_a_module() -> None:
    for mod in modules():
        assert layer(mod) in LAYERS
    stale = [k for k in LAYER_OF if k and not any(m == k or m.startswith(k + ".")
                                                  for m in modules())]
    assert not stale, f"LAYER_OF names modules that do not exist: {stale}"


def test_no_new_climbing_import_or_cycle() -> None:
    nothing_new(violations(graph()), BASELINE,
                "these imports climb the layer table (docs/architecture.md) or close a cycle: "
                "import downwards only (move the name you need to the lower module, or take "
                "it as an argument)")


def test_baseline_lists_only_what_is_still_there() -> None:
    nothing_gone(violations(graph()), BASELINE, "tests/core/test_layers.py")


def test_the_reader_sees_every_kind_of_import() -> None:
    src = ("from __future__ import annotations\n"
           "from typing import TYPE_CHECKING\n"
           "from .errors import StoreError\n"
           "import anneal_memory.clock\n"
           "from . import text\n"
           "from .storage import base\n"
           "from anneal_memory.continuity.parse import pattern_key\n"
           "if TYPE_CHECKING:\n"
           "    from .store import Store\n"
           "def f():\n"
           "    from .cli.main import main\n"
           "    from .governance import scoped, MemoryRuntime\n"
           )
    got = edges_of("types", src, False)
    assert got == {"errors", "clock", "text", "storage.base", "continuity.parse", "store",
                   "cli.main", "governance.scoped", "governance"}, got
    # relative imports inside a subpackage, and its __init__
    assert edges_of("wrap.save", "from ..store import Store\nfrom . import baton\n",
                    False) == {"store", "wrap.baton"}
    assert edges_of("storage", "from .base import Backend\n", True) == {"storage.base"}


def test_a_climbing_import_or_a_cycle_is_a_violation() -> None:
    g = {m: frozenset(t) for m, t in graph().items()}
    # clock (base) importing the Store climbs
    climbed = dict(g, clock=g["clock"] | {"store"})
    assert "clock -> store  (climbs base -> episodes)" in violations(climbed)
    # two base modules importing each other: a cycle inside one layer
    looped = dict(g, errors=g["errors"] | {"text"}, text=g["text"] | {"errors"})
    assert {"errors -> text  (cycle in base)", "text -> errors  (cycle in base)"} \
        <= violations(looped)
    assert {"errors", "text"} <= largest_cycle(looped) or any(
        {"errors", "text"} <= c for c in sccs(sorted(looped), {a: set(b) for a, b in looped.items()}))


def room(mod: str) -> str:
    """The room a module is in when a folder is read as one room (``immune.probes`` ->
    ``immune``), as ``farm-studio look`` draws the package: a file of the package's top
    folder is a room of its own."""
    return mod.split(".", 1)[0] or "__init__"


def room_cycles(g: dict[str, frozenset[str]]) -> set[str]:
    """Every import between two rooms that lies on a circle of rooms (two rooms importing
    each other, or a longer round), as ``"a -> b  (a.mod -> b.mod, ...)"`` lines. With no
    circle the rooms stack into floors and every arrow runs down."""
    between: dict[tuple[str, str], set[str]] = {}
    for a, targets in g.items():
        for b in targets:
            if room(a) != room(b):
                between.setdefault((room(a), room(b)), set()).add(f"{_label(a)} -> {_label(b)}")
    succ: dict[str, set[str]] = {}
    for ra, rb in between:
        succ.setdefault(ra, set()).add(rb)
    found = set()
    for comp in sccs(sorted(succ), succ):
        for ra in sorted(comp):
            for rb in sorted(succ[ra] & comp):
                found.add(f"{ra} -> {rb}  ({', '.join(sorted(between[ra, rb]))})")
    return found


def test_no_two_rooms_import_each_other() -> None:
    """A folder read as one room (``immune/``, ``wrap/``, ``cli/``): the layer table may
    put one of its modules lower than the rest, but the rooms must still form no circle
    (on main before issue 50: store_continuity -> immune and -> wrap while both import
    the Store, erasure -> store_continuity, eval and migrate_store's ``__main__`` ->
    cli, which imports them)."""
    found = room_cycles(graph())
    assert not found, ("these imports close a circle of rooms (a folder is one room): move "
                       "what the lower room needs down into it, or a module below both:\n  "
                       + "\n  ".join(sorted(found)))


def test_a_circle_of_rooms_is_found() -> None:
    g = {m: frozenset(t) for m, t in graph().items()}
    # a module of a folder importing the Store, which imports another of its modules
    looped = dict(g, store=g["store"] | {"immune.probes"})
    found = room_cycles(looped)
    assert "store -> immune  (store -> immune.probes)" in found, found
    assert any(line.startswith("immune -> store") for line in found), found
    # a round of three rooms: every arrow on it is named
    three = dict(g, clock=g["clock"] | {"wrap.save"})
    assert any(line.startswith("clock -> wrap") for line in room_cycles(three))


def test_the_architecture_doc_draws_these_layers() -> None:
    text = DOC.read_text("utf-8")
    section = text.split("## Layers as they are", 1)
    assert len(section) == 2, "docs/architecture.md needs its '## Layers as they are' section"
    rows = [line for line in section[1].splitlines() if line.startswith("| `")]
    drawn = [re.match(r"\| `(\w+)`", r).group(1) for r in rows]  # type: ignore[union-attr]
    assert drawn == list(reversed(LAYERS)), f"draw the layers top first: {LAYERS[::-1]}"
    for row, name in zip(rows, drawn):
        for mod, where in LAYER_OF.items():
            if where == name:
                shown = f"`{mod or '__init__'}`"
                assert shown in row, f"{shown} belongs in the {name} row of docs/architecture.md"
