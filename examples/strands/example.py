"""Anneal memory on a Strands agent serving two users, offline (a scripted Strands Model,
no network, no key).

Run: python examples/strands/example.py [memory.db]
One memory manager, one store, two users told apart by each call's
``invocation_state["user_id"]``. Alice tells a fact and her invocation wraps her memory;
Bob asks and sees nothing of hers; Alice asks again (on a new Agent, so no chat history
carries the fact) and the model's input carries her recalled memory.
A call that names no user is refused by the namespace callable before the model runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from strands import Agent  # noqa: E402
from strands.models import Model  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.strands import AnnealMemory, RunContext  # noqa: E402
from anneal_memory.errors import IdentityError  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


class ScriptedModel(Model):
    """Strands' model interface, answering from a script: "Noted.", or a continuity for
    the wrap prompt. It prints the last user message it received, memory included."""

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, output_model: Any, prompt: Any,
                                system_prompt: str | None = None, **kwargs: Any):
        raise NotImplementedError
        yield

    async def stream(self, messages: list[dict[str, Any]], tool_specs: Any = None,
                     system_prompt: str | None = None, **kwargs: Any):
        text = " | ".join(b["text"].strip() for b in messages[-1]["content"] if "text" in b)
        if is_wrap_prompt(text):  # the wrap: compress the session into a continuity
            answer = scripted_compress(text)
        else:
            print(f"  model input: {text[:1500]!r}")
            answer = "Noted."
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": answer}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def whose(run: RunContext) -> dict[str, str]:
    """The call's user; a call without one is refused, never given the store's memory."""
    user_id = run.invocation_state.get("user_id")
    if not user_id:
        raise IdentityError("this call names no user_id")
    return {"user": user_id}


def ask(memory: AnnealMemory, user: str | None, text: str) -> None:
    # one Agent per conversation (Strands refuses two calls at once on one Agent);
    # the memory manager is shared by all of them
    agent = Agent(model=ScriptedModel(), memory_manager=memory, callback_handler=None)
    agent(text, invocation_state={"user_id": user})


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory(store, namespace=whose, wrap_on_end=True)
        print("alice, run 1")
        ask(memory, "alice", "Our greenhouse heater is a Zephyrion 4000.")
        alice = store.scoped({"user": "alice"})
        print(f"  alice's episodes: {[(e.type.value, e.content) for e in alice.recall().episodes]}")
        print(f"  continuity saved: {alice.load_continuity() is not None}")
        print("bob, run 1 (nothing of alice's reaches his model)")
        ask(memory, "bob", "Which greenhouse heater do we have?")
        print("alice, run 2")
        ask(memory, "alice", "Which greenhouse heater do we have?")
        print("a call without a user")
        try:
            ask(memory, None, "Which greenhouse heater do we have?")
        except IdentityError as refused:
            print(f"  refused before the model ran: {refused}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db")
