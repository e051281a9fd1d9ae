"""The decorators users put on tests: ``evaluation_test``, ``strategies`` and ``eval_cases``."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import pytest

from .._engine._callables import prepare_strategies, strategy_name
from .._exceptions import SampleLoadError
from .._reporting._assertions import assert_that
from .._reporting._report import EvaluationReport
from .._samples import EvaluationSample, Samples
from ._config import as_samples, fail, filter_samples, resolve_source, settings
from ._recording import RecordingScorer, scorer_for

if TYPE_CHECKING:
    from os import PathLike

__all__ = [
    "CASES_MARKER",
    "DatasetProblem",
    "dataset_problem",
    "eval_cases",
    "evaluation_test",
    "generate_cases",
    "load_marked_sources",
    "strategies",
    "strategy_id",
]

CASES_MARKER = "aeval_cases"

_F = TypeVar("_F", bound=Callable[..., Any])
_Source = str | os.PathLike[str]
_DATASETS_KEY = pytest.StashKey[dict[Path | str, Samples]]()


def strategy_id(value: object) -> str | None:
    """The parametrize id of a strategy instance (its name), ``None`` for anything else."""
    if inspect.isclass(value) or inspect.isroutine(value):
        return None
    evaluate = getattr(value, "evaluate", None)
    if not inspect.ismethod(evaluate):
        return None
    return strategy_name(value)


def strategies(*instances: object, argname: str = "strategy") -> pytest.MarkDecorator:
    """Parametrize a test over strategy instances, one test per strategy, id'd by name.

    Example:
        >>> @strategies(ExactMatchStrategy(), ContainsStrategy())  # doctest: +SKIP
        ... async def test_bot(strategy, scorer, samples): ...

    Args:
        *instances: The strategies (two with the same name get ``#2``, ``#3``… suffixes).
        argname: The test argument that receives each strategy.

    Raises:
        ValueError: No strategy given.
        TypeError: Something that is not a strategy (a class instead of an instance…).
    """
    if not instances:
        raise ValueError("strategies() needs at least one strategy instance")
    _prepare(instances)
    prepared = prepare_strategies(instances)
    return pytest.mark.parametrize(argname, instances, ids=[p.name for p in prepared])


def _prepare(strategies: Sequence[object]) -> None:
    for position, strategy in enumerate(strategies):
        if inspect.isclass(strategy):
            raise TypeError(
                f"Strategy {position + 1} is the class {strategy.__name__}, not an instance: "
                f"write {strategy.__name__}()"
            )
    prepare_strategies(strategies)


def _sources(value: object) -> tuple[_Source, ...]:
    if isinstance(value, str | os.PathLike):
        return (value,)
    if isinstance(value, Iterable):
        items = tuple(value)
        if items and all(isinstance(item, str | os.PathLike) for item in items):
            return items
    raise TypeError(
        "samples must be a path, a list of paths, or Samples / EvaluationSample objects, "
        f"got {value!r}"
    )


def load_marked_sources(
    sources: Sequence[_Source], tags: Iterable[str], *, config: pytest.Config, test_path: Path
) -> Samples:
    """Resolve, load and merge sample files, then keep those with any of ``tags``.

    Raises:
        SampleLoadError: A file is missing (the message lists every place looked) or invalid.
        ValueError: No sample at all, or none with the tags.
    """
    resolved = [
        resolve_source(source, rootdir=config.rootpath, test_dir=test_path.parent)
        for source in sources
    ]
    return filter_samples(Samples.load_sync(*resolved), tags, sources=sources)


def evaluation_test(
    *,
    samples: _Source | Sequence[_Source] | Samples | Iterable[EvaluationSample],
    function: str | Callable[..., Any],
    strategies: object | Sequence[object] = None,
    min_score: float = 0.0,
    tags: Iterable[str] = (),
    report_formats: Sequence[str] = (),
) -> Callable[[_F], _F]:
    """Turn a test into an evaluation: the seed's ``@EvaluationTest``.

    Before the test body runs (it may be empty), the samples are loaded and filtered by
    ``tags``, the function under test is evaluated with the strategies by a Scorer configured
    by ``@pytest.mark.scorer`` (or ini ``aeval_concurrency``), the report is recorded for the
    summary, and the score is checked against ``min_score``. An ``async def`` test awaits the
    evaluation in its event loop (mark it ``@pytest.mark.anyio``); a sync test runs one.

    Args:
        samples: A sample file, a list of files (merged in order; resolved against the
            rootdir, then the test file's directory), or samples.
        function: The name of the fixture that returns the function under test, or the
            function itself.
        strategies: A strategy or a list of them; ``ExactMatchStrategy()`` by default.
        min_score: The lowest acceptable score (0-100); the test fails below it.
        tags: Keep only the samples with any of these tags.
        report_formats: Write this test's report in these formats (into
            ``--aeval-report-dir``, else ``<rootdir>/target/evaluation-reports``).

    Raises:
        TypeError, ValueError: Bad arguments, raised when the test module is imported.
    """
    given = as_samples(samples)
    sources = () if given is not None else _sources(samples)
    if isinstance(function, str):
        if not function.isidentifier():
            raise ValueError(f"function must name a fixture, got {function!r}")
    elif not callable(function):
        raise TypeError(f"function must be a fixture name or a callable, got {function!r}")
    if strategies is None:
        from ..strategies import ExactMatchStrategy

        chosen: tuple[object, ...] = (ExactMatchStrategy(),)
    elif isinstance(strategies, list | tuple):
        chosen = tuple(strategies)
    else:
        chosen = (strategies,)
    _prepare(chosen)
    if not chosen:
        raise ValueError("evaluation_test needs at least one strategy")
    if isinstance(min_score, bool) or not 0.0 <= float(min_score) <= 100.0:
        raise ValueError(f"min_score is a percentage between 0 and 100, got {min_score!r}")
    wanted = (tags,) if isinstance(tags, str) else tuple(tags)
    formats = tuple(report_formats)
    if formats:
        from ..formatters import get_formatter

        for name in formats:
            get_formatter(name)

    def decorate(test: _F) -> _F:
        signature = inspect.signature(test)
        own = list(signature.parameters)
        extra = ["request"]
        if isinstance(function, str):
            extra.append(function)
        added = [name for name in dict.fromkeys(extra) if name not in own]

        def prepare(kwargs: dict[str, Any]) -> tuple[Any, RecordingScorer, pytest.FixtureRequest]:
            request: pytest.FixtureRequest = kwargs["request"]
            target = kwargs[function] if isinstance(function, str) else function
            if not callable(target):
                fail(
                    f"evaluation_test: the fixture {function!r} returned "
                    f"{type(target).__name__}, not the function under test"
                )
            scorer = scorer_for(request.node, settings(request.config), formats=formats or None)
            return target, scorer, request

        def load(request: pytest.FixtureRequest) -> Samples:
            if given is not None:
                return filter_samples(given, wanted, sources=["the given samples"])
            try:
                return load_marked_sources(
                    sources, wanted, config=request.config, test_path=request.node.path
                )
            except (SampleLoadError, ValueError) as exc:
                fail(f"evaluation_test: {exc}")

        def check(report: EvaluationReport) -> None:
            try:
                assert_that(report).has_score_greater_than_or_equal_to(min_score)
            except AssertionError as exc:
                fail(str(exc))

        def body_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
            return {name: value for name, value in kwargs.items() if name in own}

        if inspect.iscoroutinefunction(test):

            @functools.wraps(test)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True
                target, scorer, request = prepare(kwargs)
                chosen_samples = load(request)
                async with scorer:
                    report = await scorer.evaluate(chosen_samples, target, *chosen)
                check(report)
                return await test(*args, **body_kwargs(kwargs))

        else:

            @functools.wraps(test)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True
                target, scorer, request = prepare(kwargs)
                chosen_samples = load(request)

                async def run() -> EvaluationReport:
                    async with scorer:
                        return await scorer.evaluate(chosen_samples, target, *chosen)

                check(anyio.run(run))
                return test(*args, **body_kwargs(kwargs))

        parameters = [
            *signature.parameters.values(),
            *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in added),
        ]
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=parameters
        )
        return wrapper  # type: ignore[return-value]

    return decorate


def eval_cases(
    dataset: str | PathLike[str],
    *,
    tag: str | Iterable[str] | None = None,
    threshold: float = 0.7,
) -> Callable[[_F], _F]:
    """One test per case of a dataset (seed 002's ``@EvalTest``).

    Each test is id'd by the case's name and receives the case as ``case`` and, as
    ``eval_assert``, an :class:`~aeval.pytest_plugin.EvalAssert` with ``threshold``.
    The dataset is loaded at collection time. A file that cannot be loaded, an empty one, or a
    tag no case has gives the test a single ``dataset-error`` case that fails at setup with the
    reason; the other tests of the session still run.

    Args:
        dataset: A sample file, resolved against the rootdir, then the test file's directory.
        tag: Keep only the cases with this tag (or any of these tags).
        threshold: The lowest passing score (0-1) of ``eval_assert``'s assertions.
    """
    if not isinstance(dataset, str | os.PathLike):
        raise TypeError(f"eval_cases takes the path of a dataset file, got {dataset!r}")
    tags: tuple[str, ...] = () if tag is None else (tag,) if isinstance(tag, str) else tuple(tag)
    from ._cases import check_threshold

    checked = check_threshold(threshold)

    def decorate(test: _F) -> _F:
        marked = getattr(pytest.mark, CASES_MARKER)(dataset, tags=tags, threshold=checked)
        return pytest.mark.usefixtures("case")(marked(test))  # type: ignore[no-any-return]

    return decorate


class DatasetProblem:
    """Why the dataset of an ``@eval_cases`` test gave no case: the value of its one test.

    A dataset that cannot be loaded fails only the test that uses it (at setup), so that the
    rest of the session still runs; a collection error would interrupt it.
    """

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"<DatasetProblem {self.message!r}>"


def dataset_problem(item: pytest.Item) -> str | None:
    """The message of an ``@eval_cases`` test whose dataset gave no case, else ``None``."""
    callspec = getattr(item, "callspec", None)
    value = None if callspec is None else callspec.params.get("case")
    return value.message if isinstance(value, DatasetProblem) else None


def generate_cases(metafunc: pytest.Metafunc) -> None:
    """Parametrize an ``@eval_cases`` test with its cases (``pytest_generate_tests``).

    When the dataset gives no case (it cannot be loaded, is empty, or no case has the tag),
    the test gets one parameter, ``dataset-error``, that fails at setup with the reason.
    """
    marker = metafunc.definition.get_closest_marker(CASES_MARKER)
    if marker is None:
        return
    (dataset,) = marker.args
    tags: tuple[str, ...] = marker.kwargs["tags"]
    try:
        kept = _cases(metafunc, dataset, tags)
    except _NoCasesError as exc:
        problem = DatasetProblem(str(exc))
        metafunc.parametrize("case", [pytest.param(problem, id="dataset-error")])
        return
    metafunc.parametrize("case", list(kept), ids=list(kept.names))


class _NoCasesError(Exception):
    pass


def _cases(metafunc: pytest.Metafunc, dataset: _Source, tags: tuple[str, ...]) -> Samples:
    where = f"@eval_cases({os.fspath(dataset)!r}) on {metafunc.definition.name}"
    cache = metafunc.config.stash.setdefault(_DATASETS_KEY, {})
    try:
        path = resolve_source(
            dataset,
            rootdir=metafunc.config.rootpath,
            test_dir=metafunc.definition.path.parent,
        )
    except SampleLoadError as exc:
        raise _NoCasesError(
            f"{where}: the dataset cannot be loaded: {exc}. Give its path relative to the "
            "rootdir or to the test file's directory, or an absolute path"
        ) from None
    cases = cache.get(path)
    if cases is None:
        try:
            cases = cache[path] = Samples.load_sync(path)
        except SampleLoadError as exc:
            raise _NoCasesError(
                f"{where}: the dataset cannot be loaded: {exc}. Fix the file, or point "
                "@eval_cases at another dataset"
            ) from None
    if not cases:
        raise _NoCasesError(f"{where}: the dataset {path} has no cases; add at least one")
    kept = cases.filter_by_tags(*tags)
    if not kept:
        seen = ", ".join(cases.tags) or "none"
        raise _NoCasesError(
            f"{where}: no case has the tag {' or '.join(map(repr, tags))}; "
            f"the tags in the dataset are: {seen}"
        )
    return kept
