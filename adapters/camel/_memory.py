"""``camel.memories.AgentMemory`` backed by anneal-memory, for ``ChatAgent(memory=...)``.

The agent's working window stays in an inner camel memory (``ChatHistoryMemory`` unless you
pass another), so token limits and tool-call pruning behave as usual. This class records
what is written through it and adds a labelled memory record (continuity + recall for the
latest user message) to what ``retrieve`` returns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from camel.memories import AgentMemory, ChatHistoryMemory, ContextRecord, MemoryRecord
from camel.memories.context_creators.score_based import ScoreBasedContextCreator
from camel.messages import BaseMessage, FunctionCallingMessage
from camel.types import OpenAIBackendRole

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.camel"
_safe = hook_guard(LOGGER_NAME)

#: ``extra_info`` key marking the record this memory injects.
MEMORY_MARK = "anneal_memory"


class AnnealAgentMemory(AgentMemory):
    """Durable, governed memory for a CAMEL ``ChatAgent``.

    Give ``model`` (normally the agent's own model backend): it sizes the default working
    window and writes the continuity at the wrap; ``compress`` (prompt -> text) overrides the
    latter, ``inner``/``context_creator`` the former. ``wrap_on_end`` (default False) wraps
    after each final answer; otherwise call :meth:`wrap`. ``clear()`` (which ChatAgent calls on
    construction and ``reset()``) empties the working window only, never the store.
    ``store`` is a path (opened and owned: :meth:`close` closes it), a Store, or a ready
    MemorySession (then the session options go to it).
    """

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        model: Any = None,
        inner: AgentMemory | None = None,
        context_creator: Any = None,
        compress: Callable[[str], str] | None = None,
        wrap_on_end: bool = False,
        project_name: str | None = None,
        session_id: str | None = None,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        record_tool_calls: bool = False,
        strict: bool | None = None,
    ) -> None:
        if inner is None and context_creator is None and model is None:
            raise ValidationError("AnnealAgentMemory needs a working window: pass model= (the agent's "
                                  "model backend), context_creator=, or inner=<an AgentMemory>")
        if wrap_on_end and compress is None and model is None:
            raise ValidationError("wrap_on_end=True needs a model to write the continuity: pass "
                                  "model= (usually the agent's own) or compress=<callable>")
        if inner is None:
            creator = context_creator or ScoreBasedContextCreator(model.token_counter, model.token_limit)
            inner = ChatHistoryMemory(creator)
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      project_name=project_name, session_id=session_id, recall_limit=recall_limit,
                      max_content_chars=max_content_chars, strict=strict)
        self.inner = inner
        self.model = model
        self.record_tool_calls = record_tool_calls
        self._query: str | None = None

    @property
    def store(self) -> Store:
        return self.session.store

    # --- AgentMemory --------------------------------------------------------------------
    @property
    def agent_id(self) -> str | None:
        return self.inner.agent_id

    @agent_id.setter
    def agent_id(self, val: str | None) -> None:
        self.inner.agent_id = val

    def get_context_creator(self) -> Any:
        return self.inner.get_context_creator()

    def write_records(self, records: list[MemoryRecord]) -> None:
        """Record each message (user, tool results, final answers), then keep it in the window."""
        wrap = False
        for record in records:
            wrap = bool(self._record(record)) or wrap  # a failure is logged, the agent goes on
        self.inner.write_records(records)
        if wrap:
            self.wrap()

    def retrieve(self) -> list[ContextRecord]:
        """The working window plus one labelled memory record just before the latest request."""
        records = self.inner.retrieve()
        return self._with_memory(records) or records  # on a failure: without memory

    def clear(self) -> None:
        """Empty the working window. The stored episodes stay: ChatAgent calls this on every
        construction and reset, so it cannot mean "forget everything"."""
        self.inner.clear()
        self._query = None

    def pop_records(self, count: int) -> list[MemoryRecord]:
        return self.inner.pop_records(count)

    def remove_records_by_indices(self, indices: list[int]) -> list[MemoryRecord]:
        return self.inner.remove_records_by_indices(indices)

    def clean_tool_calls(self) -> None:
        self.inner.clean_tool_calls()

    # --- beyond the interface -----------------------------------------------------------
    def search(self, query: str, limit: int | None = None) -> list[Any]:
        """Scored recall from the store (``ScoredEpisode`` list)."""
        return self.session.recall(query, limit=limit) or []

    def delete(self, episode_id: str) -> bool:
        """Delete one stored episode by id; False when there was none."""
        return self.store.delete(episode_id)

    def wrap(self, compress: Callable[[str], str] | None = None) -> WrapOutcome:
        """Compress this session's episodes into the continuity with ``compress``, the
        constructor's, or ``model`` (never loses episodes; the outcome is also kept on
        ``session.last_wrap``)."""
        return self.session.wrap_first(compress, self.compress,
                                       self._model_compress if self.model is not None else None)

    def close(self) -> None:
        """Close the store if this memory opened it."""
        self.session.close()

    # --- helpers --------------------------------------------------------------------------
    @_safe
    def _record(self, record: MemoryRecord) -> bool:
        """Record one message; True when it is a final answer (a wrap point)."""
        if (record.extra_info or {}).get(MEMORY_MARK):
            return False
        role, message = record.role_at_backend, record.message
        if role == OpenAIBackendRole.USER:
            if message.content:
                self._query = message.content
                self.session.record_user_input(message.content,
                                               metadata={"role_name": message.role_name})
        elif role in (OpenAIBackendRole.FUNCTION, OpenAIBackendRole.TOOL):
            if isinstance(message, FunctionCallingMessage):
                self.session.record_tool_output(message.func_name or "tool", _text(message.result),
                                                arguments=message.args)
        elif role == OpenAIBackendRole.ASSISTANT:
            calls = _tool_calls(message)
            if calls:
                if self.record_tool_calls:
                    for name, args in calls:
                        self.session.record_decision(f"called tool {name} with {args}")
            elif message.content:
                self.session.record_outcome(message.content)
                return self.wrap_on_end
        return False

    @_safe
    def _with_memory(self, records: list[ContextRecord]) -> list[ContextRecord]:
        block = self.session.memory_block(self._query)
        if not block:
            return records
        users = [r for r in records if r.memory_record.role_at_backend == OpenAIBackendRole.USER]
        # sorts just before the latest request (context creators order by timestamp)
        when = (users[-1].timestamp - 1e-6) if users else (records[-1].timestamp if records else 0.0)
        # a user-role record: recalled data must not carry system authority
        injected = MemoryRecord(message=BaseMessage.make_user_message("memory", block),
                                role_at_backend=OpenAIBackendRole.USER, extra_info={MEMORY_MARK: "1"},
                                timestamp=when, agent_id=self.agent_id or "")
        return [*records, ContextRecord(memory_record=injected, score=1.0, timestamp=when)]

    def _model_compress(self, prompt: str) -> str:
        response = self.model.run([{"role": "user", "content": prompt}])
        return response.choices[0].message.content or ""


def _tool_calls(message: BaseMessage) -> list[tuple[str, str]]:
    """(name, JSON arguments) of an assistant tool-call message, in either CAMEL shape."""
    if isinstance(message, FunctionCallingMessage):  # the shape camel-ai 0.2.80 writes
        return [(message.func_name or "tool", json.dumps(message.args, default=str))]
    calls = (message.meta_dict or {}).get("tool_calls") or []
    return [(str(c.get("function", {}).get("name")), str(c.get("function", {}).get("arguments")))
            for c in calls if isinstance(c, dict)]


def _text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, default=str)
