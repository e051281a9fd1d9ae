"""The Python functions a block calls, counted with ``sys.setprofile``: what the call
budgets of the hot paths hold, machine-independent where a timing is not."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any


class Calls:
    """The names of the Python functions called inside ``with calls:``, in order (a block
    entered again adds to them); ``len(calls)`` is how many. Functions written in C are not
    counted, nor the block's own ``__exit__``."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: list[str] = []

    def __enter__(self) -> Calls:
        sys.setprofile(self._watch)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        self.names.pop()  # this __exit__, the last call the profile saw

    def __len__(self) -> int:
        return len(self.names)

    def _watch(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self.names.append(frame.f_code.co_name)
