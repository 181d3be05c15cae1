"""The hooks that put a Claude Agent SDK session on a :class:`MemorySession`.

Hook map (``ClaudeAgentOptions(hooks=memory.hooks)``; every SDK hook is a coroutine):

- ``UserPromptSubmit``: the continuity (first prompt of an SDK session) and the recall for
  the prompt go back as ``additionalContext``: the CLI hands it to the model next to the
  user's message, labelled as recalled data, never as a system instruction. Then the prompt
  is recorded (``context``); it is never recalled back to itself.
- ``PostToolUse`` / ``PostToolUseFailure``: the tool's output (or its error) is recorded as
  an ``observation`` with ``trust="tool"``. The adapter's own memory tools are not recorded.
- ``Stop``: the last assistant message is recorded as the ``outcome``; with ``wrap_on_end``
  the session wraps through ``compress``. A failed, refused or timed-out wrap keeps every
  episode for the next one.

Identity: every hook input carries the SDK's ``session_id`` and ``cwd``. The memory is the
namespace ``namespace=`` names (a mapping, a ``MemoryNamespace`` or a callable of the hook
input), by default ``{"project": project_key_for_directory(cwd)}``; the SDK's session id keys
the per-session state (continuity once, de-duplication) and tags every episode
(``claude_session_id`` in its metadata).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, project_key_for_directory

from anneal_memory import Store
from anneal_memory.adapters import (
    MEMORY_LABEL,
    Compress,
    MemoryAdapter,
    check_identity,
    check_namespace,
    check_namespace_identity,
    hook_guard,
    label_memory,
    namespace_key,
    options_except,
)
from anneal_memory.errors import IdentityError, ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

from ._tools import TOOL_NAMES, memory_server

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.claude_agent_sdk"
_safe = hook_guard(LOGGER_NAME)

#: what ``namespace=`` accepts
Namespace = Any

#: The line that opens every memory context the hooks add: what follows is data (the
#: adapters' one label).
CONTEXT_LABEL = MEMORY_LABEL
_MAX_SESSIONS = 1024


class AnnealMemory(MemoryAdapter):
    """Anneal memory for Claude Agent SDK sessions: hooks, memory tools, one wrap per Stop.

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`
    (then that one session is used for every SDK session, and the session options go to
    it). Pass :attr:`hooks` and :attr:`mcp_server` to ``ClaudeAgentOptions`` or let
    :meth:`options` do it. The shared options (``namespace``, ``compress``,
    ``wrap_on_end``, ``recall_limit``, ``max_content_chars``, ``session_id``,
    ``crystal_store``, ``strict``, ``embedder``) are keywords, or one
    ``options=MemoryOptions(...)`` (a keyword overrides the field it names).

    ``wrap_on_end`` (default: ``True`` when ``compress`` is given) wraps at every ``Stop``;
    otherwise call :meth:`awrap` or let the agent wrap with the ``prepare_wrap`` /
    ``save_continuity`` tools.
    """

    framework = "claude-agent-sdk"
    extra = "claude-agent-sdk"
    logger_name = LOGGER_NAME
    identity_source = "the hook input's cwd"

    #: the memory goes in as the hook's ``additionalContext``: no role to choose
    memory_options = options_except("memory_role", "project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 record_user_input: bool = True, record_tools: bool = True,
                 record_outcome: bool = True, server_name: str = "anneal_memory",
                 wrap_timeout: float = 600.0, options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        wrap_on_end = keywords.pop("wrap_on_end", None)
        opts = self._memory_options(options, keywords)
        if wrap_on_end is None:  # a compressor given: wrap at every Stop
            wrap_on_end = opts.wrap_on_end or opts.compress is not None
        opts = replace(opts, wrap_on_end=bool(wrap_on_end))
        self._fixed = isinstance(memory, MemorySession)
        if self._fixed and opts.namespace is not None:
            raise ValidationError("namespace belongs to the MemorySession you pass: "
                                  "MemorySession(store.scoped(namespace))")
        if opts.wrap_on_end and opts.compress is None:
            raise ValidationError("wrap_on_end needs compress= (a callable prompt -> "
                                  "continuity, e.g. claude_compressor()); or leave "
                                  "wrap_on_end off and wrap with memory.awrap() or the "
                                  "agent's prepare_wrap/save_continuity tools")
        if isinstance(wrap_timeout, bool) or not isinstance(wrap_timeout, (int, float)) \
                or wrap_timeout <= 0:
            raise ValidationError("wrap_timeout must be a number of seconds > 0")
        if not isinstance(server_name, str) or not server_name.strip() \
                or not server_name.replace("_", "").replace("-", "").isalnum():
            raise ValidationError("server_name must be letters, digits, '-' or '_'")
        self.record_user_input = record_user_input
        self.record_tools = record_tools
        self.record_outcome = record_outcome
        self.server_name = server_name
        self.wrap_timeout = float(wrap_timeout)
        self._session_id = opts.session_id
        self._sessions: OrderedDict[tuple[str, str], MemorySession] = OrderedDict()
        #: namespace key -> {SDK session id: namespace}: the SDK sessions between a prompt
        #: and their Stop (the memory tools act for these)
        self._active: dict[str, dict[str, Any]] = {}
        self._fixed_seen: OrderedDict[str, None] = OrderedDict()
        self._server: Any = None
        #: the IdentityErrors of hook inputs whose session id, cwd or namespace was empty
        #: or invisible (each such prompt was blocked with the refusal's message)
        self.identity_refusals: list[IdentityError] = []
        # validates every option, opens the memory; a bad namespace raises now
        self._init_memory(memory, opts)

    # ------------------------------------------------------------------ the memory
    @property
    def namespace(self) -> Namespace:
        """The ``namespace=`` option (None: each hook input's project)."""
        return self._anneal.namespace

    @property
    def compress(self) -> Compress | None:
        """The constructor's compressor (None: none)."""
        return self._anneal.compress

    @property
    def wrap_on_end(self) -> bool:
        """Whether every ``Stop`` wraps."""
        return self._anneal.wrap_on_end

    @property
    def session(self) -> MemorySession:
        """This adapter's own memory: the session given (or over the view given), the
        session of a fixed ``namespace=``, else the store's session. With a callable
        ``namespace=`` the memory is chosen per hook input, so this refuses: call
        :meth:`session_for` with the hook input."""
        state = self._anneal
        if state.namespace is None or self._fixed or state.pinned:
            return state.session
        if callable(state.namespace):
            raise ValidationError(
                "this AnnealMemory's namespace is chosen per hook input (a callable), so it "
                "has no one session: call session_for(hook_input) with the SDK's hook input "
                "(its session_id and cwd)")
        return self._session_for_namespace(state.namespace, None)

    # ------------------------------------------------------------------ wiring
    @property
    def hooks(self) -> dict[str, list[HookMatcher]]:
        """The ``ClaudeAgentOptions(hooks=...)`` mapping."""
        callbacks: dict[str, Any] = {"UserPromptSubmit": self._on_prompt,
                                     "PostToolUse": self._on_tool,
                                     "PostToolUseFailure": self._on_tool_failure,
                                     "Stop": self._on_stop}
        return {event: [HookMatcher(hooks=[fn], timeout=self.wrap_timeout + 60
                                    if event == "Stop" else None)]
                for event, fn in callbacks.items()}

    @property
    def mcp_server(self) -> Any:
        """The in-process memory tools (record, recall, prepare_wrap, save_continuity) as an
        SDK MCP server config, for ``ClaudeAgentOptions(mcp_servers={name: ...})``."""
        if self._server is None:
            self._server = memory_server(self.server_name, self.tool_session)
        return self._server

    @property
    def tool_names(self) -> list[str]:
        """The memory tools' names as the CLI sees them (for ``allowed_tools``)."""
        return [f"mcp__{self.server_name}__{name}" for name in TOOL_NAMES]

    def options(self, base: ClaudeAgentOptions | None = None, *, tools: bool = True,
                **fields: Any) -> ClaudeAgentOptions:
        """``base`` (or new options with ``fields``) plus the memory hooks, and with
        ``tools`` the memory tools (added to ``mcp_servers`` and ``allowed_tools``).

        The user's own hooks, servers and allowed tools are kept; memory's come after them.
        """
        opts = replace(base, **fields) if base is not None else ClaudeAgentOptions(**fields)
        hooks: dict[Any, list[HookMatcher]] = {k: list(v) for k, v in (opts.hooks or {}).items()}
        for event, matchers in self.hooks.items():
            hooks.setdefault(event, []).extend(matchers)
        changes: dict[str, Any] = {"hooks": hooks}
        if tools:
            servers = opts.mcp_servers
            if not isinstance(servers, dict):
                raise ValidationError("options(tools=True) needs mcp_servers as a dict (or "
                                      "pass tools=False and add memory.mcp_server yourself)")
            if self.server_name in servers:
                raise ValidationError(f"mcp_servers already has a server named "
                                      f"{self.server_name!r}: pass server_name= to AnnealMemory")
            changes["mcp_servers"] = {**servers, self.server_name: self.mcp_server}
            changes["allowed_tools"] = [*opts.allowed_tools,
                                        *(t for t in self.tool_names
                                          if t not in opts.allowed_tools)]
        return replace(opts, **changes)

    # ------------------------------------------------------------------ identity
    def session_for(self, context: Mapping[str, Any] | None = None, *,
                    namespace: Namespace = None) -> MemorySession:
        """The memory session of one hook input (``context``): its namespace and SDK
        session id; ``namespace`` (a mapping or MemoryNamespace) names one instead."""
        if self._fixed:
            return self.base_session
        hook_input = context if context is not None else {}
        if namespace is not None:
            if self._anneal.pinned:
                return super().session_for(namespace=namespace)  # the view's, or refused
            namespace = check_namespace(
                check_namespace_identity(namespace, "namespace= of this call"))
        else:
            namespace = self._namespace_of(hook_input)
        return self._session_for_namespace(namespace, _sid(hook_input) or None)

    def default_namespace(self, context: Any) -> Any:
        """The hook input's project: ``{"project": <the SDK's key of its cwd>}``."""
        raw = context.get("cwd") if isinstance(context, Mapping) else None
        if raw is None:
            raise ValidationError("the hook input has no cwd, so its project namespace is "
                                  "unknown: pass namespace= to AnnealMemory")
        return project_namespace(check_identity(raw, self.identity_source, "project"))

    def _namespace_of(self, hook_input: Mapping[str, Any]) -> Any:
        if self._anneal.pinned:
            return None
        return self._configured_namespace(hook_input)[0]

    def _session_for_namespace(self, namespace: Any, sid: str | None) -> MemorySession:
        """One MemorySession per (namespace, SDK session id); its own ``session_id`` is the
        ``session_id=`` option (the consolidation-baton name), not the SDK's id."""
        key = (namespace_key(namespace), sid or "")
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
            return session
        base = self.base_session
        view = base.store if namespace is None or self._anneal.pinned \
            else base.store.scoped(namespace)
        session = MemorySession(view, session_id=self._session_id,
                                crystal_store=base.crystal_store,
                                recall_limit=base.recall_limit,
                                max_content_chars=base.max_content_chars, strict=base.strict,
                                logger=base.log)
        self._sessions[key] = session
        while len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def tool_session(self) -> MemorySession:
        """The session the memory tools act in: the fixed one, or the one SDK session
        (namespace) now between a prompt and its Stop. Several namespaces at once on one
        instance are refused rather than guessed."""
        if self._fixed:
            return self.base_session
        if self.namespace is not None and not callable(self.namespace):
            live = self._active.get(namespace_key(self.namespace), {})
            return self._session_for_namespace(self.namespace,
                                               next(iter(live), None))
        if not self._active:
            raise ValidationError("the memory tools ran outside a prompt this adapter saw: "
                                  "add memory.hooks to the options (memory.options() does)")
        if len(self._active) > 1:
            raise ValidationError("this AnnealMemory serves several namespaces at once, so a "
                                  "memory tool cannot tell whose memory it is for: give each "
                                  "user their own AnnealMemory(store, namespace=...)")
        (live,) = self._active.values()
        sid, namespace = next(iter(live.items()))
        return self._session_for_namespace(namespace, sid or None)

    def _leave(self, hook_input: Mapping[str, Any]) -> None:
        sid = _text(hook_input.get("session_id"))
        for key in list(self._active):
            self._active[key].pop(sid, None)
            if not self._active[key]:
                del self._active[key]

    # ------------------------------------------------------------------ the hooks
    # A hook cannot raise into the app (the CLI takes a hook's error as non-blocking), so
    # an identity refusal blocks the prompt with its message and is kept on
    # ``identity_refusals``; nothing is recalled or recorded for that session.
    async def _on_prompt(self, hook_input: Any, tool_use_id: str | None,
                         context: Any) -> dict[str, Any]:
        try:
            return await self._prompt(hook_input) or {}
        except IdentityError as exc:
            self.identity_refusals.append(exc)
            return {"decision": "block", "reason": f"anneal-memory refused this session: {exc}"}

    async def _on_tool(self, hook_input: Any, tool_use_id: str | None,
                       context: Any) -> dict[str, Any]:
        try:
            await self._tool(hook_input, failed=False)
        except IdentityError as exc:
            self.identity_refusals.append(exc)
        return {}

    async def _on_tool_failure(self, hook_input: Any, tool_use_id: str | None,
                               context: Any) -> dict[str, Any]:
        try:
            await self._tool(hook_input, failed=True)
        except IdentityError as exc:
            self.identity_refusals.append(exc)
        return {}

    async def _on_stop(self, hook_input: Any, tool_use_id: str | None,
                       context: Any) -> dict[str, Any]:
        try:
            await self._stop(hook_input)
        except IdentityError as exc:
            self.identity_refusals.append(exc)
        finally:
            self._leave(hook_input if isinstance(hook_input, Mapping) else {})
        return {}

    @_safe
    async def _prompt(self, hook_input: Mapping[str, Any]) -> dict[str, Any] | None:
        prompt = _text(hook_input.get("prompt"))
        if self._fixed:
            sid = _sid(hook_input)
            session, is_new = self.base_session, sid not in self._fixed_seen
            self._fixed_seen[sid] = None
            while len(self._fixed_seen) > _MAX_SESSIONS:
                self._fixed_seen.popitem(last=False)
        else:
            namespace = self._namespace_of(hook_input)
            sid = _sid(hook_input)
            is_new = (namespace_key(namespace), sid) not in self._sessions
            session = self._session_for_namespace(namespace, sid or None)
            self._active.setdefault(namespace_key(namespace), {})[sid] = namespace

        def work() -> str:
            block = session.memory_block(prompt or None) if is_new \
                else session.context_for(prompt or None)
            if self.record_user_input and prompt:
                session.record_user_input(prompt, _meta(hook_input))
            return block
        block = await anyio.to_thread.run_sync(work)
        if not block:
            return None
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                       "additionalContext": label_memory(block)}}

    @_safe
    async def _tool(self, hook_input: Mapping[str, Any], *, failed: bool) -> None:
        name = _text(hook_input.get("tool_name")) or "tool"
        if not self.record_tools or name.startswith(f"mcp__{self.server_name}__"):
            return
        session = self.session_for(hook_input)
        meta = _meta(hook_input)
        if hook_input.get("tool_use_id"):
            meta["tool_use_id"] = str(hook_input["tool_use_id"])
        if failed:
            output: Any = f"error: {_text(hook_input.get('error')) or 'the tool failed'}"
        else:
            output = _tool_output(hook_input.get("tool_response"))
        await anyio.to_thread.run_sync(lambda: session.record_tool_output(
            name, output, arguments=hook_input.get("tool_input"), metadata=meta))

    @_safe
    async def _stop(self, hook_input: Mapping[str, Any]) -> None:
        session = self.session_for(hook_input)
        if self.record_outcome:
            text = _text(hook_input.get("last_assistant_message")) \
                or await anyio.to_thread.run_sync(
                    _last_assistant_text, _text(hook_input.get("transcript_path")))
            if text:
                await anyio.to_thread.run_sync(
                    lambda: session.record_outcome(text, _meta(hook_input)))
        if self.wrap_on_end:
            await self._wrap(session, None)

    # ------------------------------------------------------------------ the wrap
    async def awrap(self, session_id: str | None = None, *, cwd: str | None = None,
                    hook_input: Mapping[str, Any] | None = None,
                    compress: Compress | None = None) -> WrapOutcome:
        """Wrap one SDK session's memory now (e.g. when a multi-turn conversation ends).

        The session is named like a hook input: ``session_id`` and ``cwd`` (default: this
        process's working directory), or a whole ``hook_input`` for a namespace callable.
        Uses ``compress``, else the constructor's. Never raises unless ``strict``; a
        failed or refused wrap keeps every episode.
        """
        given = dict(hook_input or {})
        if session_id is not None:
            given.setdefault("session_id", session_id)
        given.setdefault("cwd", cwd or os.getcwd())
        return await self._wrap(self.session_for(given), compress)

    async def _wrap(self, session: MemorySession, compress: Compress | None) -> WrapOutcome:
        chosen = compress or self.compress
        bounded = _bounded(chosen, self.wrap_timeout) if chosen is not None else None
        # Shielded: a CLI that gives up on the Stop hook must not cut a wrap in half (the
        # compressor itself is bounded by wrap_timeout, and a timeout cancels the wrap).
        with anyio.CancelScope(shield=True):
            return await session.awrap_first(bounded)


# ---------------------------------------------------------------------- helpers
def _bounded(compress: Compress, seconds: float) -> Callable[[str], Awaitable[str]]:
    """``compress`` made async and bounded: a sync one runs in a worker thread, and one
    that takes longer than ``seconds`` raises TimeoutError (the wrap is then cancelled)."""
    import inspect

    async def run(prompt: str) -> Any:
        with anyio.fail_after(seconds):
            if inspect.iscoroutinefunction(compress):
                return await compress(prompt)
            result = await anyio.to_thread.run_sync(compress, prompt, abandon_on_cancel=True)
            if inspect.isawaitable(result):
                result = await result
            return result
    return run


def project_namespace(cwd: str) -> dict[str, str]:
    """The default namespace of a working directory: ``{"project": <the SDK's project key>}``
    (the key the SDK files the directory's transcripts under; a long one is shortened to
    a namespace value's 200 characters with a hash of the rest)."""
    key = project_key_for_directory(cwd)
    if len(key) > 200:
        key = f"{key[:183]}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    return {"project": key}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _sid(hook_input: Mapping[str, Any]) -> str:
    """The hook input's SDK session id ("" when it has none); one that is there but
    empty, blank or invisible is an IdentityError (it would share one session's state)."""
    raw = hook_input.get("session_id")
    return "" if raw is None else check_identity(raw, "the hook input's session_id", "session")


def _meta(hook_input: Mapping[str, Any]) -> dict[str, Any]:
    sid = _text(hook_input.get("session_id"))
    return {"claude_session_id": sid} if sid else {}


def _tool_output(response: Any) -> Any:
    """The text of a tool response: MCP content blocks become their text, anything else
    is recorded as it is (the session renders structured output as JSON)."""
    if isinstance(response, Mapping) and isinstance(response.get("content"), list):
        response = response["content"]
    if isinstance(response, list) and response and all(
            isinstance(b, Mapping) and "type" in b for b in response):
        texts = [str(b.get("text", "")) for b in response if b.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    return response


def _last_assistant_text(transcript_path: str) -> str:
    """The last assistant text in a CLI transcript (JSONL), for CLIs whose Stop input
    carries no ``last_assistant_message``."""
    if not transcript_path or not os.path.isfile(transcript_path):
        return ""
    last = ""
    with open(transcript_path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if entry.get("type") != "assistant" or not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, str):
                last = content or last
            elif isinstance(content, list):
                text = "".join(b.get("text", "") for b in content
                               if isinstance(b, dict) and b.get("type") == "text")
                last = text or last
    return last.strip()
