"""Anneal memory on an Agno agent serving two users, offline (a scripted Agno model, no
API key, telemetry off).

Run: python examples/agno/example.py [memory.db]
One agent, one store, two users told apart by Agno's own ``user_id``. Alice tells a fact
and her run wraps her memory; Bob asks and sees nothing of hers; Alice asks and the
model's input (Agno's system prompt) carries her recalled memory; a run that names no user
is refused before the model runs (``anonymous="refuse"``, the multi-user setting). Alice's
memory keeps the id the app gives it, through a replace.
"""

from __future__ import annotations

import os

os.environ.setdefault("AGNO_TELEMETRY", "false")  # before agno is imported

import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agno.agent import Agent  # noqa: E402
from agno.memory import UserMemory  # noqa: E402
from agno.models.base import Model  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.agno import AnnealMemory  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


class ScriptedModel(Model):
    """Agno's model interface, answered by a script: it prints what it was sent."""

    def __init__(self) -> None:
        super().__init__(id="scripted", name="Scripted", provider="example")

    def invoke(self, *args: Any, messages: Any = None, **kwargs: Any) -> ModelResponse:
        texts = [m.get_content_string() for m in messages or []]
        if texts and is_wrap_prompt(texts[-1]):  # the wrap: compress into a continuity
            return ModelResponse(role="assistant", content=scripted_compress(texts[-1]))
        memory = texts[0].split("<memories_from_previous_interactions>")[1:] if texts else []
        shown = memory[0].split("</memories_from_previous_interactions>")[0] if memory else ""
        print(f"  model input: memory={' '.join(shown.split())[-300:]!r} | user={texts[-1]!r}")
        return ModelResponse(role="assistant", content="Noted.")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke(*args, **kwargs)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self.invoke(*args, **kwargs)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self.invoke(*args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
        return response

    def _parse_provider_response_delta(self, response: Any) -> Any:
        return response


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, wrap_on_end=True, anonymous="refuse")
        agent = Agent(model=ScriptedModel(), id="gardener", memory_manager=memory,
                      pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook],
                      telemetry=False)
        print("alice, run 1")
        agent.run("Our greenhouse heater is a Zephyrion 4000.", user_id="alice",
                  session_id="alice-1")
        alice = store.scoped({"user": "alice"})
        print(f"  alice's episodes: {[(e.type.value, e.content) for e in alice.recall().episodes]}")
        print(f"  continuity saved: {alice.load_continuity() is not None}")
        print("bob, run 1 (nothing of alice's reaches his model)")
        agent.run("Which greenhouse heater do we have?", user_id="bob", session_id="bob-1")
        print("alice, run 2")
        agent.run("Which greenhouse heater do we have?", user_id="alice", session_id="alice-2")
        print(f"  alice's memories, as Agno lists them: "
              f"{[m.memory for m in memory.get_user_memories(user_id='alice')]}")
        print("a run with no user_id (refused: anonymous='refuse')")
        nobody = agent.run("Which greenhouse heater do we have?")
        print(f"  status: {nobody.status.value}, model called: no")
        print("the app's own memory, by its own id")
        memory.add_user_memory(UserMemory(memory="Waters at 6am", memory_id="watering"),
                               user_id="alice")
        memory.replace_user_memory("watering", UserMemory(memory="Waters at 7am"),
                                   user_id="alice")
        kept = memory.get_user_memory("watering", user_id="alice")
        print(f"  watering: {kept.memory if kept else None}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
