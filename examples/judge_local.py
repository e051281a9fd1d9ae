"""Judge the seed's car-rental answers with a model you run yourself: llama.cpp or Ollama.

``answer`` below is a stand-in for the Miles of Smiles assistant of seed 000: canned answers,
right but for "cancellation" and "race". ``car_rental.yaml`` holds the seed's ten samples
with a person's verdict on each answer (``label``), so the run also says how far the judge
agrees with people. Start a server, then run this script from the repository root.

llama.cpp's server (one slot, a 4k context; any small instruct GGUF model)::

    llama-server -m qwen2.5-1.5b-instruct-q4_k_m.gguf --host 127.0.0.1 --port 8080 -c 4096 -np 1
    python examples/judge_local.py --base-url http://127.0.0.1:8080/v1

llama-cpp-python's server (``pip install 'llama-cpp-python[server]'`` builds llama.cpp)::

    python -m llama_cpp.server --model qwen2.5-1.5b-instruct-q4_k_m.gguf --port 8080 --n_ctx 4096
    python examples/judge_local.py --base-url http://127.0.0.1:8080/v1 --structured

Ollama::

    ollama pull qwen2.5:1.5b
    python examples/judge_local.py --base-url http://localhost:11434/v1 --model qwen2.5:1.5b

The settings are those docs/models.md recommends for a server that generates one reply at a
time: every judge call sends ``max_tokens``, the client has one request in flight, a
generous per-request timeout and no retry after a read timeout (the server would still be
generating the abandoned reply). ``aeval run examples/judge_local.yaml`` runs the same
evaluation from the command line. Rows the model's replies cannot score are reported as
unscored, with the reason (a reply cut off at ``max_tokens``, no JSON object…), never as
errors; calls that fail (no server at the address, an HTTP error) are error rows, and the
script then exits with 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from aeval import EvaluationReport, Samples, Scorer
from aeval.models import OpenAIChatModel
from aeval.strategies import AiJudgeStrategy

HERE = Path(__file__).parent

ANSWERS = {
    "What types of cars do you offer for rental?": (
        "We have three categories: the Compact Commuter for the city (e.g. a Toyota Corolla), "
        "the Family Explorer SUV that seats seven (e.g. a Toyota RAV4) and the Luxury Cruiser "
        "(e.g. a Mercedes-Benz E-Class)."
    ),
    "Can I cancel my car rental booking at any time?": (
        "Yes, you can cancel your booking at any time, free of charge."
    ),
    "Am I allowed to use the rental car to teach someone how to drive?": (
        "No. Our Terms of Use forbid using a rental car to teach someone to drive."
    ),
    "What happens if the car is damaged during my rental period?": (
        "You are liable for any damage, loss or theft during the rental period, as our Terms of "
        "Use say under Liability."
    ),
    "What are the requirements for making a car rental booking?": (
        "Give accurate, current and complete information when you book; every booking depends "
        "on which vehicles are available."
    ),
    "Can I use the rental car for a race or rally?": (
        "Yes, racing is allowed as long as you return the car with a full tank."
    ),
    "Do you offer cars suitable for long family trips?": (
        "Yes: the Family Explorer SUV seats up to seven, has plenty of cargo space and "
        "driver-assistance features."
    ),
    "Is there any restriction on alcohol consumption while using the rental car?": (
        "Yes. Driving the rental car under the influence of alcohol or drugs is strictly "
        "prohibited by our Terms of Use."
    ),
    "What should I do if I have questions unrelated to car rentals?": (
        "Please contact the appropriate department; I can help with anything about car rentals."
    ),
    "Which car category is best for someone who values luxury and comfort?": (
        "The Luxury Cruiser: premium interiors, the latest technology and first-class comfort."
    ),
}


def answer(question: str) -> str:
    """The assistant under test: a canned answer per question."""
    return ANSWERS.get(question.strip(), "I am sorry, I do not know.")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Judge canned car-rental answers (seed 000) with a local OpenAI-compatible "
        "server: llama.cpp's, llama-cpp-python's or Ollama."
    )
    parser.add_argument(
        "--base-url", default="http://127.0.0.1:8080/v1", help="the API (default %(default)s)"
    )
    parser.add_argument(
        "--model", default="local", help="the model name (llama.cpp ignores it; default local)"
    )
    parser.add_argument(
        "--structured", action="store_true", help="ask for a JSON 0-100 score, not true/false"
    )
    parser.add_argument(
        "--max-tokens", type=int, help="a judge reply's cap (default 16, 256 with --structured)"
    )
    parser.add_argument(
        "--judges", type=int, default=1, help="ask the model N times and take the majority"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per request (default 120)"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="judge requests in flight: 1-2 for a one-slot server (default 1)",
    )
    parser.add_argument("--output", type=Path, help="write the reports (all formats) here")
    return parser.parse_args(argv)


async def evaluate(args: argparse.Namespace) -> EvaluationReport:
    """Evaluate ``answer`` over ``car_rental.yaml`` with a judge at ``args.base_url``."""
    samples = await Samples.load(HERE / "car_rental.yaml")
    async with OpenAIChatModel(
        args.model,
        base_url=args.base_url,
        timeout=args.timeout,
        deadline=3 * args.timeout,
        read_timeout_retries=0,
        max_concurrency=args.concurrency,
    ) as model:
        several = args.judges > 1
        judge = AiJudgeStrategy(
            [model] * args.judges if several else model,
            structured=args.structured,
            max_tokens=args.max_tokens,
            temperature=0.7 if several else None,
            seed=1 if several else None,
            name="judge",
        )
        async with Scorer(concurrency=args.concurrency) as scorer:
            return await scorer.evaluate(samples, answer, judge)


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = await evaluate(args)
    report.print()
    if args.output is not None:
        await report.save(args.output)
    if report.error_count:
        print(
            f"judge_local: {report.error_count} of {report.evaluation_count} rows are errors: "
            f"the judge at {args.base_url} failed or could not be reached (see the rows above)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
