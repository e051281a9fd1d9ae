"""Conversations everywhere: ``aeval run`` with Python and HTTP targets, shards, the store,
``aeval compare`` and the pytest plugin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import Cli, cli, rows_of, write_config

from aeval import RunStore, Transcript, compare
from aeval.testing import (
    HTTPReply,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    ScriptedHTTPServer,
)

__all__ = ["cli"]

pytest_plugins = ("pytester",)

BOT = """\
from aeval import Conversation


async def reply(conversation: Conversation) -> str:
    if conversation.last == "boom":
        raise RuntimeError("down")
    conversation.state.setdefault("said", []).append(conversation.last)
    return f"{conversation.id}: " + " / ".join(conversation.state["said"])
"""

SAMPLES = """\
- name: trip
  turns:
    - Plan a trip
    - user: Make it cheaper
      must-contain: [cheaper]
- name: crash
  turns: [Hello, boom]
- name: sim
  user: {persona: a student, goal: a plan, first: [Hi], max-turns: 3}
"""

CONFIG = """\
samples: samples.yaml
target: bot:reply
strategies:
  - name: contains
    must_contain: [Plan]
timeout: 10
conversation_timeout: 30
user_model:
  model: user
  base_url: {url}
output:
  formats: [json, markdown]
"""


def _user(request: RecordedRequest) -> Reply:
    return Reply("GOAL REACHED" if "Hi / More" in request.messages[-1]["content"] else "More")


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, OpenAICompatibleServer]]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "samples.yaml").write_text(SAMPLES, encoding="utf-8")
    with OpenAICompatibleServer(handler=_user) as server:
        write_config(tmp_path, CONFIG.format(url=server.base_url))
        yield tmp_path, server


def _outputs(path: Path) -> dict[str, Any]:
    return {row["name"]: row["output"] for row in rows_of(path)}


def test_aeval_run_evaluates_python_conversation_targets_with_a_user_model(
    project: tuple[Path, OpenAICompatibleServer], cli: Cli
) -> None:
    directory, server = project
    result = cli("run", directory / "aeval.yaml", "--quiet", cwd=directory)
    assert result.returncode == 0, result.stderr
    outputs = _outputs(directory / "aeval-results" / "rows.jsonl")
    trip = outputs["trip"]
    assert trip["$aeval"] == "transcript" and trip["ended"] == "script"
    assert [t["assistant"] for t in trip["turns"]] == [
        "trip#0: Plan a trip",
        "trip#0: Plan a trip / Make it cheaper",
    ]
    assert outputs["crash"]["ended"] == "error"
    assert [t["assistant"] for t in outputs["crash"]["turns"]] == ["crash#0: Hello", None]
    assert outputs["sim"]["ended"] == "goal"
    assert [t["user"] for t in outputs["sim"]["turns"]] == ["Hi", "More"]
    report = json.loads((directory / "aeval-results" / "report.json").read_text())
    assert report["conversations"] == {"script": 1, "error": 1, "goal": 1}
    assert report["usage"]["userModelCalls"] == len(server.requests) == 2


def test_conversations_shard_and_merge_into_the_rows_of_one_run(
    project: tuple[Path, OpenAICompatibleServer], cli: Cli
) -> None:
    directory, _ = project
    config = directory / "aeval.yaml"
    cli("run", config, "--quiet", "--output", directory / "whole", cwd=directory)
    for index in (1, 2):
        done = cli("run", config, "--shard", f"{index}/2", "--output", directory / f"s{index}")
        assert f"DONE: shard {index}/2" in done.stdout, done.stdout + done.stderr
    (directory / "shards").mkdir()
    for index in (1, 2):
        (directory / f"s{index}").rename(directory / "shards" / f"s{index}")
    merged = cli("merge", directory / "shards", "--config", config, "--output", directory / "m")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    merged_report = json.loads((directory / "m" / "report.json").read_text())
    assert merged_report["conversations"] == {"script": 1, "error": 1, "goal": 1}
    assert merged_report["usage"]["userModelCalls"] == 2
    merged_rows = _outputs(directory / "m" / "rows.jsonl")
    assert merged_rows["trip"]["turns"][0]["duration"] >= 0
    assert _timeless(merged_rows) == _timeless(_outputs(directory / "whole" / "rows.jsonl"))


def _timeless(outputs: dict[str, Any]) -> dict[str, Any]:
    for output in outputs.values():
        for turn in output["turns"]:
            turn.pop("duration")
    return outputs


@pytest.mark.anyio
async def test_transcripts_round_trip_through_the_store_and_compare_by_sample(
    tmp_path: Path,
) -> None:
    from aeval import Conversation, EvaluationSample, Scorer
    from aeval.strategies import ContainsStrategy

    async def bot(conversation: Conversation) -> str:
        return f"turn {conversation.turn}: {conversation.last}"

    async def fixed(conversation: Conversation) -> str:
        return f"turn {conversation.turn}: fixed {conversation.last}"

    samples = [EvaluationSample(f"s{n}", turns=["a", f"b{n}"]) for n in range(3)]
    check = ContainsStrategy(["fixed"])
    before = await Scorer().evaluate(samples, bot, check)
    after = await Scorer().evaluate(samples, fixed, check)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        await store.save(before, "chat")
        await store.save(after, "chat")
        loaded = await store.load("chat@latest~1")
    assert [row.output for row in loaded.evaluations] == [row.output for row in before.evaluations]
    assert all(isinstance(row.output, Transcript) for row in loaded.evaluations)
    comparison = await compare(before, after)
    assert [pair.sample for pair in comparison.fixes] == ["s0", "s1", "s2"]
    assert comparison.samples == 3 and comparison.only_in_baseline == ()
    assert isinstance(comparison.fixes[0].candidate_output, Transcript)


def _chat(request: RecordedRequest) -> HTTPReply:
    body = request.json
    messages = body.get("messages") or body.get("history")
    said = " | ".join(m["content"] for m in messages if m["role"] == "user")
    key = body.get("conversation_id") or body.get("id")
    return HTTPReply.json({"reply": f"{key} heard {said}"})


HTTP_CONFIG = """\
samples: samples.yaml
target:
  http:
    url: {url}/chat
    {body}
    response_path: reply
