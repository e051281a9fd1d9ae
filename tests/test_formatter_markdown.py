"""The Markdown report: the partial banner, the run's header, intervals, repeats, row details,
and Markdown that no value can break (checked by parsing it with a CommonMark parser)."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    RunInfo,
    Samples,
    Scorer,
    __version__,
)
from aeval.trace import CallError, Document, ModelCall, Retrieval, ToolCall, Trace

PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])

STARTED = 1764532242.0  # 2025-11-30 19:50:42 UTC


def row(name: str, index: int = 0, *, passed: bool = True, **kw: Any) -> EvaluationRow:
    sample = EvaluationSample(name, kw.pop("parameters", ["q"]), kw.pop("expected", "ok"))
    result = EvaluationResult.from_boolean(passed, kw.pop("why", None))
    strategy = kw.pop("strategy", "Exact")
    return EvaluationRow.from_result(
        sample, strategy, kw.pop("output", "ok"), result, index=index, **kw
    )


def run(**changes: Any) -> RunInfo:
    values: dict[str, Any] = {
        "started_at": STARTED,
        "finished_at": STARTED + 20.5,
        "concurrency": 4,
        "aeval_version": "9.9.9",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
    }
    return RunInfo(**{**values, **changes})


def parse(text: str) -> list[Token]:
    """Every token, the inline children flattened in after their parent."""
    flat: list[Token] = []
    for token in PARSER.parse(text):
        flat.append(token)
        flat += token.children or []
    return flat


def plain(inline: Token) -> str:
    """The text an inline token renders, with markup left out."""
    parts = {"softbreak": "\n", "hardbreak": "\n"}
    return "".join(
        parts.get(child.type, child.content)
        for child in inline.children or []
        if child.type in ("text", "code_inline", "softbreak", "hardbreak")
    )


def headings(text: str) -> list[tuple[str, str]]:
    tokens = PARSER.parse(text)
    return [
        (token.tag, plain(tokens[i + 1]))
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def fences(text: str) -> list[str]:
    return [token.content for token in PARSER.parse(text) if token.type == "fence"]


def table_rows(text: str) -> list[list[str]]:
    """Each table row's cells as plain text, header rows included, tables one after another."""
    tokens = PARSER.parse(text)
    rows: list[list[str]] = []
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            rows[-1].append(plain(tokens[i + 1]))
    return rows


def assert_no_injection(text: str) -> None:
    kinds = {token.type for token in parse(text)}
    assert not kinds & {"html_block", "html_inline", "link_open", "image", "hr"}, kinds


# -- the run's header ------------------------------------------------------------------------


def test_header_of_a_report_built_from_rows_claims_no_wall_clock() -> None:
    text = EvaluationReport([row("A", duration=1.5)]).format("markdown")
    assert "- **Started**: unknown\n" in text
    assert "- **Finished**: unknown\n" in text
    assert "- **Duration**: 1.50 s (the calls, summed)\n" in text


def test_header_of_a_run_that_did_not_finish() -> None:
    report = EvaluationReport([row("A")]).with_run(RunInfo(started_at=0.0, complete=False))
    text = report.format("markdown")
    assert "- **Started**: 1970-01-01 00:00:00 UTC\n" in text
    assert "- **Finished**: did not finish\n" in text
    assert "- **Duration**: unknown (the run did not finish)\n" in text


@pytest.mark.parametrize("details", [True, False])
def test_a_partial_run_carries_a_banner_under_the_title(details: bool) -> None:
    report = EvaluationReport([row("A"), row("B", 1, passed=False)]).with_run(
        run(complete=False, samples_expected=40, finished_at=None)
    )
    text = report.format("markdown", include_details=details)
    assert text.startswith(
        "# Evaluation Report\n"
        "\n"
        "> **PARTIAL RUN**: run stopped after 2 of 40 samples. The scores cover only the "
        "samples evaluated; do not gate a release on them.\n"
        "\n"
        "**Global Score**: 50.00%\n"
    )
    tokens = PARSER.parse(text)
    assert [t.type for t in tokens[3:5]] == ["blockquote_open", "paragraph_open"]
    assert "- **Finished**: did not finish\n" in text
    assert "- **Samples**: 2 of 40\n" in text


