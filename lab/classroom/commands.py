"""What the classroom asks of a lab, as named commands with JSON arguments and JSON answers.

A command is data (``LiveLab.act(name, args)``), so it can travel to the process that runs the lab;
its arguments are checked here, where the request arrives (``IllegalArgument``, named), and the
work runs on the lab's driver thread. Registered once, when the classroom app is ready.

- ``classroom.exercise`` {exercise, progress, lab, passed, start, fresh}: grade an exercise in the
  lab (its setup plays first); the answer says where it stands.
- ``classroom.start-over`` {}: a fresh cluster, the exercise's setup played again.
- ``classroom.scenario`` {scenario}: the scenario's player on the lab.
- ``classroom.player`` {action}: play, pause, step, cancel or restart that scenario.
- ``classroom.demo`` {code, active}: the demo banner; ``classroom.demo-copies`` {copies, copied_at}
  and ``classroom.demo-copy-ready`` {} count the copies handed out.
- ``classroom.read-state`` {}: the demo's state, as JSON (``copying.state_to_json``).
- ``classroom.fill`` {state}: fill a copy with a demo's state; answers once every record is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from lab.classroom import attach, content, copying
from lab.classroom.models import CODE_ALPHABET
from lab.engine import limits
from lab.engine.errors import IllegalArgument, IllegalState
from lab.runtime.actions import Act, register, register_read
from lab.runtime.live import LiveLab

PLAYER_ACTIONS = ("play", "pause", "step", "restart", "cancel")


# ---------------------------------------------------------------------------- checking JSON arguments


def _only(args: Mapping[str, Any], *names: str) -> None:
    """Refuse an argument the command does not take: a typo must not pass unnoticed."""
    extra = sorted(set(args) - set(names))
    if extra:
        raise IllegalArgument(f"unknown argument{'s' if len(extra) > 1 else ''}: {', '.join(extra)}")


def _slug(args: Mapping[str, Any], key: str) -> str:
    """An exercise's or a scenario's slug (its file's name)."""
    value = args.get(key)
    if not isinstance(value, str):
        raise IllegalArgument(f"{key} is required (text)")
    rule = "uses only letters, digits, '-' and '_'"
    return limits.Text(what=key, min_length=1, max_length=100, pattern=r"[-a-zA-Z0-9_]+", rule=rule).check(
        value
    )


def _id(args: Mapping[str, Any], key: str) -> int:
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise IllegalArgument(f"{key} must be a row's id (a whole number from 1), not {value!r}")
    return value


def _bool(args: Mapping[str, Any], key: str) -> bool:
    value = args.get(key)
    if not isinstance(value, bool):
        raise IllegalArgument(f"{key} must be true or false, not {value!r}")
    return value


def _object(args: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = args.get(key, {})
    if not isinstance(value, dict):
        raise IllegalArgument(f"{key} must be an object")
    return value


# ---------------------------------------------------------------------------- exercises


def _exercise(args: Mapping[str, Any]) -> Act:
    _only(args, "exercise", "progress", "lab", "passed", "start", "fresh")
    slug = _slug(args, "exercise")
    found = content.exercise(slug)
    if found is None:
        raise IllegalArgument(f"there is no exercise named {slug!r}")
    progress_id, lab_id, fresh = _id(args, "progress"), _id(args, "lab"), _bool(args, "fresh")
    passed: dict[int, str] = {}
    for index, when in _object(args, "passed").items():
        if not str(index).isdigit() or int(index) >= len(found.checks) or not isinstance(when, str):
            raise IllegalArgument(
                f"passed must map a check's index to when it passed, not {index!r}: {when!r}"
            )
        passed[int(index)] = when
    start = _object(args, "start")

    def run(lab: LiveLab) -> str:
        session = attach.hook_exercise(
            lab, found, progress_id=progress_id, lab_id=lab_id, passed=passed, start=start, fresh=fresh
        )
        view = session.view
        return f"Exercise {found.slug}: {view.phase}, {view.passed} of {len(view.checks)} check(s) passed."

    return run


def _start_over(args: Mapping[str, Any]) -> Act:
    _only(args)

    def run(lab: LiveLab) -> str:
        lab.update_spec(replace(lab.spec, topics=(), clients=(), acls=(), users={}))
        lab.reset_now()
        session = attach.exercise_on(lab)
        if session is not None:
            session.restart()
        return "A fresh cluster: the exercise's setup plays again."

    return run


# ---------------------------------------------------------------------------- scenarios


def _scenario(args: Mapping[str, Any]) -> Act:
    _only(args, "scenario")
    slug = _slug(args, "scenario")
    found = content.scenario(slug)
    if found is None:
        raise IllegalArgument(f"there is no scenario named {slug!r} (or its file does not parse)")

    def run(lab: LiveLab) -> str:
        return f"Scenario {found.slug}: {attach.hook_player(lab, found).view.status}."

    return run


def _player(args: Mapping[str, Any]) -> Act:
    _only(args, "action")
    action = args.get("action")
    if action not in PLAYER_ACTIONS:
        raise IllegalArgument(f"action must be one of {', '.join(PLAYER_ACTIONS)}, not {action!r}")

    def run(lab: LiveLab) -> str:
        player = attach.player_on(lab)
        if player is None:
            raise IllegalState(f"lab {lab.slug} has no scenario player")
        control: Callable[[LiveLab], str] = getattr(player, str(action))
        return control(lab)

    return run


# ---------------------------------------------------------------------------- demos


def _demo(args: Mapping[str, Any]) -> Act:
    _only(args, "code", "active")
    code = args.get("code")
    if not isinstance(code, str) or not 1 <= len(code) <= 12 or any(c not in CODE_ALPHABET for c in code):
        raise IllegalArgument(f"code must be a join code (up to 12 of {CODE_ALPHABET}), not {code!r}")
    active = _bool(args, "active")

    def run(lab: LiveLab) -> str:
        attach.demo_hook(lab, code=code, active=active)
        return f"Demo {code} {'running' if active else 'ended'}."

    return run


def _demo_copies(args: Mapping[str, Any]) -> Act:
    _only(args, "copies", "copied_at")
    copies = args.get("copies")
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 0:
        raise IllegalArgument(f"copies must be a whole number from 0, not {copies!r}")
    copied_at = args.get("copied_at")
    if not isinstance(copied_at, str) or len(copied_at) > 40:
        raise IllegalArgument("copied_at must be a time (ISO 8601)")

    def run(lab: LiveLab) -> str:
        attach.demo_copies(lab, copies=copies, copied_at=copied_at)
        return f"{copies} copies handed out."

    return run


def _demo_copy_ready(args: Mapping[str, Any]) -> Act:
    _only(args)

    def run(lab: LiveLab) -> str:
        view = attach.demo_copy_ready(lab)
        return f"{view.copies_ready} of {view.copies} copies ready."

    return run


def _read_state(args: Mapping[str, Any]) -> Act:
    _only(args)

    def run(lab: LiveLab) -> dict[str, Any]:
        return copying.state_to_json(copying.read_state(lab))

    return run


def _fill(args: Mapping[str, Any]) -> Act:
    _only(args, "state")
    state = copying.state_from_json(args.get("state"))
    return lambda lab: copying.fill(lab, state)


COMMANDS: Mapping[str, Callable[[Mapping[str, Any]], Act]] = {
    "classroom.exercise": _exercise,
    "classroom.start-over": _start_over,
    "classroom.scenario": _scenario,
    "classroom.player": _player,
    "classroom.demo": _demo,
    "classroom.demo-copies": _demo_copies,
    "classroom.demo-copy-ready": _demo_copy_ready,
    "classroom.read-state": _read_state,
    "classroom.fill": _fill,
}

# What changes nothing a replay of the lab's journal needs: a read, and the demo's banner.
READS = frozenset(
    {"classroom.read-state", "classroom.demo", "classroom.demo-copies", "classroom.demo-copy-ready"}
)

for _name, _parse in COMMANDS.items():
    (register_read if _name in READS else register)(_name, _parse)
