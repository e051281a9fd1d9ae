"""Shards of a dataset: a split every machine computes alike, and merging the shards' reports.

A sample belongs to shard ``I/N`` when a stable hash of its name (BLAKE2b, not Python's
salted ``hash``) modulo N is ``I - 1``: the same split on every machine and Python version,
every sample in exactly one shard, decided one sample at a time, so a streamed JSONL source
is split as it is read. A shard keeps each sample's index in the whole dataset, so the rows
of merged shards sort as those of one run.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Sequence
from dataclasses import dataclass

from .._exceptions import MergeError
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._reporting._run_info import RunInfo
from .._samples import EvaluationSample
from .._samples._sources import SizedStream, batches_of
from ._executor import IndexedSample

__all__ = ["DatasetDigest", "Shard", "ShardStream", "merge_reports", "shard_of"]

_SHOWN_MISSING = 10
"""Missing shards named in a merge's warning (the others are counted)."""


def shard_of(name: str, count: int) -> int:
    """The shard (1 to ``count``) that holds the sample called ``name``."""
    import hashlib  # loaded by a sharded run only

    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as in ``--shard 2/4``).

    Attributes:
        index: Which shard, from 1 to ``count``.
        count: How many shards the dataset is split into.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"a shard count must be an integer >= 1, got {self.count!r}")
        if not isinstance(self.index, int) or not 1 <= self.index <= self.count:
            raise ValueError(
                f"a shard index must be an integer from 1 to {self.count}, got {self.index!r}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Read ``"I/N"``, e.g. ``"2/4"``.

        Raises:
            ValueError: The text is not ``I/N`` with 1 <= I <= N.
        """
        index, slash, count = text.strip().partition("/")
        try:
            if not slash:
                raise ValueError
            return cls(int(index), int(count))
        except ValueError:
            raise ValueError(
                f"expected I/N with 1 <= I <= N (e.g. 2/4 for the second of four shards), "
                f"got {text!r}"
            ) from None

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, name: str) -> bool:
        """Whether the sample called ``name`` belongs to this shard."""
        return self.count == 1 or shard_of(name, self.count) == self.index

    def select(self, samples: Iterable[EvaluationSample]) -> list[IndexedSample]:
        """This shard's samples, each with its index in ``samples``."""
        return [
            IndexedSample(index, sample)
            for index, sample in enumerate(samples)
            if self.holds(sample.name)
        ]


class DatasetDigest:
    """The identity of a dataset: a SHA-256 of its sample names in order, and their count."""

    __slots__ = ("_hash", "samples")

    def __init__(self, names: Iterable[str] = ()) -> None:
        import hashlib

        self._hash = hashlib.sha256()
        self.samples = 0
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        """Account for the next sample's name."""
        data = name.encode("utf-8", "surrogatepass")
        self._hash.update(len(data).to_bytes(8, "big"))
        self._hash.update(data)
        self.samples += 1

    def hexdigest(self) -> str:
        """The digest so far, in hex."""
        return self._hash.hexdigest()


@dataclass(frozen=True, slots=True, eq=False)
class ShardStream(SizedStream[IndexedSample]):
    """One shard of a streamed source, read lazily, that knows how many samples it holds.

    Args:
        samples: The whole dataset, read once, in order.
        shard: Which shard to keep.
        count: The samples of the shard (for progress and the report's expected count).
    """

    samples: AsyncIterable[EvaluationSample]
    shard: Shard
    count: int

    async def sample_batches(self) -> AsyncGenerator[list[IndexedSample], None]:
        """The shard's samples with their index in the whole dataset, a batch of the source
        at a time (see ``batches_of``)."""
        batches = batches_of(self.samples)
        holds = self.shard.holds
        index = 0
        try:
            async for batch in batches:
                held = []
                for sample in batch:
                    if holds(sample.name):
                        held.append(IndexedSample(index, sample))
                    index += 1
                if held:
                    yield held
        finally:
            await batches.aclose()


def _shard_of_run(run: RunInfo, where: str) -> Shard | None:
    if run.shard is None:
        return None
    try:
        return Shard.parse(run.shard)
    except ValueError as exc:
        raise MergeError(f"{where}: its shard {run.shard!r} cannot be read: {exc}") from None


def _require_digests(pairs: Sequence[tuple[str, RunInfo]]) -> None:
    for where, run in pairs:
        for field, what in (
            ("config_digest", "configuration"),
            ("dataset_digest", "dataset"),
            ("dataset_samples", "dataset's sample count"),
        ):
            if getattr(run, field) is None:
                raise MergeError(
                    f"{where}: its run header names shard {run.shard} but has no {field} "
                    f"(the {what} the shard ran on), so it cannot be checked against the other "
                    "shards: merge the rows.jsonl that `aeval run --shard` wrote, unedited"
                )


def _same(values: Sequence[tuple[str, object]], what: str, fix: str) -> object:
    first_where, first = values[0]
    for where, value in values[1:]:
        if value != first:
            raise MergeError(
                f"{where} and {first_where} come from different {what} "
                f"({_short(value)} and {_short(first)}): {fix}"
            )
    return first


def _short(value: object) -> str:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return str(value)


def merge_reports(
    *reports: EvaluationReport, sources: Sequence[str] | None = None
) -> EvaluationReport:
    """Merge the reports of a dataset's shards into the report of the whole run.

    The reports must hold all their rows (``keep="all"``; ``aeval run`` writes every row to
    ``rows.jsonl``, which ``aeval merge`` reads). Reports of ``aeval run --shard`` runs must
    come from one configuration and one dataset, each shard at most once; the merged report
    is partial, and its warnings say why, when a shard is missing or stopped early. Reports
    without a shard are merged as they are, and must hold different samples.

    Args:
        *reports: The shards' reports, in any order.
        sources: Where each report came from (file names), for the error messages.

    Returns:
        One report: every row in dataset order, the counts, scores and intervals of the whole.

    Raises:
        MergeError: No report was given; a report holds only some of its rows; the shards
            come from different configurations, datasets or splits; a shard appears twice;
            a row appears twice or belongs to another shard.
    """
    if not reports:
        raise MergeError("nothing to merge: give the reports of the shards")
    names = [f"report {i + 1}" for i in range(len(reports))] if sources is None else list(sources)
    if len(names) != len(reports):
        raise ValueError("give one source per report")
    for where, report in zip(names, reports, strict=True):
        if not report.holds_all_rows:
            raise MergeError(
                f"{where} holds only some of its rows (keep={'failures'!r} or 'none'): merge "
                "the shards' rows.jsonl files, which hold every row"
            )
    shards = [_shard_of_run(r.run, where) for where, r in zip(names, reports, strict=True)]
    sharded = [s is not None for s in shards]
    if any(sharded) and not all(sharded):
        lone = names[sharded.index(False)]
        raise MergeError(
            f"{lone} is not the output of a shard (aeval run --shard I/N) but other inputs "
            "are: merge the shards of one run only"
        )
    runs = [report.run for report in reports]
    warnings: list[str] = []
    expected: int | None = None
    if all(sharded):
        pairs = list(zip(names, runs, strict=True))
        _require_digests(pairs)
        _same(
            [(w, r.config_digest) for w, r in pairs],
            "configurations",
            "merge the shards of one configuration (the same file and --tags, --repeats and "
            "--timeout flags)",
        )
        _same(
            [(w, r.dataset_digest) for w, r in pairs],
            "datasets",
            "the sample files differ between the shards' runs; run every shard on the same data",
        )
        count = _same(
            [(w, s.count if s else None) for w, s in zip(names, shards, strict=True)],
            "splits (shard counts)",
            "run every shard with the same N in --shard I/N",
        )
        assert isinstance(count, int)
        seen: dict[int, str] = {}
        for where, shard in zip(names, shards, strict=True):
            assert shard is not None
            if shard.index in seen:
                raise MergeError(
                    f"shard {shard} appears twice, in {seen[shard.index]} and {where}: "
                    "give each shard's output once"
                )
            seen[shard.index] = where
        absent = count - len(seen)
        if absent:
            missing: list[str] = []
            for i in range(1, count + 1):
                if len(missing) == _SHOWN_MISSING:
                    break
                if i not in seen:
                    missing.append(f"{i}/{count}")
            more = f" and {absent - len(missing):,} more" if absent > len(missing) else ""
            warnings.append(
                f"shard{'s' if absent > 1 else ''} {', '.join(missing)}{more} missing: the "
                "report covers the other shards' samples only"
            )
        expected = runs[0].dataset_samples
    for where, shard, run, report in zip(names, shards, runs, reports, strict=True):
        if not run.complete:
            label = f"shard {shard}" if shard is not None else where
            warnings.append(
                f"{label} ({where}) is partial: its run stopped after {report.sample_count}"
                + (f" of {run.samples_expected}" if run.samples_expected is not None else "")
                + " samples"
            )
    rows = _checked_rows(reports, shards, names)
    if expected is None and all(run.samples_expected is not None for run in runs):
        expected = sum(run.samples_expected or 0 for run in runs)
    found = len({row.index for row in rows})
    if expected is not None and found != expected and not warnings:
        warnings.append(
            f"the inputs hold {found} of the dataset's {expected} samples: rows were removed "
            "from (or added to) a shard's rows.jsonl after its run; run the shard again"
        )
    starts = [run.started_at for run in runs if run.started_at is not None]
    ends = [run.finished_at for run in runs if run.finished_at is not None]
    commits = {run.git_commit for run in runs}
    first = runs[0]
    merged = first.replace(
        started_at=min(starts) if starts else None,
        finished_at=max(ends) if ends and len(ends) == len(runs) else None,
        complete=not warnings,
        samples_expected=expected,
        shard=None,
        git_commit=first.git_commit if len(commits) == 1 else None,
        executor=first.executor if len({run.executor for run in runs}) == 1 else None,
        warnings=tuple(
            dict.fromkeys(
                [
                    *(w for run in runs for w in run.warnings),
                    *warnings,
                    *(
                        [f"the shards ran at different commits: {', '.join(map(str, commits))}"]
                        if len(commits) > 1
                        else []
                    ),
                ]
            )
        ),
    )
    return EvaluationReport(rows, run=merged)


def _checked_rows(
    reports: Sequence[EvaluationReport], shards: Sequence[Shard | None], names: Sequence[str]
) -> list[EvaluationRow]:
    rows: list[EvaluationRow] = []
    owner: dict[tuple[int, int, int], str] = {}
    for where, shard, report in zip(names, shards, reports, strict=True):
        for row in report.evaluations:
            if shard is not None and not shard.holds(row.name):
                raise MergeError(
                    f"{where}: sample {row.name!r} belongs to shard "
                    f"{shard_of(row.name, shard.count)}/{shard.count}, not {shard}: the file "
                    "was not written by that shard's run"
                )
            key = row.sort_key
            if key in owner:
                raise MergeError(
                    f"{where}: the row of sample {row.name!r} (index {row.index}, repeat "
                    f"{row.repeat}, strategy {row.strategy!r}) is also in {owner[key]}: "
                    "each row may be merged once"
                )
            owner[key] = where
            rows.append(row)
    return rows
