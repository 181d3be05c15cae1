"""``AnnealRetriever``: anneal recall as a LangChain ``BaseRetriever``, and the labelled
formatter that turns its documents into a prompt section."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from pydantic import ConfigDict, Field

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL, MemoryAdapter
from anneal_memory.errors import ValidationError
from anneal_memory.session import CONTINUITY_HEADER, MEMORY_HEADER, RELAYED_HEADER, MemorySession
from anneal_memory.types import RELAYED_TRUST

from ._identity import identity_of

LOGGER_NAME = "anneal_memory.adapters.langchain"

#: the config of the retriever call running in this context (its identity)
_CONFIG: ContextVar[RunnableConfig | None] = ContextVar("anneal_retriever_config", default=None)


def run_values(config: RunnableConfig | None, metadata: Any = None) -> dict[str, Any]:
    """A run's values as one mapping: its metadata, then ``configurable`` over it."""
    config = config or {}
    return {**dict(metadata or {}), **dict(config.get("metadata") or {}),
            **dict(config.get("configurable") or {})}


class AnnealRetriever(MemoryAdapter, BaseRetriever):
    """Scored recall as LangChain Documents, for any LCEL chain.

    ``AnnealRetriever(memory=store, k=5)``: ``memory`` is a Store, a store path or a
    :class:`MemorySession`. Each Document's ``page_content`` is the episode text and its
    metadata carries ``id, type, source, trust, score, timestamp`` and ``relayed`` (True
    for tool/external content). ``include_continuity=True`` puts the continuity first, as a
    Document of type ``continuity`` (not counted in ``k``). ``k`` may also be passed per
    call: ``retriever.invoke(query, k=3)``. Render the documents with
    :func:`format_memory_documents` (labelled as data).

    Identity: ``namespace`` (a mapping, a ``MemoryNamespace`` or a callable of the run's
    values: ``config["metadata"]`` and ``config["configurable"]`` in one dict), else the ids
    there (``user_id``, ``tenant_id``, ``project_id``, ``agent_id``), else the store as it
    is.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    framework: ClassVar[str] = "langchain"
    extra: ClassVar[str] = "langchain"
    logger_name: ClassVar[str] = LOGGER_NAME
    identity_source: ClassVar[str] = "the run's metadata or config['configurable']"

    memory: Any = None
    namespace: Any = None
    k: int = Field(default=5, ge=1)
    include_continuity: bool = False

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str] | None = None,
                 **data: Any) -> None:
        if memory is None:  # session= is the name this retriever took before memory=
            memory = data.pop("session", None)
        if memory is None:
            raise ValidationError("AnnealRetriever needs memory= (a Store, a store path or a "
                                  "MemorySession)")
        super().__init__(memory=memory, **data)
        self._init_memory(memory, namespace=self.namespace)

    def default_namespace(self, context: Any) -> Any:
        return identity_of(context, names=(self.identity_source,))

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        token = _CONFIG.set(ensure_config(config))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _CONFIG.reset(token)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        token = _CONFIG.set(ensure_config(config))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _CONFIG.reset(token)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        session = self.session_for(run_values(_CONFIG.get(), run_manager.metadata))
        limit = self._limit(k)
        continuity = session.start() if self.include_continuity else ""
        return _documents(continuity, session.recall(query, limit=limit) or [])

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any,
                                       k: int | None = None) -> list[Document]:
        session = self.session_for(run_values(_CONFIG.get(), run_manager.metadata))
        limit = self._limit(k)
        continuity = await session.astart() if self.include_continuity else ""
        return _documents(continuity, await session.arecall(query, limit=limit) or [])

    def _limit(self, k: Any) -> int:
        limit = self.k if k is None else k
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError(f"k must be a whole number >= 1, not {limit!r}")
        return limit


def _documents(continuity: str, hits: Sequence[Any]) -> list[Document]:
    docs = [Document(page_content=continuity, metadata={"type": "continuity"})] \
        if continuity else []
    for hit in hits:
        docs.append(Document(page_content=hit.content, metadata={
            "id": hit.id, "type": str(getattr(hit.type, "value", hit.type)),
            "source": hit.source, "trust": hit.trust, "score": hit.score,
            "timestamp": hit.timestamp, "relayed": hit.trust in RELAYED_TRUST}))
    return docs


def format_memory_documents(documents: Sequence[Document]) -> str:
    """Documents from :class:`AnnealRetriever` as one labelled prompt section of data:
    the continuity first, then recalled episodes, relayed (tool / external) ones last
    under their own label; ``""`` when there are none."""
    continuity = [d.page_content for d in documents if d.metadata.get("type") == "continuity"]
    episodes = [d for d in documents if d.metadata.get("type") != "continuity"]
    own = [d for d in episodes if not d.metadata.get("relayed")]
    relayed = [d for d in episodes if d.metadata.get("relayed")]
    parts: list[str] = []
    if continuity:
        body = continuity[0]
        parts.append(body if body.startswith(CONTINUITY_HEADER) else f"{CONTINUITY_HEADER}\n{body}")
    if episodes:
        lines = [MEMORY_HEADER] + [_line(d) for d in own]
        if relayed:
            lines.append(f"{RELAYED_HEADER}:")
            lines += [_line(d) + f" [{d.metadata.get('trust')}]" for d in relayed]
        parts.append("\n".join(lines))
    return f"{MEMORY_LABEL}\n\n" + "\n\n".join(parts) if parts else ""


def _line(doc: Document) -> str:
    meta = doc.metadata
    day = str(meta.get("timestamp") or "")[:10]
    return f"- [{meta.get('id', '?')}] ({meta.get('type', 'memory')}, {day}) {doc.page_content}"
