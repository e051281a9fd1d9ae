"""A model client copied to an executor's workers takes its limits from one shared holder."""

from __future__ import annotations

import pickle

import pytest

from aeval.models import OpenAIChatModel
from aeval.models._limits import SHARE_LIMITS, LimitSpec, SharedLimits
from aeval.models._pacing import Quota, QuotaHeaders
from aeval.testing import FakeClock, OpenAICompatibleServer, Reply

pytestmark = pytest.mark.anyio


class Holder:
    """Records what the copies of a client ask of their shared limits."""

    def __init__(self) -> None:
        self.acquired: list[float] = []
        self.released: list[int] = []
        self.adjusted: list[float] = []
        self.observed: list[tuple[int, QuotaHeaders]] = []
        self.held: list[float] = []

    async def acquire(self, tokens: float) -> tuple[int, bool]:
        self.acquired.append(tokens)
        return len(self.acquired), False

    async def release(self, lease: int) -> None:
        self.released.append(lease)

    def adjust(self, delta: float) -> None:
        self.adjusted.append(delta)

    def observe(self, lease: int, quota: QuotaHeaders) -> None:
        self.observed.append((lease, quota))

    def hold(self, seconds: float) -> None:
        self.held.append(seconds)


async def test_a_copy_made_while_sharing_uses_the_shared_limits() -> None:
    holder = Holder()
    assert isinstance(holder, SharedLimits)
    specs: list[LimitSpec] = []

    def share(spec: LimitSpec, client: object) -> SharedLimits:
        specs.append(spec)
        return holder

    async with OpenAICompatibleServer() as server:
        model = OpenAIChatModel(
            "m",
            base_url=server.base_url,
            max_concurrency=3,
            requests_per_minute=60,
            tokens_per_minute=10_000,
        )
        await model.chat("before the copy")  # the loop-bound pool must not travel
        server.enqueue(Reply.text("true", usage=(500, 1)))  # costs more than estimated
        token = SHARE_LIMITS.set(share)
        try:
            data = pickle.dumps(model)
        finally:
            SHARE_LIMITS.reset(token)
        copy = pickle.loads(data)
        await copy.chat("from a worker")
        plain = pickle.loads(pickle.dumps(model))
        await plain.chat("not shared")
        await model.aclose()
        await copy.aclose()
        await plain.aclose()
    assert specs == [LimitSpec("OpenAIChatModel('m')", 3, 60, 10_000)]
    assert holder.acquired == [] and plain._shared is None
    holder = copy._shared  # the copy holds its own copy of the shared handle
    assert isinstance(holder, Holder)
    assert len(holder.acquired) == 1 and holder.acquired[0] > 0
    assert holder.released == [1]
    assert holder.adjusted == [501 - holder.acquired[0]]
    assert copy.statistics().requests == model.statistics().requests == 1
    assert plain.statistics().requests == 1


async def test_a_shared_copy_passes_the_providers_quota_and_waits_on_to_the_holder() -> None:
    holder = Holder()
    quota = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
    }
    async with OpenAICompatibleServer(
        [
            Reply(status=429, content="slow down", headers={**quota, "retry-after-ms": "250"}),
            Reply(content="true", headers=quota),
        ]
    ) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, backoff=0, clock=FakeClock())
        token = SHARE_LIMITS.set(lambda spec, client: holder)
        try:
            copy = pickle.loads(pickle.dumps(model))
        finally:
            SHARE_LIMITS.reset(token)
        assert (await copy.chat("from a worker")).text == "true"
        await copy.aclose()
    shared = copy._shared
    assert isinstance(shared, Holder)
    seen = QuotaHeaders(Quota(60, 0, 1.0), None)
    assert shared.observed == [(1, seen), (2, seen)]
    assert shared.held == [0.25]
    assert shared.released == [1, 2]
