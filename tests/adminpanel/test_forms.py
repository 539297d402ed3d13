"""The panel's forms: what they check before anything reaches the lab, in Kafka's words."""

from __future__ import annotations

import pytest
from django import forms

from lab.adminpanel.forms import (
    BrowseForm,
    ConfigForm,
    CreateTopicForm,
    ResetForm,
    config_key_in,
    virtual_time,
)
from lab.engine.errors import InvalidConfig, InvalidReplicationFactor, TopicAlreadyExists


def test_virtual_time_reads_milliseconds_or_the_clocks_minutes_and_seconds() -> None:
    assert virtual_time("12500") == 12_500
    assert virtual_time("0:12.5") == 12_500
    assert virtual_time("1:02.034") == 62_034
    assert virtual_time(" 3:00 ") == 180_000
    for bad in ("12.5", "0:75", "soon", "-3", "1:2:3"):
        with pytest.raises(forms.ValidationError):
            virtual_time(bad)


def test_an_invalid_config_message_names_its_key() -> None:
    assert (
        config_key_in("Invalid value x for configuration delete.retention.ms: not a number")
        == "delete.retention.ms"
    )
    assert config_key_in("Invalid value x for configuration retention.ms: not a number") == "retention.ms"
    assert config_key_in("something else") is None


def test_a_new_topics_configs_are_checked_each_beside_its_field() -> None:
    form = CreateTopicForm(
        {
            "name": "t",
            "partitions": "2",
            "replication_factor": "1",
            "segment.bytes": "10",
            "cleanup.policy": "compact",
        }
    )
    assert not form.is_valid()
    assert form.errors["segment.bytes"] == [
        "INVALID_CONFIG: Invalid value 10 for configuration segment.bytes: must be at least 14"
    ]
    good = CreateTopicForm(
        {"name": "t", "partitions": "", "replication_factor": "", "cleanup.policy": "compact, delete"}
    )
    assert good.is_valid(), good.errors
    assert good.cleaned_data["config"] == {"cleanup.policy": "compact,delete"}
    assert (good.cleaned_data["partitions"], good.cleaned_data["replication_factor"]) == (1, 1)


def test_the_engines_errors_land_beside_their_fields() -> None:
    form = CreateTopicForm({"name": "t", "partitions": "1", "replication_factor": "9"})
    assert form.is_valid()
    form.attach(InvalidReplicationFactor("Replication factor: 9 larger than available brokers: 3."))
    form.attach(TopicAlreadyExists("Topic 't' already exists."))
    form.attach(InvalidConfig("Invalid value 5 for configuration min.insync.replicas: too many"))
    assert form.errors["replication_factor"] == [
        "INVALID_REPLICATION_FACTOR: Replication factor: 9 larger than available brokers: 3."
    ]
    assert form.errors["name"] == ["TOPIC_ALREADY_EXISTS: Topic 't' already exists."]
    assert form.errors["min.insync.replicas"] == [
        "INVALID_CONFIG: Invalid value 5 for configuration min.insync.replicas: too many"
    ]


def test_a_config_edit_is_the_difference_from_the_overrides_now() -> None:
    current = {"retention.ms": "1000", "segment.bytes": "2048"}
    form = ConfigForm({"retention.ms": "1000", "min.insync.replicas": "2"}, current=current)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["updates"] == {"min.insync.replicas": "2"}
    assert form.cleaned_data["remove"] == ["segment.bytes"]
    same = ConfigForm(dict(current), current=current)
    assert not same.is_valid()
    assert same.non_field_errors() == [
        "Nothing to change: edit a value, or empty one to go back to the lab's default."
    ]


def test_the_browser_defaults_to_partition_0_from_the_log_start_and_tail_means_newest() -> None:
    form = BrowseForm({}, partitions=3)
    assert form.is_valid()
    q = form.query()
    assert (q.partition, q.start, q.offset, q.search, q.limit, q.tail) == (0, "offset", None, "", 50, False)
    tail = BrowseForm(
        {"partition": "2", "start": "time", "time": "0:01", "tail": "on", "limit": "20"}, partitions=3
    )
    assert tail.is_valid()
    assert (tail.query().start, tail.query().time_ms, tail.query().limit) == ("newest", None, 20)
    assert tail.query().params() == {"partition": "2", "start": "newest", "limit": "20", "tail": "on"}
    assert not BrowseForm({"limit": "7"}, partitions=3).is_valid()


def test_a_reset_needs_the_value_its_target_asks_for() -> None:
    def reset(**data: str) -> ResetForm:
        form = ResetForm({"group": "g", "topic": "orders", **data}, topics=["orders"])
        form.is_valid()
        return form

    assert reset(to="earliest").cleaned_data["target"] == "earliest"
    assert reset(to="offset", offset="5").cleaned_data["target"] == 5
    assert reset(to="time", time="0:02").cleaned_data["target"] == {"timestamp": 2000}
    assert reset(to="offset").errors["offset"] == ["Give the offset to reset to."]
    assert reset(to="time").errors["time"] == ["Give the time to reset to."]
    assert reset(to="latest", partitions="2, 0 2").cleaned_data["partitions"] == [0, 2]
