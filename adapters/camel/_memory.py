"""``camel.memories.AgentMemory`` backed by anneal-memory, for ``ChatAgent(memory=...)``.

The agent's working window stays in an inner camel memory (``ChatHistoryMemory`` unless you
pass another), so token limits and tool-call pruning behave as usual. This class records
what is written through it and adds a labelled memory record (continuity + recall for the
latest user message) to what ``retrieve`` returns.

Whose memory: the ``agent_id`` you give the ``ChatAgent`` (CAMEL's identity of an agent;
the namespace ``{"agent": agent_id}``), unless ``namespace=`` says otherwise. An agent
without an ``agent_id`` of yours gets a random one from CAMEL: that names nobody, so its
memory is the store's (or ``namespace=``'s).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from camel.memories import AgentMemory, ChatHistoryMemory, ContextRecord, MemoryRecord
from camel.memories.context_creators.score_based import ScoreBasedContextCreator
from camel.messages import BaseMessage, FunctionCallingMessage
from camel.types import OpenAIBackendRole

from anneal_memory import Store
from anneal_memory.adapters import (
    MemoryAdapter,
    check_identity,
    hook_guard,
    identity,
    label_memory,
    options_except,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.camel"
_safe = hook_guard(LOGGER_NAME)

#: ``extra_info`` key marking the record this memory injects.
MEMORY_MARK = "anneal_memory"


def model_compressor(model: Any) -> Callable[[str], str]:
    """A compressor that sends the wrap prompt to a CAMEL model backend as one user message
    (``model.run``), outside any agent, so the wrap is never recorded as a turn."""

    def compress(prompt: str) -> str:
        response = model.run([{"role": "user", "content": prompt}])
        return response.choices[0].message.content or ""

    return compress


def _chat_agent_setting_id(depth: int = 3) -> Any:
    """The ChatAgent whose constructor is setting this memory's agent_id, with its
    ``agent_id`` argument as given (None: not given; "" is given: CAMEL would replace it
    with a random id, and the identity rule refuses it). None: not set by a ChatAgent
    constructor."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "__init__" and hasattr(owner, "model_backend") \
                and "agent_id" in frame.f_locals:
            return owner, frame.f_locals.get("agent_id")
        frame = frame.f_back
    return None


