from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from anyio import wait_all_tasks_blocked

import aeval.models.local as local_module
from aeval import AevalError, EvaluationSample, MissingExtraError, Scorer
from aeval.models import Embeddings, TokenUsage
from aeval.strategies.similarity import SemanticSimilarityStrategy, cosine_similarity
from aeval.testing import FakeEmbedder

SEVEN = TokenUsage(7, 0)
VECTORS: dict[str, list[float]] = {
    "same": [1.0, 2.0, 3.0],
    "double": [2.0, 4.0, 6.0],
    "x": [1.0, 0.0],
    "y": [0.0, 1.0],
    "minus x": [-1.0, 0.0],
    "slant": [3.0, 4.0],
    "mostly x": [4.0, 3.0],
    "zero": [0.0, 0.0],
    "short": [1.0],
}


def fake_embedder(*, usage: TokenUsage = SEVEN, retries: int = 0) -> FakeEmbedder:
    """Looks texts up in VECTORS; records each batch it was asked for."""
    return FakeEmbedder(VECTORS, usage=usage, retries=retries)


def batches(embedder: FakeEmbedder) -> list[list[str]]:
    return [list(call.texts) for call in embedder.calls]


class Gate:
    """Holds the first embedding call until ``gate`` is set (then fails it if told to)."""

    def __init__(self, *, fail_first: bool = False) -> None:
        self.gate = anyio.Event()
        self.entered = anyio.Event()
        self.fail_first = fail_first
        self.embedder = FakeEmbedder(self.vector, usage=SEVEN)

    async def vector(self, text: str) -> Sequence[float] | Exception:
        if not self.entered.is_set():
            self.entered.set()
            await self.gate.wait()
            if self.fail_first:
                return ConnectionError("embedder down")
        return VECTORS[text]


def sample(expected: object, name: str = "s") -> EvaluationSample:
    return EvaluationSample(name, ["q"], expected)


# --- cosine ---------------------------------------------------------------------------------


def test_cosine_of_parallel_vectors_is_exactly_one() -> None:
    assert cosine_similarity([1, 2, 3], [2, 4, 6]) == 1.0
    # unclamped, floating point gives 1.0000000000000002 here
    assert cosine_similarity([0.7, 0.1], [0.7, 0.1]) == 1.0


def test_cosine_values() -> None:
    assert cosine_similarity([1, 0], [0, 1]) == 0.0
    assert cosine_similarity([1, 0], [-1, 0]) == -1.0
    assert cosine_similarity([3, 4], [0, 1]) == 0.8
    assert cosine_similarity([3, 4], [4, 3]) == pytest.approx(24 / 25)


