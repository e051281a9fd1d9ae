"""An HTTP endpoint as the function under test (``target: {http: ...}``).

The request is built from the sample's parameters: ``{name}`` and ``{0}`` placeholders in
the URL (URL-encoded) and in the strings of the JSON body template. A body string that is
exactly one placeholder takes the parameter's value with its JSON type; a placeholder
inside longer text is replaced by the value's text. ``{{`` and ``}}`` are literal braces.
A conversation sample calls the endpoint once per turn, filling the templates from
``{messages}``, ``{conversation_id}``, ``{last}`` and ``{turn}`` (:func:`conversation_fields`);
without a body template its body is ``{"messages": [...], "conversation_id": "..."}``.

``timeout`` bounds the whole call, connection, request and body together: a slow trickle
of bytes cannot outlast it (:class:`HttpTimeoutError`). The answer is read from the JSON
response at ``response_path``. A status outside 2xx is raised as :class:`HttpStatusError`
(an error row naming the status), unless ``accept_status`` lists it: then the answer is
the text ``HTTP <status>: <body>`` (``HTTP <status>`` for an empty body), which text
strategies and judges can check. The status of each answer is added to the metadata of
that sample's rows as ``http_status`` by :class:`StatusRecorder`, which reads it from a
context variable set by the call: the Scorer runs a sample's strategies in the task that
called the target.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio

from .._conversation import Conversation
from .._exceptions import (
    HttpResponseError,
    HttpResponseTooLargeError,
    HttpStatusError,
    HttpTimeoutError,
)
from .._reporting._results import EvaluationResult
from .._samples import EvaluationSample, Parameters
from ..models._body import DEFAULT_MAX_RESPONSE_BYTES, format_size, read_capped, read_prefix
from ._callables import strategy_name
from ._redact import Redactor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CONVERSATION_FIELDS",
    "DEFAULT_HTTP_TIMEOUT",
    "HttpResponseError",
    "HttpResponseTooLargeError",
    "HttpSpec",
    "HttpStatusError",
    "HttpTarget",
    "HttpTimeoutError",
    "StatusRecorder",
    "TemplateError",
    "check_templates",
    "conversation_fields",
    "header_secrets",
    "resolve_headers",
]

DEFAULT_HTTP_TIMEOUT = 30.0
"""Seconds an HTTP target has for a whole call unless ``timeout`` says otherwise."""


@dataclass(frozen=True, slots=True)
class HttpSpec:
    """An HTTP endpoint as the function under test (``target.http``)."""

    url: str
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    body: Any = None
    has_body: bool = False
    response_path: str | None = None
    timeout: float = DEFAULT_HTTP_TIMEOUT
    accept_status: frozenset[int] = frozenset()
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


class TemplateError(ValueError):
    """A placeholder or a header of an :class:`HttpSpec` cannot be filled.

    Attributes:
        path: The key of ``target.http`` at fault, e.g. ``("url",)`` or ``("headers", "X")``.
    """

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STATUS: ContextVar[int | None] = ContextVar("aeval_http_status", default=None)
_EXCERPT = 200


def _strings(template: Any) -> Iterator[str]:
    if isinstance(template, str):
        yield template
    elif isinstance(template, Mapping):
        for value in template.values():
            yield from _strings(value)
    elif isinstance(template, list):
        for item in template:
            yield from _strings(item)


def _names(template: Any) -> list[str]:
    names: list[str] = []
    for text in _strings(template):
        for match in _PLACEHOLDER.finditer(text):
            name = match.group(1)
            if name is not None and name not in names:
                names.append(name)
    return names


def _lookup(params: Parameters, name: str) -> Any:
    return params[int(name)] if name.isdigit() else params[name]


def _fill_text(text: str, params: Parameters, *, encode: bool) -> Any:
    whole = _PLACEHOLDER.fullmatch(text)
    if whole is not None and whole.group(1) is not None and not encode:
        return _lookup(params, whole.group(1))

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        value = _lookup(params, name)
        shown = value if isinstance(value, str) else str(value)
        return quote(shown, safe="") if encode else shown

    return _PLACEHOLDER.sub(replace, text)


def _fill(template: Any, params: Parameters) -> Any:
    if isinstance(template, str):
        return _fill_text(template, params, encode=False)
    if isinstance(template, Mapping):
        return {key: _fill(value, params) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(item, params) for item in template]
    return template


CONVERSATION_FIELDS = ("messages", "conversation_id", "last", "turn")
"""The placeholders of a conversation sample's request (see :func:`conversation_fields`)."""
_CONVERSATION_EXAMPLE = Parameters(dict.fromkeys(CONVERSATION_FIELDS))


