"""Agent frameworks into aeval traces: one module per framework, each with ``instrument()``.

``aeval.integrations.openai`` (the ``openai`` SDK, ``aeval-engine[openai]``),
``aeval.integrations.openai_agents`` (the OpenAI Agents SDK, ``aeval-engine[openai-agents]``),
``aeval.integrations.pydantic_ai`` (``aeval-engine[pydantic-ai]``) and
``aeval.integrations.langchain`` (LangChain and LangGraph, ``aeval-engine[langchain]``). After
``instrument()`` (one call per process) that framework's model and tool calls land in the
trace of the sample making them, with no decorator on each tool and no hooks on each client.
"""
