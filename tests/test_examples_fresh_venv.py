"""Every example runs after the README's install alone, in a fresh venv (issue 32).

Each example is run as its docstring says, from the project root: ``python examples/X.py``,
``aeval run examples/<config>.yaml``, ``cd examples/pytest_project && pytest``, in a venv
holding ``pip install -e .`` and the one extra the example names, nothing else. A development
install hides what such a venv lacks: there pytest is installed, so the folder
``examples/pytest/`` (which ``python examples/X.py`` puts first on the path) lost to it, and
an example that needs a module of another extra still runs.

The project root is a copy of this checkout's (pyproject.toml, README.md, aeval/, examples/)
in a tmp dir, one per venv: the editable install's metadata, and the reports and run stores
the examples write, stay out of the checkout. The venvs are made without pip and filled by
this interpreter's (``pip --python VENV``): the same install, without copying pip into each.
The three are installed at once, when the first test asks for one; pip's cache makes that
quick. The examples that talk to a model server run against ``aeval.testing``'s, started
here, where a user would start Ollama or llama.cpp's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
import yaml

from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CORE, EXAMPLES_EXTRA, LOCAL = "", "examples", "local"

# One worker runs them all, over the same venvs. The first test to ask for a venv waits for
# the three installs: about 15 s alone here, 80 s beside the rest of the suite on a busy machine.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("fresh_venv"), pytest.mark.timeout(300)]

# What the README's install alone runs, as each example's docstring says; the first word is
# looked up in the venv. Each has the extra it names, and a line its output holds.
OFFLINE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "aeval.yaml": (CORE, ("aeval", "run", "examples/aeval.yaml"), "91.67%"),
    "judge_offline.py": (CORE, ("python", "examples/judge_offline.py"), "Score: 75.00%"),
    "quickstart.py": (CORE, ("python", "examples/quickstart.py"), "Saved: target/"),
    "rag_assistant.py": (CORE, ("python", "examples/rag_assistant.py"), "FaithfulnessStrategy"),
    "similarity_local.py": (LOCAL, ("python", "examples/similarity_local.py"), "Score: 83.33%"),
    # the module the other examples import: run as a script, it only imports
    "support_bot.py": (CORE, ("python", "examples/support_bot.py"), ""),
    "travel_agent.py": (CORE, ("python", "examples/travel_agent.py"), "ToolCallsStrategy"),
    "travel_conversation.py": (
        CORE,
        ("python", "examples/travel_conversation.py"),
        "Output agreement: 100.00%",
    ),
}
# The examples run by a test of their own, and how.
ELSEWHERE = {
    "judge_local.py": "test_the_local_judge_examples: --base-url of aeval.testing's server",
    "judge_local.yaml": "test_the_local_judge_examples: base_url of aeval.testing's server",
    "judge_ollama.py": "test_judge_ollama_against_a_server: --base-url of aeval.testing's",
    "online_service.py": "test_the_online_service_serves_and_evaluates ([examples])",
    "pytest_project/": "test_the_pytest_project_passes ([examples])",
    "travel_langgraph.py": "test_integrations_agents.py: the example, streamed or not",
    "travel_openai.py": "test_integrations_agents.py: the example, streamed or not",
    "travel_openai_agents.py": "test_integrations_agents.py: the example, streamed or not",
    "travel_pydantic_ai.py": "test_integrations_agents.py: the example, streamed or not",
}


def examples_found() -> set[str]:
    """The scripts, the configurations (YAML mappings; samples are lists) and pytest projects."""
    scripts = {path.name for path in EXAMPLES.glob("*.py") if path.name != "__init__.py"}
    configs = {
        path.name
        for path in EXAMPLES.glob("*.yaml")
        if isinstance(yaml.safe_load(path.read_text(encoding="utf-8")), dict)
    }
    projects = {f"{path.parent.name}/" for path in EXAMPLES.glob("*/pytest.ini")}
    return scripts | configs | projects


def test_every_example_is_run_here() -> None:
    found = examples_found()
    assert found - OFFLINE.keys() - ELSEWHERE.keys() == set(), (
        "an example this file does not run: add it to OFFLINE, or to ELSEWHERE with a test "
        "that runs it (against aeval.testing's server if it needs a model server)"
    )
    assert OFFLINE.keys() | ELSEWHERE.keys() == found


def user_environment(venv: Path | None = None) -> dict[str, str]:
    """This process's environment less what points into the test run, the venv activated."""
    dropped = ("PYTHON", "PYTEST_", "COV_CORE_", "AEVAL_", "OPENAI_", "VIRTUAL_ENV")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    environment["COLUMNS"] = "200"
    if venv is not None:
        environment["VIRTUAL_ENV"] = str(venv)
        environment["PATH"] = os.pathsep.join([str(venv / "bin"), environment.get("PATH", "")])
    return environment


@dataclass(frozen=True, slots=True)
class Install:
    """A project root and the fresh venv that has it installed (editable) with one extra."""

    root: Path
    venv: Path

    def command(self, *words: str) -> list[str]:
        return [str(self.venv / "bin" / words[0]), *words[1:]]

    def run(self, *words: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*words),
            cwd=cwd or self.root,
            env=user_environment(self.venv),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def copy_project(root: Path) -> None:
    root.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    skipped = shutil.ignore_patterns("__pycache__", "target", ".aeval", ".pytest_cache")
    for name in ("aeval", "examples"):
        shutil.copytree(ROOT / name, root / name, ignore=skipped)


