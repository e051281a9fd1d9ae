"""RayExecutor: a Scorer's samples evaluated by async Ray actors, rows absorbed here."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from contextvars import copy_context
from typing import Any

import anyio

from .._engine._executor import Deliver, ExecutorJob, FunctionUnderTest, IndexedSample, SampleFeed
from .._engine._sync import running_loop
from .._exceptions import ExecutorError, NotSerializableError
from .._util._groups import unwrap_single_group
from ..models._limits import SHARE_LIMITS, LimitSpec, SharedLimits
from ._limits import LimiterActor, LimitUsage, RaySharedLimits
from ._wire import dumps, import_ray, loads
from ._worker import EvaluationWorker

__all__ = ["RayExecutor"]

_INIT_LOCK = threading.Lock()


def _describe(value: object) -> str:
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return f"{name!r}"


class _Dispatch:
    """What the worker slots share: the feed, how many hold samples, and a wake-up call."""

    def __init__(self, feed: SampleFeed) -> None:
        self.feed = feed
        self.busy = 0
        self.changed = anyio.Event()

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    @property
    def drained(self) -> bool:
        return self.busy == 0 and self.feed.exhausted and self.feed.pending == 0


class RayExecutor:
    """Runs a Scorer's samples on a Ray cluster: ``Scorer(100, executor=RayExecutor(workers=8))``.

    Each worker is an async Ray actor running aeval's own Scorer over the samples it is
    handed, ``concurrency`` (the Scorer's) at once. Rows come back in batches, each sample's
    rows together, to this process, where the Scorer's report, sinks, stream and progress see
    them as in a run in one process. Model clients among the strategies share their
    concurrency caps and request and token budgets across every worker through one limiter
    actor. A worker that dies has the samples it had not delivered run again on another (a
    new worker takes its place, up to ``max_restarts`` times), so every sample's rows arrive
    exactly once; the report's warnings say so.

    Ray starts on first use: a local instance (``address=None``, the CPUs of this machine)
    or the cluster at ``address`` (``"auto"``, ``"ray://head:10001"``). A Ray instance already
    started by the program (``ray.init()``) is used as it is.

    Args:
        workers: Worker actors (>= 1).
        address: The cluster, or ``None`` for a local instance.
        batch: Samples handed to a worker at a time (default: the Scorer's concurrency, at
            least 8); each worker holds up to two batches, so it never waits for work.
        cpus_per_worker: CPUs Ray reserves for each worker (default 1).
        max_restarts: Workers started in place of workers that died, over a run.
        python_path: Folders put first on the workers' ``sys.path`` (where the function's
            module lives, when it is not installed on the workers).
        runtime_env: Ray's runtime environment for the workers (e.g. ``{"working_dir":
            "."}`` to ship the project to a remote cluster).
        init: More keyword arguments for ``ray.init``.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        address: str | None = None,
        batch: int | None = None,
        cpus_per_worker: float = 1.0,
        max_restarts: int = 3,
        python_path: Sequence[str] = (),
        runtime_env: Mapping[str, Any] | None = None,
        init: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        if batch is not None and (isinstance(batch, bool) or batch < 1):
            raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {max_restarts!r}")
        self.workers = workers
        self.address = address
        self.batch = batch
        self.cpus_per_worker = cpus_per_worker
        self.max_restarts = max_restarts
        self.python_path = tuple(str(folder) for folder in python_path)
        self.runtime_env = dict(runtime_env or {})
        self.init = dict(init or {})
        self._started_ray = False
        self._usage: dict[str, LimitUsage] = {}
        self.startup_seconds: float | None = None
        """Seconds the last run spent before its workers were ready (Ray's start included)."""

    def __repr__(self) -> str:
        where = self.address or "local"
        return f"RayExecutor(workers={self.workers}, address={where!r})"

    def describe(self) -> str:
        """``"ray, 8 workers"`` (and the address, for a remote cluster)."""
        plural = "s" if self.workers != 1 else ""
        where = f" at {self.address}" if self.address else ""
        return f"ray, {self.workers} worker{plural}{where}"

    @property
    def limit_usage(self) -> Mapping[str, LimitUsage]:
        """What each shared model limit granted in the last run, by client."""
        return dict(self._usage)

    def prepare(self, function: FunctionUnderTest, strategies: Sequence[object]) -> object:
        """Check that the function and every strategy can be sent to the workers.

        Raises:
            NotSerializableError: One cannot; the message names it and why.
            MissingExtraError: Ray is not installed.
        """
        import_ray()
        for what, value in (
            ("the function under test", function),
            *((f"strategy {i + 1}", s) for i, s in enumerate(strategies)),
        ):
            try:
                dumps(value)
            except Exception as exc:
                raise NotSerializableError(
                    f"{what} ({_describe(value)}) cannot be sent to the Ray workers: "
                    f"{type(exc).__name__}: {exc}. Everything a worker runs travels by "
                    "pickling (cloudpickle): define it at module level, and create locks, "
                    "connections and open files on first use rather than in __init__"
                ) from exc
        return None

    def close(self) -> None:
        """Shut Ray down if this executor started it (a local instance)."""
        if self._started_ray:
            import_ray().shutdown()
            self._started_ray = False

    def start(self) -> None:
        """Start Ray (or connect to the cluster) now, in this thread, rather than on first use.

        A program's main thread is the best place: Ray then installs its signal handlers.

        Raises:
            ExecutorError: The cluster cannot be reached or Ray cannot start.
            MissingExtraError: Ray is not installed.
        """
        self._ensure_ray()

    def _ensure_ray(self) -> None:
        ray = import_ray()
        with _INIT_LOCK:
            if ray.is_initialized():
                return
            options: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": logging.WARNING,
                "log_to_driver": True,
            }
            options.update(self.init)
            try:
                ray.init(address=self.address, **options)
            except Exception as exc:
                where = self.address or "a local Ray instance"
                raise ExecutorError(
                    f"cannot start or reach {where}: {type(exc).__name__}: {exc}"
                ) from exc
            self._started_ray = True

    def _payload(self, job: ExecutorJob, ray: Any) -> tuple[bytes, Any, dict[str, LimitSpec]]:
        """The function and strategies serialised, each model client with its shared limits.

        Returns the payload, the limiter actor (``None`` when no strategy holds a model
        client) and the limits to register with it.
        """
        keys: dict[int, str] = {}
        specs: dict[str, LimitSpec] = {}
        limiter: list[Any] = []

        def share(spec: LimitSpec, client: object) -> SharedLimits:
            key = keys.get(id(client))
            if key is None:
                key = keys[id(client)] = f"{len(keys)}:{spec.name}"
                specs[key] = spec
            if not limiter:
                actor_class = ray.remote(LimiterActor).options(max_concurrency=100_000)
                limiter.append(actor_class.remote())
            return RaySharedLimits(limiter[0], key)

        def serialise() -> bytes:
            SHARE_LIMITS.set(share)
            return dumps((job.function, job.strategies))

        payload = copy_context().run(serialise)
        return payload, (limiter[0] if limiter else None), specs

    async def execute(self, job: ExecutorJob, deliver: Deliver) -> None:
        """Evaluate every sample of the job on the workers, delivering each sample once."""
        if running_loop() != "asyncio":
            raise ExecutorError(
                "the Ray executor runs on asyncio (Ray's results are awaited there): "
                "run this evaluation with anyio's asyncio backend"
            )
        ray = import_ray()
        began = anyio.current_time()
        self.startup_seconds = None
        await anyio.to_thread.run_sync(self._ensure_ray)
        payload, limiter, specs = self._payload(job, ray)
        if limiter is not None:
            await limiter.register.remote(specs)
        settings = {
            "concurrency": job.concurrency,
            "timeout": job.timeout,
            "repeats": job.repeats,
            "tracebacks": job.tracebacks,
            "max_abandoned": job.max_abandoned,
            "tools": job.tools,
            "trace_limits": job.trace_limits,
            "user_model": job.user_model,
            "user_cache": job.user_cache,
            "conversation_timeout": job.conversation_timeout,
        }
        options: dict[str, Any] = {"num_cpus": self.cpus_per_worker, "max_restarts": 0}
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        worker_class = ray.remote(EvaluationWorker).options(**options)
        actors: list[Any] = []
        restarts = [self.max_restarts]

        async def start() -> Any:
            actor = worker_class.remote(payload, settings, self.python_path)
            actors.append(actor)
            try:
                await actor.ready.remote()
            except ray.exceptions.RayError as exc:
                raise ExecutorError(
                    f"a Ray worker could not start: {_cause(exc)}; when the function's module "
                    "is not installed on the workers, give its folder in python_path or ship "
                    "it with runtime_env={'working_dir': ...}"
                ) from None
            return actor

        batch = self.batch or max(8, job.concurrency)
        dispatch = _Dispatch(job.feed)
        try:
            first: list[Any] = []

            async def started(into: list[Any]) -> None:
                into.append(await start())

            with unwrap_single_group():
                async with anyio.create_task_group() as group:
                    for _ in range(self.workers):
                        group.start_soon(started, first)
                self.startup_seconds = anyio.current_time() - began
                async with anyio.create_task_group() as group:
                    for number, actor in enumerate(first, 1):
                        group.start_soon(
                            self._drive,
                            number,
                            actor,
                            start,
                            restarts,
                            dispatch,
                            job,
                            deliver,
                            batch,
                            limiter,
                        )
            if not dispatch.drained:
                raise ExecutorError(
                    f"every Ray worker died and no restart is left ({self.max_restarts} "
                    f"allowed): {dispatch.feed.pending} sample(s) were not evaluated"
                )
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(ray, actors)
            if limiter is not None:
                try:
                    self._usage = await _with_timeout(limiter.statistics.remote(), 10)
                except Exception:
                    self._usage = {}
                ray.kill(limiter, no_restart=True)

    async def _drive(
        self,
        number: int,
        actor: Any,
        start: Any,
        restarts: list[int],
        dispatch: _Dispatch,
        job: ExecutorJob,
        deliver: Deliver,
        batch: int,
        limiter: Any,
    ) -> None:
        """Keep one worker fed (two batches held) and deliver its rows; replace it if it dies."""
        ray = import_ray()
        feed = dispatch.feed
        held: dict[int, IndexedSample] = {}
        room = 2 * batch
        while True:
            new = await feed.take(room - len(held)) if len(held) < room else []
            if not new and not held:
                if dispatch.drained:
                    dispatch.notify()
                    return
                await dispatch.changed.wait()
                continue
            if not held:
                dispatch.busy += 1
            held.update((item.index, item) for item in new)
            try:
                data = await actor.exchange.remote(dumps(new))
            except ray.exceptions.RayActorError as exc:
                lost = sorted(held.values(), key=lambda item: item.index)
                held.clear()
                dispatch.busy -= 1
                feed.give_back(lost)
                if limiter is not None:
                    holder = getattr(getattr(actor, "_actor_id", None), "hex", lambda: None)()
                    if holder:
                        limiter.release_holder.remote(holder)
                replaced = restarts[0] > 0
                job.warn(
                    f"Ray worker {number} died ({_cause(exc)}); its {len(lost)} unfinished "
                    f"sample(s) ran again on "
                    + ("a new worker" if replaced else "the other workers")
                )
                dispatch.notify()
                if not replaced:
                    return
                restarts[0] -= 1
                actor = await start()
                continue
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if isinstance(exc.cause, BaseException) else exc
                raise cause from None
            rows = loads(data)
            for index in {row.index for row in rows}:
                held.pop(index, None)
            if not held:
                dispatch.busy -= 1
                dispatch.notify()
            await deliver(rows)


def _cause(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


async def _stop(ray: Any, actors: Sequence[Any]) -> None:
    """Kill the workers and wait (10 s at most) until Ray reports each of them dead, so that
    shutting Ray down right after cannot leave a worker process behind."""
    for actor in actors:
        ray.kill(actor, no_restart=True)
    with anyio.move_on_after(10):
        for actor in actors:
            with suppress(ray.exceptions.RayError):
                await actor.ready.remote()


async def _with_timeout(ref: Any, seconds: float) -> Any:
    with anyio.fail_after(seconds):
        return await ref
