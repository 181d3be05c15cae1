"""anneal-memory with Google ADK, offline: a scripted BaseLlm stands in for Gemini.

Run: ``python examples/google_adk/example.py [path/to/memory.db]``

Two sessions of one user through a real ADK Runner: the first calls a tool and answers;
the plugin saves the session to the anneal store. The second session gets that memory
(recall, scoped to the user) before its model call. Then the wrap writes the continuity.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from anneal_memory import Store
from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def soil_moisture(bed: str) -> dict:
    """Read the soil moisture sensor of a garden bed."""
    return {"reading": f"bed {bed}: 18% moisture, below the 25% target"}


class ScriptedLlm(BaseLlm):
    """Calls the sensor once per turn, then answers; answers a wrap prompt with a continuity."""

    model: str = "scripted"
    seen: list[str] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False):
        texts = [p.text for c in llm_request.contents for p in (c.parts or []) if p.text]
        if texts and is_wrap_prompt(texts[-1]):
            yield LlmResponse(content=types.Content(
                role="model", parts=[types.Part(text=scripted_compress(texts[-1]))]))
            return
        system = llm_request.config.system_instruction if llm_request.config else None
        self.seen.append("\n".join([str(system or ""), *texts]))  # older ADK preloads into it
        answered = any(p.function_response for c in llm_request.contents for p in (c.parts or []))
        if answered or "What did" in texts[0]:
            part = types.Part(text="Water the north bed tonight.")
        else:
            part = types.Part(function_call=types.FunctionCall(name="soil_moisture",
                                                               args={"bed": "north"}))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def turn(runner: Runner, text: str) -> str:
    session = await runner.session_service.create_session(app_name="garden", user_id="alice")
    final = ""
    async for event in runner.run_async(
            user_id="alice", session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text=text)]),
            run_config=RunConfig(max_llm_calls=5)):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text or final
    return final


async def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemoryService(store)
        plugin = AnnealMemoryPlugin(memory)  # wrap_on_end=False: we wrap explicitly below
        llm = ScriptedLlm()
        agent = LlmAgent(name="gardener", model=llm, tools=[soil_moisture])
        runner = Runner(app=App(name="garden", root_agent=agent, plugins=[plugin]),
                        session_service=InMemorySessionService(), memory_service=memory)

        print("session 1:", await turn(runner, "Does the north bed need water?"))
        for ep in store.recall(limit=20).episodes:
            print(f"  recorded {ep.type.value:<8} trust={ep.trust:<6} {ep.content[:60]!r}")

        llm.seen.clear()
        print("session 2:", await turn(runner, "What did the north bed moisture reading say?"))
        print("  recalled memory in the model's input:", any("18% moisture" in s for s in llm.seen))

        outcome = await plugin.wrap()
        print("wrap:", outcome.status, "-", outcome.message)
        continuity = store.load_continuity() or ""
        print("continuity starts with:", continuity.splitlines()[0] if continuity else "(none)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "memory.db"))
