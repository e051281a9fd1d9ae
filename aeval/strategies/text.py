"""Text strategies: cheap, synchronous checks of an output's content and shape.

They port the upstream ``ExactMatchStrategy`` (seed 000), the structural checks of seed 003
(contains / must-not-contain, not blank, regular expressions, JSON) and the two custom
strategies of seed 000's guide: the retriever's text-segment check and the guardrail's
ACCEPT/REJECT check. Each validates its options at construction, explains precisely what
was wrong and attaches metadata a report can show.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import orjson

from .._reporting._results import EvaluationResult, make_result
from ._base import TextStrategy
from ._guardrail import GuardrailStrategy
from ._segments import SegmentsStrategy
from ._text_common import (
    JSON_TYPES,
    check_choice,
    check_flag,
    check_texts,
    expected_texts,
    fenced,
    is_sequence,
    plural,
    sentence,
    show_value,
    show_values,
)

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "ContainsStrategy",
    "ExactMatchStrategy",
    "GuardrailStrategy",
    "JsonStrategy",
    "NotBlankStrategy",
    "RegexStrategy",
    "SegmentsStrategy",
]


_EQUAL = EvaluationResult.passing(1.0, "Output equals the expected output")


class ExactMatchStrategy(TextStrategy):
    """Passes when the output equals the sample's expected output.

    The default is exact, as upstream (``expected != null && expected.equals(actual)``):
    no trimming, no case folding. A string is compared with the text of a scalar output
    (``42`` matches ``"42"``); lists and tuples compare item by item. With a list of
    expected outputs the output passes when it equals the whole list or any one item.

    Args:
        strip: Ignore leading and trailing whitespace of strings.
        case_sensitive: Compare strings with their letter case; ``False`` case-folds.
        name: The name of the report rows.

    Example:
        >>> from aeval import EvaluationSample
        >>> sample = EvaluationSample("capital", ["France?"], "Paris")
        >>> ExactMatchStrategy(strip=True).evaluate(sample, " Paris\\n").passed
        True
    """

    __slots__ = ("_case_sensitive", "_exact", "_strip")

    def __init__(
        self, *, strip: bool = False, case_sensitive: bool = True, name: str | None = None
    ) -> None:
        super().__init__(name=name)
        self._strip = check_flag(strip, "strip")
        self._case_sensitive = check_flag(case_sensitive, "case_sensitive")
        self._exact = case_sensitive and not strip

    def _config(self) -> dict[str, Any]:
        return {"strip": self._strip, "case_sensitive": self._case_sensitive}

    def _normalize(self, text: str) -> str:
        if self._strip:
            text = text.strip()
        if not self._case_sensitive:
            text = text.casefold()
        return text

    def _matches(self, expected: Any, actual: Any) -> bool:
        if is_sequence(expected) or is_sequence(actual):
            return (
                is_sequence(expected)
                and is_sequence(actual)
                and len(expected) == len(actual)
                and all(self._matches(e, a) for e, a in zip(expected, actual, strict=True))
            )
        if isinstance(expected, str) or isinstance(actual, str):
            if isinstance(expected, Mapping) or isinstance(actual, Mapping):
                return False
            return self._normalize(str(expected)) == self._normalize(str(actual))
        return bool(expected == actual)

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Compare ``output`` with ``sample.expected_output``."""
        expected = sample.expected_output
        if type(expected) is str and type(output) is str:
            if self._exact:
                if expected == output:
                    return _EQUAL
            elif self._normalize(expected) == self._normalize(output):
                return _EQUAL
        if expected is None:
            return EvaluationResult.failing(
                f"Sample {sample.name!r} has no expected output to compare with"
            )
        if output is None:
            return super().evaluate(sample, output)
        if self._matches(expected, output):
            return _EQUAL
        if is_sequence(expected):
            for index, candidate in enumerate(expected):
                if self._matches(candidate, output):
                    return EvaluationResult(
                        True,
                        1.0,
                        f"Output equals expected output {index + 1} of {len(expected)}",
                        {"match_index": index},
                    )
            return EvaluationResult.failing(
                f"Expected one of {show_value(list(expected))}, got {show_value(output)}"
            )
        explanation = f"Expected {show_value(expected)}, got {show_value(output)}"
        hint = self._near_miss(expected, output)
        return EvaluationResult.failing(f"{explanation} ({hint})" if hint else explanation)

    def _near_miss(self, expected: Any, output: Any) -> str | None:
        if not (isinstance(expected, str) and isinstance(output, str)):
            return None
        if self._normalize(expected.strip()) == self._normalize(output.strip()):
            return "they differ only in leading or trailing whitespace; use strip=True"
        if expected.casefold() == output.casefold():
            return "they differ only in letter case; use case_sensitive=False"
        if expected.strip().casefold() == output.strip().casefold():
            return (
                "they differ only in letter case and surrounding whitespace; "
                "use strip=True, case_sensitive=False"
            )
        return None


