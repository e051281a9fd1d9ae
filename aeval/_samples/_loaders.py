"""Sample loaders: YAML, JSON, JSONL and http(s) sources, and the loader registry.

A source is resolved to the registered loader with the highest priority that supports it
(ties keep registration order). The built-in loaders have priority 0 and are registered
first; loaders declared in the ``aeval.loaders`` entry-point group are added the first
time a source is resolved. Every problem in a sample file raises a
:class:`~aeval.SampleLoadError` that names the source, the line, the sample and the fix.
"""

from __future__ import annotations

import math
import os
import re
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from .._exceptions import AevalError, NoLoaderError, SampleFileNotFoundError, SampleLoadError
from .._util._plugins import PluginRegistry
from ..abc import SampleLoader
from ._formats import (
    BOM,
    PARSERS,
    Parsed,
    describe,
    empty_error,
    format_of,
    parse_jsonl_lines,
)
from ._model import EvaluationSample, Samples
from ._sources import is_url

__all__ = [
    "DEFAULT_DOWNLOAD_MAX_BYTES",
    "DEFAULT_DOWNLOAD_TIMEOUT",
    "DownloadLimits",
    "HTTPSampleLoader",
    "HttpSampleLoader",
    "JsonSampleLoader",
    "JsonlSampleLoader",
    "SampleLoader",
    "SampleStream",
    "YamlSampleLoader",
    "load_sources",
    "load_sources_sync",
    "register_loader",
    "registered_loaders",
    "stream_jsonl",
    "unregister_loader",
]

_ENTRY_POINT_GROUP = "aeval.loaders"

DEFAULT_DOWNLOAD_MAX_BYTES = 100 * 1024 * 1024
DEFAULT_DOWNLOAD_TIMEOUT = 300.0

_CHUNK_SIZE = 64 * 1024
_BATCH_LINES = 64
"""Lines parsed and handed out together. A batch's samples (four or five objects each that
the cycle collector tracks) stay below its young-generation threshold (700 by default)
until the workers take them, so reading a stream triggers almost no collection: 9 in
100,000 samples here, against 223 for a 64 KB chunk at a time (``gc.callbacks``)."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _file_url_error(source: str) -> NoLoaderError | None:
    """The error for a ``file://`` URL, naming the plain path to give instead."""
    if not source[:7].lower().startswith("file://"):
        return None
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    parts = urlsplit(source)
    hint = ""
    if parts.netloc.lower() in ("", "localhost"):
        hint = f" ({url2pathname(parts.path)})"
    return NoLoaderError(
        f"a file:// URL is not a sample source: use a plain path{hint}", source=source
    )


def _os_error(exc: OSError, source: str) -> SampleLoadError:
    if isinstance(exc, FileNotFoundError):
        return SampleFileNotFoundError(
            f"file not found (resolved to {os.path.abspath(source)}; relative paths start "
            "at the working directory): check the path",
            source=source,
        )
    if isinstance(exc, IsADirectoryError):
        return SampleLoadError(
            "is a directory, not a sample file: give the path of a .yaml, .json or .jsonl file",
            source=source,
        )
    return SampleLoadError(
        f"cannot read the file ({exc.strerror or exc}): check that it exists and is readable",
        source=source,
    )


def _read_file(source: str) -> bytes:
    try:
        with open(source, "rb") as file:
            return file.read()
    except OSError as exc:
        raise _os_error(exc, source) from exc


class _BuiltinLoader:
    """A built-in loader: it also reports the line of each sample."""

    priority = 0

    def supports(self, source: str) -> bool:
        raise NotImplementedError

    def load(self, source: str) -> list[EvaluationSample]:
        """Return the samples of ``source``, in order."""
        return self._load(source).samples

    def _load(self, source: str) -> Parsed:
        raise NotImplementedError

    async def _aload(self, source: str) -> Parsed:
        return await anyio.to_thread.run_sync(self._load, source)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _FileLoader(_BuiltinLoader):
    _format = ""

    def supports(self, source: str) -> bool:
        """Whether ``source`` is a local path (not a URL) with this loader's extension."""
        return _SCHEME.match(source) is None and format_of(source) == self._format

    def _load(self, source: str) -> Parsed:
        return PARSERS[self._format](_read_file(source), source)


class YamlSampleLoader(_FileLoader):
    """Loads ``.yaml``/``.yml`` files in the seed's format."""

    _format = "yaml"


class JsonSampleLoader(_FileLoader):
    """Loads ``.json`` files: a list of sample objects, with the YAML format's keys."""

    _format = "json"


class JsonlSampleLoader(_FileLoader):
    """Loads ``.jsonl``/``.ndjson`` files: one sample object per line."""

    _format = "jsonl"


