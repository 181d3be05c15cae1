"""``anneal:`` URIs for ADK's tooling: parsing, options, typed refusals at start-up, and
registration in ADK's own service registry (services.py helper and services.yaml)."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import textwrap
from pathlib import Path

import pytest
from google.adk.cli.service_registry import ServiceRegistry, load_services_module
from google.adk.cli.utils.service_factory import (
    create_memory_service_from_options,
    create_session_service_from_options,
)

from anneal_memory import Store
from anneal_memory.adapters.google_adk import (
    AnnealMemoryService,
    AnnealSessionService,
    ServiceUriError,
    parse_uri,
    register_services,
)
from anneal_memory.adapters.google_adk._service import URI_OPTIONS
from anneal_memory.errors import StoreError

APP = "garden"


def _remember(service: AnnealMemoryService, text: str) -> None:
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[
        MemoryEntry(content=types.Content(parts=[types.Part(text=text)]))]))


def test_a_sqlite_uri_opens_that_store_with_its_options(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    service = AnnealMemoryService(uri=f"anneal://{db}?search_limit=3&strict=true"
                                      "&record_intermediate=1&recall_limit=4")
    assert (service.search_limit, service.session.strict, service.record_intermediate) == \
        (3, True, True)
    assert service.session.recall_limit == 4
    _remember(service, "The gate code is 8080")
    service.close()
    with Store(db) as store:  # the very file the URI named, the user's own namespace
        assert store.scoped({"project": APP, "user": "alice"}).recall(keyword="gate").episodes
    # the same URI as the first argument, and with localhost as the (empty) host
    again = AnnealMemoryService(f"anneal://localhost{db}")
    found = asyncio.run(again.search_memory(app_name=APP, user_id="alice", query="gate code"))
    assert len(found.memories) == 1
    again.close()


def test_a_postgresql_uri_keeps_the_servers_parameters_and_takes_ours() -> None:
    parsed = parse_uri("anneal+postgresql://ann:s3cret@db.local:5433/mem?sslmode=require"
                       "&search_limit=2", URI_OPTIONS)
    assert parsed.location == "postgresql://ann:s3cret@db.local:5433/mem?sslmode=require"
    assert parsed.options == {"search_limit": 2}
    assert "s3cret" not in parsed.shown
    assert parse_uri("anneal+postgres://h/db", URI_OPTIONS).location == "postgresql://h/db"


@pytest.mark.parametrize(("uri", "fix"), [
    ("", "non-empty"),
    ("sqlite:///tmp/m.db", "not an anneal URI"),
    ("anneal://relative/m.db", "three slashes"),
    ("anneal:relative.db", "absolute path"),
    ("anneal:///tmp/m.db?bogus=1", "unknown option 'bogus'"),
    ("anneal:///tmp/m.db?search_limit=0", "search_limit='0' is not valid"),
    ("anneal:///tmp/m.db?strict=maybe", "strict='maybe' is not valid"),
    ("anneal:///tmp/m.db?search_limit=2&search_limit=3", "twice"),
    ("anneal:///tmp/m.db#frag", "fragment"),
    ("anneal+postgresql://", "names no server"),
])
def test_malformed_uris_are_typed_errors_naming_the_fix(uri: str, fix: str) -> None:
    with pytest.raises(ServiceUriError, match=fix):
        AnnealMemoryService(uri=uri)


def test_a_location_that_is_not_a_store_is_refused_at_construction(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just some notes that are long enough to be read")
    with pytest.raises(ServiceUriError, match="not an anneal-memory store"):
        AnnealMemoryService(uri=f"anneal://{text}")
    with pytest.raises(ServiceUriError, match="does not exist: create it"):
        AnnealMemoryService(uri=f"anneal://{tmp_path}/missing/memory.db")
    with pytest.raises(ServiceUriError, match="is a folder"):
        AnnealMemoryService(uri=f"anneal://{tmp_path}")
    with pytest.raises(ServiceUriError, match="give either"):
        AnnealMemoryService(tmp_path / "m.db", uri=f"anneal://{tmp_path}/m.db")
    with pytest.raises(ServiceUriError, match="give it once"):
        AnnealMemoryService(uri=f"anneal://{tmp_path}/m.db?search_limit=2", search_limit=5)


def test_postgresql_without_the_extra_names_it(tmp_path: Path) -> None:
    with pytest.raises(ServiceUriError) as err:
        AnnealMemoryService(uri="anneal+postgresql://nobody@127.0.0.1:1/none")
    if importlib.util.find_spec("psycopg") is None:  # the google_adk session has no psycopg
        assert "pip install 'anneal-memory[postgres]'" in str(err.value)
    assert "anneal+postgresql://nobody@127.0.0.1:1/none" in str(err.value)


def test_register_services_puts_every_scheme_in_adks_registry(tmp_path: Path) -> None:
    registry = ServiceRegistry()
    register_services(registry)
    service = registry.create_memory_service(f"anneal://{tmp_path}/m.db?search_limit=4",
                                             agents_dir=str(tmp_path))
    assert isinstance(service, AnnealMemoryService) and service.search_limit == 4
    service.close()
    with pytest.raises(ServiceUriError):  # the other schemes reach us too
        registry.create_memory_service("anneal+postgres://", agents_dir=str(tmp_path))
    sessions = registry.create_session_service(f"anneal://{tmp_path}/m.db",
                                               agents_dir=str(tmp_path))
    assert isinstance(sessions, AnnealSessionService)
    sessions.close()
    with pytest.raises(ServiceUriError, match="unknown option 'strict'"):  # no options
        registry.create_session_service(f"anneal://{tmp_path}/m.db?strict=1",
                                        agents_dir=str(tmp_path))


def _guide_services_yaml() -> str:
    """The guide's services.yaml, as written (an indented block: the docs test runs only
    python, shell, json and toml fences)."""
    guide = (Path(__file__).resolve().parents[3] / "docs" / "integrations" / "google_adk.md")
    match = re.search(r"\n\n((?:    .*\n)+)", guide.read_text("utf-8").split("services.yaml", 1)[1])
    assert match is not None and "AnnealSessionService" in match.group(1)
    return textwrap.dedent(match.group(1))


def test_services_yaml_and_adks_factory_build_it_and_refuse_a_bad_uri(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "services.yaml").write_text(_guide_services_yaml(), "utf-8")
    load_services_module(str(agents))  # what get_fast_api_app does with the agents folder
    service = create_memory_service_from_options(base_dir=str(agents),
                                                 memory_service_uri=f"anneal://{tmp_path}/m.db")
    assert isinstance(service, AnnealMemoryService)
    _remember(service, "Roses by the wall")
    service.close()
    sessions = create_session_service_from_options(
        base_dir=str(agents), session_service_uri=f"anneal://{tmp_path}/m.db")
    assert isinstance(sessions, AnnealSessionService)
    sessions.close()
    # a bad URI fails when the app is built (a ValueError, which adk web reports in one line)
    with pytest.raises(ValueError, match="unknown option 'serch_limit'"):
        create_memory_service_from_options(
            base_dir=str(agents), memory_service_uri=f"anneal://{tmp_path}/m.db?serch_limit=3")


def test_the_plugin_takes_the_uri_and_saves_once_to_the_same_store(tmp_path: Path) -> None:
    from adk_scripted import ScriptedLlm, run_turn
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    from anneal_memory.adapters.google_adk import AnnealMemoryPlugin

    uri = f"anneal://{tmp_path}/memory.db"
    plugin = AnnealMemoryPlugin(uri)  # as an agents folder's agent.py builds it
    runner_memory = AnnealMemoryService(uri=uri)  # what ADK builds from --memory_service_uri
    runner = Runner(app=App(name=APP, root_agent=LlmAgent(name="g", model=ScriptedLlm(inputs=[])),
                            plugins=[plugin]),
                    session_service=InMemorySessionService(), memory_service=runner_memory)
    asyncio.run(run_turn(runner, "alice", "The gate code is 8080"))
    found = asyncio.run(runner_memory.search_memory(app_name=APP, user_id="alice", query="gate"))
    assert len(found.memories) == 1  # one memory, whichever of the two services saved it
    asyncio.run(runner.close())  # awaits the plugin's close: its own service's store closes
    with pytest.raises(StoreError, match="closed"):
        plugin.memory.store.recall()
    runner_memory.close()
    with pytest.raises(ServiceUriError):
        AnnealMemoryPlugin("anneal://relative/memory.db")


def test_a_plugin_on_a_store_not_created_yet_creates_it_at_its_first_run(
        tmp_path: Path) -> None:
    """An agent.py builds its plugin when ADK imports it: that must create no file. The
    store is created when the plugin first runs; a bad URI or option still fails at once."""
    from adk_scripted import ScriptedLlm, run_turn
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    from anneal_memory.adapters.google_adk import AnnealMemoryPlugin
    from anneal_memory.errors import ValidationError

    uri = f"anneal://{tmp_path}/memory.db"
    plugin = AnnealMemoryPlugin(uri, wrap_on_end=True)
    assert list(tmp_path.iterdir()) == []  # building the plugin made no file
    runner = Runner(app=App(name=APP, root_agent=LlmAgent(name="g", model=ScriptedLlm(inputs=[])),
                            plugins=[plugin]),
                    session_service=InMemorySessionService())
    asyncio.run(run_turn(runner, "alice", "The gate code is 8080"))
    assert (tmp_path / "memory.db").exists()
    with Store(str(tmp_path / "memory.db")) as store:  # the first run went to that store
        alice = store.scoped({"project": APP, "user": "alice"})
        assert any("8080" in e.content for e in alice.recall(limit=10).episodes)
    asyncio.run(runner.close())
    with pytest.raises(StoreError, match="closed"):
        plugin.memory.store.recall()
    # refused at construction, nothing created
    with pytest.raises(ServiceUriError, match="does not exist"):
        AnnealMemoryPlugin(f"anneal://{tmp_path}/no/such/folder/memory.db")
    with pytest.raises(ServiceUriError, match="unknown option"):
        AnnealMemoryPlugin(f"anneal://{tmp_path}/other.db?serch_limit=3")
    with pytest.raises(ValidationError, match="wrap_on_end"):
        AnnealMemoryPlugin(f"anneal://{tmp_path}/other.db", wrap_on_end="yes")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["memory.db"]


def test_a_uri_store_embeds_with_the_services_embedder(tmp_path) -> None:
    from anneal_memory.testing import HashingEmbedder

    embedder = HashingEmbedder()
    service = AnnealMemoryService(uri=f"anneal://{tmp_path / 'm.db'}", embedder=embedder)
    try:
        assert service.base_session.store.embedder is not None
        assert service.base_session.store.embedder.model.endswith(embedder.model)
    finally:
        service.close()
