"""anneal-memory as an AG2 agent capability, wired through ``ConversableAgent.register_hook``.

- ``process_all_messages_before_reply``: record what just arrived (the request, or the tool
  results another agent executed), then hand the model the messages with a labelled memory
  message (continuity + recall for the request) put just before the latest one. The
  conversation history itself is not changed.
- ``process_message_before_send``: record what the agent sends: text replies as outcomes,
  tool calls as decisions (``record_tool_calls``), tool results it executed with trust="tool"
  and the tool's name.

Whose memory: AG2 keeps one conversation per partner agent, so by default the memory is the
partner's with this agent: ``{"user": <partner name>, "agent": <agent name>}``.

The wrap (``wrap_on_end``) runs once per chat: when the chat ends in a way the agent sees (a
message it sends that the partner takes as the end, or an ending message it receives), or
else when the next chat with that partner starts, or with :meth:`AnnealMemory.wrap`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autogen import ConversableAgent
from autogen.agentchat.contrib.capabilities.agent_capability import AgentCapability

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, hook_guard, identity, label_memory, options_except
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.ag2"
_safe = hook_guard(LOGGER_NAME)

#: ``name`` of the memory message this capability adds to the model's input.
MEMORY_NAME = "anneal_memory"


@dataclass(frozen=True)
class ChatContext:
    """What a ``namespace=`` callable receives: the agent, the partner it is talking to
    (its name), and the conversation's messages so far."""

    agent: Any
    partner: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Chat:
    """One partner's conversation with the agent, as memory sees it."""

    session: MemorySession | None = None
    length: int = 0
    pending: bool = False  # recorded since its last wrap


