"""The pytest plugin's fixtures, markers and decorators, run in inner pytest sessions."""

from __future__ import annotations

import re
import textwrap

import pytest

pytest_plugins = ("pytester",)

CONFTEST = """
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def bot():
    async def answer(params):
        return params[0].upper()

    return answer
"""

SAMPLES = """
- name: "one"
  parameters: ["a"]
  expected-output: "A"
  tags: ["smoke"]
- name: "two"
  parameters: ["b"]
  expected-output: "B"
  tags: ["smoke", "critical"]
- name: "three"
  parameters: ["c"]
  expected-output: "wrong"
  tags: ["critical"]
"""

MORE_SAMPLES = """
- name: "four"
  parameters: ["d"]
  expected-output: "D"
"""


# The inner sessions leave out plugins of this machine that slow every session down.
INI = (
    "[pytest]\n"
    "addopts = --strict-markers -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "samples.yaml").write_text(SAMPLES)
    (pytester.path / "more.yaml").write_text(MORE_SAMPLES)
    return pytester


def escape(text: str) -> str:
    """``text`` as a literal fnmatch pattern."""
    return re.sub(r"([*?[])", r"[\1]", text)


def write_test(pytester: pytest.Pytester, source: str, name: str = "test_inner") -> None:
    pytester.makepyfile(**{name: textwrap.dedent(source)})


def test_markers_are_registered(project: pytest.Pytester) -> None:
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.scorer(concurrency=1, *, timeout=None, repeats=1, keep='all'): *",
            "@pytest.mark.samples(*sources, tags=()): *",
            "@pytest.mark.aeval_live: *",
            "@pytest.mark.aeval_cases(dataset, tag=None, threshold=0.7): *",
        ]
    )


# -- the scorer fixture -------------------------------------------------------------------------


def test_scorer_fixture_is_configured_by_marker_and_ini_and_closed(
    project: pytest.Pytester,
) -> None:
    project.makeini(INI + "aeval_concurrency = 3\n")
    write_test(
        project,
        """
        import pytest
        from aeval import EvaluationSample
        from aeval.strategies import ExactMatchStrategy

        SEEN = []

        @pytest.mark.anyio
        @pytest.mark.scorer(concurrency=5, timeout=2.5)
        async def test_marked(scorer, bot):
            SEEN.append(scorer)
            assert (scorer.concurrency, scorer.timeout) == (5, 2.5)
            report = await scorer.evaluate(
                [EvaluationSample("x", ["a"], "A")], bot, ExactMatchStrategy()
            )
            assert report.score == 100.0

        @pytest.mark.scorer(2)
        def test_positional(scorer):
            assert scorer.concurrency == 2

        def test_ini_default(scorer):
            assert scorer.concurrency == 3
            assert SEEN[0].closed
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(passed=3)


def test_aeval_formatters_keeps_a_tests_formatter_to_that_test(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from aeval.formatters import register_formatter, supported_formats

        class Shout:
            name = "shout"
            extension = ".shout"

            def format(self, report, **options):
                return "!"

        def test_registers(aeval_formatters):
            register_formatter(Shout())
            assert "shout" in supported_formats()

        def test_after_it():
            assert "shout" not in supported_formats()
            assert "markdown" in supported_formats()
        """,
    )
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_scorer_marker_with_bad_options_fails_the_test_with_a_clear_message(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        import pytest

        @pytest.mark.scorer(concurrency=0)
        def test_zero(scorer):
            pass

        @pytest.mark.scorer(concurrency=2, speed=3)
        def test_unknown(scorer):
            pass
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.scorer on test_zero: concurrency must be an integer >= 1, got 0",
            "*@pytest.mark.scorer on test_unknown: *unexpected keyword argument 'speed'",
        ]
    )


def test_invalid_ini_concurrency_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\naeval_concurrency = many\n")
    write_test(project, "def test_nothing():\n    pass\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*aeval_concurrency must be an integer >= 1, got 'many'"])


# -- the samples fixture ------------------------------------------------------------------------


