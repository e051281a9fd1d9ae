"""The judge cache: chat replies stored by request, on disk (SQLite) or in memory."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import anyio
import anyio.to_thread
import orjson

from .._model_types import ChatMessage, ChatOptions, ChatResponse, TokenUsage
from .._util._singleflight import SingleFlight

__all__ = ["CacheStatistics", "JudgeCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    model TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    metadata TEXT
)
"""


@dataclass(frozen=True, slots=True)
class CacheStatistics:
    """What a :class:`JudgeCache` did since it was created.

    Attributes:
        hits: Calls answered from the cache (including calls that waited for an identical
            call in flight).
        misses: Calls that reached the model.
    """

    hits: int
    misses: int


class JudgeCache:
    """Chat replies stored by request, so identical judge calls are made once.

    The key is the SHA-256 of the model name, the full conversation, ``json_mode`` and the
    sampling options sent (``max_tokens``…). With a path the replies live in a SQLite file
    that survives runs (every database call runs in a worker thread, never on the event
    loop); with ``path=None`` they live in memory for the life of the object. Identical calls
    in flight at the same moment share one request. A call that raises is not cached and its
    error reaches every caller waiting on it; a call that is cancelled lets the next waiter
    make the request itself. A caller can say which replies are worth keeping (the judge
    keeps only those it could read): another reply is neither stored nor served, so a new
    run asks the model again.

    Args:
        path: The SQLite file (its folder is created on first use), or ``None`` for memory.

    Example:
        >>> cache = JudgeCache(path=None)
        >>> cache.statistics()
        CacheStatistics(hits=0, misses=0)
    """

    __slots__ = ("_connection", "_flights", "_hits", "_lock", "_memory", "_misses", "_path")

    def __init__(self, path: str | PathLike[str] | None = ".aeval/judge-cache.sqlite") -> None:
        self._path = None if path is None else Path(path).absolute()
        self._memory: dict[str, ChatResponse] = {}
        self._flights: SingleFlight[str, ChatResponse] = SingleFlight()
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    @property
    def path(self) -> Path | None:
        """The SQLite file, or ``None`` for an in-memory cache."""
        return self._path

    @staticmethod
    def key(
        model: str,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        options: ChatOptions | None = None,
    ) -> str:
        """The cache key of one chat call (the same as before options existed without them)."""
        request: dict[str, object] = {
            "model": model,
            "messages": [[message.role, message.content] for message in messages],
            "json_mode": json_mode,
        }
        if options is not None and options.payload():
            request["options"] = options.payload()
        return hashlib.sha256(orjson.dumps(request)).hexdigest()

    def statistics(self) -> CacheStatistics:
        """Hits and misses so far."""
        return CacheStatistics(self._hits, self._misses)

    async def get(self, key: str) -> ChatResponse | None:
        """The stored reply for ``key``, or ``None``."""
        if self._path is None:
            return self._memory.get(key)
        return await anyio.to_thread.run_sync(self._db_get, key)

    async def put(self, key: str, response: ChatResponse) -> None:
        """Store ``response`` under ``key`` (replacing any earlier reply)."""
        if self._path is None:
            self._memory[key] = response
            return
        await anyio.to_thread.run_sync(self._db_put, key, response)

    async def get_or_call(
        self,
        key: str,
        call: Callable[[], Awaitable[ChatResponse]],
        *,
        usable: Callable[[ChatResponse], bool] | None = None,
    ) -> tuple[ChatResponse, bool]:
        """The reply for ``key``: from the cache, from an identical call in flight, or by
        awaiting ``call`` and storing its reply.

        Args:
            key: The call's key (:meth:`key`).
            call: Makes the call when the cache cannot answer.
            usable: Which replies are worth keeping; a stored reply it refuses is not served
                (the call is made again and its reply replaces it), and a new reply it
                refuses is not stored. Every reply is usable without it.

        Returns:
            The reply and whether it came from the cache (``False`` when ``call`` ran here).
        """
        while True:
            flight = self._flights.joining(key)
            if flight is not None:
                await flight.done.wait()
                if flight.value is not None:
                    self._hits += 1
                    return flight.value, True
                if flight.error is not None:
                    raise flight.error
                continue
            self._flights.start(key)
            response: ChatResponse | None = None
            error: Exception | None = None
            try:
                response = await self.get(key)
                if response is not None and (usable is None or usable(response)):
                    self._hits += 1
                    return response, True
                response = await call()
                self._misses += 1
                if usable is None or usable(response):
                    await self.put(key, response)
                return response, False
            except Exception as exc:
                error = exc
                raise
            finally:
                self._flights.finish(key, value=response, error=error)

    async def clear(self) -> None:
        """Forget every stored reply."""
        self._memory.clear()
        if self._path is not None:
            await anyio.to_thread.run_sync(self._db_clear)

    async def aclose(self) -> None:
        """Close the database connection (it reopens if the cache is used again)."""
        if self._path is not None:
            await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Close the database connection now (blocking; prefer :meth:`aclose` in async code)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            assert self._path is not None
            self._path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self._path, timeout=30.0, check_same_thread=False)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                columns = {row[1] for row in connection.execute("PRAGMA table_info(judge_cache)")}
                if "metadata" not in columns:
                    # a cache written before replies kept their finish reason
                    connection.execute("ALTER TABLE judge_cache ADD COLUMN metadata TEXT")
                connection.commit()
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _db_get(self, key: str) -> ChatResponse | None:
        with self._lock:
            row = (
                self._db()
                .execute(
                    "SELECT text, model, prompt_tokens, completion_tokens, metadata "
                    "FROM judge_cache WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
        if row is None:
            return None
        text, model, prompt_tokens, completion_tokens, metadata = row
        try:
            stored = orjson.loads(metadata) if metadata else {}
        except orjson.JSONDecodeError:
            stored = {}
        return ChatResponse(
            text,
            TokenUsage(prompt_tokens, completion_tokens),
            model,
            metadata=stored if isinstance(stored, dict) else {},
        )

    def _db_put(self, key: str, response: ChatResponse) -> None:
        with self._lock:
            connection = self._db()
            try:
                metadata = orjson.dumps(dict(response.metadata)).decode()
            except TypeError:
                metadata = None
            connection.execute(
                "INSERT OR REPLACE INTO judge_cache (key, text, model, prompt_tokens, "
                "completion_tokens, created, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    response.text,
                    response.model,
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    time.time(),
                    metadata,
                ),
            )
            connection.commit()

    def _db_clear(self) -> None:
        with self._lock:
            connection = self._db()
            connection.execute("DELETE FROM judge_cache")
            connection.commit()

    def __repr__(self) -> str:
        where = "memory" if self._path is None else str(self._path)
        return f"JudgeCache({where!r})"