class AnnealMemory(MemoryAdapter, AgentCapability):
    """Durable, governed memory for one AG2 ``ConversableAgent``.

    ``memory.add_to_agent(agent)`` registers the hooks. ``namespace``: whose memory (a
    mapping, a ``MemoryNamespace`` or a callable receiving a :class:`ChatContext`); by
    default the partner's with this agent. ``compress`` (prompt -> text) writes the
    continuity at the wrap; by default the agent's own LLM client does. ``wrap_on_end``
    (default False) wraps once per chat (see the module docstring); otherwise call
    :meth:`wrap` when a chat is over. ``store`` is a path (opened and owned: :meth:`close`
    closes it), a Store, or a ready MemorySession (then the session options go to it).
    The shared options (``namespace``, ``compress``, ``wrap_on_end``, ``memory_role``,
    ``project_name``, ``session_id``, ``recall_limit``, ``max_content_chars``, ``strict``)
    are keywords, or one ``options=MemoryOptions(...)``.
    """

    framework = "ag2"
    extra = "ag2"
    logger_name = LOGGER_NAME

    memory_options = options_except("crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 record_tool_calls: bool = False, options: MemoryOptions | None = None,
                 **memory: Unpack[MemoryKwargs]) -> None:
        self._init_memory(store, options, **memory)
        self.record_tool_calls = record_tool_calls
        self.agent: ConversableAgent | None = None
        self._chats: dict[str, _Chat] = {}
        self._last: MemorySession | None = None

    @property
    def store(self) -> Store:
        return self.base_session.store

    def add_to_agent(self, agent: ConversableAgent) -> None:
        """Register the two hooks on ``agent`` (one agent per memory object)."""
        if self.agent is not None and self.agent is not agent:
            raise ValidationError("this AnnealMemory is already added to another agent: "
                                  "create one AnnealMemory per agent (they may share a store)")
        if self._anneal.wrap_on_end and self._anneal.compress is None \
                and getattr(agent, "client", None) is None:
            raise ValidationError("wrap_on_end=True needs a model to write the continuity: give the "
                                  "agent an llm_config, or pass compress=<callable> to AnnealMemory")
        if self.agent is agent:
            return
        self.agent = agent
        agent.register_hook("process_all_messages_before_reply", self._before_reply)
        agent.register_hook("process_message_before_send", self._before_send)

    # --- identity -----------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The partner's memory with this agent: ``{"user": partner, "agent": agent}``."""
        if not isinstance(context, ChatContext) or context.partner is None:
            return None
        found = identity("the chat partner's name", user=context.partner) or {}
        name = getattr(context.agent, "name", None)
        if name is not None:
            found.update(identity("this agent's name", agent=str(name)) or {})
        return found

    def session_of(self, partner: Any = None) -> MemorySession:
        """The session of the chat with ``partner`` (an agent or its name; default: the
        last chat this memory saw)."""
        name = getattr(partner, "name", partner)
        chat = self._chats.get(str(name)) if name is not None else None
        if chat is not None and chat.session is not None:
            return chat.session
        if name is None and self._last is not None:
            return self._last
        return self.session_for(ChatContext(self.agent, str(name) if name is not None else None))

    def _chat(self, partner: str | None, messages: list[dict[str, Any]]) -> _Chat:
        key = partner or ""
        chat = self._chats.get(key)
        if chat is None:
            chat = self._chats[key] = _Chat()
        if chat.session is None:
            chat.session = self.session_for(ChatContext(self.agent, partner, messages))
        self._last = chat.session
        return chat

    def _partner(self, messages: list[dict[str, Any]]) -> str | None:
        agent = self.agent
        for other, history in (getattr(agent, "_oai_messages", None) or {}).items():
            if history is messages:
                return str(getattr(other, "name", other))
        for message in reversed(messages):
            if message.get("role") != "assistant" and message.get("name") is not None \
                    and message.get("name") != getattr(agent, "name", None):
                return str(message["name"])
        return None

    # --- hooks ------------------------------------------------------------------------
    def _before_reply(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # on a failure the agent replies without memory
        return self._recall_into(messages) or messages

    def _before_send(self, sender: ConversableAgent, message: dict[str, Any] | str,
                     recipient: Any, silent: bool) -> dict[str, Any] | str:
        self._record_sent(message, recipient)  # on a failure the message is sent anyway
        return message

    @_safe
    def _recall_into(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not messages:
            return messages
        partner = self._partner(messages)
        chat = self._chat(partner, messages)
        if len(messages) <= 1 or len(messages) < chat.length:  # a new chat
            if chat.pending:
                self._finish_chat(chat)  # the previous one ended unseen (max_turns)
            chat.session = self.session_for(ChatContext(self.agent, partner, messages))
            self._last = chat.session
        chat.length = len(messages)
        session = chat.session
        assert session is not None
        latest = messages[-1]
        if latest.get("tool_responses"):
            for response in latest["tool_responses"]:
                session.record_tool_output(_tool_name(messages, response),
                                           _text(response.get("content")))
            query = _latest_request(messages)
        else:
            query = _text(latest.get("content")) or None
        block = session.memory_block(query)  # recall first: the request is not its own memory
        if query and not latest.get("tool_responses") and latest.get("role") != "assistant":
            session.record_user_input(query, metadata=_name(latest))
        chat.pending = True
        if self._ends_chat(self.agent, latest):
            self._finish_chat(chat)
        if not block:
            return messages
        text = label_memory(block) if self.memory_role == "user" else block
        memory = {"role": self.memory_role, "content": text, "name": MEMORY_NAME}
        return [*messages[:-1], memory, messages[-1]]

    @_safe
    def _record_sent(self, message: dict[str, Any] | str, recipient: Any) -> None:
        if isinstance(message, str):
            message = {"content": message}
        partner = str(getattr(recipient, "name", "")) or None
        history = list((getattr(self.agent, "chat_messages", None) or {}).get(recipient) or [])
        chat = self._chat(partner, history)
        session = chat.session
        assert session is not None
        chat.pending = True
        if message.get("tool_responses"):  # this agent executed tools for its partner
            for response in message["tool_responses"]:
                session.record_tool_output(_tool_name(history, response),
                                           _text(response.get("content")),
                                           metadata={"call_id": response.get("tool_call_id")})
        elif message.get("tool_calls") or message.get("function_call"):
            if self.record_tool_calls:
                for call in message.get("tool_calls") or [{"function": message["function_call"]}]:
                    function = call.get("function") or {}
                    session.record_decision(
                        f"called tool {function.get('name')} with {function.get('arguments')}")
        else:
            text = _text(message.get("content"))
            if text:
                session.record_outcome(text)
        if self._ends_chat(recipient, message):
            self._finish_chat(chat)

    @staticmethod
    def _ends_chat(receiver: Any, message: dict[str, Any]) -> bool:
        """``receiver`` takes ``message`` as the end of the chat (its own test of that)."""
        check = getattr(receiver, "_is_termination_msg", None)
        try:
            return bool(check(message)) if callable(check) else False
        except Exception:
            return False

    def _finish_chat(self, chat: _Chat) -> None:
        chat.pending = False
        if chat.session is not None:
            self.end_run(chat.session)

    # --- the wrap ---------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Callable[[str], str] | None:
        """The agent's own LLM client writes the continuity."""
        return self._agent_compress if getattr(self.agent, "client", None) is not None else None

    def wrap(self, compress: Callable[[str], str] | None = None, *, partner: Any = None,
             namespace: Any = None) -> WrapOutcome:
        """Compress one chat's memory into its continuity with ``compress``, the
        constructor's, or the agent's own LLM (never loses episodes; the outcome is also
        kept on that session's ``last_wrap``): the chat with ``partner`` (default: the last
        one), or ``namespace``."""
        session = (self.session_for(None, namespace=namespace) if namespace is not None
                   else self.session_of(partner))
        for chat in self._chats.values():
            if chat.session is session:
                chat.pending = False
        return session.wrap_first(self.compressor(compress))

    def _agent_compress(self, prompt: str) -> str:
        client = getattr(self.agent, "client", None)
        assert client is not None  # wrap offers this compressor only then
        response = client.create(messages=[{"role": "user", "content": prompt}])
        reply = client.extract_text_or_completion_object(response)[0]
        return reply if isinstance(reply, str) else _text(reply.get("content"))


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