def test_samples_fixture_merges_sources_in_order_and_filters_by_tags(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        import pytest

        @pytest.mark.samples("samples.yaml", "more.yaml")
        def test_all(samples):
            assert samples.names == ("one", "two", "three", "four")

        @pytest.mark.samples("more.yaml", "samples.yaml", tags=["critical"])
        def test_critical(samples):
            assert samples.names == ("two", "three")

        @pytest.mark.samples("samples.yaml", tags="smoke")
        def test_one_tag(samples):
            assert samples.names == ("one", "two")
        """,
    )
    project.runpytest().assert_outcomes(passed=3)


def test_samples_paths_resolve_against_rootdir_then_the_test_directory(
    project: pytest.Pytester,
) -> None:
    nested = project.mkpydir("suite")
    (nested / "local.yaml").write_text(MORE_SAMPLES)
    (nested / "test_nested.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.samples("samples.yaml", "local.yaml")
            def test_both(samples):
                assert samples.names == ("one", "two", "three", "four")
            """
        )
    )
    project.runpytest().assert_outcomes(passed=1)


def test_missing_sample_file_names_every_place_looked(project: pytest.Pytester) -> None:
    nested = project.mkpydir("suite")
    (nested / "test_missing.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.samples("nowhere.yaml")
            def test_missing(samples):
                pass
            """
        )
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    root = project.path
    result.stdout.fnmatch_lines(
        [
            f"*@pytest.mark.samples: nowhere.yaml: File not found; looked in: "
            f"{root / 'nowhere.yaml'}, {root / 'suite' / 'nowhere.yaml'}"
        ]
    )


def test_samples_fixture_errors(project: pytest.Pytester) -> None:
    (project.path / "empty.yaml").write_text("[]\n")
    write_test(
        project,
        """
        import pytest

        def test_no_marker(samples):
            pass

        @pytest.mark.samples("empty.yaml")
        def test_empty(samples):
            pass

        @pytest.mark.samples("samples.yaml", tags=["nope"])
        def test_no_tag(samples):
            pass
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            '*The samples fixture needs @pytest.mark.samples("path/to/samples.yaml", ...)',
            "*@pytest.mark.samples: No samples found from any of the specified sources",
            "*"
            + escape(
                "@pytest.mark.samples: No sample of samples.yaml has any of the tags ['nope']; "
                "the tags there are: smoke, critical"
            ),
        ]
    )


# -- evaluation_test ----------------------------------------------------------------------------


def test_evaluation_test_runs_before_sync_and_async_bodies(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import asyncio
        import pytest
        from aeval.pytest_plugin import evaluation_test
        from aeval.strategies import ContainsStrategy, ExactMatchStrategy

        @evaluation_test(samples="samples.yaml", function="bot", tags=["smoke"], min_score=100)
        def test_sync_empty():
            pass

        BODIES = []

        @pytest.fixture
        async def loop_bound_bot():
            loop = asyncio.get_running_loop()

            async def answer(params):
                assert asyncio.get_running_loop() is loop
                return params[0].upper()

            return answer

        @pytest.mark.anyio
        @evaluation_test(
            samples=["samples.yaml", "more.yaml"],
            function="loop_bound_bot",
            strategies=[ExactMatchStrategy(), ContainsStrategy(mode="any")],
            min_score=75,
        )
        async def test_async_body(request):
            BODIES.append(request.node.name)

        def test_bodies_ran():
            assert BODIES == ["test_async_body"]
        """,
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            escape("test_inner.py::test_sync_empty [PASSED]: Score 100.00% (2/2 passed) ") + "*",
            escape("test_inner.py::test_async_body [PASSED]: Score 75.00% (6/8 passed) ") + "*",
        ]
    )


def test_evaluation_test_gives_a_one_parameter_function_the_value(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        from aeval.pytest_plugin import evaluation_test

        def shout(question):
            return question.upper()

        @evaluation_test(samples="samples.yaml", function=shout, tags=["smoke"], min_score=100)
        def test_shout():
            pass
        """,
    )
    project.runpytest().assert_outcomes(passed=1)


