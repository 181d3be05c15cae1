"""The capability that maps Pydantic AI's run hooks onto a :class:`MemorySession`.

Hook map (all hooks are async in Pydantic AI):

- ``before_run``: recall for the run's prompt (continuity + recalled episodes, computed once
  per run), then record the prompt as user input.
- ``get_instructions``: a callable, evaluated before every model request, that returns that
  memory block. It is a labelled data section built by the core session.
- ``after_tool_execute``: record the tool's result with ``trust="tool"``.
- ``after_run``: record the final output as the outcome; wrap when ``wrap_on_end``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelRequest, TextPart
from pydantic_ai.models import Model

from anneal_memory import Store
from anneal_memory.adapters import hook_guard, open_session
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.pydantic_ai"
_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown, sync or async
Compress = Callable[[str], "str | Awaitable[str]"]


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


@dataclasses.dataclass
class AnnealMemory(AbstractCapability[Any]):
    """Anneal memory for a Pydantic AI agent, as a capability.

    ``memory`` is a :class:`~anneal_memory.Store` or a store path (a session is made for it;
    ``memory.session.close()`` closes a store it opened) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it). ``wrap_on_end`` (default ``False``) wraps
    after every run; otherwise call :meth:`wrap` when the conversation ends. ``compress``
    defaults to the model of the last run.
    """

    memory: Store | MemorySession | str | os.PathLike[str]
    wrap_on_end: bool = False
    compress: Compress | None = None
    record_user_input: bool = True
    record_tools: bool = True
    record_outcome: bool = True
    recall_limit: int | None = None
    max_content_chars: int | None = None
    session_id: str | None = None
    crystal_store: Any = None
    strict: bool | None = None

    def __post_init__(self) -> None:
        MemorySession.check_compress(self.compress)
        self.session: MemorySession = open_session(
            self.memory, LOGGER_NAME, session_id=self.session_id,
            crystal_store=self.crystal_store, recall_limit=self.recall_limit,
            max_content_chars=self.max_content_chars, strict=self.strict)
        self._block = ""
        self._last_model: Model | None = None

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live store: not spec-serializable

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        # Per-run copy: the memory block of one run must not leak into a concurrent one.
        # The session (and so the store and its de-duplication) stays shared.
        run_copy = copy.copy(self)
        run_copy._block = ""
        run_copy._parent = self
        return run_copy

    def get_instructions(self) -> Callable[[RunContext[Any]], str]:
        def memory_instructions(ctx: RunContext[Any]) -> str:
            return self._block

        return memory_instructions

    @_safe
    async def before_run(self, ctx: RunContext[Any]) -> None:
        self._remember_model(ctx)
        query = _prompt_text(ctx.prompt)
        self._block = self.session.memory_block(query or None) or ""
        if self.record_user_input and query:
            self.session.record_user_input(query)

    async def after_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any,
                                 args: Any, result: Any) -> Any:
        self._record_tool(call, args, result)
        return result

    @_safe
    def _record_tool(self, call: Any, args: Any, result: Any) -> None:
        if self.record_tools:
            self.session.record_tool_output(call.tool_name, result, arguments=args)

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        await self._end_run(result)
        return result

    @_safe
    async def _end_run(self, result: Any) -> None:
        if self.record_outcome:
            self.session.record_outcome(result.output)
        if self.wrap_on_end:
            await self.wrap()

    async def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress this session's episodes into the continuity (the wrap).

        Uses ``compress``, else the capability's ``compress``, else the last run's model.
        Never raises unless ``strict``: a failed or refused wrap keeps every episode, and
        without a compressor (no ``compress``, no run yet) the outcome is ``failed``. The
        outcome is also kept on ``session.last_wrap``.
        """
        model = self._parent_or_self()._last_model
        return await self.session.awrap_first(compress, self.compress,
                                              model_compressor(model) if model is not None else None)

    def wrap_sync(self, compress: Compress | None = None) -> WrapOutcome:
        """:meth:`wrap` for code that runs the agent with ``run_sync`` (no running event loop)."""
        return asyncio.run(self.wrap(compress))

    def _remember_model(self, ctx: RunContext[Any]) -> None:
        if isinstance(ctx.model, Model):
            self._parent_or_self()._last_model = ctx.model

    def _parent_or_self(self) -> AnnealMemory:
        return getattr(self, "_parent", self)

