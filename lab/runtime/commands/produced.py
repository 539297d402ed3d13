"""A produce through the API, and what became of it: each record's offset, Kafka's error, or no answer yet.

The API answers once every record has its answer, or after ``records.WAIT_S`` with what there is:

- 200: every record is written (its partition and offset; with acks=0, sent: no answer comes);
- 409: every record has its answer and some failed, each failed one with Kafka's error by name;
- 202: some records have no answer yet (the producer is still retrying: no leader, the ISR under
  ``min.insync.replicas``, a paused clock...), with ``Location`` (and ``poll``) to ask again.

Asking again (``GET /api/labs/{slug}/produce-requests/{id}``) answers the same way with the records'
outcome as it stands. The process keeps the newest ``KEEP`` produce requests, in memory.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lab.engine.errors import KafkaError
from lab.engine.limits import Text
from lab.runtime.actions import NotFound

if TYPE_CHECKING:
    from lab.engine.clients import Producer, RecordMetadata
    from lab.engine.cluster import Cluster
    from lab.engine.tasks import Pending
    from lab.runtime.live import LiveLab

KEEP = 1000
POLL_AFTER_S = 1  # Retry-After on a 202
REQUEST_ID = Text(what="a produce request's id", max_length=64)
POLL = Text(what="where to ask again", max_length=1_000)


@dataclass(slots=True, eq=False)
class ProduceRequest:
    id: str
    slug: str
    topic: str
    acks: str
    cluster: Cluster  # the cluster its records went to: a reset lab has another
    producer: Producer
    futures: Sequence[Pending[RecordMetadata]]
    since_seq: int  # the journal's cursor when the records were sent

    def answered(self) -> bool:
        return all(f.done() for f in self.futures)


class Requests:
    """The produce requests this process answered, newest last; any thread may look one up."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._by_id: OrderedDict[str, ProduceRequest] = OrderedDict()

    def add(self, request: ProduceRequest) -> None:
        with self._lock:
            self._by_id[request.id] = request
            while len(self._by_id) > self._keep:
                self._by_id.popitem(last=False)

    def get(self, slug: str, request_id: str) -> ProduceRequest:
        with self._lock:
            found = self._by_id.get(request_id)
        if found is None or found.slug != slug:
            raise NotFound(
                f"there is no produce request {request_id!r} in lab {slug} (the lab keeps the newest {self._keep})"
            )
        return found


requests = Requests()


def new_id() -> str:
    return secrets.token_hex(8)


# ----------------------------------------------------------------------------- outcomes (driver thread)


def _record(future: Pending[RecordMetadata], acks: str, gone: bool) -> dict[str, Any]:
    if not future.done():
        if gone:
            return {
                "status": "failed",
                "error": "ILLEGAL_STATE",
                "message": "the lab was reset or restarted before this record had an answer: its cluster is gone",
            }
        return {"status": "pending"}
    error = future.failed_with()
    if error is not None:
        name = error.name if isinstance(error, KafkaError) else "UNKNOWN_SERVER_ERROR"
        message = error.message if isinstance(error, KafkaError) else str(error)
        return {"status": "failed", "error": name, "message": message}
    md = future.result()
    if acks == "0":
        # No answer comes back with acks=0: the producer does not learn the offset.
        return {"status": "sent", "partition": md.partition}
    return {"status": "acknowledged", "partition": md.partition, "offset": md.offset}


def _retried(request: ProduceRequest) -> list[str]:
    """The retriable errors the producer met since these records were sent (``NOT_ENOUGH_REPLICAS on t-0``)."""
    seen: dict[str, None] = {}
    for event in request.cluster.events(request.since_seq):
        if event.kind == "produce_retry" and event.data.get("client") == request.producer.client_id:
            seen[f"{event.data.get('error')} on {event.topic}-{event.partition}"] = None
    return list(seen)


def outcome(lab: LiveLab, request: ProduceRequest, poll: str) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body that tell what became of the request's records, as it stands now."""
    gone = lab.cluster is not request.cluster
    records = [_record(f, request.acks, gone) for f in request.futures]
    base: dict[str, Any] = {"id": request.id, "acks": request.acks, "records": records}
    waiting = sum(r["status"] == "pending" for r in records)
    failed = [r for r in records if r["status"] == "failed"]
    count = len(records)
    if waiting:
        retried = _retried(request)
        why = (
            f"the producer is retrying after {', '.join(retried)}"
            if retried
            else "the producer is waiting for a leader or for the leader's answer"
        )
        paused = " The lab's clock is paused: nothing moves until it runs." if lab.clock.paused else ""
        message = (
            f"{waiting} of {count} record(s) have no answer yet: {why}, until its retries or "
            f"delivery.timeout.ms ({request.producer.delivery_timeout_ms} ms of the lab's time) run out.{paused} "
            f"GET {poll} for the outcome."
        )
        return 202, {**base, "status": "pending", "message": message, "poll": poll}
    if failed:
        first = failed[0]
        written = count - len(failed)
        message = (
            f"{len(failed)} of {count} record(s) failed ({first['error']}: {first['message']}); "
            f"{written} written. Each record says which."
        )
        return 409, {**base, "error": first["error"], "message": message}
    return 200, base
