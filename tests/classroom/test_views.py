"""The classroom's pages and controls, through Django's test client: who may do what, and what happens."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from lab.accounts.models import Role, set_role
from lab.classroom import attach, content
from lab.classroom.models import Demo, DemoCopy, DemoViewer, ExerciseProgress, ScenarioLab
from lab.hosts import parse_listen
from lab.labs import live_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.classroom.helpers import on_driver
from tests.labhelpers import make_lab, make_user
from tests.processes import wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]

EXERCISE = "1-partitions-and-offsets"


@pytest.fixture(autouse=True)
def memory_store(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""


@pytest.fixture(autouse=True)
def commands_are_json(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every command the pages send a lab, and every answer, survives JSON: it could go to another process."""
    sent: list[str] = []
    wrong: list[str] = []
    act = LiveLab.act

    def survives(value: Any) -> bool:
        try:
            return bool(json.loads(json.dumps(value)) == value)
        except (TypeError, ValueError):
            return False

    def checked(live: LiveLab, name: str, args: Mapping[str, Any], *, by: str = "") -> Future[Any]:
        sent.append(name)
        if not survives(args):
            wrong.append(f"{name}({args!r})")
        future = act(live, name, args, by=by)

        def answered(f: Future[Any]) -> None:
            if f.exception() is None and not survives(f.result()):
                wrong.append(f"{name} answered {f.result()!r}")

        future.add_done_callback(answered)
        return future

    monkeypatch.setattr(LiveLab, "act", checked)
    yield sent
    assert wrong == []


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _instructor(name: str = "prof") -> Any:
    user = make_user(name)
    set_role(user, Role.INSTRUCTOR)
    return user


def _running(lab: Lab) -> LiveLab:
    live = live_of(lab)
    live.ready.result(30)
    assert live.state == "running", live.error
    return live


# ---------------------------------------------------------------------------- who may


