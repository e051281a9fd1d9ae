from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

import pytest

import aeval.strategies as strategies_module
from aeval import EvaluationResult, EvaluationSample
from aeval.abc import Strategy
from aeval.strategies import (
    ContainsStrategy,
    ExactMatchStrategy,
    GuardrailStrategy,
    JsonStrategy,
    NotBlankStrategy,
    RegexStrategy,
    SegmentsStrategy,
    TextStrategy,
)

WEATHER = EvaluationSample(
    "weather", ["What's the weather in Mysore?"], "24°C", tags=["weather", "smoke"]
)
CAPITAL = EvaluationSample("capital", ["Capital of France?"], "Paris", tags=["geo"])
NO_EXPECTED = EvaluationSample("open", ["Tell me a joke"], tags=["free"])
RETRIEVER = EvaluationSample(
    "cancellation_policy_test",
    ["What is the cancellation policy for car rentals?"],
    [
        "Reservations can be cancelled up to 11 days prior to the start of the booking period.",
        "If the booking period is less than 4 days, cancellations are not permitted.",
    ],
    tags=["retriever"],
)


def check(
    result: EvaluationResult,
    passed: bool,
    score: float | None,
    explanation: str | None,
    metadata: dict[str, Any] | None = None,
) -> None:
    assert (result.passed, result.score, result.explanation) == (passed, score, explanation)
    assert dict(result.metadata) == (metadata or {})


# --- package surface and base class -------------------------------------------------------


def test_package_exports_are_sorted_and_complete() -> None:
    assert strategies_module.__all__ == sorted(strategies_module.__all__)
    assert set(strategies_module.__all__) >= {
        "ContainsStrategy",
        "ExactMatchStrategy",
        "GuardrailStrategy",
        "JsonStrategy",
        "NotBlankStrategy",
        "RegexStrategy",
        "SegmentsStrategy",
        "TextStrategy",
    }


@pytest.mark.parametrize(
    "strategy",
    [
        ExactMatchStrategy(),
        ContainsStrategy(["a"]),
        RegexStrategy("a"),
        NotBlankStrategy(),
        JsonStrategy(),
        SegmentsStrategy(),
        GuardrailStrategy(),
    ],
)
def test_every_strategy_satisfies_the_protocol_and_is_named_after_its_class(
    strategy: TextStrategy,
) -> None:
    assert isinstance(strategy, Strategy)
    assert isinstance(strategy, TextStrategy)
    assert strategy.name == type(strategy).__name__


def test_protocol_accepts_any_object_with_evaluate_and_rejects_others() -> None:
    class Custom:
        async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.passing()

    assert isinstance(Custom(), Strategy)
    assert not isinstance(object(), Strategy)


def test_name_keyword_overrides_the_class_name_and_shows_in_repr() -> None:
    strategy = NotBlankStrategy(min_length=5, name="long enough")
    assert strategy.name == "long enough"
    assert repr(strategy) == "NotBlankStrategy(min_length=5, name='long enough')"


@pytest.mark.parametrize("name", ["", "   ", 3])
def test_blank_or_non_string_name_is_rejected(name: Any) -> None:
    with pytest.raises(ValueError) as info:
        ExactMatchStrategy(name=name)
    assert str(info.value) == f"name must be a non-blank string or None, got {name!r}"


def test_text_strategy_subclass_gets_none_handling_and_str_conversion() -> None:
    seen: list[str] = []

    class Echo(TextStrategy):
        def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
            seen.append(text)
            return EvaluationResult.passing()

    echo = Echo()
    check(echo.evaluate(CAPITAL, None), False, 0.0, "output is None")
    check(echo.evaluate(CAPITAL, 12.5), True, 1.0, None)
    assert seen == ["12.5"]
    assert repr(echo) == "Echo()"


def test_text_strategy_without_implementation_says_what_to_implement() -> None:
    with pytest.raises(NotImplementedError, match=r"^TextStrategy must implement _evaluate_text$"):
        TextStrategy().evaluate(CAPITAL, "x")


def test_reprs_show_the_configuration() -> None:
    assert repr(ExactMatchStrategy(strip=True)) == (
        "ExactMatchStrategy(strip=True, case_sensitive=True)"
    )
    assert repr(ContainsStrategy("a", ["b", "c"], mode="any")) == (
        "ContainsStrategy(must_contain=('a',), must_not_contain=('b', 'c'), mode='any', "
        "case_sensitive=True)"
    )
    assert repr(RegexStrategy(r"\d+", flags=re.I)) == (
        "RegexStrategy(pattern='\\\\d+', mode='search', flags=re.IGNORECASE, must_match=True)"
    )
    assert repr(RegexStrategy("x")) == "RegexStrategy(pattern='x', mode='search', must_match=True)"
    assert repr(JsonStrategy(required_keys="score")) == (
        "JsonStrategy(required_keys=('score',), allow_fences=False)"
    )
    assert repr(SegmentsStrategy(threshold=0.5)) == (
        "SegmentsStrategy(segments=None, threshold=0.5, case_sensitive=False)"
    )
    assert repr(GuardrailStrategy(expect="reject")) == "GuardrailStrategy(expect='REJECT')"


# --- ExactMatchStrategy --------------------------------------------------------------------


