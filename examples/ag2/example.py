"""anneal-memory on an AG2 ConversableAgent (register_hook), offline with autogen.testing.TestAgent.

Run: python examples/ag2/example.py [db path]
"""

from __future__ import annotations

import os
import sys
import tempfile

from autogen import ConversableAgent
from autogen.testing import TestAgent

from anneal_memory import Store
from anneal_memory.adapters.ag2 import AnnealMemory
from anneal_memory.testing import scripted_compress


def main(db: str) -> None:
    assistant = ConversableAgent("assistant", human_input_mode="NEVER",
                                 llm_config={"config_list": [{"model": "fake",
                                                              "model_client_cls": "FakeClient"}]})
    user = ConversableAgent("user", llm_config=False, human_input_mode="NEVER",
                            code_execution_config=False)
    with Store(db, project_name="AG2Example") as store:
        memory = AnnealMemory(store, compress=scripted_compress)  # the agent's LLM in real use
        memory.add_to_agent(assistant)
        replies = ["Noted: the heater is a Zephyrion 4000.", "It is a Zephyrion 4000."]
        with TestAgent(assistant, replies):
            for message in ("Our greenhouse heater is a Zephyrion 4000.",
                            "Which greenhouse heater do we have?"):
                result = user.initiate_chat(assistant, message=message, max_turns=1, silent=True)
                print(f"user: {message}\nagent: {result.summary}")
        print("recall for 'greenhouse heater':", memory.session.context_for("greenhouse heater"))
        outcome = memory.wrap()
        print(f"wrap: {outcome.status} ({outcome.message})")
        print(f"episodes stored: {store.status().total_episodes}, wraps: {store.status().total_wraps}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
