"""The operator's side of semantic recall: search --semantic / --mode, the embed
command (progress on stderr, --json), status, and refusals without a traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store
from anneal_memory.cli.main import main

NURSE = "I started as a nurse at the county hospital"
QUERY = "what does she do for a living"


def run(db: Path, capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["--db", str(db), *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


@pytest.fixture
def job_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An importable embedder module (what --embedder module:attribute names)."""
    (tmp_path / "jobemb.py").write_text(
        "from anneal_memory.testing import HashingEmbedder\n"
        "EMBEDDER = HashingEmbedder(aliases={'living': 'job', 'nurse': 'job'})\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("ANNEAL_MEMORY_EMBEDDER", raising=False)
    return "jobemb:EMBEDDER"


def test_embed_then_search_by_meaning(db: Path, capsys: Any, job_module: str) -> None:
    with Store(db) as s:
        nurse = s.record(NURSE, "observation")
        s.record_many([{"content": f"garden note {i}", "episode_type": "observation"}
                       for i in range(150)])
    rc, out, err = run(db, capsys, "embed", "--embedder", job_module, "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["embedded"] == 151 and rep["pending"] == 0 and rep["embedded_episodes"] == 151
    assert rep["model"].endswith("hashing-bow-256") and rep["dims"] == 256
    assert "embedded 151/151" in err.splitlines()[-1]  # progress, on stderr only
    rc, out, _ = run(db, capsys, "search", QUERY, "--semantic", "--embedder", job_module,
                     "--limit", "1", "--json")
    assert rc == 0 and [e["id"] for e in json.loads(out)["episodes"]] == [nurse.id]
    rc, out, _ = run(db, capsys, "search", QUERY, "--embedder", job_module)  # hybrid
    assert rc == 0 and NURSE in out.splitlines()[0]
    rc, out, _ = run(db, capsys, "search", QUERY, "--mode", "keyword")
    assert rc == 0 and NURSE not in out
    rc, out, _ = run(db, capsys, "status", "--embedder", job_module)
    assert "embedder: jobemb" not in out  # the model id names the class, not the module
    assert "151 of 151 episodes embedded" in out and "vectors: 151 episode(s)" in out
    rc, out, _ = run(db, capsys, "status", "--json")
    assert json.loads(out)["vectors"][0]["episodes"] == 151


def test_embed_rebuild_and_the_environment(db: Path, capsys: Any, job_module: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as s:
        s.record(NURSE, "observation")
    monkeypatch.setenv("ANNEAL_MEMORY_EMBEDDER", "anneal_memory.testing:HashingEmbedder")
    rc, out, _ = run(db, capsys, "embed")
    assert rc == 0 and "Embedded 1 episode(s)" in out
    rc, out, _ = run(db, capsys, "embed", "--rebuild")
    assert rc == 0 and "removed 1 old vector(s) first" in out
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM episode_vectors").fetchone() == (1,)


@pytest.mark.parametrize("argv, message", [
    (("embed",), "embed needs an embedder: --embedder wordllama"),
    (("search", "x", "--semantic"), "search --mode semantic needs an embedder"),
    (("embed", "--embedder", "nosuchmodule:thing"), "cannot load the embedder"),
    (("embed", "--embedder", "justaname"), "unknown embedder 'justaname'"),
    (("embed", "--embedder", "json:dumps"), "the embedder returned"),
])
def test_refusals_name_the_fix(db: Path, capsys: Any, argv: tuple[str, ...], message: str,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANNEAL_MEMORY_EMBEDDER", raising=False)
    with Store(db) as s:
        s.record(NURSE, "observation")
    rc, _out, err = run(db, capsys, *argv)
    assert rc == 1 and message in err, err
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM episode_vectors").fetchone() == (0,)
