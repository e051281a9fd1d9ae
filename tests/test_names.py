"""One spelling for HTTP and the Strategy suffix, the older names kept as the same objects."""

from __future__ import annotations

import pytest

import aeval
import aeval.strategies


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("HTTPSampleLoader", "HttpSampleLoader"),
        ("HTTPTargetError", "HttpTargetError"),
        ("HTTPStatusError", "HttpStatusError"),
        ("HTTPResponseError", "HttpResponseError"),
        ("HTTPResponseTooLargeError", "HttpResponseTooLargeError"),
        ("HTTPTimeoutError", "HttpTimeoutError"),
    ],
)
def test_the_http_spelling_names_the_same_class(new: str, old: str) -> None:
    assert getattr(aeval, new) is getattr(aeval, old)
    assert new in aeval.__all__ and old in aeval.__all__


def test_gated_strategy_is_gated() -> None:
    gated = aeval.strategies.GatedStrategy(
        aeval.strategies.NotBlankStrategy(), after=[aeval.strategies.NotBlankStrategy()]
    )
    assert isinstance(gated, aeval.strategies.Gated)
    assert aeval.strategies.GatedStrategy is aeval.strategies.Gated
    assert gated.name == "NotBlankStrategy"


def test_an_http_status_error_is_caught_by_either_name() -> None:
    with pytest.raises(aeval.HttpStatusError):
        raise aeval.HTTPStatusError("HTTP 500", status=500)
