"""The model examples run offline and print what they promise (judge_ollama.py only imports)."""

from __future__ import annotations

import runpy
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeval import EvaluationReport
from aeval.testing import RecordedRequest, Reply

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture
def examples_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield
    for name in ("support_bot", "judge_offline"):
        sys.modules.pop(name, None)


def run_example(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / name), run_name=name.removesuffix(".py"))


@pytest.mark.anyio
@pytest.mark.usefixtures("examples_path")
async def test_judge_offline_prints_the_report_with_usage_and_unscored_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report: EvaluationReport = await run_example("judge_offline.py")["main"]()
    out = capsys.readouterr().out.splitlines()
    judge_rows = [row for row in report.evaluations if row.strategy == "AiJudgeStrategy"]
    prompt = sum(row.metadata["prompt_tokens"] for row in judge_rows)
    completion = sum(row.metadata["completion_tokens"] for row in judge_rows)
    cost = (prompt * 0.15 + completion * 0.60) / 1000
    assert report.usage.cost == pytest.approx(cost)
    assert report.usage.completion_tokens == completion
    assert report.usage.prompt_tokens > prompt > 0
    assert out[:3] == [
        "Score: 75.00% (9/12 rows)",
        "Passed 9, failed 2, unscored 1, errors 0",
        f"Model usage: {report.usage.prompt_tokens} prompt + {completion} completion tokens, "
        f"0 retries, ${cost:.6f}",
    ]
    assert out[3:] == [
        "PASSED   Opening hours [AiJudgeStrategy] score 0.95",
        "PASSED   Opening hours [SemanticSimilarityStrategy] score 1.00 similarity 1.0000",
        "PASSED   Refund policy [AiJudgeStrategy] score 0.95",
        "PASSED   Refund policy [SemanticSimilarityStrategy] score 1.00 similarity 1.0000",
        "UNSCORED Password reset [AiJudgeStrategy] score - (asked again)",
        "         The judge's reply could not be read, even when asked again: it gave the same "
        "reply (the reply holds no JSON object): 'I am not sure how to rate this one.'",
        "PASSED   Password reset [SemanticSimilarityStrategy] score 1.00 similarity 1.0000",
        "PASSED   Shipping time [AiJudgeStrategy] score 0.90",
        "PASSED   Shipping time [SemanticSimilarityStrategy] score 1.00 similarity 1.0000",
        "PASSED   Escalation [AiJudgeStrategy] score 1.00 (asked again)",
        "PASSED   Escalation [SemanticSimilarityStrategy] score 1.00 similarity 1.0000",
        "FAILED   Warranty [AiJudgeStrategy] score 0.05",
        "         It does not answer at all.",
        "FAILED   Warranty [SemanticSimilarityStrategy] score 0.00 similarity 0.0000",
        "         Similarity 0.0000 below threshold 0.8000",
    ]
    unscored = judge_rows[2]
    assert unscored.metadata["raw_reply"] == "I am not sure how to rate this one."
    assert judge_rows[3].metadata["raw_score"] == 90
    assert "passed" not in judge_rows[3].metadata


@pytest.mark.anyio
@pytest.mark.usefixtures("examples_path")
async def test_similarity_local_uses_the_local_embedder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("onnxruntime")
    report: EvaluationReport = await run_example("similarity_local.py")["main"]()
    out = capsys.readouterr().out.splitlines()
    warranty = report.evaluations[-1].metadata["similarity"]
    assert 0.0 < warranty < 0.9
    assert out == [
        "Embedder: LocalEmbedder(model='all-MiniLM-L6-v2-int8', threads=1)",
        "Score: 83.33% (5/6 rows)",
        "PASSED Opening hours: similarity 1.0000",
        "PASSED Refund policy: similarity 1.0000",
        "PASSED Password reset: similarity 1.0000",
        "PASSED Shipping time: similarity 1.0000",
        "PASSED Escalation: similarity 1.0000",
        f"FAILED Warranty: similarity {warranty:.4f}",
        f"       Similarity {warranty:.4f} below threshold 0.9000",
    ]


ENV_NAMES = (
    "AEVAL_BASE_URL",
    "OPENAI_BASE_URL",
    "AEVAL_MODEL",
    "OPENAI_MODEL",
    "AEVAL_EMBEDDING_MODEL",
    "OPENAI_EMBEDDING_MODEL",
)


