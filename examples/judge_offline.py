"""An AI judge and semantic similarity over real HTTP, offline and deterministic.

Run it from the repository root:

    python examples/judge_offline.py

The support assistant (``support_bot.py``) is evaluated by ``AiJudgeStrategy(structured=True)``
and by ``SemanticSimilarityStrategy`` with an ``OpenAIEmbedder``. Both talk to
``aeval.testing.OpenAICompatibleServer``, a real OpenAI-compatible HTTP server on 127.0.0.1
whose judge replies are scripted by ``scripted_judge`` below, the way a real judge answers:
plain JSON, JSON in a code fence with text around it, a reply that only becomes readable
when the judge is asked again, and one that never does (that row is *unscored*). The
embeddings are the server's deterministic hashed vectors. ``judge_ollama.py`` runs the same
evaluation against a real model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from aeval import EvaluationReport, Samples, Scorer
from aeval.abc import ChatModel, Embedder
from aeval.models import OpenAIChatModel, OpenAIEmbedder
from aeval.strategies import AiJudgeStrategy, SemanticSimilarityStrategy
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from support_bot import answer  # noqa: E402

PRICES = {"judge": (0.15, 0.60)}
"""USD per 1,000 prompt and completion tokens of the judge model."""


def scripted_judge(request: RecordedRequest) -> Reply | None:
    """The judge's replies, decided by what the request asks (rows run concurrently)."""
    if not request.path.endswith("/chat/completions"):
        return None
    messages = request.messages
    prompt = str(messages[0]["content"])
    asked_again = len(messages) > 1
    if "How long does shipping take?" in prompt:
        verdict = {"score": 90, "explanation": "Same delivery time as expected."}
        return Reply.fenced_json(verdict, prefix="Here is my verdict:\n", suffix="\nThanks!")
    if "I want to talk to a person" in prompt:
        if not asked_again:
            return Reply.text("The response is correct: it hands the user over to a human.")
        return Reply.json({"score": 100, "passed": True, "explanation": "Hands over."})
    if "How do I reset my password?" in prompt:
        return Reply.text("I am not sure how to rate this one.")
    if "Is my blender under warranty?" in prompt:
        verdict = {"score": 5, "passed": False, "explanation": "It does not answer at all."}
        return Reply.json(verdict)
    return Reply.json({"score": 95, "passed": True, "explanation": "Matches the expected output."})


async def evaluate(
    judge: ChatModel,
    embedder: Embedder,
    *,
    prices: dict[str, tuple[float, float]] | None = None,
    concurrency: int = 4,
) -> EvaluationReport:
    """Evaluate the support assistant over ``support.yaml`` with the judge and the embedder.

    ``prices`` (USD per 1,000 prompt and completion tokens, by model name) adds costs to the
    report; leave it out for a local model, whose calls cost nothing.
    """
    samples = await Samples.load(HERE / "support.yaml")
    async with Scorer(concurrency=concurrency) as scorer:
        return await scorer.evaluate(
            samples,
            answer,
            AiJudgeStrategy(judge, structured=True, prices=prices),
            SemanticSimilarityStrategy(0.8, embedder=embedder),
        )


def print_report(report: EvaluationReport) -> None:
    """Print the score, the counts, the model usage and one line per row."""
    print(f"Score: {report.score:.2f}% ({report.passed_count}/{report.evaluation_count} rows)")
    print(
        f"Passed {report.passed_count}, failed {report.failed_count}, "
        f"unscored {report.unscored_count}, errors {report.error_count}"
    )
    usage = report.usage
    print(
        f"Model usage: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
        f"tokens, {usage.retries} retries, ${usage.cost:.6f}"
    )
    for row in report.evaluations:
        score = "-" if row.score is None else f"{row.score:.2f}"
        line = f"{row.outcome.value.upper():<8} {row.name} [{row.strategy}] score {score}"
        if row.metadata.get("reasked"):
            line += " (asked again)"
        if "similarity" in row.metadata:
            line += f" similarity {row.metadata['similarity']:.4f}"
        print(line)
        if row.outcome.value in ("failed", "unscored") and row.explanation:
            print(f"         {row.explanation}")


async def main() -> EvaluationReport:
    async with (
        OpenAICompatibleServer(handler=scripted_judge) as server,
        OpenAIChatModel("judge", base_url=server.base_url) as judge,
        OpenAIEmbedder("embedder", base_url=server.base_url) as embedder,
    ):
        report = await evaluate(judge, embedder, prices=PRICES)
    print_report(report)
    return report


if __name__ == "__main__":
    anyio.run(main)
