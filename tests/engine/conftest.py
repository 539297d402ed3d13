"""The metadata stores' harness (memory and a real ZooKeeper) for every engine test that writes znodes."""

from tests.engine.metadata.conftest import harness

__all__ = ["harness"]
