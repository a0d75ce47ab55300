"""The stored run as a type: ``RunRecord``, and its document's one writer and one reader.

Admission (``niah.service.runs.dispatch``) builds a run's record once, with what it resolved
(the model's catalog entry, the call budget, the haystack, the cells and their shards);
``to_document`` is the only code that writes a run document whole, ``from_document`` the
only code that reads one (a listing's projection of many runs is read as ``ListedRun``,
``niah.core.runs.listing``). Every other module takes the record's attributes, so a
field is named in this package alone, and docs/architecture.md points here.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Self

from pydantic import ValidationError

from niah.catalog.models import ModelInfo, ProviderName
from niah.catalog.tiers import Tier
from niah.core.interfaces.blobs import BlobInfo
from niah.core.interfaces.result_store import RUN_CANCELLED, RUN_RUNNING, ResultStore
from niah.core.request.axes import axes_label
from niah.core.request.request_errors import describe_validation_error
from niah.core.request.request_options import DEFAULT_TASK, EffectiveLengthRule
from niah.core.request.sentinel_request import SENTINEL_CHECK, SENTINEL_KEY
from niah.core.request.spec import RunRequest
from niah.core.runs.figures import ReportFigures
from niah.errors import StoredRunError

# Times the run's lifecycle stamps on it (each a UTC datetime once set, else absent).
STAMPS = (
    "created_at",
    "updated_at",
    "published_at",
    "resumed_at",
    "cancelled_at",
    "completed_at",
    "lost_republished_at",
    "report_claimed_at",
)


@dataclass(frozen=True)
class RunRecord:
    """A run as stored at ``runs/{run_id}``, one attribute per field of its document.

    Written whole once, at admission (``to_document``); the service then merges single
    fields into it (``ResultStore.update_run``), and every reader goes through
    ``from_document``. The fields:

    Set at admission, never changed after:
        run_id: the run's ID, a hash of its request and its sources' content.
        stamp: this creation of the run (a later one under the same ID after a delete
            has another); every cell message carries it and a worker drops a stale one.
        spec: the validated request (``RunRequest``), stored as its JSON dump; with it
            the run's ``effective_length_rule`` (RULER's unless it chose NoLiMa's).
        model: the model's name (``spec.model_name``), for listings without the spec.
        model_notes: Google's lifecycle word on the model and judge when the run began.
        label: the run's name for people (the request's, else one made of model and task).
        version: the request's ``results_version`` (the harness's ``version``).
        scorer: the scorer the run's cells are scored by (``RunRequest.scorer_name``).
        haystack_uri: where the haystack's files are (``gs://bucket/prefix``).
        haystack_files: the listing the run was created with (None: too long to keep;
            the worker lists then).
        call_settings: how the model is called (temperature, thinking, the call's output
            budget, execution online or batch), stated with every result.
        total: the run's cells (the grid's, a certify run's first round, or one per row).
        counter_shards: the counter documents its cells are counted on.
        shard_totals: how many cells each counter shard counts, by shard.
        source_files, source_rows: a run over Google's published MRCR v2 rows: the
            files, and each row kept (file index, row, tokens, byte offset and length).
        certify: a certify run's plan and the samples per length asked so far; later its
            refusal or finish (niah.core.results.certify_run).
        primer_cell: the cell published alone ahead of the rest (cache-aware dispatch).
        created_by: who started the run (only they or an operator may change it).
        worst_case: the spend its admission held (niah.core.money.spend.WorstCase).
        sentinel_key: a sentinel run's request key: which of its runs pair with it.

    Changed as the run goes:
        status: running, cancelled, complete, or report_failed.
        done, failed, totals: its cells' counts and token and cost totals, summed from
            the counter shards by the store (``get_run(counts=True)``).
        primer_released: its primer was answered, and the rest published.
        reasks: the re-asks (resume, retry) taken so far, each holding spend of its own.
        batch_round, batch_jobs: a batch run's submission round and its jobs.
        token_count: how the model counts the run's haystack, once measured.
        report: where its report was written; report_error: why it failed;
            report_claim: who renders it now.
        figures: what the report kept on the run (``ReportFigures``).
        batch_stopped, batch_error: why a batch run's output was not used (its jobs').
        stamps: its lifecycle times (``STAMPS``).
        swept: how many cells the sweep published again; sentinel_check: its alert.

    Not a field of the document:
        admitted: the document holds a request (admission wrote it). A document made
            another way (by hand, a test's) is read with the default request, which
            nothing may act on: the sweep would publish that request's 225 cells.
    """

    run_id: str
    spec: RunRequest
    stamp: str = ""
    status: str = RUN_RUNNING
    model: str = ""
    model_notes: tuple[str, ...] = ()
    label: str = ""
    version: int = 1
    scorer: str = ""
    haystack_uri: str = ""
    haystack_files: tuple[BlobInfo, ...] | None = None
    call_settings: Mapping[str, Any] = field(default_factory=dict)
    total: int = 0
    counter_shards: int = 1
    shard_totals: Mapping[str, int] = field(default_factory=dict)
    source_files: tuple[str, ...] | None = None
    source_rows: tuple[Mapping[str, int], ...] | None = None
    certify: Mapping[str, Any] | None = None
    primer_cell: str | None = None
    created_by: str | None = None
    worst_case: Mapping[str, Any] | None = None
    sentinel_key: str | None = None
    done: int = 0
    failed: int = 0
    totals: Mapping[str, Any] = field(default_factory=dict)
    primer_released: bool = False
    reasks: int = 0
    batch_round: int = 0
    batch_jobs: tuple[Mapping[str, Any], ...] = ()
    token_count: Mapping[str, Any] | None = None
    report: Mapping[str, Any] | None = None
    report_error: Mapping[str, Any] | None = None
    report_claim: str | None = None
    figures: ReportFigures = field(default_factory=ReportFigures)
    batch_stopped: str | None = None
    batch_error: str | None = None
    stamps: Mapping[str, dt.datetime] = field(default_factory=dict)
    swept: int = 0
    sentinel_check: Mapping[str, Any] | None = None
    admitted: bool = True

    # What the record resolves of its spec, once per record (the spec keeps the entry).
    @property
    def model_info(self) -> ModelInfo | None:
        """The catalog's entry for the run's model (None: not in the catalog)."""
        return self.spec.catalog_model()

    @property
    def provider(self) -> ProviderName:
        """Who serves the run's model."""
        return self.spec.provider()

    @property
    def tier(self) -> Tier:
        """The pricing tier the run's calls ask for (standard unless the request says)."""
        return self.spec.tier or "standard"

    @property
    def effective_length_rule(self) -> EffectiveLengthRule:
        """How the run's effective length is judged: the run's choice, RULER's by default."""
        return self.spec.rule()

    @property
    def spec_fields(self) -> dict[str, Any]:
        """The request as its document stores it (JSON): its options by their names."""
        return self.spec.model_dump(mode="json")

    @property
    def cancelled(self) -> bool:
        """Cancelled (``niah cancel``): its cells are acknowledged, not answered."""
        return self.status == RUN_CANCELLED

    @property
    def is_certify(self) -> bool:
        """A certify run: it grows round by round; its failed samples are never retried."""
        return self.spec.is_certify()

    @property
    def certify_samples(self) -> dict[int, int]:
        """The samples per length a certify run has asked for so far (empty for others)."""
        kept = (self.certify or {}).get("samples") or {}
        return {int(length): int(count) for length, count in kept.items()}

    def batch_job_entries(self) -> list[dict[str, Any]]:
        """Its batch jobs as fresh copies: a step changes them, then saves what changed."""
        return [copy.deepcopy(dict(job)) for job in self.batch_jobs]

    def batch_job(self, name: str) -> dict[str, Any] | None:
        """Its batch job called ``name``, as a copy to change and save back (None: none)."""
        return next((job for job in self.batch_job_entries() if job.get("name") == name), None)

    def stamped(self, name: str) -> dt.datetime | None:
        """One of its lifecycle times (``STAMPS``), or None where not set."""
        return self.stamps.get(name)

    def with_fields(self, **changes: Any) -> Self:
        """The record with ``changes`` (as a merge into its document would leave it)."""
        return replace(self, **changes)

    def to_document(self) -> dict[str, Any]:
        """The run document: the one writer of a whole run (``ResultStore.create_run``)."""
        doc: dict[str, Any] = {
            "run_id": self.run_id,
            "stamp": self.stamp,
            "spec": self.spec.model_dump(mode="json"),
            "model": self.model,
            "model_notes": list(self.model_notes),
            "label": self.label,
            "version": self.version,
            "scorer": self.scorer,
            "haystack_uri": self.haystack_uri,
            # Firestore holds no nested arrays: each file as a map.
            "haystack_files": [
                {"name": f.name, "size": f.size, "fingerprint": f.fingerprint}
                for f in self.haystack_files or ()
            ],
            "status": self.status,
            "call_settings": dict(self.call_settings),
            "total": self.total,
            "counter_shards": self.counter_shards,
            "shard_totals": dict(self.shard_totals),
            "done": self.done,
            "failed": self.failed,
        }
        optional: dict[str, Any] = {
            "source_files": list(self.source_files) if self.source_files is not None else None,
            "source_rows": [dict(r) for r in self.source_rows] if self.source_rows else None,
            "certify": dict(self.certify) if self.certify else None,
            "primer_cell": self.primer_cell,
            "created_by": self.created_by,
            "worst_case": dict(self.worst_case) if self.worst_case else None,
            SENTINEL_KEY: self.sentinel_key,
            "totals": dict(self.totals) or None,
            "primer_released": self.primer_released or None,
            "reasks": self.reasks or None,
            "batch_round": self.batch_round or None,
            "batch_jobs": [dict(job) for job in self.batch_jobs] or None,
            "token_count": dict(self.token_count) if self.token_count else None,
            "report": dict(self.report) if self.report else None,
            "report_error": dict(self.report_error) if self.report_error else None,
            "report_claim": self.report_claim,
            "swept": self.swept or None,
            "batch_stopped": self.batch_stopped,
            "batch_error": self.batch_error,
            SENTINEL_CHECK: dict(self.sentinel_check) if self.sentinel_check else None,
        }
        doc |= {name: value for name, value in optional.items() if value is not None}
        doc |= self.figures.to_document() | dict(self.stamps)
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], run_id: str | None = None) -> RunRecord:
        """The record of a stored run document: the one reader of a run's fields.

        ``run_id``: the document's ID where the document does not hold it (a listing).
        The spec is validated again here (stored after validation, it passes, unless a
        later version's checks refuse it: then ``StoredRunError`` names the field).
        """
        get = doc.get
        run_id = str(get("run_id") or run_id or "")
        try:
            spec = RunRequest.model_validate(get("spec") or {})
        except ValidationError as error:
            raise StoredRunError.of(run_id, _first_problem(error)) from error
        listed = get("haystack_files") or None
        rows = get("source_rows")
        files = get("source_files")
        return cls(
            run_id=run_id,
            spec=spec,
            stamp=str(get("stamp") or ""),
            status=str(get("status") or RUN_RUNNING),
            model=str(get("model") or ""),
            model_notes=tuple(get("model_notes") or ()),
            # Every run is labelled at admission; a document made by hand (a test, the
            # docs' demo run) is called as a run's default label is.
            label=str(get("label") or run_label(doc)),
            version=int(get("version") or 1),
            scorer=str(get("scorer") or ""),
            haystack_uri=str(get("haystack_uri") or ""),
            haystack_files=tuple(
                BlobInfo(str(f["name"]), int(f["size"]), str(f["fingerprint"])) for f in listed
            )
            if listed
            else None,
            call_settings=dict(get("call_settings") or {}),
            total=int(get("total") or 0),
            counter_shards=int(get("counter_shards") or 1),
            shard_totals={str(k): int(v) for k, v in (get("shard_totals") or {}).items()},
            source_files=tuple(str(f) for f in files) if files is not None else None,
            source_rows=tuple(dict(r) for r in rows) if rows else None,
            certify=get("certify") or None,
            primer_cell=get("primer_cell") or None,
            created_by=get("created_by") or None,
            worst_case=get("worst_case") or None,
            sentinel_key=get(SENTINEL_KEY) or None,
            done=int(get("done") or 0),
            failed=int(get("failed") or 0),
            totals=dict(get("totals") or {}),
            primer_released=bool(get("primer_released")),
            reasks=int(get("reasks") or 0),
            batch_round=int(get("batch_round") or 0),
            batch_jobs=tuple(dict(job) for job in get("batch_jobs") or ()),
            token_count=get("token_count") or None,
            report=get("report") or None,
            report_error=get("report_error") or None,
            report_claim=get("report_claim") or None,
            figures=ReportFigures.from_document(doc),
            batch_stopped=get("batch_stopped") or None,
            batch_error=get("batch_error") or None,
            stamps={name: doc[name] for name in STAMPS if doc.get(name) is not None},
            swept=int(get("swept") or 0),
            sentinel_check=get(SENTINEL_CHECK) or None,
            admitted=bool(get("spec")),
        )


