"""Reading a judge's reply: a true/false verdict, or a JSON object with a score.

Both parsers return either a value or the reason the reply could not be read; the reason
goes into the corrective message sent back to the judge. A reply the server cut off at its
token limit is read as far as it goes: a JSON verdict whose score was complete before the
cut is still a verdict (marked ``salvaged``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ParseError", "StructuredVerdict", "json_object", "parse_structured", "parse_verdict"]

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
_OBJECT_START = re.compile(r"\{(?=\s*+[\"}])")
_OBJECT_ATTEMPTS = 64


@dataclass(frozen=True, slots=True)
class ParseError:
    """Why a reply could not be read.

    Attributes:
        reason: What is wrong, as the corrective message tells the judge.
        cut_off: The reply was cut off at the token limit before it could be read, so asking
            again with the same limit would not help.
    """

    reason: str
    cut_off: bool = False


@dataclass(frozen=True, slots=True)
class StructuredVerdict:
    """A structured judge reply.

    Attributes:
        raw_score: The score on the judge's scale, as given.
        score: The score normalised to [0, 1].
        passed: The judge's own verdict, or ``None`` when the reply has none that reads as
            true or false.
        explanation: The ``explanation`` (or ``reason``) field, if any.
        passed_value: The ``passed`` field when it was given but is not true or false
            (``1``, ``"yes"``, ``100``…); the row is then decided by the score.
        salvaged: The reply was cut off after its score; what was complete is used.
    """

    raw_score: float
    score: float
    passed: bool | None
    explanation: str | None
    passed_value: Any = None
    salvaged: bool = False


def _strip_markup(text: str) -> str:
    start, end = 0, len(text)
    previous = (-1, -1)
    while previous != (start, end):
        previous = (start, end)
        while start < end and text[start] in _MARKUP:
            start += 1
        while end > start and text[end - 1] in _MARKUP:
            end -= 1
        match = _LABEL.match(text, start, end)
        if match:
            start = match.end()
    return text[start:end]


def parse_verdict(reply: str, *, cut_off: str | None = None) -> bool | ParseError:
    """Read a true/false verdict from the start of a reply.

    After stripping whitespace, markdown emphasis, quotes, headings and one label such as
    ``Answer:`` or ``Verdict:``, the reply must start with ``true``, ``false``, ``pass``,
    ``passed``, ``fail`` or ``failed`` (any case) as a whole word. ``"True."``,
    ``"**true**"``, ``"true, because…"`` and ``"Verdict: FAIL"`` are read; ``"yes"``,
    ``"correct"``, ``"true/false"`` and ``"It is true"`` are not: a word that could answer
    another question is not taken for a verdict. A reply cut off at the token limit is read
    the same way (only its start counts); ``cut_off`` names the limit in the reason.
    """
    text = _strip_markup(reply)
    match = _WORD.match(text)
    if match is not None:
        word, after = match.group(1).lower(), match.group(2)
        if word in _VERDICT_WORDS and after != "/" and not after.isalnum():
            return _VERDICT_WORDS[word]
    reason = "the reply does not start with true or false"
    if cut_off is not None:
        reason += f" (it was cut off at {cut_off})"
    return ParseError(reason)


def json_object(reply: str) -> dict[str, Any] | None:
    """The first JSON object of a reply (in a code fence or bare), or ``None``.

    Only a ``{`` followed by a key or ``}`` is tried, and at most 64 of them per text: a
    failed attempt costs the length of the text before it (the decoder counts lines for
    its error), so trying every brace of a long reply would be quadratic.
    """
    candidates = [match.group(1) for match in _FENCE.finditer(reply)]
    candidates.append(reply)
    for text in candidates:
        for attempt, match in enumerate(_OBJECT_START.finditer(text)):
            if attempt == _OBJECT_ATTEMPTS:
                break
            try:
                value, _ = _DECODER.raw_decode(text, match.start())
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
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


def _cut_object(reply: str) -> tuple[dict[str, Any], str | None] | None:
    """The top-level fields of a JSON object that ends early (a reply cut off mid-object).

    Only fields whose value is complete count: a value must be followed by ``,`` or ``}``
    (a number at the very end may have lost digits). A string value cut short is returned
    apart, with its key, as the text it had so far.

    Returns:
        The complete fields, and the key of a string cut short (its text under that key);
        ``None`` when the reply holds no ``{``.
    """
    start = reply.find("{")
    if start == -1:
        return None
    fields: dict[str, Any] = {}
    text, at, end = reply, start + 1, len(reply)
    while True:
        while at < end and text[at] in " \t\r\n,":
            at += 1
        try:
            key, at = _DECODER.raw_decode(text, at)
        except ValueError:
            return fields, None
        while at < end and text[at] in " \t\r\n":
            at += 1
        if not isinstance(key, str) or at >= end or text[at] != ":":
            return fields, None
        at += 1
        while at < end and text[at] in " \t\r\n":
            at += 1
        try:
            value, after = _DECODER.raw_decode(text, at)
        except ValueError:
            if at < end and text[at] == '"':
                fields[key] = text[at + 1 :].rstrip("\\")
                return fields, key
            return fields, None
        rest = text[after:].lstrip(" \t\r\n")
        if not rest or rest[0] not in ",}":
            return fields, None
        fields[key] = value
        at = after


def _partial_text(raw: str) -> str:
    """The text of a JSON string cut short, escapes decoded where they are complete."""
    for end in range(len(raw), max(-1, len(raw) - 6), -1):
        try:
            value = _DECODER.decode(f'"{raw[:end]}"')
        except ValueError:
            continue
        return str(value)
    return raw


def _cut_verdict(reply: str, limit: str) -> tuple[dict[str, Any], bool] | ParseError:
    """The fields of the reply's first JSON object, read as far as the cut allows.

    The object at the first ``{`` is used whole when it is complete (the cut came later);
    otherwise its fields completed before the cut are (``salvaged``). Objects nested
    inside it are never taken for it.
    """
    start = reply.find("{")
    if start == -1:
        return ParseError(
            f"the reply was cut off at {limit} before it held a JSON object; raise max_tokens",
            cut_off=True,
        )
    try:
        whole, _ = _DECODER.raw_decode(reply, start)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole, False
    cut = _cut_object(reply)
    if cut is None or "score" not in cut[0]:
        return ParseError(
            f"the reply was cut off at {limit} before its score was complete; raise max_tokens",
            cut_off=True,
        )
    fields, partial = cut
    data = dict(fields)
    if partial is not None and partial in ("explanation", "reason", "reasoning"):
        data[partial] = f"{_partial_text(fields[partial])}…"
    return data, True


def parse_structured(
    reply: str, scale: tuple[float, float], *, cut_off: str | None = None
) -> StructuredVerdict | ParseError:
    """Read ``{"score": …, "passed": …, "explanation": …}`` from a reply.

    The object may sit in a code fence or among other text (the first JSON object that
    decodes is used). ``score`` is a number or a string such as ``"85"``, ``"4/5"``,
    ``"4 out of 5"`` or ``"85%"`` (a fraction or a percentage of another range is mapped onto
    the scale's maximum), and must lie within ``scale``. ``passed`` is optional: a bool or
    the strings true/false/pass/fail are the judge's verdict; any other value (``1``,
    ``"yes"``, ``100``) is kept in ``passed_value`` and the verdict is left to the score.
    ``reason`` and ``reasoning`` are read as the explanation.

    Args:
        reply: The judge's reply.
        scale: The (lowest, highest) score.
        cut_off: The limit at which the server cut the reply off (``"max_tokens=64"``), if it
            did: when the first object is not whole, the fields completed before the cut are
            used (``salvaged``), and a reply cut before its score is a :class:`ParseError`
            with ``cut_off`` set, naming the limit.
    """
    if cut_off is not None:
        found = _cut_verdict(reply, cut_off)
        if isinstance(found, ParseError):
            return found
        data, salvaged = found
    else:
        whole = json_object(reply)
        if whole is None:
            return ParseError("the reply holds no JSON object")
        data, salvaged = whole, False
    if "score" not in data:
        return ParseError('the JSON object has no "score" field')
    raw = _number(data["score"], scale)
    if raw is None:
        return ParseError(f'the "score" field {data["score"]!r} is not a number')
    low, high = scale
    if not low <= raw <= high:
        return ParseError(f"the score {raw:g} is outside the scale {_show(scale)}")
    passed: bool | None = None
    passed_value: Any = None
    if data.get("passed") is not None:
        passed = _boolean(data["passed"])
        if passed is None:
            passed_value = data["passed"]
    explanation = None
    for field in ("explanation", "reason", "reasoning"):
        value = data.get(field)
        if value is not None:
            explanation = value if isinstance(value, str) else json.dumps(value)
            break
    return StructuredVerdict(
        raw, (raw - low) / (high - low), passed, explanation, passed_value, salvaged
    )
