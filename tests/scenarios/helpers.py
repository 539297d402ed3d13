"""Hostile scenario files, shared by the format, CLI, API and exercise tests."""

from __future__ import annotations


def alias_bomb(levels: int, width: int = 9, *, indent: str = "") -> str:
    """A scenario whose one step holds nested anchors, each level ``width`` aliases of the one before
    ("a billion laughs": 9^levels values once expanded). The step's ``count`` is on line 5."""
    items = ["&l0 [" + ", ".join(["1"] * width) + "]"]
    items += [f"&l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]" for n in range(1, levels)]
    lines = [
        "name: bomb",
        "steps:",
        "  - produce:",
        "      topic: t",
        "      count: [" + ", ".join(items) + "]",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


RUNAWAY = """\
name: Runaway
cluster: {brokers: 3}
steps:
  - create_topic: {name: t, partitions: 3, replication_factor: 3}
  - add_producer: {topic: t, rate: 100}
  - add_consumer: {group: g, topics: t}
  - wait: 3600000
"""
"""An hour of virtual time with clients working: minutes of the server's time, within every bound."""
