"""A sink that keeps every row it is sent, in order, for tests to read."""

from __future__ import annotations

from aeval import EvaluationRow
from aeval.abc import BaseSink


class Rows(BaseSink):
    """Keeps each row in :attr:`rows`; the run hooks are :class:`BaseSink`'s no-ops."""

    def __init__(self) -> None:
        self.rows: list[EvaluationRow] = []

    async def send(self, row: EvaluationRow) -> None:
        self.rows.append(row)

    async def flush(self) -> None:
        pass
