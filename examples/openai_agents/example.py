"""Anneal memory on an OpenAI Agents SDK agent serving two users, offline (the SDK's
ScriptedModel, no key).

Run: python examples/openai_agents/example.py [memory.db]
Each user talks through their own AnnealSession (the transcript) and the memory's hooks
(episodes, once). Alice's run calls a tool and wraps her memory; Bob's run sees nothing of
hers; in a new conversation Alice's model gets her recalled memory as a labelled user
message (not from the transcript: the new conversation has none).
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
from anneal_memory.adapters.openai_agents import AnnealMemory, item_text  # noqa: E402
from anneal_memory.testing import scripted_compress  # noqa: E402


@function_tool
def heater_model() -> str:
    """The greenhouse heater's model."""
    return "Zephyrion 4000"


def compress_step() -> ModelStep:
    """The scripted model's answer to the wrap prompt: a valid continuity."""
    def respond(call):
        items = call.input if isinstance(call.input, list) else [{"content": call.input}]
        return [assistant_message(scripted_compress("\n".join(item_text(i) for i in items)))]
    return ModelStep.respond(respond)


def seen(model: ScriptedModel, call: int) -> str:
    """What one model call received besides the instructions."""
    return " | ".join(item_text(i) for i in model.calls[call].input)


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, wrap_on_end=True)
        model = ScriptedModel([
            [function_call("heater_model", json.dumps({}), call_id="c1")],
            [assistant_message("The heater is a Zephyrion 4000.")],
            compress_step(),                                  # alice's wrap
            [assistant_message("I do not know your heater.")],
            compress_step(),                                  # bob's wrap
            [assistant_message("You have a Zephyrion 4000.")],
            compress_step(),                                  # alice's second wrap
        ])
        agent = Agent(name="gardener", instructions=memory.instructions("You help gardeners."),
                      model=model, tools=[heater_model], hooks=memory.agent_hooks)

        def run(user: str, conversation: str, text: str) -> None:
            session = memory.conversation(conversation, namespace={"user": user})
            Runner.run_sync(agent, text, session=session, run_config=memory.run_config())

        print("alice, conversation 1")
        run("alice", "alice-1", "Which heater is in the greenhouse?")
        alice = store.scoped({"user": "alice"})
        print(f"  alice's episodes: {[(e.type.value, e.trust, e.content[:40]) for e in alice.recall().episodes]}")
        print(f"  transcript items (not memory): {alice.items('openai_agents.session').count()}")
        print(f"  continuity saved: {'Zephyrion' in (alice.load_continuity() or '')}")
        print(f"  alice's continuity: {(alice.load_continuity() or '')[:160]!r}")
        print("bob, conversation 1")
        run("bob", "bob-1", "Which heater do we have?")
        print(f"  bob's model input: {seen(model, 3)[:300]!r}")
        print("alice, conversation 2 (a new transcript)")
        run("alice", "alice-2", "Remind me of the heater model?")
        print(f"  alice's model input: {seen(model, 5)[:400]!r}")
        print(f"  instructions: {model.calls[5].system_instructions!r}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