def test_anonymous_visitors_get_the_login_page_everywhere() -> None:
    owner = make_user()
    lab = make_lab(owner)
    anonymous = Client()
    for path in ("/exercises/", f"/exercises/{EXERCISE}/", "/scenarios/", "/classroom/"):
        response = anonymous.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/"), path
    for path in (
        f"/exercises/{EXERCISE}/start/",
        f"/exercises/{EXERCISE}/restart/",
        f"/exercises/{EXERCISE}/answer/0/",
        "/demos/join/",
        f"/classroom/labs/{lab.slug}/demo/",
        f"/classroom/labs/{lab.slug}/demo/copy/",
        f"/classroom/labs/{lab.slug}/scenario/play/",
        "/scenarios/leader-failover/open/",
    ):
        response = anonymous.post(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/"), path
    htmx = anonymous.post(f"/classroom/labs/{lab.slug}/scenario/play/", headers={"HX-Request": "true"})
    assert htmx.status_code == 401
    assert ExerciseProgress.objects.count() == 0
    assert Demo.objects.count() == 0


def test_students_get_403_on_instructor_pages_and_actions() -> None:
    student = make_user("sam")
    lab = make_lab(student)
    client = _client(student)
    assert client.get("/classroom/").status_code == 403
    assert client.post(f"/classroom/labs/{lab.slug}/demo/").status_code == 403
    assert client.post(f"/classroom/labs/{lab.slug}/demo/copy/").status_code == 403
    assert client.post(f"/classroom/labs/{lab.slug}/demo/end/").status_code == 403
    assert client.get(f"/classroom/labs/{lab.slug}/demo/viewers/").status_code == 403
    assert Demo.objects.count() == 0


def test_another_persons_lab_is_404_for_classroom_controls() -> None:
    theirs = make_lab(_instructor("owner"), "Theirs")
    ScenarioLab.objects.create(lab=theirs, scenario="leader-failover")
    other = _client(_instructor("other"))  # an instructor may see it, but not act on it
    assert other.post(f"/classroom/labs/{theirs.slug}/demo/").status_code == 403
    assert other.post(f"/classroom/labs/{theirs.slug}/scenario/play/").status_code == 403
    student = _client(make_user("sam"))
    assert student.post(f"/classroom/labs/{theirs.slug}/demo/").status_code == 404
    assert student.post(f"/classroom/labs/{theirs.slug}/scenario/play/").status_code == 404
    assert student.get(f"/labs/{theirs.slug}/").status_code == 404
    assert Demo.objects.count() == 0


def test_forms_need_a_csrf_token() -> None:
    student = make_user("sam")
    client = Client(enforce_csrf_checks=True)
    client.force_login(student)
    assert client.post(f"/exercises/{EXERCISE}/start/").status_code == 403
    assert client.post("/demos/join/", {"code": "ABCDEF"}).status_code == 403
    assert client.post(f"/exercises/{EXERCISE}/answer/0/", {"choice": "3"}).status_code == 403
    assert ExerciseProgress.objects.count() == 0


def test_unknown_exercises_questions_and_scenarios_are_404() -> None:
    client = _client(make_user())
    assert client.get("/exercises/no-such-thing/").status_code == 404
    assert client.post("/exercises/no-such-thing/start/").status_code == 404
    assert client.post(f"/exercises/{EXERCISE}/answer/9/", {"choice": "0"}).status_code == 404
    assert client.post("/scenarios/no-such-scenario/open/").status_code == 404
    assert Lab.objects.count() == 0


# ---------------------------------------------------------------------------- exercises


def test_the_list_shows_every_exercise_with_what_it_covers_and_its_progress() -> None:
    student = make_user()
    ExerciseProgress.objects.create(user=student, exercise="3-hw-and-leo", checks={"0": "now"})
    page = _client(student).get("/exercises/").content.decode()
    for title in (
        "Partitions and offsets",
        "Replication and the ISR",
        "Retention",
        "Consumer groups and rebalances",
    ):
        assert title in page
    assert "Where does a keyed record land, and what does its offset count?" in page
    assert '<span class="topic-chip">partitions</span>' in page
    assert re.search(r'data-exercise="3-hw-and-leo" data-status="in-progress"', page)
    assert "in progress: 1 of 1 check passed" in page
    assert re.search(r'data-exercise="1-partitions-and-offsets" data-status="not-started"', page)
    assert 'id="form-join"' in page


def test_instructions_are_markdown_and_never_raw_html(settings: Settings, tmp_path: Any) -> None:
    source = (content.exercises_dir() / f"{EXERCISE}.yaml").read_text()
    (tmp_path / "x.yaml").write_text(
        source.replace(
            "instructions: |\n",
            "instructions: |\n  <script>alert('x')</script> [bad](javascript:alert(1))\n\n",
        )
    )
    settings.LAB_EXERCISES_DIR = tmp_path
    page = _client(make_user()).get("/exercises/x/").content.decode()
    assert "<strong>partitions</strong>" in page
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page or "&lt;script&gt;" in page
    assert 'href="javascript:' not in page


@pytest.mark.django_db(transaction=True)
def test_start_an_exercise_and_its_check_turns_passed_and_is_saved() -> None:
    student = make_user()
    client = _client(student)
    response = client.post(f"/exercises/{EXERCISE}/start/")
    progress = ExerciseProgress.objects.get(user=student, exercise=EXERCISE)
    assert progress.lab is not None
    assert response["Location"] == progress.lab.get_absolute_url()
    assert progress.lab.brokers == 3
    assert progress.lab.settings["seed"] == 1
    # Starting again opens the same lab.
    assert client.post(f"/exercises/{EXERCISE}/start/")["Location"] == progress.lab.get_absolute_url()
    assert Lab.objects.filter(owner=student).count() == 1

    live = _running(progress.lab)
    session = attach.exercise_session(progress.lab.slug)
    assert session is not None
    assert wait_until(lambda: session.view.phase == "grading", 20), session.view
    # The start snapshot and the spec the setup built are saved.
    assert wait_until(lambda: ExerciseProgress.objects.get(pk=progress.pk).start != {}, 10)
    assert wait_until(lambda: Lab.objects.get(pk=progress.lab.pk).settings["topics"] != [], 10)

    page = client.get(progress.lab.get_absolute_url()).content.decode()
    assert 'id="view-exercise"' in page
    assert 'id="exercise-checks"' in page
    assert "clicks-3 holds the five records with key abc" in page
    assert 'data-passed="false"' in page
    assert "Show the solution" not in page  # for instructors only

    # The lab page's Produce control, as the student uses it.
    done = client.post(
        f"/labs/{progress.lab.slug}/act/produce/", {"topic": "clicks", "count": "5", "key": "abc"}
    )
    assert "5 of 5" in done.content.decode()
    assert wait_until(lambda: ExerciseProgress.objects.get(pk=progress.pk).completed is not None, 10)
    saved = ExerciseProgress.objects.get(pk=progress.pk)
    assert list(saved.checks) == ["0"]
    frame = live.wait_for_frame(lambda f: getattr(f.views.get("exercise"), "complete", False))
    html = live.render_full(frame)
    assert re.search(r'<div id="exercise-checks" hx-swap-oob="true"[^>]*data-complete="true"', html)
    assert "Exercise complete" in html
    listing = client.get("/exercises/").content.decode()
    assert re.search(r'data-exercise="1-partitions-and-offsets" data-status="complete"', listing)


@pytest.mark.django_db(transaction=True)
def test_start_over_plays_the_setup_again_on_a_fresh_cluster(commands_are_json: list[str]) -> None:
    student = make_user()
    client = _client(student)
    client.post(f"/exercises/{EXERCISE}/start/")
    progress = ExerciseProgress.objects.get(user=student)
    assert progress.lab is not None
    live = _running(progress.lab)
    session = attach.exercise_session(progress.lab.slug)
    assert session is not None
    assert wait_until(lambda: session.view.phase == "grading", 20)
    client.post(f"/labs/{progress.lab.slug}/act/produce/", {"topic": "clicks", "count": "5", "key": "abc"})
    client.post(f"/exercises/{EXERCISE}/answer/0/", {"choice": "3"})
    assert wait_until(lambda: ExerciseProgress.objects.get(pk=progress.pk).completed is not None, 10)

    again = client.post(f"/exercises/{EXERCISE}/restart/")
    assert again["Location"] == progress.lab.get_absolute_url()
    assert wait_until(lambda: session.view.phase == "grading", 20), session.view
    assert not session.view.checks[0].passed
    records = on_driver(live, lambda lab: len(lab.cluster.browse("clicks", 3)))
    assert records == 0  # a fresh cluster: the five records are gone
    saved = ExerciseProgress.objects.get(pk=progress.pk)
    assert saved.checks == {}
    assert saved.completed is None
    assert saved.answers == {"0": 3}  # a prediction stays made
    assert Lab.objects.filter(owner=student).count() == 1
    assert {"classroom.exercise", "classroom.start-over"} <= set(commands_are_json)


@pytest.mark.django_db(transaction=True)
def test_an_exercise_past_the_students_limit_says_so_on_its_page(settings: Settings) -> None:
    settings.LAB_MAX_LABS_PER_USER = 1
    student = make_user()
    client = _client(student)
    client.post("/scenarios/consumer-rewind/open/")  # the one lab Sam may have
    refused = client.post(f"/exercises/{EXERCISE}/start/")
    assert refused.status_code == 409
    page = refused.content.decode()
    assert re.search(
        r'<p class="banner bad" role="alert" id="start-error">You have 1 lab already, the most a student may '
        r"have: delete one you no longer need \(Your labs, on the home page\) first.</p>",
        page,
    )
    assert "Start: make my lab for it" in page
    assert Lab.objects.filter(owner=student).count() == 1
    assert not ExerciseProgress.objects.filter(user=student, exercise=EXERCISE).exists()  # nothing changed
    # An exercise whose lab the student already has opens it, at the limit or not.
    settings.LAB_MAX_LABS_PER_USER = 2
    other = "2-replication-and-the-isr"
    own = make_lab(student, "Kept from before")  # two of two
    ExerciseProgress.objects.create(user=student, exercise=other, lab=own)
    assert client.post(f"/exercises/{other}/start/")["Location"] == own.get_absolute_url()


def test_a_prediction_is_saved_once_and_then_explained() -> None:
    student = make_user()
    client = _client(student)
    url = f"/exercises/{EXERCISE}/answer/0/"
    bad = client.post(url, {"choice": "seven"}, headers={"HX-Request": "true"})
    assert bad.status_code == 400
    assert "Pick one of the answers first" in bad.content.decode()
    assert ExerciseProgress.objects.get(user=student).answers == {}
    out_of_range = client.post(url, {"choice": "6"})
    assert out_of_range.status_code == 400
    good = client.post(url, {"choice": "3"}, headers={"HX-Request": "true"}).content.decode()
    assert "✓ You predicted it." in good
    assert "murmur2" in good  # the explanation
    assert ExerciseProgress.objects.get(user=student).answers == {"0": 3}
    again = client.post(url, {"choice": "1"}).content.decode()
    assert ExerciseProgress.objects.get(user=student).answers == {"0": 3}
    assert "(your prediction)" in again
    wrong = client.post(f"/exercises/{EXERCISE}/answer/1/", {"choice": "2"}).content.decode()
    assert "Not what happens" in wrong


def test_instructors_see_the_solution_and_the_class_progress() -> None:
    prof = _instructor()
    sam, kim = make_user("sam"), make_user("kim")
    lab = make_lab(sam, "Sam's")
    # Done before (its start snapshot kept): opening the lab grades it again and saves nothing new.
    ExerciseProgress.objects.create(
        user=sam,
        exercise=EXERCISE,
        lab=lab,
        checks={"0": "t"},
        completed="2026-01-01T00:00Z",
        start={"time_ms": 0},
    )
    ExerciseProgress.objects.create(user=kim, exercise="4-failover", checks={})
    ExerciseProgress.objects.create(user=kim, exercise="3-hw-and-leo", lab=make_lab(kim, "Kim's"))
    client = _client(prof)
    page = client.get("/classroom/").content.decode()
    assert re.search(r'<tr data-student="kim">', page)
    assert re.search(r'<tr data-student="sam">', page)
    assert 'data-student="prof"' not in page  # instructors are not students
    sam_row = page[page.index('<tr data-student="sam">') :]
    assert re.search(r'data-exercise="1-partitions-and-offsets" data-status="complete"', sam_row)
    kim_row = page[page.index('<tr data-student="kim">') : page.index('<tr data-student="sam">')]
    assert re.search(r'data-exercise="3-hw-and-leo" data-status="in-progress"', kim_row)
    assert re.search(r'data-exercise="4-failover" data-status="not-started"', kim_row)
    assert f'href="/labs/{lab.slug}/"' in page
    assert "Show the solution (instructors)" in client.get(f"/exercises/{EXERCISE}/").content.decode()
    # An instructor sees a student's lab, read-only.
    lab_page = client.get(f"/labs/{lab.slug}/").content.decode()
    assert 'data-readonly="true"' in lab_page
    assert "sam's lab, read-only." in lab_page
    assert client.post(f"/labs/{lab.slug}/act/kill/", {"broker": "1"}).status_code == 403


# ---------------------------------------------------------------------------- demos


def test_a_demo_gets_a_join_code_and_students_follow_it_read_only() -> None:
    prof = _instructor()
    lab = make_lab(prof, "Failover demo")
    teacher = _client(prof)
    started = teacher.post(f"/classroom/labs/{lab.slug}/demo/")
    assert started.status_code == 302
    assert started["Location"] == f"/labs/{lab.slug}/?present=1"
    demo = Demo.objects.get(lab=lab)
    presenter = teacher.get(started["Location"]).content.decode()
    assert f'<strong class="join-code" id="join-code">{demo.join_code}</strong>' in presenter
    assert 'id="presenter-mode"' in presenter
    assert "Hand every student a copy" in presenter
    assert "data-readonly" not in presenter

    student = make_user("sam")
    client = _client(student)
    assert client.get(f"/labs/{lab.slug}/").status_code == 404  # not joined yet
    bad = client.post("/demos/join/", {"code": "NOPE1!"})
    assert bad.status_code == 400
    assert "is not a join code" in bad.content.decode()
    unknown = client.post("/demos/join/", {"code": "ZZZZZZ" if demo.join_code != "ZZZZZZ" else "YYYYYY"})
    assert unknown.status_code == 400
    assert "No demo has the code" in unknown.content.decode()
    assert client.post("/demos/join/", {"code": ""}).status_code == 400
    assert DemoViewer.objects.count() == 0

    joined = client.post("/demos/join/", {"code": f" {demo.join_code.lower()} "})
    assert joined["Location"] == f"/labs/{lab.slug}/"
    assert DemoViewer.objects.filter(demo=demo, user=student).exists()
    page = client.get(f"/labs/{lab.slug}/").content.decode()
    assert 'data-readonly="true"' in page
    assert "You are following prof's demo, read-only." in page
    assert re.search(r'<div class="board" hx-disable>', page)
    assert re.search(r'<section class="clockbar" aria-label="Clock" hx-disable>', page)
    assert "Hand every student a copy" not in page
    # Every control answers 403 to a viewer.
    assert client.post(f"/labs/{lab.slug}/act/kill/", {"broker": "1"}).status_code == 403
    assert client.post(f"/labs/{lab.slug}/act/clock-pause/").status_code == 403
    assert client.post(f"/classroom/labs/{lab.slug}/demo/copy/").status_code == 403
    assert client.post(f"/classroom/labs/{lab.slug}/demo/end/").status_code == 403

    viewers = teacher.get(f"/classroom/labs/{lab.slug}/demo/viewers/").content.decode()
    assert '<p class="viewers" data-count="1"><b>1</b> student following: sam.</p>' in viewers

    # Leaving, and an ended demo.
    assert client.post(f"/demos/{demo.join_code}/leave/")["Location"] == "/exercises/"
    assert client.get(f"/labs/{lab.slug}/").status_code == 404
    client.post("/demos/join/", {"code": demo.join_code})
    teacher.post(f"/classroom/labs/{lab.slug}/demo/end/")
    # A follower who reloads the ended demo's page is told so, not shown a bare 404.
    gone = client.get(f"/labs/{lab.slug}/")
    assert gone.status_code == 410
    assert "<h1>The demo has ended</h1>" in gone.content.decode()
    assert "prof ended the demo “Failover demo”" in gone.content.decode()
    assert 'href="/exercises/"' in gone.content.decode()
    # For anyone else the lab still does not exist.
    assert _client(make_user("stranger")).get(f"/labs/{lab.slug}/").status_code == 404
    ended = client.post("/demos/join/", {"code": demo.join_code})
    assert ended.status_code == 400
    assert f"The demo {demo.join_code} has ended." in ended.content.decode()


def _join_panel(settings: Settings, listen: str, host: str) -> str:
    settings.LAB_LISTEN = parse_listen(listen)
    settings.ALLOWED_HOSTS = ["testserver", "127.0.0.1", "10.1.2.3"]
    prof = _instructor()
    lab = make_lab(prof, "Failover demo")
    teacher = _client(prof)
    teacher.post(f"/classroom/labs/{lab.slug}/demo/")
    page = teacher.get(f"/labs/{lab.slug}/?present=1", HTTP_HOST=host).content.decode()
    found = re.search(r'<span class="join-how.*?</span>', page, re.S)
    assert found, page
    return found.group(0)


def _outbound_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))
        address: str = sock.getsockname()[0]
    return address


