"""The lab's own limits, each defined once, for every door a request comes in by.

The API's schemas (and so its OpenAPI document), the topic admin's forms, the dashboard's live
controls, scenario files and the engine all check against these, so a value one of them takes
the others take too, and a value one refuses the others refuse with the same words.

Kafka itself has few hard limits (a topic name of 249 characters, a record under
``max.message.bytes``); the rest are the lab's, for a teaching cluster that runs in one process
and is drawn on one page: a dozen brokers, a few dozen partitions a topic, records a person reads.
Keys and values are text, and any text Kafka would store (a NUL included: Kafka's keys and values
are bytes) is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lab.engine.errors import IllegalArgument, InvalidTopic


@dataclass(frozen=True, slots=True, kw_only=True)
class Whole:
    """A whole number from ``low`` to ``high``; ``what`` names it in messages (``partitions``)."""

    what: str
    low: int
    high: int

    def check(self, value: int) -> int:
        if not self.low <= value <= self.high:
            raise IllegalArgument(f"{self.what} must be between {self.low} and {self.high}, not {value}")
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Number:
    """A number from ``low`` to ``high`` (a rate)."""

    what: str
    low: float
    high: float

    def check(self, value: float) -> float:
        # A rate typed as 0.1 may arrive as 0.09999999999999999: a hair below the bound is the bound.
        if not self.low - 1e-9 <= value <= self.high + 1e-9:
            raise IllegalArgument(
                f"{self.what} must be between {self.low:g} and {self.high:g}, not {value:g}"
            )
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    """Text of ``min_length`` to ``max_length`` characters, all of it matching ``pattern`` if there is one.

    ``pattern`` is written so that Python's ``re``, pydantic's (Rust) regex and JSON Schema's
    (ECMA 262) agree on it: it is the one rule, shown to API clients as ``json_pattern``.
    """

    what: str
    max_length: int
    min_length: int = 0
    pattern: str | None = None
    rule: str = ""  # the pattern in words, for messages
    reserved: tuple[str, ...] = ()  # texts the pattern allows that are refused all the same

    def check(self, text: str) -> str:
        if len(text) < self.min_length:
            raise IllegalArgument(
                f"{self.what} cannot be empty"
                if self.min_length == 1
                else f"{self.what} has at least {self.min_length} characters"
            )
        if len(text) > self.max_length:
            raise IllegalArgument(f"{self.what} has at most {self.max_length} characters, not {len(text)}")
        if self.pattern is not None and text and not re.fullmatch(self.pattern, text):
            raise IllegalArgument(f"{self.what} {self.rule}, not {text!r}")
        if text in self.reserved:
            raise IllegalArgument(f"{self.what} cannot be {' or '.join(map(repr, self.reserved))}")
        return text

    @property
    def json_pattern(self) -> str | None:
        # Anchored for JSON Schema, where a pattern may match anywhere; Python's own "$" would also
        # match before a final newline, which is why the checks above use fullmatch instead.
        return None if self.pattern is None else f"^(?:{self.pattern})$"


# ---------------------------------------------------------------------------- the cluster

BROKERS = Whole(what="brokers", low=1, high=12)  # a lab cluster's size
BROKER_ID = Whole(what="broker", low=1, high=BROKERS.high)  # brokers are numbered 1..n
REPLICATION_FACTOR = Whole(what="replication factor", low=1, high=BROKERS.high)
PARTITIONS = Whole(what="partitions", low=1, high=32)  # a topic's partition count
PARTITION = Whole(what="partition", low=0, high=PARTITIONS.high - 1)  # a partition's number

# ---------------------------------------------------------------------------- names

TOPIC_NAME = Text(
    what="a topic name",
    min_length=1,
    max_length=249,  # Kafka's own limit
    pattern=r"[a-zA-Z0-9._-]+",
    rule="uses ASCII letters, digits, '.', '_' and '-'",
    reserved=(".", ".."),
)
# Kafka takes any group id; the lab's are printable with something besides spaces (C0 and C1 controls
# refused), so what a form or the API strips around one never leaves it empty, in every regex dialect.
GROUP_ID = Text(
    what="a group id",
    min_length=1,
    max_length=249,
    pattern=r"[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*",
    rule="is printable text, not only spaces",
)
# A producer's transactional.id: any printable text, as a group id (Kafka keeps it as a string).
TRANSACTIONAL_ID = Text(
    what="a transactional.id",
    min_length=1,
    max_length=249,
    pattern=r"[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*",
    rule="is printable text, not only spaces",
)
# transaction.timeout.ms a dashboard producer may ask for: at most the broker's transaction.max.timeout.ms
# default (Kafka refuses more with INVALID_TRANSACTION_TIMEOUT).
TRANSACTION_TIMEOUT_MS = Whole(what="transaction.timeout.ms", low=1_000, high=900_000)
# ACLs: who (Type:name, printable ASCII without spaces; User:* is everyone), from where (an address
# or *), and on what (a topic, a group, a transactional id, a prefix: printable, not only spaces).
PRINCIPAL = Text(
    what="a principal",
    min_length=3,
    max_length=255,
    pattern=r"[A-Za-z][A-Za-z0-9_-]*:[!-~]+",
    rule="is written Type:name, e.g. User:alice (ASCII, no spaces)",
)
ACL_HOST = Text(
    what="a host",
    min_length=1,
    max_length=64,
    pattern=r"\*|[0-9A-Fa-f.:]+",
    rule="is an IP address or * (every host)",
)
ACL_RESOURCE = Text(
    what="a resource name",
    min_length=1,
    max_length=255,
    pattern=GROUP_ID.pattern,
    rule="is printable text, not only spaces",
)
# Shown on pages and kept in the database: printable, with something besides spaces.
LAB_NAME = Text(
    what="a lab's name",
    min_length=1,
    max_length=100,
    pattern=r"[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*",
    rule="is printable text, not only spaces",
)
CLIENT_NAME = Text(
    what="a client name",
    max_length=60,
    pattern=r"[a-zA-Z0-9._-]+",
    rule="uses letters, digits, '-', '_' and '.'",
)
# A SASL user (its SCRAM credentials in /config/users): printable, with something besides spaces.
USER_NAME = Text(
    what="a user name",
    min_length=1,
    max_length=200,
    pattern=r"[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*",
    rule="is printable text, not only spaces",
)
PASSWORD = Text(what="a password", min_length=1, max_length=200)
SCRAM_ITERATIONS = Whole(what="iterations", low=4096, high=16_384)  # what Kafka accepts for a credential

# ---------------------------------------------------------------------------- records

KEY = Text(what="a key", max_length=1_000)
VALUE = Text(what="a value", max_length=100_000)
RECORDS = Whole(what="records", low=1, high=1_000)  # produced at once, or read in one page
SEARCH = Text(what="a search", max_length=200)
RETRIES = Whole(what="retries", low=0, high=2**31 - 1)  # Kafka's default is the largest

# ---------------------------------------------------------------------------- faults, clients, the clock

SLOW_MS = Whole(what="delay_ms", low=1, high=60_000)
STEP_EVENTS = Whole(what="events", low=1, high=1_000)
STEP_MS = Whole(what="ms", low=1, high=60_000)
CLOCK_RATE = Number(what="the clock's rate", low=0.1, high=10.0)
PRODUCER_RATE = Number(what="rate", low=0.1, high=1_000.0)  # a simulated producer's records/s
PROCESSING_MS = Whole(what="processing_ms", low=0, high=60_000)
SESSION_TIMEOUT_MS = Whole(what="session_timeout_ms", low=1_000, high=300_000)  # a simulated consumer's
EVENTS = Whole(what="limit", low=1, high=1_000)  # journal events in one page
SINCE = Whole(what="since", low=0, high=2**63 - 1)  # a journal cursor
OFFSET = Whole(what="offset", low=0, high=2**63 - 1)  # Kafka's offsets are int64
TIMESTAMP = Whole(what="timestamp", low=0, high=2**63 - 1)  # ms, Kafka's int64


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: the same rules, the same words."""
    if not name:
        raise InvalidTopic("Topic name is illegal, it can't be empty")
    if name in TOPIC_NAME.reserved:
        raise InvalidTopic('Topic name cannot be "." or ".."')
    if len(name) > TOPIC_NAME.max_length:
        raise InvalidTopic(
            f"Topic name is illegal, it can't be longer than {TOPIC_NAME.max_length} characters, "
            f"topic name: {name}"
        )
    if not re.fullmatch(TOPIC_NAME.pattern or "", name):
        raise InvalidTopic(
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )


def text_with_pattern(json_pattern: str) -> Text | None:
    """A text limit whose ``json_pattern`` this is (an API answer says its rule in words, not the regex;
    limits that share a pattern share its rule)."""
    for value in globals().values():
        if isinstance(value, Text) and value.pattern is not None and value.json_pattern == json_pattern:
            return value
    return None
