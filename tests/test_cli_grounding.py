"""``aeval run`` with the judged grounding strategies by name, against a local judge."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from _cli import Cli, cli, project, write_config

from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply

__all__ = ["cli", "project"]

_SAMPLES = (
    "- name: grounded\n"
    "  parameters: ['Paris is the capital of France.']\n"
    "  context: ['Paris is the capital of France.']\n"
    "- name: invented\n"
    "  parameters: ['Lyon is the capital of France.']\n"
    "  context: ['Paris is the capital of France.']\n"
)


def _judge(request: RecordedRequest) -> Reply:
    prompt = str(request.messages[-1]["content"])
    sources = prompt.split("Sources:\n", 1)[1].split("\nQuestion:", 1)[0]
    answer = prompt.split("Answer: ", 1)[1].split("\n", 1)[0]
    verdict = "supported" if answer in sources else "contradicted"
    return Reply.text(json.dumps({"claims": [{"claim": answer, "verdict": verdict}]}))


def test_faithfulness_by_name_judges_each_claim_and_fails_the_invented_one(
    project: Path, cli: Cli
) -> None:
    (project / "rag.yaml").write_text(_SAMPLES, encoding="utf-8")
    with OpenAICompatibleServer(handler=_judge, model="judge") as server:
        config = write_config(
            project,
            "samples: rag.yaml\ntarget: cli_targets:echo\nstore: false\n"
            "strategies:\n  - name: faithfulness\n    label: grounded\n    model:\n"
            f"      model: judge\n      base_url: {server.base_url}\n"
            "output: {dir: out, formats: [json, markdown]}\n",
        )
        result = cli("run", config, "--quiet", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = orjson.loads((project / "out" / "report.json").read_bytes())["evaluations"]
    outcomes = {(row["name"], row["strategy"]): row["outcome"] for row in rows}
    assert outcomes == {("grounded", "grounded"): "passed", ("invented", "grounded"): "failed"}
    markdown = (project / "out" / "report.md").read_text(encoding="utf-8")
    assert "- contradicted: Lyon is the capital of France." in markdown