def test_the_join_panel_shows_the_address_the_instructor_opened(settings: Settings) -> None:
    panel = _join_panel(settings, "0.0.0.0:8080", "10.1.2.3:8080")
    assert '<b id="join-url">http://10.1.2.3:8080/exercises/</b>' in panel


def test_the_join_panel_shows_this_machines_address_not_loopback(settings: Settings) -> None:
    panel = _join_panel(settings, "0.0.0.0:8080", "127.0.0.1:8080")
    assert f'<b id="join-url">http://{_outbound_address()}:8080/exercises/</b>' in panel
    assert "127.0.0.1" not in panel


def test_the_join_panel_says_students_cannot_reach_a_lab_on_loopback(settings: Settings) -> None:
    panel = _join_panel(settings, "127.0.0.1:8000", "127.0.0.1:8000")
    assert 'id="join-unreachable"' in panel
    assert "Students' machines cannot reach <b>127.0.0.1:8000</b>" in panel
    assert "make run HOST=0.0.0.0" in panel
    assert "join-url" not in panel


@pytest.mark.django_db(transaction=True)
def test_hand_every_student_a_copy_of_the_demo(commands_are_json: list[str]) -> None:
    prof = _instructor()
    lab = make_lab(prof, "Orders demo")
    teacher = _client(prof)
    live = _running(lab)
    live.act("produce", {"topic": "orders", "count": "12", "key": "k"}).result(30)
    live.act("produce", {"topic": "orders", "count": "9"}).result(30)
    teacher.post(f"/classroom/labs/{lab.slug}/demo/")
    demo = Demo.objects.get(lab=lab)
    nobody = teacher.post(f"/classroom/labs/{lab.slug}/demo/copy/")
    assert nobody.status_code == 409
    assert "Nobody has joined the demo yet" in nobody.content.decode()
    students = [make_user(n) for n in ("sam", "kim")]
    for s in students:
        _client(s).post("/demos/join/", {"code": demo.join_code})
    live.act("clock-pause", {}).result(10)  # a still picture to compare with

    def records(running: LiveLab) -> dict[int, list[tuple[int, str | None, str | None]]]:
        cluster = running.cluster
        return {
            p: [(r["offset"], r["key"], r["value"]) for r in cluster.browse("orders", p)]
            for p in range(cluster.partition_count("orders"))
        }

    original = on_driver(live, records)
    answer = teacher.post(f"/classroom/labs/{lab.slug}/demo/copy/", headers={"HX-Request": "true"})
    assert answer.status_code == 200, answer.content
    assert "Copying the demo for 2 students: 1 topic(s), 21 record(s)." in answer.content.decode()
    assert wait_until(lambda: getattr(attach.demo_view(lab.slug), "copies_ready", 0) == 2, 60)
    for student in students:
        copy = DemoCopy.objects.get(demo=demo, user=student)
        assert copy.error == ""
        assert copy.lab.owner == student
        assert copy.lab.name == "Orders demo (copy)"
        copied = _running(copy.lab)
        assert on_driver(copied, records) == original
        assert (
            _client(student).get(f"/demos/{demo.join_code}/copy/")["Location"] == copy.lab.get_absolute_url()
        )
        assert _client(student).get(copy.lab.get_absolute_url()).status_code == 200
    assert _client(make_user("nobody")).get(f"/demos/{demo.join_code}/copy/").status_code == 404
    page = _client(students[0]).get(f"/labs/{lab.slug}/").content.decode()
    assert "Open your copy of this demo" in page
    handed = {"classroom.demo", "classroom.read-state", "classroom.demo-copies", "classroom.fill"}
    assert handed | {"classroom.demo-copy-ready"} <= set(commands_are_json)


