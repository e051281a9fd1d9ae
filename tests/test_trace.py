"""aeval.trace: the values, their codec, @aeval.tool, the manual records, bounds, redaction,
rendering and assertions."""

from __future__ import annotations

import contextvars
import dataclasses
import math
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

import aeval
from aeval.trace import (
    CallError,
    Document,
    ModelCall,
    Retrieval,
    ToolCall,
    Trace,
    TraceLimits,
    assert_trace,
    capture,
    current,
    record_model_call,
    record_retrieval,
    record_tool_call,
    recording,
    redact_trace,
    render_trace,
    using,
)

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def full_trace() -> Trace:
    return Trace(
        tool_calls=(
            ToolCall(
                "get_weather",
                {"city": "Mysore", "days": [1, 2]},
                {"temp": 31.5},
                None,
                at(0),
                at(0.25),
                False,
            ),
            ToolCall(
                "book", {"id": 7}, None, CallError("TimeoutError", "slow"), at(2), at(3), True, 2
            ),
        ),
        model_calls=(ModelCall("gpt-x", 12, 5, 0.4, ("get_weather",), at(-1)),),
        retrievals=(Retrieval("q", (Document("d1", "text", 0.75), Document()), at(1)),),
        truncated=2,
        dropped=1,
    )


# --- values and codec ------------------------------------------------------------------------


def test_a_trace_round_trips_through_json_losslessly() -> None:
    trace = full_trace()
    data = orjson.loads(orjson.dumps(trace.to_dict()))
    assert Trace.from_dict(data) == trace


def test_times_keep_their_offset_and_microseconds() -> None:
    other = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    trace = Trace(tool_calls=(ToolCall("t", {}, started=other, ended=other),))
    back = Trace.from_dict(orjson.loads(orjson.dumps(trace.to_dict())))
    assert back.tool_calls[0].started == other
    started = back.tool_calls[0].started
    assert started is not None and started.utcoffset() == timedelta(hours=5, minutes=30)


def test_floats_round_trip_exactly() -> None:
    trace = Trace(model_calls=(ModelCall("m", duration=0.1 + 0.2),))
    back = Trace.from_dict(orjson.loads(orjson.dumps(trace.to_dict())))
    assert back.model_calls[0].duration == 0.1 + 0.2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"tool_calls": {}}, "trace field tool_calls must be a list"),
        ({"tool_calls": [{"arguments": {}}]}, "trace field tool_calls[0].name must be a string"),
        (
            {"tool_calls": [{"name": "t", "started": "yesterday"}]},
            "tool_calls[0].started must be an ISO 8601 time",
        ),
        ({"model_calls": [{"prompt_tokens": -1}]}, "prompt_tokens must be a count"),
        (
            {"retrievals": [{"documents": [{"score": "high"}]}]},
            "documents[0].score must be a number",
        ),
        ([], "trace field (top level) must be a mapping"),
    ],
)
def test_a_malformed_trace_is_refused_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Trace.from_dict(data)


def test_events_merge_every_kind_in_start_order() -> None:
    trace = full_trace()
    kinds = [type(event).__name__ for event in trace.events()]
    assert kinds == ["ModelCall", "ToolCall", "Retrieval", "ToolCall"]


def test_trace_totals() -> None:
    trace = full_trace()
    assert trace.tokens == 17
    assert trace.seconds == pytest.approx(4.0)
    assert trace.tool_names() == ("get_weather", "book")
    assert trace.calls_of("book")[0].duration == 1.0
    assert not Trace() and trace


# --- @aeval.tool -----------------------------------------------------------------------------


@aeval.tool
def get_weather(city: str, unit: str = "C", **extra: Any) -> dict[str, Any]:
    """Weather."""
    return {"city": city, "unit": unit}


@aeval.tool(name="tickets")
async def find_tickets(city: str, *, limit: int = 3) -> list[str]:
    return [f"{city}-{n}" for n in range(limit)]


@aeval.tool
def broken(reason: str) -> None:
    raise ConnectionError(reason)


