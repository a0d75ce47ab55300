"""What Google bills for the service's own work, beside the model: list prices and sums.

Operations are counted at the adapters (``niah.cloud.metering``); function time is a
request's wall seconds (Cloud Run's request-based billing charges the instance's vCPU
and memory for as long as a request runs, shared by the requests it serves at once).
Prices are the list prices for the deployment's region (us-central1, ``infra/``),
beyond each free tier, read 2026-11-26:

- Firestore (Standard edition, regional): $0.03 per 100,000 document reads, $0.09 per
  100,000 writes. Google's location table (cloud.google.com/firestore/pricing) did not
  render in the stored copy; the US-region figures are from airbyte.com's Firestore
  pricing guide, and match the multi-region $0.06 / $0.18 / $0.02 Google lists halved.
  Deletes at $0.01 per 100,000 are that halving too, not read from a table.
- Pub/Sub: $40 per TiB of throughput, publish and delivery each, at least 1,000 bytes
  per publish, push or pull request (cloud.google.com/pubsub/pricing).
- Cloud Storage: class A $0.005 and class B $0.0004 per 1,000 operations
  (cloud.google.com/storage/pricing-examples).
- Cloud Run, request-based billing, tier 1: $0.000024 per vCPU-second, $0.0000025 per
  GiB-second, $0.40 per million requests (cloud.google.com/run/pricing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FIRESTORE_READ_USD = 0.03 / 100_000
FIRESTORE_WRITE_USD = 0.09 / 100_000
FIRESTORE_DELETE_USD = 0.01 / 100_000
PUBSUB_USD_PER_BYTE = 40.0 / 2**40
PUBSUB_MINIMUM_BYTES = 1_000  # per publish, push or pull request
GCS_CLASS_A_USD = 0.005 / 1_000
GCS_CLASS_B_USD = 0.0004 / 1_000
RUN_VCPU_SECOND_USD = 0.000024
RUN_GIB_SECOND_USD = 0.0000025
RUN_REQUEST_USD = 0.40 / 1_000_000


@dataclass(frozen=True)
class FunctionShape:
    """A deployed function's size: what one second of one of its requests bills."""

    vcpu: float
    memory_gib: float
    concurrency: int  # requests one instance serves at once, sharing its seconds


# The worker as infra/functions.tf deploys it: 1 vCPU, 2 GiB; concurrency is
# var.worker_concurrency, whose default the cost is shown at.
WORKER = FunctionShape(vcpu=1.0, memory_gib=2.0, concurrency=4)


def operations_usd(operations: Mapping[str, float], *, push_deliveries: float = 0) -> float:
    """The list price of counted operations (``niah.cloud.metering`` kinds).

    Published bytes as counted (publishes are batched); each push delivery at the
    1,000-byte minimum of a request (a cell message is smaller).
    """
    published = float(operations.get("pubsub_bytes", 0))
    pushed = push_deliveries * PUBSUB_MINIMUM_BYTES
    return (
        operations.get("firestore_reads", 0) * FIRESTORE_READ_USD
        + operations.get("firestore_writes", 0) * FIRESTORE_WRITE_USD
        + operations.get("firestore_deletes", 0) * FIRESTORE_DELETE_USD
        + (published + pushed) * PUBSUB_USD_PER_BYTE
        + operations.get("gcs_class_a", 0) * GCS_CLASS_A_USD
        + operations.get("gcs_class_b", 0) * GCS_CLASS_B_USD
    )


def function_usd(wall_seconds: float, requests: float, shape: FunctionShape = WORKER) -> float:
    """Cloud Run's charge for ``requests`` taking ``wall_seconds`` in all, on ``shape``."""
    instance_seconds = wall_seconds / shape.concurrency
    per_second = shape.vcpu * RUN_VCPU_SECOND_USD + shape.memory_gib * RUN_GIB_SECOND_USD
    return instance_seconds * per_second + requests * RUN_REQUEST_USD
