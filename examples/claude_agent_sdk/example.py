"""Anneal memory on a Claude Agent SDK agent, offline (a scripted CLI, no key, no network).

Run: python examples/claude_agent_sdk/example.py [memory.db]
Run 1 calls a tool and wraps at Stop; run 2 gets the recalled memory next to its prompt.
The session transcripts go to the same database through AnnealSessionStore.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, query, tool

from anneal_memory import Store
from anneal_memory.adapters.claude_agent_sdk import (
    AnnealMemory,
    AnnealSessionStore,
    claude_compressor,
)
from anneal_memory.adapters.claude_agent_sdk.testing import ScriptedCLI, ToolCall, compress_step


@tool("heater_model", "The greenhouse heater's model", {})
async def heater_model(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "Zephyrion 4000"}]}


async def main(db_path: Path) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="greenhouse-"))
    with Store(db_path, project_name="Gardener") as store:
        # the wrap runs through the SDK's own model: here the scripted one
        memory = AnnealMemory(store, namespace={"user": "alice"},
                              compress=claude_compressor(
                                  transport=lambda: ScriptedCLI([compress_step])))
        options = memory.options(ClaudeAgentOptions(
            cwd=str(workdir), system_prompt="You help gardeners.",
            mcp_servers={"greenhouse": create_sdk_mcp_server("greenhouse", tools=[heater_model])},
            session_store=AnnealSessionStore(store, namespace={"user": "alice"})))

        print("run 1")
        cli = ScriptedCLI([ToolCall("mcp__greenhouse__heater_model"),
                           "The heater is a Zephyrion 4000."], options=options)
        async for _ in query(prompt="Which heater is in the greenhouse?", options=options,
                             transport=cli):
            pass
        view = store.scoped({"user": "alice"})
        shown = [(e.type.value, e.trust, e.content[:50]) for e in view.recall(limit=20).episodes]
        print(f"  episodes: {shown}")
        continuity = view.load_continuity() or ""
        print(f"  continuity saved: {'Zephyrion' in continuity} ({len(continuity)} chars)")

        print("run 2")
        cli2 = ScriptedCLI(["You have a Zephyrion 4000."], options=options)
        async for _ in query(prompt="Remind me of the heater model?", options=options,
                             transport=cli2):
            pass
        added = "\n".join(b["text"] for b in cli2.calls[0].messages[-1]["content"][1:])
        print(f"  model input besides the prompt: {added[:400]!r}")
        transcript = await options.session_store.load(
            {"project_key": cli.project_key, "session_id": cli.session_id})
        print(f"  transcript entries of run 1 in the same database: {len(transcript or [])}")


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db"
    anyio.run(main, path)
