"""The panel's forms: each checks what it can where the request arrives, with Kafka's words.

What only the cluster can check (a replication factor above the live brokers, a topic that
already exists, fewer partitions than now) comes back from the engine as a ``KafkaError``;
``attach`` puts it beside the field it is about, so every message sits where the mistake is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.validators import ProhibitNullCharactersValidator

from lab.adminpanel import plan
from lab.adminpanel.rows import TopicDetail
from lab.engine import limits
from lab.engine.admin import validate_new_topic_name
from lab.engine.config import TOPIC_KEYS
from lab.engine.errors import (
    IllegalArgument,
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    KafkaError,
    NonEmptyGroup,
    OffsetOutOfRange,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)

PAGE_SIZES = (20, 50, 100, 500)  # within limits.RECORDS
_TIME = re.compile(r"^(?:(\d+):)?(\d+)(?:\.(\d{1,3}))?$")


def named(error: KafkaError) -> str:
    return f"{error.name}: {error.message}"


def whole(raw: str, label: str, *, low: int = 0, high: int | None = None) -> int:
    text = raw.strip()
    try:
        value = int(text)
    except ValueError:
        raise forms.ValidationError(f"{label} must be a whole number, not {text!r}.") from None
    if value < low:
        raise forms.ValidationError(f"{label} must be at least {low}, not {value}.")
    if high is not None and value > high:
        raise forms.ValidationError(f"{label} must be at most {high}, not {value}.")
    return value


def within(value: int, limit: limits.Whole) -> int:
    """The lab's ``limit`` on ``value``, in the words every door uses (ILLEGAL_ARGUMENT)."""
    try:
        return limit.check(value)
    except KafkaError as error:
        raise forms.ValidationError(named(error)) from None


def record_text(limit: limits.Text, **kw: Any) -> forms.CharField:
    """A record's key or value: any text Kafka would store, a NUL included (Django refuses NULs by default)."""
    field = forms.CharField(required=False, max_length=limit.max_length, strip=False, **kw)
    field.validators = [v for v in field.validators if not isinstance(v, ProhibitNullCharactersValidator)]
    return field


def partition_of(raw: str, partitions: int) -> int:
    """A partition number the topic has, or the error a client would get for it."""
    value = whole(raw, "Partition")
    if value >= partitions:
        raise forms.ValidationError(
            named(
                UnknownTopicOrPartition(
                    f"the topic has {partitions} partition(s); there is no partition {value}"
                )
            )
        )
    return value


def virtual_time(raw: str) -> int:
    """Virtual ms from ``12500`` (ms) or ``0:12.5`` / ``0:12.500`` (minutes:seconds, as the clock shows)."""
    text = raw.strip()
    if text.isdigit():
        return int(text)
    match = _TIME.match(text)
    if match is None or match.group(1) is None:
        raise forms.ValidationError(
            f"A time is virtual time since the lab started: milliseconds (12500) or minutes:seconds "
            f"as the clock shows it (0:12.500), not {text!r}."
        )
    minutes, seconds, fraction = match.groups()
    if int(seconds) >= 60:
        raise forms.ValidationError(f"Seconds go up to 59 in {text!r}.")
    return (int(minutes) * 60 + int(seconds)) * 1000 + int((fraction or "0").ljust(3, "0"))


def config_key_in(message: str) -> str | None:
    """The topic config key an INVALID_CONFIG message names (the longest, so delete.retention.ms beats retention.ms)."""
    found = [k for k in TOPIC_KEYS if k in message]
    return max(found, key=len) if found else None


class PanelForm(forms.Form):
    """A form that can take the engine's answer beside the field it concerns."""

    error_fields: ClassVar[Mapping[type[KafkaError], str]] = {}

    def field_for(self, error: KafkaError) -> str | None:
        if isinstance(error, InvalidConfig):
            key = config_key_in(error.message)
            if key in self.fields:
                return key
        for kind, field in self.error_fields.items():
            if isinstance(error, kind) and field in self.fields:
                return field
        return None

    def attach(self, error: KafkaError) -> None:
        self.add_error(self.field_for(error), named(error))


