"""``BaseRetriever`` over anneal recall, for any LCEL chain."""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from anneal_memory.session import MemorySession
from anneal_memory.types import RELAYED_TRUST


class AnnealRetriever(BaseRetriever):
    """Scored recall as LangChain Documents.

    ``retriever = AnnealRetriever(session=MemorySession(store), k=5)``; each Document's
    ``page_content`` is the episode text and its metadata carries ``id, type, source,
    trust, score, timestamp`` and ``relayed`` (True for tool/external content, which a
    prompt should present as data, not instructions). For a ready-made labelled prompt
    section use ``RunnableLambda(session.context_for)`` instead.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: MemorySession
    k: int = Field(default=5, ge=1)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(
                page_content=hit.content,
                metadata={
                    "id": hit.id,
                    "type": hit.type,
                    "source": hit.source,
                    "trust": hit.trust,
                    "score": hit.score,
                    "timestamp": hit.timestamp,
                    "relayed": hit.trust in RELAYED_TRUST,
                },
            )
            for hit in self.session.recall(query, limit=self.k) or []
        ]
