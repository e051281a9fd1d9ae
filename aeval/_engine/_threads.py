"""Worker threads for sync functions under test and sync strategies: daemon threads that a
timeout can abandon.

anyio's worker threads are not daemon threads: a call abandoned at its timeout that never
returns keeps the interpreter from exiting, and every further timeout leaves one more such
thread behind. These threads are daemons, so an abandoned call never blocks exit, and the
number of abandoned calls still running is capped: past the cap the run stops with
:class:`AbandonedCallsError` instead of growing without bound.
"""

from __future__ import annotations

import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel

from .._exceptions import AbandonedCallsError

__all__ = ["DaemonThreads"]

_T = TypeVar("_T")
_IDLE_SECONDS = 10.0


class _Call(Generic[_T]):
    __slots__ = (
        "abandoned",
        "argument",
        "context",
        "done",
        "error",
        "finished",
        "function",
        "future",
        "loop",
        "result",
        "token",
    )

    def __init__(self, function: Callable[[Any], _T], argument: Any) -> None:
        self.function = function
        self.argument = argument
        self.context = contextvars.copy_context()
        self.loop = _running_loop()
        if self.loop is not None:  # on asyncio: a future the thread completes without waiting
            self.future: Any = self.loop.create_future()
            self.done: anyio.Event | None = None
            self.token: Any = None
        else:
            self.future = None
            self.done = anyio.Event()
            self.token = anyio.lowlevel.current_token()
        self.result: _T | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.abandoned = False


def _running_loop() -> Any:
    """The running asyncio loop, else ``None`` (trio, or no asyncio imported)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake(future: Any) -> None:
    if not future.done():  # a cancelled wait (an abandoned call) is done already
        future.set_result(None)


class DaemonThreads:
    """A pool of daemon threads for one run's sync calls.

    Threads are started on demand and reused; the pool needs no limiter of its own because
    the Scorer's workers bound the calls in flight. Calls abandoned by a cancellation (the
    Scorer's timeout, or the run being stopped) keep their thread until they return.

    Args:
        max_abandoned: The most abandoned calls that may still be running; one more raises
            :class:`AbandonedCallsError`.
    """

    def __init__(self, *, max_abandoned: int) -> None:
        self.max_abandoned = max_abandoned
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Call[Any] | None]] = []
        self._abandoned = 0
        self._closed = False

    @property
    def abandoned(self) -> int:
        """Abandoned calls still running."""
        return self._abandoned

    async def run(self, function: Callable[[Any], _T], argument: Any) -> _T:
        """Call ``function(argument)`` in a daemon thread, in a copy of the caller's context
        (so the sample's trace records what it does), and wait for it.

        A cancellation abandons the call: the thread runs on, the caller gets the cancellation.

        Raises:
            AbandonedCallsError: Too many abandoned calls are still running.
        """
        if self._abandoned >= self.max_abandoned:
            raise AbandonedCallsError(
                f"{self._abandoned} calls of the function under test or of a sync strategy "
                f"were abandoned at their timeout and are still running in background "
                f"threads (the most allowed is {self.max_abandoned}): the function does not "
                "return after the timeout. Make it return (e.g. give its own I/O a timeout), "
                "or raise the Scorer's max_abandoned."
            )
        call: _Call[_T] = _Call(function, argument)
        self._submit(call)
        try:
            if call.future is not None:
                await call.future
            else:
                assert call.done is not None
                await call.done.wait()
        except BaseException:
            with self._lock:
                if not call.finished and not call.abandoned:
                    call.abandoned = True
                    self._abandoned += 1
            raise
        if call.error is not None:
            error, call.error = call.error, None
            raise error
        return call.result  # type: ignore[return-value]

    def _submit(self, call: _Call[Any]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            thread = threading.Thread(
                target=self._serve, args=(inbox,), name="aeval worker", daemon=True
            )
            thread.start()
        inbox.put(call)

    def _serve(self, inbox: queue.SimpleQueue[_Call[Any] | None]) -> None:
        while True:
            try:
                call = inbox.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                continue
            if call is None:
                return
            try:
                call.result = call.context.run(call.function, call.argument)
            except BaseException as exc:
                call.error = exc
            with self._lock:
                call.finished = True
                abandoned = call.abandoned
                if abandoned:
                    self._abandoned -= 1
                closed = self._closed
                if not closed:
                    self._idle.append(inbox)
            if not abandoned:
                try:
                    if call.loop is not None:
                        call.loop.call_soon_threadsafe(_wake, call.future)
                    else:
                        from anyio.from_thread import run_sync

                        assert call.done is not None
                        run_sync(call.done.set, token=call.token)
                except RuntimeError:  # the loop is closed
                    return
            if closed:
                return

    def close(self) -> None:
        """Let idle threads exit; abandoned calls end on their own, in their daemon threads."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for inbox in idle:
            inbox.put(None)
