"""The capability that maps Pydantic AI's run hooks onto a :class:`MemorySession`.

Hook map (all hooks are async in Pydantic AI; the store's work runs off the event loop):

- ``for_run``: a copy per run, holding that run's memory: the namespace (``namespace=``,
  often a callable of the ``RunContext`` that reads ``ctx.deps``) is resolved here, so two
  concurrent runs of different users never share a session, a memory block or a wrap.
- ``before_run``: recall for the run's prompt (continuity + recalled episodes, once per
  run; the prompt itself is never recalled back), then the prompt is recorded.
- ``wrap_model_request`` (``memory_role="user"``, the default): the memory block goes to the
  model as a labelled user part just before the run's prompt, in that request only (never
  into the message history). ``memory_role="system"``: it goes in through
  ``get_instructions`` instead.
- ``after_tool_execute``: the tool's result, ``trust="tool"``.
- ``wrap_run``: after the run, the output is recorded as the outcome, and with
  ``wrap_on_end`` the run's memory wraps; this also runs when the run fails or is
  cancelled (``after_run`` is skipped then).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart
from pydantic_ai.models import Model

from anneal_memory import Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    MemoryOptions,
    hook_guard,
    label_memory,
    options_except,
)
from anneal_memory.session import MemorySession

LOGGER_NAME = "anneal_memory.adapters.pydantic_ai"
_log = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)


def model_compressor(model: Model) -> Compress:
    """A compressor that sends the wrap prompt to ``model`` as one plain request.

    It goes through ``pydantic_ai.direct.model_request`` rather than an agent run, so no
    capability (this one included) sees the wrap as a user turn.
    """

    async def compress(prompt: str) -> str:
        response = await model_request(model, [ModelRequest.user_text_prompt(prompt)])
        return "".join(p.content for p in response.parts if isinstance(p, TextPart))

    return compress


def _prompt_text(prompt: str | Sequence[Any] | None) -> str:
    # A prompt may be a list of user content (text plus images, files...): keep the text.
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(part for part in prompt if isinstance(part, str))


def _with_memory(messages: list[Any], text: str) -> list[Any]:
    """``messages`` with ``text`` as a user part just before the newest user prompt (new
    message objects: the run's history is not touched)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ModelRequest):
            continue
        at = next((i for i, p in enumerate(message.parts) if isinstance(p, UserPromptPart)),
                  None)
        if at is None:
            continue
        parts = [*message.parts[:at], UserPromptPart(text), *message.parts[at:]]
        return [*messages[:index], dataclasses.replace(message, parts=parts),
                *messages[index + 1:]]
    return messages


def _is_default(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


@dataclasses.dataclass
class AnnealMemory(MemoryAdapter, AbstractCapability[Any]):
    """Anneal memory for a Pydantic AI agent, as a capability.

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`
    (then the session options go to it). ``namespace`` is whose memory a run uses: a
    mapping (``{"user": "alice"}``), a ``MemoryNamespace`` or a callable of the run's
    ``RunContext`` (``lambda ctx: {"user": ctx.deps.user_id}``); Pydantic AI carries no
    identity of its own, so without one every run shares the store's memory.
    ``wrap_on_end`` (default ``False``) wraps after every run; otherwise call
    :meth:`wrap` / :meth:`awrap` when the conversation ends. ``compress`` defaults to the
    model of the run.
    """

    framework = "pydantic-ai"
    extra = "pydantic-ai"
    logger_name = LOGGER_NAME

    memory: Store | MemorySession | str | os.PathLike[str]
    namespace: Any = None
    wrap_on_end: bool = False
    compress: Compress | None = None
    memory_role: str = "user"
    record_user_input: bool = True
    record_tools: bool = True
    record_outcome: bool = True
    recall_limit: int | None = None
    max_content_chars: int | None = None
    session_id: str | None = None
    crystal_store: Any = None
    strict: bool | None = None
    embedder: Any = None
    #: a run with no identity: "shared" (the store's own memory), "refuse" or "none"
    anonymous: str = "shared"
    options: MemoryOptions | None = None

    #: the shared options, fields of this dataclass
    memory_options: ClassVar[tuple[str, ...]] = options_except("project_name")

    def __post_init__(self) -> None:
        # with options=, the fields left at their defaults are its; the others override it
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        given = {name: getattr(self, name) for name in self.memory_options
                 if self.options is None or not _is_default(getattr(self, name), defaults[name])}
        opts = self._memory_options(self.options, given)
        self._init_memory(self.memory, opts)
        for name in self.memory_options:  # the fields say what this memory uses
            setattr(self, name, getattr(opts, name))
        self.memory_role = self._anneal.memory_role
        self._run_session: MemorySession | None = None
        self._block = ""
        self._model: Model | None = None
        self._parent: AnnealMemory | None = None

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live store: not spec-serializable

    # ------------------------------------------------------------------ per run
    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        """This run's copy: its own memory (namespace of ``ctx``), block and model."""
        run = copy.copy(self)
        run._parent = self
        run._block = ""
        run._run_session = None
        run._model = ctx.model if isinstance(ctx.model, Model) else None
        if run._model is not None:
            self._model = run._model  # the model an explicit wrap() uses
        run._run_session = self.run_session(ctx)
        return run

    def framework_compressor(self, context: Any = None) -> Compress | None:
        model = self._model or (self._parent._model if self._parent is not None else None)
        return model_compressor(model) if model is not None else None

    # ------------------------------------------------------------------ recall
    def get_instructions(self) -> Callable[[RunContext[Any]], str] | None:
        if self.memory_role != "system":
            return None

        def memory_instructions(ctx: RunContext[Any]) -> str:
            return self._block

        return memory_instructions

    @_safe
    async def before_run(self, ctx: RunContext[Any]) -> None:
        session = self._run_session
        if session is None:
            return
        query = _prompt_text(ctx.prompt)
        self._block = await session.amemory_block(query or None) or ""
        if self.record_user_input and query:
            await session.arecord_user_input(query)

    async def wrap_model_request(self, ctx: RunContext[Any], *, request_context: Any,
                                 handler: Any) -> Any:
        if self.memory_role == "user" and self._block:
            request_context.messages = _with_memory(list(request_context.messages),
                                                    label_memory(self._block))
        return await handler(request_context)

    # ------------------------------------------------------------------ record
    async def after_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any,
                                 args: Any, result: Any) -> Any:
        await self._record_tool(call, args, result)
        return result

    @_safe
    async def _record_tool(self, call: Any, args: Any, result: Any) -> None:
        if self.record_tools and self._run_session is not None:
            await self._run_session.arecord_tool_output(call.tool_name, result, arguments=args)

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        try:
            result = await handler()
        except BaseException:
            await self._end(ctx, None)  # a failed or cancelled run still ends its memory
            raise
        await self._end(ctx, result)
        return result

    @_safe
    async def _end(self, ctx: RunContext[Any], result: Any) -> None:
        session = self._run_session
        if session is None:
            return
        if self.record_outcome and result is not None and result.output is not None:
            await session.arecord_outcome(result.output)
        await self.aend_run(session, ctx)
