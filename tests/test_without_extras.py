"""The suite passes on a machine without an optional extra: its tests skip, saying why.

Each case runs the test files that name an extra's modules in a fresh pytest process whose
``sitecustomize`` makes those modules unimportable, as they are where the extra is not
installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

EXTRAS = {
    "ray": ["ray"],
    "local": ["onnxruntime", "tokenizers"],
    "pii": ["phonenumbers"],
    "otel": ["opentelemetry"],
}

pytestmark = pytest.mark.xdist_group("without-extras")


def files_naming(modules: list[str]) -> list[str]:
    pattern = re.compile(rf"\b({'|'.join(modules)})\b")
    here = Path(__file__).name
    return sorted(
        str(path.relative_to(ROOT))
        for path in TESTS.glob("test_*.py")
        if path.name != here and pattern.search(path.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_tests_of_an_extra_skip_where_it_is_not_installed(extra: str, tmp_path: Path) -> None:
    modules = EXTRAS[extra]
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in modules)
    )
    files = files_naming(modules)
    assert files, f"no test file names {modules}"
    path = os.pathsep.join(
        [str(tmp_path), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--no-cov", "-n", "0", "-rs", *files],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"without the {extra} extra:\n{done.stdout[-4000:]}"
    assert "skipped" in done.stdout.splitlines()[-1], done.stdout[-2000:]
