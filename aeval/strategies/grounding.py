"""Judged grounding: is the answer supported by what the system retrieved and its tools returned.

The *grounding* of a sample is the documents of its trace's retrievals, the results of its
tool calls and the passages of its ``context:`` key, cut to :data:`GROUNDING_BUDGET`
characters. Each strategy asks a judge (any :class:`~aeval.abc.ChatModel`) for a JSON object
in the server's JSON mode, through the same :class:`Judge` machinery as
:class:`~aeval.strategies.AiJudgeStrategy` (cache, one re-ask of an unreadable reply, usage),
and always sends ``max_tokens``. A reply that cannot be read, or one with nothing to score
(an answer without claims), gives an *unscored* row with the reason, never 0, 1 or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, Unpack

from .._model_types import ChatMessage, ChatOptions, accepts_options, model_name
from .._reporting._results import EvaluationResult
from .._util._numbers import truncate
from ..abc import ChatModel, Embedder
from ._base import NamedStrategy
from ._cache import JudgeCache
from ._consult import Consultation, Judge
from ._grounding_collect import GROUNDING_BUDGET, Grounding, collect_grounding
from ._judge_parse import ParseError, json_object
from ._judge_prompt import check_number, expected_text, question_of, text_of
from .similarity import cosine_similarity

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "GROUNDING_BUDGET",
    "GROUNDING_MAX_TOKENS",
    "AnswerRelevancyStrategy",
    "ContextPrecisionStrategy",
    "ContextRecallStrategy",
    "FaithfulnessStrategy",
    "Grounding",
    "collect_grounding",
]

GROUNDING_MAX_TOKENS = 1024
"""The default ``max_tokens`` of a grounding judge's reply (a JSON list of claims)."""

_VERDICTS = ("supported", "contradicted", "not_found")


def _verdict(value: Any) -> str | None:
    """A claim's verdict as one of :data:`_VERDICTS` (``"Not found"`` reads), or ``None``."""
    if not isinstance(value, str):
        return None
    spelled = value.strip().lower().replace(" ", "_").replace("-", "_")
    return spelled if spelled in _VERDICTS else None


_SHOWN = 200

Items = list[dict[str, Any]]
Fields = Mapping[str, Callable[[Any], bool]]


def _items(reply: str, key: str, fields: Mapping[str, Callable[[Any], bool]]) -> Items | str:
    """The list under ``key`` of a JSON reply, each item checked, or what is wrong."""
    found = json_object(reply)
    if found is None:
        return "it is not a JSON object"
    value = found.get(key)
    if not isinstance(value, list):
        return f'it has no "{key}" list'
    items: Items = []
    for index, item in enumerate(value, 1):
        if not isinstance(item, dict):
            return f'item {index} of "{key}" is not an object'
        for field, valid in fields.items():
            if not valid(item.get(field)):
                return f'item {index} of "{key}" has no valid "{field}"'
        items.append(item)
    return items


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


class _JudgeOptions(TypedDict, total=False):
    """The keyword arguments every grounding judge takes besides its threshold."""

    budget: int
    max_tokens: int
    cache: JudgeCache | None
    name: str | None


