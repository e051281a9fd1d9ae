"""Offline retrieval metrics: the documents a sample's run retrieved against its ``relevant-ids``.

No model is called. The ranking is read from the sample's trace (:func:`aeval.trace.current`):
the documents of every retrieval recorded with :func:`aeval.trace.record_retrieval`, in the
order they were recorded and, within one retrieval, best first. When a run retrieves more
than once the rankings are concatenated in that order and a document id seen again keeps its
first (best) rank, so a second retrieval can only add documents below the first one's.
Relevance is binary: a document is relevant when its id is in the sample's ``relevant-ids:``.
The public metric functions follow the same rule: a document id repeated in ``ranking`` keeps
its first rank and counts once, so every metric lies in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._reporting._results import EvaluationResult
from .._samples._agent_keys import RELEVANT_IDS
from ..trace import current
from ._base import NamedStrategy
from ._text_common import check_choice, plural

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "RetrievalStrategy",
    "mean_reciprocal_rank",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
]

_METRICS = ("precision", "recall", "mrr", "ndcg")

_NO_TRACE = (
    "No trace was recorded for sample {name!r}, so there is no retrieval to measure: run it "
    "under a Scorer (each sample is traced) or inside `with aeval.trace.capture():`, and "
    "record what the retriever returned with aeval.trace.record_retrieval(documents)"
)
_NO_RETRIEVAL = (
    "Sample {name!r} recorded no retrieval: call aeval.trace.record_retrieval(documents) in "
    "the retriever with the documents it returned, best first"
)
_NO_RELEVANT = (
    "Sample {name!r} has no relevant-ids: add relevant-ids: [doc-1, doc-7] to it (or "
    'metadata={{"relevant_ids": [...]}} in Python), the ids a perfect retriever returns'
)
_NO_IDS = (
    "Sample {name!r} retrieved {count} without an id: record each document with its id, "
    'e.g. record_retrieval([{{"id": "doc-1", "text": ...}}]) or Document(id="doc-1", ...)'
)


def _cut(ranking: Sequence[str], k: int | None) -> Sequence[str]:
    """The first ``k`` ranks, a document seen again keeping its first rank (as trec_eval,
    whose runs hold each document once), so that no metric can count one twice."""
    if len(set(ranking)) != len(ranking):
        ranking = list(dict.fromkeys(ranking))
    return ranking if k is None else ranking[:k]


def precision_at_k(ranking: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """The share of the first ``k`` ranks holding a relevant document.

    The denominator is ``k`` (ranks past the end of a shorter ranking count as not
    relevant, as in trec_eval's ``P@k``), or the length of the ranking when ``k`` is
    ``None``; an empty ranking scores 0.
    """
    top = _cut(ranking, k)
    denominator = len(top) if k is None else k
    if denominator == 0:
        return 0.0
    return sum(1 for doc in top if doc in relevant) / denominator


def recall_at_k(ranking: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """The share of the relevant documents found in the first ``k`` ranks."""
    if not relevant:
        raise ValueError("recall needs at least one relevant document")
    return len(set(_cut(ranking, k)) & relevant) / len(relevant)


def mean_reciprocal_rank(ranking: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """One over the rank of the first relevant document in the first ``k`` ranks, else 0.

    For one query this is its reciprocal rank; the mean over samples is the report's mean.
    """
    for rank, doc in enumerate(_cut(ranking, k), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """Normalised discounted cumulative gain with binary relevance.

    DCG is the sum of ``1 / log2(rank + 1)`` over the relevant documents in the first ``k``
    ranks; the ideal DCG puts ``min(len(relevant), k)`` relevant documents first.
    """
    if not relevant:
        raise ValueError("nDCG needs at least one relevant document")
    top = _cut(ranking, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(top, 1) if doc in relevant)
    ideal_count = len(relevant) if k is None else min(len(relevant), k)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal_count + 1))
    return dcg / ideal


_FUNCTIONS = {
    "precision": precision_at_k,
    "recall": recall_at_k,
    "mrr": mean_reciprocal_rank,
    "ndcg": ndcg_at_k,
}


class RetrievalStrategy(NamedStrategy):
    """A retrieval metric of the sample's run against its ``relevant-ids``, offline.

    The ranking is the document ids of the trace's retrievals (see the module
    documentation for several retrievals); the score is the metric, and the row passes when
    it is at least ``threshold``. A sample without a trace, without a recorded retrieval,
    with documents that have no id, or without ``relevant-ids`` fails with what to add,
    never a silent pass. A retrieval that returned nothing scores 0.

    Args:
        metric: ``"precision"``, ``"recall"`` (the default), ``"mrr"`` or ``"ndcg"``.
        k: Measure the first ``k`` ranks only; all of them when ``None``.
        threshold: The lowest passing score, in [0, 1]; 0.5 by default.
        name: The name of this strategy's rows; the class name by default.

    Example:
        >>> RetrievalStrategy(metric="ndcg", k=5, threshold=0.7)
        RetrievalStrategy(metric='ndcg', k=5, threshold=0.7)
    """

    __slots__ = ("_k", "_metric", "_threshold")
    _runs_inline: ClassVar[bool] = True

    def __init__(
        self,
        *,
        metric: str = "recall",
        k: int | None = None,
        threshold: float = 0.5,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._metric = check_choice(metric, "metric", _METRICS)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be a positive integer or None, got {k!r}")
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 <= threshold <= 1.0
        ):
            raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
        self._k = k
        self._threshold = float(threshold)

    def _config(self) -> dict[str, Any]:
        return {"metric": self._metric, "k": self._k, "threshold": self._threshold}

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Measure the trace's retrievals of ``sample``; see the class documentation."""
        relevant_ids = (sample.metadata or {}).get(RELEVANT_IDS)
        if not relevant_ids:
            return EvaluationResult.failing(_NO_RELEVANT.format(name=sample.name))
        trace = current()
        if trace is None:
            return EvaluationResult(
                False, 0.0, _NO_TRACE.format(name=sample.name), {"trace": "missing"}
            )
        if not trace.retrievals:
            return EvaluationResult.failing(_NO_RETRIEVAL.format(name=sample.name))
        ranking: list[str] = []
        seen: set[str] = set()
        missing = 0
        for retrieval in trace.retrievals:
            for document in retrieval.documents:
                if document.id is None:
                    missing += 1
                elif document.id not in seen:
                    seen.add(document.id)
                    ranking.append(document.id)
        if missing:
            return EvaluationResult.failing(
                _NO_IDS.format(name=sample.name, count=plural(missing, "document"))
            )
        relevant = {str(each) for each in relevant_ids}
        score = _FUNCTIONS[self._metric](ranking, relevant, self._k)
        found = len(set(_cut(ranking, self._k)) & relevant)
        at = "" if self._k is None else f"@{self._k}"
        explanation = (
            f"{self._metric}{at} = {score:.3f} (threshold {self._threshold:g}): "
            f"{found} of {plural(len(relevant), 'relevant document')} in the first "
            f"{plural(len(_cut(ranking, self._k)), 'rank')}"
        )
        metadata = {"metric": self._metric, "k": self._k, "ranking": ranking[:50]}
        return EvaluationResult(score >= self._threshold, score, explanation, metadata)
