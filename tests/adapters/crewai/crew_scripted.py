"""A scripted CrewAI LLM (a ``BaseLLM`` subclass answering in ReAct text) and a crew on it."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool

from anneal_memory.adapters.crewai import AnnealEventListener
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    return "\n".join(str(m.get("content", "")) for m in messages)


class ScriptedLLM(BaseLLM):
    """Calls ``lookup`` once when ``call_tool``, then answers; answers wrap prompts."""

    call_tool: bool = False
    answer: str = "Done: noted."
    inputs: list[str] = []

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> str:
        text = _text(messages)
        self.inputs.append(text)
        if is_wrap_prompt(text):
            return scripted_compress(text)
        if self.call_tool and "toolresult" not in text:
            return 'Thought: I should look it up.\nAction: lookup\nAction Input: {"query": "pump"}'
        return f"Thought: I know the answer.\nFinal Answer: {self.answer}"

    def supports_function_calling(self) -> bool:
        return False


@tool("lookup")
def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} runs at 42 psi"


def run_crew(memory: Any, llm: ScriptedLLM, request: str) -> Any:
    """Kick off a one-agent, one-task crew wired to ``memory`` (an AnnealCrewMemory or a
    ``memory.scope(...)`` view of one); flush the bus after."""
    agent = Agent(role="Gardener", goal="Help with the garden", backstory="A careful gardener.",
                  llm=llm, tools=[lookup], allow_delegation=False)
    task = Task(description=request, expected_output="A short answer", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], memory=memory,
                after_kickoff_callbacks=[memory.after_kickoff])
    output = crew.kickoff()
    crewai_event_bus.flush(timeout=30.0)
    return output


def scripted_llm(**kwargs: Any) -> ScriptedLLM:
    return ScriptedLLM(model="scripted", inputs=[], **kwargs)


__all__ = ["AnnealEventListener", "ScriptedLLM", "lookup", "run_crew", "scripted_llm"]
