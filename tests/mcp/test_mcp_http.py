"""The MCP server over streamable HTTP for many users, driven by the official SDK client:
two tokens are two users with zero leaks between them, both wrap at once, a token's
namespace and ceiling cannot be widened through tool arguments, and a request without a
valid token (none, unknown, revoked, expired, another namespace, a foreign Host) is
refused with one line naming the fix, writing nothing. One server for the module keeps
the session's time small."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from anneal_memory import Store
from anneal_memory.clock import frozen, iso, utcnow
from anneal_memory.errors import ValidationError
from anneal_memory.mcp.http import parse_address
from anneal_memory.mcp.tokens import create_token, list_tokens
from anneal_memory.testing import scripted_compress

from httphelp import connect, http_server, make_token, post
from mcphelp import call, cli, run

ALICE_CANARY = "canary-alice-7f3a kiwi orchard"
BOB_CANARY = "canary-bob-91c2 walnut harbour"


@dataclass
class Team:
    db: Path
    url: str
    alice: str
    bob: str
    bob_id: str


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    db = tmp_path_factory.mktemp("team") / "team.db"
    assert cli(db, "init").returncode == 0  # wraps need the baton: a token takes its namespace's
    alice = make_token(db, "--namespace", "user=alice", "--expires", "30d")
    bob = make_token(db, "--namespace", "user=bob", "--trust-ceiling", "tool")
    assert alice["baton_claimed"] and bob["baton_claimed"]
    with http_server(db) as url:
        yield Team(db, url, alice["token"], bob["token"], bob["id"])


def _episodes(db: Path) -> dict[str, int]:
    """Episodes per namespace label, read by the library (not through the server)."""
    from anneal_memory.governance.scoped import namespaces

    with Store(db, read_only=True) as store:
        return {n["namespace"].label(): n["episodes"] for n in namespaces(store)}


def _wrap_token(reply: str) -> str:
    m = re.search(r"^Wrap token: (\S+)$", reply, re.MULTILINE)
    assert m, reply
    return m.group(1)


def test_two_tokens_two_users_zero_leaks(team: Team) -> None:
    async def body() -> None:
        async with connect(team.url, team.alice) as a, connect(team.url, team.bob) as b:
            await call(a, "record", {"content": ALICE_CANARY, "episode_type": "observation"})
            await call(b, "record", {"content": BOB_CANARY, "episode_type": "observation"})
            await call(a, "spore_add", {"type": "task", "text": f"spore {ALICE_CANARY}"})
            replies_b = [await call(b, "recall", {"keyword": "canary"}),
                         await call(b, "recall", {}), await call(b, "status"),
                         await call(b, "spore_list"), await call(b, "spore_surface"),
                         await call(b, "crystal_index"),
                         (await b.read_resource("anneal://continuity")).contents[0].text]
            replies_a = [await call(a, "recall", {"keyword": "canary"}),
                         await call(a, "recall", {}), await call(a, "spore_list")]
            assert not [r for r in replies_b if "canary-alice" in r], replies_b
            assert not [r for r in replies_a if "canary-bob" in r], replies_a
            assert "canary-bob" in replies_b[0] and "canary-alice" in replies_a[0]
            assert "canary-alice" in replies_a[2]
            # alice's episode id is unknown to bob, for reading and for deleting
            alice_id = re.search(r"\[([0-9a-f]{8})\]", replies_a[0]).group(1)  # type: ignore[union-attr]
            assert "No episode with id" in await call(b, "recall", {"episode_id": alice_id})
            await call(b, "delete_episode", {"episode_id": alice_id}, ok=False)
            assert "canary-alice" in await call(a, "recall", {"episode_id": alice_id})

    run(body)
    counts = _episodes(team.db)
    assert counts["default/alice/*/default"] >= 1 and counts["default/bob/*/default"] >= 1


def test_tool_arguments_cannot_widen_the_namespace_or_raise_trust(team: Team) -> None:
    async def body() -> None:
        async with connect(team.url, team.bob) as b:
            for extra in ({"namespace": {"user": "alice"}}, {"user": "alice"}):
                reply = await call(b, "record", {"content": "x", "episode_type": "context",
                                                 **extra}, ok=False)
                assert "unknown argument" in reply
            # bob's token has the tool ceiling: agent (and operator) labels are refused
            assert "ceiling" in await call(b, "record", {"content": "mine", "episode_type":
                                                         "context", "trust": "agent"}, ok=False)
            await call(b, "record", {"content": "x", "episode_type": "context",
                                     "trust": "operator"}, ok=False)
            # without a label its writes carry the token's ceiling
            assert "trust tool" in await call(b, "record", {"content": "default label",
                                                             "episode_type": "context"})
        async with connect(team.url, team.alice) as a:
            assert "trust agent" in await call(a, "record", {"content": "alice's own",
                                                              "episode_type": "context"})

    run(body)
    assert "default/alice/*/default" in _episodes(team.db)


def test_concurrent_wraps_of_two_users_are_both_saved(team: Team) -> None:
    saved: dict[str, str] = {}

    async def wrap(token: str, who: str, canary: str) -> None:
        async with connect(team.url, token) as c:
            for i in range(3):
                await call(c, "record", {"content": f"{canary} wrap step {i}",
                                         "episode_type": "decision"})
            package = await call(c, "prepare_wrap")
            assert "capture-only" not in package.lower(), package
            reply = await call(c, "save_continuity", {"text": scripted_compress(package),
                                                      "wrap_token": _wrap_token(package)})
            assert "Continuity saved" in reply, reply
            saved[who] = (await c.read_resource("anneal://continuity")).contents[0].text

    async def body() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wrap, team.alice, "alice", ALICE_CANARY)
            tg.start_soon(wrap, team.bob, "bob", BOB_CANARY)

    run(body)
    assert "canary-alice" in saved["alice"] and "canary-bob" not in saved["alice"]
    assert "canary-bob" in saved["bob"] and "canary-alice" not in saved["bob"]
    with Store(team.db, read_only=True) as store:
        for user in ("alice", "bob"):
            assert store.scoped({"user": user}).wrap_history(5), user


def test_a_second_token_of_a_namespace_is_capture_only_until_the_operator_claims(
        team: Team) -> None:
    second = make_token(team.db, "--namespace", "user=alice", "--label", "alice-desktop")
    assert second["baton_claimed"] is False  # the first token of alice holds her baton

    async def prepare() -> str:
        async with connect(team.url, second["token"]) as c:
            await call(c, "record", {"content": "from the desktop", "episode_type": "context"})
            return await call(c, "prepare_wrap")

    gated = run(prepare)
    assert "Capture-only" in gated, gated
    command = re.search(r"anneal-memory (.*baton claim \S+)", gated)
    assert command and "--namespace user=alice" in command.group(1), gated
    assert f"baton claim {second['session_id']}" in gated
    words = command.group(1).split()
    res = cli(team.db, *words[words.index("--namespace"):], "--take")
    assert res.returncode == 0, res.stderr
    opened = run(prepare)
    assert "Wrap token:" in opened, opened

    async def cancel() -> None:
        async with connect(team.url, second["token"]) as c:
            await call(c, "wrap_cancel", {"wrap_token": _wrap_token(opened)})

    run(cancel)
    with Store(team.db, read_only=True) as store:  # bob's baton was never touched
        from anneal_memory.wrap.baton import baton_holder

        assert baton_holder(store.scoped({"user": "bob"})) == f"token-{team.bob_id}"


def _refused(team: Team, status: int, text: str, *args: object, **kw: object) -> str:
    """A raw POST the server refuses with ``status`` and one line containing ``text``;
    nothing is written."""
    before = _episodes(team.db)
    got, body = post(team.url, *args, **kw)  # type: ignore[arg-type]
    assert got == status, (got, body)
    assert text in body and body.count("\n") == 1, body
    assert _episodes(team.db) == before
    return body


def test_a_request_without_a_valid_token_is_refused_naming_the_fix(team: Team) -> None:
    assert "token create" in _refused(team, 401, "no bearer token")
    _refused(team, 401, "unknown token", "amt_000000000000_" + "x" * 43)
    _refused(team, 401, "unknown token", team.alice[:-2] + "zz")  # a mistyped secret
    _refused(team, 401, "not a bearer token", headers={"Authorization": "Basic YTpi"})


def test_a_token_for_another_namespace_and_a_foreign_host_are_refused(team: Team) -> None:
    body = _refused(team, 403, "serves namespace default/alice", team.alice,
                    headers={"Anneal-Namespace": "user=bob"})
    assert "use a token made for that namespace" in body
    _refused(team, 400, "not KEY=VALUE", team.alice, headers={"Anneal-Namespace": "bob"})
    _refused(team, 403, "answers only to Host", team.alice, host="attacker.invalid:80")
    # the namespace the token serves is accepted when asked for
    got, reply = post(team.url, team.alice, headers={"Anneal-Namespace": '{"user": "alice"}'})
    assert got == 200 and "Recorded" in reply, reply


def test_a_revoked_token_is_refused_at_its_next_request(team: Team) -> None:
    carol = make_token(team.db, "--namespace", "user=carol")

    async def use() -> None:
        async with connect(team.url, carol["token"]) as c:
            await call(c, "record", {"content": "carol before", "episode_type": "context"})

    run(use)
    res = cli(team.db, "token", "revoke", carol["id"])
    assert res.returncode == 0 and "revoked" in res.stdout, res.stderr
    body = _refused(team, 401, f"token {carol['id']} was revoked", carol["token"])
    assert "ask the operator for a new one" in body

    async def again() -> None:
        with pytest.raises(BaseException):  # noqa: B017 (the SDK's error type differs by line)
            async with connect(team.url, carol["token"]):
                pass

    run(again)
    listed = json.loads(cli(team.db, "token", "list", "--json").stdout)["tokens"]
    assert {t["id"]: t["state"] for t in listed}[carol["id"]] == "revoked"


def test_an_expired_token_is_refused(team: Team) -> None:
    with Store(team.db) as store, frozen(utcnow() - timedelta(hours=2)):
        secret, info = create_token(store, {"user": "dave"}, expires="1h")
    assert info.expires_at is not None and info.expires_at < iso(utcnow())
    assert "expired at" in _refused(team, 401, f"token {info.id} expired", secret)


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "[::]:8765"])
def test_every_interface_binds_are_refused_as_the_console_refuses_them(db: Path,
                                                                       address: str) -> None:
    res = cli(db, "serve", "--http", address)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "not every interface" in res.stderr, res.stderr
    assert not db.exists()  # refused before the store is opened


@pytest.mark.parametrize(("address", "message"), [
    ("0:8765", "not every interface"), ("000.000.000.000:1", "not every interface"),
    ("127.0.0.1", "is not HOST:PORT"), ("127.0.0.1:99999", "port must be"),
    ("127.0.0.1:x", "port must be"), (":8765", "not every interface")])
def test_malformed_http_addresses_are_refused(address: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_address(address)
    assert parse_address("127.1:0") == ("127.0.0.1", 0)  # one address's other spelling


@pytest.mark.parametrize(("args", "message"), [
    ((), "token create needs --namespace"),
    (("--namespace", "alice"), "is not KEY=VALUE"),
    (("--namespace", "colour=blue"), "unknown namespace key"),
    (("--namespace", "user=alice", "--expires", "soon"), "is not a lifetime"),
])
def test_token_create_refuses_bad_input_and_writes_nothing(db: Path, args: tuple[str, ...],
                                                           message: str) -> None:
    Store(db).close()
    res = cli(db, "token", "create", *args)
    assert res.returncode == 1 and message in res.stderr, res.stderr
    with Store(db, read_only=True) as store:
        assert list_tokens(store) == []


def test_erasing_a_namespace_deletes_its_tokens(tmp_path: Path) -> None:
    with Store(tmp_path / "e.db") as store:
        create_token(store, {"user": "erin-7c1"})
        create_token(store, {"user": "erin-7c1", "project": "p1"})
        _, kept = create_token(store, {"user": "frank"})
        store.erase_namespace({"user": "erin-7c1"})
        assert [t.id for t in list_tokens(store)] == [kept.id]
    hits = [f.name for f in tmp_path.iterdir() if f.is_file() and b"erin-7c1" in f.read_bytes()]
    assert hits == [], hits
