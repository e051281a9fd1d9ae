from __future__ import annotations

import math

import pytest

from aeval import ErrorInfo, EvaluationResult, EvaluationRow, EvaluationSample, Outcome


class TestEvaluationResult:
    @pytest.mark.parametrize("score", [1.0000001, -0.1, 2])
    def test_score_out_of_range(self, score: float) -> None:
        with pytest.raises(ValueError, match=f"Score must be between 0.0 and 1.0, got: {score}"):
            EvaluationResult(True, score)

    def test_nan_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="Score must be between"):
            EvaluationResult(False, math.nan)

    def test_bounds_are_inclusive(self) -> None:
        assert EvaluationResult(True, 0.0).score == 0.0
        assert EvaluationResult(True, 1.0).score == 1.0

    def test_non_numbers_are_rejected(self) -> None:
        with pytest.raises(TypeError, match="Score must be a number"):
            EvaluationResult(True, "0.5")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="passed must be a bool"):
            EvaluationResult(1, 0.5)  # type: ignore[arg-type]

    def test_factories(self) -> None:
        assert EvaluationResult.passing(0.9) == EvaluationResult(True, 0.9, None, {})
        assert EvaluationResult.failing(0.2, "why") == EvaluationResult(False, 0.2, "why")
        assert EvaluationResult.failing("why") == EvaluationResult(False, 0.0, "why")
        assert EvaluationResult.from_boolean(True).score == 1.0
        assert EvaluationResult.from_boolean(False).score == 0.0
        assert EvaluationResult.from_boolean(False).passed is False

    def test_passed_and_score_are_independent(self) -> None:
        result = EvaluationResult(True, 0.3)
        assert result.passed and result.score == 0.3

    def test_unscored(self) -> None:
        result = EvaluationResult.unscored("judge reply was not JSON", {"raw_reply": "hmm"})
        assert result.is_unscored
        assert result.passed is False
        assert result.score is None
        with pytest.raises(ValueError, match="An unscored result cannot pass"):
            EvaluationResult(True, None)

    def test_with_metadata_merges_without_mutating(self) -> None:
        original = EvaluationResult.passing().with_metadata({"a": 1, "b": 2})
        merged = original.with_metadata({"b": 3, "c": 4})
        assert dict(merged.metadata) == {"a": 1, "b": 3, "c": 4}
        assert dict(original.metadata) == {"a": 1, "b": 2}
        with pytest.raises(TypeError):
            merged.metadata["d"] = 5  # type: ignore[index]

    def test_with_explanation_replaces(self) -> None:
        result = EvaluationResult.failing("a").with_explanation("b")
        assert result.explanation == "b"
        assert result.with_explanation(None).explanation is None

    def test_none_metadata_becomes_empty(self) -> None:
        assert dict(EvaluationResult(True, 1.0, None, None).metadata) == {}


class TestRows:
    def test_outcome_from_result(self) -> None:
        sample = EvaluationSample("s", ["q"], "a")
        passed = EvaluationRow.from_result(sample, "x", "a", EvaluationResult.passing())
        failed = EvaluationRow.from_result(sample, "x", "b", EvaluationResult.failing("no"))
        unscored = EvaluationRow.from_result(sample, "x", "b", EvaluationResult.unscored("?"))
        assert (passed.outcome, failed.outcome, unscored.outcome) == (
            Outcome.PASSED,
            Outcome.FAILED,
            Outcome.UNSCORED,
        )
        assert passed.passed and not failed.passed and not unscored.passed

    def test_error_rows(self) -> None:
        sample = EvaluationSample("s", ["q"], "a")
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            info = ErrorInfo.from_exception(exc)
            bare = ErrorInfo.from_exception(exc, with_traceback=False)
        row = EvaluationRow.from_error(sample, None, None, info)
        assert row.outcome is Outcome.ERROR
        assert row.explanation == "Failed to execute sample 's': RuntimeError: boom"
        assert str(info) == "RuntimeError: boom"
        assert "raise RuntimeError" in (info.traceback or "")
        strategy_row = EvaluationRow.from_error(sample, "judge", "out", info)
        assert strategy_row.explanation == "RuntimeError: boom"
        assert bare.traceback is None


class TestRowDict:
    def test_round_trip(self) -> None:
        row = EvaluationRow.from_error(
            EvaluationSample("q", {"question": "Hi?"}, "Hello", tags=("smoke",)),
            "exact",
            {"answer": [1, 2]},
            ErrorInfo("ValueError", "bad", source="strategy"),
            duration=0.5,
            index=3,
            repeat=1,
            position=2,
            metadata={"why": "because"},
        )
        data = row.to_dict()
        assert data["name"] == "q"
        assert data["outcome"] == "error"
        assert data["tags"] == ["smoke"]
        assert EvaluationRow.from_dict(data) == row

    def test_from_dict_names_the_bad_field(self) -> None:
        data = EvaluationRow(EvaluationSample("q", (), None), "s", 1, Outcome.PASSED, 1.0).to_dict()
        with pytest.raises(ValueError, match="field 'score'"):
            EvaluationRow.from_dict({**data, "score": "high"})
        with pytest.raises(ValueError, match="field 'outcome'"):
            EvaluationRow.from_dict({**data, "outcome": None})