def test_a_partial_run_with_no_row_still_says_so() -> None:
    report = EvaluationReport([]).with_run(run(complete=False, samples_expected=3))
    text = report.format("markdown")
    assert "> **PARTIAL RUN**: run stopped after 0 of 3 samples." in text
    assert "## Run\n" in text


def test_a_complete_run_has_no_banner() -> None:
    report = EvaluationReport([row("A")]).with_run(run())
    text = report.format("markdown")
    assert text.startswith("# Evaluation Report\n\n**Global Score**: 100.00%\n")
    assert "PARTIAL" not in text


@pytest.mark.parametrize("details", [True, False])
def test_the_run_section_lists_the_header_facts(details: bool) -> None:
    report = EvaluationReport([row("A"), row("B", 1, passed=False)]).with_run(
        run(warnings=("sink <jsonl> failed: disk | full",), samples_expected=2)
    )
    text = report.format("markdown", include_details=details)
    assert (
        "## Run\n"
        "\n"
        "- **Started**: 2025-11-30 19:50:42 UTC\n"
        "- **Finished**: 2025-11-30 19:51:02 UTC\n"
        "- **Duration**: 20.50 s (wall clock)\n"
        "- **Samples**: 2 of 2\n"
        "- **aeval**: 9.9.9\n"
        "- **Concurrency**: 4\n"
        "- **Commit**: 0123456789abcdef0123456789abcdef01234567\n"
        "- **Warning**: sink &lt;jsonl&gt; failed: disk \\| full\n"
        "\n"
    ) in text
    items = [plain(t) for t in parse(text) if t.type == "inline"]
    assert "Warning: sink <jsonl> failed: disk | full" in items
    assert_no_injection(text)


def test_the_score_interval_renders_on_the_score_line() -> None:
    report = EvaluationReport([row("A"), row("B", 1, passed=False)])
    text = report.format("markdown")
    assert "**Global Score**: 50.00%\n(95% CI 9.45–90.55, 2 samples)\n\n" in text
    paragraphs = [plain(t) for t in parse(text) if t.type == "inline"]
    assert "Global Score: 50.00%\n(95% CI 9.45–90.55, 2 samples)" in paragraphs


@pytest.mark.anyio
async def test_a_scorer_run_shows_its_header() -> None:
    samples = Samples(EvaluationSample(f"S{i}", ["q"], "a") for i in range(3))
    report = await Scorer(concurrency=2).evaluate(
        samples, lambda params: "a", lambda sample, output: EvaluationResult.passing()
    )
    text = report.format("markdown", include_details=False)
    assert f"- **aeval**: {__version__}\n" in text
    assert "- **Concurrency**: 2\n" in text
    assert "- **Samples**: 3 of 3\n" in text
    assert "(wall clock)" in text
    assert "PARTIAL" not in text


# -- scores per strategy, counts, repeats ---------------------------------------------------


def skipped(name: str, index: int, strategy: str, position: int) -> EvaluationRow:
    return EvaluationRow(
        EvaluationSample(name, ["q"], "ok"),
        strategy,
        "ko",
        Outcome.SKIPPED,
        None,
        "not run: Exact failed",
        index=index,
        position=position,
    )


def test_strategy_table_counts_every_outcome_with_intervals() -> None:
    report = EvaluationReport(
        [
            row("A"),
            row("A", strategy="Gated", position=1),
            row("B", 1, passed=False),
            skipped("B", 1, "Gated", 1),
        ]
    )
    text = report.format("markdown", include_details=False)
    assert table_rows(text) == [
        [
            "Strategy",
            "Score",
            "95% CI",
            "Samples",
            "Rows",
            "Passed",
            "Failed",
            "Unscored",
            "Skipped",
            "Errors",
        ],
        ["Exact", "50.00%", "9.45–90.55", "2", "2", "1", "1", "0", "0", "0"],
        ["Gated", "50.00%", "9.45–90.55", "2", "2", "1", "0", "0", "1", "0"],
    ]
    assert "**Errors**: 0 · **Skipped**: 1\n" in text
    assert "- B: SKIPPED (not run) · Gated\n" in text


