"""The AI judge: a chat model decides whether an output is correct.

A port of the upstream ``AiJudgeStrategy`` (seed 000) with the structured 0-100 / 1-5 judging
of seeds 000 and 003. The strategy depends only on the :class:`~aeval.abc.ChatModel`
protocol, so any client (the OpenAI-compatible one, a fake in a test) can judge.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import anyio

from .._engine._apply import apply_strategy
from .._engine._callables import strategy_name
from .._model_types import ChatMessage, ChatOptions, accepts_options, model_name
from .._reporting._results import EvaluationResult
from .._util._numbers import truncate
from ..abc import ChatModel
from ..trace import current, render_trace
from ._base import NamedStrategy
from ._cache import JudgeCache
from ._consult import Consultation, Judge, Verdict, add_retries, limit_text
from ._judge_parse import ParseError, StructuredVerdict, parse_structured, parse_verdict
from ._judge_prompt import (
    DEFAULT_PROMPT,
    STRUCTURED_MAX_TOKENS,
    STRUCTURED_PROMPT,
    VERDICT_MAX_TOKENS,
    check_number,
    check_prices,
    check_scale,
    expected_text,
    format_instruction,
    judge_names,
    question_of,
    text_of,
)

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "DEFAULT_PROMPT",
    "STRUCTURED_MAX_TOKENS",
    "STRUCTURED_PROMPT",
    "VERDICT_MAX_TOKENS",
    "AiJudgeStrategy",
    "JudgeOptions",
]

logger = logging.getLogger("aeval.strategies")

Aggregate = Literal["majority", "mean"]

_SHOWN = 200
_DEFAULT_SCALE = (0.0, 100.0)
_DEFAULT_THRESHOLD = 0.5


class JudgeOptions(TypedDict, total=False):
    """The options of :class:`AiJudgeStrategy` that a judge built on it passes through
    unchanged (see its Args)."""

    threshold: float | None
    cache: JudgeCache | None
    prices: Mapping[str, tuple[float, float]] | None
    system_prompt: str | None
    max_tokens: int | None
    temperature: float | None
    seed: int | None
    aggregate: Aggregate
    name: str | None


class AiJudgeStrategy(NamedStrategy):
    """Ask a chat model (or several) whether the output is correct.

    **True/false mode** (the default, as upstream). The prompt is built by literal
    replacement: ``{response}`` first, then ``{expected_output}``, then ``{question}``
    (the sample's ``question`` parameter when it has one, else its parameters joined by new
    lines), then ``{trace}`` (what the agent did, one call per line with its arguments and
    result, cut to a few hundred characters each; a note when nothing was recorded). As
    upstream, a placeholder written inside an output is replaced too. The reply is read
    robustly: it must *start* with true/false/pass/fail after markdown and a label such
    as ``Answer:`` are stripped, so ``"True."``, ``"**true**"`` and ``"true, because…"`` are
    read (upstream reads them as false) while ``"yes"`` is not (it is asked again). A verdict
    scores 1.0 or 0.0 and the explanation is the reply.

    **Structured mode** (``structured=True``). The judge is asked, in the server's JSON mode,
    for ``{"score": …, "passed": …, "explanation": …}`` with the score on ``scale`` (0-100 by
    default; ``(1, 5)`` also reads seed 003's ``{"score": 1-5, "reason": …}``). The score is
    normalised to ``(score - lowest) / (highest - lowest)``. The judge's own ``passed`` wins
    when it is true or false; when the reply omits it, or gives something else (``1``,
    ``"yes"``, ``100``), the row passes when the normalised score is at least ``threshold``
    (0.5 by default: 50 of 100, 3 of 1-5), and ``decided_by`` in the metadata says which
    (``"judge"`` or ``"threshold"``; ``passed_ignored`` holds a value that was not read). A
    custom prompt that does not mention JSON gets the format instruction appended, as JSON
    mode requires.

    **Token limit.** Every call sends ``max_tokens`` (to models whose ``chat`` accepts
    ``options``): :data:`VERDICT_MAX_TOKENS` in true/false mode,
    :data:`STRUCTURED_MAX_TOKENS` in structured mode, unless given. A reply the server cut
    off there (``finish_reason: "length"``) is read as far as it goes: a JSON verdict whose
    score was complete is used and says so (``cut_off`` and ``salvaged`` in the metadata,
    and the explanation); one cut before its score is not asked again (the same limit would
    cut it again) and is unscored, saying to raise ``max_tokens``.

    **Unreadable replies.** Any other unreadable reply is asked again once, the conversation
    continued with the reply and a message that says what was wrong and which format is
    needed. If that reply cannot be read either, the row is *unscored* (score ``None``, its
    own outcome, counted in the report) with the raw reply in the metadata (``repeated``
    when the judge gave the same reply twice), or, when ``fallback`` is given, that strategy
    scores the row and the metadata says ``"fallback": <its name>``. A model call that
    raises (a network error after its retries) is scored by the fallback too, the metadata
    saying why (``judge_error``); without a fallback it is not caught and the Scorer records
    an error row, whose ``retries`` count every call the judge made for the row.

    **Several judges** (``model=[a, b, c]``, or one model several times with a
    ``temperature`` above 0; judge ``i`` then gets ``seed + i``). Each judge is consulted as
    above, concurrently, and the row is decided from the readable verdicts: by majority
    (``aggregate="majority"``, a tie fails) or by their mean score against ``threshold``
    (``aggregate="mean"``). The score is the judges' mean score. The metadata holds
    ``votes`` (``"2/3"``), ``agreement`` (the share of readable judges that agree with the
    decision) and each judge's verdict under ``judges``; a judge whose reply cannot be read
    or whose call fails sits out. The row is unscored when no judge could be read.

    **Metadata.** ``judge_model``, ``raw_reply`` (the last reply), ``prompt_tokens``,
    ``completion_tokens`` and ``retries`` summed over every call (``reasked`` and
    ``first_reply`` are set when the judge was asked again), ``max_tokens`` and
    ``finish_reason``, ``cost`` in USD when ``prices`` has the model, ``cached`` when a cache
    is used (a cached call counts 0 tokens, 0 retries and 0 cost; an unreadable reply is
    never cached, so the next run asks again), ``judges`` (one record per judge, which the
    report's judge statistics count), and in structured mode ``raw_score``, ``scale`` and
    ``threshold``.

    Args:
        model: The judge: anything with the ``ChatModel`` protocol's ``chat`` method, or a
            list of them for several judges.
        prompt: The user message template; the default depends on the mode
            (:data:`DEFAULT_PROMPT` or :data:`STRUCTURED_PROMPT`).
        structured: Ask for a JSON score instead of true/false.
        scale: The (lowest, highest) score of structured mode.
        threshold: The normalised score (0-1) that passes when the judge gives no ``passed``
            (and the mean score that passes with ``aggregate="mean"``).
        fallback: A strategy that scores rows whose replies stay unreadable.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        prices: ``{"model-name": (usd_per_1k_prompt_tokens, usd_per_1k_completion_tokens)}``;
            the row's cost uses the model the server names, else the configured model.
        system_prompt: A system message sent before the prompt.
        max_tokens: The most tokens a reply may have; the mode's default when ``None``.
        temperature: The sampling temperature sent, if any (else the model client's).
        seed: The sampling seed sent, if any.
        stop: Texts at which the server stops generating, if any.
        aggregate: How several judges decide: ``"majority"`` or ``"mean"``.
        name: The name the report gives this strategy's rows; the class name by default.

    Raises:
        TypeError: An option has the wrong type.
        ValueError: An option is out of range, or ``prices`` lacks a judge model.

    Example:
        >>> judge = AiJudgeStrategy(my_model, structured=True, scale=(1, 5))  # doctest: +SKIP
    """

    __slots__ = (
        "_aggregate",
        "_cache",
        "_fallback",
        "_judges",
        "_model",
        "_model_name",
        "_prices",
        "_prompt",
        "_scale",
        "_structured",
        "_system_prompt",
        "_threshold",
    )

    def __init__(
        self,
        model: ChatModel | Sequence[ChatModel],
        prompt: str | None = None,
        *,
        structured: bool = False,
        scale: tuple[float, float] = _DEFAULT_SCALE,
        threshold: float | None = None,
        fallback: Any = None,
        cache: JudgeCache | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        system_prompt: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        stop: str | Sequence[str] | None = None,
        aggregate: Aggregate = "majority",
        name: str | None = None,
    ) -> None:
        models: list[ChatModel] = (
            list(model) if isinstance(model, list | tuple) else [model]  # type: ignore[list-item]
        )
        if not models:
            raise ValueError("model must be a chat model or a non-empty list of them")
        for each in models:
            if not isinstance(each, ChatModel):
                raise TypeError(
                    "model must be a chat model with an async chat(messages, *, json_mode) "
                    f"method (e.g. aeval.models.OpenAIChatModel), got {type(each).__name__}"
                )
        if prompt is not None and (not isinstance(prompt, str) or "{response}" not in prompt):
            raise ValueError(
                "prompt must be a string holding the {response} placeholder (and usually "
                f"{{expected_output}} and {{question}}), got {truncate(repr(prompt), 80)}"
            )
        if not isinstance(structured, bool):
            raise TypeError(f"structured must be True or False, got {structured!r}")
        if aggregate not in ("majority", "mean"):
            raise ValueError(f"aggregate must be 'majority' or 'mean', got {aggregate!r}")
        checked_scale = check_scale(scale)
        if threshold is not None:
            threshold = check_number(threshold, "threshold")
            if not 0.0 <= threshold <= 1.0:
                raise ValueError(
                    f"threshold is a normalised score between 0 and 1, got {threshold:g}; "
                    "for 3 on a 1-5 scale write threshold=0.5"
                )
        if not structured and (
            checked_scale != _DEFAULT_SCALE or (threshold is not None and aggregate != "mean")
        ):
            raise ValueError("scale and threshold apply to structured=True judging only")
        if fallback is not None and not callable(getattr(fallback, "evaluate", None)):
            raise TypeError(
                "fallback must be a strategy with an evaluate(sample, output) method, "
                f"got {type(fallback).__name__}"
            )
        if cache is not None and not isinstance(cache, JudgeCache):
            raise TypeError(f"cache must be a JudgeCache or None, got {type(cache).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a string or None, got {system_prompt!r}")
        default_tokens = STRUCTURED_MAX_TOKENS if structured else VERDICT_MAX_TOKENS
        options = ChatOptions(
            max_tokens=default_tokens if max_tokens is None else max_tokens,
            temperature=temperature,
            seed=seed,
            stop=stop,
        )
        super().__init__(name=name)
        names = [model_name(each) or type(each).__name__ for each in models]
        table = None if prices is None else check_prices(prices)
        for judge_model in dict.fromkeys(names):
            if table is not None and judge_model not in table:
                raise ValueError(
                    f"prices has no entry for the judge model {judge_model!r} "
                    f"(it has {sorted(table)}); add one to compute costs"
                )
        self._model = models[0]
        self._model_name = names[0]
        self._prices = table
        self._structured = structured
        self._scale = checked_scale
        self._threshold = _DEFAULT_THRESHOLD if threshold is None else threshold
        self._aggregate: Aggregate = aggregate
        self._prompt = self._build_prompt(prompt)
        self._fallback = fallback
        self._cache = cache
        self._system_prompt = system_prompt
        explicit = any(v is not None for v in (max_tokens, temperature, seed, stop))
        self._judges = tuple(
            self._judge(each, label, index, options, explicit=explicit)
            for index, (each, label) in enumerate(zip(models, judge_names(names), strict=True))
        )

    def _judge(
        self, model: ChatModel, label: str, index: int, options: ChatOptions, *, explicit: bool
    ) -> Judge:
        sent: ChatOptions | None = options
        if options.seed is not None and index:
            sent = options.merged(ChatOptions(seed=options.seed + index))
        if not accepts_options(model):
            if explicit:
                logger.warning(
                    "the chat model %s takes no options=, so max_tokens, temperature, seed and "
                    "stop are not sent to it; add `options: ChatOptions | None = None` to its "
                    "chat() to receive them",
                    label,
                )
            sent = None
        return Judge(
            model,
            label,
            options=sent,
            json_mode=self._structured,
            cache=self._cache,
            cache_name=label,
        )

    @property
    def prompt(self) -> str:
        """The user message template, with the format instruction in structured mode."""
        return self._prompt

    @property
    def options(self) -> ChatOptions | None:
        """The options sent to the (first) judge: ``max_tokens`` and the sampling options."""
        return self._judges[0].options

    def _build_prompt(self, prompt: str | None) -> str:
        if not self._structured:
            return DEFAULT_PROMPT if prompt is None else prompt
        low, high = self._scale
        if prompt is None:
            prompt = STRUCTURED_PROMPT.replace("{low}", f"{low:g}").replace("{high}", f"{high:g}")
        elif "json" in prompt.lower():
            return prompt
        return prompt.rstrip("\n") + "\n\n" + format_instruction(self._scale)

    def render(self, sample: EvaluationSample, output: Any) -> str:
        """The prompt the judge receives for ``output`` of ``sample``."""
        prompt = (
            self._prompt.replace("{response}", text_of(output))
            .replace("{expected_output}", expected_text(sample.expected_output))
            .replace("{question}", question_of(sample))
        )
        return prompt.replace("{trace}", render_trace(current())) if "{trace}" in prompt else prompt

    def _read(self, reply: str, cut_off: str | None) -> Verdict:
        if self._structured:
            return parse_structured(reply, self._scale, cut_off=cut_off)
        return parse_verdict(reply, cut_off=cut_off)

    def _corrective(self, reason: str) -> str:
        if self._structured:
            return f"Your reply could not be read: {reason}. {format_instruction(self._scale)}"
        return (
            f"Your reply could not be read: {reason}. Reply with one word only: true if the "
            "response is correct, false if it is not."
        )

    def _decide(self, verdict: bool | StructuredVerdict) -> tuple[bool, float, dict[str, Any]]:
        """The verdict's pass and score, and what the metadata says of how it was decided."""
        if isinstance(verdict, bool):
            return verdict, 1.0 if verdict else 0.0, {}
        facts: dict[str, Any] = {"raw_score": verdict.raw_score}
        if verdict.passed is not None:
            facts["decided_by"] = "judge"
            return verdict.passed, verdict.score, facts
        facts["decided_by"] = "threshold"
        if verdict.passed_value is not None:
            facts["passed_ignored"] = verdict.passed_value
        return verdict.score >= self._threshold, verdict.score, facts

    def _record(self, consultation: Consultation, *, reply: bool) -> dict[str, Any]:
        """One judge's part of a row, as the report's judge statistics count it."""
        verdict = consultation.verdict
        record: dict[str, Any] = {"judge": consultation.name}
        if consultation.error is not None:
            record["verdict"] = "error"
            record["error"] = f"{type(consultation.error).__name__}: {consultation.error}"
        elif verdict is None or isinstance(verdict, ParseError):
            record["verdict"] = "unscored"
        else:
            passed, score, _ = self._decide(verdict)
            record["verdict"] = "passed" if passed else "failed"
            record["score"] = score
        record.update(
            unreadable=consultation.unreadable_first,
            reasked=consultation.reasked,
            cut_off=consultation.cut_off,
            salvaged=consultation.salvaged,
        )
        if reply and consultation.calls:
            record["reply"] = consultation.reply
        return record

    def _metadata(self, consultations: Sequence[Consultation]) -> dict[str, Any]:
        single = len(consultations) == 1
        first = consultations[0]
        prompt_tokens = completion_tokens = retries = 0
        cost = 0.0
        for consultation in consultations:
            usage = consultation.usage
            prompt_tokens += usage.prompt_tokens
            completion_tokens += usage.completion_tokens
            retries += consultation.retries
            if self._prices is not None:
                configured = consultation.name.partition("#")[0]
                served = consultation.model or configured
                prompt_price, completion_price = self._prices.get(served, self._prices[configured])
                cost += (
                    usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price
                ) / 1000
        metadata: dict[str, Any] = {
            "judge_model": (first.model or self._model_name)
            if single
            else ", ".join(c.name for c in consultations),
            "raw_reply": first.reply if single else None,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "retries": retries,
        }
        if not single:
            del metadata["raw_reply"]
        if self._prices is not None:
            metadata["cost"] = cost
        if self._cache is not None:
            metadata["cached"] = all(cached for c in consultations for _, cached in c.calls)
        if single and first.reasked:
            metadata["reasked"] = True
            metadata["first_reply"] = first.calls[0][0].text
        if single and first.repeated:
            metadata["repeated"] = True
        if first.limit is not None:
            metadata["max_tokens"] = first.limit
        if single and first.calls:
            finish = first.calls[-1][0].metadata.get("finish_reason")
            if finish is not None:
                metadata["finish_reason"] = finish
            if first.cut_off:
                metadata["cut_off"] = True
            if first.salvaged:
                metadata["salvaged"] = True
        if self._structured:
            metadata["scale"] = list(self._scale)
            metadata["threshold"] = self._threshold
        metadata["judges"] = [self._record(c, reply=not single) for c in consultations]
        return metadata

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Ask the judge about ``output``; see the class documentation for the verdicts."""
        if output is None:
            return EvaluationResult.failing("output is None")
        expected = sample.expected_output
        if "{expected_output}" in self._prompt and (
            expected is None or (isinstance(expected, list | tuple) and not expected)
        ):
            raise ValueError(
                f"Sample {sample.name!r} has no expected output, and the judge's prompt compares "
                "the response with it ({expected_output}): add expected_output to the sample, or "
                "give AiJudgeStrategy a prompt that judges the response on its own (from "
                "{question} and {response})"
            )
        messages = [ChatMessage("user", self.render(sample, output))]
        if self._system_prompt is not None:
            messages.insert(0, ChatMessage("system", self._system_prompt))
        if len(self._judges) == 1:
            consultation = await self._judges[0].consult(messages, self._read, self._corrective)
            return await self._single(sample, output, consultation)
        consultations: list[Consultation | None] = [None] * len(self._judges)

        async def consult(index: int) -> None:
            judge = self._judges[index]
            consultations[index] = await judge.consult(messages, self._read, self._corrective)

        async with anyio.create_task_group() as group:
            for index in range(len(self._judges)):
                group.start_soon(consult, index)
        done = [c for c in consultations if c is not None]
        return await self._ensemble(sample, output, done)

    async def _failed(
        self, sample: EvaluationSample, output: Any, consultations: Sequence[Consultation]
    ) -> EvaluationResult:
        """Every call failed: the first error goes to the Scorer, or the fallback decides."""
        error = consultations[0].error
        assert error is not None
        add_retries(error, sum(c.retries for c in consultations[1:]))
        if self._fallback is None:
            raise error
        retries = getattr(error, "retries", 0)
        problem = f"The judge call failed ({type(error).__name__}: {error})"
        failure = {
            "judge_model": self._model_name,
            "judge_error": f"{type(error).__name__}: {error}",
            "retries": retries if isinstance(retries, int) else 0,
        }
        return await self._fall_back(sample, output, problem, failure)

    async def _single(
        self, sample: EvaluationSample, output: Any, consultation: Consultation
    ) -> EvaluationResult:
        if consultation.error is not None:
            return await self._failed(sample, output, [consultation])
        metadata = self._metadata([consultation])
        verdict = consultation.verdict
        reply = consultation.reply
        if verdict is None or isinstance(verdict, ParseError):
            problem = self._problem(consultation)
            return await self._unreadable(sample, output, problem, metadata)
        passed, score, facts = self._decide(verdict)
        metadata.update(facts)
        explanation = reply
        if isinstance(verdict, StructuredVerdict) and verdict.explanation is not None:
            explanation = verdict.explanation
        if consultation.salvaged:
            explanation += (
                f" (the reply was cut off at {limit_text(consultation.limit)} after its "
                "score, which is used)"
            )
        return EvaluationResult(passed, score, explanation, metadata)

    @staticmethod
    def _reason(consultation: Consultation) -> str:
        verdict = consultation.verdict
        if consultation.error is not None:
            return f"the call failed ({type(consultation.error).__name__})"
        return verdict.reason if isinstance(verdict, ParseError) else "unread"

    def _problem(self, consultation: Consultation) -> str:
        reason = self._reason(consultation)
        shown = truncate(repr(consultation.reply), _SHOWN)
        if consultation.not_reasked is not None:
            return (
                f"The judge's reply could not be read ({reason}; not asked again: "
                f"{consultation.not_reasked}): {shown}"
            )
        if consultation.repeated:
            return (
                "The judge's reply could not be read, even when asked again: it gave the "
                f"same reply ({reason}): {shown}"
            )
        return f"The judge's reply could not be read, even when asked again ({reason}): {shown}"

    async def _ensemble(
        self, sample: EvaluationSample, output: Any, consultations: Sequence[Consultation]
    ) -> EvaluationResult:
        if all(c.error is not None for c in consultations):
            return await self._failed(sample, output, consultations)
        metadata = self._metadata(consultations)
        metadata["aggregate"] = self._aggregate
        read = [c for c in consultations if c.readable]
        if not read:
            problem = f"None of the {len(consultations)} judges' replies could be read: " + (
                "; ".join(f"{c.name}: {self._reason(c)}" for c in consultations)
            )
            return await self._unreadable(sample, output, problem, metadata)
        decided = []
        for consultation in read:
            verdict = consultation.verdict
            assert isinstance(verdict, bool | StructuredVerdict)
            passed, score, _ = self._decide(verdict)
            decided.append((consultation, passed, score, verdict))
        votes = sum(passed for _, passed, _, _ in decided)
        score = math.fsum(score for _, _, score, _ in decided) / len(decided)
        if self._aggregate == "mean":
            passed = score >= self._threshold
            how = f"mean score {score:.2f} against the threshold {self._threshold:g}"
        else:
            passed = votes * 2 > len(decided)
            how = "majority, a tie fails" if votes * 2 == len(decided) else "majority"
        agreement = sum(p == passed for _, p, _, _ in decided) / len(decided)
        metadata.update(votes=f"{votes}/{len(decided)}", agreement=agreement)
        said = f"{votes} of {len(decided)} judges passed it ({how})"
        missing = len(consultations) - len(read)
        if missing:
            said += f"; {missing} could not be read or failed"
        reasons = [
            f"{c.name}: "
            + (v.explanation if isinstance(v, StructuredVerdict) and v.explanation else c.reply)
            for c, _, _, v in decided
        ]
        return EvaluationResult(passed, score, f"{said}. " + " | ".join(reasons), metadata)

    async def _unreadable(
        self,
        sample: EvaluationSample,
        output: Any,
        problem: str,
        metadata: dict[str, Any],
    ) -> EvaluationResult:
        if self._fallback is None:
            return EvaluationResult.unscored(problem, metadata)
        return await self._fall_back(sample, output, problem, metadata)

    async def _fall_back(
        self, sample: EvaluationSample, output: Any, problem: str, metadata: dict[str, Any]
    ) -> EvaluationResult:
        assert self._fallback is not None
        fallback_name = strategy_name(self._fallback)
        result = await apply_strategy(self._fallback.evaluate, fallback_name, sample, output)
        explanation = f"{problem}; scored by the fallback strategy {fallback_name}"
        if result.explanation:
            explanation += f": {result.explanation}"
        return EvaluationResult(
            result.passed,
            result.score,
            explanation,
            {**result.metadata, **metadata, "fallback": fallback_name},
        )

    def _config(self) -> dict[str, Any]:
        options: dict[str, Any] = {"model": self._model_name}
        if len(self._judges) > 1:
            options["model"] = [judge.name for judge in self._judges]
            options["aggregate"] = self._aggregate
        if self._structured:
            options["structured"] = True
            options["scale"] = self._scale
            options["threshold"] = self._threshold
        if self._fallback is not None:
            options["fallback"] = strategy_name(self._fallback)
        if self._cache is not None:
            options["cache"] = self._cache
        return options
