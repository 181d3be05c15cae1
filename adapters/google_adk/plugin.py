"""An ADK ``BasePlugin`` that runs the memory lifecycle around every ``Runner`` run.

Hook map (plugins are app-wide and run before each agent's own callbacks):

- ``before_model_callback``: the continuity (the store's session-start block) is appended
  to the system instruction, and recall for the user's message is inserted the way ADK's own
  ``PreloadMemoryTool`` does it: a transient user turn listing past memories, read through
  the runner's memory service with the run's ``app_name`` / ``user_id``, so one user never
  sees another's. Relayed (tool) memories say so in their author line.
- ``after_run_callback``: the session is saved to memory (ADK never does that by itself),
  then, with ``wrap_on_end=True``, the wrap runs with ``compress`` or the root agent's model.

Every hook logs its own failures (logger ``anneal_memory.adapters.google_adk``) and the run
goes on, unless the service's session is ``strict``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.genai import types

from anneal_memory.adapters import hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

from .service import LOGGER_NAME, AnnealMemoryService

_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown, sync or async
Compress = Callable[[str], "str | Awaitable[str]"]


def model_compressor(llm: BaseLlm) -> Compress:
    """A compressor that sends the wrap prompt to an ADK model as one user turn.

    It calls ``generate_content_async`` directly, outside any run, so no agent, callback or
    plugin sees the wrap as part of the conversation.
    """

    async def compress(prompt: str) -> str:
        request = LlmRequest(model=getattr(llm, "model", None),
                             contents=[types.Content(role="user", parts=[types.Part(text=prompt)])])
        texts: list[str] = []
        async for response in llm.generate_content_async(request, stream=False):
            if response.content and response.content.parts:
                texts.extend(p.text for p in response.content.parts
                             if p.text and not getattr(p, "thought", False))
        return "".join(texts)

    return compress


def _tool_context(callback_context: Any) -> Any:
    # ADK 2.x unified the contexts; 1.x has search_memory on ToolContext only.
    if hasattr(callback_context, "search_memory"):
        return callback_context
    from google.adk.tools.tool_context import ToolContext

    return ToolContext(callback_context._invocation_context)


class AnnealMemoryPlugin(BasePlugin):
    """Memory for every agent of an ADK app: continuity + recall in, session and wrap out.

    ``memory`` is the :class:`AnnealMemoryService` (also pass it as the runner's
    ``memory_service`` so that recall, ``PreloadMemoryTool`` and ``load_memory`` read it).
    ``wrap_on_end`` (default ``False``) wraps after every run; otherwise ``await
    plugin.wrap()`` when the conversation ends. ``inject_recall=False`` when the agent
    already has ``PreloadMemoryTool`` (it would add the same memories twice).
    """

    def __init__(
        self,
        memory: AnnealMemoryService,
        *,
        name: str = "anneal_memory",
        wrap_on_end: bool = False,
        compress: Compress | None = None,
        inject_continuity: bool = True,
        inject_recall: bool = True,
        save_session: bool = True,
    ) -> None:
        if not isinstance(memory, AnnealMemoryService):
            raise ValidationError(
                f"memory must be an AnnealMemoryService, not {type(memory).__name__}: "
                "pass AnnealMemoryService(Store('memory.db'))"
            )
        super().__init__(name=name)
        self.memory = memory
        self.wrap_on_end = wrap_on_end
        self.compress = MemorySession.check_compress(compress)
        self.inject_continuity = inject_continuity
        self.inject_recall = inject_recall
        self.save_session = save_session
        self._preload = PreloadMemoryTool()
        self._continuity: dict[str, str] = {}  # invocation id -> block, read once per run
        self._last_model: BaseLlm | None = None

    @property
    def session(self) -> MemorySession:
        """The service's session: its ``strict`` decides whether hook failures raise, and
        its ``last_wrap`` holds the last wrap's outcome."""
        return self.memory.session

    # --- before each model call ----------------------------------------------------------
    async def before_model_callback(self, *, callback_context: Any, llm_request: LlmRequest) -> None:
        if self.inject_continuity:
            self._inject_continuity(callback_context, llm_request)
        if self.inject_recall:
            await self._inject_recall(callback_context, llm_request)
        return None

    @_safe
    def _inject_continuity(self, callback_context: Any, llm_request: LlmRequest) -> None:
        key = callback_context.invocation_id
        if key not in self._continuity:
            self._continuity[key] = self.session.start() or ""
        if self._continuity[key]:
            llm_request.append_instructions([self._continuity[key]])

    @_safe
    async def _inject_recall(self, callback_context: Any, llm_request: LlmRequest) -> None:
        await self._preload.process_llm_request(tool_context=_tool_context(callback_context),
                                                llm_request=llm_request)

    # --- after the run -------------------------------------------------------------------
    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self._continuity.pop(getattr(invocation_context, "invocation_id", None), None)
        model = self._model_of(getattr(invocation_context, "agent", None))
        if model is not None:
            self._last_model = model
        if self.save_session:
            services = [self.memory]
            runner_service = getattr(invocation_context, "memory_service", None)
            if runner_service is not None and runner_service is not self.memory:
                services.append(runner_service)
            for service in services:
                await self._save(service, invocation_context.session)
        if self.wrap_on_end:
            await self.wrap()

    @_safe  # a failing service does not keep the session out of the others
    async def _save(self, service: Any, session: Any) -> None:
        await service.add_session_to_memory(session)

    @staticmethod
    def _model_of(agent: Any) -> BaseLlm | None:
        try:
            model = agent.canonical_model if agent is not None else None
        except Exception:  # an agent without a model (workflow agents)
            return None
        return model if isinstance(model, BaseLlm) else None

    # --- session end ---------------------------------------------------------------------
    async def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress the episodes since the last wrap into the continuity.

        Uses ``compress``, else the plugin's ``compress``, else the model of the last run's
        root agent. A failed or refused wrap keeps every episode for the next one; the
        outcome is also kept on ``plugin.session.last_wrap``.
        """
        model = self._last_model
        return await self.session.awrap_first(compress, self.compress,
                                              model_compressor(model) if model else None)
