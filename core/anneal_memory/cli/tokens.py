"""``token create|list|revoke``: the bearer tokens of the MCP server over HTTP
(``serve --http``). Store-wide: ``create`` takes the one namespace the token serves,
``list`` may filter by one, ``revoke`` names a token by its id."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from .common import command, emit, group, namespace_of, require_store

if TYPE_CHECKING:
    from .common import Subcommands


def register(sub: Subcommands) -> None:
    _, tsub = group(sub, "token", "bearer tokens for 'serve --http': each serves one "
                    "namespace at a trust ceiling")
    p = command(tsub, "create", "make a token for one namespace (--namespace, required); "
                "the secret is printed once, the store keeps its hash", cmd_token_create)
    p.add_argument("--trust-ceiling", default="agent", choices=["agent", "tool", "external"],
                   help="the most trusted label its writes may carry (default agent)")
    p.add_argument("--expires", metavar="AGE",
                   help="lifetime, e.g. 12h, 30d, 2w (default: until revoked)")
    p.add_argument("--label", metavar="NAME", help="a note for the operator, e.g. alice-laptop")
    command(tsub, "list", "every token: id, namespace, ceiling, state, last use (to the "
            "minute; never the secret)",
            cmd_token_list)
    p = command(tsub, "revoke", "revoke a token: its next request is refused", cmd_token_revoke)
    p.add_argument("id", help="the token's id (token list)")


def _open(args: argparse.Namespace) -> Any:
    from ..store import Store

    return Store(require_store(args), project_name=args.project_name)


def cmd_token_create(args: argparse.Namespace) -> int:
    from ..mcp.tokens import create_token
    from ..wrap.baton import baton_holder, claim_baton

    ns = namespace_of(args)
    with _open(args) as store:
        if ns is None:
            raise ValidationError("token create needs --namespace: a token serves one "
                                  "namespace (e.g. --namespace user=alice)")
        secret, info = create_token(store, ns, trust_ceiling=args.trust_ceiling,
                                    expires=args.expires, label=args.label)
        view = store.scoped(ns)
        claimed = False
        if store.consolidate_requires_baton() and baton_holder(view) is None:
            claim_baton(view, info.session_id)  # the namespace's first token may wrap it
            claimed = True
    data = {**info.to_dict(), "token": secret, "session_id": info.session_id,
            "baton_claimed": claimed}
    text = (f"token {info.id} for {ns.label()} (ceiling {info.trust_ceiling}"
            + (f", expires {info.expires_at}" if info.expires_at else "") + ")\n"
            + f"{secret}\n"
            + "This is the only time the token is shown: give it to its user now "
            + "(Authorization: Bearer ...)."
            + (f"\nIts requests wrap as {info.session_id}, which now holds this namespace's "
               "baton." if claimed else ""))
    emit(args, data, text)
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    from ..mcp.tokens import list_tokens

    ns = namespace_of(args)
    with _open(args) as store:
        found = [t for t in list_tokens(store) if ns is None or t.namespace == ns]
    rows = [t.to_dict() for t in found]
    lines = [f"{t.id}  {t.namespace.label()}  {t.trust_ceiling}  {t.state()}"
             + (f"  last used {t.last_used_at}" if t.last_used_at else "  never used")
             + (f"  expires {t.expires_at}" if t.expires_at and not t.revoked_at else "")
             + (f"  ({t.label})" if t.label else "") for t in found]
    emit(args, {"tokens": rows}, "\n".join(lines) if lines else "No tokens.")
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    from ..mcp.tokens import revoke_token

    if namespace_of(args) is not None:
        raise ValidationError("--namespace does not apply to token revoke: the id names one "
                              "token (leave --namespace out)")
    with _open(args) as store:
        info = revoke_token(store, args.id)
    emit(args, info.to_dict(), f"token {info.id} ({info.namespace.label()}) revoked at "
         f"{info.revoked_at}")
    return 0
