"""The configuration schema, its validator and the resolution of a configuration file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from _cli import fresh_imports

from aeval import EvaluationSample
from aeval._cli._config import ConfigError, HttpSpec, load_config
from aeval._cli._schema import Validator, load_schema, render_path

__all__ = ["fresh_imports"]

ROOT = Path(__file__).resolve().parent.parent
VALID: dict[str, Any] = {
    "samples": "s.yaml",
    "target": "bot:answer",
    "strategies": [{"name": "exact_match"}],
}


def problems(document: dict[str, Any]) -> list[str]:
    return [str(problem) for problem in Validator(load_schema()).validate(document)]


def test_the_example_config_is_valid() -> None:
    assert problems(yaml.safe_load((ROOT / "examples" / "aeval.yaml").read_text())) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"concurency": 2}, "concurency: unknown key (did you mean 'concurrency'?)"),
        (
            {"colour": 2},
            "colour: unknown key; expected one of 'description', 'samples', "
            "'target', 'strategies', 'concurrency', 'timeout', 'conversation_timeout', "
            "'user_model', 'repeats', 'thresholds', 'output', 'name', 'labels', 'store', "
            "'tools', 'pythonpath'",
        ),
        ({"concurrency": 0}, "concurrency: must be at least 1, got 0"),
        ({"concurrency": 2.5}, "concurrency: expected an integer, got 2.5"),
        ({"timeout": 0}, "timeout: must be greater than 0, got 0"),
        ({"timeout": "fast"}, "timeout: expected a number or null, got 'fast'"),
        ({"samples": 3}, "samples: expected a string, a list or a mapping, got 3"),
        ({"samples": []}, "samples: must not be empty"),
        ({"samples": {"tags": ["a"]}}, "samples: missing required key 'paths'"),
        (
            {"target": "bot.answer"},
            "target: expected 'module:attribute' (like support_bot:answer), got 'bot.answer'",
        ),
        ({"target": {}}, "target: give one of 'function', 'http'"),
        (
            {"target": {"http": {"url": "ftp://x"}}},
            "target.http.url: expected an http:// or https:// URL, got 'ftp://x'",
        ),
        (
            {"target": {"http": {"url": "http://x", "method": "post"}}},
            "target.http.method: expected one of 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', got "
            "'post' (did you mean 'POST'?)",
        ),
        (
            {"target": {"http": {"url": "http://x", "accept_status": [400, 200]}}},
            "target.http.accept_status[1]: must be at least 300, got 200",
        ),
        ({"strategies": []}, "strategies: must not be empty"),
        (
            {"strategies": [{"name": "segments", "threshold": "high"}]},
            "strategies[0].threshold: expected a number, got 'high'",
        ),
        (
            {"strategies": [{"name": "contains", "must_contian": ["x"]}]},
            "strategies[0].must_contian: unknown key (did you mean 'must_contain'?)",
        ),
        ({"strategies": [{"name": "regex"}]}, "strategies[0]: missing required key 'pattern'"),
        (
            {"strategies": [{"name": "judge", "model": {"model": "m", "api_key": "k"}}]},
            "strategies[0].model.api_key: unknown key (did you mean 'api_key_env'?)",
        ),
        (
            {"strategies": [{"class": "x:Y", "arg": {}}]},
            "strategies[0].arg: unknown key (did you mean 'args'?)",
        ),
        ({"strategies": ["exact_match"]}, "strategies[0]: expected a mapping, got 'exact_match'"),
        (
            {"thresholds": {"tag_min_scores": {"smoke": 101}}},
            "thresholds.tag_min_scores.smoke: must be at most 100, got 101",
        ),
        ({"output": {"formats": "markdown"}}, "output.formats: expected a list, got 'markdown'"),
    ],
)
def test_each_problem_names_its_key(change: dict[str, Any], expected: str) -> None:
    assert problems({**VALID, **change}) == [expected]


def test_every_problem_is_reported_in_document_order() -> None:
    document = {"target": 1, "strategies": [{"name": "json", "required_keys": 3}]}
    assert problems(document) == [
        "(top level): missing required key 'samples'",
        "target: expected a string or a mapping, got 1",
        "strategies[0].required_keys: expected a string or a list, got 3",
    ]


def test_render_path() -> None:
    assert render_path(("strategies", 1, "threshold")) == "strategies[1].threshold"
    assert render_path(()) == "(top level)"


def test_the_validator_agrees_with_jsonschema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    checker = jsonschema.Draft202012Validator(dict(load_schema()))
    checker.check_schema(dict(load_schema()))
    documents = [
        VALID,
        {**VALID, "strategies": [{"name": "segments", "threshold": "high"}]},
        {**VALID, "target": {"http": {"url": "http://x", "body": {"q": "{0}"}}}},
        {**VALID, "target": {"function": "a:b", "http": {"url": "http://x"}}},
        {**VALID, "strategies": [{"class": "m:C", "args": {"k": 1}}]},
        {**VALID, "strategies": [{"name": "judge", "model": {"model": "m"}, "scale": [1, 5]}]},
        {**VALID, "strategies": [{"name": "similarity", "model": {}, "threshold": 2}]},
    ]
    for document in documents:
        assert checker.is_valid(document) == (problems(document) == []), document


def test_load_config_resolves_paths_against_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "aeval.yaml"
    path.parent.mkdir()
    path.write_text(
        "samples: {paths: [a.yaml, 'https://example.test/s.jsonl'], tags: [smoke]}\n"
        "target: {http: {url: 'http://127.0.0.1:1/x', body: {q: '{0}'}}}\n"
        "strategies: [{name: not_blank}]\n"
        "output: {dir: results, formats: [json]}\n"
    )

    config = load_config(path)

    assert config.samples == (
        str(path.parent.resolve() / "a.yaml"),
        "https://example.test/s.jsonl",
    )
    assert config.tags == ("smoke",)
    assert config.target == HttpSpec(url="http://127.0.0.1:1/x", body={"q": "{0}"}, has_body=True)
    assert config.output_dir == path.parent.resolve() / "results"
    assert config.formats == ("json",)
    assert (config.concurrency, config.timeout, config.repeats) == (4, None, 1)
    assert config.line(("strategies", 0, "name")) == 3


def test_urls_of_any_scheme_are_left_to_the_loaders(tmp_path: Path) -> None:
    path = tmp_path / "aeval.yaml"
    path.write_text(
        "samples: ['file:///data/s.yaml', 's3://bucket/s.jsonl', 'HTTPS://example.test/s.json']\n"
        "target: bot:answer\nstrategies: [{name: not_blank}]\n"
    )

    assert load_config(path).samples == (
        "file:///data/s.yaml",
        "s3://bucket/s.jsonl",
        "HTTPS://example.test/s.json",
    )


def test_load_config_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError) as caught:
        load_config(empty)
    assert str(caught.value) == f"{empty}: the configuration file is empty"
    assert isinstance(caught.value, ValueError)


def _config_with(tmp_path: Path, strategies: str) -> Path:
    path = tmp_path / "aeval.yaml"
    path.write_text(f"samples: s.yaml\ntarget: bot:answer\nstrategies:\n{strategies}")
    return path


def test_strategies_are_built_from_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aeval._cli._build import build_strategies
    from aeval.strategies.judge import AiJudgeStrategy
    from aeval.strategies.similarity import SemanticSimilarityStrategy
    from aeval.strategies.text import ContainsStrategy, RegexStrategy

    monkeypatch.setenv("JUDGE_KEY", "k")
    config = load_config(
        _config_with(
            tmp_path,
            "  - {name: contains, must_contain: [a], mode: any, label: has-a}\n"
            "  - {name: regex, pattern: '^x', flags: [IGNORECASE]}\n"
            "  - {name: judge, model: {model: m, base_url: 'http://127.0.0.1:1/v1', "
            "api_key_env: JUDGE_KEY}, structured: true, scale: [1, 5]}\n"
            "  - {name: similarity, model: {model: e, base_url: 'http://127.0.0.1:1/v1'}, "
            "threshold: 0.7}\n",
        )
    )

    built = build_strategies(config)

    contains, regex, judge, similarity = built.strategies
    assert isinstance(contains, ContainsStrategy) and contains.name == "has-a"
    assert isinstance(regex, RegexStrategy)
    sample = EvaluationSample("s", ["q"], None)
    assert regex.evaluate(sample, "X marks").passed
    assert isinstance(judge, AiJudgeStrategy)
    assert isinstance(similarity, SemanticSimilarityStrategy)
    assert len(built.resources) == 2


def test_a_missing_api_key_variable_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aeval._cli._build import build_strategies

    monkeypatch.delenv("JUDGE_KEY", raising=False)
    path = _config_with(
        tmp_path, "  - name: judge\n    model:\n      model: m\n      api_key_env: JUDGE_KEY\n"
    )

    with pytest.raises(ConfigError) as caught:
        build_strategies(load_config(path))

    assert str(caught.value) == (
        f"{path}:7: strategies[0].model.api_key_env: the environment variable JUDGE_KEY is not "
        "set: export it with the API key"
    )


LAUGHS = "\n".join(
    [
        '      a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"      a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)),
    ]
)


def test_a_yaml_alias_bomb_in_strategy_args_is_a_config_error(tmp_path: Path) -> None:
    path = _config_with(tmp_path, f"  - class: mod:Strategy\n    args:\n{LAUGHS}\n")
    assert path.stat().st_size < 1024

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    [problem] = caught.value.problems
    assert problem == (
        f"{path}:12: YAML aliases expand the document by more than 1,000,000 nodes (passed at "
        "the alias *a5, line 12, column 16): write the repeated values out, or nest fewer "
        "aliases inside aliases"
    )


@pytest.mark.parametrize("depth", [101, 5_000])
def test_deep_nesting_in_the_config_is_a_config_error(tmp_path: Path, depth: int) -> None:
    nested = "[" * (depth - 3) + "]" * (depth - 3)
    path = _config_with(tmp_path, f"  - class: mod:Strategy\n    args: {{deep: {nested}}}\n")

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value) == (
        f"{path}:5: the document nests deeper than 100 levels of lists "
        "and mappings (line 5, column 114): flatten the data; aeval reads at most 100 levels"
    )


def test_config_nesting_at_the_limit_loads(tmp_path: Path) -> None:
    nested = "[" * 96 + "]" * 96
    path = _config_with(tmp_path, f"  - class: mod:Strategy\n    args: {{deep: {nested}}}\n")

    config = load_config(path)

    value = config.strategies[0]["args"]["deep"]
    for _ in range(95):
        (value,) = value
    assert value == []


@pytest.mark.parametrize(
    ("text", "line", "key", "shown"),
    [
        ("timeout: .nan\n", 4, "timeout", "nan"),
        ("timeout: .inf\n", 4, "timeout", "inf"),
        ("thresholds:\n  min_score: .nan\n", 5, "thresholds.min_score", "nan"),
        (
            "thresholds:\n  tag_min_scores: {smoke: -.inf}\n",
            5,
            "thresholds.tag_min_scores.smoke",
            "-inf",
        ),
        (
            "target: {http: {url: 'http://127.0.0.1:1/x', timeout: .inf}}\n",
            4,
            "target.http.timeout",
            "inf",
        ),
    ],
)
def test_nan_and_infinite_numbers_are_config_errors(
    tmp_path: Path, text: str, line: int, key: str, shown: str
) -> None:
    path = _config_with(tmp_path, "  - {name: segments, threshold: .nan}\n" + text)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert set(caught.value.problems) == {
        f"{path}:4: strategies[0].threshold: expected a finite number, got nan",
        f"{path}:{line + 1}: {key}: expected a finite number, got {shown}",
    }


@pytest.mark.parametrize("flag", [["--timeout", "inf"], ["--timeout", "nan"]])
def test_nan_and_infinite_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    from aeval.__main__ import main

    with pytest.raises(SystemExit) as caught:
        main(["run", "aeval.yaml", *flag])

    assert caught.value.code == 2
    assert f"expected a positive number of seconds, got '{flag[1]}'" in capsys.readouterr().err


STRATEGIES_MODULE = """\
import sys

