"""An ADK ``BasePlugin`` that runs the memory lifecycle around every ``Runner`` run.

Hook map (plugins are app-wide and run before each agent's own callbacks):

- ``before_model_callback``: the continuity of the run's user (``app_name``, ``user_id``)
  goes to the model, read once per run: as a labelled user turn before the user's message
  (``memory_role="user"``, the default) or appended to the system instruction
  (``"system"``). Recall for the user's message is inserted the way ADK's own
  ``PreloadMemoryTool`` does it: a transient user turn listing past memories, read through
  the runner's memory service with the run's ``app_name`` / ``user_id``, so one user never
  sees another's. Relayed (tool) memories say so in their author line.
- ``after_run_callback``: the session is saved to that user's memory (ADK never does that
  by itself), then, with ``wrap_on_end=True``, that user's memory wraps with ``compress``
  or the root agent's model.

Every hook logs its own failures (logger ``anneal_memory.adapters.google_adk``) and the run
goes on, unless the service's session is ``strict``.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.genai import types

from anneal_memory.adapters import Compress, MemoryAdapter, MemoryOptions, hook_guard, label_memory
from anneal_memory.adapters._base import check_memory_role
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome, in_transcript, transcript_keys

from ._service import LOGGER_NAME, URI_OPTIONS, AdkUser, AnnealMemoryService, _text_of
from ._uri import ServiceUriError, parse_uri

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs

_safe = hook_guard(LOGGER_NAME)


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


def _said(content: Any) -> list[str]:
    """A request turn's texts as episodes hold them: its text, and each tool result as
    the JSON a tool output episode records."""
    out = [t] if (t := _text_of(content)) else []
    for part in content.parts or []:
        response = getattr(part, "function_response", None)
        if response is not None and response.response is not None:
            out.append(json.dumps(response.response, default=str, ensure_ascii=False))
    return out


class _Unshown:
    """A tool context whose ``search_memory`` leaves out the memories whose text the
    model already receives this turn (the session's events in the request)."""

    def __init__(self, context: Any, shown: set[str]) -> None:
        self._context = context
        self._shown = shown

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def search_memory(self, query: str) -> Any:
        response = await self._context.search_memory(query)
        if self._shown and getattr(response, "memories", None):
            response.memories = [m for m in response.memories
                                 if not in_transcript(_text_of(m.content), self._shown)]
        return response


def _user_of(context: Any) -> AdkUser:
    """The (app_name, user_id) of a callback or invocation context."""
    session = getattr(context, "session", None)
    if session is None:
        session = getattr(getattr(context, "_invocation_context", None), "session", None)
    return AdkUser(str(session.app_name), str(session.user_id))


def _not_created_yet(uri: str) -> bool:
    """Whether ``uri`` is a well-formed ``anneal:`` URI of a SQLite store that does not
    exist yet, in a folder that does (a URI with any other fault raises
    :class:`ServiceUriError` here, as the service would)."""
    parsed = parse_uri(uri, URI_OPTIONS)
    if not parsed.uri.split(":", 1)[0].lower() == "anneal":
        return False
    folder = os.path.dirname(parsed.location)
    if not os.path.isdir(folder):
        raise ServiceUriError(f"the store of {parsed.shown!r} cannot be opened: its folder "
                              f"{folder!r} does not exist (create it first)")
    return not os.path.exists(parsed.location)


def _same_memory(service: Any, ours: AnnealMemoryService) -> bool:
    """Whether the runner's memory service is another AnnealMemoryService on our database
    with the same mapping of users (ADK's tooling built it from the same URI)."""
    if not isinstance(service, AnnealMemoryService):
        return False
    a, b = service.store, ours.store
    return (a.dsn or str(a.path)) == (b.dsn or str(b.path)) and \
        getattr(a, "namespace", None) == getattr(b, "namespace", None) and \
        service._anneal.namespace is None and ours._anneal.namespace is None


class AnnealMemoryPlugin(MemoryAdapter, BasePlugin):
    """Memory for every agent of an ADK app: continuity + recall in, session and wrap out.

    ``memory`` is the :class:`AnnealMemoryService` (also pass it as the runner's
    ``memory_service`` so that recall, ``PreloadMemoryTool`` and ``load_memory`` read it),
    or an ``anneal:`` URI, for an app that ADK's tooling runs (``adk web``, ``adk
    api_server``) with the same URI as ``--memory_service_uri``: the plugin opens its own
    service on that store and the runner's memory service (ADK's, from the URI) serves
    recall. A SQLite store that does not exist yet is created at the plugin's first run, so
    an agent module that builds the plugin creates no file when it is imported (a malformed
    URI, a missing folder or a bad option is still refused at construction).
    ``wrap_on_end`` (default ``False``) wraps the run's user's memory after every run;
    otherwise ``await plugin.awrap(app_name=..., user_id=...)`` when a conversation ends.
    ``inject_recall=False`` when the agent already has ``PreloadMemoryTool`` (it would add
    the same memories twice).
    """

    framework = "google-adk"
    extra = "google-adk"
    logger_name = LOGGER_NAME

    #: the session's options are the service's
    memory_options = ("compress", "wrap_on_end", "memory_role")

    def __init__(self, memory: AnnealMemoryService | str, *, name: str = "anneal_memory",
                 inject_continuity: bool = True, inject_recall: bool = True,
                 save_session: bool = True, options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, keywords)
        self._own_service: AnnealMemoryService | None = None
        self._pending: tuple[str, MemoryOptions] | None = None
        own = MemoryOptions(compress=opts.compress, wrap_on_end=opts.wrap_on_end,
                            memory_role=opts.memory_role)
        if isinstance(memory, str) and _not_created_yet(memory):
            # an app module (agent.py) builds its plugin when imported: a SQLite store that
            # does not exist yet is created at the plugin's first use, not by the import
            super().__init__(name=name)
            MemorySession.check_compress(own.compress)  # what _init_memory checks, now
            check_memory_role(self.default_memory_role if own.memory_role is None
                              else own.memory_role)
            if not isinstance(own.wrap_on_end, bool):
                raise ValidationError(f"wrap_on_end must be True or False, not {own.wrap_on_end!r}")
            self._pending = (memory, own)
        else:
            if isinstance(memory, str):
                memory = self._own_service = AnnealMemoryService(uri=memory)
            if not isinstance(memory, AnnealMemoryService):
                raise ValidationError(
                    f"memory must be an AnnealMemoryService or an anneal: URI, not "
                    f"{type(memory).__name__}: pass AnnealMemoryService(Store('memory.db'))"
                )
            super().__init__(name=name)
            self._init_memory(memory.base_session, own)
            self.memory = memory
        self.inject_continuity = inject_continuity
        self.inject_recall = inject_recall
        self.save_session = save_session
        self._preload = PreloadMemoryTool()
        self._continuity: OrderedDict[str, str] = OrderedDict()  # invocation id -> block
        self._last_model: BaseLlm | None = None

    @property
    def memory(self) -> AnnealMemoryService:
        """The plugin's memory service (opened now if it was given as the URI of a store
        not created yet)."""
        self._open_pending()
        return self.__dict__["_memory_service"]

    @memory.setter
    def memory(self, service: AnnealMemoryService) -> None:
        self.__dict__["_memory_service"] = service

    @property  # type: ignore[override]
    def _anneal(self) -> Any:
        self._open_pending()
        return self.__dict__["_anneal_state"]

    @_anneal.setter
    def _anneal(self, state: Any) -> None:
        self.__dict__["_anneal_state"] = state

    def _open_pending(self) -> None:
        """Open the service of a URI whose store did not exist at construction."""
        pending = self.__dict__.get("_pending")
        if pending is None:
            return
        uri, own = pending
        service = AnnealMemoryService(uri=uri)
        try:
            self._init_memory(service.base_session, own)
        except Exception:
            service.close()
            raise
        self._own_service, self._pending = service, None
        self.memory = service

    async def close(self) -> None:
        """What ADK's runner awaits when it closes (``adk web`` at shutdown): closes the
        service the plugin opened from a URI; a service you passed stays open."""
        if self._own_service is not None:
            self._own_service.close()

    @property
    def session(self) -> MemorySession:
        """The service's own memory (its fixed ``namespace=``'s, else the store's; a
        callable namespace refuses, naming ``session_for``)."""
        return self.memory.session

    def session_for(self, context: Any = None, *, namespace: Any = None) -> MemorySession:
        """The service's memory of ``context`` (an :class:`AdkUser` or an ADK context)."""
        if namespace is not None or context is None:
            return self.memory.session_for(context, namespace=namespace)
        user = context if isinstance(context, AdkUser) else _user_of(context)
        return self.memory.memory_for(user.app_name, user.user_id)

    # --- before each model call ----------------------------------------------------------
    async def before_model_callback(self, *, callback_context: Any, llm_request: LlmRequest) -> None:
        if self.inject_continuity:
            await self._inject_continuity(callback_context, llm_request)
        if self.inject_recall:
            await self._inject_recall(callback_context, llm_request)
        return None

    @_safe
    async def _inject_continuity(self, callback_context: Any, llm_request: LlmRequest) -> None:
        key = callback_context.invocation_id
        if key not in self._continuity:
            self._continuity[key] = await self.session_for(callback_context).astart() or ""
            while len(self._continuity) > 1024:
                self._continuity.popitem(last=False)
        block = self._continuity[key]
        if not block:
            return
        if self.memory_role == "system":
            llm_request.append_instructions([label_memory(block)])
            return
        contents = llm_request.contents
        at = next((i for i in range(len(contents) - 1, -1, -1) if contents[i].role == "user"
                   and any(p.text for p in contents[i].parts or [])), len(contents))
        contents.insert(at, types.Content(role="user", parts=[types.Part(text=label_memory(block))]))

    @_safe
    async def _inject_recall(self, callback_context: Any, llm_request: LlmRequest) -> None:
        # the session's events are already in the request: recall leaves those out
        shown = transcript_keys([t for c in llm_request.contents or [] for t in _said(c)])
        await self._preload.process_llm_request(
            tool_context=_Unshown(_tool_context(callback_context), shown),
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
            if runner_service is not None and runner_service is not self.memory \
                    and not _same_memory(runner_service, self.memory):
                services.append(runner_service)
            for service in services:
                await self._save(service, invocation_context.session)
        await self._end(invocation_context, model)

    @_safe  # a failing service does not keep the session out of the others
    async def _save(self, service: Any, session: Any) -> None:
        await service.add_session_to_memory(session)

    @_safe
    async def _end(self, invocation_context: Any, model: BaseLlm | None) -> None:
        await self.aend_run(self.session_for(_user_of(invocation_context)), model)

    @staticmethod
    def _model_of(agent: Any) -> BaseLlm | None:
        try:
            model = agent.canonical_model if agent is not None else None
        except Exception:  # an agent without a model (workflow agents)
            return None
        return model if isinstance(model, BaseLlm) else None

    # --- session end ---------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """The run's root agent's model, else the last one a run used."""
        model = context if isinstance(context, BaseLlm) else self._last_model
        return model_compressor(model) if model is not None else None

    def _whose(self, app_name: str | None, user_id: str | None, context: Any,
               namespace: Any) -> Any:
        if app_name is not None or user_id is not None:
            context = AdkUser(str(app_name or ""), str(user_id or ""))
        if context is None and namespace is None:
            raise ValidationError("say whose memory to wrap: app_name= and user_id= (or "
                                  "namespace=)")
        return context

    async def awrap(self, compress: Compress | None = None, *, app_name: str | None = None,
                    user_id: str | None = None, context: Any = None,
                    namespace: Any = None) -> WrapOutcome:
        """Compress one user's episodes since their last wrap into their continuity: the
        user of ``app_name`` / ``user_id`` (or ``namespace=``). Uses ``compress``, else the
        plugin's ``compress``, else the model of the last run's root agent. A failed or
        refused wrap keeps every episode for the next one."""
        context = self._whose(app_name, user_id, context, namespace)
        return await super().awrap(compress, context=context, namespace=namespace)

    def wrap(self, compress: Compress | None = None, *, app_name: str | None = None,
             user_id: str | None = None, context: Any = None,
             namespace: Any = None) -> WrapOutcome:
        """:meth:`awrap` outside an event loop."""
        context = self._whose(app_name, user_id, context, namespace)
        return super().wrap(compress, context=context, namespace=namespace)
