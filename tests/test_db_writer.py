"""Database writes off the lab's threads: in the order asked, a failure logged and the next still run."""

from __future__ import annotations

import logging

import pytest

from lab.db_writer import write_later


def test_writes_run_in_order_and_a_failure_is_logged_without_stopping_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[int] = []

    def fail() -> None:
        raise RuntimeError("the database is locked")

    with caplog.at_level(logging.ERROR, logger="lab.db_writer"):
        first = write_later(lambda: done.append(1), "one")
        failed = write_later(fail, "saving lab x's spec")
        last = write_later(lambda: done.append(2), "two")
        last.result(10)
    first.result(0)
    with pytest.raises(RuntimeError, match="locked"):
        failed.result(0)
    assert done == [1, 2]
    assert "saving lab x's spec failed" in caplog.text
