"""The HTTP machinery shared by the OpenAI-compatible clients: one pool, retries, limits."""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import anyio
import anyio.lowlevel
import httpx
import orjson
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    wait_exponential,
    wait_random,
)

from .._exceptions import (
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from .._util._closing import AsyncClosing
from ._body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    check_max_bytes,
    read_capped,
    read_prefix,
)
from ._clock import Clock, check_clock
from ._limits import SHARE_LIMITS, LimitSpec, ModelStatistics, SharedLimits
from ._pacing import Grant, Pacer, read_quota_headers
from ._policy import RateLimits, RetryPolicy, build_policies
from ._replies import (
    is_rate_limited,
    is_read_timeout,
    is_retryable,
    retry_after,
    status_hint,
    too_large,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "ClientSettings",
    "HTTPModelClient",
    "body_excerpt",
    "resolve_setting",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_BODY_EXCERPT = 200

logger = logging.getLogger("aeval.models")


def resolve_setting(value: str | None, *names: str) -> str | None:
    """``value`` if given, else the first non-empty environment variable of ``names``."""
    if value:
        return value
    for name in names:
        found = os.environ.get(name)
        if found:
            return found
    return None


def body_excerpt(content: bytes | str) -> str:
    """The first 200 characters of a body, decoded leniently."""
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    return text[:_BODY_EXCERPT]


class _LoopState:
    """What is bound to one event loop: the connection pool and the concurrency limiter."""

    __slots__ = ("client", "limiter", "token")

    def __init__(self, client: httpx.AsyncClient, limiter: anyio.CapacityLimiter) -> None:
        self.client = client
        self.limiter = limiter
        self.token = anyio.lowlevel.current_token()


class ClientSettings(TypedDict, total=False):
    """The keyword arguments every HTTP model client takes, as :class:`OpenAIChatModel`'s
    docstring describes them: the timeout, the retries, the limits, headers and clock."""

    timeout: float
    retry: RetryPolicy | None
    limits: RateLimits | None
    max_attempts: int | None
    deadline: float | None
    read_timeout_retries: int | None
    backoff: float | None
    max_backoff: float | None
    max_concurrency: int | None
    requests_per_minute: float | None
    tokens_per_minute: float | None
    headers: Mapping[str, str] | None
    clock: Clock | None


class HTTPModelClient(AsyncClosing):
    """The shared base of :class:`OpenAIChatModel` and :class:`OpenAIEmbedder`.

    Holds the settings, one lazily created ``httpx.AsyncClient`` whose pool fits
    ``max_concurrency``, the limits and the counters behind ``statistics()``. Retry waits,
    budget waits and the deadline run on ``clock`` (the event loop's by default).
    """

    _kind = "model"

    def __init__(
        self,
        *,
        model: str | None,
        model_env: tuple[str, ...],
        base_url: str | None,
        api_key: str | None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        limits: RateLimits | None = None,
        max_attempts: int | None = None,
        deadline: float | None = None,
        read_timeout_retries: int | None = None,
        backoff: float | None = None,
        max_backoff: float | None = None,
        max_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        headers: Mapping[str, str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        retry, limits = build_policies(
            retry,
            limits,
            max_attempts=max_attempts,
            deadline=deadline,
            read_timeout_retries=read_timeout_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
        )
        resolved_model = resolve_setting(model, *model_env)
        if resolved_model is None:
            names = " or ".join(model_env)
            raise ModelConfigurationError(
                f"{type(self).__name__} needs a model name: pass model=... or set {names}"
            )
        if timeout <= 0:
            raise ValueError("timeout and deadline must be positive")
        self._retry = retry
        self._limits = limits
        self._clock = check_clock(clock)
        self._max_response_bytes = check_max_bytes(max_response_bytes)
        self._model = resolved_model
        url = resolve_setting(base_url, "AEVAL_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._base_url = url.rstrip("/")
        self._api_key = resolve_setting(api_key, "AEVAL_API_KEY", "OPENAI_API_KEY")
        self._timeout = timeout
        self._max_attempts = retry.max_attempts
        self._deadline = retry.deadline
        self._read_timeout_retries = retry.read_timeout_retries
        self._wait = wait_exponential(
            multiplier=retry.backoff, max=retry.max_backoff
        ) + wait_random(0, retry.backoff)
        self._max_concurrency = limits.max_concurrency
        self._pacer = self._new_pacer()
        self._headers = dict(headers or {})
        self._state: _LoopState | None = None
        self._shared: SharedLimits | None = None
        self._requests = 0
        self._retries = 0
        self._failures = 0
        self._in_flight = 0
        self._throttled = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._rate_limited = 0
        self._waited = 0.0
        self._first_sent: float | None = None
        self._last_reply: float | None = None

    def _new_pacer(self) -> Pacer:
        limits = self._limits
        return Pacer(
            limits.requests_per_minute,
            limits.tokens_per_minute,
            burst=limits.burst,
            follow_headers=limits.follow_headers,
            clock=self._clock,
        )

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def retry(self) -> RetryPolicy:
        """When this client repeats a request and when it gives up."""
        return self._retry

    @property
    def limits(self) -> RateLimits:
        """How much this client asks of its server at once and per minute."""
        return self._limits

    @property
    def base_url(self) -> str:
        """The API's base URL (ending before ``/chat/completions`` or ``/embeddings``)."""
        return self._base_url

    @property
    def max_response_bytes(self) -> int:
        """The largest reply read, in bytes after decompression."""
        return self._max_response_bytes

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values to keep out of reports (the API key), e.g. ``Scorer(redact=client.secrets)``."""
        return (self._api_key,) if self._api_key else ()

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        return (
            f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r}, "
            f"api_key={key}, max_concurrency={self._max_concurrency})"
        )

    def statistics(self) -> ModelStatistics:
        """A snapshot of the requests, retries, slots and tokens of this client so far."""
        state = self._state
        waiting = state.limiter.statistics().tasks_waiting if state is not None else 0
        return ModelStatistics(
            requests=self._requests,
            retries=self._retries,
            failures=self._failures,
            in_flight=self._in_flight,
            waiting=waiting,
            max_concurrency=self._max_concurrency,
            throttled=self._throttled,
            prompt_tokens=self._prompt_tokens,
            completion_tokens=self._completion_tokens,
            rate_limited=self._rate_limited,
            waited=self._waited,
            elapsed=0.0
            if self._first_sent is None or self._last_reply is None
            else max(0.0, self._last_reply - self._first_sent),
        )

    def __getstate__(self) -> dict[str, Any]:
        """The settings, without the loop-bound pool and with fresh counters (for workers).

        While an executor serialises strategies (:data:`SHARE_LIMITS` is set), the copy
        also takes the limits it will share with every other copy of this client.
        """
        state = self.__dict__.copy()
        state["_state"] = None
        for counter in (
            "_requests",
            "_retries",
            "_failures",
            "_in_flight",
            "_throttled",
            "_prompt_tokens",
            "_completion_tokens",
            "_rate_limited",
        ):
            state[counter] = 0
        state["_waited"] = 0.0
        state["_first_sent"] = state["_last_reply"] = None
        state["_pacer"] = self._new_pacer()
        share = SHARE_LIMITS.get()
        if share is not None:
            limits = self._limits
            spec = LimitSpec(
                name=f"{type(self).__name__}({self._model!r})",
                max_concurrency=self._max_concurrency,
                requests_per_minute=limits.requests_per_minute,
                tokens_per_minute=limits.tokens_per_minute,
                burst=limits.burst,
                follow_headers=limits.follow_headers,
            )
            state["_shared"] = share(spec, self)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pacer.reset()

    async def aclose(self) -> None:
        """Close the connection pool; the client opens a new one if used again."""
        state, self._state = self._state, None
        if state is not None and state.token == anyio.lowlevel.current_token():
            await state.client.aclose()

    def _loop_state(self) -> _LoopState:
        state = self._state
        if state is None or state.token != anyio.lowlevel.current_token():
            headers = {"Accept": "application/json", **self._headers}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self._timeout),
                limits=httpx.Limits(
                    max_connections=self._max_concurrency,
                    max_keepalive_connections=self._max_concurrency,
                ),
            )
            state = _LoopState(client, anyio.CapacityLimiter(self._max_concurrency))
            self._pacer.reset()
            self._state = state
        return state

    def _redact(self, text: str) -> str:
        if self._api_key:
            return text.replace(self._api_key, "***")
        return text

    def _excerpt(self, content: bytes | str) -> str:
        """The start of a body for a message: the API key is removed before the cut, so
        that no part of a key that straddles it is left."""
        keep = _BODY_EXCERPT + len(self._api_key or "")
        if isinstance(content, bytes):
            content = content[: 4 * keep].decode("utf-8", "replace")
        return body_excerpt(self._redact(content[:keep]))

    def _record_usage(
        self, prompt_tokens: int, completion_tokens: int, estimate: int, *, reserve: int = 0
    ) -> None:
        """Count the reported usage, and charge the token budgets what the request cost
        beyond its estimate: providers charge the prompt plus ``max_tokens`` (``reserve``)
        when the request arrives, and give nothing back for a shorter reply."""
        self._prompt_tokens += prompt_tokens
        self._completion_tokens += completion_tokens
        cost = prompt_tokens + (reserve or completion_tokens)
        if cost > estimate and (prompt_tokens or completion_tokens):
            if self._shared is not None:
                self._shared.adjust(cost - estimate)
            else:
                self._pacer.settle(cost - estimate)

    async def _post(
        self, path: str, payload: Mapping[str, Any], *, reserve: int = 0
    ) -> tuple[Any, int, int]:
        """POST ``payload`` with retries and limits; return the decoded JSON, the retries and
        the tokens the request was charged.

        A request is charged what providers charge it: its bytes / 4 plus ``reserve`` (the
        ``max_tokens`` it asks for). A 429 is retried until the deadline (or
        ``rate_limit_attempts``), and does not count towards ``max_attempts``.

        A reply with status 200 whose body cannot be read (not JSON, not a JSON content type)
        is not retried: it nearly always means a wrong base URL or an incompatible server, and
        repeating the request would only delay the error.

        A read timeout means the server took the request and has not answered; a server that
        works on one request at a time (llama.cpp, Ollama by default) goes on with it after
        the client leaves, so a retry waits behind it. A read timeout is therefore retried at
        most ``read_timeout_retries`` times, and only while a whole ``timeout`` still fits
        before the deadline: a retry that cannot finish in time only adds work to the queue.
        """
        state = self._loop_state()
        async with state.limiter:
            return await self._post_holding(state, path, payload, reserve=reserve)

    async def _post_holding(
        self, state: _LoopState, path: str, payload: Mapping[str, Any], *, reserve: int
    ) -> tuple[Any, int, int]:
        """:meth:`_post` once the call holds one of the client's ``max_concurrency`` slots,
        which it keeps through its retries: the deadline counts from here, so that a call
        queued behind the client's own slots cannot time out before its first request."""
        url = f"{self._base_url}{path}"
        content = orjson.dumps(payload)
        estimate = max(1, len(content) // 4) + reserve
        clock = self._clock
        deadline_at = clock.now() + self._deadline
        attempts = 0
        limited = 0
        read_timeouts = 0
        refused: list[str] = []

        def retryable(error: BaseException) -> bool:
            nonlocal read_timeouts
            if not is_retryable(error):
                return False
            if not is_read_timeout(error) or attempts >= self._max_attempts:
                return True
            read_timeouts += 1
            if read_timeouts > self._read_timeout_retries:
                plural = "" if self._read_timeout_retries == 1 else "s"
                refused.append(
                    f"not retried: read timeouts are retried {self._read_timeout_retries} "
                    f"time{plural} at most (read_timeout_retries), as the server may still be "
                    "working on the request"
                )
                return False
            if deadline_at - clock.now() < self._timeout:
                refused.append(
                    f"not retried: a new attempt could not take its {self._timeout:g} s before "
                    f"the {self._deadline:g} s deadline, and the server may still be working on "
                    "the request"
                )
                return False
            return True

        async def attempt() -> Any:
            nonlocal attempts, limited
            attempts += 1
            if attempts > 1:
                self._retries += 1
            try:
                return await self._send(state, url, content, estimate=estimate)
            except ModelHTTPError as error:
                limited += error.status == 429
                raise

        def stop(state: RetryCallState) -> bool:
            if clock.now() >= deadline_at:
                return True
            if is_rate_limited(state.outcome.exception() if state.outcome else None):
                cap = self._retry.rate_limit_attempts
                return cap is not None and limited >= cap
            return attempts - limited >= self._max_attempts

        def wait(state: RetryCallState) -> float:
            return self._wait_for(state, remaining=max(0.0, deadline_at - clock.now()))

        retrying = AsyncRetrying(
            stop=stop,
            wait=wait,
            retry=retry_if_exception(retryable),
            before_sleep=self._log_retry,
            sleep=clock.sleep,
            reraise=True,
        )
        try:
            with clock.move_on_after(self._deadline):
                return await retrying(attempt), attempts - 1, estimate
        except ModelError as error:
            self._failures += 1
            error.retries = max(0, attempts - 1)
            if attempts > 1 and is_retryable(error):
                error.args = (f"{error.args[0]} (after {attempts} attempts)",)
            if refused:
                error.args = (f"{error.args[0]}; {refused[-1]}",)
            raise
        self._failures += 1
        plural = "s" if attempts != 1 else ""
        timeout = ModelTimeoutError(
            f"{self._kind} request to {url} got no reply within the {self._deadline:g} s "
            f"deadline ({attempts} attempt{plural}); raise deadline=... or check that the "
            f"server at {self._base_url} is up"
        )
        timeout.retries = max(0, attempts - 1)
        raise timeout

    async def _send(self, state: _LoopState, url: str, content: bytes, *, estimate: int) -> Any:
        shared = self._shared
        clock = self._clock
        self._in_flight += 1
        lease: int | None = None
        grant: Grant | None = None
        try:
            throttled = False
            if shared is not None:
                began = clock.now()
                lease, throttled = await shared.acquire(estimate)
                if throttled:
                    self._waited += clock.now() - began
            elif self._pacer.active:
                grant = await self._pacer.acquire(estimate)
                throttled = grant.waited > 0
                self._waited += grant.waited
            if throttled:
                self._throttled += 1
            self._requests += 1
            if self._first_sent is None:
                self._first_sent = clock.now()
            content_type, body = await self._request(
                state.client, url, content, on_reply=lambda reply: self._heed(reply, grant, lease)
            )
        finally:
            self._in_flight -= 1
            if grant is not None:
                self._pacer.release(grant)
            if shared is not None and lease is not None:
                with anyio.CancelScope(shield=True):
                    await shared.release(lease)
        return self._decode(url, content_type, body)

    def _heed(self, reply: httpx.Response, grant: Grant | None, lease: int | None) -> None:
        """Take in what a reply says of the provider's quota, and hold every request for the
        wait a 429 asks."""
        self._last_reply = self._clock.now()
        limited = reply.status_code == 429
        self._rate_limited += limited
        if not self._limits.follow_headers:
            return
        quota = read_quota_headers(reply.headers)
        wait = retry_after(reply.headers) if limited else None
        shared = self._shared
        if shared is not None and lease is not None:
            if quota:
                shared.observe(lease, quota)
            if wait:
                shared.hold(wait)
        elif grant is not None:
            if quota:
                self._pacer.observe(grant, quota)
            if wait:
                self._pacer.hold(wait)

    async def _request(
        self,
        client: httpx.AsyncClient,
        url: str,
        content: bytes,
        *,
        on_reply: Callable[[httpx.Response], None] | None = None,
    ) -> tuple[str, bytes]:
        """POST ``content``; the reply's content type and body, read within the size cap.
        ``on_reply`` sees every reply's status and headers first."""
        request = client.build_request(
            "POST", url, content=content, headers={"Content-Type": "application/json"}
        )
        try:
            response = await client.send(request, stream=True)
            try:
                if on_reply is not None:
                    on_reply(response)
                if response.status_code >= 400:
                    raise self._status_error(url, response, await read_prefix(response))
                body = await read_capped(
                    response,
                    self._max_response_bytes,
                    lambda declared: too_large(
                        self._kind, url, declared, limit=self._max_response_bytes
                    ),
                )
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            reached = isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout)
            hint = "raise timeout=... for slow models"
            if reached and self._kind == "chat":
                hint += " (and set max_tokens so that a reply cannot run on)"
            raise ModelTimeoutError(
                f"{self._kind} request to {url} timed out ({type(exc).__name__}, "
                f"timeout={self._timeout:g} s); {hint}",
                read_timeout=reached,
            ) from None
        except httpx.TransportError as exc:
            reason = self._redact(str(exc)) or type(exc).__name__
            raise ModelConnectionError(
                f"{self._kind} request to {url} failed: {type(exc).__name__}: {reason}"
            ) from None
        except httpx.DecodingError as exc:
            raise ModelResponseError(
                f"{self._kind} reply from {url} cannot be decoded ({exc}): its "
                "Content-Encoding does not match its body"
            ) from None
        return response.headers.get("Content-Type", ""), body

    def _status_error(self, url: str, response: httpx.Response, content: bytes) -> ModelHTTPError:
        status = response.status_code
        body = self._excerpt(content)
        hint = status_hint(status, body, base_url=self._base_url, model=self._model)
        message = f"{self._kind} request to {url} failed with HTTP {status} ({hint})"
        if body:
            message += f": {body}"
        return ModelHTTPError(
            message,
            status=status,
            url=url,
            body=body,
            retry_after=retry_after(response.headers),
        )

    def _decode(self, url: str, content_type: str, content: bytes) -> Any:
        if "json" not in content_type.lower():
            body = self._excerpt(content)
            raise ModelResponseError(
                f"{self._kind} reply from {url} has content type {content_type!r}, not JSON "
                f"(is {self._base_url!r} an OpenAI-compatible API?): {body}",
                body=body,
            )
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            body = self._excerpt(content)
            raise ModelResponseError(
                f"{self._kind} reply from {url} is not valid JSON: {body}", body=body
            ) from None

    def malformed(self, url_path: str, what: str, data: Any) -> ModelResponseError:
        """The error for a JSON reply that lacks what the API promises."""
        body = self._excerpt(orjson.dumps(data))
        return ModelResponseError(
            f"{self._kind} reply from {self._base_url}{url_path} {what}: {body}", body=body
        )

    def _wait_for(self, state: RetryCallState, *, remaining: float) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, ModelHTTPError) and error.retry_after is not None:
            wait = min(error.retry_after + random.uniform(0.0, self._retry.backoff), remaining)
        else:
            wait = min(self._wait(state), remaining)
        if is_rate_limited(error):
            self._waited += wait
        return wait

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        reason = (
            f"HTTP {error.status}" if isinstance(error, ModelHTTPError) else type(error).__name__
        )
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        attempt = f"attempt {state.attempt_number}"
        cap = self._retry.rate_limit_attempts if is_rate_limited(error) else self._max_attempts
        if cap is None:
            attempt += f"; rate limited, retried until the {self._deadline:g} s deadline"
        else:
            attempt += f" of {cap}"
        logger.info(
            "%s request to %s failed with %s (%s); retrying in %.2f s",
            self._kind,
            self._base_url,
            reason,
            attempt,
            wait,
        )