def test_a_skipped_row_says_why_it_did_not_run() -> None:
    text = EvaluationReport([row("B", passed=False), skipped("B", 0, "Gated", 1)]).format(
        "markdown"
    )
    assert "### B: SKIPPED (not run)\n- Strategy: Gated\n" in text
    assert "#### Explanation\n```\nnot run: Exact failed\n```\n" in text


def test_a_failed_call_says_the_strategy_could_not_run() -> None:
    sample = EvaluationSample("C", ["q"], "ok")
    error = ErrorInfo("ValueError", "boom", source="function")
    report = EvaluationReport(
        EvaluationRow.from_error(sample, name, None, error, position=i)
        for i, name in enumerate(("Exact", "Judge"))
    )
    text = report.format("markdown")
    assert text.count("- The call failed; the strategy could not run.\n") == 2
    assert "**Failed calls**: 1 (each gives one error row per strategy)" in text
    assert "#### Error\n```\nValueError: boom\n```\n" in text


def repeated_report() -> EvaluationReport:
    rows = []
    for repeat in range(3):
        rows.append(row("A", output=f"out {repeat % 2}", passed=repeat != 1, repeat=repeat))
        rows.append(row("B", 1, repeat=repeat))
    return EvaluationReport(rows).with_run(run(repeats=3, samples_expected=2))


def test_repeats_section_shows_pass_at_k_flaky_pairs_and_agreement() -> None:
    text = repeated_report().format("markdown", include_details=False)
    section = text[text.index("## Repeats\n") : text.index("## Details\n")]
    assert section.startswith(
        "## Repeats\n\nEach sample ran 3 times: 2 (sample, strategy) pairs.\n"
    )
    assert "**Output agreement**: 83.33% of repeats give their sample's most common output." in (
        section
    )
    assert "**Flaky pairs**: 1 of 2 (some repeats passed, some did not)." in section
    assert "**Inconsistent outputs**: 1 sample whose repeats gave different outputs." in section
    assert table_rows(section) == [
        ["k", "pass@k", "pass^k"],
        ["1", "83.33%", "83.33%"],
        ["2", "100.00%", "66.67%"],
        ["3", "100.00%", "50.00%"],
        ["Sample", "Strategy", "Passed"],
        ["A", "Exact", "2/3"],
        ["Sample", "Agreement"],
        ["A", "66.67%"],
    ]
    assert "- **Samples**: 2 of 2 × 3 repeats\n" in text


def test_repeated_rows_are_named_and_flaky_rows_marked() -> None:
    text = repeated_report().format("markdown")
    assert [h for tag, h in headings(text) if tag == "h3"] == [
        "A [repeat 2]: FAILED (0.00%)",
        "A [repeat 1]: PASSED (100.00%)",
        "A [repeat 3]: PASSED (100.00%)",
        "B [repeat 1]: PASSED (100.00%)",
        "B [repeat 2]: PASSED (100.00%)",
        "B [repeat 3]: PASSED (100.00%)",
    ]
    assert text.count("- Flaky: 2/3 repeats passed\n") == 3
    summary = repeated_report().format("markdown", include_details=False)
    assert summary.endswith(
        "## Details\n\n"
        "- A [repeat 2]: FAILED (0.00%)\n"
        "- A [repeat 1]: PASSED (100.00%)\n"
        "- A [repeat 3]: PASSED (100.00%)\n"
        "- B [repeat 1]: PASSED (100.00%)\n"
        "- B [repeat 2]: PASSED (100.00%)\n"
        "- B [repeat 3]: PASSED (100.00%)\n"
    )


def test_no_repeats_section_without_repeats() -> None:
    assert "## Repeats" not in EvaluationReport([row("A")]).format("markdown")


def test_flaky_pairs_none() -> None:
    rows = [row("A", repeat=r) for r in range(2)]
    text = EvaluationReport(rows).format("markdown")
    assert "**Flaky pairs**: none.\n" in text
    assert "Inconsistent outputs" not in text


# -- rows ------------------------------------------------------------------------------------


