"""What the classroom asks of a lab is a named command: JSON arguments checked where they arrive,
JSON answers, and no closure handed to a lab's driver thread."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

import lab.classroom
from lab.classroom import attach, commands
from lab.classroom.copying import MAX_RECORDS, read_state, state_from_json
from lab.classroom.grading import now_iso
from lab.classroom.models import ExerciseProgress
from lab.engine.errors import IllegalArgument, IllegalState
from lab.runtime.actions import plan
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.classroom.helpers import live_lab, on_driver
from tests.labhelpers import make_lab, make_user

EXERCISE = "1-partitions-and-offsets"
SCENARIO = "leader-failover"

# The classroom's own thread pools (copies filled in the background, database writes): not labs.
EXECUTORS = {"_pool()", "executor"}


@pytest.fixture
def labs() -> Iterator[list[LiveLab]]:
    made: list[LiveLab] = []
    yield made
    for live in made:
        live.stop()


def _json(answer: Any) -> Any:
    assert json.loads(json.dumps(answer)) == answer
    return answer


def test_nothing_in_the_classroom_submits_a_closure_to_a_lab() -> None:
    # Read as text, not with ast: CPython 3.11's ast.parse is not safe beside other threads.
    root = Path(lab.classroom.__file__).parent
    found = [
        f"{path.relative_to(root)}: {call.group(0)}"
        for path in sorted(root.rglob("*.py"))
        for call in re.finditer(r"([\w.()]+)\.(submit|post)\(", path.read_text())
        if call.group(1) not in EXECUTORS
    ]
    assert found == []


def test_every_classroom_command_is_registered_with_a_dotted_name() -> None:
    for name in commands.COMMANDS:
        assert name.startswith("classroom.")
        with pytest.raises(IllegalArgument, match="unknown argument: typo"):
            plan(name, {"typo": 1})


def _demo(tmp_path: Path, labs: list[LiveLab]) -> LiveLab:
    demo = live_lab(
        tmp_path,
        "demo",
        rate=10.0,
        topics=(TopicSpec(name="orders", partitions=3, replication_factor=3),),
    )
    labs.append(demo)
    for key in ("a", "b", "c"):
        demo.act("produce", {"topic": "orders", "count": "5", "key": key}).result(30)
    demo.act("client-producer", {"topic": "orders", "rate": "2", "name": "feeder"}).result(30)
    demo.act("clock-pause", {}).result(10)  # a still picture to compare
    return demo


def _records(lab: LiveLab) -> dict[int, list[tuple[int, str | None, str | None]]]:
    return {
        p: [(r["offset"], r["key"], r["value"]) for r in lab.cluster.browse("orders", p, limit=1000)]
        for p in range(3)
    }


def test_a_demos_state_travels_as_json_and_fills_a_copy(tmp_path: Path, labs: list[LiveLab]) -> None:
    demo = _demo(tmp_path, labs)
    answer = _json(demo.act("classroom.read-state", {}).result(30))
    state = state_from_json(answer)
    assert state == on_driver(demo, read_state)
    assert state.record_count >= 15  # and what the feeder wrote before the clock paused
    assert [c.name for c in state.clients] == ["feeder"]

    copy = live_lab(tmp_path, "copy", topics=state.topics, rate=10.0)
    labs.append(copy)
    # A state that does not hold together is refused before the copy is touched.
    broken = {**answer, "records": [{"topic": "orders", "partition": 7, "records": []}]}
    with pytest.raises(IllegalArgument, match="orders-7 is not a partition of orders"):
        copy.act("classroom.fill", {"state": broken}).result(10)
    assert on_driver(copy, _records) == {0: [], 1: [], 2: []}

    said = _json(copy.act("classroom.fill", {"state": answer}).result(60))
    assert said == f"{state.record_count} record(s) copied into 1 topic(s)."
    copy.act("clock-pause", {}).result(10)
    original = on_driver(demo, _records)
    copied = on_driver(copy, _records)
    assert {p: copied[p][: len(original[p])] for p in original} == original


def _state(**change: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "brokers": 3,
        "config": {},
        "seed": 1,
        "topics": [{"name": "orders", "partitions": 1, "replication_factor": 1, "config": {}}],
        "records": [{"topic": "orders", "partition": 0, "records": [[0, None, "v", 0]]}],
        "committed": {},
        "clients": [],
        "skipped": [],
    }
    state.update(change)
    return state


def _exercise_args(**change: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "exercise": EXERCISE,
        "progress": 1,
        "lab": 1,
        "passed": {},
        "start": {},
        "fresh": True,
    }
    args.update(change)
    return args


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        (
            "classroom.player",
            {"action": "rewind"},
            "action must be one of play, pause, step, restart, cancel",
        ),
        ("classroom.player", {"action": "play", "speed": 2}, "unknown argument: speed"),
        ("classroom.scenario", {"scenario": "no-such"}, "there is no scenario named 'no-such'"),
        ("classroom.scenario", {"scenario": "../x"}, "scenario uses only letters, digits"),
        ("classroom.exercise", _exercise_args(exercise="nope"), "there is no exercise named 'nope'"),
        ("classroom.exercise", _exercise_args(progress="1"), "progress must be a row's id"),
        ("classroom.exercise", _exercise_args(passed={"99": "then"}), "passed must map a check's index"),
        ("classroom.exercise", _exercise_args(fresh="yes"), "fresh must be true or false, not 'yes'"),
        ("classroom.demo", {"code": "AB0", "active": True}, "code must be a join code"),
        ("classroom.demo", {"code": "ABC234", "active": 1}, "active must be true or false"),
        ("classroom.demo-copies", {"copies": -1, "copied_at": ""}, "copies must be a whole number from 0"),
        ("classroom.fill", {}, "the demo's state is not usable: it is not an object"),
        (
            "classroom.fill",
            {"state": {"brokers": 3}},
            r"the demo's state is malformed \(KeyError: 'topics'\)",
        ),
        ("classroom.fill", {"state": _state(brokers=0)}, "brokers must be between 1 and 12, not 0"),
        (
            "classroom.fill",
            {"state": _state(records=[{"topic": "orders", "partition": 0, "records": [[0, 5, "v", 0]]}])},
            "a record's key is not text",
        ),
        (
            "classroom.fill",
            {"state": _state(records=[{"topic": "audit", "partition": 0, "records": []}])},
            "records of 'audit', which is not among its topics",
        ),
        (
            "classroom.fill",
            {
                "state": _state(
                    records=[
                        {
                            "topic": "orders",
                            "partition": 0,
                            "records": [[i, None, "v", 0] for i in range(MAX_RECORDS + 1)],
                        }
                    ]
                )
            },
            f"it holds more than {MAX_RECORDS} records",
        ),
    ],
)
def test_bad_arguments_are_refused_where_they_arrive(name: str, args: dict[str, Any], match: str) -> None:
    with pytest.raises(IllegalArgument, match=match):
        plan(name, args)


@pytest.mark.django_db
def test_the_scenario_player_and_the_demo_banner_answer_in_json(tmp_path: Path, labs: list[LiveLab]) -> None:
    live = live_lab(tmp_path, "scenario", rate=10.0)
    labs.append(live)
    with pytest.raises(IllegalState, match="has no scenario player"):
        live.act("classroom.player", {"action": "play"}).result(10)
    assert _json(live.act("classroom.scenario", {"scenario": SCENARIO}).result(10)) == (
        f"Scenario {SCENARIO}: ready."
    )
    player = attach.player_on(live)
    assert player is not None
    # Asked again (every page view asks), the lab keeps the player it has.
    live.act("classroom.scenario", {"scenario": SCENARIO}).result(10)
    assert attach.player_on(live) is player
    assert _json(live.act("classroom.player", {"action": "step"}).result(10)).startswith("Step 1: ")
    live.wait_for_frame(lambda f: getattr(f.views.get(attach.PLAYER_VIEW), "mode", "") == "paused")
    assert _json(live.act("classroom.player", {"action": "cancel"}).result(10)).startswith(
        "Scenario cancelled"
    )

    with pytest.raises(IllegalState, match="shows no demo banner"):
        live.act("classroom.demo-copy-ready", {}).result(10)
    assert _json(live.act("classroom.demo", {"code": "ABC234", "active": True}).result(10)) == (
        "Demo ABC234 running."
    )
    _json(live.act("classroom.demo-copies", {"copies": 3, "copied_at": now_iso()}).result(10))
    # Copies finishing together are each counted: the lab's thread counts them one at a time.
    ready = [live.act("classroom.demo-copy-ready", {}) for _ in range(3)]
    assert sorted(_json(f.result(10)) for f in ready) == [f"{n} of 3 copies ready." for n in (1, 2, 3)]
    frame = live.wait_for_frame(lambda f: getattr(f.views.get(attach.DEMO_VIEW), "copies_ready", 0) == 3)
    assert frame.views[attach.DEMO_VIEW].code == "ABC234"


@pytest.mark.django_db(transaction=True)  # the session's writer thread writes beside the test
def test_an_exercise_is_hooked_in_and_started_over_by_commands(tmp_path: Path, labs: list[LiveLab]) -> None:
    live = live_lab(tmp_path, "exercise", rate=10.0)
    labs.append(live)
    said = _json(live.act("classroom.exercise", _exercise_args()).result(10))
    assert said.startswith(f"Exercise {EXERCISE}: setup, 0 of ")
    session = attach.exercise_on(live)
    assert session is not None
    live.wait_for_frame(lambda f: getattr(f.views.get(attach.EXERCISE_VIEW), "phase", "") == "grading", 30)
    # Asked again without "fresh" (a page opened), the session and what it graded stay.
    live.act("classroom.exercise", _exercise_args(fresh=False)).result(10)
    assert attach.exercise_on(live) is session
    # What the student added is gone with the fresh cluster: their ACLs and users too, not only topics.
    live.act("acl-create", {"name": "orders", "principal": "User:alice", "operation": "write"}).result(30)
    assert live.spec.acls
    said = _json(live.act("classroom.start-over", {}).result(30))
    assert said == "A fresh cluster: the exercise's setup plays again."
    assert live.spec.acls == ()
    # Restarted on the lab's thread with the reset: the fresh cluster is still being built.
    assert session.phase == "setup"
    assert session.passed == {}
    live.wait_for_frame(lambda f: getattr(f.views.get(attach.EXERCISE_VIEW), "phase", "") == "grading", 30)
    attach.save_later(lambda: None).result(10)  # what the session saved (rows of no one's) is written


@pytest.mark.django_db
@pytest.mark.usefixtures("stop_labs")
def test_classroom_commands_are_not_dashboard_controls() -> None:
    owner = make_user()
    made = make_lab(owner)
    client = Client()
    client.force_login(owner)
    for name in commands.COMMANDS:
        response = client.post(f"/labs/{made.slug}/act/{name}/")
        assert response.status_code == 404, name


@pytest.mark.django_db(transaction=True)
def test_an_exercise_saves_only_to_the_progress_of_its_own_lab(tmp_path: Path, labs: list[LiveLab]) -> None:
    other = make_lab(make_user("ada"))
    progress = ExerciseProgress.objects.create(user=other.owner, exercise=EXERCISE, lab=other)
    before = dict(other.settings)
    live = live_lab(tmp_path, "forged", rate=10.0)
    labs.append(live)
    # A command naming another person's progress and lab: the session runs, but writes nothing there.
    live.act("classroom.exercise", _exercise_args(progress=progress.pk, lab=other.pk)).result(10)
    live.wait_for_frame(lambda f: getattr(f.views.get(attach.EXERCISE_VIEW), "phase", "") == "grading", 30)
    attach.save_later(lambda: None).result(10)
    progress.refresh_from_db()
    other.refresh_from_db()
    assert progress.start == {}
    assert other.settings == before  # not the forged lab's topic "clicks"
