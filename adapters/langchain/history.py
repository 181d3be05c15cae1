"""``BaseChatMessageHistory`` backed by the episodic store.

Each message is one episode (the message's text as content, so recall finds it), with the
full serialised message in its metadata so the history round-trips exactly. One store can
hold many conversations: ``conversation_id`` keeps them apart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from anneal_memory import Store
from anneal_memory.errors import ValidationError

from .messages import message_text

# Message type -> (episode type, trust). A tool's reply is relayed content.
_EPISODE_KIND: dict[str, tuple[str, str]] = {
    "human": ("context", "agent"),
    "system": ("context", "agent"),
    "ai": ("outcome", "agent"),
    "tool": ("observation", "tool"),
    "function": ("observation", "tool"),
}
_PAGE = 500


class AnnealChatMessageHistory(BaseChatMessageHistory):
    """A chat history whose messages are anneal episodes (one conversation per id).

    Use it wherever LangChain takes a ``BaseChatMessageHistory``, e.g.
    ``RunnableWithMessageHistory(chain, lambda sid: AnnealChatMessageHistory(store, sid))``.
    ``clear()`` deletes this conversation's message episodes (the deletes are audited);
    other conversations and the agent's other episodes are untouched.
    """

    def __init__(self, store: Store, conversation_id: str = "default") -> None:
        if not isinstance(store, Store):
            raise ValidationError(
                f"expected an anneal_memory.Store, got {type(store).__name__}: "
                "pass Store('path/memory.db')"
            )
        if not conversation_id or not str(conversation_id).strip():
            raise ValidationError("conversation_id must be a non-empty string")
        self.store = store
        self.conversation_id = str(conversation_id)
        self.source = f"langchain-history:{self.conversation_id}"

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """This conversation's messages, oldest first."""
        episodes = sorted(self._episodes(), key=lambda e: (e.metadata or {}).get("seq", 0))
        return messages_from_dict([(e.metadata or {})["message"] for e in episodes])

    async def aget_messages(self) -> list[BaseMessage]:
        return self.messages

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for message in messages:
            episode_type, trust = _EPISODE_KIND.get(message.type, ("observation", "agent"))
            text = message_text(message) or f"[{message.type} message without text]"
            self.store.record(
                text,
                episode_type,
                source=self.source,
                trust=trust,
                metadata={
                    "conversation_id": self.conversation_id,
                    # nanoseconds: keeps insertion order even when timestamps tie
                    "seq": time.time_ns(),
                    "message": message_to_dict(message),
                },
            )

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.add_messages(messages)

    def clear(self) -> None:
        """Delete this conversation's message episodes (audited deletes)."""
        for episode in self._episodes():
            self.store.delete(episode.id)

    async def aclear(self) -> None:
        self.clear()

    def _episodes(self) -> list[Any]:
        found: list[Any] = []
        offset = 0
        while True:
            page = self.store.recall(source=self.source, limit=_PAGE, offset=offset,
                                     include_superseded=True)
            found.extend(e for e in page.episodes
                         if (e.metadata or {}).get("conversation_id") == self.conversation_id
                         and "message" in (e.metadata or {}))
            offset += _PAGE
            if offset >= page.total_matching or not page.episodes:
                return found
