"""The machinery behind a model client's limits, below its public options: the provider's
quota headers as the pacer reads them, the pacer's accounting, the cluster limiter, and the
one shared holder a client copied to an executor's workers takes its limits from. The public
behaviour (a client paced by headers and budgets, limits across Ray workers) is tested in
test_models_quota.py and test_ray.py."""

from __future__ import annotations

import pickle

import pytest

from aeval.models import OpenAIChatModel
from aeval.models._limits import SHARE_LIMITS, LimitSpec, SharedLimits
from aeval.models._pacing import Pacer, Quota, QuotaHeaders, parse_duration, read_quota_headers
from aeval.ray._limits import LimiterActor
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


# --- the provider's headers, the pacer and the cluster limiter ---------------------------


def test_reset_durations_are_read_in_every_form() -> None:
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1.5s") == 1.5
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("1h2m3s") == 3723.0
    assert parse_duration("7") == 7.0
    assert parse_duration("soon") is None
    assert parse_duration("1s trailing") is None
    assert parse_duration(None) is None


def test_quota_headers_need_a_limit_and_a_remaining_count() -> None:
    headers = {
        "x-ratelimit-limit-requests": "600",
        "x-ratelimit-remaining-requests": "599",
        "x-ratelimit-reset-requests": "0.1s",
    }
    assert read_quota_headers(headers) == QuotaHeaders(Quota(600, 599, 0.1), None)
    assert not read_quota_headers({"x-ratelimit-limit-tokens": "100"})
    assert not read_quota_headers(
        {"x-ratelimit-limit-tokens": "0", "x-ratelimit-remaining-tokens": "0"}
    )


async def test_requests_still_in_flight_are_counted_against_a_reply() -> None:
    clock = FakeClock()
    pacer = Pacer(None, None, burst=60.0, follow_headers=True, clock=clock)
    first, second, third = [await pacer.acquire(1) for _ in range(3)]
    # the first reply saw 10 left; the two other requests still in flight may come after it
    pacer.observe(first, QuotaHeaders(Quota(60, 10, None), None))
    for grant in (first, second, third):
        pacer.release(grant)
    for _ in range(8):
        assert (await pacer.acquire(1)).waited == 0
    assert (await pacer.acquire(1)).waited == pytest.approx(1.0)
    # a reply to a request already over changes nothing
    pacer.observe(first, QuotaHeaders(Quota(60, 60, None), None))
    assert (await pacer.acquire(1)).waited == pytest.approx(1.0)
    assert clock.sleeps == pytest.approx([1.0, 1.0])


async def test_the_cluster_limiter_follows_the_headers_its_copies_pass_on() -> None:
    clock = FakeClock()
    actor = LimiterActor(clock=clock)
    actor.register({"judge": LimitSpec("judge", 4, None, None)})
    lease, throttled = await actor.acquire("judge", 10, "worker-1")
    assert not throttled
    actor.observe("judge", lease, QuotaHeaders(Quota(60, 0, 60.0), None))
    actor.release("judge", lease)
    lease, throttled = await actor.acquire("judge", 10, "worker-2")
    assert throttled and clock.sleeps == pytest.approx([1.0])
    actor.hold("judge", 7.0)
    actor.release("judge", lease)
    _, throttled = await actor.acquire("judge", 10, "worker-1")
    assert throttled and clock.sleeps[-1] == pytest.approx(7.0)
    assert actor.statistics()["judge"].throttled == 2