@pytest.mark.django_db(transaction=True)
def test_a_demos_copies_skip_students_at_a_limit_and_the_instructor_is_told_who_and_why(
    settings: Settings,
) -> None:
    settings.LAB_MAX_LABS_PER_USER = 1
    settings.LAB_MAX_LIVE_LABS = 4
    prof = _instructor()
    lab = make_lab(
        prof, "Orders demo", brokers=1, topics=[TopicSpec(name="orders", partitions=1, replication_factor=1)]
    )
    teacher = _client(prof)
    live = _running(lab)
    live.act("produce", {"topic": "orders", "count": "3"}).result(30)
    teacher.post(f"/classroom/labs/{lab.slug}/demo/")
    demo = Demo.objects.get(lab=lab)
    students = {n: make_user(n) for n in ("sam", "kim", "lee", "max")}
    make_lab(students["sam"], "Sam's own", brokers=1, topics=[])  # Sam is at a student's limit
    for s in students.values():
        _client(s).post("/demos/join/", {"code": demo.join_code})

    answer = teacher.post(f"/classroom/labs/{lab.slug}/demo/copy/", headers={"HX-Request": "true"})
    assert answer.status_code == 200, answer.content
    text = answer.content.decode()
    assert (
        "Copying the demo for 2 students: 1 topic(s), 3 record(s). Not handed a copy: "
        "sam (1 lab already, the most a student may have); max (the class server is full (4 labs running))."
    ) in text
    assert 'data-ok="false"' in text  # not everyone got one: the instructor should look
    assert {c.user.get_username() for c in DemoCopy.objects.filter(demo=demo)} == {"kim", "lee"}
    assert Lab.objects.count() == 4
    assert wait_until(lambda: getattr(attach.demo_view(lab.slug), "copies_ready", 0) == 2, 60)

    again = teacher.post(f"/classroom/labs/{lab.slug}/demo/copy/", headers={"HX-Request": "true"})
    assert again.status_code == 409
    assert (
        "No student got a copy. Not handed a copy: sam, kim, lee (1 lab already, the most a student may have); "
        "max (the class server is full (4 labs running))."
    ) in again.content.decode()
    assert Lab.objects.count() == 4