class Installs:
    """The venvs of every extra, installed at once; :meth:`get` waits for one."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._started: dict[str, tuple[Install, subprocess.Popen[str]]] = {}
        for extra in (CORE, EXAMPLES_EXTRA, LOCAL):
            folder = base / (extra or "core")
            install = Install(folder / "project", folder / "venv")
            copy_project(install.root)
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(install.venv)], check=True
            )
            target = f"{install.root}[{extra}]" if extra else str(install.root)
            pip = [sys.executable, "-m", "pip", "--python", str(install.venv / "bin" / "python")]
            pip += ["install", "-q", "--disable-pip-version-check", "--no-compile", "-e", target]
            process = subprocess.Popen(
                pip,
                env=user_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self._started[extra] = (install, process)
        self._done: dict[str, Install] = {}

    def get(self, extra: str) -> Install:
        if extra not in self._done:
            install, process = self._started[extra]
            out, err = process.communicate(timeout=300)
            if process.returncode != 0:
                what = f"'.[{extra}]'" if extra else "."
                pytest.fail(f"pip install -e {what} failed in a fresh venv:\n{out}{err}")
            self._done[extra] = install
        return self._done[extra]

    def close(self) -> None:
        """Stop the installs still running and remove the venvs (about 250 MB)."""
        for _, process in self._started.values():
            if process.poll() is None:
                process.kill()
            process.communicate()
        shutil.rmtree(self._base)


@pytest.fixture(scope="session")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installs]:
    started = Installs(tmp_path_factory.mktemp("fresh-venvs"))
    try:
        yield started
    finally:
        started.close()


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


@pytest.mark.parametrize("name", sorted(OFFLINE))
def test_the_example_runs_offline_with_its_extra_only(installs: Installs, name: str) -> None:
    extra, command, expected = OFFLINE[name]
    done = installs.get(extra).run(*command)
    assert done.returncode == 0, outcome(done)
    assert expected in done.stdout, outcome(done)
    assert "Traceback" not in done.stderr, outcome(done)


def judge(request: RecordedRequest) -> Reply:
    """Any judge's reply: a JSON verdict when asked for JSON, else ``true``."""
    if request.json.get("response_format"):
        return Reply.json({"score": 90, "explanation": "Matches the expected output."})
    return Reply.text("true")


def test_the_local_judge_examples(installs: Installs) -> None:
    install = installs.get(CORE)
    config = install.root / "examples" / "judge_local.yaml"
    with OpenAICompatibleServer(handler=judge) as server:
        script = install.run("python", "examples/judge_local.py", "--base-url", server.base_url)
        text = config.read_text(encoding="utf-8")
        assert "base_url: http://127.0.0.1:8080/v1" in text
        config.write_text(text.replace("http://127.0.0.1:8080/v1", server.base_url))
        cli = install.run("aeval", "run", "examples/judge_local.yaml")
    assert script.returncode == 0, outcome(script)
    assert "10 (10 passed, 0 failed, 0 unscored, 0 skipped, 0 errors)" in script.stdout
    assert cli.returncode == 0, outcome(cli)
    assert "Judge calibration: judge: kappa" in cli.stdout, outcome(cli)


def test_judge_ollama_against_a_server(installs: Installs) -> None:
    install = installs.get(CORE)
    with OpenAICompatibleServer(handler=judge) as server:
        done = install.run("python", "examples/judge_ollama.py", "--base-url", server.base_url)
    assert done.returncode == 0, outcome(done)
    assert done.stdout.startswith("Score: "), outcome(done)
    assert {request.json["model"] for request in server.requests if request.json} == {
        "llama3.2",
        "nomic-embed-text",
    }


def test_the_pytest_project_passes(installs: Installs) -> None:
    install = installs.get(EXAMPLES_EXTRA)
    done = install.run("pytest", cwd=install.root / "examples" / "pytest_project")
    assert done.returncode == 0, outcome(done)
    assert "11 passed, 1 skipped" in done.stdout, outcome(done)


async def test_the_online_service_serves_and_evaluates(installs: Installs) -> None:
    install = installs.get(EXAMPLES_EXTRA)
    command = install.command("python", "examples/online_service.py", "--port", "0")
    async with await anyio.open_process(
        command, cwd=install.root, env=user_environment(install.venv), stderr=subprocess.STDOUT
    ) as process:
        assert process.stdout is not None
        said = b""
        async for chunk in process.stdout:
            said += chunk
            if b"\n" in said:
                break
        line = said.decode().partition("\n")[0]
        assert line.startswith("online_service: serving on http://127.0.0.1:"), said.decode()
        async with httpx.AsyncClient(base_url=line.split()[3], timeout=30) as client:
            answer = await client.post("/ask", json={"question": "What is 17 plus 25?"})
            settled = await client.get("/evaluation", params={"settle": "1"})
        process.send_signal(signal.SIGINT)
        assert await process.wait() in {0, -signal.SIGINT}
    assert answer.json() == {"answer": "17 plus 25 is 42."}
    assert settled.json()["statistics"]["evaluated"] == 1
    assert (install.root / "online-rows.jsonl").exists()