def conversation_fields(conversation: Conversation) -> Parameters:
    """What a conversation turn's request is filled from: ``{messages}`` (the history as
    role/content objects, this turn's user message last), ``{conversation_id}``, ``{last}``
    (this turn's user message) and ``{turn}`` (its number, from 1)."""
    return Parameters(
        {
            "messages": [dict(message) for message in conversation.messages],
            "conversation_id": conversation.id,
            "last": conversation.last,
            "turn": conversation.turn,
        }
    )


def check_templates(spec: HttpSpec, samples: Iterable[EvaluationSample]) -> None:
    """Check that every placeholder of the URL and body exists in every sample (for a
    conversation sample: is one of :data:`CONVERSATION_FIELDS`).

    Raises:
        TemplateError: A sample lacks a parameter a placeholder names (the first such sample).
    """
    for key, template in (("url", spec.url), ("body", spec.body)):
        names = _names(template)
        if not names:
            continue
        for sample in samples:
            conversation = sample.is_conversation
            fields = _CONVERSATION_EXAMPLE if conversation else sample.parameters
            for name in names:
                try:
                    _lookup(fields, name)
                except (IndexError, KeyError):
                    if conversation:
                        raise TemplateError(
                            (key,),
                            f"the placeholder {{{name}}} is not a field of conversation sample "
                            f"{sample.name!r}: a conversation's request has "
                            + ", ".join(f"{{{field}}}" for field in CONVERSATION_FIELDS),
                        ) from None
                    raise TemplateError(
                        (key,),
                        f"the placeholder {{{name}}} names a parameter that sample "
                        f"{sample.name!r} does not have (it has {sample.parameters!r})",
                    ) from None


def resolve_headers(spec: HttpSpec) -> dict[str, str]:
    """The headers with ``${NAME}`` replaced by environment variables.

    Raises:
        TemplateError: A variable is not set.
    """
    headers: dict[str, str] = {}
    for name, value in spec.headers.items():

        def variable(match: re.Match[str], header: str = name) -> str:
            found = os.environ.get(match.group(1))
            if found is None:
                raise TemplateError(
                    ("headers", header),
                    f"the environment variable {match.group(1)} is not set",
                )
            return found

        headers[name] = _ENV.sub(variable, value)
    return headers


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _extract(data: Any, path: str) -> Any:
    current = data
    walked: list[str] = []
    for part in path.split("."):
        if isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                raise HttpResponseError(
                    f"the response has no {path!r}: {'.'.join(walked) or 'the response'} "
                    f"is a list of {len(current)} items"
                )
            current = current[index]
        elif isinstance(current, Mapping) and part in current:
            current = current[part]
        else:
            where = ".".join(walked) or "the response"
            if isinstance(current, Mapping):
                keys = ", ".join(repr(k) for k in list(current)[:10])
                detail = f"{where} has the keys {keys}" if keys else f"{where} is empty"
            else:
                detail = f"{where} is {type(current).__name__}"
            raise HttpResponseError(f"the response has no {path!r}: {detail}")
        walked.append(part)
    return current


