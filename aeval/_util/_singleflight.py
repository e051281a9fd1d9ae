"""Single flight: one call per key in flight; later callers for that key wait for its result."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

import anyio

__all__ = ["Flight", "SingleFlight"]

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class Flight(Generic[_V]):
    """One call in flight: its result once :attr:`done` is set.

    Attributes:
        done: Set when the call ended, with a value, an error, or neither (given up).
        value: What the call produced, if it did.
        error: What the call raised, if it did.
    """

    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: _V | None = None
        self.error: BaseException | None = None


class SingleFlight(Generic[_K, _V]):
    """The calls in flight, by key.

    A caller that finds no flight for its key :meth:`start`\\ s one, makes the call and
    :meth:`finish`\\ es it (in a ``finally``, so waiters never hang); a caller that finds one
    waits on ``flight.done`` and reads ``value`` or ``error``, or tries again when the leader
    gave up without either.
    """

    __slots__ = ("_flights",)

    def __init__(self) -> None:
        self._flights: dict[_K, Flight[_V]] = {}

    def joining(self, key: _K) -> Flight[_V] | None:
        """The flight for ``key`` if one is in flight."""
        return self._flights.get(key)

    def start(self, key: _K) -> Flight[_V]:
        """Open the flight for ``key`` (there must be none)."""
        flight: Flight[_V] = Flight()
        self._flights[key] = flight
        return flight

    def finish(
        self, key: _K, *, value: _V | None = None, error: BaseException | None = None
    ) -> None:
        """Close the flight for ``key`` with its result and wake its waiters."""
        flight = self._flights.pop(key)
        flight.value = value
        flight.error = error
        flight.done.set()

    def __len__(self) -> int:
        return len(self._flights)
