"""Read-only views of a store: continuity, episodes, history, wrap-status, wrap-token-current.

These are the 1.0.2 commands an operator reads a store with; each takes ``--json`` and
prints the shape 1.0.2 printed.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import AnnealMemoryError
from ..legacy.formats import wrap_record
from ..types import EpisodeType
from .common import command, emit, read_store

if TYPE_CHECKING:
    from .common import Subcommands


def register(sub: Subcommands) -> None:
    command(sub, "continuity", "print the current continuity file", cmd_continuity)

    p = command(sub, "episodes", "list and filter episodes, newest first", cmd_episodes)
    p.add_argument("--since", help="ISO time or an age such as 3d, 24h, 1w")
    p.add_argument("--until", help="ISO time or an age such as 1d")
    p.add_argument("--type", choices=[t.value for t in EpisodeType], help="only this type")
    p.add_argument("--source", help="only this source")
    p.add_argument("--keyword", help="only episodes matching this phrase or its words")
    p.add_argument("--limit", type=int, default=50, help="most episodes to list (default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N")
    p.add_argument("--include-superseded", action="store_true",
                   help="also list episodes a newer one replaced")

    p = command(sub, "history", "saved wraps, newest first, with their metrics", cmd_history)
    p.add_argument("--limit", type=int, default=20, help="most wraps to list (default 20)")

    command(sub, "wrap-status", "the wrap in progress: token, episodes, start", cmd_wrap_status)
    command(sub, "wrap-token-current", "print the open wrap's token (empty when none)",
            cmd_wrap_token)


def cmd_continuity(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        text = store.load_continuity()
        status = store.status()
        path = str(store.continuity_path)
    if text is None:
        raise AnnealMemoryError("no continuity file yet: run a wrap first "
                                "(prepare-wrap, then save-continuity)")
    emit(args, {"text": text, "chars": len(text), "path": path,
                "meta": {"sessions_produced": status.total_wraps,
                         "last_wrap_at": status.last_wrap_at}}, text.rstrip("\n"))
    return 0


def cmd_episodes(args: argparse.Namespace) -> int:
    from .episodes import cmd_search

    args.query = args.keyword  # search's listing, with 1.0.2's --keyword
    return cmd_search(args)


def cmd_history(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        wraps = [wrap_record(w) for w in store.wrap_history(args.limit)]
        total = store.status().total_wraps
    lines = [f"wrap {w['id']}  {str(w['wrapped_at'])[:19]}  {w['episodes_compressed']} episode(s), "
             f"{w['continuity_chars']} chars, {w['graduations_validated']} validated, "
             f"{w['graduations_demoted']} demoted" for w in wraps] or ["(no wraps yet)"]
    emit(args, {"wraps": wraps, "total": total}, "\n".join(lines))
    return 0


def _open_wrap(args: argparse.Namespace) -> dict[str, Any] | None:
    from ..wrap.lifecycle import open_wrap_info

    with read_store(args) as store:
        return open_wrap_info(store)


def cmd_wrap_status(args: argparse.Namespace) -> int:
    from .._wrap_age import stale_policy, stale_wrap, wrap_age
    from ..wrap.lifecycle import open_wrap_info

    with read_store(args) as store:
        w = open_wrap_info(store)
        stale = bool(w) and stale_wrap(store, w)  # type: ignore[arg-type]
        policy = stale_policy(store)
    age = wrap_age(w) if w else None
    data = {"status": "in_progress" if w else "idle",
            "wrap_age_seconds": int(age) if age is not None else None, "wrap_stale": stale,
            "stale_wrap_after": policy,
            "wrap_started_at": w["started_at"] if w else None,
            "wrap_token": w["token"] if w else None,
            "wrap_episode_count": len(w["episode_ids"]) if w else 0,
            "wrap_episode_ids": list(w["episode_ids"]) if w else [],
            "wrap_gated_session": (w["session_id"] or None) if w else None,
            "wrap_token_bound": bool(w and w["session_id"])}
    text = (f"wrap in progress since {data['wrap_started_at']}: {data['wrap_episode_count']} "
            f"episode(s), token {data['wrap_token']}" if w else "no wrap in progress")
    if stale:
        text += ("\nstale: open for " + f"{int(age or 0) // 60} minute(s); " + (
            "the next prepare-wrap of this memory takes it over (stale_wrap_after "
            f"{int(policy)} s)" if policy else "its host may have died: cancel it with "
            "anneal-memory wrap-cancel --force, or set a stale_wrap_after policy"))
    emit(args, data, text)
    return 0


def cmd_wrap_token(args: argparse.Namespace) -> int:
    w = _open_wrap(args)
    token = w["token"] if w else None
    emit(args, {"wrap_token": token}, token or "")
    return 0
