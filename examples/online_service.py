"""A question-answering service that evaluates its own answers online (issue 13, seed 003).

Run it from the repository root, with Starlette and uvicorn installed (the ``examples``
extra: ``pip install -e '.[examples]'``):

    python examples/online_service.py                    # a local judge server is started
    python examples/online_service.py --judge-url http://localhost:11434/v1 --judge-model llama3.2

It prints its address once it is ready (``--port 0`` takes a free port), then ask it
questions and read its evaluation:

    curl -s localhost:8000/ask -d '{"question": "What is 17 plus 25?"}'
    curl -s 'localhost:8000/evaluation?since=3600'

Every answer gets structural checks (not blank, no refusal); an AI judge, gated on those
checks, sees 10 % of them. The evaluation runs off the request path: the handler submits
the answer (a plain call) and returns; an ``OnlineEvaluator`` created in the lifespan
evaluates in the background with its own bounded queue and workers, writes rows to
``online-rows.jsonl`` and keeps a window of scores that ``GET /evaluation`` reads.
``create_app(evaluate=False)`` is the same service without evaluation (the benchmark's
baseline).
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from aeval import JsonlSink
from aeval.models import OpenAIChatModel
from aeval.online import OnlineEvaluator
from aeval.strategies import AiJudgeStrategy, ContainsStrategy, GatedStrategy, NotBlankStrategy

CAPITALS = {"france": "Paris", "italy": "Rome", "japan": "Tokyo", "peru": "Lima"}
SUM = re.compile(r"what is (-?\d+) plus (-?\d+)", re.IGNORECASE)
CAPITAL = re.compile(r"capital of (\w+)", re.IGNORECASE)
REFUSALS = ["I cannot", "I don't know"]
JUDGE_PROMPT = """\
Question: {question}
Answer: {response}
Is the answer correct and complete? Reply true or false.
"""


async def answer(question: str, *, latency: float = 0.0) -> str:
    """The service's "model": sums and capitals (``latency`` stands for a model call)."""
    if latency:
        await anyio.sleep(latency)
    if match := SUM.search(question):
        a, b = int(match[1]), int(match[2])
        return f"{a} plus {b} is {a + b}."
    if (match := CAPITAL.search(question)) and match[1].lower() in CAPITALS:
        return f"The capital of {match[1].title()} is {CAPITALS[match[1].lower()]}."
    return "I don't know."


def create_app(
    judge_url: str | None = None,
    *,
    judge_model: str = "judge",
    judge_rate: float = 0.1,
    evaluate: bool = True,
    rows: Path | None = Path("online-rows.jsonl"),
    queue_size: int = 1000,
    concurrency: int = 8,
    latency: float = 0.0,
    seed: int | None = None,
) -> Starlette:
    """The service; ``evaluate=False`` leaves the evaluation out (for comparison)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            app.state.online = None
            app.state.answer = answer
            if evaluate:
                judge = await stack.enter_async_context(
                    OpenAIChatModel(judge_model, base_url=judge_url, api_key="unused")
                )
                checks = [NotBlankStrategy(), ContainsStrategy(must_not_contain=REFUSALS)]
                online = await stack.enter_async_context(
                    OnlineEvaluator(
                        *checks,
                        GatedStrategy(AiJudgeStrategy(judge, JUDGE_PROMPT), after=checks),
                        sample_rates={"AiJudgeStrategy": judge_rate},
                        seed=seed,
                        queue_size=queue_size,
                        concurrency=concurrency,
                        sink=JsonlSink(rows) if rows is not None else None,
                        name="qa",
                    )
                )
                app.state.online = online
                # watch() submits each call's question and answer, and returns the answer.
                app.state.answer = online.watch(tags=["qa"])(answer)
            yield

    async def ask(request: Request) -> JSONResponse:
        question = str((await request.json()).get("question", ""))
        text = await request.app.state.answer(question, latency=latency)
        return JSONResponse({"answer": text})

    async def evaluation(request: Request) -> JSONResponse:
        online: OnlineEvaluator | None = request.app.state.online
        if online is None:
            return JSONResponse({"evaluating": False})
        if request.query_params.get("settle"):
            await online.join()  # only for tests and demos: waits for the queue to empty
        window = timedelta(seconds=float(request.query_params.get("since", 3600)))
        by_strategy = await online.by_strategy(since=window)
        return JSONResponse(
            {
                "evaluating": True,
                "statistics": asdict(online.statistics()),
                "average_score": await online.average_score(since=window),
                "by_strategy": {name: asdict(score) for name, score in by_strategy.items()},
            }
        )

    return Starlette(
        routes=[Route("/ask", ask, methods=["POST"]), Route("/evaluation", evaluation)],
        lifespan=lifespan,
    )


Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Message, Receive, Send], Any]


def announcing(app: ASGI, line: str) -> ASGI:
    """``app``, printing ``line`` once its startup (the lifespan's) is complete."""

    async def wrapper(scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            return await app(scope, receive, send)

        async def forward(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                print(line, flush=True)

        return await app(scope, receive, forward)

    return wrapper


def main(argv: list[str] | None = None) -> int:
    """Serve the example with uvicorn (a local judge server unless ``--judge-url``)."""
    import uvicorn

    from aeval.testing import OpenAICompatibleServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--judge-url", help="an OpenAI-compatible base URL (default: local)")
    parser.add_argument("--judge-model", default="judge")
    parser.add_argument("--judge-rate", type=float, default=0.1)
    parser.add_argument("--no-evaluation", action="store_true", help="serve without it")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--rows", type=Path, default=Path("online-rows.jsonl"))
    parser.add_argument("--seed", type=int, help="makes the judge's sample reproducible")
    args = parser.parse_args(argv)
    local = nullcontext(None) if args.judge_url else OpenAICompatibleServer()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    with local as local_judge, socket.create_server((args.host, args.port), family=family) as sock:
        judge_url = args.judge_url or local_judge.base_url
        host, port = sock.getsockname()[:2]
        address = (
            f"http://[{host}]:{port}" if family == socket.AF_INET6 else f"http://{host}:{port}"
        )
        app: Any = create_app(
            judge_url,
            judge_model=args.judge_model,
            judge_rate=args.judge_rate,
            evaluate=not args.no_evaluation,
            rows=args.rows,
            latency=args.latency,
            seed=args.seed,
        )
        judging = "no evaluation" if args.no_evaluation else f"judge {judge_url}"
        line = f"online_service: serving on {address} ({judging}); Ctrl-C stops it"
        config = uvicorn.Config(
            announcing(app, line), log_level="warning", timeout_keep_alive=30, lifespan="on"
        )
        uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