class Travel:
    @aeval.tool
    def attractions(self, city: str) -> list[str]:
        return [f"{city} palace"]


def test_a_sync_tool_records_its_arguments_by_name_with_defaults() -> None:
    with capture() as trace:
        result = get_weather("Mysore", mood="sunny")
    assert result == {"city": "Mysore", "unit": "C"}
    (call,) = trace.tool_calls
    assert call.name == "get_weather"
    assert dict(call.arguments) == {"city": "Mysore", "unit": "C", "mood": "sunny"}
    assert call.result == {"city": "Mysore", "unit": "C"}
    assert call.error is None and not call.mocked
    assert call.started is not None and call.ended is not None and call.started <= call.ended


async def test_an_async_tool_records_under_its_given_name() -> None:
    async with capture() as trace:
        assert await find_tickets("Mysore", limit=2) == ["Mysore-0", "Mysore-1"]
    (call,) = trace.tool_calls
    assert (call.name, dict(call.arguments), call.result) == (
        "tickets",
        {"city": "Mysore", "limit": 2},
        ["Mysore-0", "Mysore-1"],
    )


def test_a_failing_tool_records_the_error_and_the_error_propagates() -> None:
    with capture() as trace, pytest.raises(ConnectionError, match="refused"):
        broken("refused")
    (call,) = trace.tool_calls
    assert call.error == CallError("ConnectionError", "refused")
    assert call.result is None


def test_a_method_tool_leaves_self_out() -> None:
    with capture() as trace:
        Travel().attractions("Mysore")
    assert dict(trace.tool_calls[0].arguments) == {"city": "Mysore"}


def test_the_decorator_keeps_the_function_s_identity() -> None:
    assert get_weather.__name__ == "get_weather"
    assert get_weather.__doc__ == "Weather."
    assert find_tickets.__name__ == "find_tickets"


def test_a_tool_outside_any_recording_is_just_called() -> None:
    assert current() is None
    assert get_weather("Mysore") == {"city": "Mysore", "unit": "C"}
    record_tool_call("x", {"a": 1})
    record_retrieval(["doc"])
    record_model_call(model="m")
    with capture() as trace:
        pass
    assert trace.trace == Trace()


def test_keyword_calls_record_the_arguments_in_parameter_order_with_defaults() -> None:
    @aeval.tool
    def fly(origin: str, destination: str, seats: int = 1, cabin: str = "economy") -> str:
        return f"{origin}-{destination}"

    with capture() as trace:
        fly(destination="Mysore", origin="Delhi", cabin="business")
        fly("Delhi", seats=2, destination="Goa")
        with pytest.raises(TypeError):
            fly("Delhi", origin="Goa")  # type: ignore[call-arg,misc]
    first, second, wrong = trace.tool_calls
    assert list(first.arguments.items()) == [
        ("origin", "Delhi"),
        ("destination", "Mysore"),
        ("seats", 1),
        ("cabin", "business"),
    ]
    assert list(second.arguments.items()) == [
        ("origin", "Delhi"),
        ("destination", "Goa"),
        ("seats", 2),
        ("cabin", "economy"),
    ]
    assert wrong.error is not None and wrong.error.type == "TypeError"


def test_a_tool_called_with_wrong_arguments_still_raises_the_type_error() -> None:
    with capture() as trace, pytest.raises(TypeError):
        get_weather()  # type: ignore[call-arg]
    assert trace.tool_calls[0].error is not None
    assert trace.tool_calls[0].error.type == "TypeError"


def test_the_decorator_refuses_a_blank_name() -> None:
    with pytest.raises(ValueError, match="non-blank"):
        aeval.tool(name=" ")


# --- manual records and current() ------------------------------------------------------------


