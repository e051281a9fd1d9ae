"""The JSON report (``report.json``), and reading it back.

The document starts with upstream's keys (Quarkus LangChain4j ``JsonReportFormatter``):
``globalScore``, ``totalSamples``, ``passed``, ``failed``, ``tagScores`` (only when a tag
exists) and ``evaluations`` with ``name``, ``passed``, ``expectedOutput``, ``actualOutput`` and
``tags`` (only when the sample has tags).

How this departs from upstream, deliberately:

- Counts mean what they say and match the other formats: ``samples`` counts samples,
  ``rows`` counts rows, ``passedRows`` and ``failedRows`` the rows that passed and the rows a
  strategy failed (``errors``, ``unscored``, ``skipped`` and ``notApplicable`` rows are
  counted apart; ``notApplicable``, here and per tag and strategy, and
  ``notApplicableSamples``, the samples none of whose rows applies, which the score leaves
  out, are written when some row is not applicable). The
  upstream names stay as aliases for upstream readers: ``totalSamples`` (= ``samples``;
  upstream counts rows there), ``passed`` (= ``passedRows``) and ``failed``
  (= ``failedRows``); :func:`report_from_json` reads either.
- ``gate`` (when ``aeval run`` or ``aeval merge`` wrote the report): the ``verdict``
  (``passed``, ``missed`` or ``none``) and each threshold's ``name``, ``bound`` (``min`` or
  ``max``), ``threshold``, ``actual``, ``passed`` (``null`` when not checked) and ``text``.
- It is real JSON, written by orjson: values keep their JSON type, ``null`` is ``null``, keys
  are escaped. Upstream builds the text by hand and can emit invalid JSON.
- A value JSON cannot hold as it is (a lone surrogate, an integer beyond 64 bits, a
  self-referencing list, an object whose ``__str__`` raises) is written as a stand-in and the
  evaluation's ``notes`` say so; writing never fails on a row's content.
- Scores are numbers rounded half up to two decimals (``66.67``), not ``%.2f`` strings.
- Added: ``confidenceInterval`` (the score's clustered 95% interval), ``complete`` and
  ``samplesExpected`` (a partial run says so), ``run`` (start and end in UTC, wall-clock
  ``duration``, aeval version, concurrency, repeats, git commit, warnings; ``shard``,
  ``configDigest``, ``datasetDigest``, ``datasetSamples``, ``executor`` and ``tools`` when
  known), ``tags`` and
  ``strategies`` (counts, score and interval each), ``usage``, ``repeats`` (pass@k, pass^k,
  output agreement, flaky pairs), ``calibration`` (per strategy with labelled samples: the
  confusion matrix against the human labels, accuracy, Cohen's kappa with its interval, or
  ``kappa: null`` with the reason in ``kappaUndefined`` when the labels or the verdicts are
  all one kind, and the disagreements), ``judges`` (per judge strategy and judge: parse
  failures, re-asks, cut-off replies, agreement) and, per evaluation, the sample's ``parameters``,
  ``sampleMetadata``, ``index``/``repeat``/``position``, ``strategy``, ``outcome``, ``score``
  (0-1 or ``null``), ``explanation``, ``metadata``, ``error``, durations and ``trace`` (the
  sample's tool calls, model calls and retrievals, when any were recorded).
- ``clusterSums`` beside each score keep the sums its interval is computed from, so
  :func:`report_from_json` rebuilds the same report, also from a report that does not hold
  every row (``holdsAllRows: false``): ``aeval report report.json`` re-renders any format.
- Pretty output indents by two spaces without a trailing newline, as upstream; compact
  output (``pretty=False``) has no spaces at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from .._exceptions import FormatError
from .._reporting._codec import row_from_report_entry, row_to_report_entry
from .._reporting._results import EvaluationRow, Outcome
from .._reporting._run_info import RunInfo
from .._util._jsonsafe import dumps, read_count, read_list, read_mapping, read_number
from .._util._numbers import format_number
from .._util._stats import ClusteredMean
from ._base import check_options

if TYPE_CHECKING:
    from .._reporting._judging import Calibration, JudgeStatistics
    from .._reporting._report import EvaluationReport
    from .._reporting._values import RepeatStatistics

__all__ = ["JsonFormatter", "calibration_data", "report_from_json", "report_to_dict"]

_DEFAULTS: dict[str, Any] = {"pretty": True}
FORMAT_VERSION = 2
"""Bumped when a key changes meaning; :func:`report_from_json` reads this version."""


class JsonFormatter:
    """Renders a report as JSON.

    Options:
        pretty (bool): Indent by two spaces (default ``True``); ``False`` gives one line.
    """

    name: ClassVar[str] = "json"
    extension: ClassVar[str] = ".json"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report`` (see the module docstring for the keys).

        Raises:
            FormatError: An unknown option or ``pretty`` that is not a bool.
        """
        pretty: bool = check_options(self.name, options, _DEFAULTS)["pretty"]
        text, _ = dumps(report_to_dict(report), option=orjson.OPT_INDENT_2 if pretty else 0)
        return text.decode()


