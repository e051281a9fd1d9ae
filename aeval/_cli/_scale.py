"""Shards on the command line: ``aeval run --shard I/N`` and ``aeval merge``."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

from .._exceptions import MergeError
from .._executor import IndexedSample
from .._report import EvaluationReport
from .._run_info import RunInfo
from .._samples import EvaluationSample, Samples
from .._shards import DatasetDigest, Shard, ShardStream, merge_reports
from .._sinks import JsonlSink, read_run
from ._config import DEFAULT_FORMATS, DEFAULT_OUTPUT_DIR, ConfigError, ErrorLimit, RunConfig

__all__ = [
    "ShardedSamples",
    "check_config",
    "config_digest",
    "gate_config",
    "merge_files",
    "merge_inputs",
    "split",
    "write_rows",
]

ShardedSamples = list[IndexedSample] | ShardStream


def config_digest(config: RunConfig) -> str:
    """A SHA-256 of the configuration file and of the settings that change the rows.

    The settings are the ones flags can override (``--tags``, ``--timeout``, ``--repeats``),
    so shards run with different flags do not merge; the output directory, the formats and
    the concurrency do not count.
    """
    digest = hashlib.sha256(config.path.read_bytes())
    settings = {"tags": list(config.tags), "timeout": config.timeout, "repeats": config.repeats}
    digest.update(orjson.dumps(settings, option=orjson.OPT_SORT_KEYS))
    return digest.hexdigest()


async def _streamed_names(config: RunConfig, shard: Shard) -> tuple[DatasetDigest, int]:
    digest = DatasetDigest()
    held = 0
    tags = frozenset(config.tags)
    for source in config.samples:
        async for sample in Samples.stream(source):
            if tags and tags.isdisjoint(sample.tags):
                continue
            digest.add(sample.name)
            held += shard.holds(sample.name)
    return digest, held


async def split(
    config: RunConfig,
    samples: Samples | AsyncIterable[EvaluationSample],
    shard: Shard,
) -> tuple[ShardedSamples, dict[str, Any]]:
    """The samples of ``shard``, and the run header's facts that identify the shard's run.

    Loaded samples are split in memory; a streamed source is read once ahead, for its names
    (the dataset's digest and the shard's size), then split as the run reads it.
    """
    if isinstance(samples, Samples):
        digest = DatasetDigest(sample.name for sample in samples)
        selected: ShardedSamples = shard.select(samples)
    else:
        digest, held = await _streamed_names(config, shard)
        selected = ShardStream(samples, shard, held)
    facts = {
        "shard": str(shard),
        "config_digest": await anyio.to_thread.run_sync(config_digest, config),
        "dataset_digest": digest.hexdigest(),
        "dataset_samples": digest.samples,
    }
    return selected, facts


def merge_inputs(paths: Sequence[Path]) -> list[Path]:
    """The ``rows.jsonl`` files named, or found under the directories named (sorted).

    Raises:
        MergeError: A path does not exist, or a directory holds no ``rows.jsonl``.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("rows.jsonl"))
            if not found:
                raise MergeError(f"{path}: no rows.jsonl under this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise MergeError(f"{path}: no such file or directory")
    return files


async def merge_files(files: Sequence[Path]) -> EvaluationReport:
    """Read each shard's rows and run header, and merge them (see ``merge_reports``)."""
    reports = []
    for path in files:
        rows, run = await read_run(path)
        reports.append(EvaluationReport(rows, run=run if run is not None else RunInfo()))
    return merge_reports(*reports, sources=[str(path) for path in files])


async def write_rows(report: EvaluationReport, path: Path) -> None:
    """Write the merged run as a ``rows.jsonl``: its header, every row, its end record."""
    sink = JsonlSink(path)
    await sink.run_started(report.run.replace(finished_at=None, complete=False))
    for row in report.evaluations:
        await sink.send(row)
    await sink.run_finished(report.run)
    await sink.flush()


def gate_config(
    config_path: Path | None,
    *,
    min_score: float | None,
    max_errors: ErrorLimit | None = None,
    output: Path | None,
    formats: Sequence[str] | None,
) -> RunConfig:
    """The thresholds, output directory and formats of ``aeval merge``.

    From ``--config`` when given (its thresholds, output and formats, which the flags
    override), else from the flags alone.
    """
    from ._config import load_config

    if config_path is not None:
        config = load_config(config_path)
    else:
        config = RunConfig(
            path=Path("(no configuration: thresholds from the flags)"),
            samples=(),
            tags=(),
            target="",
            strategies=(),
            output_dir=Path(DEFAULT_OUTPUT_DIR),
            formats=DEFAULT_FORMATS,
        )
    changes: dict[str, Any] = {}
    if min_score is not None:
        changes["min_score"] = min_score
    if max_errors is not None:
        changes["max_errors"] = max_errors
    if output is not None:
        changes["output_dir"] = output
    if formats:
        changes["formats"] = tuple(formats)
    return config.replace(**changes) if changes else config


def check_config(config: RunConfig, report: EvaluationReport) -> None:
    """Refuse to gate shards on another configuration than theirs.

    Raises:
        ConfigError: The shards were run with another configuration file (or flags).
    """
    expected = report.run.config_digest
    if config.samples and expected is not None and config_digest(config) != expected:
        raise ConfigError.at(
            config.path,
            "--config",
            "the shards were run with another configuration (or other --tags, "
            "--repeats or --timeout flags): give the file they ran with",
        )