class _GroundingJudge(NamedStrategy):
    """What the judged grounding strategies share: the judge, the reply, the metadata."""

    __slots__ = ("_budget", "_cached", "_judge", "_model_name", "_threshold")

    _key: ClassVar[str] = ""
    _fields: ClassVar[Fields] = {}
    _format: ClassVar[str] = ""

    def __init__(
        self,
        model: ChatModel,
        *,
        threshold: float = 0.5,
        budget: int = GROUNDING_BUDGET,
        max_tokens: int = GROUNDING_MAX_TOKENS,
        cache: JudgeCache | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(
                "model must be a chat model with an async chat(messages, *, json_mode) "
                f"method (e.g. aeval.models.OpenAIChatModel), got {type(model).__name__}"
            )
        threshold = check_number(threshold, "threshold")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold:g}")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive number of characters, got {budget!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if cache is not None and not isinstance(cache, JudgeCache):
            raise TypeError(f"cache must be a JudgeCache or None, got {type(cache).__name__}")
        super().__init__(name=name)
        self._model_name = model_name(model) or type(model).__name__
        self._threshold = threshold
        self._budget = budget
        self._cached = cache is not None
        options = ChatOptions(max_tokens=max_tokens) if accepts_options(model) else None
        self._judge = Judge(
            model,
            self._model_name,
            options=options,
            json_mode=True,
            cache=cache,
            cache_name=self._model_name,
        )

    def _read(self, reply: str, cut_off: str | None) -> bool | ParseError:
        items = _items(reply, self._key, self._fields)
        if isinstance(items, str):
            if cut_off is not None:
                return ParseError(
                    f"the reply was cut off at {cut_off} ({items}); raise max_tokens",
                    cut_off=True,
                )
            return ParseError(items)
        return True

    def _corrective(self, reason: str) -> str:
        return f"Your reply could not be read: {reason}. Reply with JSON only: {self._format}"

    def _parsed(self, reply: str) -> list[Any]:
        """The items of a reply :meth:`_read` accepted."""
        items = _items(reply, self._key, self._fields)
        assert not isinstance(items, str)
        return items

    async def _ask(self, prompt: str) -> tuple[list[Any] | None, dict[str, Any], str]:
        """The judge's items (``None`` when unreadable), the row's metadata, the problem."""
        consultation = await self._judge.consult(
            [ChatMessage("user", prompt)], self._read, self._corrective
        )
        if consultation.error is not None:
            raise consultation.error
        metadata = _metadata(consultation, self._model_name, cached=self._cached)
        if not consultation.readable:
            verdict = consultation.verdict
            reason = verdict.reason if isinstance(verdict, ParseError) else "unread"
            again = "" if consultation.not_reasked else ", even when asked again"
            problem = (
                f"The judge's reply could not be read{again} ({reason}): "
                f"{truncate(repr(consultation.reply), _SHOWN)}"
            )
            return None, metadata, problem
        return self._parsed(consultation.reply), metadata, ""

    async def _ask_grounded(
        self, sample: EvaluationSample, template: str, what: str, **fields: str
    ) -> tuple[list[Any], dict[str, Any], Grounding] | EvaluationResult:
        """The judge's items on ``sample``'s grounding, the row's metadata and the grounding,
        or the unscored row (no grounding, or an unreadable reply).

        ``template`` is filled with the grounding, the question and each of ``fields``.
        """
        grounding = collect_grounding(sample, budget=self._budget)
        if (ungrounded := self._ungrounded(grounding, what)) is not None:
            return ungrounded
        prompt = template.replace("{grounding}", grounding.text()).replace(
            "{question}", question_of(sample)
        )
        for field, text in fields.items():
            prompt = prompt.replace("{" + field + "}", text)
        items, metadata, problem = await self._ask(prompt)
        metadata.update(grounding.metadata(self._budget))
        if items is None:
            return EvaluationResult.unscored(problem, metadata)
        return items, metadata, grounding

    def _ungrounded(self, grounding: Grounding, what: str) -> EvaluationResult | None:
        """The unscored row of a sample with no grounding at all (no judge is asked), else
        ``None``."""
        if grounding.passages:
            return None
        return EvaluationResult.unscored(
            "Nothing grounds the answer: nothing was retrieved (no record_retrieval in the "
            "trace), no tool returned a result and the sample has no context:, so there is "
            f"nothing to {what}",
            grounding.metadata(self._budget),
        )

    def _scored(self, score: float, explanation: str, metadata: dict[str, Any]) -> EvaluationResult:
        metadata["threshold"] = self._threshold
        return EvaluationResult(score >= self._threshold, score, explanation, metadata)

    def _config(self) -> dict[str, Any]:
        return {"model": self._model_name, "threshold": self._threshold}


def _metadata(consultation: Consultation, name: str, *, cached: bool) -> dict[str, Any]:
    usage = consultation.usage
    metadata: dict[str, Any] = {
        "judge_model": consultation.model or name,
        "raw_reply": consultation.reply,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "retries": consultation.retries,
    }
    if consultation.reasked:
        metadata["reasked"] = True
        metadata["first_reply"] = consultation.calls[0][0].text
    if consultation.limit is not None:
        metadata["max_tokens"] = consultation.limit
    if cached:
        metadata["cached"] = all(hit for _, hit in consultation.calls)
    if consultation.cut_off:
        metadata["cut_off"] = True
        metadata["finish_reason"] = "length"
    return metadata


