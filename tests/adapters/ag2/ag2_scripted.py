"""An AG2 chat pair driven by autogen.testing.TestAgent, recording what the model receives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from autogen import ConversableAgent, register_function
from autogen.testing import TestAgent, ToolCall

from anneal_memory.testing import is_wrap_prompt, scripted_compress

LLM_CONFIG = {"config_list": [{"model": "fake", "model_client_cls": "FakeClient"}]}


def lookup(item: str) -> str:
    """Look up a measurement (the test tool)."""
    return f"toolresult: {item} pressure is 42 psi"


class RecordingClient:
    """Wraps TestAgent's fake client: records each prompt, answers wrap prompts itself."""

    def __init__(self, fake: Any, *, fail_wrap: bool = False) -> None:
        self.fake = fake
        self.fail_wrap = fail_wrap
        self.inputs: list[str] = []
        self.wrap_prompts = 0
        self._wrap_reply: str | None = None

    def create(self, **params: Any) -> Any:
        messages = params.get("messages") or []
        self.inputs.extend(str(m.get("content") or "") for m in messages)
        last = str(messages[-1].get("content") or "") if messages else ""
        if is_wrap_prompt(last):
            self.wrap_prompts += 1
            self._wrap_reply = "not a continuity" if self.fail_wrap else scripted_compress(last)
            return self._wrap_reply
        self._wrap_reply = None
        return self.fake.create(**params)

    def extract_text_or_completion_object(self, response: Any) -> Any:
        if self._wrap_reply is not None and response == self._wrap_reply:
            return [response]
        return self.fake.extract_text_or_completion_object(response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)


def make_pair(user_name: str = "user", assistant: ConversableAgent | None = None
              ) -> tuple[ConversableAgent, ConversableAgent]:
    """An assistant (new unless given) and a user agent named ``user_name`` that executes
    the assistant's ``lookup`` calls."""
    assistant = assistant or ConversableAgent("assistant", llm_config=LLM_CONFIG,
                                              human_input_mode="NEVER")
    user = ConversableAgent(user_name, llm_config=False, human_input_mode="NEVER",
                            code_execution_config=False,
                            is_termination_msg=lambda m: "TERMINATE" in str(m.get("content") or ""))
    register_function(lookup, caller=assistant, executor=user, description="Look up a measurement")
    return assistant, user


@contextmanager
def scripted(agent: ConversableAgent, replies: list[Any], *,
             fail_wrap: bool = False) -> Iterator[RecordingClient]:
    """TestAgent swaps the agent's client for its fake one; we wrap that to watch inputs."""
    with TestAgent(agent, replies):
        recording = RecordingClient(agent.client, fail_wrap=fail_wrap)
        agent.client = recording  # type: ignore[assignment]
        yield recording


def tool_call() -> dict[str, Any]:
    return ToolCall("lookup", item="pump").to_message()
