"""anneal-memory with LangChain (langchain-core only), offline, for two users.

Run: ``python examples/langchain/example.py [path/to/memory.db]``

An LCEL chain whose prompt gets anneal memory only through ``AnnealRetriever`` (continuity
and recall, rendered as labelled data by ``format_memory_documents``), recorded by
``AnnealCallbackHandler``. Each run says whose it is in ``config["metadata"]``: Alice's
fact and wrap are hers; Bob's run sees none of it; Alice's next run recalls it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate

from anneal_memory import Store
from anneal_memory.adapters.langchain import (
    AnnealCallbackHandler,
    AnnealRetriever,
    format_memory_documents,
    model_compressor,
)
from anneal_memory.errors import IdentityError
from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedModel(GenericFakeChatModel):
    """Replays its script; answers a wrap prompt with a valid continuity."""

    last_prompt: str = ""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if is_wrap_prompt(messages[-1].text):
            reply = AIMessage(content=scripted_compress(messages[-1].text))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        self.last_prompt = "\n".join(m.text for m in messages)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def whose_run(values: dict[str, Any]) -> dict[str, str]:
    """The run's user, from its config; a run without one is refused (as in the guide)."""
    if not values.get("user_id"):
        raise IdentityError("no user_id in the run's config")
    return {"user": values["user_id"]}


def main(db_path: str) -> None:
    with Store(db_path, project_name="Garden") as store:
        model = ScriptedModel(messages=iter([
            AIMessage(content="Noted: the rain barrel holds 200 litres."),
            AIMessage(content="I do not know your barrel."),
            AIMessage(content="About 200 litres."),
        ]))
        handler = AnnealCallbackHandler(store, namespace=whose_run, wrap_on_end=True,
                                        compress=model_compressor(model))
        retriever = AnnealRetriever(memory=store, k=3, include_continuity=True,
                                    namespace=whose_run)
        prompt = ChatPromptTemplate.from_messages([("human", "{memory}"), ("human", "{q}")])
        chain = ({"memory": (lambda x: x["q"]) | retriever | format_memory_documents,
                  "q": lambda x: x["q"]} | prompt | model)

        def ask(user: str, question: str) -> str:
            config = {"callbacks": [handler], "metadata": {"user_id": user}}
            return chain.invoke({"q": question}, config).text

        print("alice, run 1:", ask("alice", "Our rain barrel holds 200 litres"))
        alice = store.scoped({"user": "alice"})
        print("continuity saved:", "200 litres" in (alice.load_continuity() or ""))
        print("bob, run 1:", ask("bob", "How much does the rain barrel hold?"))
        print("bob's prompt holds alice's memory:", "200 litres" in model.last_prompt)
        print("alice, run 2:", ask("alice", "How much does the rain barrel hold?"))
        print("recalled memory in the model's prompt:", "200 litres" in model.last_prompt)
        try:
            chain.invoke({"q": "How much does the rain barrel hold?"}, {"callbacks": [handler]})
        except IdentityError:
            print("a run without a user: refused")
        print("alice's episodes:")
        for ep in reversed(alice.recall(limit=20).episodes):
            print(f"  [{ep.type.value}] trust={ep.trust} {ep.content[:70]}")


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "memory.db")
    main(target)