# ---------------------------------------------------------------------------- scenarios
# ---------------------------------------------------------------------------- scenarios


def test_scenarios_are_listed_and_open_as_a_lab_with_the_player() -> None:
    student = make_user()
    client = _client(student)
    page = client.get("/scenarios/").content.decode()
    assert "Leader failover" in page
    assert "The leader of orders-0 dies." in page
    assert page.count("Open as a lab") >= 11
    opened = client.post("/scenarios/consumer-rewind/open/")
    lab = Lab.objects.get(owner=student)
    assert opened["Location"] == lab.get_absolute_url()
    assert ScenarioLab.objects.get(lab=lab).scenario == "consumer-rewind"
    assert lab.settings["seed"] == 6
    lab_page = client.get(lab.get_absolute_url()).content.decode()
    assert 'id="scenario-player"' in lab_page
    assert "A consumer rewinds and reads again" in lab_page
    assert lab_page.count('data-state="pending"') == 9

    _running(lab)
    step = client.post(f"/classroom/labs/{lab.slug}/scenario/step/", headers={"HX-Request": "true"})
    assert step.status_code == 200
    assert "Step 1: create topic events" in step.content.decode()
    player = attach.player(lab.slug)
    assert player is not None
    assert wait_until(lambda: player.view.rows[0].state == "passed" and player.view.mode == "paused", 10)
    assert player.view.rows[1].state == "pending"
    playing = client.post(f"/classroom/labs/{lab.slug}/scenario/play/", headers={"HX-Request": "true"})
    assert "Playing" in playing.content.decode()
    assert wait_until(lambda: player.view.status == "passed", 30), player.view
    over = client.post(f"/classroom/labs/{lab.slug}/scenario/play/", headers={"HX-Request": "true"})
    assert over.status_code == 409
    assert "ILLEGAL_STATE: the scenario is over" in over.content.decode()
    assert client.post(f"/classroom/labs/{lab.slug}/scenario/explode/").status_code == 404
    plain = make_lab(student, "Plain")
    assert client.post(f"/classroom/labs/{plain.slug}/scenario/play/").status_code == 404


