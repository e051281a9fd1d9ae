"""Task-group helpers."""

from __future__ import annotations

__all__ = ["unwrap_single_group"]


class unwrap_single_group:
    """Re-raise the lone exception of a task group's ``ExceptionGroup`` as itself.

    A task group wraps whatever its tasks raise in an ``ExceptionGroup``; when there is exactly
    one exception (nested groups included), callers of aeval get that exception, as they would
    from a plain ``await``.
    """

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            inner = exc.exceptions[0]
            if isinstance(inner, BaseExceptionGroup):
                return self.__exit__(type(inner), inner, tb)
            raise inner
        return False
