"""Evaluate the offline support assistant over a YAML file and save the report.

Run it from the repository root:

    python examples/quickstart.py

No API key and no server: the assistant (``support_bot.py``) answers from a small knowledge
base. One sample ("Warranty") fails on purpose, so the report shows what a failure looks like.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from aeval import Samples, Scorer, assert_that
from aeval.strategies import ContainsStrategy, ExactMatchStrategy, NotBlankStrategy

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from support_bot import answer  # noqa: E402


async def main(output_dir: Path = Path("target/evaluation-reports")) -> float:
    samples = await Samples.load(HERE / "support.yaml")
    async with Scorer(concurrency=4) as scorer:
        report = await scorer.evaluate(
            samples,
            answer,
            ExactMatchStrategy(),
            ContainsStrategy(must_not_contain=["sorry"], case_sensitive=False),
            NotBlankStrategy(min_length=10),
        )
    print(f"Score: {report.score:.2f}% ({report.passed_count}/{report.evaluation_count} rows)")
    for tag, score in report.tag_scores.items():
        print(f"  {tag:<10} {score:6.2f}%")
    for row in report.failures:
        print(f"FAILED {row.name} [{row.strategy}]: {row.explanation}")
    paths = await report.save(output_dir, formats=["markdown", "json"])
    print("Saved:", ", ".join(str(path) for path in paths))
    assert_that(report).has_score_greater_than(80).has_passed_for_tag("smoke")
    return report.score


if __name__ == "__main__":
    anyio.run(main)
