from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from aeval.abc import Clock
from aeval.testing import FakeClock

pytestmark = pytest.mark.anyio


def test_it_is_a_clock_that_starts_where_told() -> None:
    clock = FakeClock(start=100)
    assert isinstance(clock, Clock)
    assert (clock.now(), clock.sleeps) == (100.0, [])
    assert repr(clock) == "FakeClock(now=100.0, sleeps=0)"


async def test_sleeping_moves_the_time_at_once_and_is_recorded() -> None:
    clock = FakeClock()
    await clock.sleep(1.5)
    await clock.sleep(0)
    await clock.sleep(-3)
    await clock.sleep(2)
    assert clock.sleeps == [1.5, 0, -3, 2]
    assert clock.now() == 3.5


async def test_a_sleep_is_a_checkpoint() -> None:
    clock = FakeClock()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await clock.sleep(1)
    assert scope.cancelled_caught
    assert clock.sleeps == [1]


async def test_the_sleeps_of_concurrent_tasks_add_up() -> None:
    clock = FakeClock()
    async with anyio.create_task_group() as group:
        for seconds in (3, 1, 2):
            group.start_soon(clock.sleep, seconds)
    assert sorted(clock.sleeps) == [1, 2, 3]
    assert clock.now() == 6


async def test_a_deadline_expires_when_a_sleep_reaches_it() -> None:
    clock = FakeClock()
    with clock.move_on_after(5) as short:
        await clock.sleep(4)
        await clock.sleep(1)
        pytest.fail("the deadline should have cancelled the second sleep")
    with clock.move_on_after(5) as long:
        await clock.sleep(4.9)
    assert (short.cancelled_caught, long.cancelled_caught) == (True, False)
    assert clock.now() == 9.9


async def test_a_deadline_expires_when_the_test_advances_the_clock() -> None:
    clock = FakeClock()
    entered = anyio.Event()
    caught: list[bool] = []

    async def wait_for_ever() -> None:
        with clock.move_on_after(30) as scope:
            entered.set()
            await anyio.sleep_forever()
        caught.append(scope.cancelled_caught)

    async with anyio.create_task_group() as group:
        group.start_soon(wait_for_ever)
        await entered.wait()
        clock.advance(29)
        await anyio.wait_all_tasks_blocked()
        assert caught == []
        clock.advance(1)
    assert caught == [True]
    assert clock.sleeps == []


async def test_a_deadline_already_past_cancels_at_once() -> None:
    clock = FakeClock()
    with clock.move_on_after(0) as scope:
        await anyio.lowlevel.checkpoint()
        pytest.fail("the scope should be cancelled")
    assert scope.cancelled_caught


async def test_a_finished_scope_is_forgotten() -> None:
    clock = FakeClock()
    with clock.move_on_after(1) as scope:
        pass
    clock.advance(10)
    assert not scope.cancel_called


def test_the_clock_never_goes_back() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="the clock only moves forward, got -1"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="got nan"):
        clock.advance(float("nan"))
