"""Fixtures of the example suite: the assistant under test and the async backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support_bot import answer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def bot() -> Callable[..., Any]:
    """The function under test: the support assistant's `answer(params)`."""
    return answer
