"""ADK's own FastAPI app (what ``adk web`` / ``adk api_server`` serve), built in-process by
``get_fast_api_app`` over an agents folder holding the guide's ``services.py`` and
``agent.py`` as written, with ``anneal:`` URIs for memory and sessions, driven through its
HTTP API as the dev UI drives it: two users, two sessions each, then a restart.

The guide's agent runs on a stand-in model that only says "Noted."; to see each user's
facts come back, its ``model=Noted()`` becomes ``model="gemini-2.5-flash"`` (what the guide
says to write for a real model) and ADK's model registry (``LLMRegistry``) maps that name to
a scripted model that answers from what it is given: the one substitution (no network, no
key). ``test_guide.py`` runs the same files exactly as written.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from google.adk.cli.fast_api import get_fast_api_app
from google.adk.models import registry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from anneal_memory import Store
from anneal_memory.testing import is_wrap_prompt, scripted_compress

from contract import guide_blocks

APP = "garden"
CODES = {"alice": "4417", "bob": "9083"}


class GardenModel(BaseLlm):
    """Answers a question with every gate code its request holds, otherwise 'Noted.'; a
    wrap prompt (the plugin wraps with the agent's model) gets a valid continuity."""

    model: str = "gemini-2.5-flash"

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"gemini-.*"]

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        texts = [p.text for c in llm_request.contents for p in c.parts or [] if p.text]
        system = llm_request.config.system_instruction if llm_request.config else None
        text = "\n".join(texts + ([system] if isinstance(system, str) else []))
        if texts and is_wrap_prompt(texts[-1]):
            answer = scripted_compress(texts[-1])
        elif texts and "Question:" in texts[-1]:
            codes = sorted(set(re.findall(r"gate code is (\d+)", text)))
            answer = f"Your gate code: {', '.join(codes) or 'unknown'}."
        else:
            answer = "Noted."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]))


@pytest.fixture
def scripted_gemini() -> Iterator[None]:
    """ADK's registry resolves 'gemini-*' to the scripted model for the test's duration."""
    saved = dict(registry._llm_registry_dict)
    registry.LLMRegistry._register(r"gemini-.*", GardenModel)
    registry.LLMRegistry.resolve.cache_clear()
    yield
    registry._llm_registry_dict.clear()
    registry._llm_registry_dict.update(saved)
    registry.LLMRegistry.resolve.cache_clear()


def _guide_file(first_line: str) -> str:
    (block,) = [b for b in guide_blocks("google_adk") if b.startswith(first_line)]
    return block


def _agents_folder(root: Path) -> Path:
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / "services.py").write_text(_guide_file("# agents/services.py"), "utf-8")
    agent = _guide_file("# agents/garden/agent.py")
    assert agent.count("model=Noted()") == 1
    (agents / APP / "agent.py").write_text(
        agent.replace("model=Noted()", 'model="gemini-2.5-flash"'), "utf-8")
    (agents / APP / "__init__.py").write_text("from . import agent\n", "utf-8")
    return agents


def _forget_modules() -> None:
    """What a new process would not have: the agents folder's modules (so a restart loads
    agent.py, and its plugin, afresh)."""
    for name in [n for n in sys.modules if n in ("services", APP) or n.startswith(APP + ".")]:
        del sys.modules[name]


def _app(agents: Path, uri: str) -> Any:
    _forget_modules()
    return get_fast_api_app(agents_dir=str(agents), memory_service_uri=uri,
                            session_service_uri=uri, web=False)


def _turn(client: TestClient, user: str, session_id: str, text: str) -> str:
    response = client.post("/run", json={
        "app_name": APP, "user_id": user, "session_id": session_id,
        "new_message": {"role": "user", "parts": [{"text": text}]}})
    assert response.status_code == 200, response.text
    finals = [p["text"] for e in response.json() if e.get("author") != "user"
              for p in (e.get("content") or {}).get("parts", []) if p.get("text")]
    return finals[-1]


def _new_session(client: TestClient, user: str) -> str:
    response = client.post(f"/apps/{APP}/users/{user}/sessions", json={})
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


#: a PostgreSQL server to run the same app on (set by ``nox -s postgres``; the google_adk
#: sessions have none, so there the app runs on SQLite only)
PG_DSN = os.environ.get("ANNEAL_TEST_PG_DSN", "")


@pytest.fixture(params=["sqlite"] + (["postgresql"] if PG_DSN else []))
def store_location(request: pytest.FixtureRequest, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """(the anneal URI, the Store location) of a fresh store."""
    if request.param == "sqlite":
        db = str(tmp_path / "memory.db")
        yield f"anneal://{db}", db
        return
    import psycopg

    monkeypatch.setenv("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path / "sidecar"))
    name = f"adk_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    dsn = f"{PG_DSN.rsplit('/', 1)[0]}/{name}"
    yield f"anneal+{dsn}", dsn
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_adk_web_app_with_anneal_uris(tmp_path: Path, scripted_gemini: None,
                                      store_location: tuple[str, str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    uri, db = store_location
    monkeypatch.setenv("ANNEAL_MEMORY_URI", uri)
    monkeypatch.setenv("ADK_DISABLE_LOCAL_STORAGE", "1")  # nothing ADK-local beside the store
    agents = _agents_folder(tmp_path)
    first_sessions: dict[str, str] = {}
    with TestClient(_app(agents, uri)) as client:
        for user, code in CODES.items():  # each user's first session: tell a fact
            first_sessions[user] = _new_session(client, user)
            assert _turn(client, user, first_sessions[user], f"My gate code is {code}.") == "Noted."
        # the dev UI's "add session to memory" goes through our service too (nothing new)
        assert client.patch(f"/apps/{APP}/users/alice/memory",
                            json={"session_id": first_sessions["alice"]}).status_code == 200
        for user, code in CODES.items():  # a new session recalls their own fact only
            sid = _new_session(client, user)
            assert _turn(client, user, sid, "Question: what is my gate code?") == \
                f"Your gate code: {code}."
    with Store(db) as store:  # one store: each user's sessions, memory and continuity
        for user, code in CODES.items():
            other = CODES["bob" if user == "alice" else "alice"]
            mine = store.scoped({"project": APP, "user": user})
            assert mine.items("google_adk.sessions").count() == 2
            texts = [e.content for e in mine.recall(limit=50).episodes]
            assert sum(f"gate code is {code}" in t for t in texts) == 1  # saved once
            assert not any(other in t for t in texts)
            continuity = mine.load_continuity() or ""
            assert code in continuity and other not in continuity
    assert sorted(p.name for p in tmp_path.glob("*.db")) == \
        (["memory.db"] if db.endswith(".db") else [])  # no database of ADK's own

    with TestClient(_app(agents, uri)) as client:  # a restart keeps everything
        listed = client.get(f"/apps/{APP}/users/alice/sessions").json()
        assert first_sessions["alice"] in {s["id"] for s in listed} and len(listed) == 2
        session = client.get(f"/apps/{APP}/users/alice/sessions/{first_sessions['alice']}").json()
        assert any("4417" in p.get("text", "") for e in session["events"]
                   for p in (e.get("content") or {}).get("parts", []))
        sid = _new_session(client, "bob")
        assert _turn(client, "bob", sid, "Question: what is my gate code?") == \
            "Your gate code: 9083."
