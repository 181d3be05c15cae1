"""Anneal memory on a Microsoft Agent Framework agent serving two users, offline (a scripted
chat client of the framework's own client interface, no API key, instrumentation off).

Run: python examples/agent_framework/example.py [memory.db]
One agent, one store, two users told apart by each run's ``options={"user": ...}``. Alice
tells a fact in one session and her run wraps her memory; Bob asks and sees nothing of
hers; Alice asks in a new session and the model's input carries her recalled memory (the
sessions' histories live in the same database, through the history provider); a run that
names no user is refused before the model is called (``whose``: a multi-user app never
falls back to one shared memory).
"""

from __future__ import annotations

import os

os.environ.setdefault("ENABLE_INSTRUMENTATION", "false")  # before agent_framework is imported

import asyncio  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import (  # noqa: E402
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    FunctionInvocationLayer,
    Message,
)

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.agent_framework import (  # noqa: E402
    AnnealContextProvider,
    RunContext,
)
from anneal_memory.errors import IdentityError  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


class ScriptedClient(FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient):
    """The framework's chat client interface (with its tool loop and chat middleware
    layers, as a real client has), answered by a script: it prints what it was sent."""

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any,
                            **kwargs: Any) -> Any:
        texts = [m.text or "" for m in messages]
        if texts and is_wrap_prompt(texts[-1]):  # the wrap: compress into a continuity
            reply = scripted_compress(texts[-1])
        else:
            memory = " ".join(t for t in texts[:-1] if t.startswith("[anneal-memory]"))
            print(f"  model input: memory={' '.join(memory.split())[-300:]!r} | "
                  f"user={texts[-1]!r}")
            reply = "Noted."

        async def get() -> ChatResponse:
            return ChatResponse(messages=Message(role="assistant", contents=[reply]))
        return get()


def whose(run: RunContext) -> dict[str, str]:
    """The run's memory is its user's: a run that names none is refused."""
    if not run.user:
        raise IdentityError("this run names no user: pass options={'user': ...}")
    return {"user": run.user}


async def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealContextProvider(store, namespace=whose, wrap_on_end=True)
        agent = Agent(ScriptedClient(), "You are a gardening assistant.",
                      context_providers=[memory, memory.history_provider()])
        print("alice, run 1")
        await agent.run("Our greenhouse heater is a Zephyrion 4000.",
                        session=agent.create_session(session_id="alice-1"),
                        options={"user": "alice"})
        alice = store.scoped({"user": "alice"})
        print(f"  alice's episodes: {[(e.type.value, e.content) for e in alice.recall().episodes]}")
        print(f"  continuity saved: {alice.load_continuity() is not None}")
        print("bob, run 1 (nothing of alice's reaches his model)")
        await agent.run("Which greenhouse heater do we have?",
                        session=agent.create_session(session_id="bob-1"),
                        options={"user": "bob"})
        print("alice, run 2 (a new session: only memory carries the fact)")
        await agent.run("Which greenhouse heater do we have?",
                        session=agent.create_session(session_id="alice-2"),
                        options={"user": "alice"})
        history = alice.items("agent_framework.history").list()
        print(f"  alice's sessions in the database: "
              f"{sorted({i.metadata['session_id'] for i in history})}")
        print("a run with no user")
        try:
            await agent.run("Which greenhouse heater do we have?")
        except IdentityError as exc:
            print(f"  refused: {exc}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else
                     Path(tempfile.mkdtemp()) / "memory.db"))
