"""anneal-memory on a Haystack Agent, offline: MockChatGenerator plays the model.

Run: python examples/haystack/example.py [db path]

One Agent serves two users, told apart by ``hook_context={"user_id": ...}``. Alice gives a
fact and her run wraps; a new conversation of hers gets it back as memory, bob's does not.
Then alice chats on in the usual pattern (``result["messages"] + [new]``): each model call
gets one memory message, and the history the Agent returns holds none.
A run that names no user is refused by the namespace callable before the model is called.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack.components.agents import Agent  # noqa: E402
from haystack.components.generators.chat import MockChatGenerator  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.haystack import AnnealMemory  # noqa: E402
from anneal_memory.errors import IdentityError  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402

SEEN: list[list[str]] = []  # the texts of each model call


def model(messages: list[ChatMessage]) -> str:
    """A scripted model: writes a continuity for wrap prompts, otherwise acknowledges."""
    last = messages[-1].text or ""
    if is_wrap_prompt(last):
        return scripted_compress(last)
    SEEN.append([m.text or "" for m in messages])
    return f"Noted: {last}"


def whose(hook_context: dict) -> dict:
    """The run's user; a run without one is refused, never given the store's memory."""
    user = hook_context.get("user_id")
    if not user:
        raise IdentityError("this run names no user_id")
    return {"user": user}


def ask(agent: Agent, user: str, question: str) -> list[str]:
    """A new conversation of ``user``: what the model was given for it."""
    result = agent.run(messages=[ChatMessage.from_user(question)], hook_context={"user_id": user})
    print(f"{user}: {question}\nagent: {result['last_message'].text}")
    return SEEN[-1]


def main(db: str) -> None:
    generator = MockChatGenerator(response_fn=model)
    with Store(db, project_name="HaystackExample") as store:
        memory = AnnealMemory(store, namespace=whose, chat_generator=generator,
                              wrap_on_end=True)
        agent = Agent(chat_generator=generator, hooks=memory.hooks())

        ask(agent, "alice", "Our greenhouse heater is a Zephyrion 4000.")
        seen = ask(agent, "alice", "Which greenhouse heater do we have?")
        print("alice's memory reached the model:", any("Zephyrion" in t for t in seen))
        seen = ask(agent, "bob", "Which greenhouse heater do we have?")
        print("bob's model saw alice's memory:", any("Zephyrion" in t for t in seen))

        history = [ChatMessage.from_user("Which greenhouse heater do we have?")]
        for follow_up in ("How much power does it draw?", "Where is it installed?"):
            result = agent.run(messages=history, hook_context={"user_id": "alice"})
            history = result["messages"] + [ChatMessage.from_user(follow_up)]
        agent.run(messages=history, hook_context={"user_id": "alice"})
        blocks = sum(1 for t in SEEN[-1] if "## Memory" in t or "## Continuity" in t)
        print(f"memory messages in the last model call: {blocks}")
        kept = sum(1 for m in history if (m.meta or {}).get("anneal_memory"))
        print(f"memory messages in the returned history: {kept}")

        calls = len(SEEN)
        try:
            agent.run(messages=[ChatMessage.from_user("Which greenhouse heater do we have?")])
        except IdentityError as refused:
            print(f"a run without a user: refused ({refused}); model calls: {len(SEEN) - calls}")

        alice = store.scoped({"user": "alice"})
        print(f"alice: {alice.status().total_episodes} episodes, {alice.status().total_wraps} wraps; "
              f"bob: {store.scoped({'user': 'bob'}).status().total_wraps} wraps")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
