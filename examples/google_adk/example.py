"""anneal-memory with Google ADK, offline: a scripted BaseLlm stands in for Gemini.

Run: ``python examples/google_adk/example.py [path/to/memory.db]``

One Runner, one store for ADK's sessions and the memory, two users (ADK's own ``user_id``). Alice's session calls a
tool and answers; the plugin saves it to her memory and wraps her continuity. Bob's session
sees nothing of hers. Alice's next session gets her memory (continuity and recall) before
its model call.
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
from google.genai import types

from anneal_memory import Store
from anneal_memory.adapters.google_adk import (
    AnnealMemoryPlugin,
    AnnealMemoryService,
    AnnealSessionService,
)
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
        if answered or "What did" in texts[-1]:
            part = types.Part(text="Water the north bed tonight.")
        else:
            part = types.Part(function_call=types.FunctionCall(name="soil_moisture",
                                                               args={"bed": "north"}))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def turn(runner: Runner, user: str, text: str) -> str:
    session = await runner.session_service.create_session(app_name="garden", user_id=user)
    final = ""
    async for event in runner.run_async(
            user_id=user, session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text=text)]),
            run_config=RunConfig(max_llm_calls=5)):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text or final
    return final


async def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemoryService(store)
        plugin = AnnealMemoryPlugin(memory, wrap_on_end=True)  # each user's run wraps theirs
        llm = ScriptedLlm()
        agent = LlmAgent(name="gardener", model=llm, tools=[soil_moisture])
        runner = Runner(app=App(name="garden", root_agent=agent, plugins=[plugin]),
                        session_service=AnnealSessionService(store), memory_service=memory)

        print("alice, session 1:", await turn(runner, "alice", "Does the north bed need water?"))
        alice = store.scoped({"project": "garden", "user": "alice"})
        for ep in alice.recall(limit=20).episodes:
            print(f"  recorded {ep.type.value:<8} trust={ep.trust:<6} {ep.content[:60]!r}")
        print("  wrap:", "saved" if "18% moisture" in (alice.load_continuity() or "") else "none")

        llm.seen.clear()
        print("bob, session 1:", await turn(runner, "bob", "What did the north bed moisture reading say?"))
        print("  alice's memory in bob's model input:", any("18% moisture" in s for s in llm.seen))

        llm.seen.clear()
        print("alice, session 2:", await turn(runner, "alice", "What did the north bed moisture reading say?"))
        print("  recalled memory in the model's input:", any("18% moisture" in s for s in llm.seen))
        sessions = await runner.session_service.list_sessions(app_name="garden", user_id="alice")
        print("  alice's sessions in the store:", len(sessions.sessions))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "memory.db"))