def test_exact_match_passes_on_equal_output() -> None:
    check(
        ExactMatchStrategy().evaluate(CAPITAL, "Paris"),
        True,
        1.0,
        "Output equals the expected output",
    )


def test_exact_match_is_exact_by_default_and_hints_at_case() -> None:
    check(
        ExactMatchStrategy().evaluate(CAPITAL, "paris"),
        False,
        0.0,
        "Expected 'Paris', got 'paris' (they differ only in letter case; use case_sensitive=False)",
    )


def test_exact_match_hints_at_whitespace_and_both() -> None:
    check(
        ExactMatchStrategy().evaluate(CAPITAL, "Paris\n"),
        False,
        0.0,
        "Expected 'Paris', got 'Paris\\n' (they differ only in leading or trailing "
        "whitespace; use strip=True)",
    )
    check(
        ExactMatchStrategy().evaluate(CAPITAL, " PARIS "),
        False,
        0.0,
        "Expected 'Paris', got ' PARIS ' (they differ only in letter case and surrounding "
        "whitespace; use strip=True, case_sensitive=False)",
    )


def test_exact_match_options_strip_and_fold_case() -> None:
    check(
        ExactMatchStrategy(strip=True).evaluate(CAPITAL, "  Paris\n"),
        True,
        1.0,
        "Output equals the expected output",
    )
    check(
        ExactMatchStrategy(case_sensitive=False).evaluate(CAPITAL, "PARIS"),
        True,
        1.0,
        "Output equals the expected output",
    )
    both = ExactMatchStrategy(strip=True, case_sensitive=False)
    assert both.evaluate(CAPITAL, "  pArIs ").passed is True
    assert ExactMatchStrategy(strip=True).evaluate(CAPITAL, " paris ").passed is False
    assert ExactMatchStrategy(case_sensitive=False).evaluate(CAPITAL, " paris").passed is False


def test_exact_match_plain_mismatch_has_no_hint() -> None:
    check(
        ExactMatchStrategy().evaluate(CAPITAL, "Lyon"), False, 0.0, "Expected 'Paris', got 'Lyon'"
    )


def test_exact_match_truncates_long_values_in_the_explanation() -> None:
    sample = EvaluationSample("long", ["q"], "a" * 300)
    result = ExactMatchStrategy().evaluate(sample, "b" * 300)
    expected_part = "'" + "a" * 116 + "..."
    actual_part = "'" + "b" * 116 + "..."
    assert result.explanation == f"Expected {expected_part}, got {actual_part}"


def test_exact_match_fails_without_expected_output_even_for_none_output() -> None:
    message = "Sample 'open' has no expected output to compare with"
    check(ExactMatchStrategy().evaluate(NO_EXPECTED, "anything"), False, 0.0, message)
    check(ExactMatchStrategy().evaluate(NO_EXPECTED, None), False, 0.0, message)


def test_exact_match_none_output() -> None:
    check(ExactMatchStrategy().evaluate(CAPITAL, None), False, 0.0, "output is None")


def test_exact_match_list_expected_output_matches_any_item() -> None:
    sample = EvaluationSample("greeting", ["Hi"], ["Hello", "Hi there"], tags=["smoke"])
    check(
        ExactMatchStrategy().evaluate(sample, "Hi there"),
        True,
        1.0,
        "Output equals expected output 2 of 2",
        {"match_index": 1},
    )
    check(
        ExactMatchStrategy(case_sensitive=False).evaluate(sample, "HELLO"),
        True,
        1.0,
        "Output equals expected output 1 of 2",
        {"match_index": 0},
    )
    check(
        ExactMatchStrategy().evaluate(sample, "Hey"),
        False,
        0.0,
        "Expected one of ['Hello', 'Hi there'], got 'Hey'",
    )


def test_exact_match_list_output_equal_to_the_whole_list() -> None:
    sample = EvaluationSample("docs", ["q"], ("a", "b"))
    check(
        ExactMatchStrategy().evaluate(sample, ["a", "b"]),
        True,
        1.0,
        "Output equals the expected output",
    )
    assert ExactMatchStrategy().evaluate(sample, ["b", "a"]).passed is False
    assert ExactMatchStrategy().evaluate(sample, ["a"]).passed is False


def test_exact_match_compares_text_of_scalars_and_values_of_others() -> None:
    assert ExactMatchStrategy().evaluate(EvaluationSample("n", [], "42"), 42).passed is True
    assert ExactMatchStrategy().evaluate(EvaluationSample("n", [], 42), "42").passed is True
    assert ExactMatchStrategy().evaluate(EvaluationSample("n", [], 42), 42.0).passed is True
    mapping = EvaluationSample("m", [], {"a": 1})
    assert ExactMatchStrategy().evaluate(mapping, {"a": 1}).passed is True
    check(
        ExactMatchStrategy().evaluate(mapping, "{'a': 1}"),
        False,
        0.0,
        "Expected {'a': 1}, got \"{'a': 1}\"",
    )


@pytest.mark.parametrize("option", ["strip", "case_sensitive"])
def test_exact_match_rejects_non_bool_options(option: str) -> None:
    with pytest.raises(TypeError) as info:
        ExactMatchStrategy(**{option: "yes"})  # type: ignore[arg-type]
    assert str(info.value) == f"{option} must be True or False, got 'yes'"


