"""A produce through the API answers what became of its records: 200 all written, 409 some failed (Kafka's
error on each), 202 some still without an answer, with where to ask again (and the asking)."""

from __future__ import annotations

import pytest

from lab.api.errors import NotFound
from lab.labs import live_of
from lab.models import Lab
from lab.runtime.commands import records
from lab.runtime.commands.produced import ProduceRequest, Requests
from tests.api.helpers import Api, error, ok
from tests.api.test_records import _produce
from tests.api.test_topics import eventually
from tests.labhelpers import make_lab

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def _strict_topic(ada: Api, lab: Lab) -> str:
    """A topic whose one replica can never make an ISR of two: acks=all writes get NOT_ENOUGH_REPLICAS."""
    body = {"name": "strict", "partitions": 1, "replication_factor": 1, "config": {"min.insync.replicas": 2}}
    ok(ada.post(f"/labs/{lab.slug}/topics", body), 201)
    return f"/labs/{lab.slug}/topics/strict/records"


def test_a_write_below_min_insync_replicas_fails_with_not_enough_replicas(ada: Api, lab: Lab) -> None:
    path = _strict_topic(ada, lab)
    answer = ada.post(path, {"records": [{"value": "v"}, {"value": "w"}], "acks": "all", "retries": 0})
    # Not a 200 saying "failed" inside: the HTTP status says the produce did not succeed.
    refused = error(answer, 409, "NOT_ENOUGH_REPLICAS")
    assert "2 of 2 record(s) failed" in refused["message"]
    assert [(r["status"], r["error"]) for r in refused["records"]] == [("failed", "NOT_ENOUGH_REPLICAS")] * 2
    assert ok(ada.get(path, partition=0))["records"] == []
    # acks=1 does not ask for the ISR: the leader alone takes it.
    assert ok(ada.post(path, {"records": [{"value": "v"}], "acks": "1"}))["records"][0]["offset"] == 0
    # The producer made for retries=0 went with its request.
    clients = live_of(lab).submit(lambda live: sorted(live.cluster.clients)).result(10)
    assert clients == ["dashboard-acks-1"]


def test_a_produce_still_retrying_answers_202_and_where_to_ask_again(
    ada: Api, lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "WAIT_S", 0.5)
    path = _strict_topic(ada, lab)
    answer = ada.post(path, {"records": [{"key": "k", "value": "v"}], "acks": "all"})
    assert answer.status_code == 202, answer.content
    pending = answer.json()
    poll = answer.headers["Location"]
    assert poll == f"/api/labs/{lab.slug}/produce-requests/{pending['id']}" == pending["poll"]
    assert int(answer.headers["Retry-After"]) >= 1
    assert pending["status"] == "pending"
    assert [r["status"] for r in pending["records"]] == ["pending"]
    # Why it waits: Kafka's error the producer keeps retrying after, and until when.
    assert "retrying after NOT_ENOUGH_REPLICAS on strict-0" in pending["message"]
    assert "delivery.timeout.ms" in pending["message"]
    asked = ada.get(poll.removeprefix("/api"))
    assert asked.status_code == 202
    assert asked.json()["records"] == pending["records"]
    # Let the one replica be enough: the retry that follows is written, and the poll says where.
    ok(ada.patch(f"/labs/{lab.slug}/topics/strict/configs", {"set": {"min.insync.replicas": 1}}))
    done = eventually(lambda: ada.get(poll.removeprefix("/api")), lambda r: r.status_code != 202)
    assert done.status_code == 200, done.content
    assert done.json()["records"] == [
        {"status": "acknowledged", "partition": 0, "offset": 0, "error": None, "message": None}
    ]
    assert [r["value"] for r in ok(ada.get(path, partition=0))["records"]] == ["v"]


def test_a_paused_clock_leaves_records_pending_and_says_so(
    ada: Api, lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "WAIT_S", 0.3)
    ok(ada.post(f"/labs/{lab.slug}/clock/pause"))
    answer = ada.post(
        f"/labs/{lab.slug}/topics/orders/records", {"records": [{"value": "v", "partition": 2}]}
    )
    assert answer.status_code == 202, answer.content
    assert "The lab's clock is paused" in answer.json()["message"]
    ok(ada.post(f"/labs/{lab.slug}/clock/resume"))
    poll = answer.headers["Location"].removeprefix("/api")
    done = eventually(lambda: ada.get(poll), lambda r: r.status_code != 202)
    assert ok(done)["records"][0]["offset"] == 0


def test_a_produce_answered_at_once_can_be_asked_again(ada: Api, lab: Lab, grace: Api) -> None:
    sent = _produce(ada, lab, [{"value": "v", "partition": 0}])
    again = ok(ada.get(f"/labs/{lab.slug}/produce-requests/{sent['id']}"))
    assert again == sent
    error(ada.get(f"/labs/{lab.slug}/produce-requests/nope"), 404, "NOT_FOUND")
    error(ada.get(f"/labs/{lab.slug}/produce-requests/%0D"), 404, "NOT_FOUND")  # blank: unknown, not missing
    other = make_lab(ada.user, "Other")
    error(ada.get(f"/labs/{other.slug}/produce-requests/{sent['id']}"), 404, "NOT_FOUND")
    error(grace.get(f"/labs/{lab.slug}/produce-requests/{sent['id']}"), 404, "NOT_FOUND")


def test_the_process_keeps_the_newest_requests() -> None:
    kept = Requests(keep=2)
    made = [
        ProduceRequest(
            id=str(i), slug="lab", topic="t", acks="all", cluster=None, producer=None, futures=(), since_seq=0
        )  # type: ignore[arg-type]
        for i in range(3)
    ]
    for request in made:
        kept.add(request)
    assert kept.get("lab", "2") is made[2]
    assert kept.get("lab", "1") is made[1]
    with pytest.raises(NotFound, match="keeps the newest 2"):
        kept.get("lab", "0")
    with pytest.raises(NotFound):
        kept.get("another-lab", "2")
