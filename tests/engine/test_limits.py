"""The lab's limits: one check each, with words a person reads, and patterns that mean the same in
Python, in pydantic's regex and in JSON Schema."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, Field, ValidationError

from lab.engine import limits
from lab.engine.errors import IllegalArgument, InvalidTopic


def test_a_whole_number_outside_its_limit_is_refused_by_name() -> None:
    assert limits.PARTITIONS.check(32) == 32
    with pytest.raises(IllegalArgument, match="partitions must be between 1 and 32, not 33"):
        limits.PARTITIONS.check(33)
    assert limits.PARTITION.high == limits.PARTITIONS.high - 1  # partitions are numbered from 0
    assert limits.REPLICATION_FACTOR.high == limits.BROKER_ID.high == limits.BROKERS.high
    assert limits.CLOCK_RATE.check(0.09999999999999999) == pytest.approx(0.1)
    with pytest.raises(IllegalArgument, match=r"between 0\.1 and 10"):
        limits.CLOCK_RATE.check(11)


def test_text_has_its_length_its_pattern_and_its_reserved_words() -> None:
    assert limits.KEY.check("a\x00b") == "a\x00b"  # Kafka's keys are bytes: a NUL is a byte like another
    with pytest.raises(IllegalArgument, match="a key has at most 1000 characters, not 1001"):
        limits.KEY.check("k" * 1001)
    with pytest.raises(IllegalArgument, match="a group id cannot be empty"):
        limits.GROUP_ID.check("")
    with pytest.raises(IllegalArgument, match="a client name uses letters"):
        limits.CLIENT_NAME.check("a b")
    with pytest.raises(IllegalArgument, match=re.escape("a topic name cannot be '.' or '..'")):
        limits.TOPIC_NAME.check("..")


@pytest.mark.parametrize(
    ("limit", "good", "bad"),
    [
        (limits.TOPIC_NAME, ["orders", "a.b_c-1"], ["orders\n", "bad name", "ü"]),
        (limits.LAB_NAME, ["Drill 2", " padded ", "Ünïcode"], ["   ", "tab\there", "end\n", "\x7f"]),
        (limits.CLIENT_NAME, ["feed-1"], ["feed 1", "feed\n"]),
    ],
)
def test_a_pattern_means_the_same_to_python_and_to_the_api(
    limit: limits.Text, good: list[str], bad: list[str]
) -> None:
    assert limit.pattern is not None
    assert limit.json_pattern is not None

    class Named(BaseModel):  # pydantic checks the JSON pattern with its own (Rust) regex
        name: str = Field(pattern=limit.json_pattern)

    for text in good:
        assert limit.check(text) == text
        assert re.search(limit.json_pattern, text)
        Named(name=text)
    for text in bad:
        with pytest.raises(IllegalArgument):
            limit.check(text)
        with pytest.raises(ValidationError):
            Named(name=text)


def test_a_topic_name_is_checked_in_kafkas_words() -> None:
    limits.validate_topic_name("orders")
    for bad, words in [
        ("", "can't be empty"),
        (".", 'cannot be "." or ".."'),
        ("x" * 250, "can't be longer than 249 characters"),
        ("orders\n", "contains a character other than"),  # Python's "$" would have let the newline by
    ]:
        with pytest.raises(InvalidTopic, match=re.escape(words)):
            limits.validate_topic_name(bad)