FAITHFULNESS_PROMPT = """\
You check whether an answer is grounded in the sources it was given.

Sources:
{grounding}

Question: {question}
Answer: {response}

Split the answer into its atomic factual claims. For each claim, give the verdict \
"supported" (the sources state it), "contradicted" (the sources state otherwise) or \
"not_found" (the sources do not say). Reply with JSON only: \
{"claims": [{"claim": "...", "verdict": "supported"}]}; an answer that makes no factual \
claim gets {"claims": []}.
"""


class FaithfulnessStrategy(_GroundingJudge):
    """Is every claim of the answer supported by the sample's grounding?

    The judge splits the answer into atomic claims and gives each a verdict against the
    grounding (see :func:`collect_grounding`): ``supported``, ``contradicted`` or
    ``not_found``. The score is the share of supported claims; the row passes at
    ``threshold`` (1.0 by default: every claim supported). The metadata holds ``claims``
    (each ``{"claim", "verdict"}``), ``supported``, ``contradicted`` and ``not_found``
    counts, and ``grounding_truncated`` with the full size when the grounding was cut to
    ``budget`` characters. An answer without claims, or a reply that cannot be read after
    one re-ask, is unscored with the reason.

    Args:
        model: The judge chat model.
        threshold: The share of supported claims that passes.
        budget: The most characters of grounding shown to the judge.
        max_tokens: The most tokens of the judge's reply.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        name: The name of the strategy's rows.

    Example:
        >>> strategy = FaithfulnessStrategy(judge_model)  # doctest: +SKIP
    """

    __slots__ = ()

    _key = "claims"
    _fields: ClassVar[Fields] = {"claim": _is_text, "verdict": lambda v: _verdict(v) is not None}
    _format = '{"claims": [{"claim": "...", "verdict": "supported|contradicted|not_found"}]}'

    def __init__(
        self, model: ChatModel, *, threshold: float = 1.0, **options: Unpack[_JudgeOptions]
    ) -> None:
        super().__init__(model, threshold=threshold, **options)

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge each claim of ``output`` against the sample's grounding."""
        if output is None:
            return EvaluationResult.failing("output is None")
        asked = await self._ask_grounded(
            sample, FAITHFULNESS_PROMPT, "check its claims against", response=text_of(output)
        )
        if isinstance(asked, EvaluationResult):
            return asked
        items, metadata, grounding = asked
        claims = [{"claim": i["claim"], "verdict": _verdict(i["verdict"])} for i in items]
        metadata["claims"] = claims
        counts = {v: sum(c["verdict"] == v for c in claims) for v in _VERDICTS}
        metadata.update(counts)
        if not claims:
            return EvaluationResult.unscored(
                "The judge found no factual claim in the answer, so there is nothing to check "
                "against the grounding",
                metadata,
            )
        score = counts["supported"] / len(claims)
        said = (
            f"{counts['supported']} of {len(claims)} claims supported"
            f", {counts['contradicted']} contradicted, {counts['not_found']} not found"
        )
        unsupported = [c["claim"] for c in claims if c["verdict"] != "supported"]
        if unsupported:
            said += ": " + "; ".join(f"{truncate(c, 120)}" for c in unsupported[:5])
        if grounding.truncated:
            said += f" (the grounding was cut to {self._budget} characters)"
        return self._scored(score, said, metadata)


CONTEXT_RECALL_PROMPT = """\
You check whether retrieved documents hold the facts of a reference answer.

Retrieved documents:
{grounding}

Question: {question}
Reference answer: {expected_output}

Split the reference answer into its statements. For each, say whether it can be attributed \
to the retrieved documents. Reply with JSON only: \
{"statements": [{"statement": "...", "attributed": true}]}.
"""