def _env_number(environ: Mapping[str, str], name: str, *, unit: str) -> float | None:
    text = environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text) if unit == "bytes" else float(text)
    except ValueError:
        value = -1
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number of {unit}, got {text!r}")
    return value


def _env_flag(environ: Mapping[str, str], name: str) -> bool:
    text = environ.get(name, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 1 or 0 (true or false), got {text!r}")


@dataclass(frozen=True, slots=True)
class DownloadLimits:
    """What :class:`HttpSampleLoader` allows itself when it downloads a sample file.

    Attributes:
        max_bytes: The largest body accepted (default 100 MiB), counted after
            decompression; a larger one fails as soon as it passes the limit (at once when
            ``Content-Length`` says so).
        timeout: Seconds for the whole download (default 300): resolving, connecting,
            redirects and the body, however slowly it trickles in.
        cross_host_redirects: Follow a redirect to another host name. By default a
            redirect may change the path, the scheme or the port, not the host.
        allow_non_routable: Connect to non-routable addresses: link-local (169.254.0.0/16,
            fe80::/10, where cloud metadata services answer), the shared address space
            100.64.0.0/10 (100.100.100.200), unspecified (0.0.0.0, ::), multicast, reserved
            (240.0.0.0/4, broadcast) and fd00:ec2::254. Loopback and private addresses are
            always allowed. Unless this is set, the connection goes to an address that was
            checked, never to the host name resolved again.

    Example:
        >>> limits = DownloadLimits(max_bytes=500 * 1024 * 1024, timeout=600)
        >>> register_loader(HTTPSampleLoader(limits), priority=1)
    """

    max_bytes: int = DEFAULT_DOWNLOAD_MAX_BYTES
    timeout: float = DEFAULT_DOWNLOAD_TIMEOUT
    cross_host_redirects: bool = False
    allow_non_routable: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int):
            raise TypeError(f"max_bytes must be an int, got {self.max_bytes!r}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {self.max_bytes}")
        if not 0 < self.timeout < math.inf:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DownloadLimits:
        """The defaults, changed by the environment variables that are set.

        ``AEVAL_DOWNLOAD_MAX_BYTES`` (bytes), ``AEVAL_DOWNLOAD_TIMEOUT`` (seconds),
        ``AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS`` and ``AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE``
        (``1`` or ``0``).

        Raises:
            ValueError: A variable holds something else; the message names it.
        """
        env = os.environ if environ is None else environ
        max_bytes = _env_number(env, "AEVAL_DOWNLOAD_MAX_BYTES", unit="bytes")
        timeout = _env_number(env, "AEVAL_DOWNLOAD_TIMEOUT", unit="seconds")
        return cls(
            max_bytes=DEFAULT_DOWNLOAD_MAX_BYTES if max_bytes is None else int(max_bytes),
            timeout=DEFAULT_DOWNLOAD_TIMEOUT if timeout is None else timeout,
            cross_host_redirects=_env_flag(env, "AEVAL_DOWNLOAD_CROSS_HOST_REDIRECTS"),
            allow_non_routable=_env_flag(env, "AEVAL_DOWNLOAD_ALLOW_NON_ROUTABLE"),
        )


class HttpSampleLoader(_BuiltinLoader):
    """Fetches samples over http(s), within :class:`DownloadLimits`.

    The format comes from the URL path's extension, else from the response content-type.

    Args:
        limits: The limits of every download; by default :meth:`DownloadLimits.from_env`,
            read again at each load.
    """

    def __init__(self, limits: DownloadLimits | None = None) -> None:
        self._limits = limits

    @property
    def limits(self) -> DownloadLimits:
        """The limits the next download runs within."""
        return DownloadLimits.from_env() if self._limits is None else self._limits

    def supports(self, source: str) -> bool:
        """Whether ``source`` is an http or https URL."""
        return is_url(source)

    def _limits_for(self, source: str) -> DownloadLimits:
        try:
            return self.limits
        except ValueError as exc:
            raise SampleLoadError(str(exc), source=source) from exc

    def _load(self, source: str) -> Parsed:
        from ._http import fetch

        return fetch(source, self._limits_for(source))

    async def _aload(self, source: str) -> Parsed:
        from ._http import afetch

        return await afetch(source, self._limits_for(source))

    def __repr__(self) -> str:
        return f"HttpSampleLoader({'' if self._limits is None else repr(self._limits)})"


HTTPSampleLoader = HttpSampleLoader
"""The preferred spelling of :class:`HttpSampleLoader` (the same class)."""


def _instantiate(target: Any) -> SampleLoader:
    loader = target() if isinstance(target, type) else target
    if not isinstance(loader, SampleLoader) and callable(loader):
        loader = loader()
    if not isinstance(loader, SampleLoader):
        raise TypeError(
            f"{loader!r} is not a sample loader: it needs supports(source) and load(source)"
        )
    return loader