from aeval import EvaluationResult


class Boom:
    def __init__(self, device: str) -> None:
        raise RuntimeError(f"no {device} here")


class Quits:
    def __init__(self) -> None:
        sys.exit(3)


class Fatal(BaseException):
    pass


class Aborts:
    def __init__(self) -> None:
        raise Fatal("no licence")


class NotAStrategy:
    pass


class Good:
    def evaluate(self, sample, output):
        return EvaluationResult.from_boolean(True)


def make_check(word: str):
    def check(sample, output):
        return EvaluationResult.from_boolean(word in str(output))

    return check
"""


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{class: 'custom_strategies:Boom', args: {device: GPU}}",
            "cannot build the strategy: RuntimeError: no GPU here",
        ),
        (
            "{class: 'custom_strategies:Quits'}",
            "cannot build the strategy: it called sys.exit(3); a strategy's constructor must "
            "not exit",
        ),
        (
            "{class: 'custom_strategies:Aborts'}",
            "cannot build the strategy: it raised Fatal: no licence (a BaseException that is "
            "not an Exception)",
        ),
        (
            "{class: 'custom_strategies:NotAStrategy'}",
            "'custom_strategies:NotAStrategy' gave a NotAStrategy object, not a strategy: it "
            "needs an evaluate(sample, output) method, or must be a function of (sample, output)",
        ),
        (
            "{class: 'custom_strategies:make_check', args: {word: 1, extra: 2}}",
            "cannot build the strategy: make_check() got an unexpected keyword argument 'extra'",
        ),
    ],
)
@pytest.mark.usefixtures("fresh_imports")
def test_a_custom_strategy_that_cannot_be_built_is_a_config_error(
    tmp_path: Path, entry: str, message: str
) -> None:
    from aeval._cli._build import build_strategies

    (tmp_path / "custom_strategies.py").write_text(STRATEGIES_MODULE)
    path = _config_with(tmp_path, f"  - {{name: not_blank}}\n  - {entry}\n")

    with pytest.raises(ConfigError) as caught:
        build_strategies(load_config(path))

    assert str(caught.value) == f"{path}:5: strategies[1]: {message}"


@pytest.mark.usefixtures("fresh_imports")
def test_custom_strategies_may_be_objects_or_functions(tmp_path: Path) -> None:
    from aeval._cli._build import build_strategies

    (tmp_path / "custom_strategies.py").write_text(STRATEGIES_MODULE)
    path = _config_with(
        tmp_path,
        "  - {class: 'custom_strategies:Good'}\n"
        "  - {class: 'custom_strategies:make_check', args: {word: \"yes\"}}\n",
    )

    good, check = build_strategies(load_config(path)).strategies

    sample = EvaluationSample("s", ["q"])
    assert type(good).__name__ == "Good"
    assert callable(check) and check(sample, "oh yes").passed


def test_the_judge_entry_takes_sampling_options_and_several_models(tmp_path: Path) -> None:
    from aeval._cli._build import build_strategies
    from aeval.models import ChatOptions, OpenAIChatModel, OpenAIEmbedder
    from aeval.strategies.judge import AiJudgeStrategy

    config = load_config(
        _config_with(
            tmp_path,
            "  - name: judge\n"
            "    model:\n"
            "      - {model: a, base_url: 'http://127.0.0.1:1/v1', max_tokens: 99, seed: 4,\n"
            "         deadline: 300, max_attempts: 2, read_timeout_retries: 0}\n"
            "      - {model: b, base_url: 'http://127.0.0.1:1/v1', stop: END}\n"
            "    aggregate: mean\n"
            "    threshold: 0.7\n"
            "    temperature: 0.5\n"
            '    stop: ["\\n\\n"]\n'
            "  - {name: judge, model: {model: c, base_url: 'http://127.0.0.1:1/v1'}, "
            "max_tokens: 12}\n"
            "  - {name: similarity, model: {model: e, base_url: 'http://127.0.0.1:1/v1', "
            "pooling: mean, read_timeout_retries: 0, max_response_bytes: 99000000}}\n",
        )
    )
    built = build_strategies(config)
    panel, single, _ = built.strategies
    assert isinstance(panel, AiJudgeStrategy) and isinstance(single, AiJudgeStrategy)
    assert panel.options == ChatOptions(max_tokens=99, temperature=0.5, stop=["\n\n"])
    assert repr(panel).startswith("AiJudgeStrategy(model=['a', 'b'], aggregate='mean'")
    assert single.options == ChatOptions(max_tokens=12)
    a, b, _, embedder = built.resources
    assert isinstance(a, OpenAIChatModel) and isinstance(b, OpenAIChatModel)
    assert a.options == ChatOptions(max_tokens=99, temperature=0.0, seed=4)
    assert b.options.stop == ("END",)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (a.max_response_bytes, embedder.max_response_bytes) == (4 * 1024**2, 99_000_000)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"name": "judge", "model": {"model": "m"}, "max_tokens": 0},
            "strategies[0].max_tokens: must be at least 1, got 0",
        ),
        (
            {"name": "judge", "model": {"model": "m"}, "aggregate": "vote"},
            "strategies[0].aggregate: expected one of 'majority', 'mean', got 'vote'",
        ),
        (
            {"name": "judge", "model": []},
            "strategies[0].model: must not be empty",
        ),
        (
            {"name": "similarity", "model": {"model": "e", "pooling": "max"}},
            "strategies[0].model.pooling: expected one of 'mean', got 'max'",
        ),
    ],
)
def test_judge_options_are_validated(entry: dict[str, Any], expected: str) -> None:
    assert problems({**VALID, "strategies": [entry]}) == [expected]


def test_max_response_bytes_of_the_http_target_and_the_models_are_validated() -> None:
    http = {"url": "http://127.0.0.1:1/a", "max_response_bytes": 0}
    model = {"model": "m", "max_response_bytes": 1.5}
    assert problems(
        {**VALID, "target": {"http": http}, "strategies": [{"name": "judge", "model": model}]}
    ) == [
        "target.http.max_response_bytes: must be at least 1, got 0",
        "strategies[0].model.max_response_bytes: expected an integer, got 1.5",
    ]


def test_the_http_target_takes_max_response_bytes(tmp_path: Path) -> None:
    path = tmp_path / "aeval.yaml"
    path.write_text(
        "samples: s.yaml\ntarget:\n  http: {url: 'http://127.0.0.1:1/a', "
        "max_response_bytes: 1000}\nstrategies:\n  - name: exact_match\n"
    )
    default = HttpSpec(url="http://127.0.0.1:1/a")
    config = load_config(path)
    assert isinstance(config.target, HttpSpec)
    assert (config.target.max_response_bytes, default.max_response_bytes) == (1000, 4 * 1024**2)


def test_min_kappa_is_a_kappa() -> None:
    assert problems({**VALID, "thresholds": {"min_kappa": 0.6}}) == []
    assert problems({**VALID, "thresholds": {"min_kappa": 2}}) == [
        "thresholds.min_kappa: must be at most 1, got 2"
    ]


def test_the_grounding_strategies_are_built_from_their_names(tmp_path: Path) -> None:
    from aeval._cli._build import build_strategies
    from aeval.strategies import (
        AnswerRelevancyStrategy,
        ContextPrecisionStrategy,
        ContextRecallStrategy,
        FaithfulnessStrategy,
    )

    judge = "model: {model: j, base_url: 'http://127.0.0.1:1/v1'}"
    config = load_config(
        _config_with(
            tmp_path,
            f"  - {{name: faithfulness, {judge}, threshold: 0.8, budget: 500, label: grounded}}\n"
            f"  - {{name: context_recall, {judge}}}\n"
            f"  - {{name: context_precision, {judge}, max_tokens: 64}}\n"
            f"  - {{name: answer_relevancy, {judge}, questions: 2, "
            "embedder: {model: e, base_url: 'http://127.0.0.1:1/v1'}}\n",
        )
    )

    built = build_strategies(config)

    faithfulness, recall, precision, relevancy = built.strategies
    assert isinstance(faithfulness, FaithfulnessStrategy) and faithfulness.name == "grounded"
    assert repr(faithfulness) == "FaithfulnessStrategy(model='j', threshold=0.8, name='grounded')"
    assert isinstance(recall, ContextRecallStrategy)
    assert isinstance(precision, ContextPrecisionStrategy)
    assert isinstance(relevancy, AnswerRelevancyStrategy)
    assert repr(relevancy) == ("AnswerRelevancyStrategy(model='j', threshold=0.7, questions=2)")
    assert len(built.resources) == 5


def test_the_grounding_strategies_are_checked_against_the_schema(tmp_path: Path) -> None:
    path = _config_with(
        tmp_path,
        "  - {name: faithfulness, model: {model: j}, threshold: 2}\n"
        "  - {name: answer_relevancy, model: {model: j}}\n",
    )

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    problems = "\n".join(caught.value.problems)
    assert f"{path}:4: strategies[0].threshold" in problems
    assert f"{path}:5: strategies[1]: missing required key 'embedder'" in problems