def _config_fields(form: forms.Form) -> None:
    for key in TOPIC_KEYS.values():
        form.fields[key.name] = forms.CharField(required=False, label=key.name, max_length=100)


def _clean_configs(form: forms.Form, data: Mapping[str, Any]) -> dict[str, str]:
    """The config values given, each checked by its key's rules (INVALID_CONFIG beside the field)."""
    out: dict[str, str] = {}
    for name, key in TOPIC_KEYS.items():
        raw = str(data.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = key.parse(raw)
        except InvalidConfig as error:
            form.add_error(name, named(error))
            continue
        out[name] = ",".join(value) if isinstance(value, tuple) else _text(value)
    return out


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------------- topics


class CreateTopicForm(PanelForm):
    error_fields = {
        InvalidTopic: "name",
        TopicAlreadyExists: "name",
        InvalidPartitions: "partitions",
        InvalidReplicationFactor: "replication_factor",
    }

    name = forms.CharField(required=False, strip=True)
    partitions = forms.CharField(required=False, initial="3")
    replication_factor = forms.CharField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _config_fields(self)

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name") or "")
        try:
            validate_new_topic_name(name)
        except InvalidTopic as error:
            raise forms.ValidationError(named(error)) from None
        return name

    def clean_partitions(self) -> int:
        raw = str(self.cleaned_data.get("partitions") or "").strip() or "1"
        value = whole(raw, "Partitions", low=-(2**31))
        if value < 1:
            raise forms.ValidationError(
                named(InvalidPartitions("Number of partitions must be larger than 0."))
            )
        return within(value, limits.PARTITIONS)

    def clean_replication_factor(self) -> int:
        raw = str(self.cleaned_data.get("replication_factor") or "").strip() or "1"
        value = whole(raw, "Replication factor", low=-(2**15))
        if value < 1:
            raise forms.ValidationError(
                named(InvalidReplicationFactor("Replication factor must be larger than 0."))
            )
        return within(value, limits.REPLICATION_FACTOR)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["config"] = _clean_configs(self, self.data)
        return data


class ConfigForm(PanelForm):
    """A topic's overrides: a value sets one, an emptied field removes it (back to the lab's default)."""

    def __init__(self, *args: Any, current: Mapping[str, str], **kwargs: Any) -> None:
        kwargs.setdefault("initial", dict(current))
        super().__init__(*args, **kwargs)
        self.current = dict(current)
        _config_fields(self)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        given = _clean_configs(self, self.data)
        if self.errors:
            return data
        updates = {k: v for k, v in given.items() if self.current.get(k) != v}
        remove = sorted(k for k in self.current if k in TOPIC_KEYS and k not in given)
        if not updates and not remove:
            raise forms.ValidationError(
                "Nothing to change: edit a value, or empty one to go back to the lab's default."
            )
        data["updates"] = updates
        data["remove"] = remove
        return data


class PartitionsForm(PanelForm):
    error_fields = {InvalidPartitions: "total", InvalidReplicationFactor: "total", InvalidRequest: "total"}

    total = forms.CharField(required=False, label="Partitions")

    def clean_total(self) -> int:
        raw = str(self.cleaned_data.get("total") or "").strip()
        if not raw:
            raise forms.ValidationError("Give the number of partitions the topic should have.")
        value = whole(raw, "Partitions", low=-(2**31))
        if value > limits.PARTITIONS.high:  # fewer than now is Kafka's INVALID_PARTITIONS, from the engine
            within(value, limits.PARTITIONS)
        return value


class DeleteForm(PanelForm):
    error_fields = {InvalidTopic: "confirm", UnknownTopicOrPartition: "confirm"}

    confirm = forms.CharField(required=False, label="Type the topic's name to confirm")

    def __init__(self, *args: Any, topic: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.topic = topic

    def clean_confirm(self) -> str:
        typed = str(self.cleaned_data.get("confirm") or "").strip()
        if typed != self.topic:
            raise forms.ValidationError(f"Type the topic's name, {self.topic}, to delete it.")
        return typed


class ReassignForm(PanelForm):
    """Two steps: show the plan (from a replication factor, or replica lists), then apply it."""

    STEPS = ("plan-rf", "plan-replicas", "apply")
    error_fields = {InvalidReplicationFactor: "replication_factor"}

    step = forms.ChoiceField(choices=[(s, s) for s in STEPS], required=False)
    replication_factor = forms.CharField(required=False, label="Replication factor")
    plan = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, detail: TopicDetail, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial",
            {"replication_factor": detail.replication_factor}
            | {f"replicas_{p}": ",".join(map(str, r)) for p, r in detail.current.items()},
        )
        super().__init__(*args, **kwargs)
        self.detail = detail
        for p in detail.current:
            self.fields[f"replicas_{p}"] = forms.CharField(
                required=False, label=f"Partition {p}", max_length=100
            )

    def replica_fields(self) -> list[tuple[int, forms.BoundField]]:
        return [(p, self[f"replicas_{p}"]) for p in self.detail.current]

    def field_for(self, error: KafkaError) -> str | None:
        if isinstance(error, InvalidReplicaAssignment):
            match = re.search(r"partition (\d+)", error.message)
            if match and f"replicas_{match.group(1)}" in self.fields:
                return f"replicas_{match.group(1)}"
        return super().field_for(error)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        step = data.get("step") or "plan-replicas"
        data["step"] = step
        detail = self.detail
        targets: dict[int, tuple[int, ...]] = {}
        try:
            if step == "plan-rf":
                raw = str(data.get("replication_factor") or "").strip()
                rf = whole(raw, "Replication factor", low=-(2**15)) if raw else 0
                targets = plan.for_replication_factor(detail.current, detail.live_brokers, rf)
            elif step == "apply":
                targets = plan.decode(str(data.get("plan") or ""), detail.brokers)
            else:
                for p in detail.current:
                    name = f"replicas_{p}"
                    try:
                        targets[p] = plan.parse_replicas(
                            str(self.data.get(name) or ""), detail.brokers, partition=p
                        )
                    except KafkaError as error:
                        self.add_error(name, named(error))
            if self.errors:
                return data
            moves = plan.moves(detail.current, targets, detail.leaders, detail.live_brokers)
        except forms.ValidationError as error:
            self.add_error("replication_factor", error)
            return data
        except KafkaError as error:
            self.attach(error)
            return data
        changed = [m for m in moves if m.changes]
        if not changed:
            raise forms.ValidationError(
                "The plan changes nothing: every partition already has those replicas."
            )
        data["targets"] = {m.partition: m.target for m in changed}
        data["moves"] = moves
        data["encoded"] = plan.encode({m.partition: m.target for m in changed})
        return data


class ElectForm(PanelForm):
    error_fields = {UnknownTopicOrPartition: "partition"}

    partition = forms.CharField(required=False)

    def __init__(self, *args: Any, partitions: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partitions = partitions

    def clean_partition(self) -> int | None:
        raw = str(self.cleaned_data.get("partition") or "").strip()
        if not raw:
            return None
        return partition_of(raw, self.partitions)


# ---------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """What the message browser shows: one partition, from an offset, a time, or the newest records."""

    partition: int = 0
    start: str = "offset"  # offset | time | newest
    offset: int | None = None  # None: from the log start offset
    time_ms: int | None = None
    search: str = ""
    limit: int = 50
    tail: bool = False

    def params(self, **changes: Any) -> dict[str, str]:
        """The query string of this selection (with ``changes``), for links, paging and export."""
        values: dict[str, Any] = {
            "partition": self.partition,
            "start": self.start,
            "offset": self.offset,
            "time": self.time_ms,
            "search": self.search,
            "limit": self.limit,
            "tail": "on" if self.tail else None,
        }
        values.update(changes)
        return {k: str(v) for k, v in values.items() if v not in (None, "")}


class BrowseForm(PanelForm):
    error_fields = {UnknownTopicOrPartition: "partition", OffsetOutOfRange: "offset"}

    partition = forms.CharField(required=False)
    start = forms.ChoiceField(
        required=False,
        choices=[("offset", "an offset"), ("time", "a time"), ("newest", "the newest")],
    )
    offset = forms.CharField(required=False)
    time = forms.CharField(required=False)
    search = forms.CharField(required=False, max_length=limits.SEARCH.max_length, strip=False)
    limit = forms.TypedChoiceField(
        required=False, choices=[(str(n), str(n)) for n in PAGE_SIZES], coerce=int, empty_value=50
    )
    tail = forms.BooleanField(required=False)

    def __init__(self, *args: Any, partitions: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partitions = partitions

    def clean_partition(self) -> int:
        raw = str(self.cleaned_data.get("partition") or "").strip() or "0"
        return partition_of(raw, self.partitions)

    def clean_offset(self) -> int | None:
        raw = str(self.cleaned_data.get("offset") or "").strip()
        return whole(raw, "Offset") if raw else None

    def clean_time(self) -> int | None:
        raw = str(self.cleaned_data.get("time") or "").strip()
        return virtual_time(raw) if raw else None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start = data.get("start") or "offset"
        if start == "time" and data.get("time") is None and "time" not in self.errors:
            self.add_error("time", "Give a time to start from, or start from an offset.")
        data["start"] = "newest" if data.get("tail") else start
        return data

    def query(self) -> Query:
        data = self.cleaned_data
        start = str(data["start"])
        return Query(
            partition=int(data["partition"]),
            start=start,
            offset=data.get("offset") if start == "offset" else None,
            time_ms=data.get("time") if start == "time" else None,
            search=str(data.get("search") or ""),
            limit=int(data.get("limit") or 50),
            tail=bool(data.get("tail")),
        )


class ProduceForm(PanelForm):
    error_fields = {UnknownTopicOrPartition: "partition"}

    key = record_text(limits.KEY)
    value = record_text(limits.VALUE, widget=forms.Textarea)
    tombstone = forms.BooleanField(required=False)
    partition = forms.CharField(required=False)
    acks = forms.ChoiceField(choices=[("all", "all"), ("1", "1"), ("0", "0")], required=False)
    count = forms.CharField(required=False, initial="1")

    def __init__(self, *args: Any, partitions: int, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "produce_%s")  # its page has the browser's partition field too
        super().__init__(*args, **kwargs)
        self.partitions = partitions

    def clean_partition(self) -> int | None:
        raw = str(self.cleaned_data.get("partition") or "").strip()
        if not raw:
            return None
        return partition_of(raw, self.partitions)

    def clean_acks(self) -> str:
        return str(self.cleaned_data.get("acks") or "all")

    def clean_count(self) -> int:
        raw = str(self.cleaned_data.get("count") or "").strip() or "1"
        return whole(raw, "Count", low=limits.RECORDS.low, high=limits.RECORDS.high)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("tombstone") and str(data.get("value") or ""):
            self.add_error("value", "A tombstone has no value: empty the value, or untick tombstone.")
        return data


# ---------------------------------------------------------------------------- groups


RESET_TO = (
    ("earliest", "the earliest offset"),
    ("latest", "the latest offset"),
    ("offset", "an offset"),
    ("time", "a time"),
)


class ResetForm(PanelForm):
    error_fields = {NonEmptyGroup: "group", IllegalArgument: "to"}

    group = forms.CharField(required=False, max_length=limits.GROUP_ID.max_length)
    topic = forms.CharField(required=False, max_length=limits.TOPIC_NAME.max_length)
    to = forms.ChoiceField(choices=RESET_TO, required=False)
    offset = forms.CharField(required=False)
    time = forms.CharField(required=False)
    partitions = forms.CharField(required=False, max_length=200)

    def __init__(self, *args: Any, topics: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.topics = list(topics)

    def field_for(self, error: KafkaError) -> str | None:
        if isinstance(error, UnknownTopicOrPartition):
            return "partitions" if "no partition" in error.message else "topic"
        return super().field_for(error)

    def clean_group(self) -> str:
        group = str(self.cleaned_data.get("group") or "").strip()
        if not group:
            raise forms.ValidationError("INVALID_GROUP_ID: a group id cannot be empty.")
        return group

    def clean_topic(self) -> str:
        topic = str(self.cleaned_data.get("topic") or "").strip()
        if not topic:
            raise forms.ValidationError("Choose the topic whose offsets to reset.")
        if topic not in self.topics:
            raise forms.ValidationError(named(UnknownTopicOrPartition(f"Topic '{topic}' does not exist.")))
        return topic

    def clean_partitions(self) -> list[int] | None:
        raw = str(self.cleaned_data.get("partitions") or "").strip()
        if not raw:
            return None
        parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
        return sorted({whole(p, "A partition") for p in parts})

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        to = data.get("to") or "earliest"
        target: str | int | dict[str, int] = to
        if to == "offset":
            raw = str(self.data.get("offset") or "").strip()
            try:
                target = whole(raw, "Offset") if raw else -1
            except forms.ValidationError as error:
                self.add_error("offset", error)
            if raw == "":
                self.add_error("offset", "Give the offset to reset to.")
        elif to == "time":
            raw = str(self.data.get("time") or "").strip()
            try:
                target = {"timestamp": virtual_time(raw)} if raw else {}
            except forms.ValidationError as error:
                self.add_error("time", error)
            if raw == "":
                self.add_error("time", "Give the time to reset to.")
        data["target"] = target
        return data


# ---------------------------------------------------------------------------- ACLs


TOPIC_OPERATIONS = (
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "DescribeConfigs",
    "AlterConfigs",
    "All",
)


class AclForm(PanelForm):
    """An ACL on this topic (literal), or on every topic whose name starts with a prefix (prefixed),
    as kafka-acls.sh --add takes one. What Kafka refuses comes back as INVALID_REQUEST, beside its field."""

    principal = forms.CharField(
        label="Principal",
        max_length=limits.PRINCIPAL.max_length,
        help_text="Type:name, e.g. User:alice; User:* is everyone",
    )
    host = forms.CharField(label="Host", max_length=limits.ACL_HOST.max_length, required=False, initial="*")
    operation = forms.ChoiceField(label="Operation", choices=[(o, o) for o in TOPIC_OPERATIONS])
    permission = forms.ChoiceField(
        label="Permission", choices=[("Allow", "Allow"), ("Deny", "Deny")], initial="Allow"
    )
    pattern = forms.ChoiceField(
        label="Pattern type",
        choices=[("Literal", "Literal: this topic"), ("Prefixed", "Prefixed: every topic starting with")],
        initial="Literal",
    )
    prefix = forms.CharField(label="Prefix", max_length=limits.ACL_RESOURCE.max_length, required=False)

    def __init__(self, *args: Any, topic: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.topic = topic
        self.fields["prefix"].initial = topic

    def _checked(self, field: str, limit: limits.Text, raw: str) -> str:
        try:
            return limit.check(raw)
        except KafkaError as error:
            raise forms.ValidationError(named(error)) from None

    def clean_principal(self) -> str:
        return self._checked(
            "principal", limits.PRINCIPAL, str(self.cleaned_data.get("principal") or "").strip()
        )

    def clean_host(self) -> str:
        return self._checked("host", limits.ACL_HOST, str(self.cleaned_data.get("host") or "").strip() or "*")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("pattern") == "Prefixed":
            prefix = str(data.get("prefix") or "").strip()
            if not prefix:
                self.add_error(
                    "prefix", "A prefixed ACL needs its prefix (every topic whose name starts with it)."
                )
            elif not self.topic.startswith(prefix):
                self.add_error(
                    "prefix",
                    f"{self.topic} does not start with {prefix!r}: this page shows {self.topic}'s ACLs.",
                )
            data["name"] = prefix
        else:
            data["name"] = self.topic
        return data

    def field_for(self, error: KafkaError) -> str | None:
        text = error.message
        for field, words in (
            ("principal", "principal"),
            ("operation", "operation"),
            ("prefix", "prefixed"),
            ("host", "host"),
        ):
            if words in text:
                return field
        return None

    def command_args(self) -> dict[str, str]:
        data = self.cleaned_data
        return {
            "resource_type": "Topic",
            "name": data["name"],
            "pattern": data["pattern"],
            "principal": data["principal"],
            "host": data["host"],
            "operation": data["operation"],
            "permission": data["permission"],
        }
