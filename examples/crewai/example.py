"""Anneal memory on a CrewAI crew serving two users, offline (a scripted BaseLLM, no API
key, no telemetry).

Run: python examples/crewai/example.py [memory.db]
One memory, one store; each user's crew works in their own scope (``memory.scope``).
Alice's kickoff uses a tool and wraps her memory; Bob's task prompt carries none of it;
Alice's next kickoff's task prompt carries her recalled memories (never the task's own
request).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

for _key, _value in {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
                     "CREWAI_TRACING_ENABLED": "false", "CREWAI_TESTING": "true"}.items():
    os.environ.setdefault(_key, _value)

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.events import crewai_event_bus  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.crewai import AnnealCrewMemory, AnnealEventListener  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


class ScriptedLLM(BaseLLM):
    """Answers in ReAct text: looks the heater up once, then answers; compresses wraps."""

    def call(self, messages, tools=None, callbacks=None, available_functions=None,
             from_task=None, from_agent=None, response_model=None):
        text = messages if isinstance(messages, str) else "\n".join(
            str(m.get("content", "")) for m in messages)
        if is_wrap_prompt(text):
            return scripted_compress(text)
        memories = text[text.index("Relevant memories"):] if "Relevant memories" in text else ""
        print("  the task prompt carries memories:",
              memories[:300].replace("\n", " | ") or "(none)")
        if "Zephyrion" in text:
            return "Thought: I know.\nFinal Answer: The heater is a Zephyrion 4000."
        if "Remind" in text:  # nothing in memory: say so
            return "Thought: I do not know.\nFinal Answer: I do not know your heater."
        return "Thought: look it up.\nAction: heater_model\nAction Input: {}"

    def supports_function_calling(self):
        return False


@tool("heater_model")
def heater_model() -> str:
    """The greenhouse heater's model."""
    return "Zephyrion 4000"


def kickoff(memory, llm: BaseLLM, request: str) -> str:
    agent = Agent(role="Gardener", goal="Help", backstory="Careful.", llm=llm,
                  tools=[heater_model], allow_delegation=False)
    task = Task(description=request, expected_output="One sentence", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], memory=memory,
                after_kickoff_callbacks=[memory.after_kickoff])
    return crew.kickoff().raw


def main(db_path: Path) -> None:
    llm = ScriptedLLM(model="scripted")
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealCrewMemory(store, llm=llm, wrap_on_end=True)
        alice, bob = memory.scope("/user/alice"), memory.scope("/user/bob")
        listener = AnnealEventListener(memory)
        try:
            print("alice, kickoff 1:", kickoff(alice, llm, "Find the greenhouse heater model"))
            crewai_event_bus.flush(timeout=30.0)
            mine = store.scoped({"user": "alice"})
            print(f"  alice's episodes: {[(e.type.value, e.trust, e.content[:40]) for e in mine.recall(limit=20).episodes]}")
            print(f"  continuity saved: {'Zephyrion' in (mine.load_continuity() or '')}")
            print("bob, kickoff 1:", kickoff(bob, llm, "Remind me which greenhouse heater we have"))
            crewai_event_bus.flush(timeout=30.0)
            print("alice, kickoff 2:", kickoff(alice, llm, "Remind me which greenhouse heater we have"))
            crewai_event_bus.flush(timeout=30.0)
        finally:
            listener.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
