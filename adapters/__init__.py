"""Framework adapters. Each subpackage is installed with its own extra, e.g.
``pip install 'anneal-memory[langgraph]'``, and imported as
``anneal_memory.adapters.<framework>``."""
