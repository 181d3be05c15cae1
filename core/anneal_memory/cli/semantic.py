"""Semantic recall's commands: ``embed`` (build or rebuild vectors, with progress), and
the embedder every command names with ``--embedder`` (or ``$ANNEAL_MEMORY_EMBEDDER``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..errors import ValidationError
from .common import command, emit, open_store, require_store

if TYPE_CHECKING:
    from ..embedding import Embedder
    from .common import Subcommands


ENV_EMBEDDER = "ANNEAL_MEMORY_EMBEDDER"
EMBEDDER_HELP = ("what embeds texts: 'wordllama' (the offline default, pip install "
                 "'anneal-memory[semantic]') or module:attribute (a callable or embeddings "
                 f"object); default ${ENV_EMBEDDER}")


def add_embedder_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", metavar="SPEC", help=EMBEDDER_HELP)


def embedder_of(args: argparse.Namespace, *, required_for: str | None = None) -> Embedder | None:
    """The embedder ``--embedder`` (or the environment) names, or None; ``required_for``
    names the command that needs one (a typed refusal without it)."""
    spec = getattr(args, "embedder", None) or os.environ.get(ENV_EMBEDDER) or None
    if spec is None:
        if required_for:
            raise ValidationError(f"{required_for} needs an embedder: --embedder wordllama "
                                  "(pip install 'anneal-memory[semantic]') or --embedder "
                                  f"module:attribute, or set {ENV_EMBEDDER}")
        return None
    from ..embedding import load_embedder

    return load_embedder(spec)


def register(sub: Subcommands) -> None:
    p = command(sub, "embed", "make the vectors semantic recall ranks by (progress on stderr)",
                cmd_embed)
    add_embedder_option(p)
    p.add_argument("--rebuild", action="store_true",
                   help="remove every stored vector (any model) first and embed all again")
    p.add_argument("--limit", type=int, metavar="N", help="embed at most N episodes")


class _Progress:
    """``embedded 640/1000`` on stderr: rewritten in place on a terminal, every tenth
    otherwise (a log keeps a few lines, not one per batch)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.step = -1

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            print(f"\rembedded {done}/{total}", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)
            return
        step = 10 * done // total if total else 10
        if step > self.step:
            self.step = step
            print(f"embedded {done}/{total}", file=sys.stderr, flush=True)


def cmd_embed(args: argparse.Namespace) -> int:
    require_store(args)  # a missing store is the first thing to say
    emb = embedder_of(args, required_for="embed")
    with open_store(args, embedder=emb) as store:
        rep = store.embed_pending(rebuild=args.rebuild, limit=args.limit, progress=_Progress())
        st = store.status()
    data = {**rep.to_dict(), "embedded_episodes": st.embedded_episodes,
            "total_episodes": st.total_episodes}
    text = (f"Embedded {rep.embedded} episode(s) with {rep.model} ({rep.dims or '?'} dims); "
            f"{st.embedded_episodes} of {st.total_episodes} have a vector"
            + (f", {rep.pending} still pending" if rep.pending else "")
            + (f"; removed {rep.dropped} old vector(s) first" if rep.dropped else ""))
    emit(args, data, text)
    return 0
