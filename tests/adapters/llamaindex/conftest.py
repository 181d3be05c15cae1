def pytest_configure(config):
    # FunctionAgent's own construction walks its members with inspect.getmembers, which
    # touches pydantic's deprecated attributes: LlamaIndex's noise, not ours.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:inspect")
