"""Usage errors as a script reads them: one JSON document under --json, a "did you mean"
for a mistyped command, command names (not library call names) in refusals, flags shown
only where they apply, and numbers too large for any limit refused as input."""

from __future__ import annotations

import json

import pytest
import test_cli
from test_cli import Run

from anneal_memory import Store, prepare_wrap

clean_env = test_cli.clean_env
cli = test_cli.cli


@pytest.mark.parametrize("argv", [
    ("record", "x", "--type", "bogus", "--json"),
    ("search", "--limit", "abc", "--json", "x"),
    ("--json", "recrod", "x"),
    ("episodes", "--json", "--offset", "-"),
])
def test_usage_errors_under_json_print_one_document(cli: Run, argv: tuple[str, ...]) -> None:
    rc, out, err = cli(*argv)
    assert rc == 2
    doc = json.loads(out)
    assert doc["error"]["type"] == "UsageError"
    assert doc["error"]["message"] and doc["error"]["message"] in err
    assert "usage:" in err


def test_usage_errors_without_json_keep_stdout_empty(cli: Run) -> None:
    rc, out, err = cli("record", "x", "--type", "bogus")
    assert rc == 2 and out == "" and "invalid choice: 'bogus'" in err


@pytest.mark.parametrize("wrong,right", [("serch", "search"), ("recrod", "record"),
                                         ("wrap-cancle", "wrap-cancel"),
                                         ("prune", None)])
def test_a_mistyped_command_gets_a_suggestion(cli: Run, wrong: str, right: str | None) -> None:
    rc, _, err = cli(wrong, "--help") if right is None else cli(wrong, "x")
    if right is None:  # a real command: no suggestion, its help
        assert rc == 0 and "did you mean" not in err
        return
    assert rc == 2 and f"did you mean '{right}'" in err


def test_a_nonsense_command_gets_no_suggestion(cli: Run) -> None:
    rc, _, err = cli("zzzzqqq")
    assert rc == 2 and "invalid choice" in err and "did you mean" not in err


def test_refusals_name_the_command_not_the_library_call(cli: Run) -> None:
    with Store(cli.db) as s:
        s.record("the deploy broke twice", "observation")
        prepare_wrap(s)  # a wrap without a session, left open
    rc, _, err = cli("prepare-wrap")
    assert rc == 1, err
    assert "wrap-cancel" in err and "wrap_cancel" not in err


def test_serve_flags_appear_only_on_serve(cli: Run) -> None:
    _, out, _ = cli("status", "--help")
    assert "--skip-integrity" not in out and "--generate-integrity" not in out
    _, out, _ = cli("serve", "--help")
    assert "--skip-integrity" in out and "--generate-integrity" in out
    rc, _, err = cli("status", "--skip-integrity")
    assert rc == 2 and "unrecognized arguments: --skip-integrity" in err


def test_audit_limit_beyond_any_count_is_refused_as_input(cli: Run) -> None:
    with Store(cli.db) as s:
        s.record("one", "observation")
    for huge in (str(2**70), "-1"):
        rc, out, err = cli("audit", "--limit", huge, "--json")
        assert rc == 1 and "internal error" not in err
        assert "--limit must be a whole number" in json.loads(out)["error"]["message"]


def test_since_refusal_names_the_relative_forms(cli: Run) -> None:
    with Store(cli.db) as s:
        s.record("one", "observation")
    rc, _, err = cli("search", "one", "--since", "yesterday")
    assert rc == 1 and "7d" in err and "12h" in err
    rc, out, _ = cli("search", "one", "--since", "7d", "--json")
    assert rc == 0 and json.loads(out)["total_matching"] == 1
