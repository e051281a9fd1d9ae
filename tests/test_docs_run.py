"""Every code block of README.md and docs/*.md runs as written, offline (see _doc_blocks).

Each page runs in a directory of its own that stands for a clone of the repository, in a
process of its own; its blocks run in order, so a block may use what an earlier one saved,
defined or recorded. A block that cannot run offline says why in the page
(``<!-- not run: ... -->``), and is counted and listed here.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import _doc_blocks
import pytest
from _doc_blocks import OUTPUT, PAGES, ROOT, Block, blocks, clone, environment, run_shell

PAGE_TIMEOUT = 900

NOT_YET: dict[str, str] = {}
"""Pages whose blocks do not run yet, and why: each is an expected failure, which passes the
day its page runs (strict), so that the page then leaves this list."""


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _cases() -> list[object]:
    return [
        pytest.param(page, marks=pytest.mark.xfail(reason=NOT_YET[_name(page)], strict=True))
        if _name(page) in NOT_YET
        else page
        for page in PAGES
    ]


def test_every_block_is_fenced_with_its_kind_and_the_pages_have_many() -> None:
    found = [block for page in PAGES for block in blocks(page)]
    run = [b for b in found if b.kind not in OUTPUT and b.not_run is None]
    assert len(run) >= 100, f"only {len(run)} blocks to run"


def test_the_blocks_not_run_say_why() -> None:
    """The blocks not run, listed with their reasons: a reason is short of a whole page."""
    not_run = [block for page in PAGES for block in blocks(page) if block.not_run is not None]
    listing = "\n".join(f"{block.where}: {block.not_run}" for block in not_run)
    print(f"{len(not_run)} blocks not run:\n{listing}")
    assert all(len(block.not_run or "") >= 20 for block in not_run), listing
    assert len(not_run) <= 8, f"more blocks are not run than before:\n{listing}"


@pytest.mark.timeout(PAGE_TIMEOUT)
@pytest.mark.parametrize("page", _cases(), ids=_name)
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


def test_what_a_command_leaves_running_is_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block that starts a server with ``&`` and stops before its ``kill`` leaves nothing
    running, and its output, which the server still holds, does not keep it waiting."""
    monkeypatch.setattr(_doc_blocks, "COMMAND_TIMEOUT", 60.0)
    block = Block(page="page.md", line=1, kind="bash", text="sleep 600 &\necho $! > server.pid\n")
    run_shell(block, tmp_path)
    try:
        handle = os.pidfd_open(int((tmp_path / "server.pid").read_text()))
    except ProcessLookupError:
        return
    try:
        ended, _, _ = select.select([handle], [], [], 30)  # readable once the process ended
    finally:
        os.close(handle)
    assert ended, "the server the block started is still running"
