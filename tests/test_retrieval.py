"""RetrievalStrategy and the ``relevant-ids:`` sample key.

The metrics are cross-checked against hand-computed textbook cases from the standard
definitions (Manning, Raghavan and Schütze, *Introduction to Information Retrieval*, ch. 8;
Järvelin and Kekäläinen's nDCG with the log2(rank + 1) discount, as trec_eval and
ir-measures compute it). ir-measures is on PyPI but needs the compiled pytrec-eval-terrier,
so it is not a test dependency.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _cli import Cli, cli, rows_of, write_config
from _inline import runs_on_the_loop

from aeval import EvaluationResult, EvaluationSample, SampleLoadError, Samples
from aeval.strategies import RetrievalStrategy
from aeval.strategies.retrieval import (
    hit_rate_at_k,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from aeval.trace import Document, Retrieval, Trace, using

__all__ = ["cli"]

SAMPLE = EvaluationSample("q", ["where?"], metadata={"relevant_ids": ["d1", "d3", "d6"]})
RANKING = ["d1", "d2", "d3", "d4", "d5"]
RELEVANT = {"d1", "d3", "d6"}


def trace_of(*rankings: Sequence[str | None]) -> Trace:
    return Trace(
        retrievals=tuple(
            Retrieval(query="q", documents=tuple(Document(id=doc) for doc in ranking))
            for ranking in rankings
        )
    )


def run(
    strategy: RetrievalStrategy, trace: Trace | None, sample: EvaluationSample = SAMPLE
) -> EvaluationResult:
    with using(trace):
        return strategy.evaluate(sample, "answer")


def test_textbook_values_of_the_four_metrics() -> None:
    # relevant at ranks 1 and 3 of 5; 3 relevant in all (d6 never retrieved)
    assert precision_at_k(RANKING, RELEVANT, 5) == pytest.approx(2 / 5)
    assert precision_at_k(RANKING, RELEVANT, 2) == pytest.approx(1 / 2)
    assert precision_at_k(RANKING, RELEVANT, 10) == pytest.approx(2 / 10)
    assert recall_at_k(RANKING, RELEVANT, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKING, RELEVANT, 1) == pytest.approx(1 / 3)
    assert mean_reciprocal_rank(["d2", "d3", "d1"], RELEVANT) == pytest.approx(1 / 2)
    assert mean_reciprocal_rank(["d2", "d4"], RELEVANT) == 0.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    ideal = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKING, RELEVANT, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKING, RELEVANT, 5) == pytest.approx(0.7039180890341347)
    # at k=2 the ideal list holds only two relevant documents
    assert ndcg_at_k(RANKING, RELEVANT, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["d1", "d3", "d6"], RELEVANT) == pytest.approx(1.0)


def test_a_repeated_document_counts_once_and_no_metric_passes_one() -> None:
    assert ndcg_at_k(["a", "a"], {"a"}) == pytest.approx(1.0)
    assert precision_at_k(["a", "a"], {"a", "b"}) == pytest.approx(1.0)
    assert precision_at_k(["a", "a", "b"], {"b"}, 2) == pytest.approx(1 / 2)
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(6)]
    for _ in range(500):
        ranking = rng.choices(docs, k=rng.randint(1, 12))
        relevant = set(rng.sample(docs, rng.randint(1, 6)))
        k = rng.choice([None, 1, 3, 5, 20])
        once = list(dict.fromkeys(ranking))
        for metric in (precision_at_k, recall_at_k, mean_reciprocal_rank, ndcg_at_k):
            value = metric(ranking, relevant, k)
            assert 0.0 <= value <= 1.0 + 1e-12, (metric.__name__, ranking, relevant, k)
            assert value == pytest.approx(metric(once, relevant, k))


@pytest.mark.parametrize(
    ("metric", "k", "score"),
    [
        ("recall", None, 2 / 3),
        ("precision", 5, 2 / 5),
        ("mrr", None, 1.0),
        ("ndcg", 5, 0.7039180890341347),
    ],
)
def test_the_strategy_scores_the_trace_ranking(metric: str, k: int | None, score: float) -> None:
    result = run(RetrievalStrategy(metric=metric, k=k, threshold=0.5), trace_of(RANKING))
    assert result.score == pytest.approx(score)
    assert result.passed is (score >= 0.5)
    assert result.explanation is not None and metric in result.explanation


def test_several_retrievals_are_concatenated_and_a_repeat_keeps_its_first_rank() -> None:
    result = run(RetrievalStrategy(metric="mrr"), trace_of(["d2", "d4"], ["d4", "d3"]))
    assert result.metadata["ranking"] == ["d2", "d4", "d3"]
    assert result.score == pytest.approx(1 / 3)


def test_an_empty_retrieval_scores_zero() -> None:
    result = run(RetrievalStrategy(), trace_of([]))
    assert not result.passed and result.score == 0.0


def test_no_trace_no_retrieval_no_ids_and_no_relevant_ids_fail_naming_the_fix() -> None:
    strategy = RetrievalStrategy()
    missing = run(strategy, None)
    assert not missing.passed and "record_retrieval" in str(missing.explanation)
    empty = run(strategy, Trace())
    assert not empty.passed and "recorded no retrieval" in str(empty.explanation)
    anonymous = run(strategy, trace_of(["d1", None]))
    assert not anonymous.passed and "1 document without an id" in str(anonymous.explanation)
    bare = run(strategy, trace_of(RANKING), EvaluationSample("bare", ["q"]))
    assert not bare.passed and "add relevant-ids: [" in str(bare.explanation)


def test_options_are_checked_and_it_runs_inline() -> None:
    with pytest.raises(ValueError, match="metric must be"):
        RetrievalStrategy(metric="map")
    with pytest.raises(ValueError, match="k must be"):
        RetrievalStrategy(k=0)
    with pytest.raises(ValueError, match="threshold must be"):
        RetrievalStrategy(threshold=2)
    assert runs_on_the_loop(RetrievalStrategy())
    assert repr(RetrievalStrategy(k=3)) == "RetrievalStrategy(metric='recall', k=3, threshold=0.5)"


def test_relevant_ids_load_into_metadata(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- name: q\n  parameters: []\n  relevant-ids: [d1, 7]\n", encoding="utf-8")
    (sample,) = Samples.load_sync(path)
    assert sample.metadata["relevant_ids"] == ["d1", "7"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        *((value, "must be a non-empty list of document ids") for value in ["[]", "[d1, '']"]),
        ("[true]", "must be a non-empty list of document ids"),
        *(
            (value, "as a mapping gives each document id its relevance grade")
            for value in ["{}", "{a: -1}", "{a: 1.5}", "{a: true}", "{'': 1}"]
        ),
    ],
)
def test_malformed_relevant_ids_name_the_file_line_and_sample(
    tmp_path: Path, value: str, problem: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"- name: q\n  parameters: []\n  relevant-ids: {value}\n", encoding="utf-8")
    with pytest.raises(SampleLoadError) as error:
        Samples.load_sync(path)
    assert str(error.value).startswith(f"{path}:3, sample 'q': 'relevant-ids' {problem}")


def test_graded_relevant_ids_load_into_metadata_and_grade_ndcg(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "- name: q\n  parameters: []\n  relevant-ids: {d1: 2, 7: 1, d9: 0}\n", encoding="utf-8"
    )
    (sample,) = Samples.load_sync(path)
    assert sample.metadata["relevant_ids"] == {"d1": 2, "7": 1, "d9": 0}
    documents = (Document("d9"), Document("7"), Document("d1"))
    trace = Trace(retrievals=(Retrieval(documents=documents),))
    with using(trace):
        result = RetrievalStrategy(metric="ndcg", threshold=0.6).evaluate(sample, None)
    # gains 0, 1, 2 at ranks 1-3 against the ideal 2, 1: trec_eval's ndcg
    ideal = 2 + 1 / math.log2(3)
    assert result.score == pytest.approx((1 / math.log2(3) + 2 / math.log2(4)) / ideal)
    assert result.passed and "2 of 2 relevant documents" in str(result.explanation)


@pytest.mark.parametrize("graded", [False, True])
def test_every_metric_equals_trec_evals_on_generated_rankings(graded: bool) -> None:
    """pytrec_eval (trec_eval's own code) against ours, on rankings, cuts and qrels of every
    shape: ties are avoided by giving each rank its own score, as a ranking means."""
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier")
    rng = random.Random(11 + graded)
    docs = [f"d{i}" for i in range(12)]
    cuts = (1, 5, 10)
    measures = {"ndcg", "ndcg_cut.1,5,10", "P.1,5,10", "recall.1,5,10", "recip_rank"}
    measures.add("success.1,5,10")
    compared = 0
    for case in range(300):
        judged = rng.sample(docs, rng.randint(1, 8))
        grades = {doc: (rng.randint(0, 3) if graded else 1) for doc in judged}
        if not any(grades.values()):
            grades[judged[0]] = 1
        ranking = rng.sample(docs, rng.randint(0, 12))
        relevant: Any = grades if graded else set(grades)
        run = {doc: float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
        if not run:
            continue
        ours = {
            "ndcg": ndcg_at_k(ranking, relevant),
            "recip_rank": mean_reciprocal_rank(ranking, relevant),
            **{f"ndcg_cut_{k}": ndcg_at_k(ranking, relevant, k) for k in cuts},
            **{f"P_{k}": precision_at_k(ranking, relevant, k) for k in cuts},
            **{f"recall_{k}": recall_at_k(ranking, relevant, k) for k in cuts},
            **{f"success_{k}": hit_rate_at_k(ranking, relevant, k) for k in cuts},
        }
        theirs = pytrec_eval.RelevanceEvaluator({"q": grades}, measures).evaluate({"q": run})["q"]
        for measure, value in ours.items():
            assert value == pytest.approx(theirs[measure], abs=1e-4), (case, measure, ranking)
            compared += 1
    assert compared > 3000


TARGET = """\
import aeval.trace


def rag(question: str) -> str:
    aeval.trace.record_retrieval([{"id": "d2", "text": "x"}, {"id": "d1", "text": "y"}])
    return "answer"
"""

CONFIG = """\
samples: samples.yaml
target: rag_target:rag
strategies:
  - name: retrieval
    metric: mrr
    threshold: 0.5
  - name: retrieval
    metric: precision
    k: 1
    label: p@1
output:
  dir: out
"""


def test_retrieval_by_name_in_a_run_config(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "rag_target.py").write_text(TARGET)
    (tmp_path / "samples.yaml").write_text(
        "- name: q\n  parameters: [where]\n  relevant-ids: [d1]\n"
    )
    result = cli("run", write_config(tmp_path, CONFIG), cwd=tmp_path)
    rows = {row["strategy"]: row for row in rows_of(tmp_path / "out" / "rows.jsonl")}
    assert rows["RetrievalStrategy"]["outcome"] == "passed", result.stdout
    assert rows["p@1"]["outcome"] == "failed"


def test_an_unknown_metric_in_a_config_is_refused_with_its_line(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "rag_target.py").write_text(TARGET)
    (tmp_path / "samples.yaml").write_text("- name: q\n  parameters: [w]\n")
    config = write_config(tmp_path, CONFIG.replace("metric: mrr", "metric: map"))
    result = cli("run", config, cwd=tmp_path)
    assert result.returncode != 0
    assert "aeval.yaml:5: strategies[0].metric: expected one of" in result.stderr