class ContextRecallStrategy(_GroundingJudge):
    """How much of the reference answer the retrieved documents hold.

    The judge splits the sample's expected output into statements and says of each whether
    it can be attributed to the grounding; the score is the attributed share. Needs an
    expected output (a sample without one is an error row saying to add one). The metadata
    holds ``statements`` (each ``{"statement", "attributed"}``); a reply that cannot be
    read, or one without statements, is unscored.

    Args:
        model: The judge chat model.
        threshold: The attributed share that passes.
        budget: The most characters of grounding shown to the judge.
        max_tokens: The most tokens of the judge's reply.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        name: The name of the strategy's rows.
    """

    __slots__ = ()

    _key = "statements"
    _fields: ClassVar[Fields] = {"statement": _is_text, "attributed": _is_bool}
    _format = '{"statements": [{"statement": "...", "attributed": true}]}'

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge which statements of the expected output the grounding holds."""
        expected = sample.expected_output
        if expected is None or (isinstance(expected, list | tuple) and not expected):
            raise ValueError(
                f"Sample {sample.name!r} has no expected output, and ContextRecallStrategy "
                "measures how much of the reference answer the retrieved documents hold: add "
                "expected-output to the sample"
            )
        asked = await self._ask_grounded(
            sample,
            CONTEXT_RECALL_PROMPT,
            "find the reference in",
            expected_output=expected_text(expected),
        )
        if isinstance(asked, EvaluationResult):
            return asked
        items, metadata, _ = asked
        statements = [{"statement": i["statement"], "attributed": i["attributed"]} for i in items]
        metadata["statements"] = statements
        if not statements:
            return EvaluationResult.unscored(
                "The judge found no statement in the reference answer", metadata
            )
        attributed = sum(bool(s["attributed"]) for s in statements)
        score = attributed / len(statements)
        said = f"{attributed} of {len(statements)} statements of the reference answer retrieved"
        return self._scored(score, said, metadata)


CONTEXT_PRECISION_PROMPT = """\
You check which retrieved documents are useful to answer a question.

Question: {question}
{reference}
Retrieved documents, best first:
{grounding}

For each document, in order, say whether it is useful to answer the question. Reply with \
JSON only, one entry per document: {"documents": [{"document": 1, "useful": true}]}.
"""


class ContextPrecisionStrategy(_GroundingJudge):
    """Are the useful retrieved documents ranked first? The average precision, judged.

    The judge says of each retrieved document (the trace's, best first; the sample's
    ``context:`` passages when nothing was retrieved) whether it is useful to answer the
    question (with the expected output as a hint when the sample has one). The score is the
    average precision: the mean, over the useful documents, of the precision at each one's
    rank; no useful document scores 0. The metadata holds ``documents`` (each
    ``{"document", "useful"}``). No document to judge, or a reply that cannot be read or
    does not judge every document, is unscored.

    Args:
        model: The judge chat model.
        threshold: The average precision that passes.
        budget: The most characters of documents shown to the judge.
        max_tokens: The most tokens of the judge's reply.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        name: The name of the strategy's rows.
    """

    __slots__ = ()

    _key = "documents"
    _fields: ClassVar[Fields] = {"useful": _is_bool}
    _format = '{"documents": [{"document": 1, "useful": true}]}'

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge each retrieved document's use and score their average precision."""
        grounding = collect_grounding(sample, budget=self._budget)
        ranked = Grounding(grounding.documents, grounding.documents, 0, False)
        if not ranked.passages:
            return EvaluationResult.unscored(
                "Nothing was retrieved (no record_retrieval in the trace and no context: in "
                "the sample), so there is no ranking to judge"
            )
        expected = sample.expected_output
        reference = "" if expected is None else f"Reference answer: {expected_text(expected)}\n"
        prompt = (
            CONTEXT_PRECISION_PROMPT.replace("{question}", question_of(sample))
            .replace("{reference}", reference)
            .replace("{grounding}", ranked.text()[: self._budget])
        )
        items, metadata, problem = await self._ask(prompt)
        if items is None:
            return EvaluationResult.unscored(problem, metadata)
        useful = [bool(i["useful"]) for i in items]
        metadata["documents"] = [
            {"document": rank, "useful": flag} for rank, flag in enumerate(useful, 1)
        ]
        if len(useful) != len(ranked.passages):
            return EvaluationResult.unscored(
                f"The judge judged {len(useful)} documents, but {len(ranked.passages)} were "
                "retrieved",
                metadata,
            )
        hits = 0
        total = 0.0
        for rank, flag in enumerate(useful, 1):
            if flag:
                hits += 1
                total += hits / rank
        score = total / hits if hits else 0.0
        said = f"{hits} of {len(useful)} documents useful, average precision {score:.2f}"
        return self._scored(score, said, metadata)


