"""Clients of the OpenAI-compatible chat completions and embeddings APIs.

OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio and LiteLLM all serve these APIs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Unpack

import anyio

from .._exceptions import ModelError, ModelHTTPError
from .._model_types import ChatMessage, ChatOptions, ChatResponse, Embeddings, TokenUsage
from ..trace._chat import requested_tools
from ..trace._context import now
from ..trace._recording import current_recorder, record_model_call
from ._body import DEFAULT_EMBEDDINGS_MAX_RESPONSE_BYTES, DEFAULT_MAX_RESPONSE_BYTES
from ._http import ClientSettings, HTTPModelClient

__all__ = ["OpenAIChatModel", "OpenAIEmbedder"]

logger = logging.getLogger("aeval.models")


def _usage(data: Mapping[str, Any]) -> TokenUsage:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return TokenUsage()
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens")
    return TokenUsage(
        prompt if isinstance(prompt, int) else 0,
        completion if isinstance(completion, int) else 0,
    )


class OpenAIChatModel(HTTPModelClient):
    """A :class:`~aeval.abc.ChatModel` over ``POST {base_url}/chat/completions``.

    Settings come from the arguments, else from the environment: the base URL from
    ``AEVAL_BASE_URL`` then ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``), the
    model from ``AEVAL_MODEL`` then ``OPENAI_MODEL``, the API key from ``AEVAL_API_KEY`` then
    ``OPENAI_API_KEY`` (optional: Ollama needs none). The key is sent as a bearer token and
    never appears in a repr, a log line or an error message.

    All calls share one ``httpx.AsyncClient``, created on first use inside the event loop,
    whose pool holds ``max_concurrency`` connections; at most ``max_concurrency`` requests are
    in flight. The client paces itself to the provider's quota as its replies report it
    (``x-ratelimit-*`` headers, and a 429's ``retry-after-ms`` or ``Retry-After``), so that
    it neither waits for nothing nor runs into 429s. Optional ``requests_per_minute`` and
    ``tokens_per_minute`` budgets delay requests too, holding a minute's worth as a
    provider's bucket does (``limits=RateLimits(burst=...)``); a request costs what providers
    charge for it, its bytes / 4 plus ``max_tokens``, and more if the reported usage says so.

    Failures are retried with exponential jitter (``backoff`` doubling up to
    ``max_backoff`` seconds) on 408, 409, 425, 5xx, timeouts and dropped connections, up to
    ``max_attempts`` requests, and a 429 after the wait it asks for (plus jitter up to
    ``backoff``) until the deadline; never past ``deadline`` seconds in all. Each retry is
    logged at INFO on the ``aeval.models`` logger and counted in
    :attr:`ChatResponse.retries`. 400, 401, 403 and 404 raise
    :class:`~aeval.ModelHTTPError` at once. A 200 reply that is not the API's JSON raises
    :class:`~aeval.ModelResponseError` without retrying.

    A read timeout (the server took the request and is still working on it) is retried at
    most ``read_timeout_retries`` times, and only while a whole ``timeout`` fits before the
    deadline: a server that runs one request at a time (llama.cpp, Ollama) keeps generating
    for the abandoned request, so a retry only queues behind it.

    ``json_mode=True`` sends ``response_format={"type": "json_object"}``; when the server
    answers 400 naming ``response_format``, the request is sent once more without it and the
    client stops asking for it.

    ``options=ChatOptions(...)`` sets ``max_tokens``, ``temperature``, ``seed`` and ``stop``
    for one call, over the client's own settings. The reply's ``metadata`` holds the
    server's ``finish_reason`` (``"length"``: cut off at ``max_tokens``) and the
    ``max_tokens`` sent.

    Example:
        >>> async def main() -> None:
        ...     async with OpenAIChatModel(
        ...         "llama3.2", base_url="http://localhost:11434/v1", max_concurrency=4
        ...     ) as judge:
        ...         reply = await judge.chat([ChatMessage("user", "Is 2 + 2 = 4? true/false")])
        ...         print(reply.text, reply.usage.total_tokens, reply.retries)

    Args:
        model: The model name.
        base_url: The API's base URL, ending in ``/v1`` for most servers.
        api_key: The API key.
        temperature: Sampling temperature (0 for repeatable judging).
        max_tokens: The reply's token cap, if any.
        seed: The sampling seed sent with every request, if any.
        stop: Texts at which the server stops generating, if any.
        timeout: Seconds one request may take (connect, read, write, pool).
        retry: When to repeat a request and when to give up (:class:`RetryPolicy`; its
            defaults: 4 attempts, a 180 s deadline, 1 read-timeout retry, backoff 0.2 s up
            to 5 s). The fields may also be given one by one, as below, but not both ways.
        limits: Concurrency and budgets (:class:`RateLimits`; default 10 calls at once, no
            budgets), or one by one as below.
        max_attempts: Requests per call, the first included (``retry.max_attempts``).
        deadline: Seconds one call may take in all, retries and waits included, counted from
            when it holds one of the ``max_concurrency`` slots (``retry.deadline``).
        read_timeout_retries: Retries after a read timeout (the server is still busy).
        backoff: First retry wait in seconds (also the jitter's range).
        max_backoff: Largest retry wait in seconds, ``Retry-After`` aside.
        max_concurrency: Requests in flight at once (``limits.max_concurrency``).
        requests_per_minute: Request budget, if any.
        tokens_per_minute: Token budget, if any.
        headers: Extra headers sent with every request.
        clock: What the retry waits, the budgets and the deadline run on: the event loop's
            clock by default, :class:`aeval.testing.FakeClock` in tests.
        max_response_bytes: The largest reply read (default 4 MiB), counted after
            decompression; a larger one raises :class:`~aeval.ModelResponseTooLargeError`
            as soon as it passes the limit, without retrying.
    """

    _kind = "chat"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        **settings: Unpack[ClientSettings],
    ) -> None:
        super().__init__(
            model=model,
            model_env=("AEVAL_MODEL", "OPENAI_MODEL"),
            base_url=base_url,
            api_key=api_key,
            max_response_bytes=max_response_bytes,
            **settings,
        )
        self._options = ChatOptions(
            max_tokens=max_tokens, temperature=temperature, seed=seed, stop=stop
        )
        self._json_mode_supported = True

    @property
    def options(self) -> ChatOptions:
        """The sampling options sent with every request unless a call overrides them."""
        return self._options

    async def chat(
        self,
        messages: Sequence[ChatMessage] | str,
        *,
        json_mode: bool = False,
        options: ChatOptions | None = None,
    ) -> ChatResponse:
        """Send the conversation and return the reply.

        Args:
            messages: The conversation, oldest first; a string is one user message.
            json_mode: Ask for a JSON object reply where the server supports that.
            options: ``max_tokens``, ``temperature``, ``seed`` and ``stop`` for this call;
                those set win over the client's.

        Raises:
            ModelHTTPError: The server answered with an error status.
            ModelConnectionError: The server could not be reached, after the retries.
            ModelTimeoutError: A request timed out after the retries, or the deadline passed.
            ModelResponseError: The reply is not a chat completion.
        """
        if isinstance(messages, str):
            messages = [ChatMessage("user", messages)]
        if options is not None and not isinstance(options, ChatOptions):
            raise TypeError(f"options must be a ChatOptions or None, got {options!r}")
        sent = self._options.merged(options)
        use_json = json_mode and self._json_mode_supported
        try:
            data, retries = await self._complete(messages, use_json, sent)
        except ModelHTTPError as error:
            if not (use_json and error.status == 400 and "response_format" in error.body):
                raise
            self._json_mode_supported = False
            logger.info(
                "chat server at %s rejected response_format; asking without it from now on",
                self.base_url,
            )
            try:
                data, more = await self._complete(messages, False, sent)
            except ModelError as again:
                again.retries += error.retries
                raise
            retries = error.retries + more
            use_json = False
        return self._parse(data, retries, json_mode=use_json, options=sent)

    async def _complete(
        self, messages: Sequence[ChatMessage], json_mode: bool, options: ChatOptions
    ) -> tuple[Any, int]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            **options.payload(),
        }
        if json_mode:
            payload["response_format"] = {"type": "json_object"}
        reserve = options.max_tokens or 0
        traced = current_recorder() is not None
        started, began = (now(), time.perf_counter()) if traced else (None, 0.0)
        data, retries, estimate = await self._post("/chat/completions", payload, reserve=reserve)
        if isinstance(data, Mapping):
            usage = _usage(data)
            self._record_usage(
                usage.prompt_tokens, usage.completion_tokens, estimate, reserve=reserve
            )
            if traced:
                reported = data.get("model")
                record_model_call(
                    model=reported if isinstance(reported, str) else self.model,
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    duration=time.perf_counter() - began,
                    requested_tools=requested_tools(data),
                    started=started,
                )
        return data, retries

    def _parse(
        self, data: Any, retries: int, *, json_mode: bool, options: ChatOptions
    ) -> ChatResponse:
        path = "/chat/completions"
        if not isinstance(data, Mapping):
            raise self.malformed(path, "is not a JSON object", data)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self.malformed(path, "has no choices", data)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, str):
            raise self.malformed(path, "has no message content in its first choice", data)
        model = data.get("model")
        metadata: dict[str, Any] = {"json_mode": json_mode}
        if isinstance(choice, Mapping) and choice.get("finish_reason") is not None:
            metadata["finish_reason"] = choice["finish_reason"]
        if options.max_tokens is not None:
            metadata["max_tokens"] = options.max_tokens
        if data.get("id") is not None:
            metadata["id"] = data["id"]
        return ChatResponse(
            text=content,
            usage=_usage(data),
            model=model if isinstance(model, str) else self.model,
            retries=retries,
            metadata=metadata,
        )


class OpenAIEmbedder(HTTPModelClient):
    """An :class:`~aeval.abc.Embedder` over ``POST {base_url}/embeddings``.

    Configured like :class:`OpenAIChatModel` (same base URL, API key, retries, deadline,
    concurrency and budgets), except that the model comes from ``model=``, else
    ``AEVAL_EMBEDDING_MODEL``, else ``OPENAI_EMBEDDING_MODEL``. Texts are sent in batches of
    at most ``batch_size``, concurrently within ``max_concurrency``; the vectors come back in
    the order of the texts and :attr:`Embeddings.retries` sums the batches' retries (an
    error raised for one batch carries the retries of every batch in its ``retries``).

    A server that does not pool (llama.cpp's server started without ``--pooling`` or with
    ``--pooling none``) returns one vector per token of each text. That reply raises
    :class:`~aeval.ModelResponseError` saying how to fix the server, unless
    ``pooling="mean"``, which averages the token vectors into one per text.

    Example:
        >>> async def main() -> None:
        ...     async with OpenAIEmbedder(
        ...         "nomic-embed-text", base_url="http://localhost:11434/v1"
        ...     ) as embedder:
        ...         result = await embedder.embed(["a cat", "a dog"])
        ...         print(len(result.vectors), len(result.vectors[0]))

    Args:
        model: The embedding model name.
        base_url: The API's base URL, ending in ``/v1`` for most servers.
        api_key: The API key.
        batch_size: Most texts per request.
        dimensions: Ask for vectors of this size (models that support it), if given.
        pooling: ``"mean"`` to average per-token vectors into one per text; ``None`` (the
            default) refuses per-token replies with an error that says how to fix the server.
        timeout: Seconds one request may take.
        retry: When to repeat a request and when to give up (:class:`RetryPolicy`), or its
            fields one by one, as below, but not both ways.
        limits: Concurrency and budgets (:class:`RateLimits`), or one by one as below.
        max_attempts: Requests per batch, the first included.
        deadline: Seconds one batch may take in all, retries and waits included, counted from
            when it holds one of the ``max_concurrency`` slots.
        read_timeout_retries: Retries after a read timeout (the server is still busy).
        backoff: First retry wait in seconds.
        max_backoff: Largest retry wait in seconds, ``Retry-After`` aside.
        max_concurrency: Requests in flight at once.
        requests_per_minute: Request budget, if any.
        tokens_per_minute: Token budget, if any.
        headers: Extra headers sent with every request.
        clock: What the retry waits, the budgets and the deadline run on: the event loop's
            clock by default, :class:`aeval.testing.FakeClock` in tests.
        max_response_bytes: The largest reply read (default 64 MiB), counted after
            decompression; a larger one raises :class:`~aeval.ModelResponseTooLargeError`
            as soon as it passes the limit, without retrying. Per-token replies
            (``pooling="mean"``) are far larger than pooled ones.
    """

    _kind = "embeddings"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        dimensions: int | None = None,
        pooling: Literal["mean"] | None = None,
        max_response_bytes: int = DEFAULT_EMBEDDINGS_MAX_RESPONSE_BYTES,
        **settings: Unpack[ClientSettings],
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if pooling not in (None, "mean"):
            raise ValueError(f"pooling must be 'mean' or None, got {pooling!r}")
        super().__init__(
            model=model,
            model_env=("AEVAL_EMBEDDING_MODEL", "OPENAI_EMBEDDING_MODEL"),
            base_url=base_url,
            api_key=api_key,
            max_response_bytes=max_response_bytes,
            **settings,
        )
        self._batch_size = batch_size
        self._dimensions = dimensions
        self._pooling = pooling

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed ``texts``; one vector per text, in order.

        Raises:
            ModelHTTPError: The server answered with an error status.
            ModelConnectionError: The server could not be reached, after the retries.
            ModelTimeoutError: A request timed out after the retries, or the deadline passed.
            ModelResponseError: The reply is not an embeddings list for these texts.
        """
        if isinstance(texts, str):
            texts = [texts]
        batches = [
            list(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)
        ]
        if len(batches) == 1:
            return await self._embed_batch(batches[0])
        results: list[Embeddings | None] = [None] * len(batches)
        errors: list[ModelError] = []

        async def run(index: int, cancel: anyio.CancelScope) -> None:
            try:
                results[index] = await self._embed_batch(batches[index])
            except ModelError as error:
                errors.append(error)
                cancel.cancel()

        async with anyio.create_task_group() as group:
            for index in range(len(batches)):
                group.start_soon(run, index, group.cancel_scope)
        done = [result for result in results if result is not None]
        retries = sum(result.retries for result in done)
        if errors:
            first = errors[0]
            first.retries = retries + sum(error.retries for error in errors)
            raise first
        vectors: list[Sequence[float]] = []
        usage = TokenUsage()
        for result in done:
            vectors.extend(result.vectors)
            usage += result.usage
        return Embeddings(vectors=vectors, usage=usage, model=self.model, retries=retries)

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        path = "/embeddings"
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        data, retries, estimate = await self._post(path, payload)
        if not isinstance(data, Mapping):
            raise self.malformed(path, "is not a JSON object", data)
        usage = _usage(data)
        self._record_usage(usage.prompt_tokens, usage.completion_tokens, estimate)
        items = data.get("data")
        if not isinstance(items, list) or len(items) != len(texts):
            count = len(items) if isinstance(items, list) else 0
            raise self.malformed(
                path, f"has {count} embeddings in 'data' for {len(texts)} texts", data
            )
        ordered = sorted(
            items, key=lambda item: item.get("index", 0) if isinstance(item, Mapping) else 0
        )
        vectors: list[list[float]] = []
        for item in ordered:
            vector = item.get("embedding") if isinstance(item, Mapping) else None
            if isinstance(vector, list) and vector and all(isinstance(x, list) for x in vector):
                vectors.append(self._pooled(path, vector, data))
                continue
            if not isinstance(vector, list) or not all(_is_number(x) for x in vector):
                raise self.malformed(path, "has an embedding that is not a list of numbers", data)
            vectors.append([float(x) for x in vector])
        return Embeddings(vectors=vectors, usage=usage, model=self.model, retries=retries)

    def _pooled(self, path: str, tokens: list[Any], data: Any) -> list[float]:
        """One vector from the per-token vectors of one text (``pooling="mean"``)."""
        size = len(tokens[0])
        if not size or not all(
            len(token) == size and all(_is_number(x) for x in token) for token in tokens
        ):
            raise self.malformed(path, "has token vectors that are not lists of numbers", data)
        if self._pooling != "mean":
            error = self.malformed(
                path,
                f"has one vector per token ({len(tokens)} vectors of {size}) for a text, not "
                "one per text: the server does not pool its embeddings (llama.cpp's server "
                "started without --pooling, or with --pooling none). Start it with --pooling "
                "mean (or cls, last), or pass pooling='mean' to average the token vectors",
                data,
            )
            raise error
        return [math.fsum(column) / len(tokens) for column in zip(*tokens, strict=True)]


def _is_number(value: object) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool)