def test_a_scenario_on_a_full_server_is_refused_on_the_scenarios_page(settings: Settings) -> None:
    settings.LAB_MAX_LIVE_LABS = 1
    make_lab(make_user("grace"), "Grace's")
    student = make_user()
    refused = _client(student).post("/scenarios/consumer-rewind/open/")
    assert refused.status_code == 409
    page = refused.content.decode()
    assert (
        '<p class="banner bad" role="alert" id="open-error" data-scenario="consumer-rewind">'
        "<b>A consumer rewinds and reads again</b> was not opened: The class server is full (1 lab running, "
        "the most it takes: LAB_MAX_LIVE_LABS); ask your instructor.</p>"
    ) in page
    assert page.count("Open as a lab") >= 11  # the list, to choose again later
    assert not Lab.objects.filter(owner=student).exists()
    assert not ScenarioLab.objects.exists()
    # An instructor is told what to do about it.
    told = _client(_instructor()).post("/scenarios/consumer-rewind/open/").content.decode()
    assert (
        "delete labs nobody uses (Class progress lists every student&#x27;s), or raise LAB_MAX_LIVE_LABS"
        in told
    )


def test_a_scenario_on_a_lab_is_cancelled_from_its_page(commands_are_json: list[str]) -> None:
    student = make_user()
    client = _client(student)
    client.post("/scenarios/leader-failover/open/")
    lab = Lab.objects.get(owner=student)
    url = f"/classroom/labs/{lab.slug}/scenario/cancel/"
    page = client.get(lab.get_absolute_url()).content.decode()
    button = re.search(r'<button[^>]*data-player="cancel"[^>]*>', page)
    assert button is not None, "the player has a Cancel button"
    assert f'hx-post="{url}"' in button.group(0)
    assert "hx-headers" in page  # the CSRF token every htmx POST carries
    _running(lab)
    nothing = client.post(url, headers={"HX-Request": "true"})
    assert nothing.status_code == 409
    assert "nothing to cancel" in nothing.content.decode()
    client.post(f"/classroom/labs/{lab.slug}/scenario/step/", headers={"HX-Request": "true"})
    player = attach.player(lab.slug)
    assert player is not None
    assert wait_until(lambda: player.view.rows[0].state == "passed" and player.view.mode == "paused", 10)
    cancelled = client.post(url, headers={"HX-Request": "true"})
    assert cancelled.status_code == 200
    assert "Scenario cancelled before step 2" in cancelled.content.decode()
    assert player.view.status == "cancelled"
    refused = client.post(f"/classroom/labs/{lab.slug}/scenario/play/", headers={"HX-Request": "true"})
    assert refused.status_code == 409
    assert "cancelled" in refused.content.decode()
    assert {"classroom.scenario", "classroom.player"} <= set(commands_are_json)
