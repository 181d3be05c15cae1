"""Erasure: when an episode or a whole namespace goes, its text goes from every place the
library wrote it, not only from the episodes table.

A deleted episode's words can live on in the continuity the agent loads every session,
in crystal patterns and spores (kept as item documents), in item collections (a chat
history), in the pattern history's explanations, a drift probe's fact, a wrap's metrics,
and in the JSON sidecar files beside a SQLite database. :class:`TextMatcher` finds where
a text quotes an erased episode (its id cited, or a run of its words reproduced); the
``scrub_*`` functions rewrite those places inside the delete's transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

from ._seam import roles_of, unit_of
from ._unit import Facade

if TYPE_CHECKING:
    from ._namespace import MemoryNamespace
    from ._unit import UnitOfWork
    from .items import ItemCollection
    from .storage.base import EpisodeRow, Scope
    from .storage.repos import Repositories

#: what replaces a quoted text inside a document that stays (an item, a crystal...)
ERASED = "[erased]"
#: a run of this many words of an erased episode, reproduced anywhere, is a quotation
RUN_WORDS = 6
#: an episode shorter than RUN_WORDS words is located by its whole text, when it has at
#: least this many words and characters (shorter ones only by a cited id)
MIN_WHOLE_WORDS = 3
MIN_WHOLE_CHARS = 12
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
# the framing record_tool_output puts before every tool result: common to all of them
_TOOL_FRAME = ("tool",)
#: the root's item collection of the MCP server's bearer tokens (``mcp.tokens`` writes it):
#: each names the namespace it serves in ``value["namespace"]``, so an erased namespace's
#: tokens go with it
MCP_TOKENS = "_mcp_tokens"


def words(text: str) -> list[str]:
    """The text's words, case-folded: punctuation and spacing do not hide a quotation."""
    return [w.casefold() for w in _WORD.findall(text)]


class ContinuityLine(TypedDict):
    """One line an erasure removed from a continuity (``line``: its 1-based number in the
    text before; ``namespace``: the continuity's namespace label, None for the root's)."""

    namespace: str | None
    section: str
    line: int
    episode_ids: list[str]


class ErasureDict(TypedDict):
    """``ErasureReport.to_dict()``: the report's fields."""

    episodes: list[str]
    continuity_lines: list[ContinuityLine]
    unlocated: list[str]
    cells: int
    files: list[str]
    namespaces: list[str]
    governed_records: int
    continuity_hashes: list[str]


class ErasureAuditData(TypedDict):
    """What an erasure's audit entry holds: counts and ids, never the erased text."""

    episodes: int
    continuity_lines: int
    unlocated: list[str]
    cells: int
    files: int
    namespaces: int
    governed_records: int
    continuity_hashes: list[str]


@dataclass
class ErasureReport:
    """What an erasure removed, and where: ids and places, never the erased text.

    ``continuity_lines``: one ``{"namespace", "section", "line", "episode_ids"}`` per line
    removed from a continuity (``line`` is its 1-based number in the text before);
    ``unlocated``: erased episodes a saved wrap had compressed but that no continuity
    line quotes or cites (the continuity may paraphrase them: read it); ``cells``: item,
    pattern-history, probe and wrap fields rewritten; ``files``: sidecar files rewritten
    or removed; ``namespaces``: labels of namespaces erased whole."""

    episodes: list[str] = field(default_factory=list)
    continuity_lines: list[ContinuityLine] = field(default_factory=list)
    unlocated: list[str] = field(default_factory=list)
    cells: int = 0
    files: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    governed_records: int = 0
    #: salted hash of each continuity as the erasure left it (for the audit entry)
    continuity_hashes: list[str] = field(default_factory=list)

    def to_dict(self) -> ErasureDict:
        """The fields as new lists and dicts (as ``dataclasses.asdict`` made them)."""
        return {"episodes": list(self.episodes),
                "continuity_lines": [ContinuityLine(namespace=x["namespace"],
                                                    section=x["section"], line=x["line"],
                                                    episode_ids=list(x["episode_ids"]))
                                     for x in self.continuity_lines],
                "unlocated": list(self.unlocated), "cells": self.cells,
                "files": list(self.files), "namespaces": list(self.namespaces),
                "governed_records": self.governed_records,
                "continuity_hashes": list(self.continuity_hashes)}

    @property
    def beyond_rows(self) -> bool:
        """Whether the erasure reached past the episode rows (or could not locate one)."""
        return bool(self.continuity_lines or self.unlocated or self.cells or self.files
                    or self.namespaces or self.governed_records)

    def audit_data(self) -> ErasureAuditData:
        """The audit entry's data: counts and ids only."""
        return {"episodes": len(self.episodes), "continuity_lines": len(self.continuity_lines),
                "unlocated": list(self.unlocated), "cells": self.cells,
                "files": len(self.files), "namespaces": len(self.namespaces),
                "governed_records": self.governed_records,
                "continuity_hashes": list(self.continuity_hashes)}


