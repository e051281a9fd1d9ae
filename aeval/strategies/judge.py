"""The AI judge: a chat model decides whether an output is correct.

A port of the upstream ``AiJudgeStrategy`` (seed 000) with the structured 0-100 / 1-5 judging
of seeds 000 and 003. The strategy depends only on the :class:`~aeval.models.ChatModel`
protocol, so any client (the OpenAI-compatible one, a fake in a test) can judge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._callables import apply_strategy, strategy_name
from .._numbers import truncate
from .._protocols import ChatMessage, ChatModel, ChatResponse, TokenUsage, model_name
from .._results import EvaluationResult
from ._base import NamedStrategy
from ._cache import JudgeCache
from ._judge_parse import ParseError, StructuredVerdict, parse_structured, parse_verdict

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["DEFAULT_PROMPT", "STRUCTURED_PROMPT", "AiJudgeStrategy"]

DEFAULT_PROMPT = """\
You are an AI that judges a model's response by comparing it with the expected output.
Decide whether the model's response is correct.
Answer true if it is correct and false if it is not.

Response to evaluate: {response}
Expected output: {expected_output}

"""
"""The seed's true/false prompt, reworded; ``{response}`` and ``{expected_output}`` are
replaced (in that order) by the output and the sample's expected output."""

STRUCTURED_PROMPT = """\
You are an AI that judges a model's response to a question by comparing it with the \
expected output.

Question: {question}
Response to evaluate: {response}
Expected output: {expected_output}

Score how well the response matches the expected output, from {low} (wrong, invented or \
refused) to {high} (fully correct), and decide whether it passes.
"""
"""The structured-mode prompt; ``{low}`` and ``{high}`` are the scale's ends, and the JSON
format instruction is appended to it."""

