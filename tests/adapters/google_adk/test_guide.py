"""docs/integrations/google_adk.md as written, offline.

Every Python block runs as written, one after another in one fresh folder, with the network
refused and no keys (``offline_guide_tests``). Then the ``adk web`` steps as a reader follows
them: the guide's ``mkdir``, its ``services.py`` and ``agent.py`` saved where their first
line says, the agent module imported (which must create no file), and ADK's own FastAPI app
(what ``adk web`` / ``adk api_server`` serve) built over that folder with the guide's URIs
and driven over HTTP, on the stand-in model the guide's ``agent.py`` defines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from guide_blocks import NO_NETWORK, guide_blocks, offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "google_adk", blocks=4, last_lines={3: "empty"})

#: what ``adk api_server --memory_service_uri=... --session_service_uri=... agents/`` serves,
#: in-process: one user's turn over HTTP, then what the store holds
SERVE = """
import os

from fastapi.testclient import TestClient
from google.adk.cli.fast_api import get_fast_api_app

from anneal_memory import Store

uri = "anneal://" + os.path.abspath("memory.db")
app = get_fast_api_app(agents_dir="agents", memory_service_uri=uri, session_service_uri=uri,
                       web=False)
with TestClient(app) as client:
    session = client.post("/apps/garden/users/alice/sessions", json={}).json()["id"]
    events = client.post("/run", json={
        "app_name": "garden", "user_id": "alice", "session_id": session,
        "new_message": {"role": "user", "parts": [{"text": "Our heater is a Zephyrion 4000"}]}})
    assert events.status_code == 200, events.text
    print("reply:", [p["text"] for e in events.json() for p in e["content"]["parts"]][-1])
with Store("memory.db") as store:
    alice = store.scoped({"project": "garden", "user": "alice"})
    print("recorded:", any("Zephyrion" in e.content for e in alice.recall(limit=20).episodes))
    print("wrapped:", "Zephyrion" in (alice.load_continuity() or ""))
"""


def _run(code: str, folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANNEAL_MEMORY_URI")}
    done = subprocess.run([sys.executable, "-c", NO_NETWORK + code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    report = f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, report
    assert "network refused" not in done.stderr, report
    return done.stdout


def test_the_adk_web_steps_as_written(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[3] / "docs/integrations/google_adk.md").read_text()
    assert "```bash\nmkdir -p agents/garden\n```" in text
    (tmp_path / "agents/garden").mkdir(parents=True)            # the guide's mkdir
    saved = []
    for block in guide_blocks("google_adk"):
        first = block.splitlines()[0]
        if first.startswith("# agents/"):                      # a file the guide says to save
            path = tmp_path / first[2:]
            path.write_text(block, "utf-8")
            saved.append(first[2:])
    assert saved == ["agents/services.py", "agents/garden/agent.py"]
    before = sorted(p.name for p in tmp_path.iterdir())
    _run("import runpy\nrunpy.run_path('agents/garden/agent.py')\n", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # importing made no file
    out = _run(SERVE, tmp_path)
    assert out.splitlines() == ["reply: Noted.", "recorded: True", "wrapped: True"], out
