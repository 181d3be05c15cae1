"""The ui command: serve the operator console for a store (see ``anneal_memory.ui``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import ValidationError
from .common import command, operator_gate, require_store

if TYPE_CHECKING:
    from .common import Subcommands


def register(sub: Subcommands) -> None:
    p = command(sub, "ui", "serve the operator console in a browser (127.0.0.1; prints a "
                "one-time login link; --json: as one JSON line)", cmd_ui)
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8765, metavar="N",
                   help="the port (default 8765; 0 picks a free one)")
    p.add_argument("--read-only", action="store_true",
                   help="show the memory without any action (also the default when the store "
                        "file is not writable)")
    p.add_argument("--operator", action="store_true",
                   help="allow raising an episode's trust (operator-only: asks on the "
                        "terminal, or reads ANNEAL_OPERATOR=1)")
    p.add_argument("--anchor", metavar="HASH_OR_FILE",
                   help="an audit anchor kept elsewhere (the output of 'audit head --json', "
                        "SEQ:HASH or a hash) the audit page checks the chain against")
    p.add_argument("--reviewer", metavar="NAME",
                   help="the name governed review decisions are recorded under (default: "
                        "your login name)")


def cmd_ui(args: argparse.Namespace) -> int:
    from ..ui import serve

    if args.operator and args.read_only:
        raise ValidationError("--operator and --read-only contradict each other: pass one")
    loc = require_store(args)
    via = operator_gate("run the console with operator-only actions (raising trust)") \
        if args.operator else None
    return serve(loc, host=args.host, port=args.port, read_only=args.read_only,
                 operator_via=via, anchor=args.anchor, reviewer=args.reviewer,
                 project_name=args.project_name, as_json=args.json)
