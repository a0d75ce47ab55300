"""One class decorator the adapters share: wrap each public method of a class alike.

The adapters' methods are wrapped twice over: to raise the service's errors, never
Google's (``google_errors.raises_service_errors``), and to time their calls
(``metering.waits_on``). Only a class's own public functions are wrapped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wrapping_public_methods(
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> Callable[[type[T]], type[T]]:
    """Class decorator: each public method of the class replaced by ``wrap(method)``."""

    def decorate(cls: type[T]) -> type[T]:
        for name, member in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(member):
                setattr(cls, name, wrap(member))
        return cls

    return decorate