_SHOWN = 200
_DEFAULT_SCALE = (0.0, 100.0)
_DEFAULT_THRESHOLD = 0.5


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _expected(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "One of:\n" + "\n".join(f"- {_text(item)}" for item in value)
    return _text(value)


def _question(sample: EvaluationSample) -> str:
    named = sample.parameters.as_dict()
    if "question" in named:
        return _text(named["question"])
    return "\n".join(_text(value) for value in sample.parameters)


def _check_number(value: object, option: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{option} must be a finite number, got {value!r}")
    return float(value)


def _check_scale(scale: object) -> tuple[float, float]:
    if not isinstance(scale, Sequence) or isinstance(scale, str) or len(scale) != 2:
        raise TypeError(f"scale must be a (lowest, highest) pair such as (1, 5), got {scale!r}")
    low, high = (_check_number(end, "scale") for end in scale)
    if low >= high:
        raise ValueError(f"scale must go from a lower to a higher score, got {scale!r}")
    return low, high


def _check_prices(prices: object) -> dict[str, tuple[float, float]]:
    if not isinstance(prices, Mapping):
        raise TypeError(
            "prices must map a model name to (USD per 1k prompt tokens, USD per 1k completion "
            f"tokens), got {prices!r}"
        )
    table: dict[str, tuple[float, float]] = {}
    for model, price in prices.items():
        if not isinstance(price, Sequence) or isinstance(price, str) or len(price) != 2:
            raise TypeError(
                f"prices[{model!r}] must be (USD per 1k prompt tokens, USD per 1k completion "
                f"tokens), got {price!r}"
            )
        prompt_price, completion_price = (_check_number(p, f"prices[{model!r}]") for p in price)
        if prompt_price < 0 or completion_price < 0:
            raise ValueError(f"prices[{model!r}] must not be negative, got {price!r}")
        table[str(model)] = (prompt_price, completion_price)
    return table


def _format(scale: tuple[float, float]) -> str:
    low, high = scale
    return (
        "Reply with only a JSON object, no other text:\n"
        f'{{"score": <a number from {low:g} to {high:g}>, "passed": <true or false>, '
        '"explanation": "<one sentence>"}'
    )


class AiJudgeStrategy(NamedStrategy):
    """Ask a chat model whether the output is correct.

    **True/false mode** (the default, as upstream). The prompt is built by literal
    replacement: ``{response}`` first, then ``{expected_output}``, then ``{question}``
    (the sample's ``question`` parameter when it has one, else its parameters joined by new
    lines). As upstream, a placeholder written inside an output is replaced too. The reply is
    read robustly: it must *start* with true/false/pass/fail after markdown and a label such
    as ``Answer:`` are stripped, so ``"True."``, ``"**true**"`` and ``"true, because…"`` are
    read (upstream reads them as false) while ``"yes"`` is not (it is asked again). A verdict
    scores 1.0 or 0.0 and the explanation is the reply.

    **Structured mode** (``structured=True``). The judge is asked, in the server's JSON mode,
    for ``{"score": …, "passed": …, "explanation": …}`` with the score on ``scale`` (0-100 by
    default; ``(1, 5)`` also reads seed 003's ``{"score": 1-5, "reason": …}``). The score is
    normalised to ``(score - lowest) / (highest - lowest)``. The judge's own ``passed`` wins;
    when the reply omits it the row passes when the normalised score is at least
    ``threshold`` (0.5 by default: 50 of 100, 3 of 1-5). A custom prompt that does not
    mention JSON gets the format instruction appended, as JSON mode requires.

    **Unreadable replies.** The judge is asked again once, with its reply and a message that
    says what was wrong and which format is needed. If that reply cannot be read either, the
    row is *unscored* (score ``None``, its own outcome, counted in the report) with the raw
    reply in the metadata, or, when ``fallback`` is given, that strategy scores the row and
    the metadata says ``"fallback": <its name>``. A model call that raises (a network error
    after its retries) is scored by the fallback too, the metadata saying why
    (``judge_error``); without a fallback it is not caught and the Scorer records an error row
    (with the retries made).

    **Metadata.** ``judge_model``, ``raw_reply`` (the last reply), ``prompt_tokens``,
    ``completion_tokens`` and ``retries`` summed over both calls when the judge was asked
    again (``reasked`` and ``first_reply`` are set then), ``cost`` in USD when ``prices``
    has the model, ``cached`` when a cache is used (a cached call counts 0 tokens, 0
    retries and 0 cost), and in structured mode ``raw_score``, ``scale`` and ``threshold``.

    Args:
        model: The judge; anything with the ``ChatModel`` protocol's ``chat`` method.
        prompt: The user message template; the default depends on the mode
            (:data:`DEFAULT_PROMPT` or :data:`STRUCTURED_PROMPT`).
        structured: Ask for a JSON score instead of true/false.
        scale: The (lowest, highest) score of structured mode.
        threshold: The normalised score (0-1) that passes when the judge gives no ``passed``.
        fallback: A strategy that scores rows whose replies stay unreadable.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        prices: ``{"model-name": (usd_per_1k_prompt_tokens, usd_per_1k_completion_tokens)}``;
            the row's cost uses the model the server names, else the configured model.
        system_prompt: A system message sent before the prompt.
        name: The name the report gives this strategy's rows; the class name by default.

    Raises:
        TypeError: An option has the wrong type.
        ValueError: An option is out of range, or ``prices`` lacks the judge model.

    Example:
        >>> judge = AiJudgeStrategy(my_model, structured=True, scale=(1, 5))  # doctest: +SKIP
    """

    __slots__ = (
        "_cache",
        "_fallback",
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
        model: ChatModel,
        prompt: str | None = None,
        *,
        structured: bool = False,
        scale: tuple[float, float] = _DEFAULT_SCALE,
        threshold: float | None = None,
        fallback: Any = None,
        cache: JudgeCache | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        system_prompt: str | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(
                "model must be a chat model with an async chat(messages, *, json_mode) method "
                f"(e.g. aeval.models.OpenAIChatModel), got {type(model).__name__}"
            )
        if prompt is not None and (not isinstance(prompt, str) or "{response}" not in prompt):
            raise ValueError(
                "prompt must be a string holding the {response} placeholder (and usually "
                f"{{expected_output}} and {{question}}), got {truncate(repr(prompt), 80)}"
            )
        if not isinstance(structured, bool):
            raise TypeError(f"structured must be True or False, got {structured!r}")
        checked_scale = _check_scale(scale)
        if threshold is not None:
            threshold = _check_number(threshold, "threshold")
            if not 0.0 <= threshold <= 1.0:
                raise ValueError(
                    f"threshold is a normalised score between 0 and 1, got {threshold:g}; "
                    "for 3 on a 1-5 scale write threshold=0.5"
                )
        if not structured and (threshold is not None or checked_scale != _DEFAULT_SCALE):
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
        super().__init__(name=name)
        self._model = model
        self._model_name = model_name(model) or type(model).__name__
        table = None if prices is None else _check_prices(prices)
        if table is not None and self._model_name not in table:
            raise ValueError(
                f"prices has no entry for the judge model {self._model_name!r} "
                f"(it has {sorted(table)}); add one to compute costs"
            )
        self._prices = table
        self._structured = structured
        self._scale = checked_scale
        self._threshold = _DEFAULT_THRESHOLD if threshold is None else threshold
        self._prompt = self._build_prompt(prompt)
        self._fallback = fallback
        self._cache = cache
        self._system_prompt = system_prompt

    @property
    def prompt(self) -> str:
        """The user message template, with the format instruction in structured mode."""
        return self._prompt

    def _build_prompt(self, prompt: str | None) -> str:
        if not self._structured:
            return DEFAULT_PROMPT if prompt is None else prompt
        low, high = self._scale
        if prompt is None:
            prompt = STRUCTURED_PROMPT.replace("{low}", f"{low:g}").replace("{high}", f"{high:g}")
        elif "json" in prompt.lower():
            return prompt
        return prompt.rstrip("\n") + "\n\n" + _format(self._scale)

    def render(self, sample: EvaluationSample, output: Any) -> str:
        """The prompt the judge receives for ``output`` of ``sample``."""
        return (
            self._prompt.replace("{response}", _text(output))
            .replace("{expected_output}", _expected(sample.expected_output))
            .replace("{question}", _question(sample))
        )

    def _parse(self, reply: str) -> bool | StructuredVerdict | ParseError:
        if self._structured:
            return parse_structured(reply, self._scale)
        return parse_verdict(reply)

    def _corrective(self, reason: str) -> str:
        if self._structured:
            return f"Your reply could not be read: {reason}. {_format(self._scale)}"
        return (
            f"Your reply could not be read: {reason}. Reply with one word only: true if the "
            "response is correct, false if it is not."
        )

    async def _chat(self, messages: list[ChatMessage]) -> tuple[ChatResponse, bool]:
        json_mode = self._structured
        if self._cache is None:
            return await self._model.chat(messages, json_mode=json_mode), False
        key = JudgeCache.key(self._model_name, messages, json_mode=json_mode)
        return await self._cache.get_or_call(
            key, lambda: self._model.chat(messages, json_mode=json_mode)
        )

    def _usage(self, calls: list[tuple[ChatResponse, bool]]) -> dict[str, Any]:
        last = calls[-1][0]
        model = last.model or self._model_name
        usage = TokenUsage()
        retries = 0
        for response, cached in calls:
            if not cached:
                usage += response.usage
                retries += response.retries
        metadata: dict[str, Any] = {
            "judge_model": model,
            "raw_reply": last.text,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "retries": retries,
        }
        if self._prices is not None:
            prompt_price, completion_price = self._prices.get(model, self._prices[self._model_name])
            metadata["cost"] = (
                usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price
            ) / 1000
        if self._cache is not None:
            metadata["cached"] = all(cached for _, cached in calls)
        if len(calls) > 1:
            metadata["reasked"] = True
            metadata["first_reply"] = calls[0][0].text
        if self._structured:
            metadata["scale"] = list(self._scale)
            metadata["threshold"] = self._threshold
        return metadata

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Ask the judge about ``output``; see the class documentation for the verdicts."""
        if output is None:
            return EvaluationResult.failing("output is None")
        messages = [ChatMessage("user", self.render(sample, output))]
        if self._system_prompt is not None:
            messages.insert(0, ChatMessage("system", self._system_prompt))
        try:
            calls = [await self._chat(messages)]
            verdict = self._parse(calls[0][0].text)
            if isinstance(verdict, ParseError):
                messages += [
                    ChatMessage("assistant", calls[0][0].text),
                    ChatMessage("user", self._corrective(verdict.reason)),
                ]
                calls.append(await self._chat(messages))
                verdict = self._parse(calls[1][0].text)
        except Exception as exc:
            if self._fallback is None:
                raise
            retries = getattr(exc, "retries", 0)
            problem = f"The judge call failed ({type(exc).__name__}: {exc})"
            failure = {
                "judge_model": self._model_name,
                "judge_error": f"{type(exc).__name__}: {exc}",
                "retries": retries if isinstance(retries, int) else 0,
            }
            return await self._fall_back(sample, output, problem, failure)
        metadata = self._usage(calls)
        reply = calls[-1][0].text
        if isinstance(verdict, ParseError):
            return await self._unreadable(sample, output, verdict.reason, reply, metadata)
        if isinstance(verdict, bool):
            return EvaluationResult(verdict, 1.0 if verdict else 0.0, reply, metadata)
        metadata["raw_score"] = verdict.raw_score
        passed = verdict.passed
        if passed is None:
            passed = verdict.score >= self._threshold
        explanation = verdict.explanation if verdict.explanation is not None else reply
        return EvaluationResult(passed, verdict.score, explanation, metadata)

    async def _unreadable(
        self,
        sample: EvaluationSample,
        output: Any,
        reason: str,
        reply: str,
        metadata: dict[str, Any],
    ) -> EvaluationResult:
        problem = (
            f"The judge's reply could not be read, even when asked again ({reason}): "
            f"{truncate(repr(reply), _SHOWN)}"
        )
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
        if self._structured:
            options["structured"] = True
            options["scale"] = self._scale
            options["threshold"] = self._threshold
        if self._fallback is not None:
            options["fallback"] = strategy_name(self._fallback)
        if self._cache is not None:
            options["cache"] = self._cache
        return options
