"""Setting an evaluator up: its options checked, OpenTelemetry, the loop's thread-safe caller."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from .._engine._sinks import Sink
from .._exceptions import MissingExtraError

if TYPE_CHECKING:
    from .._store import RunStore

__all__ = ["check_count", "check_options", "sinks_of", "telemetry_for", "threadsafe_caller"]


def check_options(
    *,
    queue_size: int,
    concurrency: int,
    drain_timeout: float,
    timeout: float | None,
    sink_timeout: float | None,
    flush_interval: float | None,
    redact: Iterable[str],
) -> None:
    """Refuse an unusable option of ``OnlineEvaluator`` (``TypeError``, ``ValueError``)."""
    check_count(queue_size, "queue_size", minimum=0)
    check_count(concurrency, "concurrency", minimum=1)
    if not drain_timeout >= 0:
        raise ValueError(f"drain_timeout must be >= 0 seconds, got {drain_timeout!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if sink_timeout is not None and not sink_timeout > 0:
        raise ValueError(f"sink_timeout must be positive seconds, got {sink_timeout!r}")
    if flush_interval is not None and not flush_interval > 0:
        raise ValueError(f"flush_interval must be positive seconds, got {flush_interval!r}")
    if isinstance(redact, str):
        raise TypeError("redact takes a list of secrets, not one string: write [secret]")


def sinks_of(
    sink: Sink | Sequence[Sink] | None, store: RunStore | None, name: str
) -> tuple[Sink, ...]:
    """The evaluator's sinks: ``sink`` as a tuple, then the store's sink for the run ``name``."""
    sinks: tuple[Sink, ...]
    if sink is None:
        sinks = ()
    elif isinstance(sink, Sink):
        sinks = (sink,)
    else:
        sinks = tuple(sink)
    for each in sinks:
        if not isinstance(each, Sink):
            raise TypeError(f"{each!r} is not a sink: it needs async send() and flush()")
    if store is not None:
        sinks = (*sinks, store.sink(name))
    return sinks


def check_count(value: object, name: str, *, minimum: int) -> None:
    """Refuse ``value`` unless it is an integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def threadsafe_caller() -> Callable[..., object] | None:
    """A non-blocking way for other threads to run a function on the current event loop."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            return cast("Callable[..., object]", asyncio.get_running_loop().call_soon_threadsafe)
        except RuntimeError:
            pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            return cast("Callable[..., object]", trio.lowlevel.current_trio_token().run_sync_soon)
        except RuntimeError:
            pass
    return None  # pragma: no cover - anyio runs on asyncio or trio


def telemetry_for(otel: bool | None) -> Any:
    """The OpenTelemetry reporter, or ``None``; imports OpenTelemetry only when installed."""
    if otel is False:
        return None
    try:
        from ._otel import Telemetry
    except ImportError as exc:
        if otel:
            raise MissingExtraError(
                "OnlineEvaluator(otel=True) needs OpenTelemetry: pip install 'aeval-engine[otel]'"
            ) from exc
        return None
    return Telemetry()
