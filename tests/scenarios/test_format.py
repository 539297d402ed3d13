"""A malformed scenario gets an error naming the line and what is wrong, before anything runs."""

from __future__ import annotations

import pytest

from lab.scenarios import ScenarioError, parse

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


def test_a_produce_step_can_write_a_tombstone() -> None:
    scenario = parse("name: x\nsteps:\n  - produce: {topic: t, key: k, tombstone: true}\n")
    assert scenario.steps[0].args == {"topic": "t", "key": "k", "tombstone": True}