def test_evaluation_test_below_min_score_fails_with_the_failed_rows(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        from aeval.pytest_plugin import evaluation_test

        @evaluation_test(samples="samples.yaml", function="bot", min_score=90)
        def test_low():
            raise AssertionError("the body must not run")
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "_* test_low _*",
            "Expected evaluation score to be greater than or equal to 90.00% but was 66.67%",
            "",
            "Failed evaluations:",
            escape("  - three [ExactMatchStrategy]:"),
            escape("      expected = [wrong]"),
            escape("      actual   = [C]"),
            "      score    = 0.00%",
            "      reason   = Expected 'wrong', got 'C'",
            "=* aeval evaluations =*",
        ]
    )
    result.stdout.no_fnmatch_line("*the body must not run*")


def test_evaluation_test_setup_errors(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import pytest
        from aeval.pytest_plugin import evaluation_test

        @pytest.fixture
        def not_a_function():
            return 42

        @evaluation_test(samples="samples.yaml", function="not_a_function")
        def test_bad_fixture():
            pass

        @evaluation_test(samples="missing.yaml", function="bot")
        def test_missing_samples():
            pass

        @evaluation_test(samples="samples.yaml", function="bot", tags=["nope"])
        def test_no_tag():
            pass
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=3)
    root = project.path
    result.stdout.fnmatch_lines(
        [
            "*evaluation_test: the fixture 'not_a_function' returned int, not the function "
            "under test",
            f"*evaluation_test: missing.yaml: File not found; looked in: {root / 'missing.yaml'}",
            "*evaluation_test: No sample of samples.yaml has any of the tags [[]'nope'[]]*",
        ]
    )


def test_evaluation_test_rejects_bad_arguments_at_import(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from aeval.pytest_plugin import evaluation_test
        from aeval.strategies import ExactMatchStrategy

        @evaluation_test(samples="samples.yaml", function="bot", strategies=ExactMatchStrategy)
        def test_class_strategy():
            pass
        """,
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "E   TypeError: Strategy 1 is the class ExactMatchStrategy, not an instance: "
            "write ExactMatchStrategy()"
        ]
    )


def test_evaluation_test_report_formats_write_files(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from aeval import EvaluationSample, Samples
        from aeval.pytest_plugin import evaluation_test

        @evaluation_test(
            samples=Samples([EvaluationSample("x", ["a"], "A")]),
            function=lambda params: params[0].upper(),
            report_formats=["json"],
        )
        def test_written():
            pass
        """,
    )
    project.runpytest().assert_outcomes(passed=1)
    written = project.path / "target" / "evaluation-reports"
    assert sorted(p.name for p in written.iterdir()) == ["test_inner.py_test_written.json"]
    assert '"globalScore": 100.0' in (written / "test_inner.py_test_written.json").read_text()


# -- strategy matrices --------------------------------------------------------------------------


