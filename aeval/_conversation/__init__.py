"""Conversations: multi-turn samples, what their target sees each turn, their transcripts."""

from __future__ import annotations

from ._values import *  # noqa: F403  (the package's names are those of its values)
from ._values import __all__ as __all__
