"""What a worker's delivery works with: one object instead of five threaded arguments.

The store, the bucket, the publisher, and how a provider and a tokenizer are made:
the worker function passes the real ones, tests pass fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from niah.catalog.models import ProviderName
from niah.core.interfaces import BlobStore, Provider, Publisher, ResultStore, Tokenizer

ProviderFactory = Callable[[ProviderName, str], Provider]
TokenizerFactory = Callable[[str], Tokenizer]


@dataclass(frozen=True)
class WorkerDeps:
    """The outside systems a delivery reaches (``niah.core.interfaces``)."""

    store: ResultStore
    blobs: BlobStore
    publisher: Publisher
    provider_for: ProviderFactory
    tokenizer_for: TokenizerFactory