class TextMatcher:
    """Finds which erased episodes a text quotes (a run of RUN_WORDS of their words, or
    the whole of a short one) or cites (their id as a token)."""

    def __init__(self, episodes: Mapping[str, str]) -> None:
        self.ids = set(episodes)
        self._runs: dict[tuple[str, ...], str] = {}
        self._lengths: set[int] = set()
        for eid, content in episodes.items():
            ws = words(content)
            if tuple(ws[:1]) == _TOOL_FRAME and "returned" in ws[:6]:
                ws = ws[ws.index("returned") + 1:]  # "Tool X returned: ..." frames every result
            if len(ws) >= RUN_WORDS:
                for i in range(len(ws) - RUN_WORDS + 1):
                    self._runs.setdefault(tuple(ws[i:i + RUN_WORDS]), eid)
                self._lengths.add(RUN_WORDS)
            elif len(ws) >= MIN_WHOLE_WORDS and len(" ".join(ws)) >= MIN_WHOLE_CHARS:
                self._runs.setdefault(tuple(ws), eid)
                self._lengths.add(len(ws))

    def __bool__(self) -> bool:
        return bool(self.ids)

    def quotes(self, text: str) -> set[str]:
        if not self._runs or not text:
            return set()
        ws = words(text)
        found = set()
        for n in self._lengths:
            for i in range(len(ws) - n + 1):
                eid = self._runs.get(tuple(ws[i:i + n]))
                if eid is not None:
                    found.add(eid)
        return found

    def cites(self, text: str) -> set[str]:
        if not self.ids or not text:
            return set()
        return self.ids.intersection(_TOKEN.findall(text))

    def hits(self, text: str) -> set[str]:
        return self.quotes(text) | self.cites(text)


def scrub_continuity(text: str, matcher: TextMatcher,
                     namespace: str | None) -> tuple[str, list[ContinuityLine]]:
    """The continuity without every line that quotes or cites an erased episode (never a
    heading), and one entry per line removed."""
    kept: list[str] = []
    removed: list[ContinuityLine] = []
    section = ""
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            kept.append(line)
            continue
        hit = matcher.hits(line)
        if hit:
            removed.append({"namespace": namespace, "section": section, "line": n,
                            "episode_ids": sorted(hit)})
        else:
            kept.append(line)
    return "\n".join(kept), removed


def redact(value: object, matcher: TextMatcher) -> tuple[object, set[str]]:
    """A JSON value with every string that quotes an erased episode replaced by
    ``[erased]`` (ids alone are left: an id is not the text), and the episodes hit."""
    if isinstance(value, str):
        hit = matcher.quotes(value)
        return (ERASED, hit) if hit else (value, set())
    hits: set[str] = set()
    if isinstance(value, list):
        out: list[object] = []
        for v in value:
            nv, h = redact(v, matcher)
            out.append(nv)
            hits |= h
        return out, hits
    if isinstance(value, dict):
        d: dict[object, object] = {}
        for k, v in value.items():
            nv, h = redact(v, matcher)
            d[k] = nv
            hits |= h
        return d, hits
    return value, set()


def redact_cell(raw: str | None, matcher: TextMatcher) -> str | None:
    """A stored text field (JSON or plain) redacted, or None when nothing in it quotes an
    erased episode."""
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return ERASED if matcher.quotes(raw) else None
    new, hit = redact(data, matcher)
    return json.dumps(new, ensure_ascii=False, sort_keys=isinstance(data, dict)) if hit else None


def scrub_json_file(path: Path, matcher: TextMatcher) -> bool:
    """Rewrite a JSON (or JSON-lines) sidecar file beside the database (a crystal, spore
    or outcome file, or one set aside as ``.imported``) without what quotes an erased
    episode, by temp file and atomic replace. True if it changed."""
    from ._fileio import atomic_write_bytes

    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        docs, lines = [json.loads(raw)], False
    except ValueError:
        try:
            docs, lines = [json.loads(x) for x in raw.splitlines() if x.strip()], True
        except ValueError:
            return False
    out, changed = [], False
    for doc in docs:
        new, hit = redact(doc, matcher)
        changed |= bool(hit)
        out.append(new)
    if not changed:
        return False
    text = ("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in out) if lines
            else json.dumps(out[0], ensure_ascii=False, indent=2) + "\n")
    atomic_write_bytes(path, text.encode("utf-8"))
    return True


