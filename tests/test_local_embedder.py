from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from aeval import EvaluationSample, MissingExtraError
from aeval.models import local as local_module
from aeval.models.local import LocalEmbedder, local_extra_missing
from aeval.strategies.similarity import SemanticSimilarityStrategy, cosine_similarity

pytestmark = pytest.mark.skipif(
    bool(local_extra_missing()),
    reason=f"the aeval-engine[local] extra is not installed (missing: {local_extra_missing()})",
)

PARAPHRASES = [
    ("We're open Monday-Friday, 9am-5pm", "Our business hours are 9 to 5 on weekdays"),
    ("The cat sat on the mat.", "A cat was sitting on the rug."),
    ("How do I reset my password?", "What are the steps to change a forgotten password?"),
    (
        "The meeting has been postponed until next week.",
        "We've pushed the meeting back to next week.",
    ),
    ("Paris is the capital of France.", "France's capital city is Paris."),
]
UNRELATED = [
    "Photosynthesis converts sunlight into chemical energy.",
    "Quarterly revenue rose by eight percent.",
    "The recipe calls for two cups of flour.",
    "Jupiter is the largest planet in the solar system.",
    "Please restart the router and try again.",
]

_EMBEDDER: LocalEmbedder | None = None


def embedder() -> LocalEmbedder:
    """One embedder for the module, so the model loads once."""
    global _EMBEDDER
    if _EMBEDDER is None:
        _EMBEDDER = LocalEmbedder()
    return _EMBEDDER


@pytest.mark.anyio
async def test_paraphrases_are_far_closer_than_unrelated_sentences() -> None:
    texts = [text for pair in PARAPHRASES for text in pair] + UNRELATED
    vectors = (await embedder().embed(texts)).vectors
    paraphrase = [cosine_similarity(vectors[2 * i], vectors[2 * i + 1]) for i in range(5)]
    unrelated = [cosine_similarity(vectors[2 * i], vectors[10 + i]) for i in range(5)]
    # research/embedders.md measured a margin of 0.58 (min paraphrase 0.64, max unrelated 0.06)
    assert min(paraphrase) - max(unrelated) > 0.4
    assert paraphrase[4] > 0.9


@pytest.mark.anyio
async def test_vectors_have_384_unit_length_dimensions_in_input_order() -> None:
    texts = ["A much longer sentence, about the weather in Lisbon in the spring.", "Hi", ""]
    together = (await embedder().embed(texts)).vectors
    alone = [(await embedder().embed([text])).vectors[0] for text in texts]
    for joint, single in zip(together, alone, strict=True):
        assert len(joint) == 384
        assert math.isclose(math.fsum(x * x for x in joint), 1.0, rel_tol=1e-9)
        # padding in a batch must not change a text's vector
        assert cosine_similarity(joint, single) > 0.9999


@pytest.mark.anyio
async def test_result_shape_and_bad_input() -> None:
    result = await embedder().embed([])
    assert (list(result.vectors), result.model) == ([], "all-MiniLM-L6-v2-int8")
    assert (await embedder().embed(["x"])).usage.total_tokens == 0
    with pytest.raises(TypeError, match=r"^texts\[1\] must be a string, got int$"):
        await embedder().embed(["ok", 3])  # type: ignore[list-item]


@pytest.mark.anyio
async def test_concurrent_calls_from_many_tasks_agree() -> None:
    results: dict[int, list[float]] = {}

    async def run(i: int) -> None:
        results[i] = list((await embedder().embed(["The cat sat on the mat."])).vectors[0])

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(run, i)
    assert all(results[i] == results[0] for i in range(4))


@pytest.mark.anyio
async def test_the_default_similarity_strategy_uses_the_local_embedder() -> None:
    strategy = SemanticSimilarityStrategy(0.6)
    assert isinstance(strategy.embedder, LocalEmbedder)
    close = await strategy.evaluate(
        EvaluationSample("p", ["q"], "Paris is the capital of France."),
        "France's capital city is Paris.",
    )
    far = await strategy.evaluate(
        EvaluationSample("u", ["q"], "Paris is the capital of France."),
        "Please restart the router and try again.",
    )
    assert close.passed and close.score is not None and close.score > 0.9
    assert close.metadata["embedding_model"] == "all-MiniLM-L6-v2-int8"
    assert not far.passed
    assert far.explanation is not None and far.explanation.endswith("below threshold 0.6000")


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got 0$"):
        LocalEmbedder(batch_size=0)
    assert repr(LocalEmbedder(threads=2)) == (
        "LocalEmbedder(model='all-MiniLM-L6-v2-int8', threads=2)"
    )


def test_the_tokenizer_ships_with_aeval_beside_its_licence_and_notice() -> None:
    folder = Path(local_module.__file__).parent / "_minilm"
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
    assert local_module._TOKENIZER_SHA256 in (folder / "NOTICE").read_text(encoding="utf-8")
    assert '"WordPiece"' in local_module._tokenizer_json()


def test_a_tokenizer_that_does_not_match_its_checksum_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "_TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(MissingExtraError) as caught:
        LocalEmbedder()._load()
    message = str(caught.value)
    assert "_minilm/tokenizer.json has SHA-256 be50c3628f2bf5bb" in message
    assert f"not {'0' * 64}" in message
    assert "pip install --force-reinstall 'aeval-engine[local]'" in message


def test_a_missing_tokenizer_file_says_the_installation_is_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_module, "_TOKENIZER_FILE", "_minilm/absent.json")
    with pytest.raises(MissingExtraError, match=r"absent\.json is missing, so this installation"):
        LocalEmbedder()._load()
