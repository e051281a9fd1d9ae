"""A conversation row's transcript as the formats show it: turn by turn, each message cut
saying its length, each turn's trace as the trace views show one, and the turn that failed
marked (from ``EachTurnStrategy``'s metadata: ``failed_turn`` and the per-turn ``turns`` verdicts).

Markdown gets its lines here; HTML gets the static details fragment and the record the
page's script reads, with the script part that builds it from text (never from markup).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from .._conversation import Transcript
from ._escape import markdown_fenced, markdown_inline
from ._header import truncated
from ._trace_view import compact_lines, event_views, timeline_html, trace_summary

if TYPE_CHECKING:
    from .._reporting._results import EvaluationRow
    from ..trace import Trace

__all__ = [
    "CONVERSATION_SCRIPT",
    "TurnView",
    "conversation_html",
    "conversation_markdown",
    "conversation_record",
    "shows_turn_traces",
    "transcript_of",
    "turn_views",
]

_NO_ANSWER = "(no answer: the target raised or ran out of time on this turn)"
_ENDINGS = {
    "script": "its script ran out",
    "goal": "the simulated user reached its goal",
    "max-turns": "the simulated user's most turns were reached",
    "error": "a turn raised",
    "timeout": "the conversation ran out of time",
}


def transcript_of(row: EvaluationRow) -> Transcript | None:
    """The row's output when it is a conversation's transcript, else ``None``."""
    output = row.output
    return output if isinstance(output, Transcript) else None


def shows_turn_traces(transcript: Transcript) -> bool:
    """Whether some turn has a trace of its own (then each turn shows it, not the row)."""
    return any(turn.trace is not None for turn in transcript.turns)


@dataclass(frozen=True, slots=True)
class TurnView:
    """One turn as the formats show it.

    Attributes:
        number: The turn's number, from 1.
        title: ``Turn 2 · failed · first failing turn``.
        failed: Whether this is the first turn that did not pass.
        user: The user's message, cut saying its length.
        assistant: The answer, cut saying its length (a note when there is none).
        trace: The turn's trace, if any.
    """

    number: int
    title: str
    failed: bool
    user: str
    assistant: str
    trace: Trace | None


def _verdicts(metadata: Mapping[str, Any]) -> dict[int, str]:
    verdicts = metadata.get("turns")
    if not isinstance(verdicts, list):
        return {}
    return {
        verdict["turn"]: str(verdict["outcome"])
        for verdict in verdicts
        if isinstance(verdict, Mapping)
        and isinstance(verdict.get("turn"), int)
        and isinstance(verdict.get("outcome"), str)
    }


def turn_views(transcript: Transcript, metadata: Mapping[str, Any]) -> list[TurnView]:
    """Every turn of ``transcript``, its verdict and mark read from the row's ``metadata``."""
    failed = metadata.get("failed_turn")
    verdicts = _verdicts(metadata)
    views = []
    for number, turn in enumerate(transcript.turns, 1):
        parts = [f"Turn {number}"]
        if number in verdicts:
            parts.append(verdicts[number])
        if number == failed:
            parts.append("first failing turn")
        answer = _NO_ANSWER if turn.assistant is None else truncated(turn.assistant)
        views.append(
            TurnView(
                number,
                " · ".join(parts),
                number == failed,
                truncated(turn.user),
                answer,
                turn.trace,
            )
        )
    return views


def _summary(transcript: Transcript, metadata: Mapping[str, Any]) -> str:
    count = len(transcript.turns)
    said = f"{count} turn{'' if count == 1 else 's'}; ended: {_ENDINGS.get(transcript.ended)}"
    failed = metadata.get("failed_turn")
    if isinstance(failed, int):
        said += f"; turn {failed} is the first that did not pass"
    return said


def conversation_markdown(transcript: Transcript, metadata: Mapping[str, Any]) -> list[str]:
    """The ``#### Conversation`` section of a row's details in Markdown."""
    lines = ["#### Conversation", markdown_inline(_summary(transcript, metadata)), ""]
    for view in turn_views(transcript, metadata):
        title = markdown_inline(view.title)
        lines.append(f"##### {'❌ ' if view.failed else ''}{title}")
        lines += ["**User**", *markdown_fenced(view.user), "**Assistant**"]
        lines += markdown_fenced(view.assistant)
        if view.trace is not None:
            lines += [f"Trace: {markdown_inline(trace_summary(view.trace))}", ""]
            lines += [
                f"{number}. {markdown_inline(line, line_start=True)}"
                for number, line in enumerate(compact_lines(view.trace), 1)
            ]
            lines.append("")
    return lines


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def conversation_html(transcript: Transcript, metadata: Mapping[str, Any]) -> str:
    """The transcript in a static row's details: a note, then one list item per turn."""
    items = []
    for view in turn_views(transcript, metadata):
        badge = ' <span class="badge failed">first failing turn</span>' if view.failed else ""
        title = escape(view.title.replace(" · first failing turn", ""))
        parts = [
            f"<p><strong>{title}</strong>{badge}</p>",
            '<p class="muted">User</p>',
            _pre(view.user),
            '<p class="muted">Assistant</p>',
            _pre(view.assistant),
        ]
        if view.trace is not None:
            parts.append(timeline_html(view.trace))
        items.append(f"<li>{''.join(parts)}</li>")
    summary = escape(_summary(transcript, metadata))
    return f'<p class="muted">{summary}</p><ol class="turns">{"".join(items)}</ol>'


def conversation_record(transcript: Transcript, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The transcript in a row's script record: ``Cs``, the summary, and ``C``, one entry per
    turn (title, first-failing flag, user, assistant, trace summary, trace events)."""
    turns = []
    for view in turn_views(transcript, metadata):
        title = view.title.replace(" · first failing turn", "")
        entry: list[Any] = [title, 1 if view.failed else 0, view.user, view.assistant]
        if view.trace is not None:
            entry += [trace_summary(view.trace), [e.parts() for e in event_views(view.trace)]]
        turns.append(entry)
    return {"Cs": _summary(transcript, metadata), "C": turns}


CONVERSATION_SCRIPT = """    if (row.C !== undefined) {
      const turns = element("ol", { class: "turns" });
      for (const [title, failed, user, assistant, summary, events] of row.C) {
        const head = element("p", null, element("strong", null, title));
        if (failed) {
          head.append(" ", element("span", { class: "badge failed" }, "first failing turn"));
        }
        const item = element("li", null, head,
          element("p", { class: "muted" }, "User"), pre(user),
          element("p", { class: "muted" }, "Assistant"), pre(assistant));
        if (events !== undefined) {
          const list = element("ol", { class: "trace" });
          for (const [eventTitle, inputLabel, input, label, output] of events) {
            const event = element("li", null, element("p", null, eventTitle));
            if (input) event.append(element("p", { class: "muted" }, inputLabel), pre(input));
            if (label) event.append(element("p", { class: "muted" }, label), pre(output));
            list.append(event);
          }
          item.append(element("details", null, element("summary", null, summary), list));
        }
        turns.append(item);
      }
      items[2] = ["Conversation", [element("p", { class: "muted" }, row.Cs), turns]];
    }
"""
"""The part of the rows' script that shows a conversation row's turns in place of its
output (only in pages with such rows)."""
