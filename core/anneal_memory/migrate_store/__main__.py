"""``python -m anneal_memory.migrate_store``: the CLI's ``migrate-store`` command (the command line
lives in the transports; this package is the library call)."""

import sys

from ..cli.main import main

sys.exit(main(["migrate-store", *sys.argv[1:]]))