def test_manual_records_are_kept_in_start_order() -> None:
    with capture() as trace:
        record_tool_call("search", {"q": "hotels"}, result=["a", "b"])
        record_retrieval(
            [Document("d1", "one", 0.9), {"id": 2, "text": "two", "score": 1}, "three"],
            query="hotels",
        )
        record_tool_call("book", {"id": "a"}, error="sold out")
        record_model_call(model="m", prompt_tokens=3, completion_tokens=4, duration=0.5)
        assert current() == trace.trace
    assert [type(e).__name__ for e in trace.events()] == [
        "ToolCall",
        "Retrieval",
        "ToolCall",
        "ModelCall",
    ]
    assert trace.retrievals[0].documents == (
        Document("d1", "one", 0.9),
        Document("2", "two", 1.0),
        Document(None, "three", None),
    )
    assert trace.tool_calls[1].error == CallError("Error", "sold out")
    assert trace.model_calls[0].total_tokens == 7


def test_a_document_of_another_type_is_refused() -> None:
    with capture(), pytest.raises(TypeError, match="Document, a mapping"):
        record_retrieval([42])  # type: ignore[list-item]


def test_current_is_an_empty_trace_inside_a_recording_and_none_outside() -> None:
    with recording() as recorder:
        assert current() == Trace()
        assert recorder.snapshot() is None
    assert current() is None


def test_using_makes_a_stored_trace_current_and_records_nothing() -> None:
    stored = full_trace()
    with recording() as recorder:
        with using(stored):
            assert current() is stored
            record_tool_call("judge_tool", {})
        record_tool_call("own", {})
    assert recorder.trace().tool_names() == ("own",)


def test_a_capture_cannot_be_entered_twice() -> None:
    with capture() as trace, pytest.raises(RuntimeError, match="already active"):
        trace.__enter__()


def _trace_attributes() -> list[str]:
    """The public names a Trace instance answers (its fields, properties and methods)."""
    return sorted(name for name in dir(Trace) if not name.startswith("_") and name != "from_dict")


async def test_the_name_a_capture_binds_reads_as_every_attribute_of_a_trace() -> None:
    """``async with capture() as trace:`` then ``trace.tokens``, as docs/agents.md reads it:
    every public attribute of Trace, each giving what the recorded trace gives."""
    started = datetime(2026, 1, 1, tzinfo=UTC)
    limits = TraceLimits(max_text=4)
    async with capture(limits=limits) as trace:
        assert not trace
        record_model_call(model="m", prompt_tokens=3, duration=2.0, started=started)
        record_model_call(
            model="m",
            prompt_tokens=3,
            completion_tokens=1,
            duration=2.0,
            started=started + timedelta(seconds=1),
        )
        record_retrieval(["document"], query="q")
        assert trace
        record_tool_call("get_weather", {"city": "Mysore"}, result="sunny")
    recorded = trace.trace
    assert trace.tokens == recorded.tokens == 7
    assert trace.seconds == recorded.seconds is not None
    assert trace.truncated == recorded.truncated > 0
    assert trace.dropped == recorded.dropped == 0
    assert trace.to_dict() == recorded.to_dict()
    assert Trace.from_dict(trace.to_dict()) == recorded
    assert trace.tool_names() == ("get_weather",)
    assert trace.calls_of("get_weather") == recorded.tool_calls
    assert list(trace.events()) == list(recorded.events())
    assert bool(trace) and not capture()
    for name in _trace_attributes():
        value = getattr(trace, name)
        expected = getattr(recorded, name)
        if callable(expected):
            if name == "calls_of":
                value, expected = value("get_weather"), expected("get_weather")
            else:
                value, expected = value(), expected()
            if name == "events":
                value, expected = list(value), list(expected)
        assert value == expected, name


# --- bounds and redaction --------------------------------------------------------------------


def test_large_values_are_cut_and_counted() -> None:
    limits = TraceLimits(max_text=10, max_items=3, max_depth=2)
    with capture(limits=limits) as trace:
        record_tool_call(
            "t",
            {"text": "x" * 25, "items": list(range(5)), "deep": {"a": {"b": {"c": 1}}}},
            result="short",
        )
    (call,) = trace.tool_calls
    assert call.arguments["text"] == "xxxxxxxxxx… [15 of 25 characters cut]"
    assert call.arguments["items"] == [0, 1, 2, "… [2 more items cut]"]
    assert call.arguments["deep"] == {"a": "… [nested deeper than 2 levels, cut]"}
    assert call.truncated == 3
    assert trace.trace.truncated == 3


