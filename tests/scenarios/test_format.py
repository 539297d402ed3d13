"""A malformed scenario gets an error naming the line and what is wrong, before anything runs."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from lab.scenarios import ScenarioError, load, parse
from tests.scenarios.helpers import alias_bomb

GOOD = """\
name: ok
cluster: {brokers: 3}
steps:
  - create_topic: {name: t, partitions: 2, replication_factor: 3}
  - kill: 1
  - wait: 100
  - expect: {partition: t-0, leader: 2}
"""


def test_a_good_file_parses_with_lines_and_labels() -> None:
    scenario = parse(GOOD, source="ok.yaml")
    assert [s.kind for s in scenario.steps] == ["create_topic", "kill", "wait", "expect"]
    assert [s.line for s in scenario.steps] == [4, 5, 6, 7]
    assert scenario.steps[1].label == "kill broker 1"
    assert scenario.steps[1].args == {"broker": 1}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("name: x\nsteps:\n  - kill: one\n", 3, "'broker' must be an integer, not 'one'"),
        ("name: x\nsteps:\n  - wait: 10\n  - explode: 1\n", 4, "unknown step 'explode'"),
        ("name: x\nsteps:\n  - produce: {topic: t, acks: 2}\n", 3, "'acks' must be acks 0, 1 or all"),
        ("name: x\nsteps:\n  - produce: {count: 3}\n", 3, "missing field 'topic'"),
        ("name: x\nsteps:\n  - expect: {leader: 1}\n", 3, "needs 'partition'"),
        ("name: x\nsteps:\n  - expect: {partition: orders}\n", 3, "like orders-0"),
        ("name: x\nsteps:\n  - kill: 1\n    restart: 1\n", 3, "one-key mapping"),
        ("name: x\nsteps: []\n", 2, "non-empty list"),
        ("steps:\n  - kill: 1\n", 1, "needs a name"),
        ("name: x\ncluster: {brokers: 40}\nsteps:\n  - kill: 1\n", 2, "at most 12 brokers"),
        (
            "name: x\ncluster: {config: {bogus.key: 1}}\nsteps:\n  - kill: 1\n",
            2,
            "Unknown broker config name: bogus.key",
        ),
        ("name: x\nsteps:\n  - create_topic: {name: t, colour: red}\n", 3, "unknown field 'colour'"),
        ("name: x\nsteps:\n  - kill: 1\n  bad: [\n", 4, "not valid YAML"),
        (
            "name: x\nsteps:\n  - create_acl: {name: t, principal: User:a, operation: Fly}\n",
            3,
            "'operation' must be one of All, Read, Write",
        ),
        (
            "name: x\nsteps:\n  - add_producer: {topic: t, principal: alice}\n",
            3,
            "'principal' must be a principal that is written Type:name, e.g. User:alice",
        ),
        (
            "name: x\nsteps:\n  - commit_transaction: {producer: app, expect_error: FENCED_A_BIT}\n",
            3,
            "'expect_error' must be one of Kafka's error names (PRODUCER_FENCED, INVALID_TXN_STATE...)",
        ),
        (
            "name: x\nsteps:\n  - expect: {transaction: {id: tx, state: Committed}}\n",
            3,
            "one of Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort",
        ),
        ("name: x\nsteps:\n  - expect: {transaction: {state: Ongoing}}\n", 3, "missing field 'id'"),
        (
            "name: x\nsteps:\n  - begin_transaction: {producer: app, transaction_timeout_ms: 10}\n",
            3,
            "'transaction_timeout_ms' must be a number from 1000 to 900000, not 10",
        ),
        ("name: x\nflavour: mint\nsteps:\n  - kill: 1\n", 2, "unknown top-level key 'flavour'"),
        (
            "name: x\nsteps:\n  - produce: {topic: t, key: k, value: v, tombstone: true}\n",
            3,
            "a tombstone has no value",
        ),
    ],
)
def test_errors_name_the_line_and_the_problem(text: str, line: int, message: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse(text, source="bad.yaml")
    assert raised.value.line == line
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"bad.yaml line {line}:")


def test_a_control_character_is_a_scenario_error_not_a_crash() -> None:
    with pytest.raises(ScenarioError, match="not valid YAML"):
        parse("name: x\x07\nsteps:\n  - kill: 1\n", source="bell.yaml")


# ----------------------------------------------------------------------------- hostile files


def test_an_alias_bomb_is_refused_quickly_with_a_short_error() -> None:
    text = alias_bomb(6)  # 9^6 = 531441 values once expanded; the real attack adds levels
    assert len(text) < 400
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError) as raised:
            parse(text, source="bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"parsing a {len(text)}-byte file took {peak} bytes"
    message = str(raised.value)
    assert len(message) < 300, message[:300]
    assert message.startswith("bomb.yaml line 5:")
    assert "alias" in message


def test_many_aliases_are_refused_even_when_each_is_small() -> None:
    steps = "".join("  - wait: *w\n" for _ in range(150))
    with pytest.raises(ScenarioError, match="more than 100 aliases"):
        parse("name: x\nsteps:\n  - wait: &w 10\n" + steps, source="many.yaml")


def test_a_few_anchors_and_aliases_still_work() -> None:
    scenario = parse(
        "name: x\nsteps:\n  - create_topic: {name: t, config: &c {retention.ms: 1000}}\n"
        "  - set_config: {topic: t, config: *c}\n"
    )
    assert scenario.steps[1].args["config"] == {"retention.ms": "1000"}


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(ScenarioError, match="inside its own anchor"):
        parse("name: x\nsteps:\n  - kill: &k [*k]\n", source="loop.yaml")


@pytest.mark.parametrize("opening", ["[", "{a: "])
def test_deep_nesting_is_a_scenario_error_naming_the_line(opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    text = "name: x\nsteps:\n  - wait: " + opening * 5000 + "1" + closing * 5000 + "\n"
    with pytest.raises(ScenarioError) as raised:
        parse(text, source="deep.yaml")
    assert raised.value.line == 3
    assert "nested more than" in str(raised.value)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    text = "name: x\nsteps:\n" + "  - note: " + "x" * 300_000 + "\n"
    with pytest.raises(ScenarioError, match="larger than 200000 characters"):
        parse(text, source="big.yaml")
    path = tmp_path / "big.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match="larger than 200000 characters"):
        load(path)


def test_an_integer_with_thousands_of_digits_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError) as raised:
        parse("name: x\nsteps:\n  - kill: " + "9" * 5000 + "\n", source="digits.yaml")
    assert raised.value.line == 3
    assert len(str(raised.value)) < 300


def test_a_bad_value_is_shown_as_a_short_excerpt() -> None:
    with pytest.raises(ScenarioError) as raised:
        parse("name: x\nsteps:\n  - kill: " + "b" * 10_000 + "\n", source="long.yaml")
    message = str(raised.value)
    assert "'broker' must be an integer, not 'bbbb" in message
    assert "..." in message
    assert len(message) < 300


# ----------------------------------------------------------------------------- bounds on what a step may ask


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("wait: 1000000000000", "'ms' must be at most 3600000 ms (one hour of virtual time)"),
        ("wait_until: {controller: 1, timeout_ms: 99999999999}", "'timeout_ms' must be at most 3600000 ms"),
        ("consume: {topic: t, timeout_ms: 99999999999}", "'timeout_ms' must be at most 3600000 ms"),
        ("slow: {broker: 1, delay_ms: 99999999999}", "'delay_ms' must be a number from 1 to 60000"),
        ("produce: {topic: t, count: 1000000000}", "'count' must be at most 1000 records"),
        ("read: {as: r, count: 1000000000}", "'count' must be at most 100000 records"),
        ("create_topic: {name: t, partitions: 1000000}", "'partitions' must be a number from 1 to 32"),
        ("add_partitions: {topic: t, total: 1000000}", "'total' must be a number from 1 to 32"),
        ("add_producer: {topic: t, rate: 1000000000}", "'rate' must be at most 1000 records/s"),
        ("add_producer: {topic: t, rate: .inf}", "'rate' must be at most 1000 records/s"),
        ("add_producer: {topic: t, rate: 0}", "'rate' must be more than 0"),
        ("produce: {topic: t, timestamp: 99999999999999999999}", "at most 9223372036854775807"),
        (
            "produce: {topic: t, value: '{i:>999999999}'}",
            "'value' must be text that may only use {i} and {producer}",
        ),
        ("produce: {topic: t, key: '{0}'}", "'key' must be text that may only use {i} and {producer}"),
        (
            "produce: {topic: t, value: '{i.__class__}'}",
            "'value' must be text that may only use {i} and {producer}",
        ),
        ("create_topic: {name: t, assignment: {0: [1, 2], 99: [1]}}", "partitions 0 to 31"),
    ],
)
def test_a_step_that_would_run_away_is_refused_before_anything_runs(step: str, message: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse(f"name: x\nsteps:\n  - {step}\n", source="big.yaml")
    assert raised.value.line == 3
    assert message in str(raised.value)


def test_the_records_a_scenario_produces_in_all_are_bounded() -> None:
    steps = "".join("  - produce: {topic: t, count: 1000}\n" for _ in range(101))
    with pytest.raises(ScenarioError) as raised:
        parse("name: x\nsteps:\n" + steps, source="many.yaml")
    assert raised.value.line == 103  # the 101st produce step: 101 000 records
    assert "at most 100000 records in all" in str(raised.value)


def test_the_number_of_steps_is_bounded() -> None:
    with pytest.raises(ScenarioError, match="at most 1000 steps"):
        parse("name: x\nsteps:\n" + "  - note: hi\n" * 1001, source="long.yaml")


def test_key_and_value_templates_may_use_the_record_number_and_the_producer() -> None:
    scenario = parse(
        "name: x\nsteps:\n  - produce: {topic: t, key: 'k-{i}-{producer}', value: '{{literal}} {i}'}\n"
    )
    assert scenario.steps[0].args["key"] == "k-{i}-{producer}"


def test_a_produce_step_whose_producer_kafka_would_refuse_is_refused_before_anything_runs() -> None:
    text = (
        "name: x\nsteps:\n  - create_topic: t\n"
        "  - produce: {topic: t, delivery_timeout_ms: 1000, request_timeout_ms: 2000}\n"
    )
    with pytest.raises(ScenarioError) as raised:
        parse(text, source="bad.yaml")
    assert raised.value.line == 4
    assert raised.value.message == (
        "step 'produce': delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
    )
    # Equal is enough, and a delivery timeout left out grows to the sum, as in Kafka.
    parse(text.replace("1000", "2000"), source="ok.yaml")
    parse("name: x\nsteps:\n  - produce: {topic: t, linger_ms: 500, request_timeout_ms: 200000}\n")


def test_a_produce_step_can_write_a_tombstone() -> None:
    scenario = parse("name: x\nsteps:\n  - produce: {topic: t, key: k, tombstone: true}\n")
    assert scenario.steps[0].args == {"topic": "t", "key": "k", "tombstone": True}
