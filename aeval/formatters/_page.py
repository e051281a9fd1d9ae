"""The one HTML page every HTML rendering is: the report, the comparison and the history.

:func:`html_page` writes the doctype, the Content-Security-Policy (``default-src 'none'``: no
network; the inline style and script admitted by their SHA-256 hashes; no form target, no base
URL), the viewport, the title, the style, the ``<main>`` element and the script, and writes
the characters HTML forbids as escapes. The style rules and the frame of the filter script
that several pages share are defined here once; each page adds its own rules in between, so
its text (and so its hash) is exactly what it was when each page wrote its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._escape import csp_hash, valid_html

__all__ = [
    "BASE_STYLE",
    "DETAILS_STYLE",
    "FILTERS_STYLE",
    "HEADINGS_STYLE",
    "PRESSED_STYLE",
    "TABLE_STYLE",
    "TABLE_TAIL_STYLE",
    "filter_page_style",
    "filter_script",
    "html_page",
    "main_style",
    "policy",
]

BASE_STYLE = """
:root { color: #1f2328; background: #ffffff; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  line-height: 1.5; }
"""
"""The colours and the font of every page (it opens every page's style)."""

HEADINGS_STYLE = """h1 { margin: 0 0 0.5rem; font-size: 1.75rem; }
h2 { margin-top: 2rem; font-size: 1.25rem; }
"""

TABLE_STYLE = "table { border-collapse: collapse; margin-top: 0.5rem; }\n"

TABLE_TAIL_STYLE = """th { background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
[hidden] { display: none !important; }
"""
"""Header cells, right-aligned numbers, and what the filters hide."""

FILTERS_STYLE = """.filters { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap;
  align-items: center; gap: 0.5rem 1rem; padding: 0.5rem 0; background: #ffffff; }
.filters [role="group"] { display: flex; flex-wrap: wrap; gap: 0.25rem; }
"""
"""The bar of filter buttons, kept in view while the rows scroll."""

PRESSED_STYLE = (
    '.filters button[aria-pressed="true"] { border-color: #0550ae; background: #0550ae;\n'
    "  color: #ffffff; }\n"
)

DETAILS_STYLE = """dt { font-weight: 600; }
dd { margin: 0; }
"""

_SCRIPT_START = """
(() => {
  "use strict";
  const form = document.getElementById("filters");
"""

_SCRIPT_END = """  form.addEventListener("submit", (event) => event.preventDefault());
  window.addEventListener("hashchange", read);
  form.hidden = false;
  read();
})();
"""


def main_style(width: str) -> str:
    """The rule of the ``<main>`` element, ``width`` wide at most (``"80rem"``)."""
    return f"main {{ max-width: {width}; margin: 0 auto; padding: 1.5rem; }}\n"


def filter_page_style(
    width: str, *, head: str, table: str, cells: str, buttons: str, rest: str
) -> str:
    """The style of a page of facts over a table its filter buttons narrow (the report, the
    comparison): the shared rules in their order, each with the page's own rules after it.

    Args:
        width: The width of ``<main>`` (see :func:`main_style`).
        head: Rules after the headings' (the banner, the facts).
        table: Rules after the table's (the table's width, its cells' borders).
        cells: Rules after the header and number cells' (what the cells hold).
        buttons: Rules after the filter bar's (its buttons).
        rest: Rules after the pressed button's.
    """
    return (
        BASE_STYLE
        + main_style(width)
        + HEADINGS_STYLE
        + head
        + TABLE_STYLE
        + table
        + TABLE_TAIL_STYLE
        + cells
        + FILTERS_STYLE
        + buttons
        + PRESSED_STYLE
        + rest
    )


def filter_script(body: str) -> str:
    """A filter script: ``body`` (which defines ``read()``, reading the view from the address,
    and wires the buttons) inside the frame every page's filters share: strict mode, the
    ``filters`` form, no submission, the view read again when the address changes, the form
    shown only when scripts run."""
    return _SCRIPT_START + body + _SCRIPT_END


def policy(*, style: str, script: str | None = None, same_origin: bool = False) -> str:
    """The Content-Security-Policy of a page with ``style`` and ``script`` inline; with
    ``same_origin`` (a page ``aeval view`` serves) its forms and scripts may also reach the
    server that served it, and nothing else."""
    scripts = "" if script is None else f"script-src '{csp_hash(script)}'; "
    reach = "connect-src 'self'; form-action 'self'" if same_origin else "form-action 'none'"
    return f"default-src 'none'; {scripts}style-src '{csp_hash(style)}'; {reach}; base-uri 'none'"


def html_page(
    *,
    title: str,
    style: str,
    body: Sequence[str],
    script: str | None = None,
    run_script: bool = True,
    same_origin: bool = False,
) -> str:
    """One self-contained page.

    Args:
        title: The ``<title>``, already escaped.
        style: The page's CSS.
        body: The lines inside ``<main>``, already escaped.
        script: The page's script, admitted by the policy.
        run_script: Whether the page includes the script (a report without rows has none to
            filter; its policy still admits the script).
        same_origin: Whether the page may submit forms and send requests to the server
            that served it (see :func:`policy`).
    """
    csp = policy(style=style, script=script, same_origin=same_origin)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{style}</style>",
        "</head>",
        "<body>",
        "<main>",
        *body,
        "</main>",
        *([f"<script>{script}</script>"] if script is not None and run_script else []),
        "</body>",
        "</html>",
        "",
    ]
    return valid_html("\n".join(parts))