# --- ContainsStrategy ----------------------------------------------------------------------


SEED_CHECK = ContainsStrategy(["24", "°C"], ["I cannot", "I don't know"])


def test_contains_passes_when_all_required_and_no_forbidden_text() -> None:
    check(
        SEED_CHECK.evaluate(WEATHER, "Mysore is at 24°C and clear."),
        True,
        1.0,
        "Found all 2 required texts; found none of 2 forbidden texts",
        {"mode": "all", "found": ["24", "°C"], "missing": [], "forbidden_found": []},
    )


def test_contains_scores_the_fraction_of_checks_and_names_what_is_wrong() -> None:
    check(
        SEED_CHECK.evaluate(WEATHER, "I cannot check; maybe 24 degrees?"),
        False,
        0.5,
        "Missing 1 of 2 required texts: '°C'; found 1 of 2 forbidden texts: 'I cannot'",
        {"mode": "all", "found": ["24"], "missing": ["°C"], "forbidden_found": ["I cannot"]},
    )
    check(
        SEED_CHECK.evaluate(WEATHER, "I cannot and I don't know"),
        False,
        0.0,
        "Missing 2 of 2 required texts: '24', '°C'; "
        "found 2 of 2 forbidden texts: 'I cannot', \"I don't know\"",
        {
            "mode": "all",
            "found": [],
            "missing": ["24", "°C"],
            "forbidden_found": ["I cannot", "I don't know"],
        },
    )


def test_contains_is_case_sensitive_by_default() -> None:
    strategy = ContainsStrategy("Mysore", "i cannot")
    check(
        strategy.evaluate(WEATHER, "MYSORE: I cannot"),
        False,
        0.5,
        "Missing 1 of 1 required text: 'Mysore'",
        {"mode": "all", "found": [], "missing": ["Mysore"], "forbidden_found": []},
    )
    folded = ContainsStrategy("Mysore", "i cannot", case_sensitive=False)
    check(
        folded.evaluate(WEATHER, "MYSORE: I cannot"),
        False,
        0.5,
        "Found 1 of 1 forbidden text: 'i cannot'",
        {"mode": "all", "found": ["Mysore"], "missing": [], "forbidden_found": ["i cannot"]},
    )


def test_contains_any_mode_counts_the_group_as_one_check() -> None:
    strategy = ContainsStrategy(
        ["°C", "degrees", "temperature", "warm", "hot", "cool"], ["I cannot"], mode="any"
    )
    check(
        strategy.evaluate(WEATHER, "It is warm and hot"),
        True,
        1.0,
        "Found 2 of 6 texts: 'warm', 'hot'; found none of 1 forbidden text",
        {
            "mode": "any",
            "found": ["warm", "hot"],
            "missing": ["°C", "degrees", "temperature", "cool"],
            "forbidden_found": [],
        },
    )
    check(
        ContainsStrategy(["a", "b"], ["I cannot"], mode="any").evaluate(WEATHER, "xyz"),
        False,
        0.5,
        "Found none of 2 texts: 'a', 'b'",
        {"mode": "any", "found": [], "missing": ["a", "b"], "forbidden_found": []},
    )


def test_contains_only_forbidden_texts() -> None:
    strategy = ContainsStrategy(must_not_contain=["I cannot", "unable"])
    check(
        strategy.evaluate(WEATHER, "Sunny"),
        True,
        1.0,
        "Found none of 2 forbidden texts",
        {"mode": "all", "found": [], "missing": [], "forbidden_found": []},
    )
    check(
        strategy.evaluate(WEATHER, "I am unable"),
        False,
        0.5,
        "Found 1 of 2 forbidden texts: 'unable'",
        {"mode": "all", "found": [], "missing": [], "forbidden_found": ["unable"]},
    )


def test_contains_defaults_to_the_expected_output() -> None:
    check(
        ContainsStrategy().evaluate(WEATHER, "It's 24°C"),
        True,
        1.0,
        "Found the required text",
        {"mode": "all", "found": ["24°C"], "missing": [], "forbidden_found": []},
    )
    check(
        ContainsStrategy().evaluate(
            RETRIEVER,
            "Reservations can be cancelled up to 11 days prior to the start of the booking period.",
        ),
        False,
        0.5,
        "Missing 1 of 2 required texts: 'If the booking period is less than 4 days, "
        "cancellations are not permitted.'",
        {
            "mode": "all",
            "found": [RETRIEVER.expected_output[0]],
            "missing": [RETRIEVER.expected_output[1]],
            "forbidden_found": [],
        },
    )
    check(
        ContainsStrategy(mode="any").evaluate(RETRIEVER, "nothing"),
        False,
        0.0,
        "Found none of 2 texts: 'Reservations can be cancelled up to 11 days prior to the "
        "start of the booking period.', 'If the booking period is less than 4 days, "
        "cancellations are not permitted.'",
        {
            "mode": "any",
            "found": [],
            "missing": list(RETRIEVER.expected_output),
            "forbidden_found": [],
        },
    )


def test_contains_without_texts_or_expected_output_fails_with_the_fix() -> None:
    check(
        ContainsStrategy().evaluate(NO_EXPECTED, "text"),
        False,
        0.0,
        "Sample 'open' has no expected output to look for: set its expected output, give it "
        "must-contain / must-not-contain, or pass must_contain=",
    )


