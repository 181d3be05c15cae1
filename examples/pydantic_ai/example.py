"""Anneal memory on a Pydantic AI agent, offline (a scripted FunctionModel, no API key).

Run: python examples/pydantic_ai/example.py [memory.db]
Two runs of the same agent: the first is told a fact and wraps the session; the second is
asked about it, and the model's instructions show the recalled memory.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from anneal_memory import Store
from anneal_memory.adapters.pydantic_ai import AnnealMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress

models.ALLOW_MODEL_REQUESTS = False  # only the scripted model below may answer


def scripted(messages, info: AgentInfo) -> ModelResponse:
    prompt = " ".join(str(p.content) for p in messages[-1].parts if isinstance(p, UserPromptPart))
    if is_wrap_prompt(prompt):  # the wrap: compress the session into a continuity
        return ModelResponse(parts=[TextPart(scripted_compress(prompt))])
    print(f"  model instructions: {(info.instructions or '(none)')[:300]!r}")
    return ModelResponse(parts=[TextPart("Noted.")])


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, wrap_on_end=True)
        agent = Agent(FunctionModel(scripted), capabilities=[memory])
        print("run 1")
        agent.run_sync("Our greenhouse heater is a Zephyrion 4000.")
        print(f"  episodes: {[(e.type.value, e.content) for e in store.recall(limit=10).episodes]}")
        print(f"  continuity saved: {store.load_continuity() is not None}")
        print("run 2")
        agent.run_sync("Which greenhouse heater do we have?")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
