"""One store, two transports: the CLI (separate processes) and the MCP server."""

from __future__ import annotations

import re
from pathlib import Path

from mcphelp import SESSION, call, cli, connect, run


def test_cli_and_mcp_share_one_store(db: Path) -> None:
    init = cli(db, "init")  # a store made by init is gated, like one made by serve
    assert init.returncode == 0, init.stderr
    made = cli(db, "record", "Chose Redis for the session cache", "--type", "decision")
    assert made.returncode == 0, made.stderr
    cli_id = re.search(r"([0-9a-f]{8})", made.stdout).group(1)  # type: ignore[union-attr]

    async def body() -> None:
        async with connect(db) as client:
            # recorded by the CLI, recalled through MCP
            found = await call(client, "recall", {"keyword": "Redis"})
            assert f"[{cli_id}]" in found and "session cache" in found
            await call(client, "record", {"content": "Redis eviction policy set to allkeys-lru",
                                          "episode_type": "decision"})
            # recorded through MCP while the server runs, found by a CLI process
            search = cli(db, "search", "eviction policy")
            assert search.returncode == 0 and "allkeys-lru" in search.stdout

            # the operator claims the baton with the CLI; the MCP session can then wrap
            assert "Capture-only" in await call(client, "prepare_wrap")
            claimed = cli(db, "baton", "claim", SESSION)
            assert claimed.returncode == 0, claimed.stderr
            package = await call(client, "prepare_wrap")
            assert "Wrap token:" in package and f"[{cli_id}]" in package

            status = cli(db, "status")
            assert status.returncode == 0 and "2" in status.stdout

    run(body)
