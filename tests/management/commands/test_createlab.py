"""``manage.py createlab``: a lab for an instructor or a script."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from lab.labs import spec_of
from lab.models import Lab
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def test_creates_a_lab_with_configs_and_topics() -> None:
    make_user("ada")
    out = StringIO()
    call_command(
        "createlab",
        "Failover drill",
        "--owner",
        "ada",
        "--brokers",
        "3",
        "--config",
        "zookeeper.session.timeout.ms=1500",
        "--topic",
        "orders:3:3",
        "--topic",
        "audit",
        stdout=out,
    )
    assert "Lab 'Failover drill' created: /labs/failover-drill/ (owner ada)" in out.getvalue()
    spec = spec_of(Lab.objects.get(slug="failover-drill"))
    assert spec.config == {"zookeeper.session.timeout.ms": "1500"}
    assert [(t.name, t.partitions, t.replication_factor) for t in spec.topics] == [
        ("orders", 3, 3),
        ("audit", 1, 1),
    ]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["x", "--owner", "nobody"], "there is no user 'nobody'"),
        (["x", "--owner", "ada", "--config", "novalue"], "--config takes KEY=VALUE"),
        (["x", "--owner", "ada", "--topic", "t:a"], "whole numbers"),
        (
            ["x", "--owner", "ada", "--config", "no.such=1"],
            "INVALID_CONFIG: Unknown broker config name: no.such",
        ),
    ],
)
def test_bad_input_is_refused_and_nothing_is_created(args: list[str], match: str) -> None:
    make_user("ada")
    with pytest.raises(CommandError, match=match):
        call_command("createlab", *args)
    assert Lab.objects.count() == 0


def test_the_lab_limits_hold_here_too(settings: Settings) -> None:
    settings.LAB_MAX_LABS_PER_USER = 1
    settings.LAB_MAX_LIVE_LABS = 2
    make_user("ada")
    call_command("createlab", "One", "--owner", "ada", stdout=StringIO())
    with pytest.raises(CommandError) as refused:
        call_command("createlab", "Two", "--owner", "ada", stdout=StringIO())
    assert str(refused.value) == (
        "POLICY_VIOLATION: ada has 1 lab already, the most a student may have (LAB_MAX_LABS_PER_USER); "
        "delete one first."
    )
    make_user("bob")
    call_command("createlab", "Bob's", "--owner", "bob", stdout=StringIO())
    make_user("cy")
    with pytest.raises(CommandError, match=r"POLICY_VIOLATION: The class server is full \(2 labs running"):
        call_command("createlab", "Cy's", "--owner", "cy", stdout=StringIO())
    assert sorted(Lab.objects.values_list("name", flat=True)) == ["Bob's", "One"]
