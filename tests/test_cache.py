from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from aeval import JudgeCache
from aeval.models import ChatMessage, ChatResponse, TokenUsage

MESSAGES = [ChatMessage("system", "be fair"), ChatMessage("user", "Is Paris right?")]
REPLY = ChatResponse("true", TokenUsage(12, 1), "judge-1", retries=2)


def key(
    model: str = "judge", messages: list[ChatMessage] = MESSAGES, json_mode: bool = False
) -> str:
    return JudgeCache.key(model, messages, json_mode=json_mode)


def test_key_is_a_stable_sha256_of_model_messages_and_mode() -> None:
    assert key() == key(messages=list(MESSAGES))
    assert len(key()) == 64 and int(key(), 16) >= 0
    others = {
        key(model="judge-2"),
        key(json_mode=True),
        key(messages=[*MESSAGES, ChatMessage("assistant", "x")]),
        key(messages=[ChatMessage("user", "be fair"), ChatMessage("system", "Is Paris right?")]),
        key(messages=[ChatMessage("system", "be fai"), ChatMessage("user", "rIs Paris right?")]),
    }
    assert key() not in others and len(others) == 5


@pytest.mark.anyio
async def test_memory_cache_stores_and_forgets() -> None:
    cache = JudgeCache(path=None)
    assert cache.path is None
    assert await cache.get(key()) is None
    await cache.put(key(), REPLY)
    assert await cache.get(key()) == REPLY
    await cache.clear()
    assert await cache.get(key()) is None
    assert repr(cache) == "JudgeCache('memory')"


@pytest.mark.anyio
async def test_disk_cache_survives_a_new_cache_object(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "judge.sqlite"
    first = JudgeCache(path)
    await first.put(key(), REPLY)
    await first.aclose()
    assert path.is_file()

    second = JudgeCache(path)
    stored = await second.get(key())
    # the text, tokens and model survive; retries and metadata describe one request only
    assert stored == ChatResponse("true", TokenUsage(12, 1), "judge-1")
    assert await second.get(key(json_mode=True)) is None
    await second.clear()
    third = JudgeCache(path)
    assert await third.get(key()) is None
    second.close()
    await third.aclose()


@pytest.mark.anyio
async def test_disk_cache_reopens_after_close(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite")
    await cache.put(key(), REPLY)
    await cache.aclose()
    assert (await cache.get(key())) is not None
    await cache.aclose()
    with sqlite3.connect(tmp_path / "c.sqlite") as connection:
        rows = connection.execute("SELECT text, model FROM judge_cache").fetchall()
    connection.close()
    assert rows == [("true", "judge-1")]


def test_default_path_is_under_dot_aeval() -> None:
    assert JudgeCache().path == Path(".aeval/judge-cache.sqlite").absolute()


@pytest.mark.anyio
async def test_get_or_call_calls_once_then_hits(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite")
    calls = 0

    async def call() -> ChatResponse:
        nonlocal calls
        calls += 1
        return REPLY

    assert await cache.get_or_call(key(), call) == (REPLY, False)
    response, cached = await cache.get_or_call(key(), call)
    assert (response.text, cached, calls) == ("true", True, 1)
    assert (cache.statistics().hits, cache.statistics().misses) == (1, 1)
    await cache.aclose()


@pytest.mark.anyio
async def test_concurrent_identical_calls_share_one_request() -> None:
    cache = JudgeCache(path=None)
    gate, entered = anyio.Event(), anyio.Event()
    calls = 0
    results: list[tuple[ChatResponse, bool]] = []

    async def call() -> ChatResponse:
        nonlocal calls
        calls += 1
        entered.set()
        await gate.wait()
        return REPLY

    async def ask() -> None:
        results.append(await cache.get_or_call(key(), call))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask)
        await entered.wait()
        await wait_all_tasks_blocked()
        gate.set()
    assert calls == 1
    assert sorted(cached for _, cached in results) == [False, True, True]
    assert (cache.statistics().hits, cache.statistics().misses) == (2, 1)


@pytest.mark.anyio
async def test_an_error_reaches_every_waiter_and_is_not_cached() -> None:
    cache = JudgeCache(path=None)
    gate, entered = anyio.Event(), anyio.Event()
    errors: list[str] = []

    async def failing() -> ChatResponse:
        entered.set()
        await gate.wait()
        raise ConnectionError("judge down")

    async def ask() -> None:
        try:
            await cache.get_or_call(key(), failing)
        except ConnectionError as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(ask)
        await entered.wait()
        await wait_all_tasks_blocked()
        gate.set()
    assert errors == ["judge down", "judge down"]

    async def working() -> ChatResponse:
        return REPLY

    assert await cache.get_or_call(key(), working) == (REPLY, False)


@pytest.mark.anyio
async def test_a_cancelled_leader_hands_the_request_to_a_waiter() -> None:
    cache = JudgeCache(path=None)
    entered = anyio.Event()
    calls: list[str] = []

    async def hangs() -> ChatResponse:
        calls.append("leader")
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def answers() -> ChatResponse:
        calls.append("waiter")
        return REPLY

    result: list[tuple[ChatResponse, bool]] = []

    async def waiter() -> None:
        result.append(await cache.get_or_call(key(), answers))

    async with anyio.create_task_group() as tg, anyio.create_task_group() as leader_group:
        leader_group.start_soon(cache.get_or_call, key(), hangs)
        await entered.wait()
        tg.start_soon(waiter)
        await wait_all_tasks_blocked()
        leader_group.cancel_scope.cancel()
    assert calls == ["leader", "waiter"]
    assert result == [(REPLY, False)]
