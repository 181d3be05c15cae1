"""The wrap over MCP: the baton gate (capture-only until the operator claims), a full
prepare -> compress -> save, the immune system's report, and cancelling."""

from __future__ import annotations

import re
from pathlib import Path

from anneal_memory import Store, claim_baton
from anneal_memory.testing import scripted_compress

from mcphelp import SESSION, call, connect, run


def _token(reply: str) -> str:
    m = re.search(r"^Wrap token: (\S+)$", reply, re.MULTILINE)
    assert m, reply
    return m.group(1)


def _compress(package: str, extra_pattern: str | None = None) -> str:
    """What the agent's own model would do, deterministically."""
    text = scripted_compress(package)
    if extra_pattern:
        text = text.replace("## Patterns\n", f"## Patterns\n{extra_pattern}\n", 1)
    return text


async def _record_work(client: object) -> None:
    for content, kind in [
        ("The nightly import times out with a pool of 5 connections", "observation"),
        ("Raised the connection pool to 20 for the import", "decision"),
        ("The import finished in 4 minutes with the larger pool", "outcome"),
    ]:
        await call(client, "record", {"content": content, "episode_type": kind})  # type: ignore[arg-type]


def test_unclaimed_session_is_capture_only_then_claimed_wrap_saves(db: Path) -> None:
    async def body() -> None:
        async with connect(db) as client:
            await _record_work(client)
            gated = await call(client, "prepare_wrap")
            assert gated.startswith("Capture-only")
            assert f"baton claim {SESSION}" in gated and "3 episode(s) waiting" in gated
            status = await call(client, "status")
            assert "capture-only" in status and f"baton claim {SESSION}" in status
            with Store(db) as s:  # nothing was opened, nothing lost
                st = s.status()
                assert not st.wrap_in_progress and st.episodes_since_wrap == 3
                assert st.consolidate_requires_baton  # a store the server made is gated

            claim_baton(db, SESSION)  # the operator, in their own shell
            assert f"this session ({SESSION}) holds the baton" in await call(client, "status")
            package = await call(client, "prepare_wrap")
            token = _token(package)
            assert "pool of 5 connections" in package and "## Instructions" in package
            today = re.search(r"Today is (\d{4}-\d{2}-\d{2})", package).group(1)  # type: ignore[union-attr]
            text = _compress(package, f"- larger pools fix import timeouts | 3x ({today})")

            wrong = await call(client, "save_continuity", {"text": text, "wrap_token": "nope"},
                               ok=False)
            assert "token" in wrong
            saved = await call(client, "save_continuity", {"text": text, "wrap_token": token,
                                                           "affective_state": {"tag": "calm"}})
            assert "Continuity saved" in saved and "from 3 episode(s)" in saved
            # a brand-new claim at 3x enters at 1x, and the reply says so
            assert "Level capped" in saved and "larger pools fix import timeouts (3x -> 1x" in saved
            assert "Warning: level-capped" in saved

            continuity = (await client.read_resource("anneal://continuity")).contents[0].text
            assert "larger pools fix import timeouts | 1x" in continuity
            assert "Wraps: 1" in await call(client, "status")
            again = await call(client, "save_continuity", {"text": text, "wrap_token": token},
                               ok=False)
            assert "prepare_wrap" in again
            assert "nothing to compress" in await call(client, "prepare_wrap")

    run(body)


def test_baton_held_by_another_session_keeps_this_one_capture_only(db: Path) -> None:
    claim_baton(db, "desk")

    async def body() -> None:
        async with connect(db) as client:
            await call(client, "record", {"content": "Observed flaky test in CI", "episode_type": "observation"})
            reply = await call(client, "prepare_wrap")
            assert "Capture-only" in reply and "holder: desk" in reply
            assert f"baton claim {SESSION}" in reply

    run(body)


def test_server_without_session_id_on_a_gated_store_says_how_to_fix_it(db: Path) -> None:
    async def body() -> None:
        async with connect(db, session=None) as client:
            await call(client, "record", {"content": "Observed flaky test in CI", "episode_type": "observation"})
            reply = await call(client, "prepare_wrap")
            assert "Capture-only" in reply and "--session-id" in reply

    run(body)


def test_wrap_cancel_needs_the_right_token_and_keeps_the_episodes(db: Path) -> None:
    claim_baton(db, SESSION)

    async def body() -> None:
        async with connect(db) as client:
            await _record_work(client)
            token = _token(await call(client, "prepare_wrap"))
            assert "not the open wrap" in await call(client, "wrap_cancel",
                                                     {"wrap_token": "other"}, ok=False)
            assert "3 episode(s)" in await call(client, "wrap_cancel", {"wrap_token": token})
            # nothing open now: said plainly, not an error (as 1.0.2)
            assert "No wrap is in progress" in await call(client, "wrap_cancel", {"force": True})
            await call(client, "wrap_cancel", {"wrap_token": token}, ok=False)  # that wrap is gone
            package = await call(client, "prepare_wrap")
            assert _token(package) != token and "(3)" in package

    run(body)


def test_store_made_without_the_baton_policy_wraps_as_before(db: Path) -> None:
    Store(db).close()  # made by the library: no baton policy

    async def body() -> None:
        async with connect(db) as client:
            await _record_work(client)
            package = await call(client, "prepare_wrap")
            saved = await call(client, "save_continuity",
                               {"text": _compress(package), "wrap_token": _token(package)})
            assert "Continuity saved" in saved
            assert "this session may wrap" in await call(client, "status")

    run(body)
