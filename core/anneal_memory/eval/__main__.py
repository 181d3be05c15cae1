"""``python -m anneal_memory.eval``: the CLI's ``eval`` command (the command line
lives in the transports; this package is the library call)."""

import sys

from ..cli.main import main

sys.exit(main(["eval", *sys.argv[1:]]))