def test_failures_come_first_in_report_order() -> None:
    report = EvaluationReport(
        [row("P1"), row("F1", 1, passed=False), row("P2", 2), row("F2", 3, passed=False)]
    )
    summary = report.format("markdown", include_details=False)
    assert summary.endswith(
        "- F1: FAILED (0.00%)\n"
        "- F2: FAILED (0.00%)\n"
        "- P1: PASSED (100.00%)\n"
        "- P2: PASSED (100.00%)\n"
    )
    assert [h for tag, h in headings(report.format("markdown")) if tag == "h3"] == [
        "F1: FAILED (0.00%)",
        "F2: FAILED (0.00%)",
        "P1: PASSED (100.00%)",
        "P2: PASSED (100.00%)",
    ]


def test_a_row_shows_its_named_parameters_and_tags() -> None:
    sample = EvaluationSample(
        "N", {"question": "Capital?", "lang": ["fr", None]}, "Paris", tags=["geo", "smoke"]
    )
    report = EvaluationReport(
        [EvaluationRow.from_result(sample, "Exact", "Paris", EvaluationResult.passing())]
    )
    text = report.format("markdown")
    assert (
        "### N: PASSED (100.00%)\n"
        "- Strategy: Exact\n"
        "- Tags: geo, smoke\n"
        "#### Inputs\n"
        "```\nquestion=Capital?, lang=[fr, null]\n```\n"
        "#### Result\n"
        "```\nParis\n```\n"
    ) in text


def test_long_values_are_cut_with_their_length() -> None:
    output = "x" * 5000
    text = EvaluationReport([row("L", output=output, passed=False)]).format("markdown")
    [_, result, _] = fences(text)
    assert result == "x" * 2000 + "… (5000 characters in all)\n"


# -- Markdown that never breaks --------------------------------------------------------------

HOSTILE_VALUES = [
    "```",
    "```python\nprint(1)\n```",
    "a ```` b ``````` c",
    "~~~\nfenced with tildes",
    "### PASSED\n# Evaluation Report",
    "<script>alert(1)</script>",
    "<!-- never closed",
    "| a | b |\n| --- | --- |\n| 1 | 2 |",
    "[link](javascript:alert(1)) ![img](x.png) <https://x.example>",
    "> quote\n- item\n1. item\n    indented\n***\n---",
    "trailing backslash \\",
    "",
    "ends with a newline\n",
]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_a_hostile_value_stays_inside_its_code_block(value: str) -> None:
    sample = EvaluationSample("S", {"prompt": value}, value)
    report = EvaluationReport(
        [
            EvaluationRow.from_result(
                sample, "Judge", value, EvaluationResult.failing(0.0, value or "why")
            )
        ]
    )
    text = report.format("markdown")
    assert headings(text) == [
        ("h1", "Evaluation Report"),
        ("h2", "Run"),
        ("h2", "Details"),
        ("h3", "S: FAILED (0.00%)"),
        ("h4", "Inputs"),
        ("h4", "Result"),
        ("h4", "Expected Output"),
        ("h4", "Explanation"),
    ]

    def block(text: str) -> str:
        return text + "\n" if text else ""

    assert fences(text) == [
        block(f"prompt={value}"),
        block(value),
        block(value),
        block(value or "why"),
    ]
    assert_no_injection(text)


HOSTILE_NAMES = [
    "name\nwith\nnewlines\n# heading",
    "### PASSED",
    "<script>alert(1)</script>",
    "<!-- comment",
    "a | pipe",
    "[link](javascript:alert(1)) [click](https://evil.example)",
    "`code` and ``` fence",
    "*bold* _em_ ~~strike~~",
    "1. ordered",
    "- bullet",
    "+ plus",
    "> quote",
    "&amp; entity",
    "back\\slash\\",
]


