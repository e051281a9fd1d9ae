"""What users need to test evaluations deterministically, with or without a socket.

- :class:`FakeChatModel` and :class:`FakeEmbedder` implement the model protocols in-process:
  scripted replies (texts, responses, exceptions, or a function deciding per call) and
  recorded calls, e.g. ``AiJudgeStrategy(FakeChatModel(["true", "false"]))``.
- :class:`FakeClock` is a virtual clock for the model clients' ``clock=``: rate limits,
  ``Retry-After``, backoff and deadlines take no real time.
- :class:`OpenAICompatibleServer` is a real HTTP/1.1 server on 127.0.0.1 serving
  ``/v1/chat/completions``, ``/v1/embeddings`` and ``/v1/models`` with scripted replies and
  fault injection; point :class:`~aeval.models.OpenAIChatModel` or
  :class:`~aeval.models.OpenAIEmbedder` at its ``base_url``. The ``openai_server`` pytest
  fixture starts one per test (pytest is imported when the fixture is, never by
  ``import aeval.testing``); ``python -m aeval.testing`` serves one from the command line
  (in its own process, e.g. for benchmarks) until it is interrupted.
- :class:`ScriptedHTTPServer` is the same kind of server for any HTTP API: replies by path or
  from a handler, redirects, slow, dropped, endless and trickling bodies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import lazy_package as _lazy_package, type_alias as _type_alias
from ._clock import FakeClock
from ._fakes import ChatCall, FakeChatModel, FakeEmbedder
from ._http import HTTPReply, RecordedRequest, ScriptedHTTPServer
from ._openai import Reply, hashed_embedding
from ._server import OpenAICompatibleServer

if TYPE_CHECKING:
    from ._fakes import (
        ChatReplyTypes as ChatReplyTypes,
        EmbedCall as EmbedCall,
        VectorTypes as VectorTypes,
    )
    from ._fixture import openai_server
    from ._server import main as main

_LAZY = {"openai_server": "._fixture"}
"""The names imported on first use: the fixture's module imports pytest."""


_DEPRECATED: dict[str, tuple[str, str]] = {
    "ChatReplyTypes": (
        "._fakes",
        _type_alias("annotate with what it names: str | ChatResponse | Exception"),
    ),
    "EmbedCall": (
        "._fakes",
        "it is a value aeval hands back (FakeEmbedder.calls); read its texts where it is returned",
    ),
    "VectorTypes": (
        "._fakes",
        _type_alias("annotate with what it names: Sequence[float] | Exception"),
    ),
    "main": ("._server", "run `python -m aeval.testing`, which calls it"),
}

__all__ = [
    "ChatCall",
    "FakeChatModel",
    "FakeClock",
    "FakeEmbedder",
    "HTTPReply",
    "OpenAICompatibleServer",
    "RecordedRequest",
    "Reply",
    "ScriptedHTTPServer",
    "hashed_embedding",
    "openai_server",
]

__getattr__, __dir__ = _lazy_package(globals(), _LAZY, deprecated=_DEPRECATED)
