"""Exercises: instructions, a starting scenario, predict-then-observe questions, and checks graded live.

An exercise file (YAML, in fixtures/exercises/)::

    title: The high watermark stalls
    slug: hw-stall
    covers: [hw, leo, isr]
    summary: One sentence for the list.
    setup:                        # a scenario (cluster + steps) the lab starts from
      cluster: {brokers: 3}
      steps:
        - create_topic: {name: orders, replication_factor: 3}
        - add_producer: {topic: orders, rate: 5}
    instructions: |
      Markdown for the student.
    questions:                    # predict, then observe
      - prompt: What will the HW do?
        choices: [keep up, stall, go backwards]
        answer: 1
        explain: Why.
    checks:                       # graded live against the running lab
      - description: The HW of orders-0 is below its LEO while every broker runs
        all: [{hw_below_leo: orders-0}, {all_brokers_running: true}]

A check passes when every condition in ``all`` holds at one instant; the lab remembers it.

The file is read with the scenarios' bounded loader (``lab.scenarios.yamlsafe``), whether it comes
from fixtures/exercises or from the Django admin, and its setup and solution are scenario steps with
the scenarios' bounds; an error names the line of the exercise file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lab.scenarios import yamlsafe
from lab.scenarios.format import ClusterSpec, Scenario, ScenarioError, from_yaml, steps_of
from lab.scenarios.yamlsafe import excerpt, line_of

# What a condition may test, and the shape of its argument.
CONDITIONS: dict[str, str] = {
    "topic_exists": "a topic name",
    "partitions_at_least": "{topic, count}",
    "records_at_least": "{topic, count}: the sum of every partition's log end offset",
    "leader": "{partition, broker}",
    "leader_not": "{partition, broker}",
    "leader_epoch_at_least": "{partition, epoch}",
    "isr_excludes": "{partition, broker}",
    "isr_size_at_most": "{partition, size}",
    "hw_behind_leo": "{partition, by}: its leader's HW is at least this far below its LEO",
    "leo_at_least": "{partition, count}: the partition's leader has at least this many offsets",
    "log_start_above": "{partition, offset}",
    "offline": "a partition",
    "broker_state": "{broker, state}",
    "broker_running": "a broker id: not killed, stopped or paused",
    "all_brokers_running": "true: no broker killed or stopped",
    "group_state": "{group, state}",
    "group_members": "{group, count}",
    "member_owns_at_least": "{group, count}: some member owns this many partitions",
    "lag_at_least": "{group, count}",
    "event": "{kind, contains?}: the journal has such an event since the exercise started",
    "records_lost": "true: an acknowledged record was lost",
    "controller_not": "a broker id",
    "controller_changed": "true: another broker than at the start is the controller, at a higher epoch",
    "controller_epoch_at_least": "a number",
    "transaction_state": "{id, state}: the transactional id's state at its coordinator (Ongoing, CompleteCommit...)",
    "transaction_epoch_at_least": "{id, epoch}: the transactional id's producer epoch at its coordinator",
    "producer_fenced": "a client name: that transactional producer was told PRODUCER_FENCED",
    "lso_at_hw": "a partition: its leader's last stable offset is at its high watermark (no open transaction)",
    "aborted_transactions_at_least": "{partition, count}: aborted transactions its leader holds (.txnindex)",
    "acl_allows": "{principal, operation, topic | group | cluster | transactional_id, host?}: the authorizer allows it",
    "acl_denies": "{principal, operation, topic | group | cluster | transactional_id, host?}: the authorizer denies it",
}


class ExerciseError(ValueError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    prompt: str
    choices: tuple[str, ...]
    answer: int
    explain: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSpec:
    description: str
    conditions: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Exercise:
    slug: str
    title: str
    summary: str
    covers: tuple[str, ...]
    instructions: str
    setup: Scenario
    questions: tuple[Question, ...]
    checks: tuple[CheckSpec, ...]
    order: int
    solution: Scenario | None  # steps that solve it (for instructors, and for the tests)


def load(path: str | Path) -> Exercise:
    file = Path(path)
    try:
        text = yamlsafe.read(file)
    except yamlsafe.YamlError as error:
        raise ExerciseError(_where(str(file), error.line, error.message)) from None
    return parse(text, source=str(file), slug=file.stem)


def _where(source: str, line: int | None, message: str) -> str:
    return f"{source} line {line}: {message}" if line is not None else f"{source}: {message}"


def _node(root: yaml.Node, key: str) -> yaml.Node | None:
    """The node of a top-level key's value, for its line."""
    if not isinstance(root, yaml.MappingNode):
        return None
    return next((value for k, value in root.value if k.value == key), None)