@pytest.mark.parametrize("details", [True, False])
def test_hostile_names_tags_and_strategies_render_as_literal_text(details: bool) -> None:
    rows = [
        EvaluationRow.from_result(
            EvaluationSample(name, ["q"], "ok", tags=[name]),
            f"{name} strategy",
            "ko",
            EvaluationResult.failing(0.0, "no"),
            index=i,
        )
        for i, name in enumerate(HOSTILE_NAMES)
    ]
    rows.append(row("other", len(rows), strategy="Exact"))
    report = EvaluationReport(rows).with_run(run(warnings=tuple(HOSTILE_NAMES)))
    text = report.format("markdown", include_details=details)
    flat = [" ".join(name.splitlines()).strip() for name in HOSTILE_NAMES]

    assert_no_injection(text)
    found = headings(text)
    assert found[:3] == [("h1", "Evaluation Report"), ("h2", "Run"), ("h2", "Score per tags")]
    if details:
        assert [h for tag, h in found if tag == "h3"] == [
            f"{name}: FAILED (0.00%)" for name in flat
        ] + ["other: PASSED (100.00%)"]
        assert [tag for tag, _ in found].count("h4") == 4 * len(HOSTILE_NAMES) + 3
    else:
        assert [tag for tag, _ in found] == ["h1", "h2", "h2", "h2", "h2"]
    tokens = PARSER.parse(text)
    lists = 2 + (len(rows) if details else 1)
    assert [t.type for t in tokens].count("bullet_list_open") == lists
    assert "ordered_list_open" not in {t.type for t in tokens}
    assert "blockquote_open" not in {t.type for t in tokens}
    items = [plain(t) for t in parse(text) if t.type == "inline"]
    for name in flat:
        assert f"Warning: {name}" in items
    cells = table_rows(text)
    assert [cells_row[0] for cells_row in cells[1:]] == [f"{name} strategy" for name in flat] + [
        "Exact"
    ]
    assert all(len(cells_row) == 10 for cells_row in cells)
    if not details:
        lines = [item for item in items if ": FAILED" in item]
        assert lines == [f"{name}: FAILED (0.00%) · {name} strategy" for name in flat]


# -- traces ------------------------------------------------------------------------------------

TRACED = Trace(
    tool_calls=(
        ToolCall("get_weather", {"city": "Mysore"}, "sunny", mocked=True),
        ToolCall("book_*ticket*", {"what": "```\n# heading\n<b>x</b> [a](http://x)"}, None,
                 CallError("ToolTimeoutError", "timed out\n- item")),
        ToolCall("search", {"q": "y" * 500}, "z" * 500),
    ),
    model_calls=(ModelCall("gpt-x", 10, 5, requested_tools=("get_weather",)),),
    retrievals=(Retrieval("hotels", (Document("d1", "a hotel", 0.9),)),),
)  # fmt: skip


def test_a_row_with_a_trace_lists_its_calls_compactly_and_safely() -> None:
    text = EvaluationReport([row("s", trace=TRACED), row("t", 1)]).format("markdown")
    assert_no_injection(text)
    assert [h for h in headings(text) if h[0] == "h4"].count(("h4", "Trace")) == 1
    items = [
        plain(tokens[i + 2])
        for tokens in [PARSER.parse(text)]
        for i, token in enumerate(tokens)
        if token.type == "list_item_open" and token.info
    ]
    assert items[0] == 'tool get_weather(city="Mysore") -> "sunny" (mocked)'
    assert items[1] == (
        'tool book_*ticket*(what="```\\n# heading\\n<b>x</b> [a](http://x)") raised '
        "ToolTimeoutError: timed out - item"
    )
    assert items[2] == (
        f'tool search(q="{"y" * 199}… (502 characters in all)) -> '
        f'"{"z" * 199}… (502 characters in all)'
    )
    assert items[3:] == [
        "model gpt-x · 15 tokens · asked for get_weather",
        'retrieval for "hotels": 1 document (d1)',
    ]
    assert "3 tool calls · 1 model call · 15 tokens · 1 retrieval" in text


def test_a_trace_s_model_call_without_token_counts_is_said_not_counted_as_0() -> None:
    streamed = Trace(model_calls=(ModelCall("m", 10, 5), ModelCall("m")))
    text = EvaluationReport([row("s", trace=streamed)]).format("markdown")
    assert "2 model calls · at least 15 tokens · 1 model call without token counts" in text
    unknown = Trace(model_calls=(ModelCall("m"),))
    text = EvaluationReport([row("s", trace=unknown)]).format("markdown")
    assert "1 model call · 1 model call without token counts" in text


def test_rows_without_a_trace_have_no_trace_section() -> None:
    text = EvaluationReport([row("s")]).format("markdown")
    assert "Trace" not in text
