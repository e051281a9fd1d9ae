"""``async with`` for an object closed by ``await aclose()``."""

from __future__ import annotations

from typing import Self

__all__ = ["AsyncClosing"]


class AsyncClosing:
    """A base for objects closed by ``await aclose()``: ``async with`` gives the object and
    closes it when the block ends, however it ends."""

    __slots__ = ()

    async def aclose(self) -> None:
        """Close the object; each subclass says what that releases."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
