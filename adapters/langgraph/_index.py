"""``AnnealStore(index=...)``: what LangGraph's ``InMemoryStore`` does with an index.

``index`` is LangGraph's ``IndexConfig``: ``embed`` (a LangChain ``Embeddings``, a sync
or async ``list[str] -> list[list[float]]``, or a ``"provider:model"`` string, normalised
by LangGraph's own ``ensure_embeddings``), ``dims`` and the paths to embed: ``fields``
(the key ``InMemoryStore`` and ``PostgresStore`` read) or ``text_fields`` (the key
``SqliteStore`` reads; when it is given it decides, as in ``SqliteStore``, and ``fields``
is not read), a list of paths or one path, default ``["$"]``, the whole value.
``put(..., index=False | [paths])`` overrides the fields per item. Each
indexed field's text is embedded at ``put``; its vectors are kept in the database beside
the item (the ``<collection>.vectors`` item collection of the same memory, normalised
float32 as the core stores episode vectors) and go when the item goes.

``search(query=...)`` filters first (namespace prefix and ``filter``, as without an
index), then ranks what passed by cosine similarity, an item scoring its best field, and
returns ``SearchItem.score``; items without a vector (put with ``index=False``) fill the
page after the scored ones with ``score=None``, as ``InMemoryStore`` does. One
difference: a put whose new value is not indexed drops the item's old vectors (they
describe a value it no longer holds), where ``InMemoryStore`` keeps them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import PutOp
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from anneal_memory import ItemCollection, cosine_similarities, pack_vector
from anneal_memory.errors import ValidationError


def index_fields(config: Mapping[str, Any]) -> list[str]:
    """The paths an ``IndexConfig`` embeds: ``text_fields`` when given (``SqliteStore``
    reads only that key: a user moving from it keeps the same embedded text), else
    ``fields`` (``InMemoryStore``, ``PostgresStore``); empty or absent: ``["$"]``."""
    key = "text_fields" if config.get("text_fields") is not None else "fields"
    paths = config.get(key) or ["$"]
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) and p for p in paths):
        raise ValidationError(f"index {key!r} must be a list of field paths (or one path), "
                              f"not {paths!r:.60}")
    return list(paths)


class ItemIndex:
    """The vectors of one AnnealStore's items, by item key and field path."""

    def __init__(self, config: Mapping[str, Any], vectors: ItemCollection) -> None:
        if not isinstance(config, Mapping) or config.get("embed") is None:
            raise ValidationError("index needs an 'embed': a LangChain Embeddings, a function "
                                  "list[str] -> list[list[float]], or a 'provider:model' string "
                                  "(and 'dims', as LangGraph's IndexConfig)")
        self.config = dict(config)
        self.embeddings = ensure_embeddings(self.config["embed"])
        self.fields = [(p, tokenize_path(p)) if p != "$" else (p, p)
                       for p in index_fields(self.config)]
        self._vectors = vectors

    # -- what to embed -----------------------------------------------------------------
    def texts(self, op: PutOp) -> list[tuple[str, str]]:
        """(field path, text) of each field of a put that is indexed (none: a delete, or
        ``index=False``)."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
        out: list[tuple[str, str]] = []
        for path, field in paths:
            found = get_text_at_path(op.value, field)
            if len(found) > 1:
                out += [(f"{path}.{i}", text) for i, text in enumerate(found)]
            elif found:
                out.append((path, found[0]))
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(v) for v in self.embeddings.embed_documents(texts)] if texts else []

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(v) for v in await self.embeddings.aembed_documents(texts)] if texts else []

    # -- stored vectors ----------------------------------------------------------------
    def save(self, key: str, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Replace an item's vectors with these (path, vector) pairs (none: remove)."""
        if not vectors:
            self._vectors.delete(key)
            return
        dims = len(vectors[0][1])
        self._vectors.put(key, {"dims": dims, "paths": {
            path: base64.b64encode(pack_vector(vec)).decode("ascii") for path, vec in vectors}})

    def drop(self, key: str) -> None:
        self._vectors.delete(key)

    def rank(self, query: Sequence[float], rows: Sequence[Any], prefix: str | None,
             ) -> tuple[list[tuple[float, Any]], list[Any]]:
        """The filtered ``rows`` ranked by their best field's cosine to ``query``, best
        first, and the rows without a vector of the query's dimension (in their order)."""
        wanted = {r.key for r in rows}
        stored: dict[str, list[bytes]] = {}
        for rec in self._vectors.list(prefix=prefix):
            if rec.key in wanted and isinstance(rec.value, Mapping) \
                    and rec.value.get("dims") == len(query):
                stored[rec.key] = [base64.b64decode(b) for b in rec.value["paths"].values()]
        flat = [(i, blob) for i, r in enumerate(rows) for blob in stored.get(r.key, ())]
        sims = cosine_similarities(query, [blob for _i, blob in flat])
        best: dict[int, float] = {}
        for (i, _b), score in zip(flat, sims):
            if i not in best or score > best[i]:
                best[i] = score
        ranked = sorted(best, key=lambda i: -best[i])  # stable: ties keep their put order
        return ([(float(best[i]), rows[i]) for i in ranked],
                [r for i, r in enumerate(rows) if i not in best])
