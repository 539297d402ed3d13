"""Helpers for tests of the Django side of live labs: users, labs, and stopping what started."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from lab.labs import create_lab
from lab.models import Lab
from lab.runtime.spec import TopicSpec

# An ACL as the lab's spec, page and API write it: Alice may write to topic orders.
ALICE_WRITES_ORDERS = {
    "resource_type": "Topic",
    "name": "orders",
    "pattern": "Literal",
    "principal": "User:alice",
    "host": "*",
    "operation": "Write",
    "permission": "Allow",
}


def make_user(name: str = "ada", password: str = "s3cret-enough") -> object:
    return get_user_model().objects.create_user(name, password=password)


def make_lab(owner: object, name: str = "Failover", **kw: object) -> Lab:
    kw.setdefault("topics", [TopicSpec(name="orders", partitions=3, replication_factor=3)])
    kw.setdefault("config", {"zookeeper.session.timeout.ms": "1500"})
    return create_lab(owner, name, **kw)  # type: ignore[arg-type]
