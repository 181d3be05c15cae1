"""``AnnealChatMessageHistory``: a ``BaseChatMessageHistory`` in the store's database.

The messages are the conversation's transcript: framework state, kept exactly (each
message serialised) in the namespace's ``langchain.history`` item collection, in order,
one conversation per ``conversation_id``. Each message also becomes memory through the
core session (``record_episodes``): the user's messages as ``context``, the model's as
``outcome``, tool replies as ``observation`` with ``trust="tool"``, with the session's
length cap, de-duplication and failure guard (a failing memory write is logged and the
message is still kept).
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, check_identity, from_item_value, item_value
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

from ._messages import message_text

COLLECTION = "langchain.history"
LOGGER_NAME = "anneal_memory.adapters.langchain"


class AnnealChatMessageHistory(MemoryAdapter, BaseChatMessageHistory):
    """A chat history in anneal's database (one conversation per id).

    Use it wherever LangChain takes a ``BaseChatMessageHistory``, e.g.
    ``RunnableWithMessageHistory(chain, lambda sid: AnnealChatMessageHistory(store, sid))``.
    ``memory`` is a Store, a store path or a :class:`MemorySession`. ``namespace`` is whose
    memory the conversation is (default ``{"user": conversation_id}``: LangChain's session
    id is the identity). ``clear()`` removes this conversation's messages (the episodes
    recorded from them stay memory); other conversations are untouched. An empty,
    whitespace or invisible conversation id is refused (``IdentityError``).
    """

    framework = "langchain"
    extra = "langchain"
    logger_name = LOGGER_NAME

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str],
                 conversation_id: str = "default", *, namespace: Any = None,
                 record_episodes: bool = True) -> None:
        conversation_id = check_identity(conversation_id, "the chat history's conversation_id")
        if callable(namespace):
            raise ValidationError("a chat history is one conversation's: pass a mapping or a "
                                  "MemoryNamespace as namespace, not a callable")
        self._init_memory(memory, namespace=namespace)
        self.conversation_id = conversation_id
        self.record_episodes = record_episodes
        try:
            self._memory = self.session_for(namespace=namespace or (
                None if self._anneal.pinned else {"user": conversation_id}))
        except ValidationError as exc:
            self.close()
            raise ValidationError(f"{exc} (the default namespace is {{'user': conversation_id}}: "
                                  "pass namespace= for a conversation id that is no user id)"
                                  ) from None
        self._items = self._memory.store.items(COLLECTION)
        self._prefix = quote(conversation_id, safe="") + "/"
        self._lock = threading.Lock()

    @property
    def memory_session(self) -> MemorySession:
        """The session this conversation's episodes are recorded through."""
        return self._memory

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """This conversation's messages, oldest first."""
        return messages_from_dict([from_item_value(i.value, f"history item {i.key!r}")
                                   for i in self._items.list(prefix=self._prefix)])

    async def aget_messages(self) -> list[BaseMessage]:
        import asyncio

        return await asyncio.to_thread(lambda: self.messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        with self._lock:
            for message in messages:
                key = f"{self._prefix}{time.time_ns():020d}-{secrets.token_hex(4)}"
                # NaN / ±Infinity (a tool's artifact, token scores) kept as LangChain's own
                # histories keep them
                self._items.put(key, item_value(message_to_dict(message)),
                                metadata={"conversation_id": self.conversation_id,
                                          "type": message.type})
        if self.record_episodes:
            for message in messages:
                self._record(message)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        import asyncio

        await asyncio.to_thread(self.add_messages, messages)

    def _record(self, message: BaseMessage) -> None:
        text = message_text(message)
        if not text:
            return
        meta = {"conversation_id": self.conversation_id}
        if message.type == "human":
            self._memory.record_user_input(text, meta)
        elif message.type == "ai":
            self._memory.record_outcome(text, meta)
        elif message.type in ("tool", "function"):
            self._memory.record_tool_output(getattr(message, "name", None) or "tool", text,
                                            metadata=meta)

    def clear(self) -> None:
        """Remove this conversation's messages."""
        with self._lock:
            self._items.delete_prefix(self._prefix)

    async def aclear(self) -> None:
        import asyncio

        await asyncio.to_thread(self.clear)
