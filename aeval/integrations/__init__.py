"""Agent frameworks into aeval traces: one module per framework, each with ``instrument()``.

``aeval.integrations.openai`` (the ``openai`` SDK, ``aeval-engine[openai]``). After
``instrument()`` (one call per process) that framework's model and tool calls land in the
trace of the sample making them, with no decorator on each tool and no hooks on each client.
"""