def test_cosine_errors_keep_the_upstream_messages() -> None:
    with pytest.raises(ValueError, match=r"^Vectors must be of the same length$"):
        cosine_similarity([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"^Vector magnitude cannot be zero$"):
        cosine_similarity([0, 0], [1, 2])


# --- the strategy ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_identical_meaning_passes_with_the_similarity_as_score() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    result = await strategy.evaluate(sample("double"), "same")
    assert (result.passed, result.score, result.explanation) == (True, 1.0, None)
    assert dict(result.metadata) == {
        "similarity": 1.0,
        "threshold": 0.9,
        "embedding_model": "fake-embedder",
        "prompt_tokens": 7,
        "retries": 0,
    }


@pytest.mark.anyio
async def test_below_threshold_fails_with_the_upstream_explanation() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    result = await strategy.evaluate(sample("y"), "slant")
    assert (result.passed, result.score) == (False, 0.8)
    assert result.explanation == "Similarity 0.8000 below threshold 0.9000"


@pytest.mark.anyio
async def test_the_threshold_is_inclusive() -> None:
    strategy = SemanticSimilarityStrategy(0.8, fake_embedder())
    result = await strategy.evaluate(sample("y"), "slant")
    assert (result.passed, result.score, result.metadata["threshold"]) == (True, 0.8, 0.8)


@pytest.mark.anyio
async def test_a_negative_cosine_scores_zero_and_fails_cleanly() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    result = await strategy.evaluate(sample("minus x"), "x")
    assert (result.passed, result.score, result.metadata["similarity"]) == (False, 0.0, -1.0)
    assert result.explanation == "Similarity -1.0000 below threshold 0.9000"


@pytest.mark.anyio
async def test_a_list_of_expected_outputs_uses_the_best_match() -> None:
    embedder = fake_embedder()
    strategy = SemanticSimilarityStrategy(0.9, embedder)
    result = await strategy.evaluate(sample(["y", "mostly x", "minus x"]), "x")
    assert (result.passed, result.metadata["similarity"]) == (False, 0.8)
    assert batches(embedder) == [["x", "y", "mostly x", "minus x"]]


@pytest.mark.anyio
async def test_vector_problems_name_the_sample() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    with pytest.raises(ValueError) as caught:
        await strategy.evaluate(sample("zero", name="blank"), "x")
    assert str(caught.value) == (
        "Sample 'blank': cannot compare the embeddings of the output and the expected output: "
        "Vector magnitude cannot be zero"
    )
    with pytest.raises(ValueError, match=r"Vectors must be of the same length$"):
        await strategy.evaluate(sample("short"), "x")


@pytest.mark.anyio
async def test_missing_expected_output_and_none_output() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    with pytest.raises(ValueError) as caught:
        await strategy.evaluate(sample(None, name="open"), "x")
    assert str(caught.value) == (
        "Sample 'open' has no expected output; SemanticSimilarityStrategy compares the output "
        "with it: add expected_output to the sample"
    )
    result = await strategy.evaluate(sample("x"), None)
    assert (result.passed, result.score, result.explanation) == (False, 0.0, "output is None")


@pytest.mark.anyio
async def test_a_wrong_number_of_vectors_is_an_error() -> None:
    class Short(FakeEmbedder):
        async def embed(self, texts: Sequence[str]) -> Embeddings:
            return Embeddings([[1.0, 0.0]])

    strategy = SemanticSimilarityStrategy(embedder=Short())
    with pytest.raises(ValueError, match=r"^The embedder returned 1 vectors for 2 texts$"):
        await strategy.evaluate(sample("y"), "x")


@pytest.mark.anyio
async def test_a_shared_expected_output_is_embedded_once() -> None:
    embedder = fake_embedder(usage=TokenUsage(3, 0), retries=1)
    strategy = SemanticSimilarityStrategy(embedder=embedder)
    first = await strategy.evaluate(sample("x"), "slant")
    second = await strategy.evaluate(sample("x"), "mostly x")
    third = await strategy.evaluate(sample("x"), "slant")
    assert batches(embedder) == [["slant", "x"], ["mostly x"]]
    assert [r.metadata["prompt_tokens"] for r in (first, second, third)] == [3, 3, 0]
    assert [r.metadata["retries"] for r in (first, second, third)] == [1, 1, 0]


@pytest.mark.anyio
async def test_identical_output_and_expected_are_embedded_once() -> None:
    embedder = fake_embedder()
    result = await SemanticSimilarityStrategy(embedder=embedder).evaluate(sample("x"), "x")
    assert (batches(embedder), result.score) == ([["x"]], 1.0)


@pytest.mark.anyio
async def test_the_cache_is_bounded() -> None:
    embedder = fake_embedder()
    strategy = SemanticSimilarityStrategy(embedder=embedder, cache_size=2)
    await strategy.evaluate(sample("y"), "x")  # caches x, y
    await strategy.evaluate(sample("x"), "slant")  # x is fresh again; slant evicts y
    await strategy.evaluate(sample("y"), "x")
    assert batches(embedder) == [["x", "y"], ["slant"], ["y"]]


@pytest.mark.anyio
async def test_concurrent_rows_share_the_embedding_of_a_common_text() -> None:
    gated = Gate()
    embedder = gated.embedder
    strategy = SemanticSimilarityStrategy(embedder=embedder)
    scores: dict[str, float | None] = {}

    async def run(output: str) -> None:
        scores[output] = (await strategy.evaluate(sample("y"), output)).score

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "slant")
        await gated.entered.wait()
        tg.start_soon(run, "mostly x")
        await wait_all_tasks_blocked()
        gated.gate.set()
    assert batches(embedder) == [["slant", "y"], ["mostly x"]]
    assert scores == {"slant": 0.8, "mostly x": 0.6}


