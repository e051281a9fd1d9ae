"""aeval's pytest plugin, loaded automatically through the ``pytest11`` entry point.

Fixtures: ``scorer``, ``samples``, ``record_evaluation``, and for ``@eval_cases`` tests
``case`` and ``eval_assert``. Markers: ``scorer``, ``samples``, ``aeval_live``. Decorators:
:func:`evaluation_test`, :func:`strategies`, :func:`eval_cases`. Options: ``--aeval-live``,
``--aeval-report-dir``, ``--aeval-min-score``, ``--aeval-store``, ``--aeval-baseline`` and
``--aeval-margin``; ini ``aeval_concurrency`` and ``aeval_live``. Every evaluation a test runs
through these is listed in the "aeval evaluations" section of the terminal summary. See
``docs/pytest.md``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ._display import printable
from ._engine._scorer import Scorer
from ._exceptions import SampleLoadError
from ._pytest_plugin._cases import EvalAssert
from ._pytest_plugin._config import (
    LIVE_SKIP_REASON,
    add_options,
    fail,
    register_markers,
    settings,
)
from ._pytest_plugin._decorators import (
    CASES_MARKER,
    dataset_problem,
    eval_cases,
    evaluation_test,
    generate_cases,
    load_marked_sources,
    strategies,
    strategy_id,
)
from ._pytest_plugin._recording import (
    PAYLOAD_ATTRIBUTE,
    EvaluationRecorder,
    EvaluationSession,
    record_outcome,
    records_for,
    scorer_for,
)
from ._reporting._report import EvaluationReport
from ._samples import EvaluationSample, Samples
from ._util._lazy import (
    deprecations as _deprecations,
    lazy_names as _lazy_names,
    returned as _returned,
)

if TYPE_CHECKING:
    from ._pytest_plugin._cases import (
        EvalAssertion as EvalAssertion,
        StrategyScore as StrategyScore,
    )

_DEPRECATED = _deprecations(
    _returned("eval_assert(...)"), {"._pytest_plugin._cases": ("EvalAssertion", "StrategyScore")}
)

__getattr__ = _lazy_names(globals(), {}, deprecated=_DEPRECATED)

__all__ = [
    "EvalAssert",
    "EvaluationRecorder",
    "eval_cases",
    "evaluation_test",
    "strategies",
]

_SESSION_KEY = pytest.StashKey[EvaluationSession]()


def _session(config: pytest.Config) -> EvaluationSession:
    return config.stash[_SESSION_KEY]


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def scorer(request: pytest.FixtureRequest) -> Iterator[Scorer]:
    """A Scorer configured by ``@pytest.mark.scorer(...)`` (default concurrency: ini
    ``aeval_concurrency``), closed after the test. Every report it returns is recorded
    for the summary and the report directory."""
    instance = scorer_for(request.node, settings(request.config))
    yield instance
    instance.close()


@pytest.fixture
def samples(request: pytest.FixtureRequest) -> Samples:
    """The samples of ``@pytest.mark.samples("a.yaml", "b.yaml", tags=[...])``, merged in
    order; paths resolve against the rootdir, then the test file's directory."""
    marker = request.node.get_closest_marker("samples")
    if marker is None or not marker.args:
        fail('The samples fixture needs @pytest.mark.samples("path/to/samples.yaml", ...)')
    unknown = set(marker.kwargs) - {"tags"}
    if unknown:
        fail(f"@pytest.mark.samples takes only tags= as a keyword, got {sorted(unknown)}")
    tags = marker.kwargs.get("tags", ())
    try:
        return load_marked_sources(
            marker.args,
            (tags,) if isinstance(tags, str) else tags,
            config=request.config,
            test_path=request.node.path,
        )
    except (SampleLoadError, ValueError) as exc:
        fail(f"@pytest.mark.samples: {exc}")


@pytest.fixture
def record_evaluation(request: pytest.FixtureRequest) -> EvaluationRecorder:
    """Call it with a report made without the ``scorer`` fixture (``evaluate_sync``, the
    builder…) to list it in the summary and the report directory."""
    return EvaluationRecorder(records_for(request.node))


@pytest.fixture
def aeval_formatters() -> Iterator[None]:
    """aeval's report formatters with the built-ins only for the test, as they were after it.

    What the test registers (``aeval.formatters.register_formatter``) is gone after it. The
    ``aeval.formatters`` entry-point group loads on first use inside the test, from what
    ``importlib.metadata.entry_points`` returns then: a test of a formatter declared by a
    package's entry point can monkeypatch it first.
    """
    from .formatters._registry import REGISTRY

    with REGISTRY.isolated(entry_points=True):
        yield


@pytest.fixture
def case(request: pytest.FixtureRequest) -> EvaluationSample:
    """The case of an ``@eval_cases`` test (set by the decorator's parametrization)."""
    fail(
        f"{request.node.name} uses the case fixture but is not decorated with "
        '@eval_cases("dataset.yaml")'
    )


@pytest.fixture
def eval_assert(request: pytest.FixtureRequest) -> EvalAssert:
    """Assertions on the answer to the case of an ``@eval_cases`` test."""
    marker = request.node.get_closest_marker(CASES_MARKER)
    callspec = getattr(request.node, "callspec", None)
    if marker is None or callspec is None or "case" not in callspec.params:
        fail(
            f"{request.node.name} uses the eval_assert fixture but is not decorated with "
            '@eval_cases("dataset.yaml")'
        )
    records = records_for(request.node)
    position: int | None = None

    def on_report(report: EvaluationReport) -> None:
        nonlocal position
        if position is None:
            position = records.add(report)
        else:
            records.replace(position, report)

    return EvalAssert(
        callspec.params["case"], threshold=marker.kwargs["threshold"], on_report=on_report
    )


# -- hooks --------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)
    evaluations = config.stash[_SESSION_KEY] = EvaluationSession(config, settings(config))
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Controller(evaluations), "aeval-controller")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if settings(config).live:
        return
    skip = pytest.mark.skip(reason=LIVE_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("aeval_live") is not None:
            item.add_marker(skip)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate_cases(metafunc)


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    return strategy_id(val)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    problem = dataset_problem(item)
    if problem is not None:
        fail(problem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    record_outcome(item, report)
    if report.when == "teardown":
        payload = EvaluationSession.payload(item)
        if payload is not None:
            setattr(report, PAYLOAD_ATTRIBUTE, payload)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, None, None]:
    try:
        return (yield)
    finally:
        _session(item.config).finish_item(item)


class _Controller:
    """The hooks of the process that gathers the session's evaluations (the xdist controller,
    or the only process): workers' reports, and workers that crashed."""

    def __init__(self, evaluations: EvaluationSession) -> None:
        self._evaluations = evaluations

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, PAYLOAD_ATTRIBUTE, None)
        if payload is not None:
            self._evaluations.absorb(payload)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        if error is not None and not hasattr(node, "workeroutput"):
            self._evaluations.worker_lost(node.gateway.id, error)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self._evaluations.test_crashed(crashitem)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    evaluations = _session(session.config)
    evaluations.close()
    if not hasattr(session.config, "workerinput"):
        evaluations.finish(session)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    lines = _session(config).terminal_lines()
    if lines:
        terminalreporter.section("aeval evaluations")
        for line in lines:
            terminalreporter.line(printable(line))
