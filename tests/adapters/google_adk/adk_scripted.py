"""A scripted ADK model (a small ``BaseLlm`` subclass) and helpers to drive a real Runner."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from anneal_memory.testing import is_wrap_prompt, scripted_compress

APP = "garden"
PRELOAD_HEADER = "The following content is from your previous conversations"


def read_gauge(name: str) -> dict:
    """Read a named gauge."""
    return {"reading": f"gauge {name} reads 3.2 bar (toolresult)"}


def _texts(content: types.Content | None) -> list[str]:
    if content is None or not content.parts:
        return []
    return [p.text for p in content.parts if p.text]


def request_text(llm_request: LlmRequest) -> str:
    """Every piece of text the model receives: system instruction and contents."""
    texts: list[str] = []
    system = llm_request.config.system_instruction if llm_request.config else None
    if isinstance(system, str):
        texts.append(system)
    elif system is not None:
        texts.extend(_texts(system) if isinstance(system, types.Content) else [str(system)])
    for content in llm_request.contents:
        texts.extend(_texts(content))
        for part in content.parts or []:
            if part.function_response:
                texts.append(str(part.function_response.response))
    return "\n".join(texts)


class ScriptedLlm(BaseLlm):
    """Answers by rule: a wrap prompt gets a valid continuity; otherwise it calls
    ``call`` (a tool name and args) once per user turn when set, then says ``answer``."""

    model: str = "scripted"
    answer: str = "Done."
    call: tuple[str, dict[str, Any]] | None = None
    inputs: list[str] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False):
        text = request_text(llm_request)
        last = _texts(llm_request.contents[-1]) if llm_request.contents else []
        if last and is_wrap_prompt(last[-1]):
            yield LlmResponse(content=types.Content(
                role="model", parts=[types.Part(text=scripted_compress(last[-1]))]))
            return
        self.inputs.append(text)
        if self.call is not None and self._turn_needs_tool(llm_request):
            name, args = self.call
            yield LlmResponse(content=types.Content(role="model", parts=[
                types.Part(function_call=types.FunctionCall(name=name, args=args))]))
            return
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=self.answer)]))

    @staticmethod
    def _turn_needs_tool(llm_request: LlmRequest) -> bool:
        # Memory is inserted as a user turn after a function response, so skip those.
        pending = False
        for content in llm_request.contents:
            for part in content.parts or []:
                if part.function_response:
                    pending = False
                elif content.role == "user" and part.text and not part.text.startswith(PRELOAD_HEADER):
                    pending = True
        return pending


def make_runner(agent: LlmAgent, *, plugins: list[Any], memory_service: Any) -> Runner:
    from google.adk.apps import App

    return Runner(app=App(name=APP, root_agent=agent, plugins=plugins),
                  session_service=InMemorySessionService(), memory_service=memory_service)


async def run_turn(runner: Runner, user_id: str, text: str, session_id: str | None = None,
                   max_llm_calls: int = 6) -> str:
    """One user turn through ``runner.run_async``; returns the final response text."""
    if session_id is None:
        session = await runner.session_service.create_session(app_name=APP, user_id=user_id)
        session_id = session.id
    final = ""
    async for event in runner.run_async(
        user_id=user_id, session_id=session_id,
        new_message=types.Content(role="user", parts=[types.Part(text=text)]),
        run_config=RunConfig(max_llm_calls=max_llm_calls),
    ):
        if event.is_final_response() and event.content:
            final = "".join(_texts(event.content)) or final
    return final