class HttpTarget:
    """Calls the endpoint of an :class:`HttpSpec` for one sample's parameters, or for one
    turn of a conversation sample.

    A conversation turn's request is filled from :func:`conversation_fields` instead of the
    parameters; without a ``body`` template its JSON body is
    ``{"messages": [...], "conversation_id": "..."}``. The answer (at ``response_path``) is
    the assistant's message of that turn.

    Args:
        spec: The endpoint.
        client: The client shared by every call of the run.
        headers: The request headers, environment variables already resolved.
        secrets: Values removed from the excerpts of bodies in error messages, before they
            are cut (the rows are redacted again as a whole).
    """

    def __init__(
        self,
        spec: HttpSpec,
        client: httpx.AsyncClient,
        headers: Mapping[str, str],
        *,
        secrets: Iterable[str] = (),
    ):
        self._spec = spec
        self._client = client
        self._headers = dict(headers)
        self._redactor = Redactor(secrets)

    accepts_conversations = True
    """The Scorer gives it single-turn samples and conversation turns alike."""

    async def __call__(self, params: Parameters | Conversation) -> Any:
        """Send the request and return the answer found at ``response_path``."""
        import httpx  # loaded with the client this target was given

        spec = self._spec
        _STATUS.set(None)
        turn = type(params) is Conversation
        if turn:
            assert isinstance(params, Conversation)
            params = conversation_fields(params)
        assert isinstance(params, Parameters)
        url = _fill_text(spec.url, params, encode=True)
        request: dict[str, Any] = {"headers": self._headers, "timeout": spec.timeout}
        if spec.has_body:
            request["json"] = _fill(spec.body, params)
        elif turn:
            request["json"] = {"messages": params["messages"], "conversation_id": params[1]}
        try:
            with anyio.fail_after(spec.timeout):
                async with self._client.stream(spec.method, url, **request) as response:
                    status = response.status_code
                    if 200 <= status < 300 or status in spec.accept_status:
                        body = await read_capped(
                            response,
                            spec.max_response_bytes,
                            lambda declared: self._too_large(url, declared),
                        )
                    else:
                        body = await read_prefix(response)
        except (TimeoutError, httpx.TimeoutException):
            raise HttpTimeoutError(
                f"no complete answer from {spec.method} {url} within {spec.timeout:g} s "
                "(target.http.timeout): raise the timeout, or check why the endpoint is slow"
            ) from None
        except httpx.DecodingError as exc:
            raise HttpResponseError(
                f"the response of {spec.method} {url} cannot be decoded ({exc}): its "
                "Content-Encoding does not match its body"
            ) from None
        text = _text(response, body)
        if status in spec.accept_status:
            _STATUS.set(status)
            return f"HTTP {status}: {text}" if text.strip() else f"HTTP {status}"
        if not 200 <= status < 300:
            raise HttpStatusError(
                f"HTTP {status} {response.reason_phrase} from {spec.method} {url}: "
                f"{self._excerpt(text)}",
                status=status,
            )
        _STATUS.set(status)
        if spec.response_path is None:
            try:
                return json.loads(body)
            except ValueError:
                return text
        try:
            data = json.loads(body)
        except ValueError:
            raise HttpResponseError(
                f"the response is not JSON, so it has no {spec.response_path!r}: "
                f"{self._excerpt(text)}"
            ) from None
        return _extract(data, spec.response_path)

    def _excerpt(self, text: str) -> str:
        return _excerpt(self._redactor.text(text))

    def _too_large(self, url: str, declared: int | None) -> HttpResponseTooLargeError:
        spec = self._spec
        size = "larger" if declared is None else f"{format_size(declared)}, larger"
        return HttpResponseTooLargeError(
            f"the response of {spec.method} {url} is {size} than the limit of "
            f"{format_size(spec.max_response_bytes)} (counted after decompression), so "
            "reading stopped: check the endpoint, or raise target.http.max_response_bytes",
            limit=spec.max_response_bytes,
        )


def _text(response: httpx.Response, body: bytes) -> str:
    try:
        return body.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


class StatusRecorder:
    """Wraps a strategy to add the HTTP status of the call to each result's metadata."""

    def __init__(self, strategy: object) -> None:
        self._strategy = strategy
        evaluate = getattr(strategy, "evaluate", strategy)
        if not callable(evaluate):
            raise TypeError(f"{strategy!r} is not a strategy: it has no evaluate method")
        self._evaluate: Callable[[EvaluationSample, Any], Any] = evaluate
        self.name = strategy_name(strategy)

    async def evaluate(self, sample: EvaluationSample, output: Any) -> Any:
        """Run the wrapped strategy, then record ``http_status``."""
        result = self._evaluate(sample, output)
        if inspect.isawaitable(result):
            result = await result
        status = _STATUS.get()
        if status is None or not isinstance(result, EvaluationResult):
            return result
        return result.with_metadata({"http_status": status})

    def __repr__(self) -> str:
        return f"StatusRecorder({self._strategy!r})"


def header_secrets(spec: HttpSpec) -> list[str]:
    """The values the headers take from environment variables: to be redacted from rows."""
    return [
        value
        for template in spec.headers.values()
        for name in _ENV.findall(template)
        if (value := os.environ.get(name))
    ]
