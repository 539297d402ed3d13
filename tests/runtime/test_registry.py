"""The registry of running labs that the home page reads."""

from __future__ import annotations

import pytest

from lab.runtime import registry
from lab.runtime.registry import (
    BrokerSummary,
    LabAlreadyRunning,
    LabSummary,
    register_lab,
    running_labs,
    unregister_lab,
    update_lab,
)


@pytest.fixture(autouse=True)
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_labs", {})


def _lab(name: str, *states: str) -> LabSummary:
    return LabSummary(
        name=name, brokers=tuple(BrokerSummary(id=i, state=s) for i, s in enumerate(states, start=1))
    )


def test_nothing_runs_at_first() -> None:
    assert running_labs() == []


def test_registered_labs_are_listed_by_name() -> None:
    register_lab(_lab("zeta", "alive"))
    register_lab(_lab("alpha", "alive", "alive"))
    assert [lab.name for lab in running_labs()] == ["alpha", "zeta"]
    assert running_labs()[0].brokers[1] == BrokerSummary(id=2, state="alive")


def test_a_name_cannot_be_registered_twice_and_the_first_stays() -> None:
    first = _lab("demo", "alive")
    register_lab(first)
    with pytest.raises(LabAlreadyRunning, match="'demo' is already running"):
        register_lab(_lab("demo", "killed"))
    assert running_labs() == [first]


def test_update_replaces_the_summary() -> None:
    register_lab(_lab("demo", "alive", "alive"))
    update_lab(_lab("demo", "alive", "killed"))
    assert running_labs()[0].brokers[1].state == "killed"


def test_update_of_an_unknown_lab_is_refused() -> None:
    with pytest.raises(KeyError, match="no running lab named 'ghost'"):
        update_lab(_lab("ghost", "alive"))
    assert running_labs() == []


def test_unregister_forgets_and_ignores_unknown_names() -> None:
    register_lab(_lab("demo", "alive"))
    unregister_lab("demo")
    unregister_lab("never-ran")
    assert running_labs() == []
