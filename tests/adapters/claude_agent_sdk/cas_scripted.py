"""Running the real SDK loop (``claude_agent_sdk.query`` / ``ClaudeSDKClient``) on the
scripted CLI, with a tool of the test's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

from anneal_memory.adapters.claude_agent_sdk import AnnealMemory, claude_compressor
from anneal_memory.adapters.claude_agent_sdk.testing import ScriptedCLI, ToolCall, compress_step


@tool("lookup", "Look up a fact about the garden", {"q": str})
async def lookup(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"toolresult for {args['q']}: 2.1 bar"}]}


@tool("broken", "A tool that always fails", {})
async def broken(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "toolfailure: the sensor is offline"}],
            "is_error": True}


def garden_server() -> Any:
    return create_sdk_mcp_server("garden", tools=[lookup, broken])


LOOKUP = ToolCall("mcp__garden__lookup", {"q": "pump pressure"})


def scripted_compressor() -> Any:
    """The framework's own (scripted) model as the compressor: a second SDK query."""
    return claude_compressor(transport=lambda: ScriptedCLI([compress_step]))


@dataclass
class Run:
    cli: ScriptedCLI
    messages: list[Any]

    @property
    def output(self) -> str:
        results = [m for m in self.messages if isinstance(m, ResultMessage)]
        return results[-1].result or "" if results else ""

    @property
    def model_inputs(self) -> list[str]:
        return [c.text for c in self.cli.calls]


def options(memory: AnnealMemory, cwd: Any, **fields: Any) -> ClaudeAgentOptions:
    fields.setdefault("mcp_servers", {"garden": garden_server()})
    return memory.options(cwd=str(cwd), **fields)


async def arun(memory: AnnealMemory, prompt: str, steps: list[Any], *, cwd: Any,
               session_id: str | None = None, opts: ClaudeAgentOptions | None = None,
               **cli: Any) -> Run:
    """One ``query()`` with the memory wired in; ``steps`` script the model."""
    opts = opts or options(memory, cwd)
    transport = ScriptedCLI(steps, options=opts, session_id=session_id, **cli)
    messages = [m async for m in query(prompt=prompt, options=opts, transport=transport)]
    return Run(transport, messages)


def run(memory: AnnealMemory, prompt: str, steps: list[Any], **kw: Any) -> Run:
    return anyio.run(lambda: arun(memory, prompt, steps, **kw))


async def aconversation(memory: AnnealMemory, prompts: list[str], steps: list[Any], *,
                        cwd: Any, session_id: str | None = None) -> Run:
    """Several turns on one ``ClaudeSDKClient`` (one SDK session)."""
    opts = options(memory, cwd)
    transport = ScriptedCLI(steps, options=opts, session_id=session_id)
    messages: list[Any] = []
    async with ClaudeSDKClient(options=opts, transport=transport) as client:
        for prompt in prompts:
            await client.query(prompt)
            messages.extend([m async for m in client.receive_response()])
    return Run(transport, messages)