def _first_problem(error: ValidationError) -> str:
    """The first failing field of a stored request and what is wrong, as a 400 says it."""
    field, message = describe_validation_error(error)
    more = error.error_count() - 1
    return f"{field}: {message}" + (f"; and {more} more" if more else "")


def with_job_documents(doc: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run document with each batch job's own document merged over its ``batch_jobs`` entry.

    The store's part of reading a batch run: the list holds what each job was submitted
    as, its own document what its poll, ingest and settle made of it (its fields win), so
    a settle never rewrites the list another job's settle is writing.
    """
    by_name = {job.get("name"): job for job in jobs}
    listed = doc.get("batch_jobs") or []
    merged = [{**job, **by_name.get(job.get("name"), {})} for job in listed]
    return doc | {"batch_jobs": merged} if merged else doc


def run_label(doc: Mapping[str, Any]) -> str:
    """What a person calls a stored run (its document, or a listing's projection of it).

    Its ``--label``, else "model · task".

    A sentinel's run, unlabelled, is called by its sentinel and firing.

    Runs stored before labels existed have none, and read as the default.
    """
    if doc.get("label"):
        return str(doc["label"])
    spec = doc.get("spec") or {}
    if spec.get("sentinel"):  # one of a sentinel's runs: which, and when it was due
        when = str(spec.get("scheduled_at") or "")[:16].replace("T", " ")
        return f"sentinel {spec['sentinel']} · {when} UTC"
    task = spec.get("task", DEFAULT_TASK)
    return f"{doc.get('model') or 'model not recorded'} · {task}{axes_label(spec)}"


def stored_run(store: ResultStore, run_id: str, *, counts: bool = True) -> RunRecord | None:
    """The run as stored now (``counts``: with its shards' counts summed in), or None."""
    doc = store.get_run(run_id, counts=counts)
    return RunRecord.from_document(doc, run_id) if doc is not None else None


@dataclass(frozen=True)
class RunState:
    """What a projection of the run reads every delivery: which creation, and its status."""

    stamp: str
    status: str


# The fields ``run_state`` reads: a projection, not the whole document (its listing).
STATE_FIELDS = ("stamp", "status")


def run_state(store: ResultStore, run_id: str) -> RunState | None:
    """The run's stamp and status (one projected read), or None for a run that is gone."""
    doc = store.get_run(run_id, counts=False, fields=STATE_FIELDS)
    if doc is None:
        return None
    return RunState(str(doc.get("stamp") or ""), str(doc.get("status") or RUN_RUNNING))


def run_owner(store: ResultStore, run_id: str) -> tuple[bool, str | None]:
    """Whether the run exists, and who started it (one projected read)."""
    doc = store.get_run(run_id, counts=False, fields=["created_by"])
    if doc is None:
        return False, None
    return True, doc.get("created_by") or None