def test_contains_with_empty_lists_passes_like_the_seed_out_of_scope_case() -> None:
    check(
        ContainsStrategy([], []).evaluate(NO_EXPECTED, "Paris"),
        True,
        1.0,
        "Nothing to check: no texts given",
        {"mode": "all", "found": [], "missing": [], "forbidden_found": []},
    )


def test_contains_given_must_not_contain_only_ignores_the_expected_output() -> None:
    result = ContainsStrategy(must_not_contain="sorry").evaluate(CAPITAL, "Lyon")
    check(
        result,
        True,
        1.0,
        "Found none of 1 forbidden text",
        {"mode": "all", "found": [], "missing": [], "forbidden_found": []},
    )


def test_contains_none_and_non_str_output() -> None:
    check(ContainsStrategy("4").evaluate(WEATHER, None), False, 0.0, "output is None")
    assert ContainsStrategy("24").evaluate(WEATHER, 24).passed is True


def test_contains_construction_errors() -> None:
    with pytest.raises(ValueError) as info:
        ContainsStrategy(["a"], mode="some")  # type: ignore[arg-type]
    assert str(info.value) == "mode must be 'all' or 'any', got 'some'"
    with pytest.raises(ValueError) as info:
        ContainsStrategy(["a", ""])
    assert str(info.value) == (
        "must_contain must not hold an empty string: it is found in any text"
    )
    with pytest.raises(TypeError) as type_info:
        ContainsStrategy(must_not_contain=["a", 3])  # type: ignore[list-item]
    assert str(type_info.value) == "must_not_contain must hold strings, got 3"
    with pytest.raises(TypeError) as type_info:
        ContainsStrategy(42)  # type: ignore[arg-type]
    assert str(type_info.value) == "must_contain must be a string or a list of strings, got 42"
    with pytest.raises(TypeError) as type_info:
        ContainsStrategy(["a"], case_sensitive=None)  # type: ignore[arg-type]
    assert str(type_info.value) == "case_sensitive must be True or False, got None"


# --- RegexStrategy -------------------------------------------------------------------------


def test_regex_search_passes_and_reports_the_match() -> None:
    check(
        RegexStrategy(r"\d+°C").evaluate(WEATHER, "It is 24°C now"),
        True,
        1.0,
        "Output matches \"\\d+°C\" at 6-10: '24°C'",
        {"pattern": r"\d+°C", "matched": True, "match": "24°C", "span": [6, 10]},
    )


def test_regex_search_failure_shows_the_output() -> None:
    check(
        RegexStrategy(r"\d+°C").evaluate(WEATHER, "It is warm"),
        False,
        0.0,
        "Output does not match \"\\d+°C\": 'It is warm'",
        {"pattern": r"\d+°C", "matched": False, "match": None, "span": None},
    )


def test_regex_fullmatch_mode() -> None:
    strategy = RegexStrategy(r"\d+°C", mode="fullmatch")
    check(
        strategy.evaluate(WEATHER, "24°C"),
        True,
        1.0,
        "Output fully matches \"\\d+°C\" at 0-4: '24°C'",
        {"pattern": r"\d+°C", "matched": True, "match": "24°C", "span": [0, 4]},
    )
    check(
        strategy.evaluate(WEATHER, "It is 24°C"),
        False,
        0.0,
        "Output does not fully match \"\\d+°C\": 'It is 24°C'",
        {"pattern": r"\d+°C", "matched": False, "match": None, "span": None},
    )


def test_regex_must_not_match() -> None:
    strategy = RegexStrategy(r"i (cannot|can't)", flags=re.IGNORECASE, must_match=False)
    check(
        strategy.evaluate(WEATHER, "Sorry, I CANNOT help"),
        False,
        0.0,
        "Output matches the forbidden pattern \"i (cannot|can't)\" at 7-15: 'I CANNOT'",
        {"pattern": "i (cannot|can't)", "matched": True, "match": "I CANNOT", "span": [7, 15]},
    )
    check(
        strategy.evaluate(WEATHER, "24°C"),
        True,
        1.0,
        'Output does not match the forbidden pattern "i (cannot|can\'t)"',
        {"pattern": "i (cannot|can't)", "matched": False, "match": None, "span": None},
    )


def test_regex_accepts_a_compiled_pattern_and_is_case_sensitive_without_flags() -> None:
    strategy = RegexStrategy(re.compile("paris", re.IGNORECASE))
    assert strategy.evaluate(CAPITAL, "PARIS").passed is True
    assert RegexStrategy("paris").evaluate(CAPITAL, "PARIS").passed is False


def test_regex_none_and_non_str_output() -> None:
    check(RegexStrategy("x").evaluate(CAPITAL, None), False, 0.0, "output is None")
    assert RegexStrategy(r"^\d+$").evaluate(CAPITAL, 2024).passed is True


def test_regex_bad_pattern_names_the_pattern_and_the_error() -> None:
    with pytest.raises(ValueError) as info:
        RegexStrategy("(unclosed")
    assert str(info.value) == (
        "Invalid regular expression '(unclosed': missing ), unterminated subpattern at position 0"
    )
    assert isinstance(info.value.__cause__, re.error)


