"""The Haystack side of the memory lifecycle: one memory object, one hook per hook point.

A Haystack hook only receives the live ``State``, never the point it runs at, so
:class:`AnnealMemory` hands out one :class:`AnnealMemoryHook` per point, all sharing the
same memory. Everything that belongs to one run (its namespace, request, memory block) is
kept per ``State``, so concurrent ``run_async`` calls on one Agent never share it.

Identity: ``Agent.run(..., hook_context={"user_id": ...})`` (also ``tenant_id``,
``project_id``, ``agent_id``) names whose memory the run is, unless ``namespace=`` says
otherwise (a mapping, a ``MemoryNamespace`` or a callable of the run's ``hook_context``).
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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

from anneal_memory import MemoryNamespace, Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
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

LOGGER_NAME = "anneal_memory.adapters.haystack"
_safe = hook_guard(LOGGER_NAME)

#: Every point of the Agent's loop this adapter hooks, in the order they fire.
HOOK_POINTS: tuple[str, ...] = (
    "before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run",
)
#: Marks the message this adapter injects, so it is never recorded, kept or injected twice.
_MEMORY_META_KEY = "anneal_memory"
#: ``hook_context`` keys that name whose memory a run is, and the namespace field of each.
IDENTITY_KEYS: dict[str, str] = {"tenant_id": "tenant", "user_id": "user",
                                 "project_id": "project", "agent_id": "agent"}


# from_dict is called once per hook point; the hooks of one serialized Agent must share one
# memory object (one store connection, one session), so identical configs map to one instance.
_LIVE: weakref.WeakValueDictionary[str, AnnealMemory] = weakref.WeakValueDictionary()


@dataclass
class _Run:
    """One Agent run as this memory sees it."""

    session: MemorySession | None
    query: str | None = None
    block: str = ""


class AnnealMemory(MemoryAdapter):
    """Episodic memory and continuity for a Haystack ``Agent``.

    ``store``: a :class:`~anneal_memory.Store`, the path of its database file (a path keeps
    the Agent serializable; this object then owns the store) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it).
    ``namespace``: whose memory a run is; by default the ``hook_context`` ids of the run
    (:data:`IDENTITY_KEYS`), and without them the whole store. ``chat_generator``: the model
    that writes the continuity at the wrap (normally the Agent's own); ``compress``
    overrides it with any ``prompt -> text`` callable. ``wrap_on_end`` (default False) wraps
    after every run; otherwise call :meth:`wrap`. ``memory_role`` is the role of the
    injected memory message ("user" by default, so recalled data never carries system
    authority).
    """

    framework = "haystack"
    extra = "haystack"
    logger_name = LOGGER_NAME

    memory_options = options_except("crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 chat_generator: Any = None, record_tool_outputs: bool = True,
                 record_tool_calls: bool = False, options: MemoryOptions | None = None,
                 **memory: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, memory)
        if chat_generator is not None and not callable(getattr(chat_generator, "run", None)):
            raise ValidationError(
                "chat_generator must be a Haystack chat generator (an object with run(messages=...)); "
                f"got {type(chat_generator).__name__}"
            )
        if opts.wrap_on_end and opts.compress is None and chat_generator is None:
            raise ValidationError(
                "wrap_on_end=True needs a model to write the continuity: pass chat_generator= "
                "(usually the Agent's own) or compress=<callable prompt -> text>"
            )
        self._options = {"session_id": opts.session_id, "recall_limit": opts.recall_limit,
                         "max_content_chars": opts.max_content_chars, "strict": opts.strict}
        self._init_memory(store, opts)
        self._db_path: str | None = _store_path(self.base_session.store)
        self.project_name = opts.project_name
        self.chat_generator = chat_generator
        self.record_tool_outputs = record_tool_outputs
        self.record_tool_calls = record_tool_calls
        self._runs: weakref.WeakKeyDictionary[State, _Run] = weakref.WeakKeyDictionary()

    @property
    def store(self) -> Store:
        return self.base_session.store

    @property
    def wrap_on_end(self) -> bool:
        return self._anneal.wrap_on_end

    # --- identity ------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The ``hook_context`` ids of a run (``user_id``, ``tenant_id``, ``project_id``,
        ``agent_id``) as a namespace; None when it has none."""
        if not isinstance(context, dict):
            return None
        return identity("the run's hook_context",
                        **{field: context.get(key) for key, field in IDENTITY_KEYS.items()})

    def session_of(self, state: State) -> MemorySession | None:
        """The memory of the run ``state`` belongs to (None: that run has no memory)."""
        run = self._runs.get(state)
        return run.session if run is not None else None

    def _run(self, state: State) -> _Run:
        run = self._runs.get(state)
        if run is None:
            session = self.run_session(dict(state.get("hook_context") or {}))
            run = self._runs[state] = _Run(session)
        return run

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
        """Take the run's identity and request: recall for it (continuity + episodes),
        record it, and put the memory message in for the first model call."""
        self._runs.pop(state, None)
        run = self._run(state)
        _set_messages(state, _without_memory(_messages(state)))
        self._take_user_input(state, run)
        self._inject(state, run)

    @_safe
    def on_before_llm(self, state: State) -> None:
        """One memory message before each model call; a user message added mid-run (human
        in the loop, exit hooks) is recalled for and recorded."""
        run = self._run(state)
        self._take_user_input(state, run)
        self._inject(state, run)

    @_safe
    def on_before_tool(self, state: State) -> None:
        """Optionally record the model's tool calls as decisions (``record_tool_calls``)."""
        session = self._run(state).session
        if not self.record_tool_calls or session is None:
            return
        last = _messages(state)[-1:]
        for call in last[0].tool_calls if last else []:
            session.record_decision(
                f"called tool {call.tool_name} with {json.dumps(call.arguments, default=str)}")

    @_safe
    def on_after_tool(self, state: State) -> None:
        """Record each tool result of the step just run, with trust="tool"."""
        session = self._run(state).session
        if not self.record_tool_outputs or session is None:
            return
        for message in _trailing_tool_messages(_messages(state)):
            for result in message.tool_call_results:
                session.record_tool_output(
                    result.origin.tool_name, _result_text(result.result),
                    arguments=dict(result.origin.arguments or {}),
                    metadata={"error": True} if result.error else None)

    @_safe
    def on_on_exit(self, state: State) -> None:
        """Record the answer the Agent stops on (deduplicated with after_run)."""
        self._record_answer(state)

    def on_after_run(self, state: State) -> None:
        """Record the final answer, take the memory message out of the history the run
        returns; wrap when ``wrap_on_end``."""
        session = self._finish(state)
        if session is not None:
            self._end(session)

    async def on_after_run_async(self, state: State) -> None:
        session = await asyncio.to_thread(self._finish, state)
        if session is not None:
            await self._aend(session)

    @_safe
    def _finish(self, state: State) -> MemorySession | None:
        _set_messages(state, _without_memory(_messages(state)))
        self._record_answer(state)
        run = self._runs.pop(state, None)
        return run.session if run is not None else None

    @_safe
    def _end(self, session: MemorySession) -> None:
        self.end_run(session)

    @_safe
    async def _aend(self, session: MemorySession) -> None:
        if self.wrap_on_end:
            await session.awrap_first(self._async_compressor())

    # --- the wrap -------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """``chat_generator`` (normally the Agent's own) writes the continuity."""
        return self._generator_compress if self.chat_generator is not None else None

    def _async_compressor(self, compress: Compress | None = None) -> Compress | None:
        """:meth:`compressor`, with the generator's async ``run_async`` in place of its sync
        ``run`` (an async wrap never blocks the event loop)."""
        chosen = self.compressor(compress)
        return self._generator_compress_async if chosen == self._generator_compress else chosen

    def wrap(self, compress: Compress | None = None, *, context: Any = None,
             namespace: Any = None) -> WrapOutcome:
        """Compress one memory's episodes into its continuity: the memory of ``namespace``,
        or of the ``hook_context`` dict ``context`` (as a run would), else the store's. With
        ``compress``, the constructor's, or ``chat_generator`` (never loses episodes; the
        outcome is also kept on that session's ``last_wrap``). An async compressor is run
        by the session."""
        return super().wrap(compress, context=context, namespace=namespace)

    async def awrap(self, compress: Compress | None = None, *, context: Any = None,
                    namespace: Any = None) -> WrapOutcome:
        """Async :meth:`wrap`: an async compressor or ``chat_generator.run_async`` is awaited."""
        session = self.session_for(context, namespace=namespace)
        return await session.awrap_first(self._async_compressor(compress))

    def _generator_compress(self, prompt: str) -> str:
        assert self.chat_generator is not None  # offered only then
        replies = self.chat_generator.run(messages=[ChatMessage.from_user(prompt)])["replies"]
        return replies[0].text or ""

    async def _generator_compress_async(self, prompt: str) -> str:
        run_async = getattr(self.chat_generator, "run_async", None)
        if run_async is None:
            return await asyncio.to_thread(self._generator_compress, prompt)
        replies = (await run_async(messages=[ChatMessage.from_user(prompt)]))["replies"]
        return replies[0].text or ""

    # --- helpers ----------------------------------------------------------------------
    def _take_user_input(self, state: State, run: _Run) -> None:
        if run.session is None:
            return
        messages = _messages(state)
        index = _last_user_index(messages)
        if index is None:
            return
        text = messages[index].text or ""
        if not text or text == run.query:
            return
        run.query = text
        run.block = run.session.memory_block(text)  # recall first: the request is not its own memory
        run.session.record_user_input(text)

    def _inject(self, state: State, run: _Run) -> None:
        """Exactly one memory message, just before the request it serves."""
        messages = _without_memory(_messages(state))
        index = _last_user_index(messages)
        if run.block and index is not None:
            if self.memory_role == "user":
                injected = ChatMessage.from_user(label_memory(run.block),
                                                 meta={_MEMORY_META_KEY: True})
            else:
                injected = ChatMessage.from_system(run.block, meta={_MEMORY_META_KEY: True})
            messages = [*messages[:index], injected, *messages[index:]]
        _set_messages(state, messages)

    def _record_answer(self, state: State) -> None:
        session = self._run(state).session
        if session is None:
            return
        for message in reversed(_messages(state)):
            if message.role == ChatRole.ASSISTANT and message.text and not message.tool_calls:
                session.record_outcome(message.text)
                return

    # --- serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Haystack's ``{"type", "init_parameters"}`` form (needs a store given by path; a
        callable namespace must be a module-level function)."""
        if self._db_path is None:
            raise ValidationError("this AnnealMemory was given a Store object with no path: "
                                  "pass the database path instead to serialize the Agent")
        params: dict[str, Any] = {
            "store": self._db_path, "namespace": _namespace_to_dict(self._anneal.namespace),
            "project_name": self.project_name,
            "wrap_on_end": self.wrap_on_end, "record_tool_outputs": self.record_tool_outputs,
            "record_tool_calls": self.record_tool_calls, "memory_role": self.memory_role,
            **self._options,
            "chat_generator": (component_to_dict(self.chat_generator, name="chat_generator")
                               if self.chat_generator is not None else None),
            "compress": serialize_callable(self._anneal.compress)
            if self._anneal.compress is not None else None,
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
        if isinstance(params.get("namespace"), str):  # a callable, by its qualified name
            params["namespace"] = deserialize_callable(params["namespace"])
        memory = cls(**params)
        _LIVE[key] = memory
        return memory


class AnnealMemoryHook:
    """One Haystack hook: runs its point's step of :class:`AnnealMemory` (whose steps log
    a failure and let the run go on). The async path does the store's work off the event
    loop, and the wrap through the generator's async ``run_async``."""

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
            await asyncio.to_thread(self.run, state)
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


def _namespace_to_dict(namespace: Any) -> Any:
    if namespace is None or isinstance(namespace, dict):
        return namespace
    if isinstance(namespace, MemoryNamespace):
        return namespace.to_dict()
    if callable(namespace):
        try:
            return serialize_callable(namespace)
        except Exception as exc:
            raise ValidationError("this AnnealMemory's namespace callable cannot be serialized "
                                  "(a lambda or a nested function): use a module-level "
                                  "function to serialize the Agent") from exc
    return dict(namespace)


def _store_path(store: Store) -> str | None:
    path = getattr(store, "path", None) or getattr(store, "db_path", None)
    return os.fspath(path) if path is not None else None


def _messages(state: State) -> list[ChatMessage]:
    return list(state.get("messages") or [])


def _set_messages(state: State, messages: list[ChatMessage]) -> None:
    # state.set appends by default: replace the list
    state.set("messages", messages, handler_override=replace_values)


def _is_memory(message: ChatMessage) -> bool:
    return bool((message.meta or {}).get(_MEMORY_META_KEY))


def _without_memory(messages: list[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if not _is_memory(m)]


def _last_user_index(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == ChatRole.USER and not _is_memory(message):
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
