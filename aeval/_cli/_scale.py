"""Shards on the command line: ``aeval run --shard I/N`` and ``aeval merge``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from .._engine._executor import IndexedSample
from .._engine._shards import DatasetDigest, Shard, ShardStream, merge_reports
from .._engine._sinks import JsonlSink
from .._exceptions import MergeError, ReportWriteError, StoreError
from .._reporting._codec import read_run
from .._reporting._report import EvaluationReport
from .._reporting._run_info import Gate, RunInfo
from .._samples import EvaluationSample, Samples
from ._config import DEFAULT_FORMATS, DEFAULT_OUTPUT_DIR, ConfigError, ErrorLimit, RunConfig
from ._history import config_error

if TYPE_CHECKING:
    from .._store import RunStore

__all__ = [
    "ShardedSamples",
    "check_config",
    "config_digest",
    "gate_config",
    "merge_files",
    "merge_inputs",
    "record_merged",
    "save_merged",
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
    import hashlib

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
    """Write the merged run as a ``rows.jsonl``: its header, every row, its end record.

    The file is written beside ``path`` and renamed over it once whole.

    Raises:
        ReportWriteError: The file cannot be written; a previous ``path`` is unchanged.
    """
    temporary = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    try:
        sink = JsonlSink(temporary)
        await sink.run_started(report.run.replace(finished_at=None, complete=False))
        for row in report.evaluations:
            await sink.send(row)
        await sink.run_finished(report.run)
        await sink.flush()
        await anyio.Path(temporary).replace(path)
    except OSError as exc:
        with suppress(OSError):
            await anyio.Path(temporary).unlink()
        raise ReportWriteError(path, exc) from exc


_LOOKBACK = 1000


async def _shards_name(store: RunStore, report: EvaluationReport) -> str | None:
    """The name the shards of ``report`` were stored under (that of the latest such run)."""
    run = report.run
    if run.config_digest is None:
        return None
    for found in reversed(await store.runs(last=_LOOKBACK, shards=True)):
        header = found.header
        if (
            found.shard is not None
            and header.config_digest == run.config_digest
            and header.dataset_digest == run.dataset_digest
        ):
            return found.name
    return None


async def record_merged(
    store: RunStore,
    report: EvaluationReport,
    *,
    name: str | None,
    labels: Sequence[str],
    config: bytes | None,
) -> tuple[str | None, str | None]:
    """Record the merged run in ``store`` as ``aeval run`` records a run.

    Its name is ``name`` (``--name``, or the ``--config``'s), else the name the shards' runs
    were stored under. Returns the run's id, or ``None`` and why it was not recorded.
    """
    chosen = name if name is not None else await _shards_name(store, report)
    if chosen is None:
        return None, (
            f"the merged run was not recorded in {store.path}: no run of these shards is "
            "stored there to take its name from; give --name NAME or --config CONFIG "
            "(or --no-store)"
        )
    return await store.save(report, chosen, labels=labels, config=config), None


async def save_merged(
    report: EvaluationReport,
    config: RunConfig,
    *,
    rows_path: Path,
    store_path: Path | None,
    name: str | None,
    labels: Sequence[str],
    config_file: Path | None,
    gate: Gate | None = None,
) -> tuple[list[Path], str | None, str | None]:
    """Write the merged run's ``rows.jsonl`` and reports, and record it in the run store.

    The store is opened first, so that a store that cannot be written stops the merge
    before anything is written; the reports carry ``gate`` (the store and ``rows.jsonl``
    keep the run as merged, as ``aeval run`` does). Returns the files written, the run's id
    in the store (or ``None``), and why it was not recorded when there is a reason to say.

    Raises:
        ConfigError: The store cannot be used (with ``--config``).
        StoreError: The same without ``--config``.
    """
    from .._store import RunStore

    store = None if store_path is None else RunStore(store_path)
    try:
        if store is not None:
            try:
                await store.check()
            except StoreError as exc:
                if config_file is not None:
                    raise config_error(config, exc) from exc
                raise StoreError(
                    f"{exc}; or merge without recording: --no-store", path=exc.path
                ) from exc
        await anyio.Path(config.output_dir).mkdir(parents=True, exist_ok=True)
        await write_rows(report, rows_path)
        gated = report if gate is None else report.with_run(report.run.replace(gate=gate))
        written = await gated.save(config.output_dir, formats=config.formats)
        if store is None:
            return written, None, None
        chosen = name or (config.run_name if config_file is not None else None)
        content = await anyio.Path(config.path).read_bytes() if config_file else None
        run_id, why = await record_merged(
            store,
            report,
            name=chosen,
            labels=tuple(dict.fromkeys((*config.labels, *labels))),
            config=content,
        )
        return written, run_id, why
    finally:
        if store is not None:
            await store.aclose()


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
    return config.overridden(
        {
            "min_score": min_score,
            "max_errors": max_errors,
            "output_dir": output,
            "formats": tuple(formats) if formats else None,
        }
    )


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
