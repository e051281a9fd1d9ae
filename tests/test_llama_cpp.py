"""The judge against a real llama.cpp server (llama-cpp-python's), with a tiny random model.

No model can be downloaded here, so the test writes a randomly initialised llama model of
half a megabyte with the ``gguf`` package: its text is nonsense, but the server's behaviour is
real (a reply runs until ``max_tokens`` or the context is full, ``finish_reason``, one
request at a time, JSON mode through a grammar, per-token embeddings without pooling).

Skipped unless ``llama_cpp.server`` and ``gguf`` can be imported:
``pip install 'llama-cpp-python[server]' gguf`` builds llama.cpp from source (about 40
minutes on this project's 2 shared cores).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from aeval import ModelHTTPError, ModelResponseError
from aeval.models import ChatMessage, ChatOptions, OpenAIChatModel, OpenAIEmbedder

pytest.importorskip(
    "llama_cpp.server",
    reason="llama-cpp-python's server is not installed: pip install "
    "'llama-cpp-python[server]' gguf (it builds llama.cpp: about 40 min on 2 cores)",
)
gguf: Any = pytest.importorskip("gguf", reason="pip install gguf (writes the tiny model)")
numpy: Any = pytest.importorskip("numpy")

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
N_EMBD = 64


def write_tiny_model(path: Path, *, seed: int = 0) -> None:
    """A 2-layer llama with random weights and a byte-level SentencePiece vocabulary.

    The end-of-sequence row of the output matrix is zero, so greedy decoding never ends a
    reply by itself: like the small model of the issue, it generates until a limit.
    """
    rng = numpy.random.default_rng(seed)
    n_ff, n_head, n_layer = 128, 4, 2
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("aeval-tiny-random")
    writer.add_context_length(4096)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(N_EMBD // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_chat_template(
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    )

    def weights(*shape: int) -> Any:
        return (rng.standard_normal(shape) * 0.5).astype(numpy.float32)

    ones = numpy.ones(N_EMBD, dtype=numpy.float32)
    writer.add_tensor("token_embd.weight", weights(len(tokens), N_EMBD))
    writer.add_tensor("output_norm.weight", ones)
    output = weights(len(tokens), N_EMBD)
    output[2] = 0.0
    writer.add_tensor("output.weight", output)
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(N_EMBD, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(n_ff, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(n_ff, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(N_EMBD, n_ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(model: Path, *options: str) -> Iterator[str]:
    """Start ``python -m llama_cpp.server`` and yield its base URL once it listens."""
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    log: list[str] = []
    for line in process.stderr:
        log.append(line)
        if "Uvicorn running on" in line:
            break
    else:
        process.wait()
        process.stderr.close()
        pytest.fail("llama_cpp.server did not start:\n" + "".join(log[-30:]))
    # the server logs every request: keep reading, or it would block on a full pipe
    drain = threading.Thread(target=lambda: log.extend(process.stderr or ()), daemon=True)
    drain.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)
        drain.join(timeout=30)
        process.stderr.close()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_tiny_model(path)
    return path


@pytest.fixture(scope="module")
def llama_server(tiny_model: Path) -> Iterator[str]:
    yield from _serve(tiny_model, "--n_ctx", "2048")


@pytest.fixture(scope="module")
def llama_embeddings(tiny_model: Path) -> Iterator[str]:
    yield from _serve(tiny_model, "--n_ctx", "512", "--embedding", "true")


PROMPT = [ChatMessage("user", "Is Paris the capital of France? Answer true or false.")]


async def test_max_tokens_bounds_a_reply_and_the_server_says_length(llama_server: str) -> None:
    async with OpenAIChatModel("tiny", base_url=llama_server) as model:
        reply = await model.chat(PROMPT, options=ChatOptions(max_tokens=8))
    assert reply.metadata["finish_reason"] == "length"
    assert reply.metadata["max_tokens"] == 8
    assert 1 <= reply.usage.completion_tokens <= 9


async def test_without_max_tokens_the_model_runs_until_its_context_is_full(
    llama_server: str,
) -> None:
    """What the issue's user met: no max_tokens, a reply as long as the context allows."""
    async with OpenAIChatModel("tiny", base_url=llama_server, max_attempts=1) as model:
        try:
            reply = await model.chat(PROMPT)
        except ModelHTTPError as error:
            # llama-cpp-python 0.3: decoding fails once the context is full
            assert error.status == 500
            assert "usually because the reply filled the context: set max_tokens" in str(error)
        else:
            assert reply.metadata["finish_reason"] == "length"
            assert reply.usage.completion_tokens > 1000


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )


def test_aeval_run_on_the_car_rental_samples_gives_no_error_rows(
    llama_server: str, tmp_path: Path
) -> None:
    """The issue's "done when": verdicts or explained unscored rows, no error rows."""
    for name in ("judge_local.py", "car_rental.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    config = (EXAMPLES / "judge_local.yaml").read_text(encoding="utf-8")
    config = config.replace("http://127.0.0.1:8080/v1", llama_server)
    (tmp_path / "judge_local.yaml").write_text(config, encoding="utf-8")
    done = _run("-m", "aeval", "run", "judge_local.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = orjson.loads((tmp_path / "out" / "report.json").read_bytes())
    assert (report["rows"], report["errors"]) == (10, 0)
    for row in report["evaluations"]:
        assert row["outcome"] in ("passed", "failed", "unscored")
        if row["outcome"] == "unscored":
            assert row["explanation"].startswith("The judge's reply could not be read")
        assert row["metadata"]["max_tokens"] == 256
    assert report["calibration"]["judge"]["rows"] + report["calibration"]["judge"]["unjudged"] == 10
    assert report["judges"]["judge"]["judges"]["local"]["verdicts"] == 10


def test_judge_local_py_in_true_false_mode(llama_server: str) -> None:
    done = _run(str(EXAMPLES / "judge_local.py"), "--base-url", llama_server, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "0 errors)" in done.stdout
    assert "Judges" in done.stdout


async def test_per_token_embeddings_get_the_fix_or_are_pooled(llama_embeddings: str) -> None:
    async with OpenAIEmbedder("tiny", base_url=llama_embeddings) as plain:
        with pytest.raises(ModelResponseError, match="one vector per token") as caught:
            await plain.embed(["a cat sat", "a dog"])
    assert "Start it with --pooling mean" in str(caught.value)
    async with OpenAIEmbedder("tiny", base_url=llama_embeddings, pooling="mean") as pooled:
        result = await pooled.embed(["a cat sat", "a dog"])
    assert [len(vector) for vector in result.vectors] == [N_EMBD, N_EMBD]
