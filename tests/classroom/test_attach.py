"""The classroom's hooks live with the lab: a lab started again gets them back when asked."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings

from lab.classroom import attach
from lab.classroom.models import Demo, ExerciseProgress, ScenarioLab
from lab.labs import live_of
from lab.runtime.live import LiveLab
from lab.runtime.manager import runtime
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("stop_labs")]


@pytest.fixture(autouse=True)
def memory_store(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""


def _hooked(live: LiveLab) -> tuple[bool, bool, bool]:
    views = live.wait_for_frame(lambda f: attach.DEMO_VIEW in f.views, 30).views
    return (
        attach.exercise_on(live) is not None,
        attach.player_on(live) is not None,
        attach.DEMO_VIEW in views,
    )


def test_a_lab_started_again_gets_its_exercise_player_and_banner_back() -> None:
    owner = make_user()
    made, other = make_lab(owner, "Class"), make_lab(owner, "Other")
    ExerciseProgress.objects.create(user=owner, exercise="1-partitions-and-offsets", lab=made)
    ScenarioLab.objects.create(lab=made, scenario="leader-failover")
    Demo.objects.create(lab=made)
    attach.reattach_all()
    assert _hooked(live_of(made)) == (True, True, True)

    runtime.stop(made.slug)  # the lab stops; a process starts it again (a worker taking it over)
    again = live_of(made)
    again.ready.result(30)
    assert attach.exercise_on(again) is None
    assert attach.player_on(again) is None
    attach.reattach_all(slugs=[made.slug])
    assert _hooked(again) == (True, True, True)
    assert runtime.get(other.slug) is None  # a lab not named is left alone (not even started)