@pytest.mark.anyio
async def test_a_waiter_embeds_itself_when_the_shared_request_fails() -> None:
    gated = Gate(fail_first=True)
    embedder = gated.embedder
    strategy = SemanticSimilarityStrategy(embedder=embedder)
    outcome: dict[str, object] = {}

    async def run(output: str) -> None:
        try:
            outcome[output] = (await strategy.evaluate(sample("y"), output)).score
        except ConnectionError as exc:
            outcome[output] = str(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "slant")
        await gated.entered.wait()
        tg.start_soon(run, "mostly x")
        await wait_all_tasks_blocked()
        gated.gate.set()
    assert outcome == {"slant": "embedder down", "mostly x": 0.6}
    assert batches(embedder) == [["slant", "y"], ["mostly x"], ["y"]]


@pytest.mark.anyio
async def test_through_a_scorer_rows_carry_the_metadata() -> None:
    strategy = SemanticSimilarityStrategy(0.7, fake_embedder(), name="meaning")
    samples = [sample("y", name="a"), sample("x", name="b")]
    report = await Scorer().evaluate(samples, lambda params: "slant", strategy)
    assert [(row.strategy, row.passed, row.score) for row in report.evaluations] == [
        ("meaning", True, 0.8),
        ("meaning", False, 0.6),
    ]
    assert report.usage.prompt_tokens == 7 + 7


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^threshold must be a number between -1 and 1, got 90$"):
        SemanticSimilarityStrategy(90, fake_embedder())
    with pytest.raises(ValueError, match=r"^threshold must be a number between -1 and 1, got True"):
        SemanticSimilarityStrategy(True, fake_embedder())
    with pytest.raises(TypeError, match=r"^embedder must have an async embed"):
        SemanticSimilarityStrategy(0.9, object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^cache_size must be a positive integer, got 0$"):
        SemanticSimilarityStrategy(embedder=fake_embedder(), cache_size=0)


def test_name_and_defaults() -> None:
    strategy = SemanticSimilarityStrategy(embedder=fake_embedder())
    assert (strategy.name, strategy.threshold) == ("SemanticSimilarityStrategy", 0.9)
    assert SemanticSimilarityStrategy(embedder=fake_embedder(), name="sim").name == "sim"


def test_without_the_local_extra_the_constructor_names_the_extra_and_http(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "local_extra_missing", lambda: ("onnxruntime", "numpy"))
    with pytest.raises(MissingExtraError) as caught:
        SemanticSimilarityStrategy()
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, AevalError)
    assert str(caught.value) == (
        "The local embedder needs the optional extra 'local', which is not installed (missing: "
        "onnxruntime, numpy): pip install 'aeval-engine[local]'. Or embed with an "
        "OpenAI-compatible server instead: SemanticSimilarityStrategy(embedder=OpenAIEmbedder(...))"
    )


# --- end to end over real sockets -----------------------------------------------------------


@pytest.mark.anyio
async def test_scorer_run_with_an_http_embedder_embeds_the_shared_expected_output_once() -> None:
    from aeval.models.openai import OpenAIEmbedder
    from aeval.testing import OpenAICompatibleServer, Reply

    expected = "The cat sat on the mat"
    samples = [
        EvaluationSample("same", ["q1"], expected),
        EvaluationSample("close", ["q2"], expected),
        EvaluationSample("far", ["q3"], expected),
    ]
    outputs = {"q1": expected, "q2": "a cat on a mat", "q3": "quarterly revenue rose"}
    async with (
        OpenAICompatibleServer() as server,
        OpenAIEmbedder("embed-model", base_url=server.base_url) as embedder,
    ):
        # the first output equals the expected output: one text; then only new outputs
        server.enqueue_embeddings(
            Reply.embeddings([[1.0, 0.0]]),
            Reply.embeddings([[3.0, 4.0]]),
            Reply.embeddings([[-1.0, 0.1]]),
        )
        strategy = SemanticSimilarityStrategy(0.6, embedder)
        report = await Scorer().evaluate(samples, lambda params: outputs[params[0]], strategy)
        inputs = [request.json["input"] for request in server.requests]

    assert inputs == [[expected], ["a cat on a mat"], ["quarterly revenue rose"]]
    rows = report.evaluations
    assert [(row.passed, row.score) for row in rows] == [(True, 1.0), (True, 0.6), (False, 0.0)]
    assert rows[2].metadata["similarity"] == pytest.approx(-1 / (1.01**0.5))
    assert rows[0].metadata["embedding_model"] == "embed-model"
    assert report.usage.prompt_tokens == 6 + 5 + 3