strategies:
  - name: not_blank
"""


@pytest.mark.parametrize(
    "body",
    ["", 'body: {{history: "{{messages}}", id: "{{conversation_id}}", n: "{{turn}}"}}'],
)
def test_http_targets_receive_the_history_of_each_turn(tmp_path: Path, cli: Cli, body: str) -> None:
    (tmp_path / "samples.yaml").write_text(
        "- name: trip\n  turns: [Plan a trip, Cheaper]\n", encoding="utf-8"
    )
    with ScriptedHTTPServer(handler=_chat) as server:
        write_config(tmp_path, HTTP_CONFIG.format(url=server.url, body=body.format()))
        result = cli("run", tmp_path / "aeval.yaml", "--quiet", cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        bodies = [request.json for request in server.requests]
    first = {"role": "user", "content": "Plan a trip"}
    answer = {"role": "assistant", "content": "trip#0 heard Plan a trip"}
    second = {"role": "user", "content": "Cheaper"}
    if body:
        assert bodies == [
            {"history": [first], "id": "trip#0", "n": 1},
            {"history": [first, answer, second], "id": "trip#0", "n": 2},
        ]
    else:
        assert bodies == [
            {"messages": [first], "conversation_id": "trip#0"},
            {"messages": [first, answer, second], "conversation_id": "trip#0"},
        ]
    (row,) = rows_of(tmp_path / "aeval-results" / "rows.jsonl")
    assert row["output"]["turns"][1]["assistant"] == "trip#0 heard Plan a trip | Cheaper"


def test_an_http_template_naming_a_parameter_is_refused_for_conversations(
    tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "samples.yaml").write_text("- name: trip\n  turns: [Hi]\n", encoding="utf-8")
    body = 'body: {question: "{question}"}'
    write_config(tmp_path, HTTP_CONFIG.format(url="http://127.0.0.1:9", body=body))
    result = cli("run", tmp_path / "aeval.yaml", "--quiet", cwd=tmp_path)
    assert result.returncode == 2
    assert "the placeholder {question} is not a field of conversation sample 'trip'" in (
        result.stderr
    )
    assert "{messages}, {conversation_id}, {last}, {turn}" in result.stderr


CHATS = """\
- name: good
  turns: [hi, again]
- name: bad
  turns: [hi, stop]
- name: broken
  turns: [hi, boom]
"""

PYTEST_FILE = """\
import pytest
from aeval import Conversation
from aeval.pytest_plugin import eval_cases
from aeval.strategies import ContainsStrategy


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def bot(conversation: Conversation) -> str:
    if conversation.last == "boom":
        raise RuntimeError("down")
    return "bye" if conversation.last == "stop" else "hello " + conversation.last


@pytest.mark.anyio
@eval_cases("chats.yaml")
async def test_chat(case, eval_assert):
    transcript = await eval_assert.converse(bot)
    assert len(transcript) == 2
    (await eval_assert.assert_eval_async(transcript.last, ContainsStrategy(["hello"]))).passes()
"""


def test_the_pytest_plugin_makes_one_test_per_conversation(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", chats=CHATS)
    pytester.makepyfile(test_chat=PYTEST_FILE)
    result = pytester.runpytest(
        "-v",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
        "-p",
        "no:hypothesispytest",
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_chat.py::test_chat?good? PASSED*",
            "*test_chat.py::test_chat?bad? FAILED*",
            "*test_chat.py::test_chat?broken? FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(["*Case 'broken': the conversation ended with RuntimeError: down*"])


def test_streamed_jsonl_conversations_run_and_mismatches_are_named(
    tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    lines = [
        {"name": f"c{n}", "turns": ["Plan a trip", {"user": "more", "must-contain": ["x"]}]}
        for n in range(3)
    ]
    (tmp_path / "chats.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    config = "samples: chats.jsonl\ntarget: bot:reply\nstrategies:\n  - name: not_blank\n"
    write_config(tmp_path, config)
    result = cli("run", tmp_path / "aeval.yaml", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = _outputs(tmp_path / "aeval-results" / "rows.jsonl")
    assert sorted(outputs) == ["c0", "c1", "c2"]
    assert outputs["c2"]["turns"][1]["assistant"] == "c2#0: Plan a trip / more"

    (tmp_path / "plain.py").write_text("def answer(question):\n    return question\n")
    write_config(tmp_path, config.replace("bot:reply", "plain:answer"))
    refused = cli("run", tmp_path / "aeval.yaml", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2
    assert "Sample 'c0' is a conversation (turns: or user:)" in refused.stderr