def test_strategy_matrices_get_ids_by_strategy_name(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import pytest
        from aeval.pytest_plugin import strategies
        from aeval.strategies import ContainsStrategy, ExactMatchStrategy

        @strategies(ExactMatchStrategy(), ContainsStrategy("a"), ContainsStrategy("b"))
        def test_helper(strategy):
            pass

        @pytest.mark.parametrize("check", [ExactMatchStrategy(), ContainsStrategy("x")])
        def test_plain(check):
            pass

        @strategies(ExactMatchStrategy(name="exact"), argname="judge")
        def test_named(judge):
            assert judge.name == "exact"
        """,
    )
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_inner.py::test_helper[ExactMatchStrategy]",
            "test_inner.py::test_helper[ContainsStrategy]",
            "test_inner.py::test_helper[ContainsStrategy#2]",
            "test_inner.py::test_plain[ExactMatchStrategy]",
            "test_inner.py::test_plain[ContainsStrategy]",
            "test_inner.py::test_named[exact]",
        ]
    )


# -- eval_cases ---------------------------------------------------------------------------------


def test_eval_cases_makes_one_test_per_case_filtered_by_tag(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import pytest
        from aeval.pytest_plugin import eval_cases
        from aeval.strategies import ExactMatchStrategy

        @eval_cases("samples.yaml", tag="critical")
        def test_case(case, eval_assert):
            assert eval_assert.case is case
            assert eval_assert.threshold == 0.7
            answer = case.parameters[0].upper()
            if case.name == "three":
                eval_assert.assert_eval(answer, ExactMatchStrategy()).fails()
            else:
                eval_assert.assert_eval(answer, ExactMatchStrategy()).passes()

        @pytest.mark.anyio
        @eval_cases("samples.yaml", threshold=0.5)
        async def test_async(eval_assert):
            checked = await eval_assert.assert_eval_async("A", ExactMatchStrategy())
            assert checked.threshold == 0.5
        """,
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            escape("test_inner.py::test_case[two] PASSED") + "*",
            escape("test_inner.py::test_case[three] PASSED") + "*",
            escape("test_inner.py::test_async[one] PASSED") + "*",
            escape("test_inner.py::test_async[two] PASSED") + "*",
            escape("test_inner.py::test_async[three] PASSED") + "*",
        ]
    )


def test_eval_cases_failure_lists_each_strategy_below_threshold(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases
        from aeval.strategies import ContainsStrategy, ExactMatchStrategy

        @eval_cases("samples.yaml", tag="critical", threshold=0.8)
        def test_case(case, eval_assert):
            eval_assert.assert_eval(
                "C", ExactMatchStrategy(), ContainsStrategy("C"), ContainsStrategy(["C", "x"])
            ).passes()
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: Case 'three': 2 of 3 strategies scored below the "
            "threshold 0.80:",
            "E         - ExactMatchStrategy: score 0.00 (Expected 'wrong', got 'C')",
            "E         - ContainsStrategy#2: score 0.50 (Missing 1 of 2 required texts: 'x')",
            "",
            "test_inner.py:8: AssertionError",
        ]
    )


def test_eval_cases_collection_errors(project: pytest.Pytester) -> None:
    (project.path / "broken.yaml").write_text("- name: broken\n")
    (project.path / "empty.yaml").write_text("[]\n")
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases

        @eval_cases("samples.yaml", tag="nope")
        def test_no_tag(case):
            pass
        """,
        name="test_tag",
    )
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases

        @eval_cases("absent.yaml")
        def test_absent(case):
            pass
        """,
        name="test_absent",
    )
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases

        @eval_cases("broken.yaml")
        def test_broken(case):
            pass
        """,
        name="test_broken",
    )
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases

        @eval_cases("empty.yaml")
        def test_empty(case):
            pass
        """,
        name="test_empty",
    )
    result = project.runpytest()
    result.assert_outcomes(errors=4)
    root = project.path
    result.stdout.fnmatch_lines_random(
        [
            "@eval_cases('samples.yaml') on test_no_tag: no case has the tag 'nope'; "
            "the tags in the dataset are: smoke, critical",
            "@eval_cases('absent.yaml') on test_absent: the dataset cannot be loaded: "
            f"absent.yaml: File not found; looked in: {root / 'absent.yaml'}. Give its path "
            "relative to the rootdir or to the test file's directory, or an absolute path",
            "@eval_cases('broken.yaml') on test_broken: the dataset cannot be loaded: "
            f"{root / 'broken.yaml'}*. Fix the file, or point @eval_cases at another dataset",
            f"@eval_cases('empty.yaml') on test_empty: the dataset "
            f"{root / 'empty.yaml'} has no cases; add at least one",
            "ERROR test_absent.py::test_absent[[]dataset-error[]] - Failed: *",
        ]
    )
    assert "Interrupted" not in result.stdout.str()