def sidecar_files(db_path: Path) -> Iterable[Path]:
    """The JSON sidecar files beside a SQLite database that may hold episode text (the
    audit trail holds hashes only, and is a chain that must not be rewritten)."""
    for p in sorted(db_path.parent.glob(f"{db_path.stem}.*")):
        name = p.name
        if (p.is_file() and ".json" in name and ".audit." not in name
                and not name.endswith((".lock", ".tmp"))):
            yield p


# --------------------------------------------------------------------------- on a store
class ErasureHost(Facade, Protocol):
    """The Store or view an erasure acts for: the :class:`~._unit.Facade`, whose
    namespace it is (None: the root's), its tag and server address, its item
    collections, and its views as hosts too."""

    @property
    def namespace(self) -> MemoryNamespace | None: ...

    @property
    def ns_tag(self) -> str: ...

    @property
    def dsn(self) -> str | None: ...

    def items(self, collection: str) -> ItemCollection: ...

    def scoped(self, namespace: MemoryNamespace | Mapping[str, str | None]) -> ErasureHost: ...


def root_of(store: ErasureHost) -> ErasureHost:
    """The root Store of a view (the store itself for the root)."""
    parent: ErasureHost | None = getattr(store, "parent", None)  # only a view has one
    return parent or store


def view_for(store: ErasureHost, scope: Scope) -> ErasureHost:
    """The store seen as the namespace ``scope`` (the root itself for the root)."""
    root = root_of(store)
    if scope.owner is None:
        return root
    if getattr(store, "scope", None) == scope and getattr(store, "namespace", None) is not None:
        return store
    from ._namespace import MemoryNamespace

    tenant, user, agent = json.loads(scope.owner)
    return root.scoped(MemoryNamespace(tenant=tenant, user=user, agent=agent,
                                             project=scope.project))


def _scopes_seeing(b: Repositories, rows: Iterable[EpisodeRow]) -> list[Scope]:
    """Every scope whose continuity or items may hold these episodes: each row's own, and
    for a user-level row every project of that user (a project view reads it)."""
    from .storage.base import Scope

    seen: dict[str, Scope] = {}
    for r in rows:
        scope = r.scope
        seen.setdefault(scope.key, scope)
        if scope.owner is not None and scope.project is None:
            for p in b.meta.owner_projects(scope.owner):
                s = Scope(scope.owner, p)
                seen.setdefault(s.key, s)
    return list(seen.values())


def scrub_episodes(store: ErasureHost, rows: Mapping[str, EpisodeRow], tx: UnitOfWork, *,
                   whole: Sequence[Scope] = ()) -> ErasureReport:
    """Inside the delete's unit of work ``tx``, before the rows go: take the episodes'
    text out of every continuity that may quote them (each rewritten one staged in
    ``tx``, put in place after the commit), every per-namespace text field, the meta
    documents, and the JSON sidecar files beside a SQLite database. ``whole``: scopes
    whose continuity goes whole (an erased namespace): reported, never rewritten."""
    report = ErasureReport(episodes=sorted(rows))
    matcher = TextMatcher({i: r.content for i, r in rows.items()})
    if not matcher:
        return report
    b = roles_of(root_of(store))  # the database's own roles, unscoped: the rows name their scope
    scopes = _scopes_seeing(b, rows.values())
    located: set[str] = set()
    for scope in scopes:
        view = view_for(store, scope)
        text = view.load_continuity()
        if not text:
            continue
        owner_ns = view.namespace  # a namespace's view (the root's for the root scope)
        label = None if scope.owner is None or owner_ns is None else owner_ns.label()
        new, removed = scrub_continuity(text, matcher, label)
        if removed:
            if scope not in whole:
                tx.stage_continuity(new, view)
            report.continuity_lines.extend(removed)
            for entry in removed:
                located.update(entry["episode_ids"])
            report.continuity_hashes.append(view.audit_trail.hash_content(new))
    report.unlocated = sorted(i for i, r in rows.items()
                              if r.wrap_id is not None and i not in located)
    # a pattern's name, or a probe's, is its key: a row whose name quotes the episode goes
    for scope in scopes:
        wraps = b.within(scope).wraps
        for name in list(wraps.pattern_history()):
            if matcher.quotes(name):
                report.cells += wraps.delete_pattern(name)
        for probe in wraps.probes():
            if probe.pattern and matcher.quotes(probe.pattern):
                report.cells += wraps.delete_probe(probe.id)
    for table, key, col, text in list(b.meta.text_cells([s.key for s in scopes])):
        new_text = redact_cell(text, matcher)
        if new_text is not None:
            b.meta.set_text_cell(table, key, col, new_text)
            report.cells += 1
    for meta_key, value in b.meta.meta_rows():
        if value[:1] in "[{":
            new_text = redact_cell(value, matcher)
            if new_text is not None:
                b.meta.set_meta(meta_key, new_text)
                report.cells += 1
    if store.dsn is None:
        for p in sidecar_files(Path(store.path)):
            if scrub_json_file(p, matcher):
                report.files.append(p.name)
    return report