ANSWER_RELEVANCY_PROMPT = """\
Write {count} different questions that the answer below answers, as a user would ask them.

Answer: {response}

Reply with JSON only: {"questions": ["..."]}; an answer that answers nothing (a refusal, \
an evasion) gets {"questions": []}.
"""


class AnswerRelevancyStrategy(_GroundingJudge):
    """Does the answer answer the question asked? Questions written back from the answer.

    The judge writes ``questions`` questions the answer answers; the score is their mean
    cosine with the sample's question (its ``question`` parameter, else its parameters),
    embedded by ``embedder`` (negative cosines count 0). The metadata holds the
    ``questions`` and each one's ``similarities``. An answer that answers nothing, or a reply
    that cannot be read, is unscored.

    Args:
        model: The judge chat model.
        embedder: Anything with the ``Embedder`` protocol's ``embed`` method (e.g.
            ``aeval.models.LocalEmbedder`` offline).
        questions: How many questions the judge writes.
        threshold: The mean cosine that passes.
        max_tokens: The most tokens of the judge's reply.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        name: The name of the strategy's rows.
    """

    __slots__ = ("_count", "_embedder")

    _key = "questions"
    _format = '{"questions": ["...", "..."]}'

    def __init__(
        self,
        model: ChatModel,
        embedder: Embedder,
        *,
        questions: int = 3,
        threshold: float = 0.7,
        max_tokens: int = 512,
        cache: JudgeCache | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(getattr(embedder, "embed", None)):
            raise TypeError(
                "embedder must have an async embed(texts) method (e.g. "
                f"aeval.models.LocalEmbedder), got {type(embedder).__name__}"
            )
        if isinstance(questions, bool) or not isinstance(questions, int) or questions < 1:
            raise ValueError(f"questions must be a positive integer, got {questions!r}")
        super().__init__(model, threshold=threshold, max_tokens=max_tokens, cache=cache, name=name)
        self._embedder = embedder
        self._count = questions

    def _read(self, reply: str, cut_off: str | None) -> bool | ParseError:
        found = json_object(reply)
        value = None if found is None else found.get(self._key)
        if isinstance(value, list) and all(_is_text(q) for q in value):
            return True
        reason = 'it has no "questions" list of texts'
        if cut_off is not None:
            return ParseError(f"the reply was cut off at {cut_off}; raise max_tokens", True)
        return ParseError(reason)

    def _parsed(self, reply: str) -> list[Any]:
        found = json_object(reply) or {}
        return list(found.get(self._key, []))

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Ask for questions ``output`` answers and compare them with the real question."""
        if output is None:
            return EvaluationResult.failing("output is None")
        prompt = ANSWER_RELEVANCY_PROMPT.replace("{count}", str(self._count)).replace(
            "{response}", text_of(output)
        )
        questions, metadata, problem = await self._ask(prompt)
        if questions is None:
            return EvaluationResult.unscored(problem, metadata)
        written = [str(q) for q in questions]
        metadata["questions"] = written
        if not written:
            return EvaluationResult.unscored(
                "The judge found no question the answer answers (a refusal or an evasion)",
                metadata,
            )
        question = question_of(sample)
        embeddings = await self._embedder.embed([question, *written])
        vectors = list(embeddings.vectors)
        similarities = [max(0.0, cosine_similarity(vectors[0], v)) for v in vectors[1:]]
        metadata["similarities"] = similarities
        metadata["embedding_model"] = embeddings.model
        score = math.fsum(similarities) / len(similarities)
        return self._scored(
            score, f"mean similarity {score:.2f} of {len(written)} questions", metadata
        )

    def _config(self) -> dict[str, Any]:
        return {**super()._config(), "questions": self._count}
