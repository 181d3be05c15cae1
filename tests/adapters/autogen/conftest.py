import os

# AutoGen's runtime tracing uses the OpenTelemetry API only; switch it off all the same.
os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")
