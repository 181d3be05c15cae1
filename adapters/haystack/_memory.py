"""The Haystack side of the memory lifecycle: one memory object, one hook per hook point.

A Haystack hook only receives the live ``State``, never the point it runs at, so
:class:`AnnealMemory` hands out one :class:`AnnealMemoryHook` per point, all sharing the
same :class:`~anneal_memory.session.MemorySession`.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from haystack.components.agents.state.state import State
from haystack.components.agents.state.state_utils import replace_values
from haystack.core.serialization import (
    component_from_dict,
    component_to_dict,
    generate_qualified_class_name,
    import_class_by_name,
)
from haystack.dataclasses import ChatMessage, ChatRole
from haystack.utils.callable_serialization import deserialize_callable, serialize_callable

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, check_memory_role, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.haystack"
_safe = hook_guard(LOGGER_NAME)

#: Every point of the Agent's loop this adapter hooks, in the order they fire.
HOOK_POINTS: tuple[str, ...] = (
    "before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run",
)
#: Marks the message this adapter injects, so it is never recorded or injected twice.
_MEMORY_META_KEY = "anneal_memory"

Compress = Callable[[str], "str | Awaitable[str]"]

# from_dict is called once per hook point; the hooks of one serialized Agent must share one
# memory object (one store connection, one session), so identical configs map to one instance.
_LIVE: weakref.WeakValueDictionary[str, AnnealMemory] = weakref.WeakValueDictionary()


class AnnealMemory:
    """Episodic memory and continuity for a Haystack ``Agent``.

    ``store``: a :class:`~anneal_memory.Store`, the path of its database file (a path keeps
    the Agent serializable; this object then owns the store) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it). ``chat_generator``: the model that writes the continuity at the
    wrap (normally the Agent's own); ``compress`` overrides it with any ``prompt -> text``
    callable. ``wrap_on_end`` (default False) wraps after every run; otherwise call
    :meth:`wrap`. ``memory_role`` is the role of the injected memory message ("user" by
    default, so recalled data never carries system authority).
    """

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        project_name: str | None = None,
        session_id: str | None = None,
        chat_generator: Any = None,
        compress: Compress | None = None,
        wrap_on_end: bool = False,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        record_tool_outputs: bool = True,
        record_tool_calls: bool = False,
        memory_role: Literal["user", "system"] = "user",
        strict: bool | None = None,
    ) -> None:
        check_memory_role(memory_role)
        if chat_generator is not None and not callable(getattr(chat_generator, "run", None)):
            raise ValidationError(
                "chat_generator must be a Haystack chat generator (an object with run(messages=...)); "
                f"got {type(chat_generator).__name__}"
            )
        if wrap_on_end and compress is None and chat_generator is None:
            raise ValidationError(
                "wrap_on_end=True needs a model to write the continuity: pass chat_generator= "
                "(usually the Agent's own) or compress=<callable prompt -> text>"
            )
        self._options = {"session_id": session_id, "recall_limit": recall_limit,
                         "max_content_chars": max_content_chars, "strict": strict}
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      project_name=project_name, **self._options)
        self._db_path: str | None = _store_path(self.session.store)
        self.project_name = project_name
        self.chat_generator = chat_generator
        self.record_tool_outputs = record_tool_outputs
        self.record_tool_calls = record_tool_calls
        self.memory_role = memory_role
        self._handled_input: str | None = None

    @property
    def store(self) -> Store:
        return self.session.store

    # --- wiring -----------------------------------------------------------------
    def hooks(self, existing: dict[str, list[Any]] | None = None,
              points: tuple[str, ...] = HOOK_POINTS) -> dict[str, list[Any]]:
        """The ``hooks=`` mapping for ``Agent``: ours appended to ``existing`` (if any)."""
        unknown = set(points) - set(HOOK_POINTS)
        if unknown:
            raise ValidationError(f"unknown hook points {sorted(unknown)}: use some of {HOOK_POINTS}")
        merged = {p: list(hs) for p, hs in (existing or {}).items()}
        for point in points:
            merged.setdefault(point, []).append(AnnealMemoryHook(self, point))
        return merged

    # --- what each hook point does ------------------------------------------------
    @_safe
    def on_before_run(self, state: State) -> None:
        """Record the user's request; inject continuity + recall as a labelled message."""
        self._handled_input = None
        self._take_user_input(state)

    @_safe
    def on_before_llm(self, state: State) -> None:
        """A user message added mid-run (human in the loop, exit hooks) gets the same treatment."""
        self._take_user_input(state)

    @_safe
    def on_before_tool(self, state: State) -> None:
        """Optionally record the model's tool calls as decisions (``record_tool_calls``)."""
        if not self.record_tool_calls:
            return
        last = _messages(state)[-1:]
        for call in last[0].tool_calls if last else []:
            self.session.record_decision(
                f"called tool {call.tool_name} with {json.dumps(call.arguments, default=str)}")

    @_safe
    def on_after_tool(self, state: State) -> None:
        """Record each tool result of the step just run, with trust="tool"."""
        if not self.record_tool_outputs:
            return
        for message in _trailing_tool_messages(_messages(state)):
            for result in message.tool_call_results:
                self.session.record_tool_output(
                    result.origin.tool_name, _result_text(result.result),
                    arguments=dict(result.origin.arguments or {}),
                    metadata={"error": True} if result.error else None)

    @_safe
    def on_on_exit(self, state: State) -> None:
        """Record the answer the Agent stops on (deduplicated with after_run)."""
        self._record_answer(state)

    @_safe
    def on_after_run(self, state: State) -> None:
        """Record the final answer; wrap when ``wrap_on_end``."""
        self._record_answer(state)
        if self.wrap_on_end:
            self.wrap()

    @_safe
    async def on_after_run_async(self, state: State) -> None:
        self._record_answer(state)
        if self.wrap_on_end:
            await self.awrap()

    # --- the wrap -------------------------------------------------------------------
    def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress this session's episodes into the continuity with ``compress``, the
        constructor's, or ``chat_generator`` (never loses episodes; the outcome is also kept
        on ``session.last_wrap``). An async compressor is run by the session."""
        model = self._generator_compress if self.chat_generator is not None else None
        return self.session.wrap_first(compress, self.compress, model)

    async def awrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Async :meth:`wrap`: an async compressor or ``chat_generator.run_async`` is awaited."""
        model = self._generator_compress_async if self.chat_generator is not None else None
        return await self.session.awrap_first(compress, self.compress, model)

    def _generator_compress(self, prompt: str) -> str:
        assert self.chat_generator is not None  # wrap offers this compressor only then
        replies = self.chat_generator.run(messages=[ChatMessage.from_user(prompt)])["replies"]
        return replies[0].text or ""

    async def _generator_compress_async(self, prompt: str) -> str:
        run_async = getattr(self.chat_generator, "run_async", None)
        if run_async is None:
            return await asyncio.to_thread(self._generator_compress, prompt)
        replies = (await run_async(messages=[ChatMessage.from_user(prompt)]))["replies"]
        return replies[0].text or ""

    # --- helpers ----------------------------------------------------------------------
    def _take_user_input(self, state: State) -> None:
        messages = _messages(state)
        index = _last_user_index(messages)
        if index is None:
            return
        text = messages[index].text or ""
        if not text or text == self._handled_input:
            return
        self._handled_input = text
        block = self.session.memory_block(text)  # recall first: the request is not its own memory
        self.session.record_user_input(text)
        if not block:
            return
        make = ChatMessage.from_user if self.memory_role == "user" else ChatMessage.from_system
        injected = make(block, meta={_MEMORY_META_KEY: True})
        # state.set appends by default; put the memory just before the request it serves.
        updated = [*messages[:index], injected, *messages[index:]]
        state.set("messages", updated, handler_override=replace_values)

    def _record_answer(self, state: State) -> None:
        for message in reversed(_messages(state)):
            if message.role == ChatRole.ASSISTANT and message.text and not message.tool_calls:
                self.session.record_outcome(message.text)
                return

    def close(self) -> None:
        """Close the store if this object opened it."""
        self.session.close()

    # --- serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Haystack's ``{"type", "init_parameters"}`` form (needs a store given by path)."""
        if self._db_path is None:
            raise ValidationError("this AnnealMemory was given a Store object with no path: "
                                  "pass the database path instead to serialize the Agent")
        params: dict[str, Any] = {
            "store": self._db_path, "project_name": self.project_name,
            "wrap_on_end": self.wrap_on_end, "record_tool_outputs": self.record_tool_outputs,
            "record_tool_calls": self.record_tool_calls, "memory_role": self.memory_role,
            **self._options,
            "chat_generator": (component_to_dict(self.chat_generator, name="chat_generator")
                               if self.chat_generator is not None else None),
            "compress": serialize_callable(self.compress) if self.compress is not None else None,
        }
        return {"type": generate_qualified_class_name(type(self)), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnnealMemory:
        """Rebuild from :meth:`to_dict`; identical configs share one live instance."""
        key = json.dumps(data, sort_keys=True, default=str)
        live = _LIVE.get(key)
        if live is not None:
            return live
        params = dict(data["init_parameters"])
        generator = params.get("chat_generator")
        if generator is not None:
            params["chat_generator"] = component_from_dict(
                import_class_by_name(generator["type"]), generator, name="chat_generator")
        if params.get("compress") is not None:
            params["compress"] = deserialize_callable(params["compress"])
        memory = cls(**params)
        _LIVE[key] = memory
        return memory


class AnnealMemoryHook:
    """One Haystack hook: runs its point's step of :class:`AnnealMemory` (whose steps log
    a failure and let the run go on)."""

    def __init__(self, memory: AnnealMemory, point: str) -> None:
        if point not in HOOK_POINTS:
            raise ValidationError(f"unknown hook point {point!r}: use one of {HOOK_POINTS}")
        self.memory = memory
        self.point = point
        self.allowed_hook_points = (point,)

    def run(self, state: State) -> None:
        getattr(self.memory, f"on_{self.point}")(state)

    async def run_async(self, state: State) -> None:
        handler = getattr(self.memory, f"on_{self.point}_async", None)
        if handler is None:
            self.run(state)
        else:
            await handler(state)

    def close(self) -> None:
        if self.point == "after_run":  # one hook per memory closes it, not six
            self.memory.close()

    def to_dict(self) -> dict[str, Any]:
        return {"type": generate_qualified_class_name(type(self)),
                "init_parameters": {"point": self.point, "memory": self.memory.to_dict()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnnealMemoryHook:
        params = data["init_parameters"]
        return cls(AnnealMemory.from_dict(params["memory"]), params["point"])


def _store_path(store: Store) -> str | None:
    path = getattr(store, "path", None) or getattr(store, "db_path", None)
    return os.fspath(path) if path is not None else None


def _messages(state: State) -> list[ChatMessage]:
    return list(state.get("messages") or [])


def _last_user_index(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == ChatRole.USER and not (message.meta or {}).get(_MEMORY_META_KEY):
            return index
    return None


def _trailing_tool_messages(messages: list[ChatMessage]) -> list[ChatMessage]:
    tail: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role != ChatRole.TOOL:
            break
        tail.append(message)
    return tail[::-1]


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, list):  # text/image/file content parts
        return "\n".join(getattr(part, "text", None) or f"[{type(part).__name__}]" for part in result)
    return str(result)

