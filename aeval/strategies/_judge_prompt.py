"""The judge's prompt and options: placeholders filled in, the JSON format asked for, and the
checks of the options."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "DEFAULT_PROMPT",
    "STRUCTURED_MAX_TOKENS",
    "STRUCTURED_PROMPT",
    "VERDICT_MAX_TOKENS",
    "check_number",
    "check_prices",
    "check_scale",
    "expected_text",
    "format_instruction",
    "judge_names",
    "question_of",
    "text_of",
]


VERDICT_MAX_TOKENS = 16
"""The default ``max_tokens`` of true/false judging: the verdict word and a little markup
(only the start of the reply is read)."""

STRUCTURED_MAX_TOKENS = 256
"""The default ``max_tokens`` of structured judging: the JSON verdict with a sentence or two
of explanation; a reply cut off after its score is still used."""

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


def text_of(value: Any) -> str:
    """A value as prompt text (``None`` is empty)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def expected_text(value: Any) -> str:
    """An expected output as prompt text; a list becomes ``One of:`` and a bullet each."""
    if isinstance(value, list | tuple):
        return "One of:\n" + "\n".join(f"- {text_of(item)}" for item in value)
    return text_of(value)


def question_of(sample: EvaluationSample) -> str:
    """The sample's ``question`` parameter, else all its parameters, one per line."""
    named = sample.parameters.as_dict()
    if "question" in named:
        return text_of(named["question"])
    return "\n".join(text_of(value) for value in sample.parameters)


def check_number(value: object, option: str) -> float:
    """``value`` as a float; a ``TypeError`` naming ``option`` unless a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{option} must be a finite number, got {value!r}")
    return float(value)


def check_scale(scale: object) -> tuple[float, float]:
    """A (lowest, highest) pair of numbers, lowest first."""
    if not isinstance(scale, Sequence) or isinstance(scale, str) or len(scale) != 2:
        raise TypeError(f"scale must be a (lowest, highest) pair such as (1, 5), got {scale!r}")
    low, high = (check_number(end, "scale") for end in scale)
    if low >= high:
        raise ValueError(f"scale must go from a lower to a higher score, got {scale!r}")
    return low, high


def check_prices(prices: object) -> dict[str, tuple[float, float]]:
    """A price table: model name to (USD per 1k prompt, per 1k completion tokens)."""
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
        prompt_price, completion_price = (check_number(p, f"prices[{model!r}]") for p in price)
        if prompt_price < 0 or completion_price < 0:
            raise ValueError(f"prices[{model!r}] must not be negative, got {price!r}")
        table[str(model)] = (prompt_price, completion_price)
    return table


def judge_names(names: Sequence[str]) -> list[str]:
    """The judges' names in rows: a model that sits more than once is numbered."""
    counts = {name: names.count(name) for name in names}
    seen: dict[str, int] = {}
    labelled = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labelled.append(f"{name}#{seen[name]}" if counts[name] > 1 else name)
    return labelled


def format_instruction(scale: tuple[float, float]) -> str:
    """The JSON format a structured judge is asked for, on ``scale``."""
    low, high = scale
    return (
        "Reply with only a JSON object, no other text:\n"
        f'{{"score": <a number from {low:g} to {high:g}>, "passed": <true or false>, '
        '"explanation": "<one sentence>"}'
    )