def erase_namespace(store: ErasureHost, namespace: object, *,
                    remove: Callable[[list[str]], object]) -> ErasureReport:
    """Erase one namespace whole (see ``Store.erase_namespace``) in one unit of work of
    the root store; ``remove(ids)`` deletes the episode rows in it (the Store's delete,
    with their tombstones and audit entries). The caller puts the texts in place and
    scrubs the indexes after the commit."""
    from ._namespace import coerce_namespace
    from ._unit import ERASED_BLOB, PENDING_BLOB, STAGED_BLOB, continuity_blob
    from .errors import TrustError, ValidationError
    from .storage.base import Scope
    from .trust import within_ceiling

    own = store.namespace
    if namespace is None:
        if own is None:
            raise ValidationError("erase_namespace needs the namespace to erase, e.g. "
                                  "{'user': 'alice'} (or call it on that namespace's view)")
        namespace = own
    ns = coerce_namespace(namespace, partial=True)
    if own is not None and own != ns:
        raise ValidationError(f"a view of {own.label()} cannot erase {ns.label()}: call "
                              "erase_namespace on the parent Store")
    root = root_of(store)
    b = roles_of(root)
    owner = ns.owner
    report = ErasureReport(namespaces=[ns.label() + ("" if ns.project else " (all projects)")])
    with unit_of(root) as tx:
        projects = [ns.project] if ns.project else b.meta.owner_projects(owner)
        scopes = [Scope(owner, p) for p in projects]
        project = None if ns.project is None else b.within(Scope(owner, ns.project)).episodes
        ids = [i for i in b.meta.episode_ids_of_owner(owner)
               if project is None or i in project.get_episodes([i], exact=True)]
        rows = b.episodes.get_episodes(ids, exact=True) if ids else {}
        above = [i for i, r in rows.items() if not within_ceiling(r.trust, root.trust_ceiling)]
        if above:
            raise TrustError(
                f"{len(above)} episode(s) of {ns.label()} are labelled above this store's "
                f"trust ceiling {root.trust_ceiling!r}: open the store with "
                "trust_ceiling='operator' to erase a namespace; nothing was erased")
        # their continuity goes whole: nothing of it is staged to be put back
        report = scrub_episodes(root, rows, tx, whole=scopes) if rows else report
        report.namespaces = [ns.label() + ("" if ns.project else " (all projects)")]
        if rows:
            remove(list(rows))
        names = [continuity_blob(root.path, view_for(root, s).continuity_path) for s in scopes]
        for name in names:
            b.meta.set_meta(PENDING_BLOB + name, None)
            b.meta.set_meta(STAGED_BLOB + name, None)
            b.meta.set_meta(ERASED_BLOB + name, "1")
        if ns.project is None:
            b.meta.erase_namespace_rows(owner)
            report.governed_records = tx.governance.erase_owner(owner)
            tags = [view_for(root, s).ns_tag for s in scopes]
            from .storage.common import audit_counter_key

            b.meta.erase_owner_meta(owner, [audit_counter_key(t) for t in tags])
        else:
            b.meta.erase_scope_rows(Scope(owner, ns.project))
            report.governed_records = tx.governance.erase_owner(owner, ns.project)
        _forget_tokens(root, ns)  # its MCP tokens name the user: they go too
        tx.audit.append("namespace_erased", {
            "namespace_tag": view_for(root, Scope(owner, ns.project)).ns_tag,
            **report.audit_data()}, actor="operator")
    return report


def _forget_tokens(root: ErasureHost, ns: MemoryNamespace) -> int:
    """Delete the MCP tokens of an erased namespace (every project of it when ``ns`` names
    none): their records name the user, and erased means erased. Returns how many."""
    from ._namespace import coerce_namespace

    items = root.items(MCP_TOKENS)
    gone = 0
    for item in items.list():
        held = coerce_namespace(item.value["namespace"])
        if held.owner == ns.owner and (ns.project is None or held.project == ns.project):
            gone += items.delete(item.key)
    return gone