def _rounded(score: float) -> float:
    return float(format_number(score))


def _iso(value: float | None) -> str | None:
    if value is None:
        return None
    return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")


def _time(run: Mapping[str, Any], key: str) -> float | None:
    exact = run.get(f"{key}Unix")
    if exact is not None:
        return read_number(exact, f"{key}Unix")
    value = run.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"field {key!r}: expected a date and time, got {value!r}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValueError(f"field {key!r}: expected a date and time, got {value!r}") from None


def _interval(moments: ClusteredMean) -> dict[str, Any]:
    low, high = moments.interval(0.95)
    se = moments.standard_error
    return {
        "confidence": 0.95,
        "low": _rounded(100 * low),
        "high": _rounded(100 * high),
        "standardError": None if se is None else round(100 * se, 6),
    }


def _count(data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    if key not in data and default is not None:
        return default
    return read_count(data[key], key)


def _number(data: Mapping[str, Any], key: str) -> float:
    return read_number(data[key], key)


_SUMS = ("rows", "total", "clusters", "cluster_sq", "cluster_cross", "cluster_size_sq")
_SUM_COUNTS = ("rows", "clusters")
_STRATEGY_COUNTS = ("passed", "failed", "unscored", "skipped")
_CONFUSION = ("true_pass", "true_fail", "false_pass", "false_fail", "unjudged")
_JUDGE_COUNTS = (
    "verdicts",
    "unreadable",
    "reasked",
    "unscored",
    "errors",
    "cut_off",
    "salvaged",
    "voted",
    "agreed",
)
_JUDGE_RATES = ("parse_failure_rate", "reask_rate")
_TOKENS = ("retries", "prompt_tokens", "completion_tokens")
_SCALE_FACTS = ("shard", "config_digest", "dataset_digest", "dataset_samples", "executor", "tools")


def _key(attribute: str) -> str:
    """The key of an attribute: its name in camel case (``cut_off`` is ``cutOff``)."""
    head, *rest = attribute.split("_")
    return head + "".join(word.title() for word in rest)


def _write(value: object, attributes: Iterable[str]) -> dict[str, Any]:
    """The ``attributes`` of ``value`` under their keys, in order."""
    return {_key(name): getattr(value, name) for name in attributes}


def _read(data: Mapping[str, Any], attributes: Iterable[str]) -> dict[str, int]:
    """The counts :func:`_write` wrote of ``attributes`` into ``data``, by attribute."""
    return {name: _count(data, _key(name)) for name in attributes}


def _sums(moments: ClusteredMean) -> dict[str, Any]:
    return _write(moments, _SUMS)


def _scale_facts(run: RunInfo) -> dict[str, Any]:
    """The shard, the digests, the executor and the tools' source, when the run has them."""
    facts = _write(run, _SCALE_FACTS)
    return {key: value for key, value in facts.items() if value is not None}


def report_to_dict(report: EvaluationReport) -> dict[str, Any]:
    """The JSON document of ``report`` as plain data (see the module docstring)."""
    run = report.run
    document: dict[str, Any] = {
        "globalScore": _rounded(report.score),
        "totalSamples": report.sample_count,
        "passed": report.passed_count,
        "failed": report.failed_count,
    }
    shown = report.not_applicable_count > 0
    tag_scores = report.tag_scores
    if tag_scores:
        document["tagScores"] = {tag: _rounded(s) for tag, s in tag_scores.items()}
    document.update(
        {
            "formatVersion": FORMAT_VERSION,
            "confidenceInterval": _interval(report.moments),
            "clusterSums": _sums(report.moments),
            "complete": report.complete,
            "samplesExpected": report.samples_expected,
            "samples": report.sample_count,
            "rows": report.evaluation_count,
            "passedRows": report.passed_count,
            "failedRows": report.failed_count,
            "calls": report.call_count,
            "failedCalls": report.function_error_count,
            "errors": report.error_count,
            "unscored": report.unscored_count,
            "skipped": report.skipped_count,
            **_inapplicable(report.not_applicable_count, shown),
            **({"notApplicableSamples": report.inapplicable_sample_count} if shown else {}),
            "duration": report.duration,
            "run": {
                "startedAt": _iso(run.started_at),
                "finishedAt": _iso(run.finished_at),
                "startedAtUnix": run.started_at,
                "finishedAtUnix": run.finished_at,
                "duration": run.duration,
                "aevalVersion": run.aeval_version,
                "concurrency": run.concurrency,
                "repeats": run.repeats,
                "gitCommit": run.git_commit,
                "strategies": list(run.strategies),
                "warnings": list(run.warnings),
                **_scale_facts(run),
            },
            "tags": {
                tag: {
                    "samples": s.samples,
                    "rows": s.total,
                    "passed": s.passed,
                    **_inapplicable(s.not_applicable, shown),
                    "score": _rounded(s.score),
                    "confidenceInterval": _interval(s.moments),
                    "clusterSums": _sums(s.moments),
                }
                for tag, s in report.tag_statistics.items()
            },
            "strategyScores": {
                name: _rounded(score) for name, score in report.strategy_scores.items()
            },
            "strategies": {
                name: {
                    "rows": s.total,
                    **_write(s, _STRATEGY_COUNTS),
                    **_inapplicable(s.not_applicable, shown),
                    "errors": s.errors,
                    "score": _rounded(s.score),
                    "meanScore": s.mean_score,
                    "scoreSum": s.score_sum,
                    "scored": s.scored,
                    "confidenceInterval": _interval(s.moments),
                    "clusterSums": _sums(s.moments),
                }
                for name, s in report.strategy_statistics.items()
            },
            "usage": {**_write(report.usage, _TOKENS), "cost": report.usage.cost},
        }
    )
    if report.usage.user_model_calls:
        document["usage"]["userModelCalls"] = report.usage.user_model_calls
    if report.conversations:
        document["conversations"] = dict(report.conversations)
    if report.repeat_statistics is not None:
        document["repeats"] = _repeats(report.repeat_statistics)
    if report.calibration:
        document["calibration"] = {
            name: calibration_data(c) for name, c in report.calibration.items()
        }
    if report.judge_statistics:
        document["judges"] = {name: _judges(j) for name, j in report.judge_statistics.items()}
    if run.gate is not None:
        document["gate"] = run.gate.to_dict()
    document["holdsAllRows"] = report.holds_all_rows
    document["evaluations"] = [row_to_report_entry(row) for row in report.evaluations]
    return document


def _repeats(stats: RepeatStatistics) -> dict[str, Any]:
    return {
        "repeats": stats.repeats,
        "pairs": stats.pairs,
        "passAtK": {str(k): v for k, v in stats.pass_at_k.items()},
        "passHatK": {str(k): v for k, v in stats.pass_hat_k.items()},
        "outputAgreement": stats.output_agreement,
        "flaky": [
            {"sample": c.sample, "strategy": c.strategy, "passed": c.passed, "runs": c.runs}
            for c in stats.flaky
        ],
        "inconsistent": [{"sample": name, "agreement": a} for name, a in stats.inconsistent],
    }


def calibration_data(calibration: Calibration) -> dict[str, Any]:
    """A calibration as the ``calibration`` entries of ``report.json`` hold it."""
    stats = calibration.statistics
    interval = calibration.kappa_interval()
    return {
        **_write(calibration, _CONFUSION),
        "invalidLabels": calibration.invalid_labels,
        "rows": calibration.rows,
        "accuracy": calibration.accuracy,
        "kappa": None if stats is None else stats.kappa,
        "kappaUndefined": calibration.kappa_undefined,
        "kappaInterval": None
        if stats is None or interval is None
        else {
            "confidence": 0.95,
            "low": interval[0],
            "high": interval[1],
            "standardError": stats.standard_error,
        },
        "disagreements": [
            {
                "sample": d.sample,
                "repeat": d.repeat,
                "label": "pass" if d.label else "fail",
                "verdict": "pass" if d.passed else "fail",
                "score": d.score,
                "explanation": d.explanation,
            }
            for d in calibration.disagreements
        ],
    }


def _judges(statistics: JudgeStatistics) -> dict[str, Any]:
    return {
        **_write(statistics, _JUDGE_RATES),
        "agreement": statistics.agreement,
        **_write(statistics, ("decided", "agreement_sum", "unanimous")),
        "judges": {
            name: _write(c, _JUDGE_COUNTS + _JUDGE_RATES) for name, c in statistics.judges.items()
        },
    }


def _read_calibration(name: str, data: Mapping[str, Any]) -> Calibration:
    from .._reporting._judging import Calibration, Disagreement

    return Calibration(
        name,
        **_read(data, _CONFUSION),
        invalid_labels=_count(data, "invalidLabels", 0),
        disagreements=tuple(
            Disagreement(
                sample=d["sample"],
                repeat=_count(d, "repeat"),
                label=d["label"] == "pass",
                passed=d["verdict"] == "pass",
                score=d["score"],
                explanation=d["explanation"],
            )
            for d in data["disagreements"]
        ),
    )


def _read_judges(data: Mapping[str, Any]) -> JudgeStatistics:
    from .._reporting._judging import JudgeCounts, JudgeStatistics

    return JudgeStatistics(
        judges={name: JudgeCounts(**_read(c, _JUDGE_COUNTS)) for name, c in data["judges"].items()},
        decided=_count(data, "decided"),
        agreement_sum=_number(data, "agreementSum"),
        unanimous=_count(data, "unanimous"),
    )


def _inapplicable(count: int, shown: bool) -> dict[str, int]:
    """``notApplicable``, written when the report has not-applicable rows."""
    return {"notApplicable": count} if shown else {}


def _renamed_count(data: Mapping[str, Any], key: str, older: str) -> int:
    """A count written under ``key`` and its upstream name ``older``; either may be alone."""
    if key not in data:
        return _count(data, older)
    value = _count(data, key)
    if older in data and _count(data, older) != value:
        raise ValueError(f"fields {key!r} and {older!r} disagree: {value} and {data[older]!r}")
    return value


def _flag(data: Mapping[str, Any], key: str) -> bool:
    value = data[key]
    if not isinstance(value, bool):
        raise ValueError(f"field {key!r}: expected true or false, got {value!r}")
    return value


def _by_k(data: Mapping[str, Any], key: str) -> dict[int, float]:
    found: dict[int, float] = {}
    for k, value in read_mapping(data[key], key).items():
        if not str(k).isdigit():
            raise ValueError(f"field {key!r}: its keys are numbers of tries, got {k!r}")
        found[int(k)] = read_number(value, key, low=0.0, high=1.0)
    return found


def _rows(entries: object) -> tuple[EvaluationRow, ...]:
    rows = []
    for number, entry in enumerate(read_list(entries, "evaluations")):
        try:
            rows.append(row_from_report_entry(read_mapping(entry, "evaluations")))
        except KeyError as exc:
            raise ValueError(f"evaluations[{number}]: field {exc} is missing") from exc
        except ValueError as exc:
            name = entry.get("name") if isinstance(entry, Mapping) else None
            sample = f" (sample {name!r})" if isinstance(name, str) else ""
            raise ValueError(f"evaluations[{number}]{sample}: {exc}") from exc
    return tuple(rows)


def _moments(data: Mapping[str, Any] | None) -> ClusteredMean:
    if not data:
        return ClusteredMean()
    sums: dict[str, Any] = {
        name: (_count if name in _SUM_COUNTS else _number)(data, _key(name)) for name in _SUMS
    }
    return ClusteredMean(**sums)


def _conversations(data: Any) -> dict[str, int]:
    if data is None:
        return {}
    counts = read_mapping(data, "conversations")
    return {ending: _count(counts, ending) for ending in counts}


def report_from_json(text: str | bytes) -> EvaluationReport:
    """Rebuild the report a ``report.json`` was written from (this module's format).

    Counts, scores and intervals are restored exactly, also when the document holds only some
    rows (``holdsAllRows: false``).

    Raises:
        FormatError: The text is not a report written by this formatter.
    """
    from .._reporting import _values
    from .._reporting._report import EvaluationReport

    try:
        data = orjson.loads(text)
        if not isinstance(data, dict) or data.get("formatVersion") != FORMAT_VERSION:
            raise FormatError(
                "not a report.json written by this aeval version (formatVersion "
                f"{FORMAT_VERSION} expected): re-run the evaluation, or render its rows.jsonl"
            )
        run_data = read_mapping(data["run"], "run")
        run = RunInfo.from_dict(
            {
                "started_at": _time(run_data, "startedAt"),
                "finished_at": _time(run_data, "finishedAt"),
                "complete": data["complete"],
                "samples_expected": data.get("samplesExpected"),
                "concurrency": run_data.get("concurrency"),
                "repeats": run_data.get("repeats") or 1,
                "strategies": run_data.get("strategies") or (),
                "aeval_version": run_data.get("aevalVersion"),
                "git_commit": run_data.get("gitCommit"),
                "warnings": run_data.get("warnings") or (),
                **{name: run_data.get(_key(name)) for name in _SCALE_FACTS},
                "gate": data.get("gate"),
            }
        )
        counts = {
            Outcome.PASSED: _renamed_count(data, "passedRows", "passed"),
            Outcome.FAILED: _renamed_count(data, "failedRows", "failed"),
            Outcome.UNSCORED: _count(data, "unscored"),
            Outcome.ERROR: _count(data, "errors"),
            Outcome.SKIPPED: _count(data, "skipped"),
            Outcome.NOT_APPLICABLE: _count(data, "notApplicable", 0),
        }
        tags = {
            tag: _values.TagStatistics(
                total=_count(t, "rows"),
                passed=_count(t, "passed"),
                moments=_moments(t["clusterSums"]),
                not_applicable=_count(t, "notApplicable", 0),
            )
            for tag, t in data["tags"].items()
        }
        strategies = {
            name: _values.StrategyStatistics(
                total=_count(s, "rows"),
                **_read(s, _STRATEGY_COUNTS),
                errors=_count(s, "errors"),
                score_sum=_number(s, "scoreSum"),
                scored=_count(s, "scored"),
                moments=_moments(s["clusterSums"]),
                not_applicable=_count(s, "notApplicable", 0),
            )
            for name, s in data["strategies"].items()
        }
        repeats = None
        if "repeats" in data:
            r = data["repeats"]
            repeats = _values.RepeatStatistics(
                repeats=_count(r, "repeats"),
                pairs=_count(r, "pairs"),
                flaky=tuple(
                    _values.FlakyCase(
                        sample=c["sample"],
                        strategy=c["strategy"],
                        passed=_count(c, "passed"),
                        runs=_count(c, "runs"),
                    )
                    for c in r["flaky"]
                ),
                pass_at_k=_by_k(r, "passAtK"),
                pass_hat_k=_by_k(r, "passHatK"),
                output_agreement=r["outputAgreement"],
                inconsistent=tuple(
                    (c["sample"], _number(c, "agreement")) for c in r["inconsistent"]
                ),
            )
        usage = data["usage"]
        return EvaluationReport.from_parts(
            _values.ReportParts(
                rows=_rows(data["evaluations"]),
                counts=counts,
                tags=tags,
                strategies=strategies,
                function_errors=_count(data, "failedCalls"),
                calls=_count(data, "calls"),
                samples=_renamed_count(data, "samples", "totalSamples"),
                moments=_moments(data["clusterSums"]),
                run=run,
                holds_all_rows=_flag(data, "holdsAllRows"),
                usage=_values.ModelUsage(
                    **_read(usage, _TOKENS),
                    cost=read_number(usage["cost"], "cost", low=0.0),
                    user_model_calls=_count(usage, "userModelCalls", 0),
                ),
                repeats=repeats,
                calibration={
                    name: _read_calibration(name, c)
                    for name, c in (data.get("calibration") or {}).items()
                },
                judges={name: _read_judges(j) for name, j in (data.get("judges") or {}).items()},
                conversations=_conversations(data.get("conversations")),
            )
        )
    except FormatError:
        raise
    except KeyError as exc:
        raise FormatError(f"not a valid report.json: field {exc} is missing") from exc
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise FormatError(f"not a valid report.json: {exc}") from exc
    except (TypeError, AttributeError) as exc:
        raise FormatError(f"not a valid report.json: {type(exc).__name__}: {exc}") from exc
