"""Importing the target of ``aeval run``: signatures, hostile modules, config-relative paths."""

from __future__ import annotations

from pathlib import Path

from _cli import Cli, cli, project, rows_of, run_process, write_config

__all__ = ["cli", "project"]

_TWO = "def pair(a, b):\n    return a + b\n"


def test_a_target_that_cannot_take_the_samples_is_a_config_error(project: Path, cli: Cli) -> None:
    (project / "two_args.py").write_text(_TWO)
    config = write_config(
        project, "samples: samples.yaml\ntarget: two_args:pair\nstrategies: [{name: not_blank}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"aeval: error: {config}:2: target: The function under test pair(a, b) cannot take "
        "the parameters of sample 'hello' (Parameters(['hello'])): missing a required "
        "argument: 'b'."
    )
    assert not (project / "aeval-results").exists()


def test_the_first_sample_that_does_not_fit_is_named(project: Path, cli: Cli) -> None:
    (project / "two_args.py").write_text(_TWO)
    (project / "mixed.yaml").write_text(
        "- name: fits\n  parameters: [1, 2]\n- name: short\n  parameters: [1]\n"
    )
    config = write_config(
        project, "samples: mixed.yaml\ntarget: two_args:pair\nstrategies: [{name: not_blank}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert "of sample 'short' (Parameters([1]))" in result.stderr
    assert "'fits'" not in result.stderr


def test_a_streamed_source_is_checked_before_the_run(project: Path, cli: Cli) -> None:
    (project / "two_args.py").write_text(_TWO)
    (project / "s.jsonl").write_text('{"name": "one", "parameters": ["x"]}\n')
    config = write_config(
        project, "samples: s.jsonl\ntarget: two_args:pair\nstrategies: [{name: not_blank}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert "pair(a, b) cannot take the parameters of sample 'one'" in result.stderr
    assert not (project / "aeval-results").exists()


def test_a_one_parameter_target_gets_the_value(project: Path, cli: Cli) -> None:
    (project / "plain.py").write_text("def shout(question):\n    return question.upper()\n")
    config = write_config(
        project, "samples: samples.yaml\ntarget: plain:shout\nstrategies: [{name: not_blank}]\n"
    )

    result = cli("run", config, "--quiet", cwd=project)

    assert result.returncode == 0, result.stderr
    rows = rows_of(project / "aeval-results" / "rows.jsonl")
    assert sorted(row["output"] for row in rows) == ["HELLO", "LEFT", "WORLD"]


def test_a_sample_with_more_values_than_the_target_takes_is_a_config_error(
    project: Path, cli: Cli
) -> None:
    (project / "plain.py").write_text("def shout(question):\n    return question.upper()\n")
    (project / "two.yaml").write_text("- name: pair\n  parameters: [a, b]\n")
    config = write_config(
        project, "samples: two.yaml\ntarget: plain:shout\nstrategies: [{name: not_blank}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr.startswith(
        f"aeval: error: {config}:2: target: The function under test shout(question) cannot "
        "take the parameters of sample 'pair' (Parameters(['a', 'b'])): too many positional "
        "arguments. aeval passes a sample's values"
    )
    assert not (project / "aeval-results").exists()


def test_a_module_getattr_that_exits_is_a_config_error(project: Path, cli: Cli) -> None:
    (project / "lazy_bot.py").write_text("def __getattr__(name):\n    raise SystemExit(0)\n")
    config = write_config(
        project, "samples: samples.yaml\ntarget: lazy_bot:answer\nstrategies: [{name: json}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr == (
        f"aeval: error: {config}:2: target: looking up 'answer' in 'lazy_bot' called "
        "sys.exit(0) (in the module's __getattr__): the lookup of a target or strategy must "
        "not exit\n"
    )


def test_a_module_getattr_that_raises_is_a_config_error(project: Path, cli: Cli) -> None:
    (project / "lazy_bot.py").write_text(
        "def __getattr__(name):\n    raise RuntimeError('no backend')\n"
    )
    config = write_config(
        project, "samples: samples.yaml\ntarget: lazy_bot:answer\nstrategies: [{name: json}]\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert "looking up 'answer' in 'lazy_bot' raised RuntimeError: no backend" in result.stderr


def test_a_target_leaving_a_non_daemon_thread_does_not_keep_the_process(project: Path) -> None:
    (project / "threaded_bot.py").write_text(
        "import threading\n\n"
        "threading.Thread(target=threading.Event().wait, name='poller').start()\n\n"
        "def answer(params):\n    return params[0]\n"
    )
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: threaded_bot:answer\nstrategies: [{name: not_blank}]\n"
        "store: false\n",
    )

    result = run_process("run", config, "--quiet", cwd=project)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "DONE: no threshold configured\n"
    assert result.stderr == (
        "aeval: note: 1 non-daemon thread ('poller') started by the target or a strategy still "
        "running; exiting without waiting for them (start such threads with daemon=True, or "
        "stop them)\n"
    )


def test_a_missing_sample_file_says_paths_start_at_the_config_folder(
    project: Path, cli: Cli
) -> None:
    (project / "conf").mkdir()
    config = write_config(
        project / "conf",
        "samples:\n  paths: [../samples.yaml, samples.yaml]\n"
        "target: cli_targets:echo\npythonpath: ..\nstrategies: [{name: json}]\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr == (
        f"aeval: error: {config}:2: samples.paths[1]: {project / 'conf' / 'samples.yaml'}: no "
        f"such file (relative paths in aeval.yaml start at its folder, {project / 'conf'}): "
        "check the path\n"
    )
    assert "working directory" not in result.stderr


def test_pythonpath_folders_are_searched_for_the_target(project: Path, cli: Cli) -> None:
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "__init__.py").write_text("")
    (project / "src" / "pkg" / "bot_in_src.py").write_text(
        "def answer(params):\n    return params[0]\n"
    )
    (project / "conf").mkdir()
    config = write_config(
        project / "conf",
        "samples: ../samples.yaml\ntarget: pkg.bot_in_src:answer\npythonpath: [../src]\n"
        "strategies: [{name: exact_match}]\nthresholds: {min_score: 60}\n",
    )

    result = cli("run", config, "--quiet", cwd=project / "conf")

    assert (result.returncode, result.stdout) == (0, "PASSED: score 66.67% >= 60.00%\n")


def test_a_missing_pythonpath_folder_is_a_config_error(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\npythonpath: [src, lib]\n"
        "strategies: [{name: json}]\n",
    )
    (project / "src").mkdir()

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr == (
        f"aeval: error: {config}:3: pythonpath[1]: {project / 'lib'}: no such folder (relative "
        f"paths in aeval.yaml start at its folder, {project})\n"
    )


def test_a_tag_filtered_stream_is_evaluated_whole_after_its_first_sample_is_checked(
    project: Path, cli: Cli
) -> None:
    (project / "typed_bot.py").write_text(
        "def answer(question: str) -> str:\n    return question\n"
    )
    (project / "s.jsonl").write_text(
        '{"name": "a", "parameters": ["x"], "tags": ["t"]}\n'
        '{"name": "b", "parameters": ["y"], "tags": ["u"]}\n'
        '{"name": "c", "parameters": ["z"], "tags": ["t"]}\n'
    )
    config = write_config(
        project,
        "samples: {paths: [s.jsonl], tags: [t]}\ntarget: typed_bot:answer\n"
        "strategies: [{name: not_blank}]\nthresholds: {min_score: 100}\n",
    )

    result = cli("run", config, "--quiet", cwd=project)

    assert (result.returncode, result.stdout) == (0, "PASSED: score 100.00% >= 100.00%\n")
    rows = rows_of(project / "aeval-results" / "rows.jsonl")
    assert sorted(row["name"] for row in rows) == ["a", "c"]