def test_values_become_json_safe() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        when: datetime

    with capture() as trace:
        record_tool_call(
            "t",
            {"p": Point(1, T0), "nan": math.nan, "raw": b"abc", "tags": {"b", "a"}, "n": 1.5},
            result=object.__new__(type("Opaque", (), {"__str__": lambda self: "opaque"})),
        )
    (call,) = trace.tool_calls
    assert call.arguments == {
        "p": {"x": 1, "when": T0.isoformat()},
        "nan": "nan",
        "raw": "<3 bytes>",
        "tags": ["a", "b"],
        "n": 1.5,
    }
    assert call.result == "opaque"
    orjson.dumps(trace.trace.to_dict())


def test_the_most_events_are_kept_and_the_rest_counted() -> None:
    with capture(limits=TraceLimits(max_events=2)) as trace:
        for index in range(5):
            record_tool_call("t", {"i": index})
    assert [call.arguments["i"] for call in trace.tool_calls] == [0, 1]
    assert trace.trace.dropped == 3


def test_a_call_is_recorded_as_it_was_even_when_its_values_change_afterwards() -> None:
    @aeval.tool
    def book(order: dict[str, Any], seats: list[int], note: str = "none") -> dict[str, Any]:
        return receipt

    receipt: dict[str, Any] = {"status": "held", "seats": [1]}
    order = {"city": "Mysore", "guests": {"adults": 2}}
    seats = [1, 2]
    flat = {"city": "Mysore", "days": 2}
    with capture() as trace:
        book(order, seats)
        record_tool_call("note", flat, result=receipt)
        order["city"] = "Paris"
        order["guests"]["adults"] = 5  # type: ignore[index]
        seats.append(3)
        flat["city"] = "Paris"
        receipt["status"] = "paid"
        receipt["seats"].append(2)
    booked, noted = trace.tool_calls
    assert dict(booked.arguments) == {
        "order": {"city": "Mysore", "guests": {"adults": 2}},
        "seats": [1, 2],
        "note": "none",
    }
    assert booked.result == {"status": "held", "seats": [1]}
    assert dict(noted.arguments) == {"city": "Mysore", "days": 2}
    assert noted.result == {"status": "held", "seats": [1]}


def test_snapshots_of_one_recording_agree_and_count_each_cut_once() -> None:
    with capture(limits=TraceLimits(max_text=5)) as trace:
        record_tool_call("t", {"text": "x" * 8}, result="y" * 9)
        first = trace.trace
        record_tool_call("u", {"n": 1}, result="short")
    second = trace.trace
    assert first.truncated == second.truncated == 2
    assert second.tool_calls[0] is first.tool_calls[0]
    assert second.tool_calls[0].result == "yyyyy… [4 of 9 characters cut]"
    assert [call.name for call in second.tool_calls] == ["t", "u"]