def test_regex_other_construction_errors() -> None:
    with pytest.raises(ValueError) as info:
        RegexStrategy("x", mode="match")  # type: ignore[arg-type]
    assert str(info.value) == "mode must be 'search' or 'fullmatch', got 'match'"
    with pytest.raises(ValueError) as info:
        RegexStrategy(re.compile("x"), flags=re.I)
    assert str(info.value) == (
        "flags cannot be given with the compiled pattern 'x': compile it with the flags instead"
    )
    with pytest.raises(TypeError) as type_info:
        RegexStrategy(re.compile(b"x"))  # type: ignore[arg-type]
    assert str(type_info.value) == "pattern must match text, not bytes: b'x'"
    with pytest.raises(TypeError) as type_info:
        RegexStrategy(None)  # type: ignore[arg-type]
    assert str(type_info.value) == "pattern must be a string or a compiled pattern, got None"
    with pytest.raises(TypeError) as type_info:
        RegexStrategy("x", flags="i")  # type: ignore[arg-type]
    assert str(type_info.value) == "flags must be re flags (an int), got 'i'"
    with pytest.raises(TypeError) as type_info:
        RegexStrategy("x", must_match=1)  # type: ignore[arg-type]
    assert str(type_info.value) == "must_match must be True or False, got 1"


# --- NotBlankStrategy ----------------------------------------------------------------------


def test_not_blank() -> None:
    strategy = NotBlankStrategy()
    check(
        strategy.evaluate(WEATHER, "  ok "),
        True,
        1.0,
        "Output has 2 characters after stripping",
        {"length": 2, "min_length": 1},
    )
    check(
        strategy.evaluate(WEATHER, "x"),
        True,
        1.0,
        "Output has 1 character after stripping",
        {"length": 1, "min_length": 1},
    )
    check(
        strategy.evaluate(WEATHER, " \n\t "),
        False,
        0.0,
        "Output is blank",
        {"length": 0, "min_length": 1},
    )
    check(
        strategy.evaluate(WEATHER, ""),
        False,
        0.0,
        "Output is blank",
        {"length": 0, "min_length": 1},
    )
    check(strategy.evaluate(WEATHER, None), False, 0.0, "output is None")


