"""Both result stores offer every ``ResultStore`` method, with its parameters.

The Firestore store is composed of one part per concern and the unit tests' fake is
written apart, so a method added to the interface and left out of a part (or of the
fake) fails here, by name, rather than where a job first calls it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from niah.cloud.store import FirestoreStore
from niah.core.interfaces import ResultStore
from tests.fake_store import MemoryStore

INTERFACE = sorted(
    name
    for name, member in vars(ResultStore).items()
    if not name.startswith("_") and callable(member)
)


def parameters(method: Callable[..., Any]) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(method).parameters.values()]


@pytest.mark.parametrize("store", [FirestoreStore, MemoryStore], ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("name", INTERFACE)
def test_the_store_offers_the_interface_s_method(store: type, name: str) -> None:
    assert parameters(getattr(store, name)) == parameters(getattr(ResultStore, name))
