"""One set of limits: each defined once (lab/engine/limits.py) and the same on every path, the API, the
forms, the dashboard's controls and scenario files."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from lab.adminpanel.forms import CreateTopicForm, PartitionsForm, ProduceForm, ResetForm
from lab.api.main import api
from lab.engine import limits
from lab.engine.errors import IllegalArgument
from lab.labs import create_lab, live_of
from lab.models import Lab
from lab.runtime.actions import plan
from lab.scenarios.format import ScenarioError, parse
from tests.api.helpers import Api, ok
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


@pytest.fixture
def lab(settings: Settings) -> Lab:
    settings.LAB_ZOOKEEPER = ""
    made = make_lab(make_user("ada"))
    live_of(made).ready.result(30)
    return made


def _schema(name: str) -> dict[str, Any]:
    found: dict[str, Any] = api.get_openapi_schema()["components"]["schemas"][name]["properties"]
    return found


def _scenario(step: str) -> None:
    parse(f"name: x\nsteps:\n  - {step}\n")


def test_a_topics_partitions_have_one_maximum() -> None:
    most = limits.PARTITIONS.high
    # The API's document, so every client knows it.
    assert _schema("TopicIn")["partitions"]["maximum"] == most
    assert _schema("PartitionsIn")["total"]["maximum"] == most
    # The topic admin's forms.
    assert CreateTopicForm({"name": "t", "partitions": str(most)}).is_valid()
    too_many = CreateTopicForm({"name": "t", "partitions": str(most + 1)})
    assert too_many.errors["partitions"] == [
        f"ILLEGAL_ARGUMENT: partitions must be between 1 and {most}, not {most + 1}"
    ]
    assert not PartitionsForm({"total": str(most + 1)}).is_valid()
    # The dashboard's control.
    assert callable(plan("topic-create", {"name": "t", "partitions": str(most)}))
    with pytest.raises(IllegalArgument, match=f"partitions must be between 1 and {most}, not {most + 1}"):
        plan("topic-create", {"name": "t", "partitions": str(most + 1)})
    # Scenario files.
    _scenario(f"create_topic: {{name: t, partitions: {most}}}")
    with pytest.raises(ScenarioError, match=f"a number from 1 to {most}, not {most + 1}"):
        _scenario(f"create_topic: {{name: t, partitions: {most + 1}}}")
    with pytest.raises(ScenarioError, match=f"a number from 1 to {most}"):
        _scenario(f"add_partitions: {{topic: t, total: {most + 1}}}")


def test_the_api_takes_the_most_partitions_and_refuses_one_more(lab: Lab) -> None:
    ada = Api(lab.owner)
    most = limits.PARTITIONS.high
    assert ok(ada.post(f"/labs/{lab.slug}/topics", {"name": "wide", "partitions": most}), 201)
    refused = ada.post(f"/labs/{lab.slug}/topics", {"name": "wider", "partitions": most + 1})
    assert refused.status_code == 400
    assert refused.json()["fields"][0]["field"] == "partitions"


def test_keys_values_and_counts_have_one_maximum() -> None:
    key, value, count = limits.KEY.max_length, limits.VALUE.max_length, limits.RECORDS.high
    record = _schema("RecordIn")
    assert record["key"]["anyOf"][0]["maxLength"] == key
    assert record["value"]["anyOf"][0]["maxLength"] == value
    assert _schema("ProduceIn")["records"]["maxItems"] == count
    form = ProduceForm({"key": "k" * key, "value": "v" * value, "count": str(count)}, partitions=1)
    assert form.is_valid(), form.errors
    form = ProduceForm(
        {"key": "k" * (key + 1), "value": "v" * (value + 1), "count": str(count + 1)}, partitions=1
    )
    assert set(form.errors) == {"key", "value", "count"}
    assert callable(plan("produce", {"topic": "t", "key": "k" * key, "count": str(count)}))
    with pytest.raises(IllegalArgument):
        plan("produce", {"topic": "t", "key": "k" * (key + 1)})
    with pytest.raises(IllegalArgument):
        plan("produce", {"topic": "t", "count": str(count + 1)})
    _scenario(f"produce: {{topic: t, count: {count}, key: {'k' * key}}}")
    with pytest.raises(ScenarioError):
        _scenario(f"produce: {{topic: t, key: {'k' * (key + 1)}}}")
    with pytest.raises(ScenarioError):
        _scenario(f"produce: {{topic: t, count: {count + 1}}}")


def test_brokers_replication_factors_and_names_have_one_maximum() -> None:
    brokers = limits.BROKERS.high
    assert _schema("LabIn")["brokers"]["maximum"] == brokers
    assert _schema("TopicIn")["replication_factor"]["maximum"] == limits.REPLICATION_FACTOR.high == brokers
    with pytest.raises(ScenarioError, match=f"at most {brokers} brokers"):
        parse(f"name: x\ncluster: {{brokers: {brokers + 1}}}\nsteps:\n  - kill: 1\n")
    with pytest.raises(ScenarioError, match=f"a number from 1 to {brokers}"):
        _scenario(f"kill: {brokers + 1}")
    with pytest.raises(IllegalArgument, match=f"broker must be between 1 and {brokers}"):
        plan("kill", {"broker": str(brokers + 1)})
    assert not CreateTopicForm({"name": "t", "replication_factor": str(brokers + 1)}).is_valid()
    group = limits.GROUP_ID.max_length
    assert ResetForm({"group": "g" * group, "topic": "t"}, topics=["t"]).is_valid()
    assert not ResetForm({"group": "g" * (group + 1), "topic": "t"}, topics=["t"]).is_valid()
    assert _schema("ConsumeIn")["group"]["maxLength"] == group


def test_a_lab_name_follows_one_rule_on_the_home_page_and_in_the_api(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    owner = make_user("ada")
    pattern = _schema("LabIn")["name"]["pattern"]
    assert pattern == limits.LAB_NAME.json_pattern
    for bad in ("   ", "tab\there", "x" * (limits.LAB_NAME.max_length + 1)):
        with pytest.raises(IllegalArgument):
            create_lab(owner, bad)
    assert create_lab(owner, "Drill 2, ready").name == "Drill 2, ready"
    assert re.search(pattern, "Drill 2, ready")


def test_a_nul_in_a_key_is_stored_through_every_door(lab: Lab) -> None:
    """Kafka's keys are bytes: the API, the topic admin's form and the dashboard's control all keep it."""
    ada = Api(lab.owner)
    key = "a\x00b"
    ok(ada.post(f"/labs/{lab.slug}/topics/orders/records", {"records": [{"key": key, "value": "api"}]}))
    browser = Client()
    browser.force_login(lab.owner)
    form = browser.post(
        f"/labs/{lab.slug}/admin/topics/orders/produce/",
        {"key": key, "value": "form", "count": "1"},
        headers={"HX-Request": "true"},
    )
    assert form.status_code == 200, form.content[-500:]
    control = browser.post(
        f"/labs/{lab.slug}/act/produce/",
        {"topic": "orders", "key": key, "count": "1"},
        headers={"HX-Request": "true"},
    )
    assert control.status_code == 200, control.content
    found = [
        r["key"]
        for p in range(3)
        for r in ok(ada.get(f"/labs/{lab.slug}/topics/orders/records", partition=p))["records"]
    ]
    assert found == [key, key, key]


def test_the_pages_inputs_say_the_same_limits(lab: Lab) -> None:
    browser = Client()
    browser.force_login(lab.owner)
    dashboard = browser.get(f"/labs/{lab.slug}/").content.decode()
    assert f'name="partitions" type="number" min="1" max="{limits.PARTITIONS.high}"' in dashboard
    assert f'name="count" type="number" min="1" max="{limits.RECORDS.high}"' in dashboard
    assert f'name="key" maxlength="{limits.KEY.max_length}"' in dashboard
    admin = browser.get(f"/labs/{lab.slug}/admin/").content.decode()
    assert f'name="partitions" type="number" min="1" max="{limits.PARTITIONS.high}"' in admin
    home = browser.get("/").content.decode()
    assert f'name="brokers" type="number" min="1" max="{limits.BROKERS.high}"' in home
