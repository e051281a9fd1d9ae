"""Keeping secrets out of rows: API keys and header values echoed back by a server."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._conversation import Transcript, Turn
from .._reporting._results import ErrorInfo, EvaluationRow
from ..trace import redact_trace

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 4
"""Shorter values are not redacted: replacing every "1" in a report would destroy it."""

_ELLIPSES = ("...", "…")


class Redactor:
    """Replaces every occurrence of the given secrets in a row's text with ``[REDACTED]``.

    Outputs, explanations, metadata values (nested), errors (message and traceback) and
    traces (arguments, results, error messages, queries, documents) are cleaned; the
    sample's own fields are the user's and are left as they are.

    Text is meant to be redacted before it is cut; as a safety net for text that was cut
    first (a strategy quoting the start of an output), the start of a secret (at least
    ``MIN_SECRET_LENGTH`` characters) that ends a text, or comes just before a closing
    ``...`` or ``…``, is replaced too.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        kept = sorted(
            {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH},
            key=len,
            reverse=True,
        )
        self._pattern = re.compile("|".join(map(re.escape, kept))) if kept else None
        self._secrets = tuple(kept)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        if self._pattern is None:
            return text
        return self._cut_secret(self._pattern.sub(REDACTED, text))

    def _cut_secret(self, text: str) -> str:
        end = len(text)
        for ellipsis in _ELLIPSES:
            if text.endswith(ellipsis):
                end -= len(ellipsis)
                break
        for secret in self._secrets:
            start = text.find(secret[:MIN_SECRET_LENGTH], max(0, end - len(secret) + 1), end)
            while start != -1:
                if secret.startswith(text[start:end]):
                    return text[:start] + REDACTED + text[end:]
                start = text.find(secret[:MIN_SECRET_LENGTH], start + 1, end)
        return text

    def value(self, value: Any, *, _depth: int = 0) -> Any:
        """``value`` with secrets replaced in every string it holds (lists, tuples, dicts)."""
        if isinstance(value, str):
            return self.text(value)
        if _depth > 50:
            return value
        if isinstance(value, list | tuple):
            items = [self.value(item, _depth=_depth + 1) for item in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, Mapping):
            return {k: self.value(v, _depth=_depth + 1) for k, v in value.items()}
        if type(value) is Transcript:
            return self._transcript(value)
        return value

    def _transcript(self, transcript: Transcript) -> Transcript:
        turns = tuple(
            Turn(
                self.text(turn.user),
                None if turn.assistant is None else self.text(turn.assistant),
                None if turn.trace is None else redact_trace(turn.trace, self.value),
                turn.duration,
            )
            for turn in transcript.turns
        )
        return Transcript(turns, transcript.ended)

    def row(self, row: EvaluationRow) -> EvaluationRow:
        """``row`` with its output, explanation, metadata, error and trace cleaned."""
        if self._pattern is None:
            return row
        error = row.error
        if error is not None:
            error = ErrorInfo(
                error.type,
                self.text(error.message),
                self.text(error.traceback) if error.traceback else error.traceback,
                error.source,
            )
        return dataclasses.replace(
            row,
            output=self.value(row.output),
            explanation=self.text(row.explanation) if row.explanation else row.explanation,
            metadata=self.value(dict(row.metadata)) if row.metadata else row.metadata,
            error=error,
            trace=None if row.trace is None else redact_trace(row.trace, self.value),
        )
