"""anneal-memory as an AG2 agent capability, wired through ``ConversableAgent.register_hook``.

- ``process_all_messages_before_reply``: record what just arrived (the request, or the tool
  results another agent executed), then hand the model the messages with a labelled memory
  message (continuity + recall for the request) put just before the latest one. The
  conversation history itself is not changed.
- ``process_message_before_send``: record what the agent sends: text replies as outcomes,
  tool calls as decisions (``record_tool_calls``), tool results it executed with trust="tool".
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Literal

from autogen import ConversableAgent
from autogen.agentchat.contrib.capabilities.agent_capability import AgentCapability

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, check_memory_role, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.ag2"
_safe = hook_guard(LOGGER_NAME)

#: ``name`` of the memory message this capability adds to the model's input.
MEMORY_NAME = "anneal_memory"


class AnnealMemory(AgentCapability):
    """Durable, governed memory for one AG2 ``ConversableAgent``.

    ``memory.add_to_agent(agent)`` registers the hooks. ``compress`` (prompt -> text) writes the
    continuity at the wrap; by default the agent's own LLM client does. ``wrap_on_end``
    (default False) wraps after every text reply the agent sends; otherwise call :meth:`wrap`
    when the chat is over. ``store`` is a path (opened and owned: :meth:`close` closes it),
    a Store, or a ready MemorySession (then the session options go to it).
    """

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        project_name: str | None = None,
        session_id: str | None = None,
        compress: Callable[[str], str] | None = None,
        wrap_on_end: bool = False,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        memory_role: Literal["user", "system"] = "user",
        record_tool_calls: bool = False,
        strict: bool | None = None,
    ) -> None:
        check_memory_role(memory_role)
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      project_name=project_name, session_id=session_id, recall_limit=recall_limit,
                      max_content_chars=max_content_chars, strict=strict)
        self.memory_role = memory_role
        self.record_tool_calls = record_tool_calls
        self.agent: ConversableAgent | None = None

    @property
    def store(self) -> Store:
        return self.session.store

    def add_to_agent(self, agent: ConversableAgent) -> None:
        """Register the two hooks on ``agent`` (one agent per memory object)."""
        if self.agent is not None and self.agent is not agent:
            raise ValidationError("this AnnealMemory is already added to another agent: "
                                  "create one AnnealMemory per agent (they may share a store)")
        if self.wrap_on_end and self.compress is None and getattr(agent, "client", None) is None:
            raise ValidationError("wrap_on_end=True needs a model to write the continuity: give the "
                                  "agent an llm_config, or pass compress=<callable> to AnnealMemory")
        self.agent = agent
        agent.register_hook("process_all_messages_before_reply", self._before_reply)
        agent.register_hook("process_message_before_send", self._before_send)

    # --- hooks ------------------------------------------------------------------------
    def _before_reply(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # on a failure the agent replies without memory
        return self._recall_into(messages) or messages

    def _before_send(self, sender: ConversableAgent, message: dict[str, Any] | str,
                     recipient: Any, silent: bool) -> dict[str, Any] | str:
        if self._record_sent(message):  # on a failure the message is sent anyway
            self.wrap()
        return message

    @_safe
    def _recall_into(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not messages:
            return messages
        latest = messages[-1]
        if latest.get("tool_responses"):
            for response in latest["tool_responses"]:
                self.session.record_tool_output(_tool_name(messages, response),
                                                _text(response.get("content")))
            query = _latest_request(messages)
        else:
            query = _text(latest.get("content")) or None
        block = self.session.memory_block(query)  # recall first: the request is not its own memory
        if query and not latest.get("tool_responses") and latest.get("role") != "assistant":
            self.session.record_user_input(query, metadata=_name(latest))
        if not block:
            return messages
        memory = {"role": self.memory_role, "content": block, "name": MEMORY_NAME}
        return [*messages[:-1], memory, messages[-1]]

    @_safe
    def _record_sent(self, message: dict[str, Any] | str) -> bool:
        if isinstance(message, str):
            message = {"content": message}
        if message.get("tool_responses"):  # this agent executed tools for another one
            for response in message["tool_responses"]:
                self.session.record_tool_output("tool", _text(response.get("content")),
                                                metadata={"call_id": response.get("tool_call_id")})
            return False
        if message.get("tool_calls") or message.get("function_call"):
            if self.record_tool_calls:
                for call in message.get("tool_calls") or [{"function": message["function_call"]}]:
                    function = call.get("function") or {}
                    self.session.record_decision(
                        f"called tool {function.get('name')} with {function.get('arguments')}")
            return False
        text = _text(message.get("content"))
        if not text:
            return False
        self.session.record_outcome(text)
        return self.wrap_on_end

    # --- the wrap ---------------------------------------------------------------------
    def wrap(self, compress: Callable[[str], str] | None = None) -> WrapOutcome:
        """Compress this session's episodes into the continuity with ``compress``, the
        constructor's, or the agent's own LLM (never loses episodes; the outcome is also kept
        on ``session.last_wrap``)."""
        client = getattr(self.agent, "client", None)
        return self.session.wrap_first(compress, self.compress,
                                       self._agent_compress if client is not None else None)

    def _agent_compress(self, prompt: str) -> str:
        client = getattr(self.agent, "client", None)
        assert client is not None  # wrap offers this compressor only then
        response = client.create(messages=[{"role": "user", "content": prompt}])
        reply = client.extract_text_or_completion_object(response)[0]
        return reply if isinstance(reply, str) else _text(reply.get("content"))

    def close(self) -> None:
        """Close the store if this object opened it."""
        self.session.close()


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: keep the text ones
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict)).strip()
    return json.dumps(content, default=str)


def _name(message: dict[str, Any]) -> dict[str, Any] | None:
    return {"from": message["name"]} if message.get("name") else None


def _latest_request(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "user" and not message.get("tool_responses"):
            text = _text(message.get("content"))
            if text:
                return text
    return None


def _tool_name(messages: list[dict[str, Any]], response: dict[str, Any]) -> str:
    call_id = response.get("tool_call_id")
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                return str((call.get("function") or {}).get("name") or "tool")
    return "tool"
