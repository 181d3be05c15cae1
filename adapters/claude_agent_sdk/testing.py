"""A scripted Claude Code CLI, for running the SDK's real loop offline in tests and demos.

:class:`ScriptedCLI` is a ``claude_agent_sdk`` ``Transport`` that plays the CLI's side of
the stream-json control protocol: it answers ``initialize``, performs the MCP handshake
with the SDK MCP servers, fires the registered hook callbacks (``UserPromptSubmit``,
``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``, ``Stop``) as ``hook_callback``
control requests, calls SDK MCP tools with ``mcp_message`` requests, mirrors the transcript
(``transcript_mirror`` frames, when the options have a ``session_store``) and streams
``system`` / ``assistant`` / ``user`` / ``result`` messages. The SDK's own ``Query`` drives
all of it exactly as it drives the real CLI; only the model is scripted: each step is a
reply text, a :class:`ToolCall`, or a callable (sync or async) that receives the :class:`ModelCall` (what the
model would have been sent) and returns one of those.

Use it as ``query(prompt=..., options=opts, transport=ScriptedCLI(steps, options=opts))``.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import os
import re
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import project_key_for_directory
from claude_agent_sdk._internal.transport import Transport

from anneal_memory.clock import utcnow
from anneal_memory.testing import is_wrap_prompt, scripted_compress

__all__ = ["ModelCall", "ScriptedCLI", "ToolCall", "compress_step", "is_wrap_prompt"]


@dataclass
class ToolCall:
    """A scripted model step that calls a tool (``mcp__<server>__<tool>`` for SDK tools)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelCall:
    """What one model request would have carried: the system prompt and the messages."""

    system: str
    messages: list[dict[str, Any]]
    tools: list[str]

    @property
    def text(self) -> str:
        """Every piece of text the model received, in order."""
        out = [self.system] if self.system else []
        for message in self.messages:
            out.extend(_texts(message.get("content")))
        return "\n".join(out)

    @property
    def last_user_text(self) -> str:
        """The text of the newest user message."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return "\n".join(_texts(message.get("content")))
        return ""


#: a reply text, a tool call, or a callable (sync or async) of the ModelCall giving one
Step = str | ToolCall | Callable[[ModelCall], Any]


def compress_step(call: ModelCall) -> str:
    """A step that answers a wrap prompt with a valid continuity (no model)."""
    return scripted_compress(call.last_user_text)


class ScriptedCLI(Transport):
    """The CLI's side of the protocol, with a scripted model (see the module docstring).

    ``steps``: the model's answers in order (or one callable used for every call).
    ``options``: the ``ClaudeAgentOptions`` the run uses; like the real transport, the
    CLI reads from it what it gets on its command line (cwd, system prompt, permission
    mode, SDK MCP server names, whether to mirror the transcript). ``transcript_dir``:
    also write the transcript JSONL the hooks' ``transcript_path`` names (off by default).
    ``last_message_in_stop``: include ``last_assistant_message`` in the Stop input, as
    current CLIs do.
    """

    def __init__(self, steps: Iterable[Step] | Callable[[ModelCall], str | ToolCall], *,
                 options: Any = None, session_id: str | None = None,
                 transcript_dir: str | os.PathLike[str] | None = None,
                 last_message_in_stop: bool = True, max_steps: int = 20) -> None:
        self._model = steps if callable(steps) else None
        self._steps: deque[Step] = deque() if callable(steps) else deque(steps)
        # a given "" stays "": hook inputs with an empty id are what a test may need
        self.session_id = session_id if session_id is not None else str(uuid.uuid4())
        cwd = getattr(options, "cwd", None)
        self.cwd = str(cwd) if cwd is not None else os.getcwd()
        system = getattr(options, "system_prompt", None)
        self.system = system if isinstance(system, str) else ""
        self.permission_mode = getattr(options, "permission_mode", None) or "default"
        servers = getattr(options, "mcp_servers", None)
        self.sdk_servers = [n for n, c in servers.items()
                            if isinstance(c, dict) and c.get("type") == "sdk"] \
            if isinstance(servers, dict) else []
        self.mirror = getattr(options, "session_store", None) is not None
        env = getattr(options, "env", None) or {}
        config = env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR") \
            or str(Path.home() / ".claude")
        self.project_key = project_key_for_directory(self.cwd)
        self.transcript_path = str(Path(transcript_dir or Path(config) / "projects")
                                   / self.project_key / f"{self.session_id}.jsonl")
        self._write_transcript = transcript_dir is not None
        self.last_message_in_stop = last_message_in_stop
        self.max_steps = max_steps
        #: every model request, in order
        self.calls: list[ModelCall] = []
        #: every hook input sent, as (event, input)
        self.hook_inputs: list[tuple[str, dict[str, Any]]] = []
        #: every hook callback the SDK answered with an error, as (event, error)
        self.hook_errors: list[tuple[str, str]] = []
        #: every tool call made, as (name, input, result text, is_error)
        self.tool_results: list[tuple[str, dict[str, Any], str, bool]] = []
        self.messages: list[dict[str, Any]] = []
        self._hooks: dict[str, list[dict[str, Any]]] = {}
        self._tools: dict[str, list[str]] = {}
        self._started = False
        self._ready = False
        self._backlog: deque[dict[str, Any]] = deque()
        self._answer: dict[str, Any] = {}
        self._counter = 0
        self._parent: str | None = None
        self._send: Any = None
        self._receive: Any = None

    # ------------------------------------------------------------------ Transport
    async def connect(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self._ready = True

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                self._send.send_nowait(json.loads(line))

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._program()

    async def end_input(self) -> None:
        if self._send is not None:
            self._send.send_nowait({"type": "__eof__"})

    async def close(self) -> None:
        self._ready = False
        for stream in (self._send, self._receive):
            if stream is not None:
                stream.close()

    def is_ready(self) -> bool:
        return self._ready

    # ------------------------------------------------------------------ the CLI
    async def _next(self) -> dict[str, Any] | None:
        if self._backlog:
            return self._backlog.popleft()
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    async def _program(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            message = await self._next()
            if message is None or message.get("type") == "__eof__":
                return
            kind = message.get("type")
            if kind == "control_request":
                request = message.get("request", {})
                if request.get("subtype") == "initialize":
                    self._hooks = request.get("hooks") or {}
                    yield _ok(message["request_id"], {"commands": [], "models": [],
                                                      "output_style": "default",
                                                      "available_output_styles": []})
                else:
                    yield _ok(message["request_id"], {})
            elif kind == "user":
                async for out in self._turn(message):
                    yield out

    async def _ask(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Send a control request to the SDK; its answer is left in ``self._answer``."""
        self._counter += 1
        rid = f"cli_req_{self._counter}"
        yield {"type": "control_request", "request_id": rid, "request": request}
        while True:
            try:
                message = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._answer = {"subtype": "error", "error": "stdin closed"}
                return
            response = message.get("response", {}) if message.get("type") == "control_response" \
                else {}
            if response.get("request_id") == rid:
                self._answer = response
                return
            self._backlog.append(message)

    async def _mcp(self, server: str, method: str, params: dict[str, Any] | None,
                   *, notify: bool = False) -> AsyncIterator[dict[str, Any]]:
        self._counter += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notify:
            body["id"] = self._counter
        async for out in self._ask({"subtype": "mcp_message", "server_name": server,
                                    "message": body}):
            yield out

    async def _handshake(self) -> AsyncIterator[dict[str, Any]]:
        for server in self.sdk_servers:
            async for out in self._mcp(server, "initialize", {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "claude-code", "version": "scripted"}}):
                yield out
            async for out in self._mcp(server, "notifications/initialized", None, notify=True):
                yield out
            async for out in self._mcp(server, "tools/list", {}):
                yield out
            result = self._answer.get("response", {}).get("mcp_response", {}).get("result", {})
            self._tools[server] = [t["name"] for t in result.get("tools", [])]
        yield {"type": "system", "subtype": "init", "session_id": self.session_id,
               "uuid": str(uuid.uuid4()), "cwd": self.cwd, "model": "scripted",
               "permissionMode": self.permission_mode, "apiKeySource": "none",
               "tools": self.tool_names,
               "mcp_servers": [{"name": s, "status": "connected"} for s in self.sdk_servers]}

    @property
    def tool_names(self) -> list[str]:
        return [f"mcp__{s}__{t}" for s, names in self._tools.items() for t in names]

    def _hook_input(self, event: str, **fields: Any) -> dict[str, Any]:
        return {"session_id": self.session_id, "transcript_path": self.transcript_path,
                "cwd": self.cwd, "permission_mode": self.permission_mode,
                "hook_event_name": event, **fields}

    async def _fire(self, event: str, hook_input: dict[str, Any], *, target: str | None = None,
                    tool_use_id: str | None = None,
                    answers: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """Run every callback registered for ``event`` (matching ``target``)."""
        for matcher in self._hooks.get(event, []):
            if target is not None and not _matches(matcher.get("matcher"), target):
                continue
            for callback_id in matcher.get("hookCallbackIds", []):
                self.hook_inputs.append((event, copy.deepcopy(hook_input)))
                async for out in self._ask({"subtype": "hook_callback",
                                            "callback_id": callback_id,
                                            "input": hook_input, "tool_use_id": tool_use_id}):
                    yield out
                if self._answer.get("subtype") == "success":
                    answers.append(self._answer.get("response") or {})
                else:
                    self.hook_errors.append((event, str(self._answer.get("error", ""))))

    def _remember(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Keep ``message`` in the conversation (and the transcript); the mirror frame."""
        self.messages.append(message)
        entry = {"type": message["role"], "uuid": str(uuid.uuid4()), "parentUuid": self._parent,
                 "sessionId": self.session_id, "cwd": self.cwd, "isSidechain": False,
                 "userType": "external", "version": "scripted",
                 "timestamp": utcnow().isoformat().replace("+00:00", "Z"),
                 "message": copy.deepcopy(message)}
        self._parent = entry["uuid"]
        if self._write_transcript:
            Path(self.transcript_path).parent.mkdir(parents=True, exist_ok=True)
            with open(self.transcript_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
        if not self.mirror:
            return None
        return {"type": "transcript_mirror", "filePath": self.transcript_path,
                "entries": [entry]}

    async def _step(self, call: ModelCall) -> str | ToolCall:
        if self._model is not None:
            step: Step = self._model
        elif self._steps:
            step = self._steps.popleft()
        else:
            raise AssertionError("the scripted model has no step left for this call:\n"
                                 + call.last_user_text[:500])
        result = step(call) if callable(step) else step
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, (str, ToolCall)):
            raise AssertionError(f"a scripted step must give a str or a ToolCall, not {result!r}")
        return result

    def _frame(self, message: dict[str, Any]) -> dict[str, Any]:
        frame = {"type": message["role"], "session_id": self.session_id,
                 "parent_tool_use_id": None, "uuid": str(uuid.uuid4())}
        if message["role"] == "assistant":
            frame["message"] = {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message",
                                "role": "assistant", "model": "scripted",
                                "content": message["content"], "stop_reason": None,
                                "usage": {"input_tokens": 0, "output_tokens": 0}}
        else:
            frame["message"] = {"role": "user", "content": message["content"]}
        return frame

    async def _turn(self, message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if not self._started:
            self._started = True
            async for out in self._handshake():
                yield out
        content = message.get("message", {}).get("content", "")
        prompt = content if isinstance(content, str) else "\n".join(_texts(content))
        answers: list[dict[str, Any]] = []
        async for out in self._fire("UserPromptSubmit",
                                    self._hook_input("UserPromptSubmit", prompt=prompt),
                                    answers=answers):
            yield out
        blocked = next((a for a in answers if a.get("decision") == "block"), None)
        if blocked is not None:
            yield self._result(str(blocked.get("reason", "blocked by a hook")), 0)
            return
        blocks = [{"type": "text", "text": prompt}] + _contexts("UserPromptSubmit", answers)
        mirror = self._remember({"role": "user", "content": blocks})
        if mirror:
            yield mirror
        turns, text, stop_active = 0, "", False
        while turns < self.max_steps:
            turns += 1
            call = ModelCall(self.system, copy.deepcopy(self.messages), self.tool_names)
            self.calls.append(call)
            step = await self._step(call)
            if isinstance(step, ToolCall):
                async for out in self._tool(step):
                    yield out
                continue
            text = step
            reply = {"role": "assistant", "content": [{"type": "text", "text": text}]}
            yield self._frame(reply)
            mirror = self._remember(reply)
            if mirror:
                yield mirror
            stop: dict[str, Any] = {"stop_hook_active": stop_active}
            if self.last_message_in_stop:
                stop["last_assistant_message"] = text
            answers = []
            async for out in self._fire("Stop", self._hook_input("Stop", **stop),
                                        answers=answers):
                yield out
            again = next((a for a in answers if a.get("decision") == "block"), None)
            if again is None or stop_active:
                break
            stop_active = True
            mirror = self._remember({"role": "user", "content": [
                {"type": "text", "text": f"Stop hook feedback:\n{again.get('reason', '')}"}]})
            if mirror:
                yield mirror
        yield self._result(text, turns)

    async def _tool(self, step: ToolCall) -> AsyncIterator[dict[str, Any]]:
        self._counter += 1
        tool_use_id = f"toolu_{self._counter:04d}"
        use = {"role": "assistant", "content": [{"type": "tool_use", "id": tool_use_id,
                                                 "name": step.name, "input": step.input}]}
        yield self._frame(use)
        mirror = self._remember(use)
        if mirror:
            yield mirror
        arguments = dict(step.input)
        answers: list[dict[str, Any]] = []
        async for out in self._fire("PreToolUse", self._hook_input(
                "PreToolUse", tool_name=step.name, tool_input=arguments,
                tool_use_id=tool_use_id), target=step.name, tool_use_id=tool_use_id,
                answers=answers):
            yield out
        decisions = [a.get("hookSpecificOutput", {}) for a in answers]
        denied = next((d for d in decisions if d.get("permissionDecision") == "deny"), None)
        for d in decisions:
            if isinstance(d.get("updatedInput"), dict):
                arguments = d["updatedInput"]
        if denied is not None:
            output, is_error = f"Permission denied: {denied.get('permissionDecisionReason', '')}", True
            response: Any = output
        else:
            async for out in self._run_tool(step.name, arguments):
                yield out
            response, output, is_error = self._tool_outcome
        self.tool_results.append((step.name, arguments, output, is_error))
        answers = []
        event = "PostToolUseFailure" if is_error else "PostToolUse"
        outcome = {"error": output} if is_error else {"tool_response": response}
        async for out in self._fire(event, self._hook_input(
                event, tool_name=step.name, tool_input=arguments, tool_use_id=tool_use_id,
                **outcome), target=step.name, tool_use_id=tool_use_id, answers=answers):
            yield out
        extra = _contexts(event, answers)
        result = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": output,
             "is_error": is_error}, *extra]}
        yield self._frame(result)
        mirror = self._remember(result)
        if mirror:
            yield mirror

    async def _run_tool(self, name: str, arguments: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        match = re.fullmatch(r"mcp__(.+?)__(.+)", name)
        if not match or match.group(1) not in self._tools \
                or match.group(2) not in self._tools[match.group(1)]:
            text = f"Error: No such tool available: {name}"
            self._tool_outcome = (text, text, True)
            return
        async for out in self._mcp(match.group(1), "tools/call",
                                   {"name": match.group(2), "arguments": arguments}):
            yield out
        reply = self._answer.get("response", {}).get("mcp_response", {})
        if "error" in reply:
            text = f"MCP error: {reply['error'].get('message', '')}"
            self._tool_outcome = (text, text, True)
            return
        result = reply.get("result", {})
        blocks = result.get("content", [])
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        self._tool_outcome = (blocks, text, bool(result.get("isError")))

    def _result(self, text: str, turns: int) -> dict[str, Any]:
        return {"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1,
                "is_error": False, "num_turns": turns, "session_id": self.session_id,
                "total_cost_usd": 0.0, "usage": {"input_tokens": 0, "output_tokens": 0},
                "result": text, "uuid": str(uuid.uuid4())}


def _ok(request_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response}}


def _matches(matcher: str | None, target: str) -> bool:
    if matcher in (None, "", "*"):
        return True
    return matcher == target or re.fullmatch(matcher, target) is not None


def _contexts(event: str, answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hook ``additionalContext`` as the CLI passes it on: a reminder block next to the
    message, attributed to the hook."""
    out = []
    for answer in answers:
        ctx = (answer.get("hookSpecificOutput") or {}).get("additionalContext")
        if ctx:
            out.append({"type": "text", "text": f"<system-reminder>\n{event} hook additional "
                                                f"context: {ctx}\n</system-reminder>"})
    return out


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            out.append(f"[tool_use {block.get('name')}] {json.dumps(block.get('input'))}")
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            out.extend(_texts(inner) if isinstance(inner, list) else [str(inner)])
    return out
