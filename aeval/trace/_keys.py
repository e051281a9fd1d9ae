"""Where a sample keeps its agent expectations: the metadata keys its file keys become."""

from __future__ import annotations

__all__ = [
    "EXPECTED_CALLS",
    "EXPECTED_CALLS_ORDER",
    "EXPECTED_TOOLS",
    "EXPECTED_TOOL_ARGUMENTS",
    "FORBIDDEN_TOOLS",
    "FUNCTIONS",
    "SAMPLE_KEYS",
    "TOOL_FIXTURES",
]

EXPECTED_TOOLS = "expected_tools"
"""The tools the sample's run should call, in order (``expected-tools:``)."""
FORBIDDEN_TOOLS = "forbidden_tools"
"""The tools it must not call (``forbidden-tools:``)."""
EXPECTED_TOOL_ARGUMENTS = "expected_tool_arguments"
"""Tool name to the arguments a call of it should have (``expected-tool-arguments:``)."""
EXPECTED_CALLS = "expected_calls"
"""The calls the run should make, each matched to one actual call (``expected-calls:``)."""
EXPECTED_CALLS_ORDER = "expected_calls_order"
"""How the expected calls are ordered: exact, in-order or any (``expected-calls-order:``)."""
FUNCTIONS = "functions"
"""The function schemas the agent was offered (``functions:``)."""
TOOL_FIXTURES = "tool_fixtures"
"""The fixtures ``@aeval.tool`` functions are served from (``tools:``)."""

SAMPLE_KEYS = {
    "expected-tools": EXPECTED_TOOLS,
    "forbidden-tools": FORBIDDEN_TOOLS,
    "expected-tool-arguments": EXPECTED_TOOL_ARGUMENTS,
    "tools": TOOL_FIXTURES,
    "expected-calls": EXPECTED_CALLS,
    "expected-calls-order": EXPECTED_CALLS_ORDER,
    "functions": FUNCTIONS,
}
"""A sample file's key to the metadata key it is kept under."""
