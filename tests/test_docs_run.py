"""Every code block of README.md and docs/*.md runs as written, offline (see _doc_blocks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _doc_blocks import PAGES, ROOT, Block, blocks, clone, environment

PAGE_TIMEOUT = 900


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.timeout(PAGE_TIMEOUT)
@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    where = tmp_path / "clone"
    where.mkdir()
    clone(where)
    results = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_doc_blocks.py")), str(page), str(results)],
        cwd=where,
        env=environment(where),
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT - 30,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    outcomes = json.loads(results.read_text(encoding="utf-8"))
    failed = [o for o in outcomes if o["status"] == "failed"]
    assert not failed, "\n\n".join(f"{o['where']} ({o['kind']}):\n{o['detail']}" for o in failed)
