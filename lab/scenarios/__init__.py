"""Scenarios: YAML files of steps and expectations, run the same way by the CLI, the API and the dashboard."""

from lab.scenarios.format import Scenario, ScenarioError, Step, load, parse
from lab.scenarios.runner import ScenarioRun, run_to_end

__all__ = ["Scenario", "ScenarioError", "ScenarioRun", "Step", "load", "parse", "run_to_end"]
