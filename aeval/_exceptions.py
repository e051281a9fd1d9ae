"""The exceptions aeval raises.

Every error inherits :class:`AevalError` and the builtin a caller would naturally catch::

    AevalError(Exception)
     ├── SampleLoadError(ValueError)           a sample source cannot be read or is invalid
     │    ├── SampleFileNotFoundError(FileNotFoundError)
     │    └── NoLoaderError                    no loader supports the source
     ├── FormatError(ValueError)               unknown or invalid report format
     ├── EvaluationSetupError(RuntimeError)    an evaluation was configured incompletely
     └── ScorerClosedError(RuntimeError)       a closed Scorer was asked to evaluate

Failures of the function under test or of a strategy are never raised by the Scorer: they
become error rows in the report (see ``EvaluationRow.error``).
"""

from __future__ import annotations

__all__ = [
    "AevalError",
    "EvaluationSetupError",
    "FormatError",
    "NoLoaderError",
    "SampleFileNotFoundError",
    "SampleLoadError",
    "ScorerClosedError",
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
        self.filename = source


class NoLoaderError(SampleLoadError):
    """Raised when no registered loader supports a source."""


class FormatError(AevalError, ValueError):
    """Raised for an unknown report format or invalid formatter options."""


class EvaluationSetupError(AevalError, RuntimeError):
    """Raised when an evaluation is run without the configuration it needs."""


class ScorerClosedError(AevalError, RuntimeError):
    """Raised when a Scorer that was closed is asked to evaluate."""
