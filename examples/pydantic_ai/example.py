"""Anneal memory on a Pydantic AI agent serving two users, offline (a scripted
FunctionModel, no API key).

Run: python examples/pydantic_ai/example.py [memory.db]
One agent, one store, two users told apart by the run's ``deps``. Alice tells a fact and
her run wraps her memory; Bob asks and sees nothing of hers; Alice asks and the model's
input carries her recalled memory.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai import Agent, RunContext, models
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from anneal_memory import Store
from anneal_memory.adapters.pydantic_ai import AnnealMemory
from anneal_memory.errors import IdentityError
from anneal_memory.testing import is_wrap_prompt, scripted_compress

models.ALLOW_MODEL_REQUESTS = False  # only the scripted model below may answer


@dataclass
class Deps:
    user_id: str


def scripted(messages, info: AgentInfo) -> ModelResponse:
    texts = [str(p.content) for m in messages if isinstance(m, ModelRequest)
             for p in m.parts if isinstance(p, UserPromptPart)]
    if is_wrap_prompt(texts[-1]):  # the wrap: compress the session into a continuity
        return ModelResponse(parts=[TextPart(scripted_compress(texts[-1]))])
    print(f"  model input: {' | '.join(texts)[:400]!r}")
    return ModelResponse(parts=[TextPart("Noted.")])


def whose(ctx: RunContext[Deps]) -> dict[str, str]:
    """The run's user, from its deps; a run without one is refused (as in the guide)."""
    if ctx.deps is None or not ctx.deps.user_id:
        raise IdentityError("a run without Deps(user_id=...) gets no memory")
    return {"user": ctx.deps.user_id}


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, namespace=whose, wrap_on_end=True)
        agent = Agent(FunctionModel(scripted), deps_type=Deps, capabilities=[memory])
        print("alice, run 1")
        agent.run_sync("Our greenhouse heater is a Zephyrion 4000.", deps=Deps("alice"))
        alice = store.scoped({"user": "alice"})
        print(f"  alice's episodes: {[(e.type.value, e.content) for e in alice.recall().episodes]}")
        print(f"  continuity saved: {alice.load_continuity() is not None}")
        print(f"  alice's continuity: {(alice.load_continuity() or '')[:200]!r}")
        print("bob, run 1 (nothing of alice's reaches his model)")
        agent.run_sync("Which greenhouse heater do we have?", deps=Deps("bob"))
        print("alice, run 2")
        agent.run_sync("Which greenhouse heater do we have?", deps=Deps("alice"))
        try:
            agent.run_sync("Which greenhouse heater do we have?")  # no deps: no user
        except IdentityError:
            print("a run without a user: refused")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
