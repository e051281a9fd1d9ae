"""The ``openai_server`` pytest fixture, imported on first use: aeval.testing needs no pytest."""

from __future__ import annotations

from collections.abc import Iterator

try:
    import pytest
except ImportError as error:
    raise ImportError(
        "aeval.testing.openai_server is a pytest fixture, and pytest is not installed: "
        "pip install pytest, or start an aeval.testing.OpenAICompatibleServer yourself"
    ) from error

from ._server import OpenAICompatibleServer

__all__ = ["openai_server"]


@pytest.fixture(name="openai_server")
def openai_server() -> Iterator[OpenAICompatibleServer]:
    """A started :class:`OpenAICompatibleServer`, stopped after the test.

    Bring it into a test module or ``conftest.py`` with
    ``from aeval.testing import openai_server`` (or ``openai_server = testing.openai_server``)
    and configure it inside the test with ``enqueue``, ``handler`` or ``default``.
    """
    with OpenAICompatibleServer() as server:
        yield server
