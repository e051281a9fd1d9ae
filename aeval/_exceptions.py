"""The exceptions aeval raises.

Every error inherits :class:`AevalError` and the builtin a caller would naturally catch::

    AevalError(Exception)
     ├── SampleLoadError(ValueError)           a sample source cannot be read or is invalid
     │    ├── SampleFileNotFoundError(FileNotFoundError)
     │    └── NoLoaderError                    no loader supports the source
     ├── FormatError(ValueError)               unknown or invalid report format
     ├── EvaluationSetupError(RuntimeError)    an evaluation was configured incompletely
     ├── ScorerClosedError(RuntimeError)       a closed Scorer was asked to evaluate
     ├── AbandonedCallsError(RuntimeError)     too many timed-out sync calls still running
     ├── MissingExtraError(ImportError)        an optional extra (aeval-engine[local]) is missing
     ├── ConfigError(ValueError)               the aeval command's configuration cannot be used
     ├── ComparisonError(ValueError)           two runs cannot be compared (a side, or the pairs)
     ├── StoreError                            the run store cannot be opened, read or written
     │    └── RunNotFoundError(LookupError)    a run reference names no stored run
     ├── MergeError(ValueError)                shard outputs that cannot be merged into one
     ├── ReportWriteError(OSError)             a report or an output file cannot be written
     ├── ExecutorError(RuntimeError)           an executor (aeval.ray) cannot run the evaluation
     │    └── NotSerializableError(TypeError)  the function or a strategy cannot travel
     ├── UnmockedToolCall(LookupError)         a tool call that no fixture or recording serves
     ├── ToolError(RuntimeError)               the error a tool fixture or a replayed call raises
     │    └── ToolTimeoutError(TimeoutError)   a fixture's ``error: timeout``
     ├── HttpTargetError                       an HTTP function under test (aeval run) failed
     │    ├── HttpStatusError                  it answered with a status outside 2xx
     │    ├── HttpResponseError(ValueError)    its response holds no answer at the path
     │    │    └── HttpResponseTooLargeError   its body is larger than max_response_bytes
     │    └── HttpTimeoutError(TimeoutError)   no complete answer within its timeout
     └── ModelError                            a model server call failed
          ├── ModelConfigurationError(ValueError)   a model client was configured incompletely
          ├── ModelHTTPError                   the server answered with an error status
          ├── ModelConnectionError(ConnectionError) the connection failed or was dropped
          ├── ModelTimeoutError(TimeoutError)  no reply within the timeout or the deadline
          └── ModelResponseError(ValueError)   the reply's body is not what the API promises
               └── ModelResponseTooLargeError  the reply is larger than max_response_bytes

``HTTPTargetError``, ``HTTPStatusError``, ``HTTPResponseError``, ``HTTPResponseTooLargeError``
and ``HTTPTimeoutError`` are the same classes spelled as ``ModelHTTPError`` is (aeval spells
HTTP in capitals); the classes keep their ``Http`` names, which error rows record as their
``type``, so stored runs and reports stay comparable.

Failures of the function under test or of a strategy are never raised by the Scorer: they
become error rows in the report (see ``EvaluationRow.error``).
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

__all__ = [
    "AbandonedCallsError",
    "AevalError",
    "ComparisonError",
    "EvaluationSetupError",
    "ExecutorError",
    "FormatError",
    "MergeError",
    "MissingExtraError",
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelResponseTooLargeError",
    "ModelTimeoutError",
    "NoLoaderError",
    "NotSerializableError",
    "ReportWriteError",
    "RunNotFoundError",
    "SampleFileNotFoundError",
    "SampleLoadError",
    "ScorerClosedError",
    "StoreError",
    "ToolError",
    "ToolTimeoutError",
    "UnmockedToolCall",
]


class AevalError(Exception):
    """Base class of every error aeval raises."""


class SampleLoadError(AevalError, ValueError):
    """Raised when a sample source cannot be loaded.

    The message names the source, the line where the parser knows it, the sample and what to
    change. The same facts are kept as attributes for programs.

    Attributes:
        source: The file, URL or source string being loaded, if known.
        line: The 1-based line of the problem, if known.
        sample: The name (or position) of the sample at fault, if known.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        sample: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.sample = sample
        self.reason = message
        super().__init__(self._render())

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self._render()

    def _render(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source if self.line is None else f"{self.source}:{self.line}"
        parts = [where] if where else []
        if self.sample is not None:
            parts.append(f"sample {self.sample!r}")
        prefix = ", ".join(parts)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class SampleFileNotFoundError(SampleLoadError, FileNotFoundError):
    """Raised when a sample file does not exist; ``filename`` holds the path."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        sample: str | None = None,
    ) -> None:
        super().__init__(message, source=source, line=line, sample=sample)
        self.errno = errno.ENOENT
        self.filename = source


class NoLoaderError(SampleLoadError):
    """Raised when no registered loader supports a source."""


class FormatError(AevalError, ValueError):
    """Raised for an unknown report format or invalid formatter options."""


class EvaluationSetupError(AevalError, RuntimeError):
    """Raised when an evaluation is run without the configuration it needs."""


class ScorerClosedError(AevalError, RuntimeError):
    """Raised when a Scorer that was closed is asked to evaluate."""


class AbandonedCallsError(AevalError, RuntimeError):
    """Too many calls of a sync function under test outlived their timeout.

    Each such call keeps running in a background (daemon) thread; past the Scorer's
    ``max_abandoned`` the run stops with this error instead of piling threads up. The rows
    finished so far are kept (the report is partial).
    """


class ConfigError(AevalError, ValueError):
    """The configuration of the ``aeval`` command (file or flags) cannot be used; nothing ran.

    Each line of the message names the file, the line where known, the key and the fix.

    Attributes:
        source: The configuration file.
        problems: One line per problem.
    """

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))

    @classmethod
    def at(
        cls, source: str | PathLike[str], key: str, message: str, *, line: int | None = None
    ) -> ConfigError:
        """One problem at ``key`` (a rendered key such as ``strategies[1].threshold``)."""
        where = str(source) if line is None else f"{source}:{line}"
        return cls(str(source), [f"{where}: {key}: {message}"])


class ComparisonError(AevalError, ValueError):
    """Two runs cannot be compared: a side cannot be read, does not hold every row, has two
    different samples under one name, or the sides share no (sample, strategy) pair.

    The message names the side (baseline or candidate), the file or run, and what to change.

    Attributes:
        side: ``"baseline"`` or ``"candidate"`` when one side is at fault, else ``None``.
    """

    def __init__(self, message: str, *, side: str | None = None) -> None:
        super().__init__(message)
        self.side = side


class StoreError(AevalError):
    """The run store (``RunStore``) cannot be used: the file is not an aeval run store, it was
    written by a newer aeval, it stayed locked by another process for too long, or it cannot
    be created or written.

    The message names the file and what to change.

    Attributes:
        path: The store's file.
    """

    def __init__(self, message: str, *, path: str | PathLike[str]) -> None:
        super().__init__(message)
        self.path = str(path)


class RunNotFoundError(StoreError, LookupError):
    """A run reference (a run id, ``latest``, ``latest~1``, ``NAME@latest``...) names no run.

    The message names the reference and says what the store holds.

    Attributes:
        ref: The reference given.
    """

    def __init__(self, message: str, *, path: str | PathLike[str], ref: str) -> None:
        super().__init__(message, path=path)
        self.ref = ref


class MergeError(AevalError, ValueError):
    """Shard outputs cannot be merged: different configurations, datasets or splits, a shard
    given twice, a row twice, or a report that holds only some of its rows."""


class ReportWriteError(AevalError, OSError):
    """A report or another output file cannot be written (a full disk, a read-only folder).

    Files are written to a temporary file beside them and renamed into place, so the file a
    previous run wrote is left whole.

    Attributes:
        path: The file that could not be written.
    """

    def __init__(self, path: str | PathLike[str], cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(
            cause.errno,
            f"{path}: cannot write the file: {reason} (any previous version of it is unchanged)",
        )
        self.path = str(path)

    def __str__(self) -> str:
        return str(self.strerror)


class ExecutorError(AevalError, RuntimeError):
    """An executor (such as :class:`aeval.ray.RayExecutor`) cannot run the evaluation: every
    worker died, or the cluster cannot be reached."""


class NotSerializableError(ExecutorError, TypeError):
    """The function under test or a strategy cannot be sent to the workers of an executor.

    Raised before any work starts; the message names the object and what could not be
    serialised.
    """


class UnmockedToolCall(AevalError, LookupError):
    """A tool was called where its results are served (``tools="fixtures"`` or a replay) and
    nothing matches the call: never a silent live call.

    The message names the tool, its arguments and, for a replay, what differs from the
    closest recorded call.

    Attributes:
        tool: The tool's name.
        arguments: The arguments of the call.
    """

    def __init__(self, message: str, *, tool: str, arguments: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.tool = tool
        self.arguments = dict(arguments)


class ToolError(AevalError, RuntimeError):
    """The error a tool fixture (``error: "..."``) or a replayed failed call raises inside the
    tool, as the real tool would have.

    Attributes:
        tool: The tool's name.
        type: The error's type as recorded (``"ConnectionError"``), or ``None`` for a fixture's
            plain message.
    """

    def __init__(self, message: str, *, tool: str, type: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.type = type


class ToolTimeoutError(ToolError, TimeoutError):
    """A tool fixture's ``error: "timeout"`` (or a replayed timeout): the tool timed out."""


class HttpTargetError(AevalError):
    """An HTTP endpoint evaluated by ``aeval run`` (``target.http``) failed for a sample.

    Raised inside the function under test, so it becomes error rows, never a crash.
    """


class HttpStatusError(HttpTargetError):
    """The HTTP target answered with a status outside 2xx (and not in ``accept_status``).

    Attributes:
        status: The HTTP status code.
    """

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class HttpResponseError(HttpTargetError, ValueError):
    """The HTTP target's response holds no answer at the configured ``response_path``."""


class _TooLargeError(AevalError):
    """A body larger than its limit in bytes (counted after decompression); reading stopped
    as soon as it passed the limit.

    Attributes:
        limit: The limit in bytes.
    """

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class HttpResponseTooLargeError(_TooLargeError, HttpResponseError):
    """The HTTP target's body is larger than ``max_response_bytes`` (counted after
    decompression); reading stopped as soon as it passed the limit.

    Attributes:
        limit: The limit in bytes.
    """


class HttpTimeoutError(HttpTargetError, TimeoutError):
    """The HTTP target did not answer completely within its ``timeout`` seconds."""


HTTPTargetError = HttpTargetError
"""The preferred spelling of :class:`HttpTargetError` (the same class)."""
HTTPStatusError = HttpStatusError
"""The preferred spelling of :class:`HttpStatusError` (the same class)."""
HTTPResponseError = HttpResponseError
"""The preferred spelling of :class:`HttpResponseError` (the same class)."""
HTTPResponseTooLargeError = HttpResponseTooLargeError
"""The preferred spelling of :class:`HttpResponseTooLargeError` (the same class)."""
HTTPTimeoutError = HttpTimeoutError
"""The preferred spelling of :class:`HttpTimeoutError` (the same class)."""


class ModelError(AevalError):
    """Base class of the errors a model client raises.

    Messages never contain the API key.

    Attributes:
        retries: The requests repeated before the client gave up (0 when it failed at once);
            the Scorer puts them in the error row's ``retries`` metadata, so the report's usage
            counts them.
    """

    retries: int = 0


class ModelConfigurationError(ModelError, ValueError):
    """Raised when a model client lacks a setting it needs (such as the model name)."""


class ModelHTTPError(ModelError):
    """Raised when the server answers with an error status.

    400, 401, 403 and 404 are raised at once, with a message that says what to fix; 408, 409,
    425, 429 and 5xx are raised after the retries ran out.

    Attributes:
        status: The HTTP status code.
        url: The URL that was requested.
        body: The first 200 characters of the response body.
        retry_after: The delay the server asked for (``Retry-After``) in seconds, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        url: str,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.url = url
        self.body = body
        self.retry_after = retry_after


class ModelConnectionError(ModelError, ConnectionError):
    """Raised when the server cannot be reached or drops the connection (after the retries)."""


class ModelTimeoutError(ModelError, TimeoutError):
    """Raised when a request times out (after the retries) or the total deadline passes.

    Attributes:
        read_timeout: The server took the request and did not answer within the timeout (it
            may still be working on it), as opposed to a connection that could not be made
            or a deadline that passed.
    """

    def __init__(self, message: str, *, read_timeout: bool = False) -> None:
        super().__init__(message)
        self.read_timeout = read_timeout


class ModelResponseError(ModelError, ValueError):
    """Raised when a reply cannot be read: not JSON, a wrong content type or missing fields.

    Attributes:
        body: The first 200 characters of the response body.
    """

    def __init__(self, message: str, *, body: str = "") -> None:
        super().__init__(message)
        self.body = body


class ModelResponseTooLargeError(_TooLargeError, ModelResponseError):
    """Raised when a reply's body is larger than the client's ``max_response_bytes``
    (counted after decompression); reading stopped as soon as it passed the limit.

    Attributes:
        limit: The limit in bytes.
    """


class MissingExtraError(AevalError, ImportError):
    """Raised when a feature needs an optional extra that is not installed.

    The message names the extra (``pip install 'aeval-engine[local]'``) and the alternative.
    """
