"""Failed rows of a stored run as samples, in the YAML sample format, ready to be committed.

Each failed sample becomes one sample: its name, parameters, expected output, tags and
metadata as the run had them (but a ``label``, which judged another output, and the mark of
a live response queued for review), plus the output
that failed (``failed_output``), where it failed (``failure``) and the reviewer's note as
its ``description``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson
import yaml

from .._reporting._codec import row_line
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow, Outcome
from .._samples._labels import LABEL_KEY, REVIEW_QUEUED
from .._util._jsonsafe import safe_text
from ._labels import RowLabel

__all__ = ["FailedSample", "Selection", "failed_samples", "samples_yaml"]

Selection = Literal["failures", "reviewed-fail"]

_FAILED = (Outcome.FAILED, Outcome.ERROR)


@dataclass(frozen=True, slots=True)
class FailedSample:
    """One sample of the dataset: the sample file entry, and what it came from.

    Attributes:
        name: The sample's name in the file.
        entry: The sample as the YAML sample format writes it.
        rows: The failed rows it stands for.
    """

    name: str
    entry: Mapping[str, Any]
    rows: tuple[EvaluationRow, ...]


def _json(row: EvaluationRow) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(row_line(row))
    return data


def _text(value: Any) -> Any:
    """``value`` with its strings safe to encode (lone surrogates escaped)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_text(item) for item in value]
    if isinstance(value, dict):
        return {safe_text(str(key)): _text(item) for key, item in value.items()}
    return value


def _parameters(data: Mapping[str, Any]) -> Any:
    items = data.get("parameters") or []
    if items and all(isinstance(item, dict) and "name" in item for item in items):
        return {item["name"]: item.get("value") for item in items}
    return [item.get("value") if isinstance(item, dict) else item for item in items]


def _failure(
    run_id: str,
    rows: Sequence[EvaluationRow],
    labels: Sequence[RowLabel],
    passed_by: Sequence[RowLabel] = (),
) -> dict[str, Any]:
    first = _json(rows[0])
    failure: dict[str, Any] = {
        "run": run_id,
        "strategies": list(dict.fromkeys(row.strategy for row in rows if row.strategy)),
        "outcome": first["outcome"],
    }
    if first.get("score") is not None:
        failure["score"] = first["score"]
    error = first.get("error")
    explanation = first.get("explanation") or (error or {}).get("message")
    if explanation:
        failure["explanation"] = explanation
    if labels:
        failure["reviewers"] = sorted({found.reviewer for found in labels})
    if passed_by:
        failure["labelled_pass_by"] = sorted({found.reviewer for found in passed_by})
    return failure


def _description(labels: Sequence[RowLabel]) -> str | None:
    notes = list(dict.fromkeys((found.reviewer, found.note) for found in labels if found.note))
    if not notes:
        return None
    if len(notes) == 1:
        return notes[0][1]
    return "\n".join(f"{reviewer}: {note}" for reviewer, note in notes)


def _entry(
    name: str, rows: Sequence[EvaluationRow], labels: Sequence[RowLabel], failure: dict[str, Any]
) -> dict[str, Any]:
    data = _json(rows[0])
    entry: dict[str, Any] = {"name": name}
    parameters = _parameters(data)
    if parameters:
        entry["parameters"] = parameters
    if data.get("expected_output") is not None:
        entry["expected-output"] = data["expected_output"]
    if data.get("tags"):
        entry["tags"] = data["tags"]
    metadata = {
        key: value
        for key, value in (data.get("sample_metadata") or {}).items()
        if key not in (LABEL_KEY, REVIEW_QUEUED)
    }
    description = _description(labels)
    if description is not None:
        metadata["description"] = description
    metadata["failed_output"] = data.get("output")
    metadata["failure"] = failure
    entry["metadata"] = metadata
    return _text(entry)  # type: ignore[no-any-return]


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}-{number}"
    taken.add(candidate)
    return candidate


def failed_samples(
    report: EvaluationReport,
    run_id: str,
    *,
    select: Selection = "failures",
    labels: Iterable[RowLabel] = (),
) -> list[FailedSample]:
    """The failed samples of a run, in the run's order, one per sample.

    Args:
        report: The run.
        run_id: Its id (kept in each sample's ``failure``).
        select: ``"failures"``: the rows that failed (failed or error); ``"reviewed-fail"``:
            the rows a reviewer labelled ``fail`` (a current label), whatever the strategy
            said.
        labels: The run's labels (``await store.labels(ref)``); their notes become the
            descriptions; a failed row a reviewer labelled ``pass`` (the strategy may be the
            one that is wrong) is noted in its ``failure`` as ``labelled_pass_by``, the
            reviewers who did.
    """
    current: dict[tuple[str, int, str | None], list[RowLabel]] = {}
    for label in labels:
        if not label.stale:
            current.setdefault(label.key, []).append(label)
    chosen: dict[int, list[EvaluationRow]] = {}
    notes: dict[int, list[RowLabel]] = {}
    passing_labels: dict[int, list[RowLabel]] = {}
    for row in report.evaluations:
        mine = current.get((row.name, row.repeat, row.strategy), [])
        failing = [label for label in mine if not label.label.passed]
        passing = [label for label in mine if label.label.passed]
        if select == "failures" and row.outcome not in _FAILED:
            continue
        if select == "reviewed-fail" and not failing:
            continue
        chosen.setdefault(row.index, []).append(row)
        notes.setdefault(row.index, []).extend(failing)
        if row.outcome in _FAILED:
            passing_labels.setdefault(row.index, []).extend(passing)
    taken: set[str] = set()
    samples = []
    for index, rows in chosen.items():
        name = _unique(rows[0].name, taken)
        labelled = notes[index]
        failure = _failure(run_id, rows, labelled, passing_labels.get(index, ()))
        entry = _entry(name, rows, labelled, failure)
        samples.append(FailedSample(name, entry, tuple(rows)))
    return samples


class _Dumper(yaml.SafeDumper):
    """Safe YAML, with text of several lines as a block (``|``) where YAML allows one."""


def _text_node(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text.rstrip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _text_node)


def samples_yaml(samples: Sequence[FailedSample], *, header: str = "") -> str:
    """The samples as a YAML sample file (any text is quoted or escaped as YAML needs)."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    body = yaml.dump(
        [dict(sample.entry) for sample in samples],
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=100,
    )
    return comment + body
