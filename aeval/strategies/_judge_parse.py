"""Reading a judge's reply: a true/false verdict, or a JSON object with a score.

Both parsers return either a value or the reason the reply could not be read; the reason
goes into the corrective message sent back to the judge.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ParseError", "StructuredVerdict", "parse_structured", "parse_verdict"]

_VERDICT_WORDS = {
    "true": True,
    "pass": True,
    "passed": True,
    "false": False,
    "fail": False,
    "failed": False,
}
_MARKUP = " \t\r\n*_`#>\"'“”‘’"
_LABEL = re.compile(r"(?:answer|verdict|result|evaluation|output)\s*[:=\-]\s*", re.IGNORECASE)
_WORD = re.compile(r"([a-z]+)(.?)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_FRACTION = re.compile(rf"({_NUMBER})\s*(?:/|out of)\s*({_NUMBER})", re.IGNORECASE)
_PERCENT = re.compile(rf"({_NUMBER})\s*%")
_PLAIN = re.compile(rf"{_NUMBER}")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ParseError:
    """Why a reply could not be read."""

    reason: str


@dataclass(frozen=True, slots=True)
class StructuredVerdict:
    """A structured judge reply.

    Attributes:
        raw_score: The score on the judge's scale, as given.
        score: The score normalised to [0, 1].
        passed: The judge's own verdict, or ``None`` when the reply has none.
        explanation: The ``explanation`` (or ``reason``) field, if any.
    """

    raw_score: float
    score: float
    passed: bool | None
    explanation: str | None


def _strip_markup(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = text.strip(_MARKUP)
        match = _LABEL.match(text)
        if match:
            text = text[match.end() :]
    return text


def parse_verdict(reply: str) -> bool | ParseError:
    """Read a true/false verdict from the start of a reply.

    After stripping whitespace, markdown emphasis, quotes, headings and one label such as
    ``Answer:`` or ``Verdict:``, the reply must start with ``true``, ``false``, ``pass``,
    ``passed``, ``fail`` or ``failed`` (any case) as a whole word. ``"True."``,
    ``"**true**"``, ``"true, because…"`` and ``"Verdict: FAIL"`` are read; ``"yes"``,
    ``"correct"``, ``"true/false"`` and ``"It is true"`` are not: a word that could answer
    another question is not taken for a verdict.
    """
    text = _strip_markup(reply)
    match = _WORD.match(text)
    if match is not None:
        word, after = match.group(1).lower(), match.group(2)
        if word in _VERDICT_WORDS and after != "/" and not after.isalnum():
            return _VERDICT_WORDS[word]
    return ParseError("the reply does not start with true or false")


def _json_object(reply: str) -> dict[str, Any] | None:
    candidates = [match.group(1) for match in _FENCE.finditer(reply)]
    candidates.append(reply)
    for text in candidates:
        start = text.find("{")
        while start != -1:
            try:
                value, _ = _DECODER.raw_decode(text, start)
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
            start = text.find("{", start + 1)
    return None


def _number(value: object, scale: tuple[float, float]) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    fraction = _FRACTION.fullmatch(text)
    if fraction is not None:
        numerator, denominator = float(fraction.group(1)), float(fraction.group(2))
        if denominator <= 0:
            return None
        if denominator == scale[1]:
            return numerator
        return numerator / denominator * scale[1]
    percent = _PERCENT.fullmatch(text)
    if percent is not None:
        return float(percent.group(1)) / 100 * scale[1]
    if _PLAIN.fullmatch(text):
        return float(text)
    return None


def _boolean(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _VERDICT_WORDS.get(value.strip().lower())
    return None


def _show(scale: tuple[float, float]) -> str:
    return f"{scale[0]:g} to {scale[1]:g}"


def parse_structured(reply: str, scale: tuple[float, float]) -> StructuredVerdict | ParseError:
    """Read ``{"score": …, "passed": …, "explanation": …}`` from a reply.

    The object may sit in a code fence or among other text (the first JSON object that
    decodes is used). ``score`` is a number or a string such as ``"85"``, ``"4/5"``,
    ``"4 out of 5"`` or ``"85%"`` (a fraction or a percentage of another range is mapped onto
    the scale's maximum), and must lie within ``scale``. ``passed`` is optional (a bool or the
    strings true/false/pass/fail). ``reason`` and ``reasoning`` are read as the explanation.
    """
    data = _json_object(reply)
    if data is None:
        return ParseError("the reply holds no JSON object")
    if "score" not in data:
        return ParseError('the JSON object has no "score" field')
    raw = _number(data["score"], scale)
    if raw is None:
        return ParseError(f'the "score" field {data["score"]!r} is not a number')
    low, high = scale
    if not low <= raw <= high:
        return ParseError(f"the score {raw:g} is outside the scale {_show(scale)}")
    passed: bool | None = None
    if data.get("passed") is not None:
        passed = _boolean(data["passed"])
        if passed is None:
            return ParseError(f'the "passed" field {data["passed"]!r} is not true or false')
    explanation = None
    for field in ("explanation", "reason", "reasoning"):
        value = data.get(field)
        if value is not None:
            explanation = value if isinstance(value, str) else json.dumps(value)
            break
    return StructuredVerdict(raw, (raw - low) / (high - low), passed, explanation)