def _from_entry_point(entry_point: Any) -> SampleLoader:
    try:
        return _instantiate(entry_point.load())
    except Exception as exc:
        raise SampleLoadError(
            f"Failed to load the sample loader entry point {entry_point.name!r} "
            f"({entry_point.value}) of group {_ENTRY_POINT_GROUP!r}: "
            f"{type(exc).__name__}: {exc}; fix or uninstall the package that declares it"
        ) from exc


def _builtins() -> list[SampleLoader]:
    return [YamlSampleLoader(), JsonSampleLoader(), JsonlSampleLoader(), HttpSampleLoader()]


_REGISTRY: PluginRegistry[SampleLoader] = PluginRegistry(
    group=_ENTRY_POINT_GROUP, key=id, build=_from_entry_point, builtins=_builtins
)


def register_loader(loader: SampleLoader, *, priority: int | None = None) -> None:
    """Register a sample loader.

    Args:
        loader: An object with ``supports(source)`` and ``load(source)``.
        priority: Overrides the loader's own ``priority`` attribute (default 0). Give a
            priority above 0 to take over a source a built-in loader also supports.

    Registering the same loader again replaces its entry.
    """
    if not isinstance(loader, SampleLoader):
        raise TypeError(
            f"A sample loader needs supports(source) and load(source) methods; got {loader!r}"
        )
    if priority is None:
        priority = getattr(loader, "priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"Loader priority must be an int, got {priority!r}")
    _REGISTRY.register(loader, priority=priority)


def unregister_loader(loader: SampleLoader) -> bool:
    """Remove a registered loader; return whether it was registered."""
    return _REGISTRY.unregister(id(loader)) is not None


def registered_loaders() -> list[SampleLoader]:
    """The registered loaders in resolution order (entry points included)."""
    return _REGISTRY.plugins()


def _check_source(source: str | os.PathLike[str]) -> str:
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise TypeError(f"A source is a str or a path, got {type(source).__name__}")
    if not source.strip():
        raise ValueError("Source must not be null or blank")
    return source


def _resolve(source: str) -> SampleLoader:
    loaders = _REGISTRY.plugins()
    for loader in loaders:
        try:
            supported = loader.supports(source)
        except Exception as exc:
            raise SampleLoadError(
                f"{type(loader).__name__}.supports() failed: {type(exc).__name__}: {exc}",
                source=source,
            ) from exc
        if supported:
            return loader
    file_url = _file_url_error(source)
    if file_url is not None:
        raise file_url
    names = ", ".join(type(loader).__name__ for loader in loaders)
    error = NoLoaderError(
        f"No sample loader supports source: {source}. Available loaders: [{names}]. "
        "Use a .yaml/.yml, .json or .jsonl/.ndjson file or an http(s) URL, or register a "
        "loader with register_loader()"
    )
    error.source = source
    raise error


def _run_custom(loader: SampleLoader, source: str) -> Parsed:
    try:
        result = loader.load(source)
        if hasattr(result, "__await__"):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise SampleLoadError(
                f"{type(loader).__name__}.load() returned an awaitable: make load() a plain "
                "(synchronous) method; the async API already runs it in a worker thread",
                source=source,
            )
        samples = list(result)
    except AevalError:
        raise
    except Exception as exc:
        error = SampleLoadError(
            f"Failed to load samples from {source} using {type(loader).__name__}: "
            f"{type(exc).__name__}: {exc}"
        )
        error.source = source
        raise error from exc
    for position, sample in enumerate(samples, start=1):
        if not isinstance(sample, EvaluationSample):
            raise SampleLoadError(
                f"{type(loader).__name__}.load() returned {describe(sample)} at position "
                f"{position}: a loader returns EvaluationSample objects",
                source=source,
            )
    return Parsed(source, samples)


def _load_one(source: str) -> Parsed:
    loader = _resolve(source)
    if isinstance(loader, _BuiltinLoader):
        return loader._load(source)
    return _run_custom(loader, source)


async def _aload_one(source: str) -> Parsed:
    loader = _resolve(source)
    if isinstance(loader, _BuiltinLoader):
        return await loader._aload(source)
    return await anyio.to_thread.run_sync(_run_custom, loader, source)


def _merge(parts: list[Parsed]) -> Samples:
    seen: dict[str, tuple[Parsed, int]] = {}
    for part in parts:
        for index, sample in enumerate(part.samples):
            first = seen.get(sample.name)
            if first is None:
                seen[sample.name] = (part, index)
            else:
                earlier, earlier_index = first
                raise SampleLoadError(
                    f"duplicate name, first defined at {earlier.where(earlier_index)}; "
                    "give each sample its own name",
                    source=part.source,
                    line=part.line(index),
                    sample=sample.name,
                )
    return Samples(sample for part in parts for sample in part.samples)


def _check_sources(sources: Iterable[str | os.PathLike[str]]) -> list[str]:
    checked = [_check_source(source) for source in sources]
    if not checked:
        raise ValueError("Give at least one sample source (a file path or a URL)")
    return checked


async def load_sources(sources: Iterable[str | os.PathLike[str]]) -> Samples:
    """Load and merge samples from ``sources``, in order, without blocking the event loop.

    Raises:
        ValueError: A source is blank, or no source was given.
        SampleLoadError: A source is invalid or duplicates a sample name.
    """
    return _merge([await _aload_one(source) for source in _check_sources(sources)])


def load_sources_sync(sources: Iterable[str | os.PathLike[str]]) -> Samples:
    """Load and merge samples from ``sources``, in order, blocking the calling thread."""
    return _merge([_load_one(source) for source in _check_sources(sources)])


class SampleStream:
    """The samples of a local JSONL file, read lazily a chunk at a time (what
    ``Samples.stream`` returns).

    An async iterator of samples; :meth:`sample_batches` hands out the rest a chunk's worth at a
    time, which is how a Scorer's workers read it. Stopping early is safe: ``aclose()``
    closes the file.
    """

    __slots__ = ("_batches", "_buffer")

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self._batches = _jsonl_batches(source)
        self._buffer: deque[EvaluationSample] = deque()

    def __aiter__(self) -> SampleStream:
        return self

    async def __anext__(self) -> EvaluationSample:
        buffer = self._buffer
        while not buffer:
            buffer.extend(await anext(self._batches))
        return buffer.popleft()

    async def sample_batches(self) -> AsyncIterator[list[EvaluationSample]]:
        """The samples not read yet, in lists of those that one chunk of the file held."""
        if self._buffer:
            rest = list(self._buffer)
            self._buffer.clear()
            yield rest
        async for batch in self._batches:
            yield batch

    async def aclose(self) -> None:
        """Stop reading and close the file."""
        await self._batches.aclose()


def stream_jsonl(source: str | os.PathLike[str]) -> SampleStream:
    """Yield the samples of a local JSONL file lazily, reading it in chunks.

    Blank lines are skipped. Names are not checked for duplicates, so memory stays bounded
    by the longest line (and the samples of one chunk). Stopping early is safe: close the
    iterator (``aclose()`` or ``contextlib.aclosing``) and the file closes.

    Raises:
        SampleLoadError: The file is missing, empty, or a line is invalid (the error names
            the line); the samples of the lines before an invalid one are yielded first.
    """
    return SampleStream(source)


async def _jsonl_batches(
    source: str | os.PathLike[str],
) -> AsyncGenerator[list[EvaluationSample], None]:
    src = _check_source(source)
    file_url = _file_url_error(src)
    if file_url is not None:
        raise file_url
    if _SCHEME.match(src) is not None or format_of(src) in ("yaml", "json"):
        raise SampleLoadError(
            "Samples.stream() reads local JSONL files (one sample object per line); "
            "load this source with Samples.load()",
            source=src,
        )
    try:
        file = await anyio.open_file(src, "rb")
    except OSError as exc:
        raise _os_error(exc, src) from exc
    try:
        pieces: list[bytes] = []  # of the line being read, which no chunk has ended yet
        number = 0
        offset = 0
        found = False
        first = True
        while True:
            chunk = await file.read(_CHUNK_SIZE)
            if not chunk:
                break
            if first:
                first = False
                if chunk.startswith(BOM):
                    chunk, offset = chunk[len(BOM) :], len(BOM)
            cut = chunk.rfind(b"\n")
            if cut < 0:
                pieces.append(chunk)
                continue
            pieces.append(chunk[:cut])
            complete = b"".join(pieces)
            pieces = [chunk[cut + 1 :]]
            lines = complete.split(b"\n")
            for start in range(0, len(lines), _BATCH_LINES):
                some = lines[start : start + _BATCH_LINES]
                batch = parse_jsonl_lines(some, number + 1, src, offset)
                number += len(some)
                offset += sum(map(len, some)) + len(some)
                if batch.samples:
                    found = True
                    yield batch.samples
                if batch.error is not None:
                    raise batch.error
        rest = b"".join(pieces)
        if rest.strip():
            batch = parse_jsonl_lines([rest], number + 1, src, offset)
            if batch.samples:
                found = True
                yield batch.samples
            if batch.error is not None:
                raise batch.error
        if not found:
            raise empty_error(src, "jsonl")
    finally:
        with anyio.CancelScope(shield=True):
            await file.aclose()