def test_threads_recording_at_once_keep_the_most_events_and_count_the_rest() -> None:
    threads, calls = 8, 50
    barrier = threading.Barrier(threads)

    def work(thread: int) -> None:
        barrier.wait()
        for index in range(calls):
            record_tool_call("t", {"thread": thread, "i": index})

    with capture(limits=TraceLimits(max_events=100)) as trace:
        workers = [
            threading.Thread(target=contextvars.copy_context().run, args=(work, thread))
            for thread in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    kept = trace.trace
    assert len(kept.tool_calls) == 100
    assert kept.dropped == threads * calls - 100
    for thread in range(threads):
        mine = [
            call.arguments["i"] for call in kept.tool_calls if call.arguments["thread"] == thread
        ]
        assert mine == sorted(mine)


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_text must be an integer of at least 1"):
        TraceLimits(max_text=0)


def traced(target: Callable[[str], Any], **scorer_options: Any) -> Trace:
    """The trace of the one row of a Scorer run of ``target``."""

    def passes(sample: aeval.EvaluationSample, output: Any) -> aeval.EvaluationResult:
        return aeval.EvaluationResult.passing()

    report = aeval.evaluate_sync(
        [aeval.EvaluationSample("s", ["q"])], target, passes, **scorer_options
    )
    [row] = report.evaluations
    assert row.trace is not None
    return row.trace


def scrub(secret: str) -> Callable[[Any], Any]:
    """A redaction function: ``secret`` replaced in every string of a value."""

    def redact(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(secret, "[REDACTED]")
        if isinstance(value, list | tuple):
            return type(value)(redact(item) for item in value)
        if isinstance(value, dict):
            return {key: redact(item) for key, item in value.items()}
        return value

    return redact


def test_a_recording_redacts_before_it_cuts() -> None:
    secret = "sk-abcdefghijklmnop"

    def target(question: str) -> str:
        record_tool_call("t", {"key": f"{secret} tail"}, error=f"bad key {secret}")
        return "done"

    trace = traced(target, redact=[secret], trace_limits=TraceLimits(max_text=12))
    (call,) = trace.tool_calls
    assert secret[:4] not in orjson.dumps(trace.to_dict()).decode()
    assert call.arguments["key"].startswith("[REDACTED]")
    assert call.error == CallError("Error", "bad key [REDACTED]")


def test_a_stored_trace_is_redacted_everywhere_a_secret_can_be() -> None:
    secret = "token-123456"
    trace = Trace(
        tool_calls=(ToolCall("t", {"k": secret}, [secret], CallError("E", secret)),),
        retrievals=(Retrieval(secret, (Document("d", f"has {secret}"),)),),
    )
    cleaned = redact_trace(trace, scrub(secret))
    assert secret not in orjson.dumps(cleaned.to_dict()).decode()
    assert cleaned.tool_calls[0].arguments == {"k": "[REDACTED]"}


# --- rendering and assertions ----------------------------------------------------------------


def test_a_trace_renders_one_line_per_event() -> None:
    text = render_trace(full_trace())
    assert text.splitlines() == [
        "1. model gpt-x, 17 tokens, asked for get_weather",
        '2. tool get_weather(city="Mysore", days=[1,2]) -> {"temp":31.5}',
        '3. retrieval for "q": 2 documents (d1, null)',
        "4. tool book(id=7) raised TimeoutError: slow [mocked]",
        "(1 more events were not kept)",
    ]
    assert (
        render_trace(None)
        == render_trace(Trace())
        == ("(no tool calls, model calls or retrievals were recorded)")
    )


def test_rendering_cuts_long_values() -> None:
    trace = Trace(tool_calls=(ToolCall("t", {"a": "y" * 1000}),))
    assert "characters cut]" in render_trace(trace, limit=50)
    assert len(render_trace(trace, limit=50)) < 200


def test_trace_assertions_pass_and_chain() -> None:
    with capture() as trace:
        get_weather("Mysore")
        Travel().attractions("Mysore")
        get_weather("Delhi")
    assert_trace(trace).called("get_weather", times=2).called("attractions").called_in_order(
        ["get_weather", "attractions", "get_weather"]
    ).called_with("get_weather", city="Delhi").not_called("book")
    assert_trace(trace.trace).called("attractions", times=1)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda a: a.called("book"), "expected a call of 'book', but it was not called"),
        (
            lambda a: a.called("get_weather", times=1),
            "expected 'get_weather' to be called once, but it was called 2 times",
        ),
        (lambda a: a.not_called("attractions"), "expected no call of 'attractions', but it was"),
        (
            lambda a: a.called_in_order(["attractions", "attractions"]),
            "no call of 'attractions' came after ['attractions']",
        ),
        (
            lambda a: a.called_with("get_weather", city="Paris"),
            "expected a call get_weather(city='Paris'), but no call of 'get_weather' had these",
        ),
    ],
)
def test_a_failed_trace_assertion_lists_the_calls(check: Any, message: str) -> None:
    with capture() as trace:
        get_weather("Mysore")
        Travel().attractions("Mysore")
        get_weather("Delhi")
    with pytest.raises(AssertionError) as failure:
        check(assert_trace(trace))
    text = str(failure.value)
    assert message in text
    assert "the tool calls were:\n  1. get_weather(city='Mysore', unit='C')" in text
    assert "3. get_weather(city='Delhi', unit='C')" in text