def parse(text: str, *, source: str = "<exercise>", slug: str = "exercise") -> Exercise:
    try:
        document = yamlsafe.load(text)
    except yamlsafe.YamlError as error:
        raise ExerciseError(_where(source, error.line, error.message)) from None
    data, root = document.data, document.node
    if not isinstance(data, dict) or root is None:
        raise ExerciseError(f"{source}: an exercise is a mapping")
    for key in ("title", "instructions", "setup", "checks"):
        if key not in data:
            raise ExerciseError(f"{source}: missing {key!r}")

    def line(key: str) -> int | None:
        node = _node(root, key)
        return line_of(node) if node is not None else None

    title = data["title"]
    if not isinstance(title, str) or not title.strip():
        raise ExerciseError(_where(source, line("title"), "'title' is text"))
    setup = data["setup"]
    setup_node = _node(root, "setup")
    if not isinstance(setup, dict) or setup_node is None:
        raise ExerciseError(_where(source, line("setup"), "'setup' is a scenario: cluster and steps"))
    try:
        scenario = from_yaml(setup_node, setup, source=source, slug=slug, name=title)
    except ScenarioError as exc:
        raise ExerciseError(str(exc)) from None
    for key, kind in (("covers", "a list of subjects"), ("questions", "a list"), ("checks", "a list")):
        if not isinstance(data.get(key) or [], list):
            raise ExerciseError(_where(source, line(key), f"{key!r} is {kind}, not {excerpt(data[key])}"))
    order = data.get("order", 100)
    if isinstance(order, bool) or not isinstance(order, int) or abs(order) > 1_000_000:
        raise ExerciseError(_where(source, line("order"), f"'order' is a whole number, not {excerpt(order)}"))
    questions = tuple(_question(q, source, i) for i, q in enumerate(data.get("questions") or []))
    checks = tuple(_check(c, source, i) for i, c in enumerate(data["checks"] or []))
    solution = None
    if data.get("solution"):
        try:
            steps = steps_of(
                _node(root, "solution"),
                data["solution"],
                source=source,
                line=line("solution"),
                what="'solution'",
            )
        except ScenarioError as exc:
            raise ExerciseError(str(exc)) from None
        solution = Scenario(
            name=f"{title} (solution)",
            description="",
            cluster=ClusterSpec(),
            steps=steps,
            source=source,
            slug=f"{slug}-solution",
        )
    if not checks:
        raise ExerciseError(f"{source}: an exercise needs at least one check")
    return Exercise(
        slug=str(data.get("slug", slug)),
        title=title.strip(),
        summary=str(data.get("summary", "")),
        covers=tuple(str(c) for c in data.get("covers") or []),
        instructions=str(data["instructions"]),
        setup=scenario,
        questions=questions,
        checks=checks,
        order=order,
        solution=solution,
    )


def _question(raw: Any, source: str, index: int) -> Question:
    where = f"{source}: question {index + 1}"
    if not isinstance(raw, dict):
        raise ExerciseError(f"{where} is not a mapping")
    choices = raw.get("choices")
    answer = raw.get("answer")
    if not isinstance(choices, list) or len(choices) < 2:
        raise ExerciseError(f"{where} needs at least two choices")
    if not isinstance(answer, int) or not 0 <= answer < len(choices):
        raise ExerciseError(f"{where}: 'answer' is the index of the right choice (0..{len(choices) - 1})")
    return Question(
        prompt=str(raw.get("prompt", "")),
        choices=tuple(map(str, choices)),
        answer=answer,
        explain=str(raw.get("explain", "")),
    )


def _check(raw: Any, source: str, index: int) -> CheckSpec:
    where = f"{source}: check {index + 1}"
    if not isinstance(raw, dict) or "description" not in raw or "all" not in raw:
        raise ExerciseError(f"{where} needs a description and 'all': a list of conditions")
    conditions = raw["all"]
    if not isinstance(conditions, list) or not conditions:
        raise ExerciseError(f"{where}: 'all' must be a non-empty list")
    for condition in conditions:
        if not isinstance(condition, dict) or len(condition) != 1:
            raise ExerciseError(f"{where}: each condition is a one-key mapping")
        (name,) = condition
        if name not in CONDITIONS:
            raise ExerciseError(
                f"{where}: unknown condition {excerpt(name)} (known: {', '.join(sorted(CONDITIONS))})"
            )
    return CheckSpec(description=str(raw["description"]), conditions=tuple(conditions))


def load_all(directory: str | Path) -> list[Exercise]:
    exercises = [load(p) for p in sorted(Path(directory).glob("*.yaml"))]
    return sorted(exercises, key=lambda e: (e.order, e.title))