@pytest.mark.usefixtures("examples_path")
def test_judge_ollama_imports_without_running(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    module = run_example("judge_ollama.py")
    args = module["parse_args"]([])
    assert (args.base_url, args.model, args.embedding_model, args.concurrency) == (
        "http://localhost:11434/v1",
        "llama3.2",
        "nomic-embed-text",
        2,
    )
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5")
    monkeypatch.setenv("AEVAL_BASE_URL", "http://127.0.0.1:8000/v1")
    args = module["parse_args"](["--embedding-model", "bge-m3"])
    assert (args.base_url, args.model, args.embedding_model) == (
        "http://127.0.0.1:8000/v1",
        "qwen2.5",
        "bge-m3",
    )


def run_ollama_example(*args: str) -> subprocess.CompletedProcess[str]:
    env_free = {"PYTHONPATH": str(EXAMPLES.parent), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "judge_ollama.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env_free,
    )


def test_judge_ollama_help() -> None:
    done = run_ollama_example("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: judge_ollama.py [-h] [--base-url BASE_URL]")
    assert "(AEVAL_BASE_URL, OPENAI_BASE_URL; default http://localhost:11434/v1)" in done.stdout
    assert "(AEVAL_MODEL, OPENAI_MODEL; default llama3.2)" in done.stdout


def test_judge_ollama_says_so_when_no_server_answers() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    done = run_ollama_example("--base-url", base_url)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(
        f"No OpenAI-compatible server answers at {base_url} (ConnectError: "
    )
    assert "Start Ollama (`ollama serve`, then `ollama pull llama3.2`" in done.stderr
    assert "try examples/judge_offline.py." in done.stderr


def test_judge_ollama_runs_against_a_server_with_any_model_name() -> None:
    """The example works with a judge model not named "judge" (no price table is needed)."""
    from aeval.testing import OpenAICompatibleServer

    module = runpy.run_path(str(EXAMPLES / "judge_offline.py"))
    with OpenAICompatibleServer(handler=module["scripted_judge"]) as server:
        done = run_ollama_example(
            "--base-url", server.base_url, "--model", "llama3.2", "--embedding-model", "bge-m3"
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Score: ")
    assert "$0.000000" in done.stdout
    models = {request.json["model"] for request in server.requests if request.method == "POST"}
    assert models == {"llama3.2", "bge-m3"}


# --- judge_local.py and judge_local.yaml: the car-rental samples against a local server -----

WRONG = ("free of charge", "racing is allowed")


def car_rental_judge(request: RecordedRequest) -> Reply:
    """A judge that gets the example right: it fails the two wrong canned answers."""
    prompt = str(request.messages[0]["content"])
    wrong = any(text in prompt for text in WRONG)
    if request.json.get("response_format"):
        return Reply.json({"score": 10 if wrong else 90, "explanation": "checked"})
    return Reply.text("false" if wrong else "true")


def run_local_example(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "judge_local.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(EXAMPLES.parent), "COLUMNS": "200"},
    )


def test_judge_local_help() -> None:
    done = run_local_example("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: judge_local.py [-h] [--base-url BASE_URL]")
    assert "1-2 for a one-slot server (default 1)" in done.stdout


def test_judge_local_runs_the_car_rental_samples_and_calibrates_the_judge() -> None:
    from aeval.testing import OpenAICompatibleServer

    with OpenAICompatibleServer(handler=car_rental_judge, slots=1) as server:
        done = run_local_example("--base-url", server.base_url, "--structured")
        bodies = [request.json for request in server.requests]
    assert done.returncode == 0, done.stderr
    assert "10 (8 passed, 2 failed, 0 unscored, 0 skipped, 0 errors)" in done.stdout
    assert (
        "Judge calibration: judge: kappa 1.00 [0.13, 1.00] · accuracy 100.00% over 10 rows"
        in done.stdout
    )
    assert {(b["max_tokens"], b["response_format"]["type"]) for b in bodies} == {
        (256, "json_object")
    }


def test_judge_local_exits_1_when_the_judge_calls_fail() -> None:
    from aeval.testing import ScriptedHTTPServer

    with ScriptedHTTPServer() as nothing_here:  # 404 for every path
        base_url = f"{nothing_here.url}/v1"
        done = run_local_example("--base-url", base_url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "10 (0 passed, 0 failed, 0 unscored, 0 skipped, 10 errors)" in done.stdout
    assert done.stderr == (
        f"judge_local: 10 of 10 rows are errors: the judge at {base_url} failed or "
        "could not be reached (see the rows above)\n"
    )


def test_judge_local_yaml_runs_with_aeval_run(tmp_path: Path) -> None:
    from aeval.testing import OpenAICompatibleServer

    for name in ("judge_local.py", "car_rental.yaml"):
        (tmp_path / name).write_text((EXAMPLES / name).read_text(encoding="utf-8"))
    with OpenAICompatibleServer(handler=car_rental_judge, slots=1) as server:
        config = (EXAMPLES / "judge_local.yaml").read_text(encoding="utf-8")
        assert "base_url: http://127.0.0.1:8080/v1" in config
        config = config.replace("http://127.0.0.1:8080/v1", server.base_url)
        config += "thresholds: {min_kappa: 0.6}\n"
        (tmp_path / "judge_local.yaml").write_text(config)
        done = subprocess.run(
            [sys.executable, "-m", "aeval", "run", "judge_local.yaml", "--output", "out"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={"PYTHONPATH": str(EXAMPLES.parent), "COLUMNS": "200"},
        )
        peak = server.max_concurrent
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED: kappa judge 1.00 >= 0.60" in done.stdout
    assert peak == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report.html",
        "report.json",
        "report.md",
        "report.xml",
        "rows.jsonl",
    ]
