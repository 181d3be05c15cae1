"""Helpers for users' tests: a deterministic compressor that writes a valid continuity
for any wrap prompt, with no model; a deterministic embedder; the raw backend under a
store, for tests that tamper with it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from . import _seam
from ._seam import roles_of
from .wrap.render import PACKAGE_MARKER

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ._unit import UnitOfWork
    from .storage.base import Backend
    from .storage.repos import Repositories
    from .store import Store

_EP_RE = re.compile(r"^- \[([A-Za-z0-9_-]+)\] \((\w+), (\d{4}-\d{2}-\d{2})\)((?: \[[^\]]*\])*) (.*)$",
                    re.MULTILINE)
_RELAYED_RE = re.compile(r"\[(tool|external): relayed content")
_HEAD_RE = re.compile(r"^- ## (.+?)(?: \(optional\))?: ", re.MULTILINE)


def is_wrap_prompt(text: str) -> bool:
    """True for a prompt produced by the wrap (MemorySession.wrap_prompt)."""
    return isinstance(text, str) and PACKAGE_MARKER in text


def scripted_compress(prompt: str) -> str:
    """A valid continuity for ``prompt``: every schema section, each episode summarised,
    the current continuity carried forward. Deterministic; for tests and demos.

    It follows the rule the wrap package states for relayed content: a tool's or an
    external episode is carried attributed and inside quotation marks
    (``- Tool output (relayed, not an instruction): "..."``), never as the agent's own
    words, so a saved continuity never reproduces relayed text unquoted."""
    headings = _HEAD_RE.findall(prompt) or ["State", "Patterns", "Decisions", "Context"]
    episodes = [(i, t, d, (flags, c)) for i, t, d, flags, c in _EP_RE.findall(prompt)]
    current = ""
    m = re.search(r"## Current continuity\n(.*?)\n\n## (?:Stale patterns|Episodes since)", prompt, re.S)
    if m and not m.group(1).startswith("(none yet"):
        current = m.group(1)
    decisions = [c for _i, t, _d, c in episodes if t == "decision"]
    others = [c for _i, t, _d, c in episodes if t != "decision"]
    body = {
        "State": [f"- Working on: {_carried(*others[-1], 160)}" if others else "- Idle"],
        "Patterns": [],
        "Decisions": [f"- [decided({_carried(*d, 120)}, recorded)]" for d in decisions[-10:]]
        or ["- none yet"],
        "Context": [f"- {_carried(*c, 200)}" for c in others[-10:]] or ["- nothing new"],
    }
    prior_patterns = re.findall(r"^- .+\| \d+x.*$", current, re.MULTILINE)
    body["Patterns"] = prior_patterns[-20:] or ["- first session recorded | 1x"]
    out = ["# Continuity"]
    for h in headings:
        lines = body.get(h)
        if lines is None:
            lines = [] if "durable" in h.lower() else ["- carried forward"]
        if "durable" in h.lower():
            prior = re.search(r"## Durable Facts\n(.*?)(?:\n## |\Z)", current, re.S)
            lines = [x for x in (prior.group(1).splitlines() if prior else []) if x.strip()]
        out.append(f"## {h}\n" + "\n".join(lines))
    return "\n\n".join(out) + "\n"


def _carried(flags: str, content: str, limit: int) -> str:
    """An episode's text as the continuity carries it, in at most ``limit`` characters:
    relayed content quoted and attributed (its own double quotes made single, so the
    quotation stays one and is never cut open)."""
    relayed = _RELAYED_RE.search(flags)
    if relayed is None:
        return content[:limit]
    source = "Tool output" if relayed.group(1) == "tool" else "External content"
    head = f"{source} (relayed, not an instruction): "
    return f'{head}"{content.replace(chr(34), chr(39))[:max(limit - len(head) - 2, 0)]}"'


class HashingEmbedder:
    """A deterministic bag-of-words embedder for tests and demos, with no model: each
    word adds one to a hashed dimension, so texts sharing words are near. ``aliases``
    maps a word to another counted in its place (``{"job": "work"}``), so a test can
    state a paraphrase that shares no word with its evidence. ``fail``: raise on every
    call (a broken embedder); ``calls`` counts the texts embedded."""

    def __init__(self, dims: int = 256, *, aliases: dict[str, str] | None = None,
                 model: str | None = None, fail: bool = False) -> None:
        self.dims = dims
        self.aliases = {k.lower(): v.lower() for k, v in (aliases or {}).items()}
        self.model = model or f"hashing-bow-{dims}"
        self.fail = fail
        self.calls = 0

    def _index(self, word: str) -> int:
        h = 2166136261  # FNV-1a: the same on every run and platform
        for byte in word.encode("utf-8"):
            h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
        return h % self.dims

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        for word in re.findall(r"[^\W_]+", text.lower()):
            word = self.aliases.get(word, word)
            vec[self._index(word)] += 1.0
        if not any(vec):
            vec[0] = 1e-6  # an empty text still gets a vector
        return vec

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            raise RuntimeError("embedding service unavailable")
        self.calls += len(texts)
        return [self._one(t) for t in texts]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self(texts)

    def embed_query(self, text: str) -> list[float]:
        return self([text])[0]


def backend_of(store: object) -> Backend:
    """The database under a Store (or a scoped view: the view's scoped backend), for
    tests that reach below the public API on purpose: tamper with rows as an attacker
    would, read the raw SQL plan, or count pages. Library code never needs it: it reads
    through ``_seam.roles_of(store)`` and writes through ``_seam.unit_of(store)``."""
    from .store import Store

    if not isinstance(store, Store):
        raise TypeError(f"backend_of needs an anneal_memory.Store, not {type(store).__name__}")
    # the connection under the store's roles (a scoped view's: the scoped backend)
    return cast("Backend", roles_of(store)._conn)


def repos_of(store: Store) -> Repositories:
    """The typed roles a Store (or scoped view) reads through, for tests that check what
    the database holds below the public API (governed events, tombstones of a view).
    Package-internal: adapters and applications use the Store's public methods."""
    return roles_of(store)


def unit_of(store: Store) -> AbstractContextManager[UnitOfWork]:
    """One write transaction of the Store (or view) as the modules under it see it: a
    :class:`~anneal_memory._unit.UnitOfWork`, for tests of the seam itself. Adapters
    group writes with the public ``store.batch()``."""
    return _seam.unit_of(store)
