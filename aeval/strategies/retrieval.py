"""Offline retrieval metrics: the documents a sample's run retrieved against its ``relevant-ids``.

No model is called. The ranking is read from the sample's trace (:func:`aeval.trace.current`):
the documents of every retrieval recorded with :func:`aeval.trace.record_retrieval`, in the
order they were recorded and, within one retrieval, best first. When a run retrieves more
than once the rankings are concatenated in that order and a document id seen again keeps its
first (best) rank, so a second retrieval can only add documents below the first one's.
A document is relevant when its id is in the sample's ``relevant-ids:`` (a list), or has a
grade of 1 or more there (a mapping of ids to grades, as trec_eval's qrels): nDCG gains each
document its grade, the other metrics count the relevant ones.
The public metric functions follow the same rule: a document id repeated in ``ranking`` keeps
its first rank and counts once, so every metric lies in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._reporting._results import EvaluationResult
from .._samples._agent_keys import RELEVANT_IDS
from ..trace import current
from ._base import NamedStrategy
from ._text_common import check_choice, plural

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "Relevance",
    "RetrievalStrategy",
    "hit_rate_at_k",
    "mean_reciprocal_rank",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
]

_METRICS = ("precision", "recall", "mrr", "ndcg", "hit")

_NO_TRACE = (
    "No trace was recorded for sample {name!r}, so there is no retrieval to measure: run it "
    "under a Scorer (each sample is traced) or inside `with aeval.trace.capture():`, and "
    "record what the retriever returned with aeval.trace.record_retrieval(documents)"
)
_NO_RETRIEVAL = (
    "Sample {name!r} recorded no retrieval: call aeval.trace.record_retrieval(documents) in "
    "the retriever with the documents it returned, best first"
)
_NOT_STATED = (
    "Sample {name!r} states no relevant-ids, so this metric does not apply to it (to measure "
    'it, add relevant-ids: [doc-1, doc-7] to it, or metadata={{"relevant_ids": [...]}} in '
    "Python: the ids a perfect retriever returns)"
)
_NO_RELEVANT = (
    "Sample {name!r} has an empty relevant-ids: list the ids a perfect retriever returns "
    "(relevant-ids: [doc-1, doc-7]), or leave the key out where the metric does not apply"
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


Relevance = Collection[str] | Mapping[str, int]
"""The relevant documents: ids (each of grade 1), or each judged id with its grade (0 for a
document judged not relevant), as in trec_eval's qrels."""


def _grades(relevant: Relevance) -> Mapping[str, int]:
    return relevant if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1)


def _relevant(relevant: Relevance) -> set[str]:
    """The ids of grade 1 or more: trec_eval's relevant documents (its default level)."""
    if isinstance(relevant, Mapping):
        return {doc for doc, grade in relevant.items() if grade > 0}
    return set(relevant)


def precision_at_k(ranking: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """The share of the first ``k`` ranks holding a relevant document.

    The denominator is ``k`` (ranks past the end of a shorter ranking count as not
    relevant, as in trec_eval's ``P@k``), or the length of the ranking when ``k`` is
    ``None``; an empty ranking scores 0.
    """
    top = _cut(ranking, k)
    denominator = len(top) if k is None else k
    if denominator == 0:
        return 0.0
    wanted = _relevant(relevant)
    return sum(1 for doc in top if doc in wanted) / denominator


def recall_at_k(ranking: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """The share of the relevant documents found in the first ``k`` ranks."""
    wanted = _relevant(relevant)
    if not wanted:
        raise ValueError("recall needs at least one relevant document")
    return len(set(_cut(ranking, k)) & wanted) / len(wanted)


def mean_reciprocal_rank(
    ranking: Sequence[str], relevant: Relevance, k: int | None = None
) -> float:
    """One over the rank of the first relevant document in the first ``k`` ranks, else 0.

    For one query this is its reciprocal rank; the mean over samples is the report's mean.
    """
    wanted = _relevant(relevant)
    for rank, doc in enumerate(_cut(ranking, k), start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def hit_rate_at_k(ranking: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """1 when a relevant document is in the first ``k`` ranks, else 0 (trec_eval's
    ``success@k``); its mean over samples is the hit rate."""
    wanted = _relevant(relevant)
    return 1.0 if any(doc in wanted for doc in _cut(ranking, k)) else 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """Normalised discounted cumulative gain, as trec_eval's ``ndcg`` and ``ndcg_cut.k``.

    A document's gain is its grade (1 for each id of a plain collection; an id that is not
    listed gains 0); DCG sums ``gain / log2(rank + 1)`` over the first ``k`` ranks, and the
    ideal DCG does the same for the grades sorted best first.
    """
    grades = _grades(relevant)
    gains = sorted((grade for grade in grades.values() if grade > 0), reverse=True)
    if not gains:
        raise ValueError("nDCG needs at least one relevant document")
    top = _cut(ranking, k)
    dcg = sum(
        grades.get(doc, 0) / math.log2(rank + 1)
        for rank, doc in enumerate(top, 1)
        if grades.get(doc, 0) > 0
    )
    ideal_gains = gains if k is None else gains[:k]
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal_gains, 1))
    return dcg / ideal


_FUNCTIONS = {
    "precision": precision_at_k,
    "recall": recall_at_k,
    "mrr": mean_reciprocal_rank,
    "ndcg": ndcg_at_k,
    "hit": hit_rate_at_k,
}


class RetrievalStrategy(NamedStrategy):
    """A retrieval metric of the sample's run against its ``relevant-ids``, offline.

    The ranking is the document ids of the trace's retrievals (see the module
    documentation for several retrievals); the score is the metric, and the row passes when
    it is at least ``threshold``. A sample without ``relevant-ids`` is *not applicable*
    (neither passed nor failed, left out of the score; the row says what to add). A sample
    without a trace, without a recorded retrieval, with documents that have no id, or with
    an empty ``relevant-ids`` fails with what to do, never a silent pass. A retrieval that
    returned nothing scores 0.

    Args:
        metric: ``"precision"``, ``"recall"`` (the default), ``"mrr"``, ``"ndcg"`` or ``"hit"``
            (1 when a relevant document is in the first ``k`` ranks: the hit rate).
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
        if relevant_ids is None:
            return EvaluationResult.not_applicable(_NOT_STATED.format(name=sample.name))
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
        relevant: Relevance = (
            {str(doc): grade for doc, grade in relevant_ids.items()}
            if isinstance(relevant_ids, Mapping)
            else {str(each) for each in relevant_ids}
        )
        wanted = _relevant(relevant)
        if not wanted:
            return EvaluationResult.failing(_NO_RELEVANT.format(name=sample.name))
        score = _FUNCTIONS[self._metric](ranking, relevant, self._k)
        found = len(set(_cut(ranking, self._k)) & wanted)
        at = "" if self._k is None else f"@{self._k}"
        explanation = (
            f"{self._metric}{at} = {score:.3f} (threshold {self._threshold:g}): "
            f"{found} of {plural(len(wanted), 'relevant document')} in the first "
            f"{plural(len(_cut(ranking, self._k)), 'rank')}"
        )
        metadata = {"metric": self._metric, "k": self._k, "ranking": ranking[:50]}
        return EvaluationResult(score >= self._threshold, score, explanation, metadata)
