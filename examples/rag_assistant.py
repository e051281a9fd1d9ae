"""A retrieval-augmented store assistant, evaluated on whether its answers are grounded.

Run it from the repository root:

    python examples/rag_assistant.py
    python examples/rag_assistant.py --garbage-judge

The assistant retrieves the best documents of a tiny in-file store by keyword overlap,
records them with ``aeval.trace.record_retrieval`` (so they become the sample's grounding),
and asks a model to answer from them. ``FaithfulnessStrategy`` has a judge split each answer
into claims and check each against the grounding; ``ContextRecallStrategy`` checks that the
retrieved documents hold the reference answer (``expected-output`` in ``rag.yaml``).

Offline and deterministic: the answering model and the judge are both
``aeval.testing.OpenAICompatibleServer`` on 127.0.0.1, answering from scripts. The model
makes up a detail in one answer (refunds "as a gift card"), so that sample's faithfulness
row fails with the claim ``not_found``. With ``--garbage-judge`` the judge replies with
prose: the faithfulness rows are then *unscored* (never 0 or NaN) and counted.
The script prints the report and exits with 0 when the thresholds are met.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

from aeval import EvaluationReport, Samples, Scorer, assert_that
from aeval.models import OpenAIChatModel
from aeval.strategies import ContextRecallStrategy, FaithfulnessStrategy
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply
from aeval.trace import record_retrieval

HERE = Path(__file__).parent
MODEL = "store-assistant"
TOP_K = 2

DOCUMENTS = {
    "refunds": "Refunds are accepted within 30 days of delivery. Items must be unused.",
    "shipping": "Standard shipping takes 3 to 5 working days. Express shipping takes 1 day.",
    "warranty": "The warranty covers manufacturing defects for 2 years. Accidents are excluded.",
    "payments": "We accept cards and UPI. Cash on delivery is available under ₹5,000.",
    "hours": "The Bangalore store opens at 10:00 and closes at 20:00, every day.",
    "returns": "Returns are collected from your address. Collection is free of charge.",
}

_WORD = re.compile(r"[a-z]+")
_STOP = {"how", "do", "i", "to", "a", "the", "does", "what", "is", "for", "of", "long", "have"}


def _words(text: str) -> set[str]:
    return {word.rstrip("s") for word in _WORD.findall(text.lower())} - _STOP


# --- the assistant --------------------------------------------------------------------------


def retrieve(question: str, *, k: int = TOP_K) -> list[dict[str, Any]]:
    """The ``k`` documents sharing the most words with ``question``, recorded in the trace."""
    asked = _words(question)
    scored = [(len(asked & _words(text)), doc_id, text) for doc_id, text in DOCUMENTS.items()]
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:k]
    documents = [{"id": doc_id, "text": text, "score": float(n)} for n, doc_id, text in best]
    record_retrieval(documents, query=question)
    return documents


class Assistant:
    """Retrieve, then answer from the documents with a chat model.

    Args:
        client: An ``httpx.AsyncClient`` on the model's OpenAI-compatible API.
    """

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def answer(self, question: str) -> str:
        """Answer ``question`` from the retrieved documents."""
        sources = "\n".join(f"[{d['id']}] {d['text']}" for d in retrieve(question))
        messages = [
            {"role": "system", "content": f"Answer only from these sources:\n{sources}"},
            {"role": "user", "content": question},
        ]
        response = await self._client.post(
            "/chat/completions", json={"model": MODEL, "messages": messages}
        )
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"])


# --- the scripted model and judge -----------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def assistant_model(request: RecordedRequest) -> Reply:
    """The model: the first sentence of the best source, plus a made-up detail on refunds."""
    system = str(request.messages[0]["content"])
    question = str(request.messages[-1]["content"])
    lines = system.splitlines()[1:]
    if not lines:
        return Reply.text("I do not know.")
    answer = _sentences(lines[0].split("] ", 1)[1])[0]
    if "refund" in question.lower():
        answer += " Refunds are paid as a gift card."
    return Reply.text(answer)


def _between(prompt: str, start: str, end: str) -> str:
    return prompt.split(start, 1)[1].split(end, 1)[0]


def judge_model(request: RecordedRequest) -> Reply:
    """The judge: a claim is supported when the sources say it word for word."""
    prompt = str(request.messages[-1]["content"])
    if prompt.startswith("You check whether an answer is grounded"):
        sources = _between(prompt, "Sources:\n", "\nQuestion:")
        answer = _between(prompt, "Answer: ", "\n")
        claims = [
            {"claim": s, "verdict": "supported" if s in sources else "not_found"}
            for s in _sentences(answer)
        ]
        return Reply.text(orjson.dumps({"claims": claims}).decode())
    sources = _between(prompt, "Retrieved documents:\n", "\nQuestion:")
    reference = _between(prompt, "Reference answer: ", "\n")
    statements = [{"statement": s, "attributed": s in sources} for s in _sentences(reference)]
    return Reply.text(orjson.dumps({"statements": statements}).decode())


def garbage_judge(request: RecordedRequest) -> Reply:
    """A judge that does not follow the format: every reply is prose."""
    return Reply.text("Looks grounded to me, nice answer!")


# --- the evaluation -------------------------------------------------------------------------


async def main(
    output_dir: Path | None = None, *, garbage_judge_replies: bool = False
) -> EvaluationReport:
    """Evaluate the assistant on ``rag.yaml``; save the reports if asked."""
    samples = await Samples.load(HERE / "rag.yaml")
    judge_script = garbage_judge if garbage_judge_replies else judge_model
    async with (
        OpenAICompatibleServer(handler=assistant_model, model=MODEL) as model_server,
        OpenAICompatibleServer(handler=judge_script, model="judge") as judge_server,
        httpx.AsyncClient(base_url=model_server.base_url, timeout=30) as client,
        OpenAIChatModel("judge", base_url=judge_server.base_url) as judge,
        Scorer(concurrency=4, timeout=30) as scorer,
    ):
        report = await scorer.evaluate(
            samples,
            Assistant(client).answer,
            FaithfulnessStrategy(judge),
            ContextRecallStrategy(judge, threshold=1.0),
        )
    report.print()
    if output_dir is not None:
        paths = await report.save(output_dir, formats=["markdown", "json", "html"])
        print("Saved:", ", ".join(str(path) for path in paths))
    if garbage_judge_replies:
        print(f"Unscored rows (the judge's replies could not be read): {report.unscored_count}")
    else:
        assert_that(report).has_score_greater_than(80)
    return report


if __name__ == "__main__":
    anyio.run(lambda: main(garbage_judge_replies="--garbage-judge" in sys.argv[1:]))
    sys.exit(0)
