"""Every contract aeval calls into, on one page.

Each contract is a :class:`typing.Protocol` naming the methods aeval requires; any object
that has them works (``isinstance`` checks only those). Where aeval also calls an optional
hook, the contract has a base class with that hook as a documented no-op, as trio's
``Instrument`` does: inherit it to see the hooks and override the ones you need, or
don't, and aeval skips the hooks your object does not define.

- :class:`Strategy`: ``evaluate(sample, output)``.
- :class:`SampleLoader`: ``supports(source)`` and ``load(source)``; the optional
  ``priority`` is on :class:`BaseSampleLoader`.
- :class:`ReportFormatter`: ``name``, ``extension`` and ``format(report, **options)``; the
  optional ``options`` is on :class:`BaseReportFormatter`.
- :class:`Sink`: ``send(row)`` and ``flush()``; the optional ``run_started(run)`` and
  ``run_finished(run)`` are on :class:`BaseSink`.
- :class:`Executor`: ``describe()``, ``prepare(function, strategies)`` and
  ``execute(job, deliver)``.
- :class:`ChatModel`: ``chat(messages, *, json_mode)``; :class:`Embedder`: ``embed(texts)``.
- :class:`Clock`: ``now()``, ``sleep(seconds)`` and ``move_on_after(seconds)``.

This is their one home: ``aeval.strategies.Strategy``, ``aeval.formatters.ReportFormatter``,
``aeval.models.ChatModel``, ``aeval.models.Embedder`` and ``aeval.models.Clock`` still
resolve, the same objects, but are deprecated.
"""

from __future__ import annotations

import abc as _abc
from collections.abc import Awaitable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import anyio

    from ._engine._executor import Deliver, ExecutorJob, FunctionUnderTest
    from ._model_types import ChatMessage, ChatResponse, Embeddings
    from ._reporting._report import EvaluationReport
    from ._reporting._results import EvaluationResult, EvaluationRow
    from ._reporting._run_info import RunInfo
    from ._samples import EvaluationSample

__all__ = [
    "BaseReportFormatter",
    "BaseSampleLoader",
    "BaseSink",
    "ChatModel",
    "Clock",
    "Embedder",
    "Executor",
    "ReportFormatter",
    "SampleLoader",
    "Sink",
    "Strategy",
]


@runtime_checkable
class Strategy(Protocol):
    """Anything that judges one output of the function under test.

    ``evaluate`` may be a plain method or a coroutine. A plain one runs in a worker thread
    (so one that blocks, on a moderation API say, cannot stall the event loop, and the
    Scorer's ``timeout`` abandons it); a coroutine runs on the event loop. The Scorer names
    a strategy's rows after its ``name`` attribute when it has one, else after its class.
    """

    def evaluate(
        self, sample: EvaluationSample, output: Any
    ) -> EvaluationResult | Awaitable[EvaluationResult]:
        """Judge ``output``, produced from ``sample``'s parameters."""
        ...


@runtime_checkable
class SampleLoader(Protocol):
    """Loads samples from the sources it supports.

    ``load`` is synchronous: the async API runs it in a worker thread. A loader may also
    define an ``int`` attribute ``priority`` (default 0, see :class:`BaseSampleLoader`);
    among the loaders that support a source, the highest priority wins and ties keep
    registration order.

    Example:
        >>> from aeval import EvaluationSample
        >>> class CsvLoader:
        ...     priority = 10
        ...     def supports(self, source: str) -> bool:
        ...         return source.endswith(".csv")
        ...     def load(self, source: str) -> list[EvaluationSample]:
        ...         return [EvaluationSample("s1", ["q"], "a")]
        >>> isinstance(CsvLoader(), SampleLoader)
        True
    """

    def supports(self, source: str) -> bool:
        """Whether this loader can load ``source``."""
        ...

    def load(self, source: str) -> Iterable[EvaluationSample]:
        """Return the samples of ``source``, in order."""
        ...


class BaseSampleLoader:
    """A base for :class:`SampleLoader` implementations, with the optional ``priority``.

    Subclasses implement ``supports`` and ``load``.
    """

    __slots__ = ()

    priority: ClassVar[int] = 0
    """Among the loaders that support a source, the highest priority wins."""


@runtime_checkable
class ReportFormatter(Protocol):
    """Renders an :class:`~aeval.EvaluationReport` in one format.

    A formatter may also declare ``options``, the collection of option names it accepts (see
    :class:`BaseReportFormatter`): :meth:`~aeval.EvaluationReport.save` then hands each
    formatter only its own options, so ``report.save(dir, include_details=False)`` works
    although the JSON formatter does not know ``include_details``. A formatter without
    ``options`` receives every option.

    Example:
        >>> from aeval.formatters import check_options
        >>> class CsvFormatter:
        ...     name = "csv"
        ...     extension = ".csv"
        ...     options = frozenset()
        ...
        ...     def format(self, report, **options):
        ...         check_options(self.name, options, {})
        ...         return "".join(f"{r.name},{r.outcome}\\n" for r in report.evaluations)
        >>> isinstance(CsvFormatter(), ReportFormatter)
        True
    """

    @property
    def name(self) -> str:
        """The format's name, e.g. ``"markdown"`` (looked up case-insensitively)."""
        ...

    @property
    def extension(self) -> str:
        """The file extension, with the dot, e.g. ``".md"``."""
        ...

    def format(self, report: EvaluationReport, **options: Any) -> str | bytes:
        """Render ``report``.

        Raises:
            FormatError: An option is unknown to this formatter or has the wrong type.
        """
        ...


