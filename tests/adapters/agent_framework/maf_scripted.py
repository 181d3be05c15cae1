"""A scripted chat client of the framework's own client interface (``BaseChatClient``
with its tool loop and chat middleware layers, as the framework's own tests build
``MockBaseChatClient``): it keeps what it received, calls ``lookup`` once when asked,
and answers wrap prompts."""

from __future__ import annotations

from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)

from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedClient(FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient):
    """``inputs``: per model call, the instructions and every message's text joined;
    ``properties``: the answer message's ``additional_properties``."""

    def __init__(self, *, call_tool: bool = False, answer: str = "Done: noted.",
                 tool: tuple[str, dict[str, Any]] = ("lookup", {"query": "pump pressure"}),
                 properties: dict[str, Any] | None = None) -> None:
        super().__init__(middleware=[])
        self.call_tool = call_tool
        self.tool = tool
        self.answer = answer
        self.properties = properties
        self.inputs: list[str] = []
        self.messages: list[list[Message]] = []

    def _reply(self, messages: list[Message], options: Any) -> ChatResponse:
        last = messages[-1].text if messages else ""
        if is_wrap_prompt(last or ""):
            return ChatResponse(messages=Message(role="assistant",
                                                 contents=[scripted_compress(last)]))
        instructions = str((options or {}).get("instructions") or "")
        self.messages.append(list(messages))
        self.inputs.append("\n".join(t for t in [instructions, *(m.text for m in messages)] if t))
        returned = any(c.type == "function_result" for m in messages for c in m.contents)
        if self.call_tool and not returned:
            call = Content.from_function_call("call-1", self.tool[0], arguments=self.tool[1])
            return ChatResponse(messages=Message(role="assistant", contents=[call]))
        return ChatResponse(messages=Message(role="assistant", contents=[self.answer],
                                             additional_properties=dict(self.properties or {})))

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any,
                            **kwargs: Any) -> Any:
        response = self._reply(list(messages), options)
        if stream:
            async def updates() -> Any:
                for m in response.messages:
                    yield ChatResponseUpdate(role=m.role, contents=m.contents)
            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def get() -> ChatResponse:
            return response
        return get()


def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} is 42 psi"
