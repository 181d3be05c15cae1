"""Anneal memory on an OpenAI Agents SDK agent, offline (the SDK's ScriptedModel, no key).

Run: python examples/openai_agents/example.py [memory.db]
Run 1 calls a tool and wraps; run 2 gets the recalled memory in its instructions.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, Runner, function_tool  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.openai_agents import AnnealMemory  # noqa: E402
from anneal_memory.testing import scripted_compress  # noqa: E402


@function_tool
def heater_model() -> str:
    """The greenhouse heater's model."""
    return "Zephyrion 4000"


def compress_step() -> ModelStep:
    return ModelStep.respond(lambda call: [assistant_message(scripted_compress(str(call.input)))])


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, wrap_on_end=True)
        model = ScriptedModel([
            [function_call("heater_model", json.dumps({}), call_id="c1")],
            [assistant_message("The heater is a Zephyrion 4000.")],
            compress_step(),  # the wrap at the end of run 1
            [assistant_message("You have a Zephyrion 4000.")],
            compress_step(),  # the wrap at the end of run 2
        ])
        agent = Agent(name="gardener", instructions=memory.instructions("You help gardeners."),
                      model=model, tools=[heater_model], hooks=memory.agent_hooks)
        print("run 1")
        Runner.run_sync(agent, "Which heater is in the greenhouse?")
        print(f"  episodes: {[(e.type.value, e.trust, e.content[:50]) for e in store.recall(limit=20).episodes]}")
        print(f"  continuity saved: {store.load_continuity() is not None}")
        print("run 2")
        result = Runner.run_sync(agent, "Remind me of the heater model?")
        print(f"  instructions seen: {model.calls[3].system_instructions[:300]!r}")
        print(f"  answer: {result.final_output}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