def test_assertions_on_an_empty_trace_say_no_tool_was_called() -> None:
    with pytest.raises(AssertionError, match="; no tool was called"):
        assert_trace(Trace()).called("x")
    with pytest.raises(TypeError, match="assert_trace takes"):
        assert_trace("trace")  # type: ignore[arg-type]


def test_recorded_values_have_string_keys() -> None:
    with recording() as recorder:
        record_tool_call("keys", {1: "one", (2, 3): [4]})  # type: ignore[dict-item]
    (call,) = recorder.trace().tool_calls
    assert call.arguments == {"1": "one", "(2, 3)": [4]}
    assert call.truncated == 0


async def test_an_object_with_an_async_call_is_an_async_tool() -> None:
    class Search:
        async def __call__(self, query: str) -> list[str]:
            return [query]

    search = aeval.tool(name="search")(Search())
    async with capture() as trace:
        assert await search("palace") == ["palace"]
    assert trace.tool_calls[0].result == ["palace"]
    assert dict(trace.tool_calls[0].arguments) == {"query": "palace"}


def test_a_trace_pickles() -> None:
    import pickle

    trace = full_trace()
    assert pickle.loads(pickle.dumps(trace)) == trace


def test_manual_records_check_their_input() -> None:
    with capture(), pytest.raises(TypeError, match="arguments must be a mapping"):
        record_tool_call("t", ["a"])  # type: ignore[arg-type]
    with capture(), pytest.raises(TypeError, match="name must be a non-empty string"):
        record_tool_call("", {})


def test_secrets_inside_objects_are_redacted_too() -> None:
    @dataclasses.dataclass
    class Credentials:
        user: str
        token: str

    secret = "tok-9876543210"

    def target(question: str) -> str:
        record_tool_call("login", {"credentials": Credentials("ana", secret)}, result=[secret])
        return "done"

    (call,) = traced(target, redact=[secret]).tool_calls
    assert call.arguments == {"credentials": {"user": "ana", "token": "[REDACTED]"}}
    assert call.result == ["[REDACTED]"]


async def test_a_cancelled_tool_call_is_recorded_and_the_cancellation_propagates() -> None:
    import anyio

    entered = anyio.Event()

    @aeval.tool
    async def slow(city: str) -> str:
        entered.set()
        await anyio.Event().wait()
        return city

    async with capture() as trace, anyio.create_task_group() as group:
        group.start_soon(slow, "Mysore")
        await entered.wait()
        group.cancel_scope.cancel()
    (call,) = trace.tool_calls
    assert call.error is not None and call.error.type == "CancelledError"


def test_assert_that_a_trace_or_a_capture_chains_the_trace_assertions() -> None:
    from aeval import assert_that

    @aeval.tool
    def get_weather(city: str) -> str:
        return "sunny"

    @aeval.tool
    def book(attraction: str) -> int:
        return 1

    with aeval.trace.capture() as trace:
        get_weather("Mysore")
        book("Palace")
    checks = assert_that(trace)
    assert isinstance(checks, type(aeval.trace.assert_trace(trace)))
    checks.called("get_weather").called_in_order(["get_weather", "book"]).called_with(
        "get_weather", city="Mysore"
    ).not_called("cancel")
    assert_that(trace.trace).called("book", times=1)
    with pytest.raises(AssertionError, match=r"(?s)expected a call of 'cancel'.*1\. get_weather"):
        assert_that(trace).called("cancel")