class AnnealAgentMemory(MemoryAdapter, AgentMemory):
    """Durable, governed memory for a CAMEL ``ChatAgent``.

    Give ``model`` (normally the agent's own model backend), ``context_creator`` or
    ``inner``: the first sizes the default working window. The continuity at the wrap is
    written by ``compress`` (prompt -> text), else ``model``, else the model of the
    ``ChatAgent`` this memory is given to. ``namespace``: whose memory (a mapping, a
    ``MemoryNamespace`` or a callable of the agent's ``agent_id``); by default the
    ``agent_id`` you gave the agent. ``wrap_on_end`` (default False) wraps after each final
    answer; otherwise call :meth:`wrap`. ``clear()`` (which ChatAgent calls on construction
    and ``reset()``) empties the working window only, never the store. ``store`` is a path
    (opened and owned: :meth:`close` closes it), a Store, or a ready MemorySession (then the
    session options go to it).
    """

    framework = "camel"
    extra = "camel"
    logger_name = LOGGER_NAME

    memory_options = options_except("memory_role", "crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 model: Any = None, inner: AgentMemory | None = None,
                 context_creator: Any = None, record_tool_calls: bool = False,
                 options: MemoryOptions | None = None, **memory: Unpack[MemoryKwargs]) -> None:
        if inner is None and context_creator is None and model is None:
            raise ValidationError("AnnealAgentMemory needs a working window: pass model= (the agent's "
                                  "model backend), context_creator=, or inner=<an AgentMemory>")
        if inner is None:
            creator = context_creator or ScoreBasedContextCreator(model.token_counter, model.token_limit)
            inner = ChatHistoryMemory(creator)
        self._init_memory(store, options, **memory)
        self.inner = inner
        self.model = model
        self.record_tool_calls = record_tool_calls
        self._query: str | None = None
        self._identity: str | None = None  # an agent_id the user gave
        self._agent_model: Any = None
        self._current: MemorySession | None = None
        if not callable(self._anneal.namespace):
            self.scope()  # a namespace the store refuses raises now

    @property
    def store(self) -> Store:
        return self.scope().store

    # --- identity -------------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The ``agent_id`` given to the agent: ``{"agent": agent_id}``."""
        return identity("the ChatAgent's agent_id", agent=context) \
            if isinstance(context, str) else None

    def scope(self) -> MemorySession:
        """The anneal session this memory reads and records into (its namespace's)."""
        if self._current is None:
            context = self._identity if self._identity is not None else self.inner.agent_id
            if not callable(self._anneal.namespace) and self._identity is None:
                context = None  # a CAMEL-made id names nobody
            self._current = self.session_for(context)
        return self._current

    # --- AgentMemory --------------------------------------------------------------------
    @property
    def agent_id(self) -> str | None:
        return self.inner.agent_id

    @agent_id.setter
    def agent_id(self, val: str | None) -> None:
        setter = _chat_agent_setting_id()
        if setter is not None:
            agent, given = setter
            self._agent_model = getattr(agent, "model_backend", None)
            if given is not None:  # ChatAgent(agent_id="") must not become the shared memory
                check_identity(given, "the ChatAgent's agent_id", "agent")
            self._identity = val if given is not None else None
        else:  # set by you: your id
            if val is not None:
                check_identity(val, "the ChatAgent's agent_id", "agent")
            self._identity = val
        self.inner.agent_id = val
        self._current = None

    def get_context_creator(self) -> Any:
        return self.inner.get_context_creator()

    def write_records(self, records: list[MemoryRecord]) -> None:
        """Record each message (user, tool results, final answers), then keep it in the window."""
        wrap = False
        for record in records:
            wrap = bool(self._record(record)) or wrap  # a failure is logged, the agent goes on
        self.inner.write_records(records)
        if wrap:
            self._end()

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
        """Scored recall from this memory's namespace (``ScoredEpisode`` list)."""
        return self.scope().recall(query, limit=limit) or []

    def delete(self, episode_id: str) -> bool:
        """Delete one stored episode of this namespace by id; False when there was none."""
        return self.scope().store.delete(episode_id)

    def framework_compressor(self, context: Any = None) -> Callable[[str], str] | None:
        """``model``, else the model of the ChatAgent this memory was given to."""
        model = self.model or self._agent_model
        return model_compressor(model) if model is not None else None

    def wrap(self, compress: Callable[[str], str] | None = None, *, namespace: Any = None
             ) -> WrapOutcome:
        """Compress this memory's episodes into its continuity with ``compress``, the
        constructor's, or the model (never loses episodes; the outcome is also kept on
        ``scope().last_wrap``)."""
        session = self.session_for(None, namespace=namespace) if namespace is not None \
            else self.scope()
        return session.wrap_first(self.compressor(compress))

    # --- helpers --------------------------------------------------------------------------
    @_safe
    def _end(self) -> None:
        self.end_run(self.scope())

    @_safe
    def _record(self, record: MemoryRecord) -> bool:
        """Record one message; True when it is a final answer (a wrap point)."""
        if (record.extra_info or {}).get(MEMORY_MARK):
            return False
        session = self.scope()
        role, message = record.role_at_backend, record.message
        if role == OpenAIBackendRole.USER:
            if message.content:
                self._query = message.content
                session.record_user_input(message.content,
                                          metadata={"role_name": message.role_name})
        elif role in (OpenAIBackendRole.FUNCTION, OpenAIBackendRole.TOOL):
            if isinstance(message, FunctionCallingMessage):
                session.record_tool_output(message.func_name or "tool", _text(message.result),
                                           arguments=message.args)
        elif role == OpenAIBackendRole.ASSISTANT:
            calls = _tool_calls(message)
            if calls:
                if self.record_tool_calls:
                    for name, args in calls:
                        session.record_decision(f"called tool {name} with {args}")
            elif message.content:
                session.record_outcome(message.content)
                return self._anneal.wrap_on_end
        return False

    @_safe
    def _with_memory(self, records: list[ContextRecord]) -> list[ContextRecord]:
        block = self.scope().memory_block(self._query)
        if not block:
            return records
        users = [r for r in records if r.memory_record.role_at_backend == OpenAIBackendRole.USER]
        # sorts just before the latest request (context creators order by timestamp)
        when = (users[-1].timestamp - 1e-6) if users else (records[-1].timestamp if records else 0.0)
        # a user-role record: recalled data must not carry system authority
        injected = MemoryRecord(message=BaseMessage.make_user_message("memory", label_memory(block)),
                                role_at_backend=OpenAIBackendRole.USER, extra_info={MEMORY_MARK: "1"},
                                timestamp=when, agent_id=self.agent_id or "")
        return [*records, ContextRecord(memory_record=injected, score=1.0, timestamp=when)]


def _tool_calls(message: BaseMessage) -> list[tuple[str, str]]:
    """(name, JSON arguments) of an assistant tool-call message, in either CAMEL shape."""
    if isinstance(message, FunctionCallingMessage):  # the shape camel-ai 0.2.80 writes
        return [(message.func_name or "tool", json.dumps(message.args, default=str))]
    calls = (message.meta_dict or {}).get("tool_calls") or []
    return [(str(c.get("function", {}).get("name")), str(c.get("function", {}).get("arguments")))
            for c in calls if isinstance(c, dict)]


def _text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, default=str)
