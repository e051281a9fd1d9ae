from __future__ import annotations

import pytest

from aeval import EvaluationSample, Parameters, Samples


class TestParameters:
    def test_unnamed_values(self) -> None:
        params = Parameters(["a", 2])
        assert params[0] == "a"
        assert params.get(1) == 2
        assert list(params) == ["a", 2]
        assert len(params) == 2
        assert params.names == (None, None)

    def test_named_values_from_a_mapping(self) -> None:
        params = Parameters({"question": "Hi?", "lang": "en"})
        assert params.get("lang") == "en"
        assert params["question"] == "Hi?"
        assert params[1] == "en"  # positional access counts named entries too
        assert params.as_dict() == {"question": "Hi?", "lang": "en"}

    def test_get_by_name_ignores_unnamed_entries_and_returns_the_first_match(self) -> None:
        params = Parameters.of("x", a=1).with_named(b=2)
        assert params.get("a") == 1
        assert params.get("b") == 2
        assert params[0] == "x"
        with pytest.raises(KeyError, match="Parameter not found: x"):
            params.get("x")

    def test_missing_name_and_index(self) -> None:
        params = Parameters(["only"])
        with pytest.raises(KeyError, match="Parameter not found: nope"):
            params.get("nope")
        with pytest.raises(IndexError, match="Parameter index 1 out of range"):
            params[1]
        with pytest.raises(IndexError):
            params.get(-1)
        assert params.get("nope", None) is None
        assert params.get(5, "default") == "default"

    def test_a_bare_string_is_refused(self) -> None:
        with pytest.raises(TypeError, match=r"write \['hello'\]"):
            Parameters("hello")

    def test_equality_and_repr(self) -> None:
        assert Parameters(["a"]) == Parameters(["a"])
        assert Parameters(["a"]) != Parameters({"x": "a"})
        assert repr(Parameters.of(1, lang="en")) == "Parameters(1, lang='en')"
        assert repr(Parameters(["a"])) == "Parameters(['a'])"

    def test_from_pairs_keeps_order_and_names(self) -> None:
        params = Parameters.from_pairs([(None, 1), ("b", 2)])
        assert params.names == (None, "b")
        assert params.values == (1, 2)


class TestEvaluationSample:
    def test_lists_and_mappings_become_parameters(self) -> None:
        sample = EvaluationSample("s", ["q"], "a", tags=["t"], metadata={"k": 1})
        assert isinstance(sample.parameters, Parameters)
        assert sample.parameters[0] == "q"
        assert sample.tags == ("t",)
        assert sample.metadata["k"] == 1
        named = EvaluationSample("n", {"question": "q"}, "a")
        assert named.parameters.get("question") == "q"

    def test_immutable(self) -> None:
        sample = EvaluationSample("s", ["q"], "a")
        with pytest.raises(AttributeError):
            sample.name = "other"  # type: ignore[misc]
        with pytest.raises(TypeError):
            sample.metadata["k"] = 2  # type: ignore[index]

    @pytest.mark.parametrize("name", ["", "  ", None, 3])
    def test_name_must_be_a_non_blank_string(self, name: object) -> None:
        with pytest.raises(ValueError, match="Sample name must be a non-blank string"):
            EvaluationSample(name, ["q"], "a")  # type: ignore[arg-type]

    def test_tags_must_be_strings(self) -> None:
        with pytest.raises(TypeError, match="tags must be strings"):
            EvaluationSample("s", ["q"], "a", tags=[1])  # type: ignore[list-item]

    def test_hashable_even_with_a_list_expected_output(self) -> None:
        sample = EvaluationSample("s", ["q"], ["a", "b"])
        assert {sample: 1}[sample] == 1


def three() -> Samples:
    return Samples(
        [
            EvaluationSample("a", ["1"], "x", tags=["smoke"]),
            EvaluationSample("b", ["2"], "y", tags=["regression"]),
            EvaluationSample("c", ["3"], "z", tags=["smoke", "critical"]),
        ]
    )


class TestSamples:
    def test_sequence_behaviour(self) -> None:
        samples = three()
        assert len(samples) == 3
        assert samples[0].name == "a"
        assert samples.names == ("a", "b", "c")
        assert isinstance(samples[1:], Samples)
        assert samples[1:].names == ("b", "c")
        assert samples.tags == ("smoke", "regression", "critical")

    def test_filter_by_tags_is_or_and_keeps_order(self) -> None:
        samples = three()
        assert samples.filter_by_tags("critical", "regression").names == ("b", "c")
        assert samples.filter_by_tags("unknown").names == ()

    def test_filter_without_tags_returns_the_same_object(self) -> None:
        samples = three()
        assert samples.filter_by_tags() is samples

    def test_concatenation(self) -> None:
        more = Samples([EvaluationSample("d", ["4"], "w")])
        assert (three() + more).names == ("a", "b", "c", "d")

    def test_duplicate_names_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="Duplicate sample name 'a'"):
            three() + three()

    def test_items_must_be_samples(self) -> None:
        with pytest.raises(TypeError, match="item 0 is dict"):
            Samples([{"name": "a"}])  # type: ignore[list-item]

    def test_empty(self) -> None:
        assert len(Samples()) == 0
        assert repr(Samples()) == "Samples([])"
