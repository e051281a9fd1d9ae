"""Semantic similarity: the cosine of the embeddings of the output and the expected output.

A port of the upstream ``SemanticSimilarityStrategy`` (seed 000) over the
:class:`~aeval.abc.Embedder` protocol, with a bounded embedding cache.
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._model_types import TokenUsage, model_name
from .._reporting._results import EvaluationResult
from .._util._singleflight import Flight, SingleFlight
from ..abc import Embedder
from ._base import NamedStrategy

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["SemanticSimilarityStrategy", "cosine_similarity"]

_CACHE_SIZE = 10_000


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors, clamped to [-1, 1] (as upstream).

    Raises:
        ValueError: ``"Vectors must be of the same length"`` or
            ``"Vector magnitude cannot be zero"``.

    Example:
        >>> cosine_similarity([1, 2, 3], [2, 4, 6])
        1.0
    """
    if len(a) != len(b):
        raise ValueError("Vectors must be of the same length")
    dot = math.fsum(map(operator.mul, a, b))
    norm_a = math.sqrt(math.fsum(map(operator.mul, a, a)))
    norm_b = math.sqrt(math.fsum(map(operator.mul, b, b)))
    if norm_a == 0.0 or norm_b == 0.0:
        raise ValueError("Vector magnitude cannot be zero")
    similarity = dot / (norm_a * norm_b)
    if math.isnan(similarity):
        raise ValueError("Vectors must hold finite numbers")
    return max(-1.0, min(1.0, similarity))


class SemanticSimilarityStrategy(NamedStrategy):
    """Pass when the output means the same as the expected output.

    The similarity is the cosine of the two embeddings, clamped to [-1, 1]; the row passes
    when it is at least ``threshold`` (inclusive). The score is the similarity, except that
    a negative cosine scores 0.0 (upstream raises on it, which turns the row into an error;
    here it is a clean failure). With a list of expected outputs the best match counts.
    The metadata holds ``similarity``, ``threshold`` and ``embedding_model``, plus
    ``prompt_tokens`` and ``retries`` of the embedding call this row made. A failure is
    explained as ``"Similarity 0.1234 below threshold 0.9000"``. Thresholds depend on the
    model: store the model name next to a threshold you tune.

    Embeddings are cached per strategy instance (an expected output shared by many samples
    is embedded once; a least-recently-used cache of ``cache_size`` texts), the texts a row
    needs are embedded in one batch, and concurrent rows that need the same text share one
    request.

    Args:
        threshold: The least similarity that passes, between -1 and 1.
        embedder: Anything with the ``Embedder`` protocol's ``embed`` method; by default the
            offline :class:`~aeval.models.local.LocalEmbedder` (the ``aeval-engine[local]`` extra).
        name: The name the report gives this strategy's rows; the class name by default.
        cache_size: How many texts' embeddings to keep.

    Raises:
        MissingExtraError: No embedder was given and the ``aeval-engine[local]`` extra is missing;
            install it or pass ``embedder=OpenAIEmbedder(...)``.
    """

    __slots__ = ("_cache", "_cache_size", "_embedder", "_model", "_pending", "_threshold")

    def __init__(
        self,
        threshold: float = 0.9,
        embedder: Embedder | None = None,
        *,
        name: str | None = None,
        cache_size: int = _CACHE_SIZE,
    ) -> None:
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not -1.0 <= threshold <= 1.0
        ):
            raise ValueError(f"threshold must be a number between -1 and 1, got {threshold!r}")
        super().__init__(name=name)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"cache_size must be a positive integer, got {cache_size!r}")
        if embedder is None:
            from ..models.local import LocalEmbedder

            embedder = LocalEmbedder()
        elif not isinstance(embedder, Embedder):
            raise TypeError(
                "embedder must have an async embed(texts) method (e.g. "
                f"aeval.models.OpenAIEmbedder), got {type(embedder).__name__}"
            )
        self._threshold = float(threshold)
        self._embedder = embedder
        self._model = model_name(embedder)
        self._cache_size = cache_size
        self._cache: OrderedDict[str, Sequence[float]] = OrderedDict()
        self._pending: SingleFlight[str, Sequence[float]] = SingleFlight()

    @property
    def threshold(self) -> float:
        """The least similarity that passes."""
        return self._threshold

    @property
    def embedder(self) -> Embedder:
        """The embedder in use."""
        return self._embedder

    def _remember(self, text: str, vector: Sequence[float]) -> None:
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def _vectors(self, texts: Sequence[str]) -> tuple[list[Sequence[float]], TokenUsage, int]:
        """Vectors for ``texts`` through the cache.

        Returns:
            The vectors in the order of ``texts``, and the token usage and retries of the
            request made here (zero when every text was cached or in flight elsewhere).
        """
        found: dict[str, Sequence[float]] = {}
        usage, retries = TokenUsage(), 0
        wanted = list(dict.fromkeys(texts))
        while wanted:
            mine: list[str] = []
            waiting: dict[str, Flight[Sequence[float]]] = {}
            for text in wanted:
                cached = self._cache.get(text)
                flight = self._pending.joining(text)
                if cached is not None:
                    self._cache.move_to_end(text)
                    found[text] = cached
                elif flight is not None:
                    waiting[text] = flight
                else:
                    self._pending.start(text)
                    mine.append(text)
            if mine:
                try:
                    result = await self._embedder.embed(mine)
                    if len(result.vectors) != len(mine):
                        raise ValueError(
                            f"The embedder returned {len(result.vectors)} vectors for "
                            f"{len(mine)} texts"
                        )
                    if result.model and self._model is None:
                        self._model = result.model
                    usage += result.usage
                    retries += result.retries
                    for text, vector in zip(mine, result.vectors, strict=True):
                        found[text] = vector
                        self._remember(text, vector)
                finally:
                    for text in mine:
                        self._pending.finish(text, value=found.get(text))
            wanted = []
            for text, flight in waiting.items():
                await flight.done.wait()
                if flight.value is None:
                    wanted.append(text)
                else:
                    found[text] = flight.value
        return [found[text] for text in texts], usage, retries

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Compare the embeddings of ``output`` and the sample's expected output."""
        if output is None:
            return EvaluationResult.failing("output is None")
        expected = sample.expected_output
        if expected is None or (isinstance(expected, list | tuple) and not expected):
            raise ValueError(
                f"Sample {sample.name!r} has no expected output; SemanticSimilarityStrategy "
                "compares the output with it: add expected_output to the sample"
            )
        options = expected if isinstance(expected, list | tuple) else [expected]
        texts = [output if isinstance(output, str) else str(output)]
        texts += [item if isinstance(item, str) else str(item) for item in options]
        vectors, usage, retries = await self._vectors(texts)
        try:
            similarity = max(cosine_similarity(vectors[0], vector) for vector in vectors[1:])
        except ValueError as exc:
            raise ValueError(
                f"Sample {sample.name!r}: cannot compare the embeddings of the output and the "
                f"expected output: {exc}"
            ) from exc
        metadata = {
            "similarity": similarity,
            "threshold": self._threshold,
            "embedding_model": self._model,
            "prompt_tokens": usage.prompt_tokens,
            "retries": retries,
        }
        score = max(similarity, 0.0)
        if similarity >= self._threshold:
            return EvaluationResult(True, score, None, metadata)
        explanation = f"Similarity {similarity:.4f} below threshold {self._threshold:.4f}"
        return EvaluationResult(False, score, explanation, metadata)

    def _config(self) -> dict[str, Any]:
        return {"threshold": self._threshold, "embedder": self._embedder}
