"""Evaluate the offline support assistant over a YAML file and save the reports.

Run it from the repository root:

    python examples/quickstart.py

This is the evaluation ``aeval run examples/aeval.yaml`` runs, written in Python: the same
samples, target, strategies, concurrency, timeout, thresholds and report formats. No API key
and no server: the assistant (``support_bot.py``) answers from a small knowledge base. One
sample ("Warranty") fails on purpose, so the report shows what a failure looks like.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.strategies import ExactMatchStrategy, NotBlankStrategy

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from support_bot import answer  # noqa: E402


async def main(output_dir: Path = Path("target/evaluation-reports")) -> EvaluationReport:
    samples = await Samples.load(HERE / "support.yaml")
    async with Scorer(concurrency=4, timeout=10) as scorer:
        report = await scorer.evaluate(
            samples,
            answer,
            ExactMatchStrategy(strip=True),
            NotBlankStrategy(min_length=10),
        )
    report.print()
    paths = await report.save(output_dir, formats=["markdown", "json", "junit"])
    print("Saved:", ", ".join(str(path) for path in paths))
    # the thresholds of examples/aeval.yaml: 80% overall, every "smoke" row
    assert_that(report).has_score_greater_than(80).has_score_for_tag("smoke", 100)
    return report


if __name__ == "__main__":
    anyio.run(main)
