import os

# read when haystack is first imported: no telemetry, even outside nox
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