def test_not_blank_min_length() -> None:
    strategy = NotBlankStrategy(min_length=50)
    check(
        strategy.evaluate(WEATHER, "  Mysore: 24°C  "),
        False,
        0.0,
        "Output has 12 characters after stripping whitespace, fewer than the minimum of 50",
        {"length": 12, "min_length": 50},
    )
    assert strategy.evaluate(WEATHER, "x" * 50).passed is True
    assert strategy.evaluate(WEATHER, "x" * 49).passed is False


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, "min_length must be at least 1, got 0"),
        (-3, ValueError, "min_length must be at least 1, got -3"),
        (True, TypeError, "min_length must be an int, got True"),
        (2.5, TypeError, "min_length must be an int, got 2.5"),
    ],
)
def test_not_blank_rejects_bad_min_length(value: Any, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        NotBlankStrategy(min_length=value)
    assert str(info.value) == message


# --- JsonStrategy --------------------------------------------------------------------------


def test_json_valid_text_and_values() -> None:
    strategy = JsonStrategy()
    check(
        strategy.evaluate(WEATHER, '{"temp": 24}'),
        True,
        1.0,
        "Output is valid JSON (object)",
        {"fenced": False, "json_type": "object"},
    )
    check(
        strategy.evaluate(WEATHER, "[1, 2]"),
        True,
        1.0,
        "Output is valid JSON (array)",
        {"fenced": False, "json_type": "array"},
    )
    check(
        strategy.evaluate(WEATHER, "null"),
        True,
        1.0,
        "Output is valid JSON (null)",
        {"fenced": False, "json_type": "null"},
    )
    check(
        strategy.evaluate(WEATHER, "true"),
        True,
        1.0,
        "Output is valid JSON (boolean)",
        {"fenced": False, "json_type": "boolean"},
    )
    check(
        strategy.evaluate(WEATHER, b'"x"'),
        True,
        1.0,
        "Output is valid JSON (string)",
        {"fenced": False, "json_type": "string"},
    )
    check(
        strategy.evaluate(WEATHER, {"a": 1}),
        True,
        1.0,
        "Output is valid JSON (object)",
        {"fenced": False, "json_type": "object"},
    )
    check(
        strategy.evaluate(WEATHER, [1]),
        True,
        1.0,
        "Output is valid JSON (array)",
        {"fenced": False, "json_type": "array"},
    )
    check(
        strategy.evaluate(WEATHER, 3.5),
        True,
        1.0,
        "Output is valid JSON (number)",
        {"fenced": False, "json_type": "number"},
    )


def test_json_parse_error_gives_the_position() -> None:
    check(
        JsonStrategy().evaluate(WEATHER, '{\n  "temp": 24,\n}'),
        False,
        0.0,
        "Output is not valid JSON: trailing comma is not allowed at line 2, column 13 (char 14)",
        {
            "fenced": False,
            "error": "trailing comma is not allowed",
            "line": 2,
            "column": 13,
            "position": 14,
        },
    )
    check(
        JsonStrategy().evaluate(WEATHER, ""),
        False,
        0.0,
        "Output is not valid JSON: Input is a zero-length, empty document at line 1, "
        "column 1 (char 0)",
        {
            "fenced": False,
            "error": "Input is a zero-length, empty document",
            "line": 1,
            "column": 1,
            "position": 0,
        },
    )


def test_json_rejects_invalid_utf8_bytes_and_none() -> None:
    check(
        JsonStrategy().evaluate(WEATHER, b'"\xff"'),
        False,
        0.0,
        "Output is not valid JSON: 'utf-8' codec can't decode byte 0xff in position 1: "
        "invalid start byte",
        {"fenced": False},
    )
    check(JsonStrategy().evaluate(WEATHER, None), False, 0.0, "output is None")


def test_json_is_strict_about_fences_by_default() -> None:
    fenced = '```json\n{"score": 4, "reason": "ok"}\n```'
    result = JsonStrategy().evaluate(WEATHER, fenced)
    assert result.passed is False
    assert result.explanation == (
        "Output is not valid JSON: unexpected character, expected a JSON value at line 1, "
        "column 1 (char 0)"
    )
    check(
        JsonStrategy(allow_fences=True, required_keys=["score", "reason"]).evaluate(
            WEATHER, f"  {fenced}\n"
        ),
        True,
        1.0,
        "Output is a JSON object with all 2 required keys",
        {"fenced": True, "json_type": "object", "missing_keys": []},
    )
    check(
        JsonStrategy(allow_fences=True).evaluate(WEATHER, "```\n[1]\n```"),
        True,
        1.0,
        "Output is valid JSON (array)",
        {"fenced": True, "json_type": "array"},
    )
    check(
        JsonStrategy(allow_fences=True).evaluate(WEATHER, "[2]"),
        True,
        1.0,
        "Output is valid JSON (array)",
        {"fenced": False, "json_type": "array"},
    )


def test_json_required_keys() -> None:
    strategy = JsonStrategy(required_keys=["score", "reason", "passed"])
    check(
        strategy.evaluate(WEATHER, '{"score": 3}'),
        False,
        0.0,
        "JSON object is missing 2 of 3 required keys: 'reason', 'passed'",
        {"fenced": False, "json_type": "object", "missing_keys": ["reason", "passed"]},
    )
    check(
        strategy.evaluate(WEATHER, {"score": 3, "reason": "", "passed": False}),
        True,
        1.0,
        "Output is a JSON object with all 3 required keys",
        {"fenced": False, "json_type": "object", "missing_keys": []},
    )
    check(
        JsonStrategy(required_keys="score").evaluate(WEATHER, "[3]"),
        False,
        0.0,
        "Output is a JSON array, not an object: the required keys 'score' cannot be present",
        {"fenced": False, "json_type": "array", "missing_keys": ["score"]},
    )


def test_json_construction_errors() -> None:
    with pytest.raises(TypeError) as info:
        JsonStrategy(required_keys=[1])  # type: ignore[list-item]
    assert str(info.value) == "required_keys must hold strings, got 1"
    with pytest.raises(TypeError) as info:
        JsonStrategy(allow_fences="yes")  # type: ignore[arg-type]
    assert str(info.value) == "allow_fences must be True or False, got 'yes'"


# --- SegmentsStrategy ----------------------------------------------------------------------


RETRIEVED = [
    "Our policy: RESERVATIONS CAN BE CANCELLED UP TO 11 DAYS PRIOR TO THE START OF THE "
    "BOOKING PERIOD.",
    "Vehicles must not be used for racing.",
]


def test_segments_upstream_behaviour_on_a_retriever_sample() -> None:
    check(
        SegmentsStrategy().evaluate(RETRIEVER, RETRIEVED),
        False,
        0.5,
        "Found 1 of 2 expected segments; missing: 'If the booking period is less than 4 days, "
        "cancellations are not permitted.'",
        {
            "found": 1,
            "expected": 2,
            "missing": [RETRIEVER.expected_output[1]],
            "threshold": 1.0,
        },
    )
    everything = [
        *RETRIEVED,
        "if the booking period is less than 4 days, cancellations are not permitted. Thanks.",
    ]
    check(
        SegmentsStrategy().evaluate(RETRIEVER, everything),
        True,
        1.0,
        "Found 2 of 2 expected segments",
        {"found": 2, "expected": 2, "missing": [], "threshold": 1.0},
    )


def test_segments_threshold_and_case_sensitivity() -> None:
    result = SegmentsStrategy(threshold=0.5).evaluate(RETRIEVER, RETRIEVED)
    assert (result.passed, result.score) == (True, 0.5)
    assert result.metadata["threshold"] == 0.5
    strict = SegmentsStrategy(case_sensitive=True).evaluate(RETRIEVER, RETRIEVED)
    assert (strict.passed, strict.score) == (False, 0.0)
    assert strict.explanation is not None
    assert strict.explanation.startswith("Found 0 of 2 expected segments; missing: ")


def test_segments_given_explicitly_and_single_string_output() -> None:
    strategy = SegmentsStrategy(["24°C", "clear", "humid"])
    check(
        strategy.evaluate(WEATHER, "Mysore: 24°C, Clear skies"),
        False,
        2 / 3,
        "Found 2 of 3 expected segments; missing: 'humid'",
        {"found": 2, "expected": 3, "missing": ["humid"], "threshold": 1.0},
    )
    assert SegmentsStrategy("Paris").evaluate(CAPITAL, ("Lyon", "paris")).passed is True
    assert SegmentsStrategy("42").evaluate(CAPITAL, [41, 42]).passed is True
    assert SegmentsStrategy("42").evaluate(CAPITAL, 1423).passed is True


def test_segments_single_string_expected_output() -> None:
    check(
        SegmentsStrategy().evaluate(CAPITAL, ["The capital is Paris."]),
        True,
        1.0,
        "Found 1 of 1 expected segments",
        {"found": 1, "expected": 1, "missing": [], "threshold": 1.0},
    )


def test_segments_without_expected_segments_or_output() -> None:
    check(
        SegmentsStrategy().evaluate(NO_EXPECTED, ["x"]),
        False,
        0.0,
        "Sample 'open' has no expected segments: set its expected outputs or pass segments=",
    )
    check(
        SegmentsStrategy().evaluate(EvaluationSample("empty", ["q"], []), ["x"]),
        False,
        0.0,
        "Sample 'empty' has an empty list of expected segments",
    )
    check(SegmentsStrategy().evaluate(RETRIEVER, None), False, 0.0, "output is None")
    check(
        SegmentsStrategy().evaluate(RETRIEVER, []),
        False,
        0.0,
        "Found 0 of 2 expected segments; missing: 'Reservations can be cancelled up to 11 "
        "days prior to the start of the booking period.', 'If the booking period is less "
        "than 4 days, cancellations are not permitted.'",
        {
            "found": 0,
            "expected": 2,
            "missing": list(RETRIEVER.expected_output),
            "threshold": 1.0,
        },
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"segments": []},
            ValueError,
            "segments must not be empty: pass None to use the expected output",
        ),
        ({"threshold": 1.5}, ValueError, "threshold must be between 0.0 and 1.0, got 1.5"),
        ({"threshold": float("nan")}, ValueError, "threshold must be between 0.0 and 1.0, got nan"),
        (
            {"threshold": True},
            TypeError,
            "threshold must be a number between 0.0 and 1.0, got True",
        ),
        (
            {"segments": ["a", ""]},
            ValueError,
            "segments must not hold an empty string: it is found in any text",
        ),
        ({"case_sensitive": "no"}, TypeError, "case_sensitive must be True or False, got 'no'"),
    ],
)
def test_segments_construction_errors(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        SegmentsStrategy(**kwargs)
    assert str(info.value) == message


# --- GuardrailStrategy ---------------------------------------------------------------------


ON_TOPIC = EvaluationSample(
    "on_topic_rag", ["How does RAG work in Quarkus LangChain4j?"], "ACCEPT", tags=["on-topic"]
)
OFF_TOPIC = EvaluationSample(
    "off_topic_weather", ["What's the weather today?"], "REJECT", tags=["off-topic"]
)


def _verdict_metadata(
    expected: str, verdict: str, classification: str, reason: str | None = None
) -> dict[str, Any]:
    return {
        "expected": expected,
        "verdict": verdict,
        "reason": reason,
        "classification": classification,
    }


def test_guardrail_seed_outcomes() -> None:
    strategy = GuardrailStrategy()
    check(
        strategy.evaluate(ON_TOPIC, "ACCEPT"),
        True,
        1.0,
        "Correctly accepted on-topic question",
        _verdict_metadata("ACCEPT", "ACCEPT", "true_positive"),
    )
    check(
        strategy.evaluate(ON_TOPIC, "REJECT:Off-topic question"),
        False,
        0.0,
        "False negative: incorrectly rejected on-topic question (Off-topic question)",
        _verdict_metadata("ACCEPT", "REJECT", "false_negative", "Off-topic question"),
    )
    check(
        strategy.evaluate(OFF_TOPIC, "REJECT:Off-topic question"),
        True,
        1.0,
        "Correctly rejected off-topic question (Off-topic question)",
        _verdict_metadata("REJECT", "REJECT", "true_negative", "Off-topic question"),
    )
    check(
        strategy.evaluate(OFF_TOPIC, "ACCEPT"),
        False,
        0.0,
        "False positive: incorrectly accepted off-topic question",
        _verdict_metadata("REJECT", "ACCEPT", "false_positive"),
    )


def test_guardrail_reads_bools_text_and_case_insensitively() -> None:
    strategy = GuardrailStrategy()
    assert strategy.evaluate(ON_TOPIC, True).passed is True
    assert strategy.evaluate(OFF_TOPIC, False).passed is True
    assert strategy.evaluate(OFF_TOPIC, True).passed is False
    assert strategy.evaluate(OFF_TOPIC, "  reject - not about cars").metadata["reason"] == (
        "not about cars"
    )
    assert strategy.evaluate(OFF_TOPIC, "REJECTED").passed is True
    assert strategy.evaluate(ON_TOPIC, "Accepted.").passed is True
    lower = EvaluationSample("lower", ["q"], "reject: because")
    check(
        strategy.evaluate(lower, "REJECT"),
        True,
        1.0,
        "Correctly rejected off-topic question",
        _verdict_metadata("REJECT", "REJECT", "true_negative"),
    )


def test_guardrail_reads_verdict_objects_and_enums() -> None:
    class Result(enum.Enum):
        SUCCESS = "accept"
        FAILURE = "reject"

    class Verdict(enum.Enum):
        ACCEPT = 1
        REJECT = 2

    @dataclass
    class WithResult:
        result: Any

    @dataclass
    class WithAccepted:
        accepted: bool

    @dataclass
    class WithVerdict:
        verdict: str

    strategy = GuardrailStrategy()
    assert strategy.evaluate(OFF_TOPIC, WithResult(Result.FAILURE)).passed is True
    assert strategy.evaluate(ON_TOPIC, WithResult(Result.FAILURE)).passed is False
    assert strategy.evaluate(ON_TOPIC, WithAccepted(True)).passed is True
    assert strategy.evaluate(ON_TOPIC, Verdict.ACCEPT).passed is True
    check(
        strategy.evaluate(ON_TOPIC, WithVerdict("REJECT: jailbreak attempt")),
        False,
        0.0,
        "False negative: incorrectly rejected on-topic question (jailbreak attempt)",
        _verdict_metadata("ACCEPT", "REJECT", "false_negative", "jailbreak attempt"),
    )


def test_guardrail_unknown_output_is_a_failure_that_lists_the_accepted_forms() -> None:
    message = (
        "is not a guardrail verdict: expected ACCEPT or REJECT (or text starting with one), "
        "a bool, or an object with a result, verdict or accepted attribute"
    )
    for output, shown in [("maybe", "'maybe'"), ("ACCEPTABLE", "'ACCEPTABLE'"), (3, "3")]:
        check(
            GuardrailStrategy().evaluate(ON_TOPIC, output),
            False,
            0.0,
            f"Output {shown} {message}",
            {"expected": "ACCEPT", "verdict": None},
        )
    check(GuardrailStrategy().evaluate(ON_TOPIC, None), False, 0.0, "output is None")


def test_guardrail_unknown_expected_behaviour_is_a_failing_result() -> None:
    for expected, shown in [("MAYBE", "'MAYBE'"), (None, "None"), (True, "True")]:
        sample = EvaluationSample("odd", ["q"], expected)
        check(
            GuardrailStrategy().evaluate(sample, "ACCEPT"),
            False,
            0.0,
            f"Unknown expected behavior: {shown}; the expected output of sample 'odd' must "
            "be ACCEPT or REJECT (or pass expect=)",
        )


def test_guardrail_expect_overrides_the_sample() -> None:
    strategy = GuardrailStrategy(expect="reject")
    check(
        strategy.evaluate(ON_TOPIC, "REJECT"),
        True,
        1.0,
        "Correctly rejected off-topic question",
        _verdict_metadata("REJECT", "REJECT", "true_negative"),
    )
    assert strategy.evaluate(NO_EXPECTED, "ACCEPT").passed is False


@pytest.mark.parametrize("expect", ["yes", "", 1])
def test_guardrail_rejects_a_bad_expect(expect: Any) -> None:
    with pytest.raises(ValueError) as info:
        GuardrailStrategy(expect=expect)
    assert str(info.value) == f"expect must be 'ACCEPT' or 'REJECT', got {expect!r}"


_QUICK_CHECKS = [
    NotBlankStrategy(),
    NotBlankStrategy(min_length=5),
    ContainsStrategy(must_not_contain=["I cannot", "I don't know"]),
    ContainsStrategy(must_contain="Paris"),
    ContainsStrategy(["Paris", "France"], ["London"]),
    ContainsStrategy(["Paris", "France"], mode="any"),
    ContainsStrategy(must_not_contain="cannot", case_sensitive=False),
    ContainsStrategy(must_contain=[]),
    ContainsStrategy(),
]
_QUICK_OUTPUTS: list[Any] = [
    "Paris is the capital of France.",
    "  Paris  ",
    "I cannot say; I don't know.",
    "I CANNOT say",
    "London, not Paris",
    "Pa",
    "x",
    "   ",
    "",
    None,
    42,
    ["Paris"],
]


@pytest.mark.parametrize("strategy", _QUICK_CHECKS, ids=repr)
@pytest.mark.parametrize("sample", [CAPITAL, NO_EXPECTED, WEATHER], ids=lambda s: s.name)
def test_the_quick_pass_of_a_text_check_is_the_result_the_general_case_makes(
    strategy: TextStrategy, sample: EvaluationSample
) -> None:
    """NotBlankStrategy and ContainsStrategy decide the usual pass in ``evaluate`` itself
    (issue 25): every field of the result must be what ``_evaluate_text`` makes."""
    quick = 0
    for output in _QUICK_OUTPUTS:
        made = strategy.evaluate(sample, output)
        general = TextStrategy.evaluate(strategy, sample, output)  # through _evaluate_text
        assert made == general, output
        assert (made.passed, made.score, made.explanation, made.skipped) == (
            general.passed,
            general.score,
            general.explanation,
            general.skipped,
        )
        assert dict(made.metadata) == dict(general.metadata)
        assert [type(value) for value in made.metadata.values()] == [
            type(value) for value in general.metadata.values()
        ]
        assert type(made.metadata) is type(general.metadata)
        quick += made.passed and type(output) is str
    if not isinstance(strategy, ContainsStrategy) or strategy._passes_with is not None:
        assert quick  # the quick path was taken at least once
