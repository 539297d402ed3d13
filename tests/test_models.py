"""The Lab row."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from lab.models import Lab
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def test_a_lab_row_knows_its_page_and_keeps_its_settings_as_json() -> None:
    owner = make_user()
    lab = Lab.objects.create(
        name="Failover drill",
        slug="failover",
        owner=owner,
        brokers=3,
        settings={"config": {"zookeeper.session.timeout.ms": "1500"}, "rate": 0.5},
        data_dir="/tmp/x",
        zookeeper_chroot="/kafka-lab/failover",
    )
    again = Lab.objects.get(pk=lab.pk)
    assert str(again) == "Failover drill"
    assert again.get_absolute_url() == "/labs/failover/"
    assert again.spec_settings()["rate"] == 0.5
    assert again.created is not None
    assert list(owner.labs.all()) == [again]  # type: ignore[attr-defined]


def test_slugs_are_unique() -> None:
    owner = make_user()
    Lab.objects.create(name="a", slug="same", owner=owner, data_dir="/a", zookeeper_chroot="/kafka-lab/a")
    with pytest.raises(IntegrityError):
        Lab.objects.create(name="b", slug="same", owner=owner, data_dir="/b", zookeeper_chroot="/kafka-lab/b")
