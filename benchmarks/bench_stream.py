"""How the time of ``Samples.stream`` grows with the length of one line.

A JSONL line longer than the reader's chunk is assembled from many chunks. Searching the
whole held buffer for a newline after every chunk made that quadratic (a 200 MB line took
32 s); the reader now searches each new chunk once. This script times one line of 4, 16 and
32 MB against the baseline of reading the file whole and parsing it with orjson, in the
same run, and prints the growth: linear code grows about as the size does (8x from 4 to
32 MB); quadratic code would grow about 64x.

Usage::

    python benchmarks/bench_stream.py
    python benchmarks/bench_stream.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson
from _machine import machine

from aeval import Samples


async def stream_once(path: Path) -> float:
    started = time.process_time()
    async for _ in Samples.stream(path):
        pass
    return time.process_time() - started


def parse_whole(path: Path) -> float:
    started = time.process_time()
    for line in path.read_bytes().splitlines():
        orjson.loads(line)
    return time.process_time() - started


def measure(sizes: list[int], reps: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"sizes_mb": sizes, "stream": [], "read whole (baseline)": []}
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            path = Path(folder) / f"line-{size}.jsonl"
            text = "x" * (size * 1024 * 1024)
            path.write_text(f'{{"name": "long", "parameters": ["{text}"]}}\n')
            figures["stream"].append(min(anyio.run(stream_once, path) for _ in range(reps)))
            figures["read whole (baseline)"].append(min(parse_whole(path) for _ in range(reps)))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1, 2 and 4 MB, one repetition")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    sizes, reps = ([1, 2, 4], 1) if args.quick else ([4, 16, 32], 3)
    info = machine("aeval-engine")
    print(f"Samples.stream on one long line{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs, load average {info['load_average']}")
    figures = measure(sizes, reps)
    print()
    print(f"{'engine':<24}" + "".join(f"{f'CPU s @ {s} MB':>16}" for s in sizes) + "  growth")
    for engine in ("stream", "read whole (baseline)"):
        times = figures[engine]
        cells = "".join(f"{value:>16.3f}" for value in times)
        growth = times[-1] / times[0] if times[0] else float("inf")
        print(f"{engine:<24}{cells}  {growth:.1f}x for {sizes[-1] // sizes[0]}x the size")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
