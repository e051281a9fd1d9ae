"""The judge_offline.py evaluation against a real OpenAI-compatible server (Ollama by default).

Start Ollama and pull the two models, then run it from the repository root:

    ollama pull llama3.2 && ollama pull nomic-embed-text
    python examples/judge_ollama.py

Any OpenAI-compatible server works (vLLM, llama.cpp's server, LM Studio, LiteLLM, OpenAI):
pass ``--base-url``/``--model``/``--embedding-model`` or set ``AEVAL_BASE_URL``,
``AEVAL_MODEL``, ``AEVAL_EMBEDDING_MODEL`` and, where the server needs one, ``AEVAL_API_KEY``
(the ``OPENAI_*`` names are read too). The rows the real judge cannot score are reported as
unscored, never as a silent pass or fail.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio
import httpx

from aeval.models import OpenAIChatModel, OpenAIEmbedder

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from judge_offline import evaluate, print_report  # noqa: E402

DEFAULT_BASE_URL = "http://localhost:11434/v1"
DEFAULT_MODEL = "llama3.2"
DEFAULT_EMBEDDING_MODEL = "nomic-embed-text"


def _env(*names: str, default: str) -> str:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Judge the example support assistant with a model served by Ollama "
        "(or any OpenAI-compatible server)."
    )
    parser.add_argument(
        "--base-url",
        default=_env("AEVAL_BASE_URL", "OPENAI_BASE_URL", default=DEFAULT_BASE_URL),
        help="the API's base URL (AEVAL_BASE_URL, OPENAI_BASE_URL; default %(default)s)",
    )
    parser.add_argument(
        "--model",
        default=_env("AEVAL_MODEL", "OPENAI_MODEL", default=DEFAULT_MODEL),
        help="the judge model (AEVAL_MODEL, OPENAI_MODEL; default %(default)s)",
    )
    parser.add_argument(
        "--embedding-model",
        default=_env(
            "AEVAL_EMBEDDING_MODEL", "OPENAI_EMBEDDING_MODEL", default=DEFAULT_EMBEDDING_MODEL
        ),
        help="the embedding model (AEVAL_EMBEDDING_MODEL, OPENAI_EMBEDDING_MODEL; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=2, help="judge requests in flight (default 2)"
    )
    return parser.parse_args(argv)


async def reachable(base_url: str) -> str | None:
    """``None`` when ``GET {base_url}/models`` answers, else why it does not."""
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            await client.get(f"{base_url.rstrip('/')}/models")
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: {error}"
    return None


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    problem = await reachable(args.base_url)
    if problem is not None:
        print(
            f"No OpenAI-compatible server answers at {args.base_url} ({problem}).\n"
            "Start Ollama (`ollama serve`, then `ollama pull llama3.2` and "
            "`ollama pull nomic-embed-text`), or point --base-url / AEVAL_BASE_URL at "
            "another server. For an offline run, try examples/judge_offline.py.",
            file=sys.stderr,
        )
        return 2
    async with (
        OpenAIChatModel(
            args.model, base_url=args.base_url, max_concurrency=args.concurrency
        ) as judge,
        OpenAIEmbedder(args.embedding_model, base_url=args.base_url) as embedder,
    ):
        report = await evaluate(judge, embedder, concurrency=args.concurrency)
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