class ContainsStrategy(TextStrategy):
    """Checks that the output contains required texts and none of the forbidden ones.

    Seed 003's ``mustContain`` / ``mustNotContain`` dataset check. Each required text (or,
    in ``"any"`` mode, the group of required texts) and each forbidden text is one check;
    the score is the fraction of checks satisfied and the result passes when all are.

    Args:
        must_contain: Texts the output must contain. When both lists are ``None``, the
            sample's own lists are used (``must-contain`` / ``must-not-contain`` in a sample
            file, ``metadata={"must_contain": [...], "must_not_contain": [...]}`` in Python),
            else the sample's expected output (a string or a list of strings).
        must_not_contain: Texts the output must not contain.
        mode: ``"all"`` requires every text of ``must_contain``; ``"any"`` requires one.
        case_sensitive: ``False`` compares case-folded texts (seed 003 lower-cases both).
        name: The name of the report rows.

    Raises:
        ValueError: An unknown mode or an empty string among the texts.
        TypeError: Texts that are not strings.
    """

    __slots__ = (
        "_case_sensitive",
        "_mode",
        "_must_contain",
        "_must_not_contain",
        "_passes_with",
    )

    def __init__(
        self,
        must_contain: str | Iterable[str] | None = None,
        must_not_contain: str | Iterable[str] | None = None,
        *,
        mode: Literal["all", "any"] = "all",
        case_sensitive: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._must_contain = (
            None if must_contain is None else check_texts(must_contain, "must_contain")
        )
        self._must_not_contain = (
            None if must_not_contain is None else check_texts(must_not_contain, "must_not_contain")
        )
        self._mode = check_choice(mode, "mode", ("all", "any"))
        self._case_sensitive = check_flag(case_sensitive, "case_sensitive")
        # the explanation of the usual pass when evaluate() may decide it without the lists a
        # problem needs (its own texts, case-sensitive, "all"); None: it may not
        required, forbidden = len(self._must_contain or ()), len(self._must_not_contain or ())
        self._passes_with = (
            _all_found(required, forbidden)
            if self._case_sensitive
            and self._mode == "all"
            and (self._must_contain is not None or self._must_not_contain is not None)
            and required + forbidden
            else None
        )

    def _config(self) -> dict[str, Any]:
        return {
            "must_contain": self._must_contain,
            "must_not_contain": self._must_not_contain,
            "mode": self._mode,
            "case_sensitive": self._case_sensitive,
        }

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Look for the texts in ``output`` (see :class:`TextStrategy` for non-text outputs).

        The usual pass (the strategy's own texts, compared case-sensitively, every required
        one found and no forbidden one) is decided here, without the lists a problem needs;
        the result is the one the general case makes.
        """
        explanation = self._passes_with
        if explanation is None or type(output) is not str:
            return super().evaluate(sample, output)
        must = self._must_contain
        if must is not None:
            for needle in must:
                if needle not in output:
                    return self._evaluate_text(sample, output)
        must_not = self._must_not_contain
        if must_not is not None:
            for needle in must_not:
                if needle in output:
                    return self._evaluate_text(sample, output)
        metadata = {
            "mode": "all",
            "found": [] if must is None else list(must),
            "missing": [],
            "forbidden_found": [],
        }
        return make_result(True, 1.0, explanation, MappingProxyType(metadata), False, False)

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        must = self._must_contain
        must_not = self._must_not_contain or ()
        if must is None and self._must_not_contain is None:
            own_must = sample.metadata.get("must_contain")
            own_must_not = sample.metadata.get("must_not_contain")
            if own_must is not None or own_must_not is not None:
                must = None if own_must is None else check_texts(own_must, "must_contain")
                must_not = (
                    () if own_must_not is None else check_texts(own_must_not, "must_not_contain")
                )
            else:
                must = expected_texts(sample.expected_output)
                if must is None:
                    return EvaluationResult.failing(
                        f"Sample {sample.name!r} has no expected output to look for: set its "
                        "expected output, give it must-contain / must-not-contain, or pass "
                        "must_contain="
                    )
        must = must or ()
        if self._case_sensitive:
            found = [needle for needle in must if needle in text]
            missing = (
                [needle for needle in must if needle not in text] if len(found) < len(must) else []
            )
            forbidden = [needle for needle in must_not if needle in text]
        else:
            haystack = text.casefold()
            found = [needle for needle in must if needle.casefold() in haystack]
            missing = [needle for needle in must if needle.casefold() not in haystack]
            forbidden = [needle for needle in must_not if needle.casefold() in haystack]

        if self._mode == "all":
            checks, satisfied = len(must), len(found)
        else:
            checks, satisfied = (1, 1 if found else 0) if must else (0, 0)
        checks += len(must_not)
        satisfied += len(must_not) - len(forbidden)
        metadata = {
            "mode": self._mode,
            "found": found,
            "missing": missing,
            "forbidden_found": forbidden,
        }
        if checks == 0:
            return EvaluationResult(True, 1.0, "Nothing to check: no texts given", metadata)

        problems = []
        if self._mode == "all" and missing:
            problems.append(
                f"missing {len(missing)} of {plural(len(must), 'required text')}: "
                f"{show_values(missing)}"
            )
        if self._mode == "any" and must and not found:
            problems.append(f"found none of {plural(len(must), 'text')}: {show_values(must)}")
        if forbidden:
            problems.append(
                f"found {len(forbidden)} of {plural(len(must_not), 'forbidden text')}: "
                f"{show_values(forbidden)}"
            )
        if problems:
            return EvaluationResult(False, satisfied / checks, sentence(problems), metadata)
        if self._mode == "all" or not must:
            return EvaluationResult(True, 1.0, _all_found(len(must), len(must_not)), metadata)
        good = [f"found {len(found)} of {len(must)} texts: {show_values(found)}"]
        if must_not:
            good.append(f"found none of {plural(len(must_not), 'forbidden text')}")
        return EvaluationResult(True, 1.0, sentence(good), metadata)


@functools.lru_cache(maxsize=64)
def _all_found(required: int, forbidden: int) -> str:
    """The explanation of a pass with every required text found and no forbidden one."""
    good = []
    if required:
        good.append(
            "found the required text" if required == 1 else f"found all {required} required texts"
        )
    if forbidden:
        good.append(f"found none of {plural(forbidden, 'forbidden text')}")
    return sentence(good)


class RegexStrategy(TextStrategy):
    """Checks the output against a regular expression.

    Args:
        pattern: A pattern string or a compiled ``re.Pattern`` of ``str``.
        mode: ``"search"`` finds the pattern anywhere; ``"fullmatch"`` needs the whole text.
        flags: ``re`` flags, for a pattern string only.
        must_match: ``False`` inverts the check: the output must not match.
        name: The name of the report rows.

    Raises:
        ValueError: An invalid pattern (the message names it and the regex error), an
            unknown mode, or flags given with a compiled pattern.
    """

    __slots__ = ("_mode", "_must_match", "_pattern")

    def __init__(
        self,
        pattern: str | re.Pattern[str],
        *,
        mode: Literal["search", "fullmatch"] = "search",
        flags: int = 0,
        must_match: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise TypeError(f"flags must be re flags (an int), got {flags!r}")
        if isinstance(pattern, re.Pattern):
            if not isinstance(pattern.pattern, str):
                raise TypeError(f"pattern must match text, not bytes: {pattern.pattern!r}")
            if flags:
                raise ValueError(
                    f"flags cannot be given with the compiled pattern {pattern.pattern!r}: "
                    "compile it with the flags instead"
                )
            self._pattern = pattern
        elif isinstance(pattern, str):
            try:
                self._pattern = re.compile(pattern, flags)
            except re.error as exc:
                raise ValueError(f"Invalid regular expression {pattern!r}: {exc}") from exc
        else:
            raise TypeError(f"pattern must be a string or a compiled pattern, got {pattern!r}")
        self._mode = check_choice(mode, "mode", ("search", "fullmatch"))
        self._must_match = check_flag(must_match, "must_match")

    def _config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"pattern": self._pattern.pattern, "mode": self._mode}
        if self._pattern.flags & ~re.UNICODE:
            config["flags"] = re.RegexFlag(self._pattern.flags & ~re.UNICODE)
        config["must_match"] = self._must_match
        return config

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        if self._mode == "search":
            match = self._pattern.search(text)
        else:
            match = self._pattern.fullmatch(text)
        pattern = f'"{self._pattern.pattern}"'
        verb, negated = (
            ("matches", "match") if self._mode == "search" else ("fully matches", "fully match")
        )
        metadata: dict[str, Any] = {
            "pattern": self._pattern.pattern,
            "matched": match is not None,
            "match": None if match is None else match.group(),
            "span": None if match is None else list(match.span()),
        }
        if match is not None:
            start, end = match.span()
            where = f"at {start}-{end}: {show_value(match.group())}"
            if self._must_match:
                explanation = f"Output {verb} {pattern} {where}"
            else:
                explanation = f"Output {verb} the forbidden pattern {pattern} {where}"
        elif self._must_match:
            explanation = f"Output does not {negated} {pattern}: {show_value(text)}"
        else:
            explanation = f"Output does not {negated} the forbidden pattern {pattern}"
        passed = (match is not None) == self._must_match
        return EvaluationResult(passed, 1.0 if passed else 0.0, explanation, metadata)


@functools.lru_cache(maxsize=4096)
def _long_enough(length: int) -> str:
    """The explanation of a :class:`NotBlankStrategy` pass (each usual length made once)."""
    return f"Output has {plural(length, 'character')} after stripping"


class NotBlankStrategy(TextStrategy):
    """Passes when the output, stripped of surrounding whitespace, is long enough.

    Seed 003's ``isNotBlank()`` (and, with ``min_length``, its length check).

    Args:
        min_length: The fewest characters the stripped output may have (at least 1).
        name: The name of the report rows.
    """

    __slots__ = ("_min_length",)

    def __init__(self, *, min_length: int = 1, name: str | None = None) -> None:
        super().__init__(name=name)
        if isinstance(min_length, bool) or not isinstance(min_length, int):
            raise TypeError(f"min_length must be an int, got {min_length!r}")
        if min_length < 1:
            raise ValueError(f"min_length must be at least 1, got {min_length}")
        self._min_length = min_length

    def _config(self) -> dict[str, Any]:
        return {"min_length": self._min_length}

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Measure the stripped text of ``output`` (see :class:`TextStrategy` for non-text
        outputs); a pass is decided here, as the general case decides it."""
        if type(output) is not str:
            return super().evaluate(sample, output)
        length = len(output.strip())
        if length < self._min_length:
            return self._evaluate_text(sample, output)
        return make_result(
            True,
            1.0,
            _long_enough(length),
            MappingProxyType({"length": length, "min_length": self._min_length}),
            False,
            False,
        )

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        length = len(text.strip())
        metadata = {"length": length, "min_length": self._min_length}
        if length == 0:
            return EvaluationResult(False, 0.0, "Output is blank", metadata)
        if length < self._min_length:
            return EvaluationResult(
                False,
                0.0,
                f"Output has {plural(length, 'character')} after stripping whitespace, "
                f"fewer than the minimum of {self._min_length}",
                metadata,
            )
        return EvaluationResult(True, 1.0, _long_enough(length), metadata)


def _json_type(value: Any) -> str:
    for kind, label in JSON_TYPES:
        if isinstance(value, kind):
            return label
    return "null" if value is None else type(value).__name__


class JsonStrategy(TextStrategy):
    """Passes when the output is valid JSON, with the required top-level keys.

    An output that is already a ``dict`` or a ``list`` is valid as is; ``bytes`` are parsed
    directly; anything else is parsed from its text. The check is strict by default.

    Args:
        required_keys: Keys the top-level JSON object must have.
        allow_fences: Strip one Markdown code fence (```` ```json ... ``` ````) around the
            output before parsing.
        name: The name of the report rows.
    """

    __slots__ = ("_allow_fences", "_required_keys")

    def __init__(
        self,
        *,
        required_keys: str | Iterable[str] = (),
        allow_fences: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self._required_keys = check_texts(required_keys, "required_keys")
        self._allow_fences = check_flag(allow_fences, "allow_fences")

    def _config(self) -> dict[str, Any]:
        return {"required_keys": self._required_keys, "allow_fences": self._allow_fences}

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Parse ``output`` as JSON and look for the required keys."""
        if isinstance(output, dict | list):
            return self._check(output, {"fenced": False})
        if isinstance(output, bytes | bytearray):
            try:
                output = bytes(output).decode()
            except UnicodeDecodeError as exc:
                return EvaluationResult(
                    False, 0.0, f"Output is not valid JSON: {exc}", {"fenced": False}
                )
        return super().evaluate(sample, output)

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        was_fenced = False
        if self._allow_fences:
            body = fenced(text)
            if body is not None:
                text, was_fenced = body, True
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return EvaluationResult(
                False,
                0.0,
                f"Output is not valid JSON: {exc.msg} at line {exc.lineno}, "
                f"column {exc.colno} (char {exc.pos})",
                {
                    "fenced": was_fenced,
                    "error": exc.msg,
                    "line": exc.lineno,
                    "column": exc.colno,
                    "position": exc.pos,
                },
            )
        return self._check(value, {"fenced": was_fenced})

    def _check(self, value: Any, metadata: dict[str, Any]) -> EvaluationResult:
        kind = _json_type(value)
        metadata["json_type"] = kind
        keys = self._required_keys
        if not keys:
            return EvaluationResult(True, 1.0, f"Output is valid JSON ({kind})", metadata)
        if not isinstance(value, dict):
            return EvaluationResult(
                False,
                0.0,
                f"Output is a JSON {kind}, not an object: the required keys "
                f"{show_values(keys)} cannot be present",
                {**metadata, "missing_keys": list(keys)},
            )
        missing = [key for key in keys if key not in value]
        metadata["missing_keys"] = missing
        if missing:
            return EvaluationResult(
                False,
                0.0,
                f"JSON object is missing {len(missing)} of "
                f"{plural(len(keys), 'required key')}: {show_values(missing)}",
                metadata,
            )
        return EvaluationResult(
            True,
            1.0,
            f"Output is a JSON object with all {plural(len(keys), 'required key')}",
            metadata,
        )