def test_a_dataset_that_cannot_be_loaded_fails_only_its_test(project: pytest.Pytester) -> None:
    (project.path / "broken.yaml").write_text("- name: broken\n")
    write_test(
        project,
        """
        from aeval.pytest_plugin import eval_cases

        @eval_cases("broken.yaml")
        def test_broken(case, eval_assert):
            raise AssertionError("never runs")

        @eval_cases("samples.yaml", tag="smoke")
        def test_fine(case):
            pass

        def test_plain():
            pass
        """,
    )
    write_test(project, "def test_elsewhere():\n    pass\n", name="test_other")
    result = project.runpytest("-rE")
    result.assert_outcomes(passed=4, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_broken[[]dataset-error[]]*",
            "@eval_cases('broken.yaml') on test_broken: the dataset cannot be loaded: "
            f"{project.path / 'broken.yaml'}:1, sample 'broken': no 'parameters'*",
            "ERROR test_inner.py::test_broken[[]dataset-error[]] - Failed: *",
        ]
    )
    assert "never runs" not in result.stdout.str()


def test_case_and_eval_assert_need_eval_cases(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_case(case):
            pass

        def test_assert(eval_assert):
            pass
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*test_case uses the case fixture but is not decorated with "
            '@eval_cases("dataset.yaml")',
            "*test_assert uses the eval_assert fixture but is not decorated with "
            '@eval_cases("dataset.yaml")',
        ]
    )


# -- live tests and the sync edge ---------------------------------------------------------------

LIVE_TEST = """
import pytest

@pytest.mark.aeval_live
def test_live():
    pass

def test_offline():
    pass
"""


def test_live_tests_skip_by_default_with_how_to_run_them(project: pytest.Pytester) -> None:
    write_test(project, LIVE_TEST)
    result = project.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] test_inner.py:3: live evaluation test (calls a real model): run it "
            "with --aeval-live, set aeval_live = true in the pytest configuration, or set "
            "AEVAL_LIVE=1"
        ]
    )


def test_live_tests_run_with_the_option(project: pytest.Pytester) -> None:
    write_test(project, LIVE_TEST)
    project.runpytest("--aeval-live").assert_outcomes(passed=2)


def test_live_tests_run_with_the_ini_switch(project: pytest.Pytester) -> None:
    project.makeini(INI + "aeval_live = true\n")
    write_test(project, LIVE_TEST)
    project.runpytest().assert_outcomes(passed=2)


@pytest.mark.parametrize("value", ["1", "true"])
def test_live_tests_run_with_the_environment_switch(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AEVAL_LIVE", value)
    write_test(project, LIVE_TEST)
    project.runpytest().assert_outcomes(passed=2)


def test_evaluate_sync_works_in_sync_tests_and_refuses_a_running_loop(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        import pytest
        from aeval import EvaluationSample, evaluate_sync
        from aeval.strategies import ExactMatchStrategy

        SAMPLES = [EvaluationSample("x", ["a"], "A")]

        def test_sync(bot):
            assert evaluate_sync(SAMPLES, bot, ExactMatchStrategy()).score == 100.0

        @pytest.mark.anyio
        async def test_async(bot):
            with pytest.raises(RuntimeError, match="inside a running asyncio event loop"):
                evaluate_sync(SAMPLES, bot, ExactMatchStrategy())
        """,
    )
    project.runpytest().assert_outcomes(passed=2)


def test_a_plain_test_captures_a_trace_and_asserts_on_its_tool_calls(
    project: pytest.Pytester,
) -> None:
    write_test(
        project,
        """
        import aeval
        from aeval import assert_that

        @aeval.tool
        def get_weather(city: str) -> str:
            return "sunny"

        def agent(question: str) -> str:
            return "It is " + get_weather("Mysore")

        def test_weather():
            with aeval.trace.capture() as trace:
                assert agent("weather?") == "It is sunny"
            assert_that(trace).called("get_weather").called_with("get_weather", city="Mysore")

        def test_booking():
            with aeval.trace.capture() as trace:
                agent("book the palace")
            assert_that(trace).called_in_order(["get_weather", "book_ticket"])
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*" + escape("expected the calls ['get_weather', 'book_ticket'] in this order") + "*",
            "*1. get_weather(city='Mysore')*",
        ]
    )
