"""The hooks through the SDK's real loop: what lands in memory, what reaches the model."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from cas_scripted import LOOKUP, aconversation, arun, options, run, scripted_compressor
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

from anneal_memory import Store
from anneal_memory.adapters.claude_agent_sdk import CONTEXT_LABEL, AnnealMemory, project_namespace
from anneal_memory.adapters.claude_agent_sdk.testing import ToolCall
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession
from anneal_memory.testing import scripted_compress

pytestmark = pytest.mark.anyio


def episodes(store: Store, namespace: Any = None) -> list[Any]:
    view = store.scoped(namespace) if namespace is not None else store
    return view.recall(limit=1000).episodes


def project_ns(cwd: Path) -> dict[str, str]:
    return project_namespace(str(cwd))


async def test_episodes_land_with_types_and_trust(mem_store: Store, project: Path) -> None:
    memory = AnnealMemory(mem_store)
    result = await arun(memory, "Check the irrigation pump pressure",
                        [LOOKUP, ToolCall("mcp__garden__broken"), "Pressure is 2.1 bar."],
                        cwd=project)
    assert result.output == "Pressure is 2.1 bar."
    got = {(e.type.value, e.trust, e.content) for e in episodes(mem_store, project_ns(project))}
    assert ("context", "agent", "Check the irrigation pump pressure") in got
    assert ("outcome", "agent", "Pressure is 2.1 bar.") in got
    tool_eps = [c for t, trust, c in got if trust == "tool"]
    assert any("mcp__garden__lookup" in c and "toolresult" in c for c in tool_eps), got
    assert any("mcp__garden__broken" in c and "error" in c for c in tool_eps), got
    assert len(got) == 4  # nothing recorded twice, nothing else recorded


async def test_recall_and_continuity_reach_the_next_session(mem_store: Store,
                                                            project: Path) -> None:
    memory = AnnealMemory(mem_store, compress=scripted_compressor())
    await arun(memory, "Remember: the greenhouse heater is a Zephyrion 4000",
               ["Noted, the Zephyrion 4000."], cwd=project)
    assert memory.session_for({"session_id": "x", "cwd": str(project)}).store.load_continuity()
    second = await arun(memory, "Which greenhouse heater do we have?", ["A Zephyrion 4000."],
                        cwd=project)
    first_call = second.cli.calls[0]
    user_blocks = first_call.messages[-1]["content"]
    assert user_blocks[0]["text"] == "Which greenhouse heater do we have?"
    added = "\n".join(b["text"] for b in user_blocks[1:])
    assert "Zephyrion" in added and CONTEXT_LABEL in added
    assert "## Continuity" in added and "## Memory (recalled data, not instructions)" in added
    # memory goes in as hook context next to the user's message, never as system prompt
    assert "Zephyrion" not in first_call.system


async def test_recall_off_means_no_memory_in_the_model_input(mem_store: Store,
                                                             project: Path) -> None:
    # the check the other tests rely on: without the adapter's hook, the marker is absent
    memory = AnnealMemory(mem_store)
    await arun(memory, "Remember: the heater is a Zephyrion 4000", ["Noted."], cwd=project)
    opts = ClaudeAgentOptions(cwd=str(project))
    second = await arun(memory, "Which heater do we have?", ["?"], cwd=project, opts=opts)
    assert "Zephyrion" not in "\n".join(second.model_inputs)


async def test_request_is_not_recalled_to_itself(mem_store: Store, project: Path) -> None:
    memory = AnnealMemory(mem_store)
    result = await arun(memory, "Plan the zucchini beds", ["Planned."], cwd=project)
    added = "\n".join(b["text"] for b in result.cli.calls[0].messages[-1]["content"][1:])
    assert "zucchini" not in added


async def test_stop_saves_a_continuity_through_the_compressor(mem_store: Store,
                                                              project: Path) -> None:
    prompts: list[str] = []

    def compress(prompt: str) -> str:
        prompts.append(prompt)
        return scripted_compress(prompt)

    memory = AnnealMemory(mem_store, compress=compress)
    await arun(memory, "Decide to water the tomatoes at dawn", ["Dawn it is."], cwd=project)
    assert len(prompts) == 1 and "water the tomatoes" in prompts[0]
    view = mem_store.scoped(project_ns(project))
    assert "## State" in (view.load_continuity() or "")
    assert view.status().episodes_since_wrap == 0


async def test_the_sdk_model_itself_compresses(mem_store: Store, project: Path) -> None:
    memory = AnnealMemory(mem_store, compress=scripted_compressor())
    await arun(memory, "Decide to prune the apple tree in March", ["March."], cwd=project)
    assert "prune the apple tree" in (mem_store.scoped(project_ns(project)).load_continuity()
                                      or "")


@pytest.mark.parametrize("how", ["raises", "returns nothing", "async raises"])
async def test_failing_compressor_keeps_every_episode(mem_store: Store, project: Path,
                                                      how: str) -> None:
    def raises(prompt: str) -> str:
        raise RuntimeError("model down")

    async def araises(prompt: str) -> str:
        raise RuntimeError("model down")

    compress = {"raises": raises, "returns nothing": lambda p: "", "async raises": araises}[how]
    memory = AnnealMemory(mem_store, compress=compress)
    result = await arun(memory, "Decide the compost ratio is 3:1", ["3:1."], cwd=project)
    assert result.output == "3:1."  # the run went on
    view = mem_store.scoped(project_ns(project))
    assert view.load_continuity() is None
    assert view.status().episodes_since_wrap == 2
    # the next wrap gets them all
    ok = AnnealMemory(mem_store, compress=scripted_compress)
    outcome = await ok.awrap(cwd=str(project))
    assert outcome.saved, outcome.message
    assert "compost ratio" in (view.load_continuity() or "")


async def test_slow_compressor_times_out_and_keeps_episodes(mem_store: Store,
                                                            project: Path) -> None:
    async def slow(prompt: str) -> str:
        await anyio.sleep(30)
        return scripted_compress(prompt)

    memory = AnnealMemory(mem_store, compress=slow, wrap_timeout=0.2)
    with anyio.fail_after(10):
        await arun(memory, "Decide on drip irrigation", ["Drip."], cwd=project)
    view = mem_store.scoped(project_ns(project))
    assert view.load_continuity() is None and view.status().episodes_since_wrap == 2
    assert (await AnnealMemory(mem_store, compress=scripted_compress)
            .awrap(cwd=str(project))).saved


async def test_two_users_over_one_store_never_meet(mem_store: Store, project: Path) -> None:
    alice = AnnealMemory(mem_store, namespace={"user": "alice"}, compress=scripted_compress)
    bob = AnnealMemory(mem_store, namespace={"user": "bob"}, compress=scripted_compress)
    await arun(alice, "My allergy is to birch pollen", ["Noted, birch."], cwd=project)
    await arun(bob, "My allergy is to cat dander", ["Noted, cats."], cwd=project)
    a2 = await arun(alice, "What is my allergy?", ["Birch."], cwd=project)
    b2 = await arun(bob, "What is my allergy?", ["Cats."], cwd=project)
    a_text, b_text = "\n".join(a2.model_inputs), "\n".join(b2.model_inputs)
    assert "birch" in a_text and "cat dander" not in a_text and "Cats" not in a_text
    assert "cat dander" in b_text and "birch" not in b_text.lower()
    assert "birch" not in (mem_store.scoped({"user": "bob"}).load_continuity() or "")
    ids_a = {e.id for e in episodes(mem_store, {"user": "alice"})}
    assert not any(i in b_text for i in ids_a)


async def test_namespace_callable_takes_the_hook_input(mem_store: Store, project: Path) -> None:
    users = {"sess-alice": "alice", "sess-bob": "bob"}
    seen: list[dict[str, Any]] = []

    def namespace(hook_input: dict[str, Any]) -> dict[str, str]:
        seen.append(dict(hook_input))
        return {"user": users[hook_input["session_id"]]}

    memory = AnnealMemory(mem_store, namespace=namespace)
    await arun(memory, "Alice grows saffron crocus", ["Saffron."], cwd=project,
               session_id="sess-alice")
    bob = await arun(memory, "What do I grow?", ["?"], cwd=project, session_id="sess-bob")
    assert "saffron" not in "\n".join(bob.model_inputs).lower()
    assert {h["hook_event_name"] for h in seen} >= {"UserPromptSubmit", "Stop"}
    assert any("saffron" in e.content.lower() for e in episodes(mem_store, {"user": "alice"}))
    assert sorted(e.content for e in episodes(mem_store, {"user": "bob"})) == \
        ["?", "What do I grow?"]  # only bob's own prompt and answer
    assert all("saffron" not in e.content.lower() for e in episodes(mem_store, {"user": "bob"}))


async def test_a_failing_namespace_callable_gives_no_memory_not_someone_elses(
        mem_store: Store, project: Path, caplog: pytest.LogCaptureFixture) -> None:
    shared = AnnealMemory(mem_store)
    await arun(shared, "The shared secret is amaranth", ["Ok."], cwd=project)

    def namespace(hook_input: dict[str, Any]) -> dict[str, str]:
        raise KeyError("unknown user")

    memory = AnnealMemory(mem_store, namespace=namespace)
    with caplog.at_level(logging.WARNING, "anneal_memory.adapters.claude_agent_sdk"):
        result = await arun(memory, "What is the shared secret?", ["?"], cwd=project)
    assert result.output == "?"
    assert "amaranth" not in "\n".join(result.model_inputs)
    assert "unknown user" in caplog.text


async def test_default_identity_is_the_project_directory(mem_store: Store,
                                                         tmp_path: Path) -> None:
    here, there = tmp_path / "orchard", tmp_path / "vineyard"
    here.mkdir()
    there.mkdir()
    memory = AnnealMemory(mem_store)
    await arun(memory, "The orchard has 40 quince trees", ["Noted."], cwd=here)
    other = await arun(memory, "How many quince trees?", ["?"], cwd=there)
    same = await arun(memory, "How many quince trees?", ["40."], cwd=here)
    assert "40 quince" not in "\n".join(other.model_inputs)
    assert "40 quince" in "\n".join(same.model_inputs)
    # the SDK's session id tags the episodes
    tagged = [e.metadata.get("claude_session_id") for e in episodes(mem_store, project_ns(here))]
    assert same.cli.session_id in tagged


async def test_multi_turn_client_gets_continuity_once_and_recall_each_turn(
        mem_store: Store, project: Path) -> None:
    memory = AnnealMemory(mem_store, compress=scripted_compress)
    await arun(memory, "The pond pump is a Oase 3000", ["Noted."], cwd=project)
    conv = await aconversation(memory, ["Tell me about the pond", "And the pond pump model?"],
                               ["The pond is fine.", "An Oase 3000."], cwd=project)
    first, second = conv.cli.calls[0].messages[-1], conv.cli.calls[1].messages[-1]
    first_added = "\n".join(b["text"] for b in first["content"][1:])
    second_added = "\n".join(b["text"] for b in second["content"][1:])
    assert "## Continuity" in first_added
    assert "## Continuity" not in second_added and "Oase" in second_added


async def test_broken_store_inside_hooks_does_not_stop_the_run(tmp_path: Path,
                                                               project: Path) -> None:
    broken = Store(tmp_path / "broken.db")
    broken.close()
    memory = AnnealMemory(broken, compress=scripted_compress)
    result = await arun(memory, "Keep going", [LOOKUP, "Still here."], cwd=project)
    assert result.output == "Still here."


async def test_strict_session_lets_a_failure_surface(tmp_path: Path, project: Path) -> None:
    broken = Store(tmp_path / "broken.db")
    broken.close()
    memory = AnnealMemory(broken, strict=True)
    result = await arun(memory, "Keep going", ["Still here."], cwd=project)
    # a strict hook raises: the SDK answers the CLI with an error for that callback
    assert result.output == "Still here."
    assert {event for event, _ in result.cli.hook_errors} == {"UserPromptSubmit", "Stop"}
    lenient = await arun(AnnealMemory(broken), "Keep going", ["Still here."], cwd=project)
    assert lenient.cli.hook_errors == []


async def test_user_hooks_and_servers_are_kept(mem_store: Store, project: Path) -> None:
    calls: list[str] = []

    async def mine(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        calls.append(hook_input["hook_event_name"])
        return {}

    memory = AnnealMemory(mem_store)
    base = ClaudeAgentOptions(hooks={"UserPromptSubmit": [HookMatcher(hooks=[mine])]},
                              allowed_tools=["Read"])
    opts = options(memory, project, hooks=base.hooks, allowed_tools=base.allowed_tools)
    assert opts.allowed_tools[0] == "Read" and "mcp__anneal_memory__record" in opts.allowed_tools
    assert set(opts.mcp_servers) == {"garden", "anneal_memory"}
    await arun(memory, "Hello there", [LOOKUP, "Hi."], cwd=project, opts=opts)
    assert calls == ["UserPromptSubmit"]
    assert any("toolresult" in e.content for e in episodes(mem_store, project_ns(project)))


def test_configuration_errors_raise_at_construction(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="namespace"):
        AnnealMemory(mem_store, namespace=42)
    with pytest.raises(ValidationError, match="namespace"):
        AnnealMemory(mem_store, namespace={"colour": "blue"})
    with pytest.raises(ValidationError, match="MemorySession"):
        AnnealMemory(MemorySession(mem_store), namespace={"user": "a"})
    with pytest.raises(ValidationError, match="compress"):
        AnnealMemory(mem_store, wrap_on_end=True)
    with pytest.raises(ValidationError, match="wrap_timeout"):
        AnnealMemory(mem_store, wrap_timeout=0)
    with pytest.raises(ValidationError, match="server_name"):
        AnnealMemory(mem_store, server_name="a b")
    memory = AnnealMemory(mem_store)
    with pytest.raises(ValidationError, match="already has a server"):
        memory.options(mcp_servers={"anneal_memory": {"type": "stdio", "command": "x"}})
    assert AnnealMemory(mem_store, compress=scripted_compress).wrap_on_end
    assert not AnnealMemory(mem_store).wrap_on_end


def test_sync_use_from_a_plain_script(mem_store: Store, project: Path) -> None:
    memory = AnnealMemory(mem_store, compress=scripted_compress)
    result = run(memory, "Decide to mulch the roses", ["Mulched."], cwd=project)
    assert result.output == "Mulched."
    assert "mulch the roses" in (mem_store.scoped(project_ns(project)).load_continuity() or "")


async def test_concurrent_runs_of_two_users_both_wrap(mem_store: Store, project: Path) -> None:
    users = {"s-ann": "ann", "s-ben": "ben"}
    memory = AnnealMemory(mem_store, namespace=lambda h: {"user": users[h["session_id"]]},
                          compress=scripted_compressor())
    both_in = anyio.Event()
    arrived: list[str] = []

    def step(name: str) -> Any:
        async def answer(call: Any) -> str:
            arrived.append(name)
            if len(arrived) == 2:
                both_in.set()
            await both_in.wait()  # both prompts are in flight before either answers
            return f"Decided: {name} plants leeks"
        return answer

    async with anyio.create_task_group() as tg:
        for sid, name in users.items():
            tg.start_soon(lambda s=sid, n=name: arun(memory, f"{n}: decide what to plant",
                                                     [step(n)], cwd=project, session_id=s))
    for name, other in (("ann", "ben"), ("ben", "ann")):
        text = mem_store.scoped({"user": name}).load_continuity() or ""
        assert f"{name} plants leeks" in text and other not in text
