"""What ``aeval view`` says when a package of its extra is not installed."""

from __future__ import annotations

from .._exceptions import MissingExtraError

__all__ = ["view_extra_missing"]


def view_extra_missing(missing: str) -> MissingExtraError:
    """The error to raise when ``missing`` (``"uvicorn, which is not installed"``) cannot be
    imported: it says how to install the ``view`` extra."""
    return MissingExtraError(
        f"aeval view serves its pages with {missing}: pip install 'aeval-engine[view]'"
    )
