"""``manage.py createlab``: a lab for an instructor or a script."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

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