class BaseReportFormatter:
    """A base for :class:`ReportFormatter` implementations, with the optional ``options``.

    Subclasses set ``name`` and ``extension`` and implement ``format``.
    """

    __slots__ = ()

    options: ClassVar[frozenset[str] | None] = None
    """The option names ``format`` accepts; ``None`` receives every option."""


@runtime_checkable
class Sink(Protocol):
    """Receives every row as it finishes.

    The Scorer calls :meth:`send` for each row and :meth:`flush` when a run ends, also when it
    is cancelled (shielded), so every finished row reaches the sink. A sink may also define
    ``async def run_started(run: RunInfo)`` and ``async def run_finished(run: RunInfo)`` to
    receive the run's header at its start and end (see :class:`BaseSink`;
    :class:`~aeval.JsonlSink` writes them as records), and ``send_nowait(row) -> bool``,
    which takes a row without a coroutine when it can: the Scorer then calls it first and
    awaits :meth:`send` only when it returns false.
    """

    async def send(self, row: EvaluationRow) -> None:
        """Accept one row."""

    async def flush(self) -> None:
        """Make every row sent so far durable."""


class BaseSink(_abc.ABC):
    """A base for :class:`Sink` implementations, with the optional run hooks as no-ops.

    Subclasses implement ``send`` and ``flush`` and override the hooks they need.
    """

    __slots__ = ()

    @_abc.abstractmethod
    async def send(self, row: EvaluationRow) -> None:
        """Accept one row."""

    @_abc.abstractmethod
    async def flush(self) -> None:
        """Make every row sent so far durable."""

    async def run_started(self, run: RunInfo) -> None:  # noqa: B027 - an optional hook
        """Called once before the first row, with the run's header."""

    async def run_finished(self, run: RunInfo) -> None:  # noqa: B027 - an optional hook
        """Called once after the last row and before the last ``flush``.

        ``run`` is the final header: its ``finished`` time and gate are set.
        """


@runtime_checkable
class Executor(Protocol):
    """Runs a Scorer's samples elsewhere (``Scorer(executor=...)``).

    The Scorer keeps the aggregator, the sinks, redaction and streaming in this process; the
    executor evaluates samples wherever it likes (see :class:`aeval.ray.RayExecutor`) and
    delivers the rows of each finished sample, all of them at once and each sample exactly
    once, also when a worker fails.
    """

    def describe(self) -> str:
        """What the run's header says about where the samples ran (``"ray, 8 workers"``)."""
        ...

    def prepare(self, function: FunctionUnderTest, strategies: Sequence[object]) -> object:
        """Check, before any work starts, that the function and strategies can be run.

        Raises:
            NotSerializableError: One of them cannot travel to the workers.
        """
        ...

    async def execute(self, job: ExecutorJob, deliver: Deliver) -> None:
        """Evaluate every sample of ``job.feed`` and deliver the rows of each sample once."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model: messages in, a reply out.

    ``chat`` may also take ``options: ChatOptions | None = None`` (the OpenAI-compatible
    client does); the judge passes its ``max_tokens`` and sampling options only to models
    whose ``chat`` accepts them (:func:`~aeval.models.accepts_options`), so older models keep
    working.
    """

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool = False,
    ) -> ChatResponse:
        """Send the conversation and return the reply.

        Args:
            messages: The conversation, oldest first.
            json_mode: Ask the server for a JSON object reply where it supports that.
        """
        ...


@runtime_checkable
class Embedder(Protocol):
    """An async embedding model: a batch of texts in, one vector per text out."""

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed ``texts`` (in one or more requests, as the embedder sees fit)."""
        ...


@runtime_checkable
class Clock(Protocol):
    """Where a model client reads the time, sleeps and sets its deadline.

    The clients and their token buckets default to the event loop's clock (anyio's
    ``current_time``, ``sleep`` and ``move_on_after``). :class:`aeval.testing.FakeClock`
    replaces it in tests, so that rate limits, ``Retry-After`` and backoff take no real time.
    """

    def now(self) -> float:
        """The current time in seconds, from an arbitrary origin."""
        ...

    async def sleep(self, seconds: float, /) -> None:
        """Wait ``seconds``."""
        ...

    def move_on_after(self, seconds: float, /) -> AbstractContextManager[anyio.CancelScope]:
        """A cancel scope that is cancelled once ``seconds`` have passed on this clock."""
        ...
